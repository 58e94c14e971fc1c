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
//! - `matchPolicy: Equivalent` (the default): a webhook whose rules do not name the request's
//!   version but name another version of the same resource ([`Attributes::equivalent_versions`],
//!   a CRD's versions in `spec.versions` order) is called in that version, the earliest rule
//!   first: `kind`/`resource` name it, `requestKind`/`requestResource` the request's; the object
//!   and old object are converted to it (the crate's CRD converter, through the conversion
//!   webhook; a failure is 500 `Internal error occurred: ...`), and what a mutating webhook
//!   changed there is converted back when a webhook in another version comes next or the
//!   round ends (a failure answers the converter's text, 500 without reason), as the
//!   dispatchers' versioned attributes do. `matchPolicy: Exact` tries the request's version
//!   only. The public [`Caller::mutate`] and [`Caller::validate`] convert by rewriting
//!   `apiVersion` (a CRD without a conversion webhook).
//!
//! Not covered: `matchConditions` (CEL) are ignored (the webhook is treated as matching);
//! equivalence between resources other than a CRD's versions (the built-in kinds' old groups,
//! e.g. `extensions/v1beta1` Deployments, and their resource renames) is not tried, kubesim
//! serving one version of each built-in kind; an object a mutating webhook patched in an
//! equivalent version is not defaulted with that version's schema before it goes back;
//! patched objects are not re-defaulted or pruned here (the caller should do it); audit
//! annotations are dropped; only loopback addresses are dialled (other hosts fail to connect).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use crate::api::webhook::{Target, unexpected_status};
use crate::kinds::meta::str_at;

mod matching;
mod review;

use matching::{is_exempt, should_call};
use review::{apply_reply, decode_review, denied, review_request, verify_review};

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
    /// The versions of the same resource a webhook with `matchPolicy: Equivalent` (the
    /// default) is called in when its rules name one of them but not `version`, in the
    /// order the server tries them (a CRD's `spec.versions`); empty for the built-in kinds.
    pub equivalent_versions: Vec<String>,
}

/// Converts an object of the request's resource to another of its versions, for a webhook
/// matched through an equivalent version; the error is the converter's text.
pub(crate) trait VersionConverter: Sync {
    /// `object` in `version`.
    fn convert<'a>(
        &'a self,
        object: &'a Value,
        version: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>>;
}

/// What the public entry points convert with: only `apiVersion` changes (a CRD's strategy
/// `None`).
struct RenameOnly;

impl VersionConverter for RenameOnly {
    fn convert<'a>(
        &'a self,
        object: &'a Value,
        version: &'a str,
    ) -> Pin<Box<dyn Future<Output = Result<Value, String>> + Send + 'a>> {
        let mut out = object.clone();
        let group = ctop_core::group_of(str_at(object, "apiVersion"));
        out["apiVersion"] =
            json!(if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") });
        Box::pin(std::future::ready(Ok(out)))
    }
}

/// The object and old object a webhook matched in another version than the request's sees
/// (apiserver `admission.VersionedAttributes`): converted when first needed, and converted
/// back when a webhook changed it and one in another version comes next, or the round ends.
struct Versioned {
    version: String,
    object: Option<Value>,
    old: Option<Value>,
    dirty: bool,
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
    /// An object a mutating webhook changed in an equivalent version could not be converted
    /// back to the request's: the converter's error as is (500, no reason).
    #[error("{message}")]
    Conversion {
        /// The converter's text.
        message: String,
    },
}

impl AdmissionError {
    /// The HTTP status code the API server answers with.
    pub fn code(&self) -> u16 {
        match self {
            AdmissionError::Denied { code, .. } => *code,
            AdmissionError::CallFailed { .. }
            | AdmissionError::Internal { .. }
            | AdmissionError::Conversion { .. } => 500,
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
            AdmissionError::Conversion { .. } => "",
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
            AdmissionError::DryRunUnsupported { .. } | AdmissionError::Conversion { .. } => None,
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

    /// Where webhook Services are reached: `"namespace/name"` → `"host:port"`.
    pub(crate) fn service_hosts(&self) -> &HashMap<String, String> {
        &self.service_hosts
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
        self.mutate_converting(configs, attrs, &RenameOnly, warnings).await
    }

    /// Like [`Caller::mutate_into`], converting the objects with `converter` for webhooks
    /// matched through an equivalent version.
    pub(crate) async fn mutate_converting(
        &self,
        configs: &[Value],
        attrs: &Attributes,
        converter: &dyn VersionConverter,
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
            // Each round is one dispatch of the server's, with versioned attributes of its own.
            let mut versioned: Option<Versioned> = None;
            for hook in &hooks {
                let Some(version) = should_call(hook.spec, attrs, object.as_ref())? else { continue };
                if round == 1 && !reinvoke.contains(&hook.id) {
                    continue;
                }
                let (target, old) = if version == attrs.version {
                    settle(attrs, converter, &mut object, &mut versioned).await?;
                    (&mut object, attrs.old_object.as_ref())
                } else {
                    let Versioned { object, old, .. } =
                        reach(attrs, converter, &mut object, &mut versioned, &version).await?;
                    (object, old.as_ref())
                };
                let outcome = match self.call(hook, attrs, &version, target.as_ref(), old, true).await {
                    Ok(reply) => {
                        warnings.extend(reply.warnings.iter().cloned());
                        apply_reply(hook.name, reply, target)
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
                    if let Some(held) = versioned.as_mut().filter(|v| v.version == version) {
                        held.dirty = true;
                    }
                }
                if str_at(hook.spec, "reinvocationPolicy") == "IfNeeded" {
                    invoked.insert(hook.id);
                }
            }
            settle(attrs, converter, &mut object, &mut versioned).await?;
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
        self.validate_converting(configs, attrs, &RenameOnly, warnings).await
    }

    /// Like [`Caller::validate_into`], converting the objects with `converter` for webhooks
    /// matched through an equivalent version (once per version, before any call).
    pub(crate) async fn validate_converting(
        &self,
        configs: &[Value],
        attrs: &Attributes,
        converter: &dyn VersionConverter,
        warnings: &mut Vec<String>,
    ) -> Result<(), AdmissionError> {
        if is_exempt(attrs) {
            return Ok(());
        }
        let mut selected = Vec::new();
        let mut versions: Vec<Versioned> = Vec::new();
        for hook in collect_hooks(configs) {
            let Some(version) = should_call(hook.spec, attrs, attrs.object.as_ref())? else { continue };
            if version != attrs.version && !versions.iter().any(|v| v.version == version) {
                let mut object = attrs.object.clone();
                let mut held = None;
                reach(attrs, converter, &mut object, &mut held, &version).await?;
                versions.extend(held);
            }
            selected.push((hook, version));
        }
        let calls = selected.iter().map(|(h, version)| {
            let (object, old) = match versions.iter().find(|v| v.version == *version) {
                Some(v) => (v.object.as_ref(), v.old.as_ref()),
                None => (attrs.object.as_ref(), attrs.old_object.as_ref()),
            };
            self.call(h, attrs, version, object, old, false)
        });
        let results = join_all(calls.collect()).await;
        let mut first = None;
        for ((hook, _), result) in selected.iter().zip(results) {
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

    /// Calls one webhook in `version` (the request's, or the equivalent one its rules
    /// matched) with the objects in that version, and verifies its answer.
    async fn call(
        &self,
        hook: &Hook<'_>,
        attrs: &Attributes,
        version: &str,
        object: Option<&Value>,
        old: Option<&Value>,
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
        let review_version = versions
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
        let uid = crate::kinds::meta::new_uid();
        let body = review_request(&uid, review_version, attrs, version, object, old).to_string();
        let cc = hook.spec.get("clientConfig").unwrap_or(&Value::Null);
        let target = Target::new(cc, &self.service_hosts)
            .map_err(|e| Failure::Calling(format!("could not get REST client: {e}")))?;
        let timeout = match hook.spec.get("timeoutSeconds").and_then(Value::as_u64) {
            Some(secs) => Duration::from_secs(secs),
            None => self.default_timeout,
        };
        let answer = target
            .post(timeout, body)
            .await
            .map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
        if !(200..=206).contains(&answer.code) {
            let message = unexpected_status(answer.code, answer.is_text, &answer.body);
            return Err(Failure::Calling(format!("failed to call webhook: {message}")));
        }
        let body = answer.body;
        let review =
            decode_review(&body).map_err(|e| Failure::Calling(format!("failed to call webhook: {e}")))?;
        verify_review(&uid, review_version, mutating, review)
            .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))
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

/// Brings the objects a webhook sees to `version` (not the request's): what `versioned`
/// holds if it is in that version, else `object` and the old object converted, after
/// [`settle`] gave back what a webhook changed in another version. A conversion that fails
/// is the dispatcher's `NewInternalError`.
async fn reach<'a>(
    attrs: &Attributes,
    converter: &dyn VersionConverter,
    object: &mut Option<Value>,
    versioned: &'a mut Option<Versioned>,
    version: &str,
) -> Result<&'a mut Versioned, AdmissionError> {
    if versioned.as_ref().is_none_or(|v| v.version != version) {
        settle(attrs, converter, object, versioned).await?;
        let to = async |o: &Value| {
            converter.convert(o, version).await.map_err(|message| AdmissionError::Internal { message })
        };
        let old = match &attrs.old_object {
            Some(o) => Some(to(o).await?),
            None => None,
        };
        let converted = match object.as_ref() {
            Some(o) => Some(to(o).await?),
            None => None,
        };
        *versioned = Some(Versioned { version: version.to_owned(), object: converted, old, dirty: false });
    }
    versioned.as_mut().ok_or_else(|| AdmissionError::Internal { message: "no versioned attributes".into() })
}

/// Gives the object a webhook changed in another version back to the request's version
/// (the dispatcher's final `Convert`, whose error is the converter's own).
async fn settle(
    attrs: &Attributes,
    converter: &dyn VersionConverter,
    object: &mut Option<Value>,
    versioned: &mut Option<Versioned>,
) -> Result<(), AdmissionError> {
    if let Some(held) = versioned.take()
        && held.dirty
        && let Some(changed) = held.object
    {
        let back = converter.convert(&changed, &attrs.version).await;
        *object = Some(back.map_err(|message| AdmissionError::Conversion { message })?);
    }
    Ok(())
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
