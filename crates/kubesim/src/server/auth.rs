//! Who is asking and whether they may: authentication (`crate::auth::authn`: client
//! certificates, bearer tokens, anonymous) with the real 401, RBAC authorization with the
//! real 403 body, the identity admission webhooks see, and the TokenRequest endpoint that
//! issues ServiceAccount tokens. The reviews are in `reviews`.

use axum::body::Body;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::wire::{json_response, parse_json, read_body};
use super::{PeerCerts, Server};
use crate::auth::authz::{self, Attributes, User};
use crate::error::ApiError;
use crate::kinds::registry::ResourceType;

/// Who sent the request (`None`: authorization is off, and every request acts as the
/// administrator); a credential that fails is the real 401 (`Unauthorized`, whatever
/// failed, as `genericapifilters.Unauthorized` answers).
pub(super) fn authenticate(
    srv: &Server,
    headers: &HeaderMap,
    peer: &PeerCerts,
) -> Result<Option<User>, ApiError> {
    if !srv.authz {
        return Ok(None);
    }
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    match srv.authn.authenticate(peer.0.as_deref(), auth) {
        Ok(user) => Ok(Some(user)),
        Err(e) => {
            tracing::info!(error = e.0, "unauthorized");
            Err(ApiError::unauthorized())
        }
    }
}

pub(super) fn authorize(srv: &Server, user: Option<&User>, attrs: &Attributes) -> Result<(), ApiError> {
    let Some(user) = user else { return Ok(()) };
    let d = authz::decide(user, attrs, srv.api.as_ref());
    if d.allowed {
        return Ok(());
    }
    let body = if d.reason.is_empty() {
        authz::forbidden_status(user, attrs)
    } else {
        authz::forbidden_status_with_reason(user, attrs, &d.reason)
    };
    tracing::info!(
        user = user.name,
        verb = attrs.verb,
        resource = attrs.resource,
        namespace = attrs.namespace,
        "forbidden"
    );
    Err(ApiError::from(crate::error::ErrorFields {
        code: 403,
        reason: "Forbidden",
        message: body["message"].as_str().unwrap_or_default().to_owned(),
        name: body.pointer("/details/name").and_then(Value::as_str).map(str::to_owned),
        group: body.pointer("/details/group").and_then(Value::as_str).map(str::to_owned),
        kind: body.pointer("/details/kind").and_then(Value::as_str).map(str::to_owned),
        causes: Vec::new(),
        retry_after: None,
    }))
}

pub(super) fn user_info(user: Option<&User>) -> crate::api::admission::UserInfo {
    match user {
        Some(u) => crate::api::admission::UserInfo {
            username: u.name.clone(),
            uid: String::new(),
            groups: u.groups.clone(),
        },
        None => crate::api::admission::UserInfo {
            username: "kubesim-admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
        },
    }
}

pub(super) async fn token_request(
    srv: &Server,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    content_type: &str,
    body: Body,
) -> Result<Response, ApiError> {
    let account = srv.api.get(rt, ns, name).await?;
    let bytes = read_body(body).await?;
    let req = parse_json(&bytes, content_type)?;
    let token = format!("kubesim-sa.{}", crate::kinds::meta::new_uid().replace('-', ""));
    let audiences: Vec<String> = req
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
        .filter(|a: &Vec<String>| !a.is_empty())
        .unwrap_or_else(|| vec![crate::auth::authn::API_AUDIENCE.to_owned()]);
    let uid = account.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default();
    let credential_id = format!("JTI={}", crate::kinds::meta::new_uid());
    srv.authn.add_service_account_token(&token, (ns, name, uid), audiences.clone(), &credential_id);
    let expiration = req.pointer("/spec/expirationSeconds").and_then(Value::as_i64).unwrap_or(3600);
    let expires = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(expiration))
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    Ok(json_response(
        201,
        &json!({
            "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
            "spec": {"audiences": audiences, "expirationSeconds": expiration,
                     "boundObjectRef": null},
            "status": {"token": token, "expirationTimestamp": expires},
        }),
    ))
}
