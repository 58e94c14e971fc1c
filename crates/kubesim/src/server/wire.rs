//! The bytes on the wire: reading request bodies (JSON, YAML, protobuf, with the size
//! limit), content negotiation of the answer (`Table`, `PartialObjectMetadata`), JSON and
//! error responses, `Warning` headers, and the chunked stream of a watch.

use std::collections::HashMap;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use serde_json::Value;

use crate::error::ApiError;
use crate::kinds::registry::ResourceType;

/// The largest request body accepted: the real server's `MaxRequestBodyBytes`, 3 MiB.
const MAX_BODY: usize = 3 * 1024 * 1024;

pub(super) fn json_response(code: u16, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

pub(super) fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (status, [(header::CONTENT_TYPE, "application/json")], e.to_status_bytes()).into_response();
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

pub(super) fn with_warnings(mut r: Response, warnings: &[String]) -> Response {
    for w in warnings {
        if let Some(v) = warning_header(w) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

/// `Warning: 299 - "<text>"`, the text escaped as Go's warning recorder does.
fn warning_header(text: &str) -> Option<HeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\"")).ok()
}

/// `r` with the warning `text` ahead of those it has (the API server's recorder keeps the
/// order warnings were added in, and a deprecated version's comes first).
pub(super) fn with_first_warning(mut r: Response, text: &str) -> Response {
    let Some(first) = warning_header(text) else { return r };
    let later: Vec<HeaderValue> =
        r.headers().get_all(header::WARNING).iter().filter(|v| **v != first).cloned().collect();
    r.headers_mut().remove(header::WARNING);
    r.headers_mut().append(header::WARNING, first);
    for v in later {
        r.headers_mut().append(header::WARNING, v);
    }
    r
}

/// What the client asked the answer to look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Full,
    Table,
    /// `as=PartialObjectMetadata` (`list: false`) or `as=PartialObjectMetadataList`.
    Partial(Partial),
}

/// Metadata alone, as `meta.k8s.io` `PartialObjectMetadata` in `version` (`v1`, `v1beta1`):
/// of one object (a get, each event of a watch) or of a list. The API server transforms
/// what the handler produced into what the client named and refuses (406) a list asked for
/// as one object, or one object as a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Partial {
    pub(super) list: bool,
    pub(super) version: &'static str,
}

impl Partial {
    /// The answer's `apiVersion`.
    pub(super) fn api_version(self) -> String {
        format!("meta.k8s.io/{}", self.version)
    }

    /// The 406 for a request whose answer is (`list`) or is not a list of the objects of
    /// `rt`, when the client asked for the other; `None` when it asked for that. Follows
    /// `asPartialObjectMetadata` and `asPartialObjectMetadataList` in k8s.io/apiserver
    /// `pkg/endpoints/handlers/response.go` (their `%T` of the handler's result is the Go
    /// type named here).
    pub(super) fn refuse(self, rt: &ResourceType, list: bool) -> Option<ApiError> {
        if self.list == list {
            return None;
        }
        // The server names the Go type of what its handler produced: an internal type of the
        // kind's API group for built-in kinds, an unstructured object for custom resources.
        let go_type = match (&rt.crd, list) {
            (Some(_), false) => "*unstructured.Unstructured".to_owned(),
            (Some(_), true) => "*unstructured.UnstructuredList".to_owned(),
            (None, _) => {
                let package = match rt.group.split('.').next().unwrap_or_default() {
                    "" | "events" => "core",
                    first => first,
                };
                format!("*{package}.{}{}", rt.kind, if list { "List" } else { "" })
            }
        };
        let message = if list {
            format!("you requested PartialObjectMetadata, but the requested object is a list ({go_type})")
        } else {
            format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({go_type})"
            )
        };
        Some(ApiError::not_acceptable_as(message))
    }
}

pub(super) fn negotiate(headers: &HeaderMap) -> Result<Shape, ApiError> {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if accept.is_empty() {
        return Ok(Shape::Full);
    }
    // A clause naming an `as=` transform the server does not know is not acceptable (the
    // API server's endpoint restrictions leave it out); the next clause may be.
    for part in accept.split(',') {
        let part = part.trim();
        let media = part.split(';').next().unwrap_or("").trim();
        if !matches!(media, "application/json" | "*/*" | "application/*" | "application/yaml") {
            continue;
        }
        let params: HashMap<&str, &str> =
            part.split(';').skip(1).filter_map(|p| p.trim().split_once('=')).collect();
        match (params.get("as"), params.get("g"), params.get("v")) {
            (Some(&"Table"), Some(&"meta.k8s.io"), Some(&("v1" | "v1beta1"))) => return Ok(Shape::Table),
            (Some(&kind), Some(&"meta.k8s.io"), Some(&v))
                if matches!(kind, "PartialObjectMetadata" | "PartialObjectMetadataList")
                    && matches!(v, "v1" | "v1beta1") =>
            {
                let version = if v == "v1" { "v1" } else { "v1beta1" };
                return Ok(Shape::Partial(Partial { list: kind.ends_with("List"), version }));
            }
            (Some(_), _, _) => {}
            (None, _, _) => return Ok(Shape::Full),
        }
    }
    tracing::debug!(accept, "no acceptable media type");
    Err(ApiError::not_acceptable())
}

pub(super) async fn read_body(body: Body) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(ApiError::request_entity_too_large(MAX_BODY))
        }
        Err(e) => {
            tracing::debug!(error = %e, "reading a request body failed");
            Err(ApiError::bad_request(format!("error reading the request body: {e}")))
        }
    }
}

pub(super) fn parse_json(bytes: &[u8], content_type: &str) -> Result<Value, ApiError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    if content_type.starts_with(crate::server::proto::CONTENT_TYPE) {
        return crate::server::proto::decode(bytes).map_err(|e| match e {
            crate::server::proto::ProtoError::UnsupportedKind { .. } => ApiError::unsupported_media_type(),
            other => ApiError::bad_request(format!("error decoding protobuf: {other}")),
        });
    }
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media.ends_with("yaml") {
        return parse_yaml(bytes);
    }
    if !(media.is_empty() || media.ends_with("json") || media == "*/*") {
        return Err(ApiError::unsupported_media_type());
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("error decoding JSON: {e}")))
}

/// A YAML body (`application/yaml`, `application/apply-patch+yaml`). One that is JSON, as
/// kubectl's and kube-rs's are, is read as JSON: YAML reads it the same, several times more
/// slowly. Anything else is one YAML document read with YAML 1.2 scalars, as serde_yaml_ng did
/// here before: `yes`, `on` and `0755` stay strings, a repeated key keeps its last value,
/// `<<` is an ordinary key, `.nan` and `.inf` become null, nesting is limited to 128.
pub(super) fn parse_yaml(bytes: &[u8]) -> Result<Value, ApiError> {
    if let Ok(v) = serde_json::from_slice::<Value>(bytes) {
        return Ok(v);
    }
    // The body limit bounds the work; the default node cap (250 000) could refuse a body
    // under it.
    let options = ctop_core::yaml::options(Some(MAX_BODY));
    serde_saphyr::from_slice_with_options(bytes, options)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// One watch event, its fields in the order the API server writes them: `type`, then
/// `object` (the field order of `WatchEvent` in apimachinery's
/// `pkg/apis/meta/v1/watch.go`). Clients may rely on it: kube-rs reads an event as an
/// adjacently tagged enum, which reads `object` in one pass only when `type` came first.
#[derive(serde::Serialize)]
struct EventLine<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    object: &'a Value,
}

pub(super) fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&EventLine { kind, object }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

pub(super) fn stream_response<S>(stream: S) -> Response
where
    S: futures::Stream<Item = Bytes> + Send + 'static,
{
    let body = Body::from_stream(stream.map(Ok::<_, std::convert::Infallible>));
    let mut r = Response::new(body);
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_bodies_read_as_before() {
        let yaml = |text: &str| parse_json(text.as_bytes(), "application/yaml");
        let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  \
                    on: yes\n  mode: 0755\n  big: 1_000\n  n: 3\n  t: true\n  empty:\n  \
                    text: |\n    line\n";
        assert_eq!(
            yaml(body).expect("parses"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {
                "on": "yes", "mode": "0755", "big": "1_000", "n": 3, "t": true, "empty": null, "text": "line\n"}})
        );
        // A repeated key keeps the last value; `<<` is an ordinary key; non-finite is null.
        assert_eq!(yaml("a: 1\na: 2\n").expect("parses"), json!({"a": 2}));
        assert_eq!(
            yaml("b: &b {x: 1}\nd:\n  <<: *b\n").expect("parses"),
            json!({"b": {"x": 1}, "d": {"<<": {"x": 1}}})
        );
        assert_eq!(yaml("a: .nan\n").expect("parses"), json!({"a": null}));
        // JSON (what kube-rs sends for server-side apply) reads as JSON.
        let apply = json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"k": "yes"}});
        assert_eq!(
            parse_json(apply.to_string().as_bytes(), "application/apply-patch+yaml").expect("parses"),
            apply
        );
        assert_eq!(yaml("# only a comment\n").expect("parses"), Value::Null);
        // One document only, and errors are one line.
        for bad in ["a: 1\n---\nb: 2\n", "a: [1, 2\nb: x\n"] {
            let message = yaml(bad).expect_err(bad).to_string();
            assert!(message.contains("error decoding YAML"), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
    }

    #[tokio::test]
    async fn an_oversized_body_gets_413_stating_the_limit() {
        let exact = read_body(Body::from(vec![b'x'; MAX_BODY])).await.expect("the limit itself is accepted");
        assert_eq!(exact.len(), MAX_BODY);
        let err = read_body(Body::from(vec![b'x'; MAX_BODY + 1])).await.expect_err("one byte over");
        let response = error_response(&err);
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let body = response.into_body().collect().await.expect("body").to_bytes();
        let status: Value = serde_json::from_slice(&body).expect("a Status");
        assert_eq!(
            status,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Request entity too large: limit is 3145728",
                   "reason": "RequestEntityTooLarge", "code": 413})
        );
    }

    #[test]
    fn accept_negotiation() {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"));
        assert_eq!(negotiate(&h).ok(), Some(Shape::Table));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
        );
        assert_eq!(negotiate(&h).ok(), Some(Shape::Partial(Partial { list: true, version: "v1" })));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"),
        );
        assert_eq!(negotiate(&h).ok(), Some(Shape::Partial(Partial { list: false, version: "v1beta1" })));
        // Another version of the group is no transform the server knows: plain JSON is left.
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2,application/json",
            ),
        );
        assert_eq!(negotiate(&h).ok(), Some(Shape::Full));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2"),
        );
        assert_eq!(
            negotiate(&h).err().map(|e| e.message.clone()),
            Some(
                "only the following media types are accepted: application/json, application/yaml".to_owned()
            )
        );
        h.insert(header::ACCEPT, HeaderValue::from_static("application/vnd.kubernetes.protobuf"));
        assert!(negotiate(&h).is_err());
        h.insert(header::ACCEPT, HeaderValue::from_static("application/vnd.kubernetes.protobuf, */*"));
        assert_eq!(negotiate(&h).ok(), Some(Shape::Full));
    }

    #[test]
    fn a_partial_of_the_wrong_shape_names_the_servers_go_type() {
        let registry = crate::kinds::registry::Registry::with_builtins();
        let refused = |api_version: &str, kind: &str, list: bool| {
            let rt = registry.by_kind(api_version, kind).expect("a built-in kind");
            Partial { list: !list, version: "v1" }.refuse(&rt, list).map(|e| e.message.clone())
        };
        assert_eq!(
            refused("apps/v1", "Deployment", true).as_deref(),
            Some(
                "you requested PartialObjectMetadata, but the requested object is a list (*apps.DeploymentList)"
            )
        );
        assert_eq!(
            refused("rbac.authorization.k8s.io/v1", "Role", false).as_deref(),
            Some(
                "you requested PartialObjectMetadataList, but the requested object is not a list (*rbac.Role)"
            )
        );
        let pods = registry.by_kind("v1", "Pod").expect("pods");
        assert!(
            Partial { list: true, version: "v1" }.refuse(&pods, true).is_none(),
            "a list asked for as a list"
        );
    }

    #[test]
    fn a_watch_event_writes_its_type_first() {
        let line = event_line("ADDED", &json!({"kind": "ConfigMap", "apiVersion": "v1"}));
        assert_eq!(
            &line[..],
            &b"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}}\n"[..]
        );
    }
}
