//! The verbs on a resource path: authorization of the request, injected faults, then
//! get, list, watch, create, update, patch, delete and deletecollection, and the `/scale`,
//! `/status`, `/finalize` and `/token` subresources.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;
use serde_json::{Value, json};

use super::Server;
use super::auth::{authorize, token_request, user_info};
use super::list::{list, render_one, select};
use super::path::{Query, ResPath, truthy, verb_of};
use super::reviews::review;
use super::watch::watch;
use super::wire::{
    Shape, error_response, json_response, negotiate, parse_json, read_body, with_first_warning, with_warnings,
};
use crate::api::{Api, DeleteOpts, Deleted, FieldValidation, PatchKind, WriteOpts};
use crate::auth::authz::{Attributes, User};
use crate::error::ApiError;
use crate::kinds::registry::ResourceType;
use crate::kinds::selector::FieldSelector;
use crate::store::WriteCause;

pub(super) fn write_opts(
    query: &Query,
    headers: &HeaderMap,
    user: Option<&User>,
) -> Result<WriteOpts, ApiError> {
    let field_validation = match query.get("fieldValidation").map(String::as_str) {
        None | Some("" | "Warn") => FieldValidation::Warn,
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}. Supported values: Ignore, Warn, Strict"
            )));
        }
    };
    let dry_run = match query.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => return Err(ApiError::bad_request(format!("Invalid dryRun value: {other:?}"))),
    };
    Ok(WriteOpts {
        field_manager: query.get("fieldManager").filter(|s| !s.is_empty()).cloned(),
        user_agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        dry_run,
        field_validation,
        force: truthy(query, "force"),
        user: user_info(user),
        authz_user: user.cloned(),
        from_apply: false,
        log_as: Some(WriteCause::Request),
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn resource(
    srv: &Arc<Server>,
    method: &Method,
    p: ResPath,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
    user: Option<&User>,
) -> Result<Response, ApiError> {
    let rt = srv.api.registry.get(&p.group, &p.version, &p.resource).ok_or_else(ApiError::no_route)?;
    if p.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::no_route());
    }
    // A namespace addressed by name is "in" itself for authorization.
    let ns = p.namespace.clone().unwrap_or_default();
    let verb = verb_of(method, &p, query);
    let mut attrs = Attributes::resource(verb, &p.group, &p.resource);
    let auth_ns = if rt.kind == "Namespace" && rt.group.is_empty() {
        p.name.clone().unwrap_or_default()
    } else {
        ns.clone()
    };
    attrs = attrs.in_namespace(&auth_ns);
    if let Some(name) = &p.name {
        attrs = attrs.named(name);
    } else if let Some(name) = query
        .get("fieldSelector")
        .and_then(|f| FieldSelector::parse(f, &rt.kind).ok())
        .and_then(|f| f.pinned_name().map(str::to_owned))
        && (verb == "list" || verb == "watch")
    {
        attrs = attrs.named(&name);
    }
    if let Some(sub) = &p.sub {
        attrs = attrs.with_subresource(sub);
    }
    authorize(srv, user, &attrs)?;
    if rt.crd.as_ref().is_some_and(|c| c.definition.unservable) {
        // The CRD handler could not make its serving info (the conversion webhook's client).
        return Err(ApiError::internal_error("error resolving resource"));
    }
    // A deprecated CRD version warns on every request that reaches its handler, errors
    // included (customresource_handler.go adds the warning before serving the verb).
    let deprecation = rt.crd.as_ref().and_then(|c| c.deprecation.clone());
    let answer = verbs(srv, method, p, &rt, query, headers, body, user).await;
    Ok(match deprecation {
        Some(text) => with_first_warning(answer.unwrap_or_else(|e| error_response(&e)), &text),
        None => answer?,
    })
}

/// The verb on an authorized request for `rt`.
#[allow(clippy::too_many_arguments)]
async fn verbs(
    srv: &Arc<Server>,
    method: &Method,
    p: ResPath,
    rt: &Arc<ResourceType>,
    query: &Query,
    headers: &HeaderMap,
    body: Body,
    user: Option<&User>,
) -> Result<Response, ApiError> {
    let ns = p.namespace.clone().unwrap_or_default();
    let verb = verb_of(method, &p, query);
    let rt = rt.clone();
    let content_type =
        headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let is_apply = content_type.starts_with("application/apply-patch");
    // A test harness's own requests (which act as the test, not as a client under test)
    // carry the exemption header and pass every injected fault.
    let exempt = headers.get(crate::faults::EXEMPT_HEADER).is_some();
    let injected = if exempt { Default::default() } else { srv.faults.check(verb, is_apply, &p.resource) };
    if !injected.delay.is_zero() {
        tokio::time::sleep(injected.delay).await;
    }
    if let Some(code) = injected.fail {
        tracing::info!(verb, resource = p.resource, code, "injected fault");
        return Err(ApiError::with_code(code));
    }
    let shape = negotiate(headers)?;
    let api = &srv.api;
    match (method, p.name.as_deref(), p.sub.as_deref()) {
        (&Method::GET, None, None) if truthy(query, "watch") => {
            watch(srv, &rt, p.namespace.as_deref(), query, shape).await
        }
        (&Method::GET, None, None) => list(api, &rt, p.namespace.as_deref(), query, shape).await,
        (&Method::GET, Some(name), None | Some("status")) => {
            let obj = api.get(&rt, &ns, name).await?;
            // A missing object is a 404 whatever the client asked it to look like.
            if let Shape::Partial(p) = shape
                && let Some(refused) = p.refuse(&rt, false)
            {
                return Err(refused);
            }
            Ok(json_response(200, &render_one(&rt, obj, shape, query)))
        }
        (&Method::GET, Some(name), Some("scale")) if rt.scale.is_some() => {
            Ok(json_response(200, &scale_of(&rt, &api.get(&rt, &ns, name).await?)))
        }
        (&Method::POST, None, None) if rt.is_review() => {
            let body = parse_json(&read_body(body).await?, &content_type)?;
            Ok(json_response(201, &review(srv, &rt, &ns, user, body)?))
        }
        (_, _, _) if rt.is_review() => Err(ApiError::method_not_allowed(method.as_str())),
        (&Method::POST, None, None) => {
            let opts = write_opts(query, headers, user)?;
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.create(&rt, &ns, body, &opts).await?;
            Ok(with_warnings(json_response(w.code, &w.object), &w.warnings))
        }
        (&Method::POST, Some(name), Some("token")) if rt.kind == "ServiceAccount" => {
            token_request(srv, &rt, &ns, name, &content_type, body).await
        }
        (&Method::PUT, Some(name), Some("finalize")) if rt.kind == "Namespace" => {
            // Only who asks matters: finalize takes no write options.
            let opts = WriteOpts {
                user_agent: headers
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned(),
                user: user_info(user),
                log_as: Some(WriteCause::Request),
                ..WriteOpts::default()
            };
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.finalize_namespace(name, &body, &opts)?;
            Ok(json_response(w.code, &w.object))
        }
        (&Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            if sub.is_some() && !rt.status {
                return Err(ApiError::no_route());
            }
            let opts = write_opts(query, headers, user)?;
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.replace(&rt, &ns, name, sub, body, &opts).await?;
            Ok(with_warnings(json_response(w.code, &w.object), &w.warnings))
        }
        (&Method::PUT | &Method::PATCH, Some(name), Some("scale")) if rt.scale.is_some() => {
            let bytes = read_body(body).await?;
            scale_write(api, &rt, &ns, name, method, &content_type, &bytes, query, headers, user).await
        }
        (&Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            if sub.is_some() && !rt.status {
                return Err(ApiError::no_route());
            }
            let kind = match content_type.split(';').next().unwrap_or("").trim() {
                "application/merge-patch+json" => PatchKind::Merge,
                "application/json-patch+json" => PatchKind::Json,
                "application/strategic-merge-patch+json" => PatchKind::Strategic,
                "application/apply-patch+yaml" | "application/apply-patch+cbor" => PatchKind::Apply,
                _ => return Err(ApiError::unsupported_patch_type()),
            };
            let opts = write_opts(query, headers, user)?;
            if kind != PatchKind::Apply && query.contains_key("force") {
                return Err(ApiError::bad_request("force may not be set for non-apply patch"));
            }
            let body = parse_json(&read_body(body).await?, &content_type)?;
            let w = api.patch(&rt, &ns, name, sub, kind, &body, &opts).await?;
            Ok(with_warnings(json_response(w.code, &w.object), &w.warnings))
        }
        (&Method::DELETE, Some(name), None) => {
            let bytes = read_body(body).await?;
            let body = parse_json(&bytes, &content_type)?;
            let mut opts = DeleteOpts::from_body(&body);
            opts.user = user_info(user);
            opts.log_as = Some(WriteCause::Request);
            if let Some(pp) = query.get("propagationPolicy") {
                opts.propagation = Some(pp.clone());
            }
            if query.get("dryRun").is_some_and(|d| d == "All") {
                opts.dry_run = true;
            }
            if let Some(grace) = query.get("gracePeriodSeconds").and_then(|g| g.parse().ok()) {
                opts.grace_period = Some(grace);
            }
            if let Some(pp) = &opts.propagation
                && !matches!(pp.as_str(), "Background" | "Foreground" | "Orphan")
            {
                return Err(ApiError::invalid_field(
                    rt.gr(),
                    "DeleteOptions",
                    "",
                    "FieldValueNotSupported",
                    "propagationPolicy",
                    &format!(
                        "Unsupported value: {:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
                        pp
                    ),
                ));
            }
            match api.delete(&rt, &ns, name, &opts).await? {
                Deleted::Pending(obj) => Ok(json_response(200, &obj)),
                Deleted::Gone(obj) => Ok(json_response(200, &obj)),
            }
        }
        (&Method::DELETE, None, None) => {
            let bytes = read_body(body).await?;
            let mut opts = DeleteOpts::from_body(&parse_json(&bytes, &content_type)?);
            opts.user = user_info(user);
            opts.log_as = Some(WriteCause::Request);
            if let Some(grace) = query.get("gracePeriodSeconds").and_then(|g| g.parse().ok()) {
                opts.grace_period = Some(grace);
            }
            let (items, _) = select(api, &rt, p.namespace.as_deref(), query).await?;
            for o in items {
                let n = o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let ons = o.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
                match api.delete(&rt, ons, n, &opts).await {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(json_response(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": {"group": rt.group, "kind": rt.plural}}),
            ))
        }
        (&Method::GET | &Method::PUT | &Method::PATCH | &Method::POST | &Method::DELETE, _, _) => {
            Err(ApiError::no_route())
        }
        _ => Err(ApiError::method_not_allowed(method.as_str())),
    }
}

pub(super) fn scale_of(rt: &ResourceType, obj: &Value) -> Value {
    let Some(s) = &rt.scale else { return json!({}) };
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": obj.pointer("/metadata/name"), "namespace": obj.pointer("/metadata/namespace"),
            "uid": obj.pointer("/metadata/uid"), "resourceVersion": obj.pointer("/metadata/resourceVersion"),
            "creationTimestamp": obj.pointer("/metadata/creationTimestamp"),
        },
        "spec": {"replicas": obj.pointer(&s.spec_replicas).cloned().unwrap_or(json!(0))},
        "status": {
            "replicas": obj.pointer(&s.status_replicas).cloned().unwrap_or(json!(0)),
            "selector": s.label_selector.as_deref().and_then(|p| obj.pointer(p)).map(format_selector),
        },
    })
}

/// A selector as `metav1.FormatLabelSelector` prints it: a string selector as is, a
/// `LabelSelector` object as `a=b,c in (d,e),!f`.
pub(super) fn format_selector(sel: &Value) -> Value {
    if sel.is_string() {
        return sel.clone();
    }
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> =
            e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        values.sort_unstable();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            _ => format!("!{key}"),
        });
    }
    json!(parts.join(","))
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn scale_write(
    api: &Api,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    method: &Method,
    content_type: &str,
    bytes: &[u8],
    query: &Query,
    headers: &HeaderMap,
    user: Option<&User>,
) -> Result<Response, ApiError> {
    let Some(s) = &rt.scale else { return Err(ApiError::no_route()) };
    let body = parse_json(bytes, content_type)?;
    let current = scale_of(rt, &api.get(rt, ns, name).await?);
    let scale = if method == Method::PUT {
        body
    } else {
        let mut doc = current.clone();
        json_patch::merge(&mut doc, &body);
        doc
    };
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    let mut patch = json!({});
    let segs: Vec<&str> = s.spec_replicas.split('/').filter(|x| !x.is_empty()).collect();
    let mut cur = &mut patch;
    for (i, seg) in segs.iter().enumerate() {
        if i + 1 == segs.len() {
            cur[*seg] = replicas.clone();
        } else {
            cur = &mut cur[*seg];
        }
    }
    if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
        patch["metadata"] = json!({"resourceVersion": rv});
    }
    let opts = write_opts(query, headers, user)?;
    let w = api.patch(rt, ns, name, Some("scale"), PatchKind::Merge, &patch, &opts).await?;
    Ok(json_response(200, &scale_of(rt, &w.object)))
}
