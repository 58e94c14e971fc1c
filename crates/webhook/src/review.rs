//! `admission.k8s.io/v1` `AdmissionReview` in and out: [`parse`] checks a request body,
//! [`Answer`] is what a handler decided, [`Answer::into_review`] renders the response
//! (with a base64 JSONPatch for mutations, computed by [`patch`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

/// The only review version served (what `admissionReviewVersions: ["v1"]` asks for).
pub const API_VERSION: &str = "admission.k8s.io/v1";

/// Why a request body is not an AdmissionReview the server can answer (400 Bad Request).
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The body is not JSON.
    #[error("the body is not JSON")]
    Json(#[from] serde_json::Error),
    /// `apiVersion` is not `admission.k8s.io/v1` (v1beta1 is not served: list only `v1`
    /// in `admissionReviewVersions`).
    #[error("apiVersion {0:?} is not served; send an admission.k8s.io/v1 AdmissionReview")]
    ApiVersion(String),
    /// `kind` is not `AdmissionReview`.
    #[error("kind {0:?} is not AdmissionReview")]
    Kind(String),
    /// There is no `request` object.
    #[error("the AdmissionReview has no request")]
    NoRequest,
    /// `request.uid` is missing or empty; the answer must echo it.
    #[error("request.uid is missing")]
    NoUid,
    /// `request.object` is present but not an object.
    #[error("request.{0} is not an object")]
    NotAnObject(&'static str),
}

/// A checked admission request.
#[derive(Clone, Debug)]
pub struct Request {
    /// `request.uid`, echoed in the response.
    pub uid: String,
    /// `request.operation` (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`).
    pub operation: String,
    /// `request.object` (null on DELETE).
    pub object: Value,
    /// `request.oldObject` on UPDATE and DELETE.
    pub old_object: Option<Value>,
    /// The whole `request`.
    pub raw: Value,
}

/// Check `body` and pull out the request.
pub fn parse(body: &[u8]) -> Result<Request, ReviewError> {
    let mut review: Value = serde_json::from_slice(body)?;
    let api_version = review.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if api_version != API_VERSION {
        return Err(ReviewError::ApiVersion(api_version.to_owned()));
    }
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "AdmissionReview" {
        return Err(ReviewError::Kind(kind.to_owned()));
    }
    let raw = match review.get_mut("request").map(Value::take) {
        Some(r @ Value::Object(_)) => r,
        _ => return Err(ReviewError::NoRequest),
    };
    let uid = raw.get("uid").and_then(Value::as_str).unwrap_or_default().to_owned();
    if uid.is_empty() {
        return Err(ReviewError::NoUid);
    }
    let field = |name: &'static str| match raw.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
        Some(_) => Err(ReviewError::NotAnObject(name)),
    };
    let object = field("object")?.unwrap_or(Value::Null);
    let old_object = field("oldObject")?;
    let operation = raw.get("operation").and_then(Value::as_str).unwrap_or("CREATE").to_owned();
    Ok(Request { uid, operation, object, old_object, raw })
}

/// What the server answers one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// On denial: the message the user sees after `admission webhook "x" denied the request:`.
    pub message: Option<String>,
    /// The HTTP-like code of a denial (403 by default, 500 for handler failures).
    pub code: Option<u16>,
    /// Warnings `kubectl` prints.
    pub warnings: Vec<String>,
    /// JSONPatch operations that turn the request's object into the mutated one.
    pub patch: Option<Value>,
}

impl Answer {
    /// Allowed, nothing to say.
    #[must_use]
    pub fn allow() -> Self {
        Self { allowed: true, ..Self::default() }
    }

    /// Denied with `message` and `code`.
    #[must_use]
    pub fn deny(message: impl Into<String>, code: u16) -> Self {
        Self { allowed: false, message: Some(message.into()), code: Some(code), ..Self::default() }
    }

    /// The `AdmissionReview` response for request `uid`.
    #[must_use]
    pub fn into_review(self, uid: &str) -> Value {
        let mut response = Map::new();
        response.insert("uid".into(), json!(uid));
        response.insert("allowed".into(), json!(self.allowed));
        if !self.allowed {
            let code = self.code.unwrap_or(403);
            let reason = match code {
                400 => "BadRequest",
                403 => "Forbidden",
                422 => "Invalid",
                500 => "InternalError",
                _ => "",
            };
            let mut status = Map::new();
            status.insert("code".into(), json!(code));
            status.insert("message".into(), json!(self.message.unwrap_or_default()));
            if !reason.is_empty() {
                status.insert("reason".into(), json!(reason));
            }
            response.insert("status".into(), Value::Object(status));
        }
        if !self.warnings.is_empty() {
            response.insert("warnings".into(), json!(self.warnings));
        }
        if let Some(patch) = self.patch {
            let bytes = serde_json::to_vec(&patch).unwrap_or_default();
            response.insert("patchType".into(), json!("JSONPatch"));
            response.insert("patch".into(), json!(BASE64.encode(bytes)));
        }
        json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response})
    }
}

/// The JSONPatch from `before` to `after`, or `None` when they are equal.
#[must_use]
pub fn patch(before: &Value, after: &Value) -> Option<Value> {
    let ops = json_patch::diff(before, after);
    if ops.0.is_empty() {
        return None;
    }
    serde_json::to_value(ops).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(request: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"apiVersion": API_VERSION, "kind": "AdmissionReview", "request": request}))
            .expect("json")
    }

    #[test]
    fn checks_the_envelope() {
        assert!(matches!(parse(b"{not json"), Err(ReviewError::Json(_))));
        let v1beta1 =
            br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"a"}}"#;
        assert!(matches!(parse(v1beta1), Err(ReviewError::ApiVersion(v)) if v == "admission.k8s.io/v1beta1"));
        let wrong_kind = br#"{"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"a"}}"#;
        assert!(matches!(parse(wrong_kind), Err(ReviewError::Kind(_))));
        let no_request = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert!(matches!(parse(no_request), Err(ReviewError::NoRequest)));
        assert!(matches!(parse(&review(json!({"object": {}}))), Err(ReviewError::NoUid)));
        assert!(matches!(
            parse(&review(json!({"uid": "u", "object": "x"}))),
            Err(ReviewError::NotAnObject("object"))
        ));
        let ok = parse(&review(
            json!({"uid": "u", "operation": "UPDATE", "object": {"a": 1}, "oldObject": {"a": 0}}),
        ))
        .expect("valid");
        assert_eq!(ok.uid, "u");
        assert_eq!(ok.operation, "UPDATE");
        assert_eq!(ok.old_object, Some(json!({"a": 0})));
    }

    #[test]
    fn renders_denials_and_patches() {
        let denied = Answer { warnings: vec!["w".into()], ..Answer::deny("no", 403) }.into_review("u1");
        assert_eq!(
            denied["response"],
            json!({"uid": "u1", "allowed": false, "warnings": ["w"],
                   "status": {"code": 403, "message": "no", "reason": "Forbidden"}})
        );
        let p =
            patch(&json!({"metadata": {}}), &json!({"metadata": {"labels": {"a": "b"}}})).expect("a change");
        let allowed = Answer { patch: Some(p.clone()), ..Answer::allow() }.into_review("u2");
        assert_eq!(allowed["response"]["patchType"], "JSONPatch");
        let bytes = BASE64.decode(allowed["response"]["patch"].as_str().expect("patch")).expect("base64");
        assert_eq!(serde_json::from_slice::<Value>(&bytes).expect("json"), p);
        assert_eq!(patch(&json!({"a": 1}), &json!({"a": 1})), None);
        // Keys with `/` and `~` (label names) are escaped so the patch applies.
        let before = json!({"metadata": {"labels": {"a": "b"}}});
        let after = json!({"metadata": {"labels": {"a": "b", "demo.ctop.dev/team": "core", "x~y": "z"}}});
        let ops: json_patch::Patch =
            serde_json::from_value(patch(&before, &after).expect("a change")).expect("ops");
        let mut applied = before.clone();
        json_patch::patch(&mut applied, &ops).expect("applies");
        assert_eq!(applied, after);
    }
}
