//! Who a request is: kube-apiserver's authenticator chain as a kind cluster configures it.
//!
//! Start at [`Authenticator::authenticate`]: a client certificate signed by kubesim's CA
//! (the `x509` module: CN the user, O its groups), else a bearer token kubesim issued or
//! was given (the admin token, [`crate::KubeSim::add_token`], TokenRequest tokens), else the
//! anonymous user. Every authenticated user gets `system:authenticated`
//! ([`with_authenticated_group`], apiserver's `AuthenticatedGroupAdder`). A credential that
//! is presented and fails (an unknown token, a certificate kubesim's CA did not sign) is
//! `401 Unauthorized`. [`Authenticator::review`] answers a `TokenReview` with the same
//! chain, as `pkg/registry/authentication/tokenreview/storage.go` does.

mod x509;

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rustls::pki_types::CertificateDer;
use rustls::server::danger::ClientCertVerifier;
use serde_json::{Value, json};

use crate::auth::authz::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, User};

pub(crate) use x509::RequestClientCert;

/// The audience of kubesim's API (`--api-audiences`): what a token without audiences of its
/// own is for, and the default audience of TokenRequest tokens.
pub(crate) const API_AUDIENCE: &str = "https://kubernetes.default.svc";

/// What a token stands for.
#[derive(Clone, Debug)]
struct Token {
    user: User,
    /// The user's uid (a ServiceAccount's), empty for static tokens.
    uid: String,
    /// `None`: a static token, valid for the API's audience only (the token file
    /// authenticator wrapped by `WrapAudienceAgnosticToken`); `Some`: a ServiceAccount
    /// token's audiences.
    audiences: Option<Vec<String>>,
    /// `authentication.kubernetes.io/credential-id` of a ServiceAccount token.
    credential_id: Option<String>,
}

/// Why a request is refused before authorization: the credential it presented failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unauthorized(pub(crate) String);

/// The tokens and client CA kubesim authenticates with.
pub(crate) struct Authenticator {
    tokens: Mutex<HashMap<String, Token>>,
    /// Verifies client certificates against kubesim's CA (none when TLS is off).
    client_ca: Option<Arc<dyn ClientCertVerifier>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").field("client_ca", &self.client_ca.is_some()).finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator that knows no tokens and verifies client certificates with
    /// `client_ca`.
    pub(crate) fn new(client_ca: Option<Arc<dyn ClientCertVerifier>>) -> Self {
        Self { tokens: Mutex::new(HashMap::new()), client_ca }
    }

    /// Accept `token` as `user` with `groups` (a static token, like the token file's).
    pub(crate) fn add_static_token(&self, token: &str, user: &str, groups: &[&str]) {
        let entry =
            Token { user: User::new(user, groups), uid: String::new(), audiences: None, credential_id: None };
        self.tokens.lock().insert(token.to_owned(), entry);
    }

    /// Accept `token` as the ServiceAccount `namespace/name` (uid `uid`) for `audiences`.
    pub(crate) fn add_service_account_token(
        &self,
        token: &str,
        (namespace, name, uid): (&str, &str, &str),
        audiences: Vec<String>,
        credential_id: &str,
    ) {
        let entry = Token {
            user: User::service_account(namespace, name),
            uid: uid.to_owned(),
            audiences: Some(audiences),
            credential_id: Some(credential_id.to_owned()),
        };
        self.tokens.lock().insert(token.to_owned(), entry);
    }

    /// Who presents `client_chain` (the TLS peer's certificates, leaf first) and the
    /// `Authorization` header `authorization`: the certificate's user, else the token's,
    /// else anonymous; `Unauthorized` when a presented credential fails and none succeeds
    /// (the union of request authenticators, then `anonymous` with `FailOnError`).
    pub(crate) fn authenticate(
        &self,
        client_chain: Option<&[CertificateDer<'static>]>,
        authorization: Option<&str>,
    ) -> Result<User, Unauthorized> {
        let mut failure = None;
        if let (Some(chain), Some(ca)) = (client_chain.filter(|c| !c.is_empty()), &self.client_ca) {
            match x509::user(ca.as_ref(), chain) {
                Ok(Some(user)) => return Ok(with_authenticated_group(user)),
                Ok(None) => {}
                Err(e) => failure = Some(e),
            }
        }
        if let Some(token) = authorization.and_then(bearer_token) {
            match self.token_user(token, &[API_AUDIENCE.to_owned()]) {
                Ok(found) => return Ok(with_authenticated_group(found.0.user)),
                Err(e) => failure = Some(e),
            }
        }
        match failure {
            Some(e) => Err(Unauthorized(e)),
            None => Ok(User::anonymous()),
        }
    }

    /// The token's identity for the `requested` audiences and the audiences it is
    /// authenticated for, or the authenticator's error.
    fn token_user(&self, token: &str, requested: &[String]) -> Result<(Token, Vec<String>), String> {
        let found = self.tokens.lock().get(token).cloned();
        let Some(found) = found else { return Err("invalid bearer token".to_owned()) };
        match &found.audiences {
            // `WrapAudienceAgnosticToken`: valid where the request's audiences meet the
            // API's, and for those only; otherwise not this authenticator's token.
            None => {
                let auds: Vec<String> = requested.iter().filter(|a| *a == API_AUDIENCE).cloned().collect();
                if auds.is_empty() {
                    return Err("invalid bearer token".to_owned());
                }
                Ok((found, auds))
            }
            // The ServiceAccount JWT authenticator (`serviceaccount/jwt.go`).
            Some(token_auds) => {
                let auds: Vec<String> =
                    token_auds.iter().filter(|a| requested.contains(a)).cloned().collect();
                if auds.is_empty() {
                    return Err(format!(
                        "token audiences {} is invalid for the target audiences {}",
                        go_quoted(token_auds),
                        go_quoted(requested)
                    ));
                }
                Ok((found, auds))
            }
        }
    }

    /// The `status` of a `TokenReview` of `token` for `audiences` (the API's when empty),
    /// as `tokenreview/storage.go` fills it: `authenticated` and the user when the token
    /// is good, else the authenticator's `error`; Go's encoder leaves out `false` and empty
    /// fields but writes the empty `user` struct.
    pub(crate) fn review(&self, token: &str, audiences: &[String]) -> Value {
        let requested = if audiences.is_empty() { vec![API_AUDIENCE.to_owned()] } else { audiences.to_vec() };
        match self.token_user(token, &requested) {
            Ok((found, auds)) => {
                let user = with_authenticated_group(found.user);
                let mut info = json!({"username": user.name});
                if !found.uid.is_empty() {
                    info["uid"] = json!(found.uid);
                }
                info["groups"] = json!(user.groups);
                if let Some(id) = found.credential_id {
                    info["extra"] = json!({"authentication.kubernetes.io/credential-id": [id]});
                }
                json!({"authenticated": true, "user": info, "audiences": auds})
            }
            Err(error) => json!({"user": {}, "error": error}),
        }
    }
}

/// The token of an `Authorization` header as `bearertoken.go` reads it: the header
/// trimmed, split on spaces, `bearer` in any case, then a non-empty second part.
fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// `AuthenticatedGroupAdder`: an authenticated user other than `system:anonymous` gets
/// `system:authenticated`, unless it already has it or `system:unauthenticated`.
pub(crate) fn with_authenticated_group(mut user: User) -> User {
    let marked = user.groups.iter().any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
    if user.name != ANONYMOUS_USER && !marked {
        user.groups.push(AUTHENTICATED_GROUP.to_owned());
    }
    user
}

/// A `[]string` printed with Go's `%q`: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_adder_adds_authenticated_once() {
        let alice = with_authenticated_group(User::new("alice", &["dev"]));
        assert_eq!(alice.groups, ["dev", AUTHENTICATED_GROUP]);
        assert_eq!(with_authenticated_group(alice.clone()), alice);
        let anonymous = with_authenticated_group(User::anonymous());
        assert_eq!(anonymous.groups, [UNAUTHENTICATED_GROUP]);
    }

    #[test]
    fn tokens_authenticate_or_fail_with_the_authenticators_words() {
        let authn = Authenticator::new(None);
        authn.add_static_token("t", "alice", &[]);
        authn.add_service_account_token("sa", ("ns", "bot", "uid-1"), vec!["vault".into()], "JTI=1");
        assert_eq!(
            authn.authenticate(None, Some("Bearer t")).map(|u| u.groups),
            Ok(vec![AUTHENTICATED_GROUP.into()])
        );
        assert_eq!(authn.authenticate(None, None).map(|u| u.name), Ok(ANONYMOUS_USER.to_owned()));
        assert_eq!(
            authn.authenticate(None, Some("Bearer nope")),
            Err(Unauthorized("invalid bearer token".into()))
        );
        // A ServiceAccount token for another audience is not good for the API.
        assert_eq!(
            authn.authenticate(None, Some("Bearer sa")),
            Err(Unauthorized(
                r#"token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc"]"#
                    .into()
            ))
        );
        let review = authn.review("sa", &["vault".into()]);
        assert_eq!(review["authenticated"], true);
        assert_eq!(review["user"]["username"], "system:serviceaccount:ns:bot");
        assert_eq!(review["audiences"], json!(["vault"]));
        assert_eq!(authn.review("nope", &[]), json!({"user": {}, "error": "invalid bearer token"}));
    }
}
