//! `apiextensions.k8s.io` `ConversionReview` in and out: [`parse`] checks a request body,
//! [`Request::answer`] renders the response in the request's own version (`v1`, or
//! `v1beta1` when the API server sent one), as controller-runtime's conversion webhook does.
//!
//! A success is `{uid, convertedObjects, result: {status: Success}}`; a failure is
//! `{uid, convertedObjects: [], result: {status: Failure, message}}`, which the API server
//! shows as `conversion webhook for <group/version, Kind> failed: <message>`. Only a body
//! that is no ConversionReview at all is an HTTP error (400, with the reason).

use serde_json::{Value, json};

/// The review version the CRDs ask for (`conversionReviewVersions: ["v1"]`).
pub(crate) const API_VERSION: &str = "apiextensions.k8s.io/v1";
/// The older review version, still answered (in its own version) when it is sent.
pub(crate) const API_VERSION_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// Why a request body is not a ConversionReview the server can answer (400 Bad Request).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConversionReviewError {
    /// The body is not JSON.
    #[error("the body is not JSON")]
    Json(#[from] serde_json::Error),
    /// `apiVersion` is neither `apiextensions.k8s.io/v1` nor `apiextensions.k8s.io/v1beta1`.
    #[error("apiVersion {0:?} is not served; send an apiextensions.k8s.io/v1 ConversionReview")]
    ApiVersion(String),
    /// `kind` is not `ConversionReview`.
    #[error("kind {0:?} is not ConversionReview")]
    Kind(String),
    /// There is no `request` object.
    #[error("the ConversionReview has no request")]
    NoRequest,
    /// `request.uid` is missing or empty; the answer must echo it.
    #[error("request.uid is missing")]
    NoUid,
    /// `request.desiredAPIVersion` is missing or empty.
    #[error("request.desiredAPIVersion is missing")]
    NoDesiredVersion,
    /// `request.objects` is present but not a list.
    #[error("request.objects is not a list")]
    ObjectsNotAList,
    /// An element of `request.objects` is not a JSON object.
    #[error("request.objects[{0}] is not an object")]
    NotAnObject(usize),
}

/// A checked conversion request.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// The review's `apiVersion`, which the answer carries too.
    pub(crate) api_version: &'static str,
    /// `request.uid`, echoed in the response.
    pub(crate) uid: String,
    /// `request.desiredAPIVersion`, e.g. `demo.ctop.dev/v2`.
    pub(crate) desired_api_version: String,
    /// `request.objects`, each a JSON object.
    pub(crate) objects: Vec<Value>,
}

/// Check `body` and pull out the request.
pub(crate) fn parse(body: &[u8]) -> Result<Request, ConversionReviewError> {
    let mut review: Value = serde_json::from_slice(body)?;
    let api_version = match review.get("apiVersion").and_then(Value::as_str).unwrap_or_default() {
        API_VERSION => API_VERSION,
        API_VERSION_V1BETA1 => API_VERSION_V1BETA1,
        other => return Err(ConversionReviewError::ApiVersion(other.to_owned())),
    };
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "ConversionReview" {
        return Err(ConversionReviewError::Kind(kind.to_owned()));
    }
    let mut request = match review.get_mut("request").map(Value::take) {
        Some(r @ Value::Object(_)) => r,
        _ => return Err(ConversionReviewError::NoRequest),
    };
    let text = |name: &str| request.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let uid = text("uid");
    if uid.is_empty() {
        return Err(ConversionReviewError::NoUid);
    }
    let desired_api_version = text("desiredAPIVersion");
    if desired_api_version.is_empty() {
        return Err(ConversionReviewError::NoDesiredVersion);
    }
    let objects = match request.get_mut("objects").map(Value::take) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(objects)) => objects,
        Some(_) => return Err(ConversionReviewError::ObjectsNotAList),
    };
    if let Some(i) = objects.iter().position(|o| !o.is_object()) {
        return Err(ConversionReviewError::NotAnObject(i));
    }
    Ok(Request { api_version, uid, desired_api_version, objects })
}

impl Request {
    /// The response: the converted objects, or the failure's message.
    pub(crate) fn answer(&self, converted: Result<Vec<Value>, String>) -> Value {
        let response = match converted {
            Ok(objects) => json!({
                "uid": self.uid,
                "convertedObjects": objects,
                "result": {"status": "Success"},
            }),
            Err(message) => json!({
                "uid": self.uid,
                "convertedObjects": [],
                "result": {"status": "Failure", "message": message},
            }),
        };
        json!({"apiVersion": self.api_version, "kind": "ConversionReview", "response": response})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(api_version: &str, request: &Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": api_version, "kind": "ConversionReview", "request": request}),
        )
        .expect("json")
    }

    #[test]
    fn checks_the_envelope() {
        assert!(matches!(parse(b"{not json"), Err(ConversionReviewError::Json(_))));
        let admission = br#"{"apiVersion":"admission.k8s.io/v1","kind":"ConversionReview","request":{}}"#;
        assert!(
            matches!(parse(admission), Err(ConversionReviewError::ApiVersion(v)) if v == "admission.k8s.io/v1")
        );
        let wrong_kind = br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"AdmissionReview","request":{}}"#;
        assert!(matches!(parse(wrong_kind), Err(ConversionReviewError::Kind(k)) if k == "AdmissionReview"));
        let no_request = br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#;
        assert!(matches!(parse(no_request), Err(ConversionReviewError::NoRequest)));
        let no_uid = review(API_VERSION, &json!({"desiredAPIVersion": "g/v2", "objects": []}));
        assert!(matches!(parse(&no_uid), Err(ConversionReviewError::NoUid)));
        let no_desired = review(API_VERSION, &json!({"uid": "u", "objects": []}));
        assert!(matches!(parse(&no_desired), Err(ConversionReviewError::NoDesiredVersion)));
        let not_a_list =
            review(API_VERSION, &json!({"uid": "u", "desiredAPIVersion": "g/v2", "objects": {}}));
        assert!(matches!(parse(&not_a_list), Err(ConversionReviewError::ObjectsNotAList)));
        let not_an_object =
            review(API_VERSION, &json!({"uid": "u", "desiredAPIVersion": "g/v2", "objects": [{}, "x"]}));
        assert!(matches!(parse(&not_an_object), Err(ConversionReviewError::NotAnObject(1))));

        let ok = parse(&review(
            API_VERSION_V1BETA1,
            &json!({"uid": "u", "desiredAPIVersion": "g/v2", "objects": [{"a": 1}]}),
        ))
        .expect("valid");
        assert_eq!(ok.api_version, API_VERSION_V1BETA1);
        assert_eq!(ok.uid, "u");
        assert_eq!(ok.desired_api_version, "g/v2");
        assert_eq!(ok.objects, [json!({"a": 1})]);
        let none =
            parse(&review(API_VERSION, &json!({"uid": "u", "desiredAPIVersion": "g/v2"}))).expect("valid");
        assert!(none.objects.is_empty());
    }

    #[test]
    fn answers_in_the_requests_version() {
        let request = Request {
            api_version: API_VERSION_V1BETA1,
            uid: "u1".into(),
            desired_api_version: "g/v2".into(),
            objects: vec![json!({})],
        };
        assert_eq!(
            request.answer(Ok(vec![json!({"apiVersion": "g/v2"})])),
            json!({"apiVersion": API_VERSION_V1BETA1, "kind": "ConversionReview", "response": {
                "uid": "u1", "convertedObjects": [{"apiVersion": "g/v2"}], "result": {"status": "Success"}}})
        );
        assert_eq!(
            request.answer(Err("Error: boom".into()))["response"],
            json!({"uid": "u1", "convertedObjects": [], "result": {"status": "Failure", "message": "Error: boom"}})
        );
    }
}
