//! Calls Validating and Mutating admission webhooks the way kube-apiserver does.
//!
//! Where to start: build a [`Caller`] (it maps `namespace/name` of webhook Services to loopback
//! `host:port` addresses), describe the request with [`Attributes`], then call
//! [`Caller::mutate`] with the `MutatingWebhookConfiguration` objects (before validation and
//! storage) and [`Caller::validate`] with the `ValidatingWebhookConfiguration` objects (after).
//! A failure is an [`AdmissionError`]; [`AdmissionError::status`] renders the `Status` body the
//! real server answers, [`AdmissionError::code`] its HTTP code. The `*_into` variants also keep
//! the warnings of a request that ends in an error (the real server sends them with the error).
//!
//! Behaviour follows `k8s.io/apiserver/pkg/admission/plugin/webhook` (`generic`, `mutating`,
//! `validating`, `request`, `predicates`, `errors`) and `util/webhook`:
//! - Webhooks come from configurations sorted by name, then in list order. Requests for webhook
//!   and admission-policy configurations themselves never go to webhooks.
//! - A webhook is called when its `namespaceSelector` (against the namespace's labels; requests
//!   for cluster-scoped objects other than Namespaces always match), `objectSelector` (against the
//!   object's or old object's labels) and any of its `rules` match. A non-empty
//!   `namespaceSelector` on a namespace whose labels are unknown answers 404 `namespaces "x" not
//!   found`, as the real server does when the namespace does not exist.
//! - The request is an `admission.k8s.io/v1` `AdmissionReview` (or `v1beta1`, whichever comes
//!   first in `admissionReviewVersions`), POSTed over HTTPS to `clientConfig.url` or to
//!   `https://<name>.<namespace>.svc:<port><path>?timeout=<timeoutSeconds>s`. The certificate
//!   chain must lead to the `caBundle` and be valid for the host name (`<name>.<namespace>.svc`
//!   for services). An empty `caBundle` trusts nothing (the real server would use system roots).
//! - Transport, TLS, timeout and malformed-response problems are "call failures": with
//!   `failurePolicy: Ignore` the webhook is skipped, otherwise (default `Fail`) the request fails
//!   with 500 `Internal error occurred: failed calling webhook "x": ...`, messages worded like Go's.
//! - `allowed: false` rejects with `admission webhook "x" denied the request: <message>`, the
//!   webhook's own code (at least 400), reason and details.
//! - Mutating webhooks run one after another, each seeing the previous result; JSONPatch
//!   responses are applied. Webhooks with `reinvocationPolicy: IfNeeded` are called once more
//!   when a later webhook changed the object (the real single re-invocation round). Validating
//!   webhooks run concurrently; the first failure in webhook order is returned (the real server
//!   returns whichever failed first in time).
//! - A dry-run request to a webhook whose `sideEffects` is not `None`/`NoneOnDryRun` fails with
//!   400 `admission webhook "x" does not support dry run`, whatever the failure policy.
//!
//! Not covered: `matchConditions` (CEL) are ignored (the webhook is treated as matching);
//! `matchPolicy: Equivalent` is treated as `Exact` (no equivalent resources/versions are tried);
//! patched objects are not re-defaulted or pruned here (the caller should do it); audit
//! annotations are dropped; only loopback addresses are dialled (other hosts fail to connect).

mod verify;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use rustls::CertificateError;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The admission operation of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Operation {
    /// `CREATE`
    #[default]
    Create,
    /// `UPDATE`
    Update,
    /// `DELETE`
    Delete,
    /// `CONNECT` (exec, attach, port-forward, proxy)
    Connect,
}

impl Operation {
    /// The wire name used in rules and in the `AdmissionReview` (`CREATE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// The authenticated user making the request, as sent in `request.userInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    /// User name, e.g. `system:admin`.
    pub username: String,
    /// User UID (may be empty).
    pub uid: String,
    /// Groups, e.g. `system:masters`, `system:authenticated`.
    pub groups: Vec<String>,
}

/// Everything about one API request that admission looks at.
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    /// The operation.
    pub operation: Operation,
    /// API group of the resource (`""` for core).
    pub group: String,
    /// API version of the request.
    pub version: String,
    /// Kind of the object, e.g. `Pod`.
    pub kind: String,
    /// Plural resource name, e.g. `pods`.
    pub resource: String,
    /// Subresource, e.g. `status`, or `""`.
    pub subresource: String,
    /// Namespace of the request, `""` for cluster-scoped objects. For Namespace objects the real
    /// server sets it to the namespace's own name.
    pub namespace: String,
    /// Object name (may be empty on create with `generateName`).
    pub name: String,
    /// The new object (create/update), or the options object of a connect; `None` on delete.
    pub object: Option<Value>,
    /// The stored object (update/delete).
    pub old_object: Option<Value>,
    /// Whether this is a dry-run request.
    pub dry_run: bool,
    /// The `CreateOptions`/`UpdateOptions`/`DeleteOptions` object (or `Value::Null`).
    pub options: Value,
    /// The requesting user.
    pub user: UserInfo,
    /// Labels of the request's namespace (or of the stored Namespace for a Namespace request);
    /// `None` when the namespace does not exist.
    pub namespace_labels: Option<BTreeMap<String, String>>,
}

/// Why admission rejected a request. `Display` is the message of the `Status` body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdmissionError {
    /// A webhook answered `allowed: false`. `message` already reads
    /// `admission webhook "x" denied the request: ...`; `code` is the webhook's (at least 400),
    /// `reason` and `details` are the webhook's own (possibly empty/absent).
    #[error("{message}")]
    Denied {
        /// Webhook name.
        webhook: String,
        /// HTTP status code of the answer.
        code: u16,
        /// `Status.reason` (may be empty).
        reason: String,
        /// Full `Status.message`.
        message: String,
        /// `Status.details` as the webhook sent them.
        details: Option<Value>,
    },
    /// A webhook with `failurePolicy: Fail` could not be called or answered badly. `message` is
    /// `failed calling webhook "x": ...`; the answer is 500 `Internal error occurred: <message>`.
    #[error("Internal error occurred: {message}")]
    CallFailed {
        /// Webhook name.
        webhook: String,
        /// The `failed calling webhook ...` text.
        message: String,
    },
    /// A dry-run request matched a webhook that may have side effects (400 BadRequest).
    #[error("admission webhook {webhook:?} does not support dry run")]
    DryRunUnsupported {
        /// Webhook name.
        webhook: String,
    },
    /// An error not subject to `failurePolicy`: a patch that cannot be applied, a patch on a
    /// request without object, or an unusable selector (500 InternalError).
    #[error("Internal error occurred: {message}")]
    Internal {
        /// The inner error text.
        message: String,
    },
    /// A webhook with a non-empty `namespaceSelector` matched a request whose namespace does
    /// not exist (404 NotFound).
    #[error("namespaces {namespace:?} not found")]
    NamespaceNotFound {
        /// The namespace name.
        namespace: String,
    },
}

impl AdmissionError {
    /// The HTTP status code the API server answers with.
    pub fn code(&self) -> u16 {
        match self {
            AdmissionError::Denied { code, .. } => *code,
            AdmissionError::CallFailed { .. } | AdmissionError::Internal { .. } => 500,
            AdmissionError::DryRunUnsupported { .. } => 400,
            AdmissionError::NamespaceNotFound { .. } => 404,
        }
    }

    /// The `Status.reason` (may be empty for webhook denials).
    pub fn reason(&self) -> &str {
        match self {
            AdmissionError::Denied { reason, .. } => reason,
            AdmissionError::CallFailed { .. } | AdmissionError::Internal { .. } => "InternalError",
            AdmissionError::DryRunUnsupported { .. } => "BadRequest",
            AdmissionError::NamespaceNotFound { .. } => "NotFound",
        }
    }

    /// The full `Status` object (`kind: Status`, `apiVersion: v1`) the API server answers with.
    pub fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.to_string(), "code": self.code(),
        });
        if !self.reason().is_empty() {
            status["reason"] = json!(self.reason());
        }
        let details = match self {
            AdmissionError::Denied { details, .. } => details.clone(),
            AdmissionError::CallFailed { message, .. } | AdmissionError::Internal { message } => {
                Some(json!({ "causes": [{ "message": message }] }))
            }
            AdmissionError::NamespaceNotFound { namespace } => {
                Some(json!({ "name": namespace, "kind": "namespaces" }))
            }
            AdmissionError::DryRunUnsupported { .. } => None,
        };
        if let Some(details) = details {
            status["details"] = details;
        }
        status
    }
}

/// Calls admission webhooks; holds how Services resolve and the default timeout.
#[derive(Debug, Clone)]
pub struct Caller {
    service_hosts: HashMap<String, String>,
    default_timeout: Duration,
}

/// One webhook of a configuration, in call order.
struct Hook<'a> {
    id: (usize, usize),
    name: &'a str,
    spec: &'a Value,
}

/// A webhook's answer that passed verification.
struct Reply {
    allowed: bool,
    patch: Vec<u8>,
    patch_type: Option<String>,
    status: Option<Value>,
    warnings: Vec<String>,
}

/// Why one webhook call did not produce a [`Reply`].
enum Failure {
    /// A call failure (subject to `failurePolicy`): the text after `failed calling webhook "x": `.
    Calling(String),
    /// Rejects the request whatever the failure policy.
    Fatal(AdmissionError),
}

impl Caller {
    /// A caller resolving webhook Services through `service_hosts` (`"namespace/name"` →
    /// `"host:port"`, the port being where the Service's `port` leads). Default timeout: 10s.
    pub fn new(service_hosts: HashMap<String, String>) -> Self {
        Caller { service_hosts, default_timeout: Duration::from_secs(10) }
    }

    /// Sets the timeout used when a webhook has no `timeoutSeconds` (the API default is 10s).
    pub fn with_default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Runs every matching webhook of these `MutatingWebhookConfiguration` objects serially and
    /// returns the final object and the webhooks' warnings.
    pub async fn mutate(
        &self,
        configs: &[Value],
        attrs: &Attributes,
    ) -> Result<(Option<Value>, Vec<String>), AdmissionError> {
        let mut warnings = Vec::new();
        let object = self.mutate_into(configs, attrs, &mut warnings).await?;
        Ok((object, warnings))
    }

    /// Like [`Caller::mutate`], but appends warnings to `warnings` even when it fails.
    pub async fn mutate_into(
        &self,
        configs: &[Value],
        attrs: &Attributes,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Value>, AdmissionError> {
        let mut object = attrs.object.clone();
        if is_exempt(attrs) {
            return Ok(object);
        }
        let hooks = collect_hooks(configs);
        let (mut invoked, mut reinvoke) = (HashSet::new(), HashSet::new());
        let mut changed_any = false;
        for round in 0..2 {
            if round == 1 && !changed_any {
                break;
            }
            for hook in &hooks {
                if !should_call(hook.spec, attrs, object.as_ref())?
                    || (round == 1 && !reinvoke.contains(&hook.id))
                {
                    continue;
                }
                let outcome = match self.call(hook, attrs, object.as_ref(), true).await {
                    Ok(reply) => {
                        warnings.extend(reply.warnings.iter().cloned());
                        apply_reply(hook.name, reply, &mut object)
                    }
                    Err(failure) => Err(failure),
                };
                let changed = match outcome {
                    Ok(changed) => changed,
                    Err(failure) => {
                        fail(hook, failure)?;
                        false
                    }
                };
                if changed {
                    reinvoke.extend(invoked.drain());
                    changed_any = true;
                }
                if str_at(hook.spec, "reinvocationPolicy") == "IfNeeded" {
                    invoked.insert(hook.id);
                }
            }
        }
        Ok(object)
    }

    /// Runs every matching webhook of these `ValidatingWebhookConfiguration` objects
    /// concurrently; returns their warnings, or the first rejection in webhook order.
    pub async fn validate(
        &self,
        configs: &[Value],
        attrs: &Attributes,
    ) -> Result<Vec<String>, AdmissionError> {
        let mut warnings = Vec::new();
        self.validate_into(configs, attrs, &mut warnings).await?;
        Ok(warnings)
    }

    /// Like [`Caller::validate`], but appends warnings to `warnings` even when it fails.
    pub async fn validate_into(
        &self,
        configs: &[Value],
        attrs: &Attributes,
        warnings: &mut Vec<String>,
    ) -> Result<(), AdmissionError> {
        if is_exempt(attrs) {
            return Ok(());
        }
        let mut selected = Vec::new();
        for hook in collect_hooks(configs) {
            if should_call(hook.spec, attrs, attrs.object.as_ref())? {
                selected.push(hook);
            }
        }
        let calls = selected.iter().map(|h| self.call(h, attrs, attrs.object.as_ref(), false));
        let results = join_all(calls.collect()).await;
        let mut first = None;
        for (hook, result) in selected.iter().zip(results) {
            let outcome = match result {
                Ok(reply) => {
                    warnings.extend(reply.warnings.iter().cloned());
                    if reply.allowed { Ok(()) } else { Err(denied(hook.name, reply.status.as_ref())) }
                }
                Err(failure) => fail(hook, failure),
            };
            if let Err(e) = outcome {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Calls one webhook and verifies its answer.
    async fn call(
        &self,
        hook: &Hook<'_>,
        attrs: &Attributes,
        object: Option<&Value>,
        mutating: bool,
    ) -> Result<Reply, Failure> {
        if attrs.dry_run {
            match hook.spec.get("sideEffects").and_then(Value::as_str) {
                None => return Err(Failure::Calling("Webhook SideEffects is nil".into())),
                Some("None" | "NoneOnDryRun") => {}
                Some(_) => {
                    let webhook = hook.name.to_string();
                    return Err(Failure::Fatal(AdmissionError::DryRunUnsupported { webhook }));
                }
            }
        }
        let versions = hook.spec.get("admissionReviewVersions").and_then(Value::as_array);
        let version = versions
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|v| *v == "v1" || *v == "v1beta1")
            .ok_or_else(|| {
                Failure::Calling(
                    "could not create admission objects: webhook does not accept known \
                     AdmissionReview versions (v1, v1beta1)"
                        .into(),
                )
            })?;
        let uid = crate::meta::new_uid();
        let body = review_request(&uid, version, attrs, object).to_string();
        let target = self
            .target(hook.spec)
            .map_err(|e| Failure::Calling(format!("could not get REST client: {e}")))?;
        let timeout = match hook.spec.get("timeoutSeconds").and_then(Value::as_u64) {
            Some(secs) => Duration::from_secs(secs),
            None => self.default_timeout,
        };
        let mut path = target.path.clone();
        if !timeout.is_zero() {
            path = format!("{path}?timeout={}", go_duration(timeout));
        }
        let url = format!("https://{}{path}", target.authority);
        let (code, is_text, body) = tokio::time::timeout(timeout, post(&target, &path, body))
            .await
            .unwrap_or_else(|_| Err("context deadline exceeded".into()))
            .map_err(|e| Failure::Calling(format!("failed to call webhook: Post {url:?}: {e}")))?;
        if !(200..=206).contains(&code) {
            let message = unexpected_status(code, is_text, &body);
            return Err(Failure::Calling(format!("failed to call webhook: {message}")));
        }
        let review =
            decode_review(&body).map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
        verify_review(&uid, version, mutating, review)
            .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))
    }

    /// Where and how to reach a webhook, from its `clientConfig`.
    fn target(&self, spec: &Value) -> Result<Target, String> {
        let cc = spec.get("clientConfig").unwrap_or(&Value::Null);
        let ca = BASE64
            .decode(str_at(cc, "caBundle"))
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
        let roots = root_store(&ca)?;
        if let Some(url) = cc.get("url").and_then(Value::as_str) {
            let rest = url.strip_prefix("https://").ok_or("'https' is the only allowed URL scheme")?;
            let rest = rest.split(['?', '#']).next().unwrap_or_default();
            let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
            let (host, port) = split_host_port(authority)?;
            let port = port.unwrap_or(443);
            let server_name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
            return Ok(Target {
                authority: join_host_port(host, port),
                dial: resolve_loopback(host, port),
                server_name,
                path: clean_path(path),
                roots,
            });
        }
        let svc = cc.get("service").ok_or("no url or service in clientConfig")?;
        let (ns, name) = (str_at(svc, "namespace"), str_at(svc, "name"));
        let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
        let host = format!("{name}.{ns}.svc");
        let dial = match self.service_hosts.get(&format!("{ns}/{name}")) {
            Some(addr) => split_host_port(addr).and_then(|(h, p)| resolve_loopback(h, p.unwrap_or(443))),
            None => Err(format!("service {name:?} not found")),
        };
        Ok(Target {
            authority: format!("{host}:{port}"),
            dial,
            server_name: ServerName::try_from(host).map_err(|e| e.to_string())?,
            path: clean_path(str_at(svc, "path")),
            roots,
        })
    }
}

/// Applies the failure policy to a failed call: `Ok` means "skip this webhook".
fn fail(hook: &Hook<'_>, failure: Failure) -> Result<(), AdmissionError> {
    match failure {
        Failure::Fatal(e) => Err(e),
        Failure::Calling(_) if str_at(hook.spec, "failurePolicy") == "Ignore" => Ok(()),
        Failure::Calling(reason) => Err(AdmissionError::CallFailed {
            webhook: hook.name.to_string(),
            message: format!("failed calling webhook {:?}: {reason}", hook.name),
        }),
    }
}

/// Applies a mutating webhook's reply to `object`; returns whether the object changed.
fn apply_reply(name: &str, reply: Reply, object: &mut Option<Value>) -> Result<bool, Failure> {
    let internal = |message: String| Failure::Fatal(AdmissionError::Internal { message });
    if !reply.allowed {
        return Err(Failure::Fatal(denied(name, reply.status.as_ref())));
    }
    if reply.patch.is_empty() {
        return Ok(false);
    }
    let patch: json_patch::Patch = serde_json::from_slice(&reply.patch)
        .map_err(|e| Failure::Calling(format!("received undecodable patch in webhook response: {e}")))?;
    if patch.0.is_empty() {
        return Ok(false);
    }
    let Some(current) = object.as_mut() else {
        return Err(internal(format!(
            "admission webhook {name:?} attempted to modify the object, which is not supported for this operation"
        )));
    };
    let patch_type = reply.patch_type.unwrap_or_default();
    if patch_type != "JSONPatch" {
        return Err(Failure::Calling(format!("unsupported patch type {patch_type:?}")));
    }
    let mut patched = current.clone();
    json_patch::patch(&mut patched, &patch.0).map_err(|e| internal(e.to_string()))?;
    let changed = patched != *current;
    *current = patched;
    Ok(changed)
}

/// The rejection for `allowed: false` (apiserver `webhook/errors.ToStatusErr`).
fn denied(name: &str, status: Option<&Value>) -> AdmissionError {
    let status = status.unwrap_or(&Value::Null);
    let code = status.get("code").and_then(Value::as_i64).unwrap_or(0).max(400);
    let (message, reason) = (str_at(status, "message"), str_at(status, "reason"));
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = match (message, reason) {
        ("", "") => format!("{denied_by} without explanation"),
        ("", reason) => format!("{denied_by}: {reason}"),
        (message, _) => format!("{denied_by}: {message}"),
    };
    AdmissionError::Denied {
        webhook: name.to_string(),
        code: u16::try_from(code).unwrap_or(500),
        reason: reason.to_string(),
        message,
        details: status.get("details").filter(|d| !d.is_null()).cloned(),
    }
}

/// Requests for admission configuration objects never go to webhooks.
fn is_exempt(attrs: &Attributes) -> bool {
    attrs.group == "admissionregistration.k8s.io"
        && matches!(
            attrs.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

/// The webhooks of the configurations, sorted by configuration name then list order.
fn collect_hooks(configs: &[Value]) -> Vec<Hook<'_>> {
    let mut sorted: Vec<&Value> = configs.iter().collect();
    sorted.sort_by_key(|c| c.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(""));
    let mut hooks = Vec::new();
    for (ci, config) in sorted.into_iter().enumerate() {
        let list = config.get("webhooks").and_then(Value::as_array);
        for (hi, spec) in list.into_iter().flatten().enumerate() {
            hooks.push(Hook { id: (ci, hi), name: str_at(spec, "name"), spec });
        }
    }
    hooks
}

/// Whether a webhook applies to the request (apiserver `generic.Webhook.ShouldCallHook`).
fn should_call(spec: &Value, attrs: &Attributes, object: Option<&Value>) -> Result<bool, AdmissionError> {
    let ns_match = namespace_matches(spec, attrs, object);
    if matches!(ns_match, Ok(false)) {
        return Ok(false);
    }
    let selector = spec.get("objectSelector").unwrap_or(&Value::Null);
    let obj_match = if is_empty_selector(selector) {
        Ok(true)
    } else {
        [object, attrs.old_object.as_ref()]
            .into_iter()
            .flatten()
            .map(|o| selector_matches(selector, &labels_of(o)))
            .try_fold(false, |any, m| m.map(|m| any || m))
            .map_err(|message| AdmissionError::Internal { message })
    };
    if matches!(obj_match, Ok(false)) {
        return Ok(false);
    }
    let rules = spec.get("rules").and_then(Value::as_array);
    if !rules.into_iter().flatten().any(|r| rule_matches(r, attrs)) {
        return Ok(false);
    }
    ns_match?;
    obj_match?;
    Ok(true)
}

fn namespace_matches(
    spec: &Value,
    attrs: &Attributes,
    object: Option<&Value>,
) -> Result<bool, AdmissionError> {
    if attrs.namespace.is_empty() && attrs.resource != "namespaces" {
        return Ok(true);
    }
    let selector = spec.get("namespaceSelector").unwrap_or(&Value::Null);
    if is_empty_selector(selector) {
        return Ok(true);
    }
    let own = attrs.resource == "namespaces"
        && attrs.subresource.is_empty()
        && matches!(attrs.operation, Operation::Create | Operation::Update);
    let labels = match (own, object, &attrs.namespace_labels) {
        (true, Some(obj), _) => labels_of(obj),
        (_, _, Some(labels)) => labels.clone(),
        _ => {
            let namespace = if attrs.namespace.is_empty() { &attrs.name } else { &attrs.namespace };
            return Err(AdmissionError::NamespaceNotFound { namespace: namespace.clone() });
        }
    };
    selector_matches(selector, &labels).map_err(|message| AdmissionError::Internal { message })
}

/// Whether one `rules[]` entry matches (apiserver `predicates/rules.Matcher`).
fn rule_matches(rule: &Value, attrs: &Attributes) -> bool {
    let is_namespace = attrs.group.is_empty() && attrs.version == "v1" && attrs.resource == "namespaces";
    let scope = match rule.get("scope").and_then(Value::as_str) {
        None | Some("*") => true,
        Some("Namespaced") => !is_namespace && !attrs.namespace.is_empty(),
        Some("Cluster") => is_namespace || attrs.namespace.is_empty(),
        Some(_) => false,
    };
    let listed = |key: &str, wanted: &str| {
        let items = rule.get(key).and_then(Value::as_array);
        items.into_iter().flatten().filter_map(Value::as_str).any(|i| i == "*" || i == wanted)
    };
    let resources = rule.get("resources").and_then(Value::as_array);
    let resource = resources.into_iter().flatten().filter_map(Value::as_str).any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == attrs.resource) && (sub == "*" || sub == attrs.subresource)
    });
    scope
        && listed("operations", attrs.operation.as_str())
        && listed("apiGroups", &attrs.group)
        && listed("apiVersions", &attrs.version)
        && resource
}

fn is_empty_selector(selector: &Value) -> bool {
    let count = |key: &str| match selector.get(key) {
        Some(Value::Object(map)) => map.len(),
        Some(Value::Array(list)) => list.len(),
        _ => 0,
    };
    count("matchLabels") + count("matchExpressions") == 0
}

/// Evaluates a `metav1.LabelSelector`; an invalid requirement is an error.
fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    let selector = crate::selector::LabelSelector::from_object(selector)?;
    Ok(selector.matches_with(|k| labels.get(k).map(String::as_str)))
}

fn labels_of(object: &Value) -> BTreeMap<String, String> {
    let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
    labels.into_iter().flatten().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
}

/// The `AdmissionReview` request body (apiserver `request.CreateV1AdmissionReview`).
fn review_request(uid: &str, version: &str, attrs: &Attributes, object: Option<&Value>) -> Value {
    let kind = json!({ "group": attrs.group, "version": attrs.version, "kind": attrs.kind });
    let resource = json!({ "group": attrs.group, "version": attrs.version, "resource": attrs.resource });
    let mut user = Map::new();
    for (key, value) in [("username", &attrs.user.username), ("uid", &attrs.user.uid)] {
        if !value.is_empty() {
            user.insert(key.into(), json!(value));
        }
    }
    if !attrs.user.groups.is_empty() {
        user.insert("groups".into(), json!(attrs.user.groups));
    }
    let mut request = json!({
        "uid": uid, "kind": kind, "resource": resource, "requestKind": kind,
        "requestResource": resource, "operation": attrs.operation.as_str(), "userInfo": user,
        "object": object, "oldObject": attrs.old_object, "dryRun": attrs.dry_run,
        "options": attrs.options,
    });
    for (key, value) in [
        ("subResource", &attrs.subresource),
        ("requestSubResource", &attrs.subresource),
        ("name", &attrs.name),
        ("namespace", &attrs.namespace),
    ] {
        if !value.is_empty() {
            request[key] = json!(value);
        }
    }
    json!({ "kind": "AdmissionReview", "apiVersion": format!("admission.k8s.io/{version}"), "request": request })
}

/// Decodes the response body the way the Go client would before verification.
fn decode_review(body: &[u8]) -> Result<Value, String> {
    let mut review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let Some(response) = review.get_mut("response").filter(|r| r.is_object()) else {
        return Ok(review);
    };
    match response.get("allowed") {
        None | Some(Value::Null | Value::Bool(_)) => {}
        Some(other) => {
            let ty = if other.is_string() {
                "string"
            } else if other.is_number() {
                "number"
            } else {
                "object"
            };
            return Err(format!(
                "json: cannot unmarshal {ty} into Go struct field AdmissionResponse.response.allowed of type bool"
            ));
        }
    }
    if let Some(patch) = response.get("patch").and_then(Value::as_str) {
        let bytes = BASE64.decode(patch).map_err(|e| match e {
            base64::DecodeError::InvalidByte(at, _) => {
                format!("illegal base64 data at input byte {at}")
            }
            other => format!("illegal base64 data: {other}"),
        })?;
        response["patch"] = json!(bytes);
    }
    Ok(review)
}

/// Checks a decoded response (apiserver `request.VerifyAdmissionResponse`).
fn verify_review(uid: &str, version: &str, mutating: bool, review: Value) -> Result<Reply, String> {
    let response = review.get("response").filter(|r| r.is_object()).ok_or("webhook response was absent")?;
    let patch: Vec<u8> =
        serde_json::from_value(response.get("patch").cloned().unwrap_or(json!([]))).unwrap_or_default();
    let mut patch_type =
        response.get("patchType").filter(|p| !p.is_null()).map(|p| p.as_str().unwrap_or("").to_string());
    if version == "v1" {
        let got_uid = str_at(response, "uid");
        if got_uid != uid {
            return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
        }
        let api_version = str_at(&review, "apiVersion");
        let (group, ver) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let kind = str_at(&review, "kind");
        if (group, ver, kind) != ("admission.k8s.io", "v1", "AdmissionReview") {
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{ver}, Kind={kind}"
            ));
        }
        if mutating {
            match (&patch_type, patch.is_empty()) {
                (None, false) => {
                    return Err("webhook returned response.patch but not response.patchType".into());
                }
                (Some(_), true) => {
                    return Err("webhook returned response.patchType but not response.patch".into());
                }
                (Some(t), false) if t.is_empty() => {
                    return Err(format!("webhook returned invalid response.patchType of {t:?}"));
                }
                _ => {}
            }
        } else if !patch.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        } else if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    } else {
        patch_type = (!patch.is_empty()).then(|| "JSONPatch".to_string());
    }
    let warnings = response.get("warnings").and_then(Value::as_array);
    Ok(Reply {
        allowed: response.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        patch: if mutating { patch } else { Vec::new() },
        patch_type,
        status: response.get("status").filter(|s| !s.is_null()).cloned(),
        warnings: warnings.into_iter().flatten().filter_map(Value::as_str).map(String::from).collect(),
    })
}

/// The error the Go REST client makes of a non-2xx answer (`NewGenericServerResponse`).
fn unexpected_status(code: u16, is_text: bool, body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(body)
        && str_at(&status, "kind") == "Status"
        && str_at(&status, "status") == "Failure"
    {
        return str_at(&status, "message").to_string();
    }
    let server = if is_text {
        String::from_utf8_lossy(&body[..body.len().min(2048)]).trim().to_string()
    } else {
        "unknown".to_string()
    };
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => server,
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        500.. => format!("an error on the server ({server:?}) has prevented the request from succeeding"),
        _ => format!("the server responded with the status code {code} but did not return more information"),
    }
}

/// How to reach one webhook.
struct Target {
    /// `host:port` as in the URL and `Host` header.
    authority: String,
    /// The address to dial, or the dial error.
    dial: Result<SocketAddr, String>,
    server_name: ServerName<'static>,
    path: String,
    /// The `caBundle`'s certificates (empty: none was given).
    roots: Vec<CertificateDer<'static>>,
}

/// Dials, handshakes TLS and POSTs; errors are worded like Go's `net/http` ones.
async fn post(target: &Target, path: &str, body: String) -> Result<(u16, bool, Bytes), String> {
    let addr = target.dial.clone()?;
    let tcp = TcpStream::connect(addr).await.map_err(|e| match e.kind() {
        io::ErrorKind::ConnectionRefused => format!("dial tcp {addr}: connect: connection refused"),
        _ => format!("dial tcp {addr}: {e}"),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut config = if target.roots.is_empty() {
        // No caBundle: nothing is trusted (kubesim has no system roots to fall back on).
        builder.with_root_certificates(rustls::RootCertStore::empty()).with_no_client_auth()
    } else {
        let verifier = verify::GoVerifier::new(target.roots.clone(), provider)?;
        builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier)).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let sniff = Sniff { inner: tcp, head: Vec::new() };
    let tls = connector
        .connect(target.server_name.clone(), sniff)
        .into_fallible()
        .await
        .map_err(|(e, io)| tls_error(&e, &io.head))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
        .await
        .map_err(hyper_error)?;
    let request = http::Request::post(path)
        .header(http::header::HOST, &target.authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let exchange = async move {
        let response = sender.send_request(request).await?;
        let is_text =
            response.headers().get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(
                |ct| ct.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("text/plain"),
            );
        let code = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok::<_, hyper::Error>((code, is_text, body))
    };
    tokio::pin!(exchange);
    tokio::select! {
        biased;
        result = &mut exchange => result.map_err(hyper_error),
        closed = conn => {
            closed.map_err(hyper_error)?;
            exchange.await.map_err(hyper_error)
        }
    }
}

fn hyper_error(e: hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_closed() { "EOF".into() } else { e.to_string() }
}

/// Words a failed TLS handshake like Go's `crypto/tls` and `crypto/x509`.
fn tls_error(e: &io::Error, head: &[u8]) -> String {
    if head.starts_with(b"HTTP/") {
        return "http: server gave HTTP response to HTTPS client".into();
    }
    let rustls_error = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    let Some(rustls::Error::InvalidCertificate(cert)) = rustls_error else {
        return match (e.kind(), rustls_error) {
            (io::ErrorKind::UnexpectedEof, _) => "EOF".into(),
            (_, Some(other)) => format!("tls: {other}"),
            _ => e.to_string(),
        };
    };
    let x509 = match cert {
        CertificateError::UnknownIssuer | CertificateError::BadSignature => {
            "certificate signed by unknown authority".to_string()
        }
        CertificateError::ExpiredContext { time, not_after } => format!(
            "certificate has expired or is not yet valid: current time {} is after {}",
            rfc3339(time.as_secs()),
            rfc3339(not_after.as_secs())
        ),
        CertificateError::NotValidYetContext { time, not_before } => format!(
            "certificate has expired or is not yet valid: current time {} is before {}",
            rfc3339(time.as_secs()),
            rfc3339(not_before.as_secs())
        ),
        CertificateError::Expired | CertificateError::NotValidYet => {
            "certificate has expired or is not yet valid".to_string()
        }
        CertificateError::NotValidForNameContext { expected, presented } => {
            let host = expected.to_str();
            let is_ip = matches!(expected, ServerName::IpAddress(_));
            let prefix = if is_ip { "IpAddress(" } else { "DnsName(\"" };
            let names: Vec<&str> = presented
                .iter()
                .filter_map(|p| p.strip_prefix(prefix)?.strip_suffix(if is_ip { ")" } else { "\")" }))
                .collect();
            match (names.is_empty(), is_ip) {
                (true, true) => {
                    format!("cannot validate certificate for {host} because it doesn't contain any IP SANs")
                }
                (true, false) => {
                    format!("certificate is not valid for any names, but wanted to match {host}")
                }
                _ => format!("certificate is valid for {}, not {host}", names.join(", ")),
            }
        }
        CertificateError::Other(other) if verify::is_ca_used_as_end_entity(other) => {
            // Go verifies such a chain (it does not look at a leaf's CA flag); WebPKI, which
            // kubesim verifies with, does not, unless the leaf is itself in the caBundle.
            "a CA certificate is served as the webhook's certificate and is not itself in the caBundle \
             (kubesim, unlike the API server, accepts a CA certificate as a server certificate only then)"
                .to_string()
        }
        other => other.to_string(),
    };
    format!("tls: failed to verify certificate: x509: {x509}")
}

/// Parses a PEM `caBundle` into trust roots (client-go `rootCertPool` messages).
fn root_store(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    if pem.is_empty() {
        return Ok(Vec::new());
    }
    let mut store = rustls::RootCertStore::empty();
    let mut roots = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem).flatten() {
        if store.add(cert.clone()).is_ok() {
            roots.push(cert);
        }
    }
    if roots.is_empty() {
        let why = if String::from_utf8_lossy(pem).contains("-----BEGIN") {
            "no valid certificate authority data seen"
        } else {
            "unable to parse bytes as PEM block"
        };
        return Err(format!("unable to load root certificates: {why}"));
    }
    Ok(roots)
}

/// Records the first bytes the server sends, to recognise a plain-HTTP answer to a ClientHello.
struct Sniff {
    inner: TcpStream,
    head: Vec<u8>,
}

impl AsyncRead for Sniff {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        let fresh = &buf.filled()[before..];
        let take = fresh.len().min(5usize.saturating_sub(this.head.len()));
        this.head.extend_from_slice(&fresh[..take]);
        result
    }
}

impl AsyncWrite for Sniff {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Polls all futures concurrently; outputs in input order.
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(v) => *output = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(outputs.drain(..).flatten().collect()) }
    })
    .await
}

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Splits `host[:port]` (IPv6 in brackets).
fn split_host_port(s: &str) -> Result<(&str, Option<u16>), String> {
    let (host, port) = match s.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']').ok_or_else(|| format!("invalid host {s:?}"))?;
            (host, after.strip_prefix(':'))
        }
        None => match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        },
    };
    let port = port.map(|p| p.parse::<u16>().map_err(|_| format!("invalid port {p:?}"))).transpose()?;
    Ok((host, port))
}

fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

/// Resolves a host to a loopback address; kubesim never dials anywhere else.
fn resolve_loopback(host: &str, port: u16) -> Result<SocketAddr, String> {
    let ip = match host.parse::<IpAddr>() {
        Ok(ip) => ip,
        Err(_) if host.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Err(_) => return Err(format!("dial tcp: lookup {host}: no such host")),
    };
    let addr = SocketAddr::new(ip, port);
    if ip.is_loopback() {
        Ok(addr)
    } else {
        Err(format!("dial tcp {addr}: connect: kubesim only dials loopback addresses"))
    }
}

/// Go `path.Join("/", p)`: collapses slashes, resolves `.`/`..`, drops a trailing slash.
fn clean_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Go's `time.Duration.String()` for whole seconds, rounded up like the dispatcher does.
fn go_duration(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

/// Formats UNIX seconds as RFC 3339 in UTC (`2006-01-02T15:04:05Z`).
fn rfc3339(secs: u64) -> String {
    i64::try_from(secs).ok().and_then(|s| jiff::Timestamp::from_second(s).ok()).map_or_else(
        || format!("{secs}s after the Unix epoch"),
        |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use std::sync::Mutex;

    use hyper::body::Incoming;
    use hyper::service::service_fn;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    use rustls_pki_types::PrivateKeyDer;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    const SVC: &str = "hook.webhooks.svc";

    /// A test CA: its PEM and an issuer to sign server certificates.
    struct Ca {
        pem: String,
        issuer: Issuer<'static, KeyPair>,
    }

    fn ca(cn: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { pem, issuer: Issuer::new(params, key) }
    }

    fn server_tls(ca: &Ca, names: &[&str], expired: bool) -> Arc<rustls::ServerConfig> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &ca.issuer).unwrap();
        let key = PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .unwrap();
        Arc::new(config)
    }

    type Handler = Arc<dyn Fn(&Value) -> (u16, Value) + Send + Sync>;

    /// What a test server received: request URI, Host header, body.
    #[derive(Clone, Debug)]
    struct Seen {
        uri: String,
        host: String,
        body: Value,
    }

    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<Seen>>>);

    impl Log {
        fn all(&self) -> Vec<Seen> {
            self.0.lock().unwrap().clone()
        }
        fn count(&self) -> usize {
            self.0.lock().unwrap().len()
        }
    }

    /// Starts an HTTPS webhook server on 127.0.0.1:0; returns its port and request log.
    async fn serve(tls: Arc<rustls::ServerConfig>, delay: Duration, handler: Handler) -> (u16, Log) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let log = Log::default();
        let log2 = log.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
                let (log, handler) = (log2.clone(), handler.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: http::Request<Incoming>| {
                        let (log, handler) = (log.clone(), handler.clone());
                        async move {
                            let uri = req.uri().to_string();
                            let host = req.headers()[http::header::HOST].to_str().unwrap().to_string();
                            let bytes = req.into_body().collect().await.unwrap().to_bytes();
                            let body: Value = serde_json::from_slice(&bytes).unwrap();
                            log.0.lock().unwrap().push(Seen { uri, host, body: body.clone() });
                            tokio::time::sleep(delay).await;
                            let (code, out) = handler(&body);
                            let response = http::Response::builder()
                                .status(code)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(out.to_string())))
                                .unwrap();
                            Ok::<_, Infallible>(response)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
        (port, log)
    }

    /// A well-formed v1 response echoing the request uid.
    fn respond(req: &Value, response: Value) -> (u16, Value) {
        let mut response = response;
        response["uid"] = req["request"]["uid"].clone();
        (200, json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response }))
    }

    fn handler(f: impl Fn(&Value) -> (u16, Value) + Send + Sync + 'static) -> Handler {
        Arc::new(f)
    }

    fn allow_all() -> Handler {
        handler(|req| respond(req, json!({ "allowed": true })))
    }

    fn patcher(patch: Value) -> Handler {
        handler(move |req| {
            let encoded = BASE64.encode(patch.to_string());
            respond(req, json!({ "allowed": true, "patchType": "JSONPatch", "patch": encoded }))
        })
    }

    /// A webhook for pods CREATE on service `webhooks/hook`, path `/hook`; `extra` is merged in.
    fn hook(name: &str, ca: &Ca, extra: Value) -> Value {
        let mut hook = json!({
            "name": name,
            "clientConfig": {
                "service": { "namespace": "webhooks", "name": "hook", "path": "/hook" },
                "caBundle": BASE64.encode(&ca.pem),
            },
            "rules": [{ "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"] }],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        for (k, v) in extra.as_object().unwrap() {
            hook[k] = v.clone();
        }
        hook
    }

    fn config(kind: &str, name: &str, hooks: Vec<Value>) -> Value {
        json!({ "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": { "name": name }, "webhooks": hooks })
    }

    fn vwc(hooks: Vec<Value>) -> Vec<Value> {
        vec![config("ValidatingWebhookConfiguration", "validators", hooks)]
    }

    fn caller(port: u16) -> Caller {
        Caller::new(HashMap::from([("webhooks/hook".to_string(), format!("127.0.0.1:{port}"))]))
    }

    fn pod_create() -> Attributes {
        Attributes {
            operation: Operation::Create,
            version: "v1".into(),
            kind: "Pod".into(),
            resource: "pods".into(),
            namespace: "default".into(),
            name: "web".into(),
            object: Some(
                json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": "web", "namespace": "default", "labels": { "app": "web" } } }),
            ),
            options: json!({ "apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions" }),
            user: UserInfo {
                username: "alice".into(),
                uid: "u-1".into(),
                groups: vec!["system:authenticated".into()],
            },
            namespace_labels: Some(BTreeMap::from([("team".to_string(), "a".to_string())])),
            ..Attributes::default()
        }
    }

    fn call_failure(err: AdmissionError) -> String {
        match err {
            AdmissionError::CallFailed { message, .. } => message,
            other => panic!("expected a call failure, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn allowed_request_sends_a_v1_admission_review() {
        let ca = ca("ca");
        let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
        let warnings = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap();
        assert!(warnings.is_empty());
        let seen = log.all();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].uri, "/hook?timeout=10s");
        assert_eq!(seen[0].host, "hook.webhooks.svc:443");
        let body = &seen[0].body;
        assert_eq!(body["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(body["kind"], "AdmissionReview");
        let req = &body["request"];
        let uid = req["uid"].as_str().unwrap();
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
        assert_eq!(req["kind"], json!({ "group": "", "version": "v1", "kind": "Pod" }));
        assert_eq!(req["resource"], json!({ "group": "", "version": "v1", "resource": "pods" }));
        assert_eq!(req["requestKind"], req["kind"]);
        assert_eq!(req["requestResource"], req["resource"]);
        assert_eq!(req["operation"], "CREATE");
        assert_eq!(req["name"], "web");
        assert_eq!(req["namespace"], "default");
        assert!(req.get("subResource").is_none());
        assert_eq!(
            req["userInfo"],
            json!({ "username": "alice", "uid": "u-1", "groups": ["system:authenticated"] })
        );
        assert_eq!(req["object"]["metadata"]["labels"]["app"], "web");
        assert_eq!(req["oldObject"], Value::Null);
        assert_eq!(req["dryRun"], false);
        assert_eq!(req["options"]["kind"], "CreateOptions");
    }

    #[tokio::test]
    async fn denial_carries_the_webhook_message_code_and_reason() {
        let ca = ca("ca");
        let deny = handler(|req| {
            respond(req, json!({ "allowed": false, "status": { "message": "replicas must be >= 1" } }))
        });
        let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, deny).await;
        let err = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "admission webhook \"v.example.com\" denied the request: replicas must be >= 1"
        );
        assert_eq!(err.code(), 400, "codes below 400 become 400");
        assert_eq!(err.reason(), "");
        let status = err.status();
        assert_eq!(status["kind"], "Status");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["code"], 400);
        assert!(status.get("reason").is_none());

        let forbid = handler(|req| {
            respond(
                req,
                json!({ "allowed": false, "status": { "code": 403, "reason": "Forbidden", "details": { "name": "web" } } }),
            )
        });
        let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, forbid).await;
        let err = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "admission webhook \"v.example.com\" denied the request: Forbidden");
        assert_eq!((err.code(), err.reason()), (403, "Forbidden"));
        assert_eq!(err.status()["details"], json!({ "name": "web" }));

        let silent = handler(|req| respond(req, json!({})));
        let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, silent).await;
        let err = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "admission webhook \"v.example.com\" denied the request without explanation"
        );
    }

    #[tokio::test]
    async fn mutations_chain_in_configuration_name_order() {
        let ca = ca("ca");
        let tls = server_tls(&ca, &[SVC, "127.0.0.1"], false);
        let (port_a, log_a) = serve(
            tls.clone(),
            Duration::ZERO,
            patcher(json!([{ "op": "add", "path": "/metadata/labels/injected", "value": "yes" }])),
        )
        .await;
        let (port_b, log_b) = serve(tls, Duration::ZERO, handler(|req| {
            // The second webhook sees the first one's change.
            let seen = req["request"]["object"]["metadata"]["labels"]["injected"].as_str().unwrap_or("missing").to_string();
            let patch = json!([{ "op": "add", "path": "/metadata/annotations", "value": { "saw": seen } }]);
            respond(req, json!({ "allowed": true, "patchType": "JSONPatch", "patch": BASE64.encode(patch.to_string()), "warnings": ["b ran"] }))
        })).await;
        let url_b = json!({ "clientConfig": { "url": format!("https://127.0.0.1:{port_b}/mutate"), "caBundle": BASE64.encode(&ca.pem) } });
        let configs = vec![
            config("MutatingWebhookConfiguration", "z-second", vec![hook("b.example.com", &ca, url_b)]),
            config("MutatingWebhookConfiguration", "a-first", vec![hook("a.example.com", &ca, json!({}))]),
        ];
        let (object, warnings) = caller(port_a).mutate(&configs, &pod_create()).await.unwrap();
        let object = object.unwrap();
        assert_eq!(object["metadata"]["labels"]["injected"], "yes");
        assert_eq!(object["metadata"]["annotations"]["saw"], "yes");
        assert_eq!(warnings, vec!["b ran".to_string()]);
        assert_eq!((log_a.count(), log_b.count()), (1, 1));
        let seen_b = &log_b.all()[0];
        assert_eq!(seen_b.uri, "/mutate?timeout=10s");
        assert_eq!(seen_b.host, format!("127.0.0.1:{port_b}"));
    }

    #[tokio::test]
    async fn if_needed_webhooks_are_reinvoked_once_after_a_later_change() {
        let ca = ca("ca");
        let tls = server_tls(&ca, &[SVC], false);
        let (port, log) = serve(tls, Duration::ZERO, handler(|req| {
            let labels = &req["request"]["object"]["metadata"]["labels"];
            let patch = if labels.get("second").is_some() || labels.get("first").is_none() {
                json!([{ "op": "add", "path": "/metadata/labels/first", "value": format!("{}", labels.as_object().unwrap().len()) }])
            } else {
                json!([{ "op": "add", "path": "/metadata/labels/second", "value": "x" }])
            };
            respond(req, json!({ "allowed": true, "patchType": "JSONPatch", "patch": BASE64.encode(patch.to_string()) }))
        })).await;
        for (policy, calls, first) in [("IfNeeded", 3, "3"), ("Never", 2, "1")] {
            let before = log.count();
            let hooks = vec![
                hook("first.example.com", &ca, json!({ "reinvocationPolicy": policy })),
                hook("second.example.com", &ca, json!({})),
            ];
            let configs = vec![config("MutatingWebhookConfiguration", "m", hooks)];
            let (object, _) = caller(port).mutate(&configs, &pod_create()).await.unwrap();
            let labels = &object.unwrap()["metadata"]["labels"];
            assert_eq!(log.count() - before, calls, "{policy}");
            assert_eq!(labels["first"], first, "{policy}");
            assert_eq!(labels["second"], "x");
        }
    }

    #[tokio::test]
    async fn non_matching_rules_and_selectors_skip_the_call() {
        let ca = ca("ca");
        let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
        let misses = [
            json!({ "rules": [{ "operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"] }] }),
            json!({ "rules": [{ "operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["*"] }] }),
            json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["v2"], "resources": ["*"] }] }),
            json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["pods/status"] }] }),
            json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster" }] }),
            json!({ "namespaceSelector": { "matchLabels": { "team": "b" } } }),
            json!({ "namespaceSelector": { "matchExpressions": [{ "key": "team", "operator": "NotIn", "values": ["a"] }] } }),
            json!({ "objectSelector": { "matchExpressions": [{ "key": "app", "operator": "DoesNotExist" }] } }),
        ];
        let caller = caller(port);
        for extra in misses {
            caller
                .validate(&vwc(vec![hook("v.example.com", &ca, extra.clone())]), &pod_create())
                .await
                .unwrap();
            assert_eq!(log.count(), 0, "{extra}");
        }
        let hits = [
            json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Namespaced" }] }),
            json!({ "namespaceSelector": { "matchExpressions": [{ "key": "team", "operator": "In", "values": ["a", "b"] }] } }),
            json!({ "objectSelector": { "matchLabels": { "app": "web" } } }),
        ];
        for (i, extra) in hits.into_iter().enumerate() {
            caller
                .validate(&vwc(vec![hook("v.example.com", &ca, extra.clone())]), &pod_create())
                .await
                .unwrap();
            assert_eq!(log.count(), i + 1, "{extra}");
        }
    }

    #[test]
    fn rules_follow_the_real_matcher() {
        let rule = |resources: Value, scope: Value| json!({ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": resources, "scope": scope });
        let mut status = pod_create();
        status.subresource = "status".into();
        status.operation = Operation::Update;
        assert!(!rule_matches(&rule(json!(["pods"]), Value::Null), &status));
        assert!(!rule_matches(&rule(json!(["*"]), Value::Null), &status));
        assert!(rule_matches(&rule(json!(["pods/status"]), Value::Null), &status));
        assert!(rule_matches(&rule(json!(["*/status"]), Value::Null), &status));
        assert!(rule_matches(&rule(json!(["*/*"]), Value::Null), &status));
        assert!(rule_matches(&rule(json!(["pods/*"]), json!("*")), &status));
        assert!(!rule_matches(&rule(json!(["pods/scale"]), Value::Null), &status));

        let ns = Attributes {
            version: "v1".into(),
            kind: "Namespace".into(),
            resource: "namespaces".into(),
            namespace: "team-a".into(),
            name: "team-a".into(),
            ..Attributes::default()
        };
        assert!(rule_matches(&rule(json!(["namespaces"]), json!("Cluster")), &ns));
        assert!(!rule_matches(&rule(json!(["namespaces"]), json!("Namespaced")), &ns));
        let node = Attributes {
            version: "v1".into(),
            kind: "Node".into(),
            resource: "nodes".into(),
            ..Attributes::default()
        };
        assert!(rule_matches(&rule(json!(["nodes"]), json!("Cluster")), &node));
        assert!(!rule_matches(&rule(json!(["nodes"]), json!("Namespaced")), &node));
        assert!(!rule_matches(&rule(json!(["nodes"]), json!("Bogus")), &node));
    }

    #[test]
    fn selectors_and_namespace_lookup() {
        let labels = BTreeMap::from([("env".to_string(), "prod".to_string())]);
        let expr = |op: &str, values: Value| json!({ "matchExpressions": [{ "key": "env", "operator": op, "values": values }] });
        assert_eq!(selector_matches(&expr("In", json!(["prod"])), &labels), Ok(true));
        assert_eq!(selector_matches(&expr("NotIn", json!(["prod"])), &labels), Ok(false));
        assert_eq!(
            selector_matches(
                &json!({ "matchExpressions": [{ "key": "x", "operator": "NotIn", "values": ["a"] }] }),
                &labels
            ),
            Ok(true)
        );
        assert_eq!(selector_matches(&expr("Exists", Value::Null), &labels), Ok(true));
        assert_eq!(selector_matches(&expr("DoesNotExist", Value::Null), &labels), Ok(false));
        assert_eq!(
            selector_matches(&expr("Near", Value::Null), &labels),
            Err("\"Near\" is not a valid label selector operator".into())
        );

        // Cluster-scoped objects other than namespaces always match a namespace selector.
        let spec = json!({ "namespaceSelector": { "matchLabels": { "env": "prod" } } });
        let node = Attributes { resource: "nodes".into(), ..Attributes::default() };
        assert_eq!(namespace_matches(&spec, &node, None), Ok(true));
        // A Namespace being created is matched on its own labels.
        let ns = Attributes {
            resource: "namespaces".into(),
            namespace: "n".into(),
            name: "n".into(),
            ..Attributes::default()
        };
        let obj = json!({ "metadata": { "name": "n", "labels": { "env": "prod" } } });
        assert_eq!(namespace_matches(&spec, &ns, Some(&obj)), Ok(true));
        // A missing namespace is a 404 only when the selector is not empty.
        let mut pod = pod_create();
        pod.namespace_labels = None;
        let err = namespace_matches(&spec, &pod, pod.object.as_ref()).unwrap_err();
        assert_eq!((err.code(), err.to_string()), (404, "namespaces \"default\" not found".to_string()));
        assert_eq!(err.status()["details"], json!({ "name": "default", "kind": "namespaces" }));
        assert_eq!(namespace_matches(&json!({ "namespaceSelector": {} }), &pod, None), Ok(true));
    }

    #[tokio::test]
    async fn failure_policy_decides_on_a_dead_port() {
        let ca = ca("ca");
        let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = dead.local_addr().unwrap().port();
        drop(dead);
        let caller = caller(port);
        let err = caller
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        assert_eq!((err.code(), err.reason()), (500, "InternalError"));
        let expected = format!(
            "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        );
        assert_eq!(err.to_string(), format!("Internal error occurred: {expected}"));
        assert_eq!(err.status()["details"]["causes"][0]["message"], json!(expected));
        assert_eq!(call_failure(err), expected);

        let ignore = hook("v.example.com", &ca, json!({ "failurePolicy": "Ignore" }));
        assert_eq!(caller.validate(&vwc(vec![ignore.clone()]), &pod_create()).await, Ok(vec![]));
        let configs = vec![config("MutatingWebhookConfiguration", "m", vec![ignore])];
        let (object, _) = caller.mutate(&configs, &pod_create()).await.unwrap();
        assert_eq!(object, pod_create().object);
    }

    #[tokio::test]
    async fn unknown_service_fails_the_dial() {
        let ca = ca("ca");
        let err = Caller::new(HashMap::new())
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        assert!(call_failure(err).ends_with("/hook?timeout=10s\": service \"hook\" not found"));
    }

    #[tokio::test]
    async fn slow_webhooks_time_out() {
        let ca = ca("ca");
        let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::from_secs(3), allow_all()).await;
        let caller = caller(port);
        let slow = hook("v.example.com", &ca, json!({ "timeoutSeconds": 1 }));
        let started = std::time::Instant::now();
        let err = caller.validate(&vwc(vec![slow.clone()]), &pod_create()).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_eq!(
            call_failure(err),
            "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=1s\": context deadline exceeded"
        );
        assert_eq!(log.all()[0].uri, "/hook?timeout=1s");
        let mut ignore = slow;
        ignore["failurePolicy"] = json!("Ignore");
        assert_eq!(caller.validate(&vwc(vec![ignore]), &pod_create()).await, Ok(vec![]));
    }

    #[tokio::test]
    async fn certificates_must_chain_to_the_ca_bundle_and_match_the_host() {
        let (ca, other) = (ca("ca"), ca("other"));
        let prefix = "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=10s\": tls: failed to verify certificate: x509: ";
        let cases = [
            (server_tls(&other, &[SVC], false), "certificate signed by unknown authority".to_string()),
            (
                server_tls(&ca, &["other.webhooks.svc", "alt.webhooks.svc"], false),
                format!("certificate is valid for other.webhooks.svc, alt.webhooks.svc, not {SVC}"),
            ),
            (
                server_tls(&ca, &[SVC], true),
                "certificate has expired or is not yet valid: current time ".to_string(),
            ),
        ];
        for (tls, reason) in cases {
            let (port, log) = serve(tls, Duration::ZERO, allow_all()).await;
            let err = caller(port)
                .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
                .await
                .unwrap_err();
            let message = call_failure(err);
            assert!(message.starts_with(&format!("{prefix}{reason}")), "{message}");
            assert_eq!(log.count(), 0);
        }
        let (port, _) = serve(server_tls(&ca, &[SVC], true), Duration::ZERO, allow_all()).await;
        let err = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        assert!(call_failure(err).ends_with(" is after 2001-01-01T00:00:00Z"));

        let mut no_pem = hook("v.example.com", &ca, json!({}));
        no_pem["clientConfig"]["caBundle"] = json!(BASE64.encode("not pem"));
        let err = caller(1).validate(&vwc(vec![no_pem]), &pod_create()).await.unwrap_err();
        assert_eq!(
            call_failure(err),
            "failed calling webhook \"v.example.com\": could not get REST client: unable to load root certificates: unable to parse bytes as PEM block"
        );
    }

    /// One self-signed certificate marked as a CA, serving as its own `caBundle` (as kopf
    /// makes them), for `names`: its PEM for the bundle and the server's TLS config.
    fn self_signed_ca_leaf(names: &[&str], expired: bool) -> (Ca, Arc<rustls::ServerConfig>) {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, names[0]);
        if expired {
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], PrivateKeyDer::Pkcs8(key.serialize_der().into()))
            .unwrap();
        (Ca { pem: cert.pem(), issuer: Issuer::new(params, key) }, Arc::new(config))
    }

    /// Go accepts a leaf that is itself one of the trusted roots without looking at its CA
    /// flag (WebPKI would refuse it as `CaUsedAsEndEntity`); its names and dates still count.
    #[tokio::test]
    async fn a_self_signed_ca_certificate_that_is_its_own_ca_bundle_is_trusted_like_go_does() {
        let call = async |bundle: &Ca, tls: Arc<rustls::ServerConfig>| {
            let (port, log) = serve(tls, Duration::ZERO, allow_all()).await;
            let hooks = vwc(vec![hook("v.example.com", bundle, json!({}))]);
            let result = caller(port).validate(&hooks, &pod_create()).await;
            (result, log.count())
        };
        let (own, tls) = self_signed_ca_leaf(&[SVC], false);
        assert_eq!(call(&own, tls).await, (Ok(vec![]), 1));

        let prefix = "failed calling webhook \"v.example.com\": failed to call webhook: Post \"https://hook.webhooks.svc:443/hook?timeout=10s\": tls: failed to verify certificate: x509: ";
        let (wrong_name, tls) = self_signed_ca_leaf(&["other.webhooks.svc"], false);
        let (result, _) = call(&wrong_name, tls).await;
        assert_eq!(
            call_failure(result.unwrap_err()),
            format!("{prefix}certificate is valid for other.webhooks.svc, not {SVC}")
        );
        let (expired, tls) = self_signed_ca_leaf(&[SVC], true);
        let message = call_failure(call(&expired, tls).await.0.unwrap_err());
        assert!(
            message.starts_with(&format!("{prefix}certificate has expired or is not yet valid")),
            "{message}"
        );
        // Trusted as a root only when it is the very certificate in the bundle (here the
        // difference from Go is said in the message).
        let (_, tls) = self_signed_ca_leaf(&[SVC], false);
        let message = call_failure(call(&own, tls).await.0.unwrap_err());
        assert!(message.starts_with(&format!("{prefix}a CA certificate is served")), "{message}");
    }

    #[tokio::test]
    async fn plain_http_endpoints_are_call_failures() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let mut buf = [0u8; 1024];
                let _ = tcp.read(&mut buf).await;
                let _ = tcp.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n").await;
            }
        });
        let ca = ca("ca");
        let err = caller(port)
            .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
            .await
            .unwrap_err();
        assert!(
            call_failure(err)
                .ends_with("/hook?timeout=10s\": http: server gave HTTP response to HTTPS client")
        );
    }

    #[tokio::test]
    async fn malformed_responses_are_call_failures() {
        let ca = ca("ca");
        let cases: Vec<(Handler, &str)> = vec![
            (
                handler(|_| {
                    (
                        200,
                        json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": { "uid": "wrong", "allowed": true } }),
                    )
                }),
                "expected response.uid=\"",
            ),
            (
                handler(|req| {
                    (200, json!({ "response": { "uid": req["request"]["uid"], "allowed": true } }))
                }),
                "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind=",
            ),
            (
                handler(|_| (200, json!({ "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview" }))),
                "received invalid webhook response: webhook response was absent",
            ),
            (
                handler(|req| {
                    respond(
                        req,
                        json!({ "allowed": true, "patchType": "JSONPatch", "patch": BASE64.encode("[]") }),
                    )
                }),
                "received invalid webhook response: validating webhook may not return response.patch",
            ),
            (
                handler(|req| respond(req, json!({ "allowed": "yes" }))),
                "failed to call webhook: json: cannot unmarshal string into Go struct field AdmissionResponse.response.allowed of type bool",
            ),
            (
                handler(|_| (404, json!({}))),
                "failed to call webhook: the server could not find the requested resource",
            ),
            (
                handler(|_| (500, json!({ "kind": "Status", "status": "Failure", "message": "boom" }))),
                "failed to call webhook: boom",
            ),
        ];
        for (h, expected) in cases {
            let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, h).await;
            let err = caller(port)
                .validate(&vwc(vec![hook("v.example.com", &ca, json!({}))]), &pod_create())
                .await
                .unwrap_err();
            let message = call_failure(err);
            assert!(message.contains(expected), "{message}");
            if expected.starts_with("expected response.uid") {
                assert!(message.ends_with("got \"wrong\""), "{message}");
            }
        }
        let mut old = hook("v.example.com", &ca, json!({}));
        old["admissionReviewVersions"] = json!(["v2"]);
        let err = caller(1).validate(&vwc(vec![old]), &pod_create()).await.unwrap_err();
        assert!(call_failure(err).ends_with(
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
        ));
    }

    #[tokio::test]
    async fn mutating_response_checks() {
        let ca = ca("ca");
        let mcfg = |extra: Value| {
            vec![config("MutatingWebhookConfiguration", "m", vec![hook("m.example.com", &ca, extra)])]
        };
        let no_type = handler(|req| respond(req, json!({ "allowed": true, "patch": BASE64.encode("[]") })));
        let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, no_type).await;
        let err = caller(port).mutate(&mcfg(json!({})), &pod_create()).await.unwrap_err();
        assert!(call_failure(err).ends_with(
            "received invalid webhook response: webhook returned response.patch but not response.patchType"
        ));

        let bad_op = patcher(json!([{ "op": "replace", "path": "/spec/missing", "value": 1 }]));
        let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, bad_op).await;
        let err = caller(port)
            .mutate(&mcfg(json!({ "failurePolicy": "Ignore" })), &pod_create())
            .await
            .unwrap_err();
        assert!(
            matches!(err, AdmissionError::Internal { .. }),
            "patch errors ignore the failure policy: {err:?}"
        );

        let add = patcher(json!([{ "op": "add", "path": "/metadata/labels/x", "value": "y" }]));
        let (port, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, add).await;
        let mut delete = pod_create();
        delete.operation = Operation::Delete;
        delete.old_object = delete.object.take();
        let rules = json!({ "rules": [{ "operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"] }] });
        let err = caller(port).mutate(&mcfg(rules), &delete).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "Internal error occurred: admission webhook \"m.example.com\" attempted to modify the object, which is not supported for this operation"
        );
    }

    #[tokio::test]
    async fn dry_run_needs_side_effect_free_webhooks() {
        let ca = ca("ca");
        let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
        let mut attrs = pod_create();
        attrs.dry_run = true;
        let some = hook("v.example.com", &ca, json!({ "sideEffects": "Some", "failurePolicy": "Ignore" }));
        let err = caller(port).validate(&vwc(vec![some]), &attrs).await.unwrap_err();
        assert_eq!(err, AdmissionError::DryRunUnsupported { webhook: "v.example.com".into() });
        assert_eq!((err.code(), err.reason()), (400, "BadRequest"));
        assert_eq!(err.to_string(), "admission webhook \"v.example.com\" does not support dry run");
        assert_eq!(log.count(), 0);
        let ok = hook("v.example.com", &ca, json!({ "sideEffects": "NoneOnDryRun" }));
        caller(port).validate(&vwc(vec![ok]), &attrs).await.unwrap();
        assert_eq!(log.all()[0].body["request"]["dryRun"], true);
    }

    #[tokio::test]
    async fn warnings_are_collected_even_on_denial() {
        let ca = ca("ca");
        let warn = handler(|req| respond(req, json!({ "allowed": true, "warnings": ["first", "second"] })));
        let (port_a, _) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, warn).await;
        let deny = handler(|req| {
            respond(
                req,
                json!({ "allowed": false, "warnings": ["why"], "status": { "code": 422, "message": "no" } }),
            )
        });
        let (port_b, _) = serve(server_tls(&ca, &[SVC, "127.0.0.1"], false), Duration::ZERO, deny).await;
        let url = json!({ "clientConfig": { "url": format!("https://127.0.0.1:{port_b}/deny"), "caBundle": BASE64.encode(&ca.pem) } });
        let hooks = vec![hook("a.example.com", &ca, json!({})), hook("b.example.com", &ca, url)];
        let mut warnings = Vec::new();
        let err = caller(port_a)
            .validate_into(&vwc(hooks.clone()), &pod_create(), &mut warnings)
            .await
            .unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(warnings, vec!["first", "second", "why"]);
        assert_eq!(
            caller(port_a).validate(&vwc(hooks[..1].to_vec()), &pod_create()).await.unwrap(),
            vec!["first", "second"]
        );
    }

    #[tokio::test]
    async fn webhook_configurations_are_exempt() {
        let ca = ca("ca");
        let (port, log) = serve(server_tls(&ca, &[SVC], false), Duration::ZERO, allow_all()).await;
        let attrs = Attributes {
            group: "admissionregistration.k8s.io".into(),
            version: "v1".into(),
            kind: "ValidatingWebhookConfiguration".into(),
            resource: "validatingwebhookconfigurations".into(),
            ..Attributes::default()
        };
        let all = json!({ "rules": [{ "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"] }] });
        caller(port).validate(&vwc(vec![hook("v.example.com", &ca, all)]), &attrs).await.unwrap();
        assert_eq!(log.count(), 0);
    }

    #[test]
    fn helpers_match_go_formats() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "2s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(978_307_200), "2001-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_709_210_096), "2024-02-29T12:34:56Z");
        assert_eq!(clean_path(""), "/");
        assert_eq!(clean_path("/a//b/../c/"), "/a/c");
        assert_eq!(split_host_port("[::1]:8443"), Ok(("::1", Some(8443))));
        assert_eq!(join_host_port("::1", 443), "[::1]:443");
        assert!(resolve_loopback("10.0.0.1", 443).is_err());
        assert_eq!(resolve_loopback("localhost", 1), Ok(SocketAddr::from(([127, 0, 0, 1], 1))));
    }
}
