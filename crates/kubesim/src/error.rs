//! API errors and the `Status` bodies the real API server answers with.

use serde_json::{Value, json};

/// One entry of `details.causes` in a `Status` body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusCause {
    /// Machine-readable reason, e.g. `FieldValueInvalid` or `FieldManagerConflict`.
    pub reason: String,
    /// Human-readable message of this cause.
    pub message: String,
    /// The field the cause is about, e.g. `spec.replicas`.
    pub field: String,
}

/// An error answered to a client as a `Status` object with an HTTP code.
///
/// Build one with the constructors, which reproduce the real API server's reasons and
/// messages; [`ApiError::to_status`] renders the body. The fields live behind a box (so
/// that `Result<_, ApiError>` stays small) and are reached through `Deref`.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{} {}: {}", .0.code, .0.reason, .0.message)]
pub struct ApiError(Box<ErrorFields>);

/// The parts of an [`ApiError`].
#[derive(Clone, Debug)]
pub struct ErrorFields {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`.
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind` (for most errors the resource's plural name).
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<StatusCause>,
    /// `details.retryAfterSeconds`.
    pub retry_after: Option<u64>,
}

/// A group and resource, printed as `deployments.apps` (or `configmaps` for the core group).
#[derive(Clone, Copy, Debug)]
pub struct GroupResource<'a> {
    /// API group; empty for the core group.
    pub group: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
}

impl std::fmt::Display for GroupResource<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

impl std::ops::Deref for ApiError {
    type Target = ErrorFields;
    fn deref(&self) -> &ErrorFields {
        &self.0
    }
}

impl std::ops::DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut ErrorFields {
        &mut self.0
    }
}

impl From<ErrorFields> for ApiError {
    fn from(f: ErrorFields) -> Self {
        Self(Box::new(f))
    }
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self(Box::new(ErrorFields {
            code,
            reason,
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after: None,
        }))
    }

    fn about(mut self, gr: GroupResource<'_>, name: &str) -> Self {
        if !name.is_empty() {
            self.name = Some(name.to_owned());
        }
        self.group = Some(gr.group.to_owned());
        self.kind = Some(gr.resource.to_owned());
        self
    }

    /// 404: `configmaps "x" not found`.
    pub fn not_found(gr: GroupResource<'_>, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{gr} \"{name}\" not found")).about(gr, name)
    }

    /// 404 for a path that names no resource at all.
    pub fn no_route() -> Self {
        Self::new(404, "NotFound", "the server could not find the requested resource")
    }

    /// 409: `configmaps "x" already exists`.
    pub fn already_exists(gr: GroupResource<'_>, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{gr} \"{name}\" already exists")).about(gr, name)
    }

    /// 409: the optimistic-concurrency conflict.
    pub fn conflict(gr: GroupResource<'_>, name: &str, detail: &str) -> Self {
        Self::new(409, "Conflict", format!("Operation cannot be fulfilled on {gr} \"{name}\": {detail}"))
            .about(gr, name)
    }

    /// The standard stale-resourceVersion conflict.
    pub fn stale(gr: GroupResource<'_>, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 from server-side apply with `FieldManagerConflict` causes.
    pub fn apply_conflict(
        gr: GroupResource<'_>,
        name: &str,
        message: String,
        causes: Vec<StatusCause>,
    ) -> Self {
        let mut e = Self::new(409, "Conflict", message).about(gr, name);
        e.causes = causes;
        e
    }

    /// 422 with field causes; `kind_group` is e.g. `WebApp.apps.example.com` or `Deployment.apps`.
    pub fn invalid(gr: GroupResource<'_>, kind_group: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let rendered: Vec<String> =
            causes
                .iter()
                .map(|c| {
                    if c.field.is_empty() { c.message.clone() } else { format!("{}: {}", c.field, c.message) }
                })
                .collect();
        let list =
            if rendered.len() == 1 { rendered[0].clone() } else { format!("[{}]", rendered.join(", ")) };
        let mut e = Self::new(422, "Invalid", format!("{kind_group} \"{name}\" is invalid: {list}"));
        e.name = Some(name.to_owned());
        e.group = Some(gr.group.to_owned());
        e.kind = Some(kind_group.split('.').next().unwrap_or(kind_group).to_owned());
        e.causes = causes;
        e
    }

    /// 422 with a single field cause.
    pub fn invalid_field(
        gr: GroupResource<'_>,
        kind_group: &str,
        name: &str,
        reason: &str,
        field: &str,
        message: &str,
    ) -> Self {
        Self::invalid(
            gr,
            kind_group,
            name,
            vec![StatusCause {
                reason: reason.to_owned(),
                message: message.to_owned(),
                field: field.to_owned(),
            }],
        )
    }

    /// 422 without details: a patch that cannot be applied (e.g. a failed JSON-patch `test`).
    pub fn rejected() -> Self {
        Self::new(422, "Invalid", "the server rejected our request due to an error in our request")
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden.
    pub fn forbidden(gr: GroupResource<'_>, name: &str, message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message).about(gr, name)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({verb})"),
        )
    }

    /// 406 NotAcceptable: no media type of the `Accept` header is one the server answers in
    /// (an `as=` transform it does not know leaves its media type out). The server's words,
    /// listing what kubesim serves (the API server's list for custom resources; for
    /// built-in kinds it adds protobuf, which kubesim does not answer in). The words of
    /// `NewNotAcceptableError` in k8s.io/apiserver `pkg/endpoints/handlers/negotiation/errors.go`.
    pub fn not_acceptable() -> Self {
        Self::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml",
        )
    }

    /// 406 NotAcceptable for an answer that cannot take the form the client named with
    /// `as=` (a list asked for as one object's `PartialObjectMetadata`, or the other way
    /// round); `message` in the server's words.
    pub fn not_acceptable_as(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    /// 410 Expired.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge for a request body over `limit` bytes, worded like the
    /// real server's: `Request entity too large: limit is 3145728`.
    pub fn request_entity_too_large(limit: usize) -> Self {
        Self::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {limit}"))
    }

    /// 415 UnsupportedMediaType for a PATCH.
    pub fn unsupported_patch_type() -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        )
    }

    /// 415 UnsupportedMediaType for a body of another write.
    pub fn unsupported_media_type() -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )
    }

    /// 429 TooManyRequests (used by fault injection).
    pub fn too_many_requests() -> Self {
        let mut e = Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        );
        e.retry_after = Some(1);
        e
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// `apierrors.NewInternalError`: 500 `Internal error occurred: <why>`, the text again as
    /// the one cause.
    pub fn internal_error(why: &str) -> Self {
        let mut e = Self::internal(format!("Internal error occurred: {why}"));
        e.causes = vec![StatusCause { reason: String::new(), message: why.to_owned(), field: String::new() }];
        e
    }

    /// 500 for an error that is no API status: the API server's `ErrorToAPIStatus` answers
    /// such an error with its text, code 500 and no reason.
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// An error with an arbitrary code, used by fault injection.
    pub fn with_code(code: u16) -> Self {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            413 => "RequestEntityTooLarge",
            422 => "Invalid",
            429 => return Self::too_many_requests(),
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        Self::new(code, reason, format!("injected fault: {reason}"))
    }

    /// The `Status` body.
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        if let Some(n) = &self.name {
            details.insert("name".into(), json!(n));
        }
        if let Some(g) = &self.group {
            details.insert("group".into(), json!(g));
        }
        if let Some(k) = &self.kind {
            details.insert("kind".into(), json!(k));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let mut m = serde_json::Map::new();
                    m.insert("reason".into(), json!(c.reason));
                    m.insert("message".into(), json!(c.message));
                    if !c.field.is_empty() {
                        m.insert("field".into(), json!(c.field));
                    }
                    Value::Object(m)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(r) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

/// A failure `Status` in the API server's own bytes: its fields in the order of Go's
/// `metav1.Status` (kind, apiVersion, metadata, status, message, reason, details, code),
/// `group` left out when empty (core kinds), and a trailing newline.
#[derive(serde::Serialize)]
struct WireStatus<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: serde_json::Map<String, Value>,
    status: &'static str,
    message: &'a str,
    // Empty for errors that are no API status (500s of unknown reason), which Go omits.
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<WireDetails<'a>>,
    code: u16,
}

#[derive(serde::Serialize)]
struct WireDetails<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    causes: Vec<WireCause<'a>>,
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "Option::is_none")]
    retry_after_seconds: Option<u64>,
}

#[derive(serde::Serialize)]
struct WireCause<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    field: &'a str,
}

impl ApiError {
    /// The response body: [`ApiError::to_status`] in the API server's field order, with its
    /// trailing newline.
    pub fn to_status_bytes(&self) -> Vec<u8> {
        let details = WireDetails {
            name: self.name.as_deref(),
            group: self.group.as_deref().filter(|g| !g.is_empty()),
            kind: self.kind.as_deref(),
            causes: self
                .causes
                .iter()
                .map(|c| WireCause { reason: &c.reason, message: &c.message, field: &c.field })
                .collect(),
            retry_after_seconds: self.retry_after,
        };
        let has_details = details.name.is_some()
            || details.group.is_some()
            || details.kind.is_some()
            || !details.causes.is_empty()
            || details.retry_after_seconds.is_some();
        let wire = WireStatus {
            kind: "Status",
            api_version: "v1",
            metadata: serde_json::Map::new(),
            status: "Failure",
            message: &self.message,
            reason: self.reason,
            details: has_details.then_some(details),
            code: self.code,
        };
        let mut bytes = serde_json::to_vec(&wire).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::{ApiError, GroupResource};

    #[test]
    fn a_failure_status_has_the_api_servers_bytes() {
        let e = ApiError::not_found(GroupResource { group: "", resource: "configmaps" }, "x");
        let body = String::from_utf8(e.to_status_bytes()).expect("utf-8");
        assert_eq!(
            body,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
             \"message\":\"configmaps \\\"x\\\" not found\",\"reason\":\"NotFound\",\
             \"details\":{\"name\":\"x\",\"kind\":\"configmaps\"},\"code\":404}\n"
        );
        let apps = ApiError::not_found(GroupResource { group: "apps", resource: "deployments" }, "d");
        let body = String::from_utf8(apps.to_status_bytes()).expect("utf-8");
        assert!(
            body.contains("\"details\":{\"name\":\"d\",\"group\":\"apps\",\"kind\":\"deployments\"}"),
            "{body}"
        );
    }
}
