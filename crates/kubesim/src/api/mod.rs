//! The request logic of the API server, independent of HTTP: what create, replace, patch,
//! apply and delete do to an object before the store commits it (metadata rules, status
//! subresource separation, generation, finalizers, CRD schemas, managedFields), and the
//! side effects after (CRD routes, garbage collection, namespace termination).
//!
//! Start at [`Api`]. The verbs live in one module each (`write`, `delete`), with what they
//! share: `admit` (webhooks and admission plugins), `validate` (the checks before a write
//! is stored), `defaults` (built-in defaulting), `crd` (CRDs as objects) and `versions`
//! (what a read answers, the form a write works on and the form it stores: custom resources
//! converted between their CRD's versions). `import` puts a live object into the store as
//! it is, for an overlay.

pub(crate) mod admission;
mod admit;
pub(crate) mod conversion;
pub(crate) mod convert;
mod crd;
mod defaults;
mod delete;
mod graceful;
mod import;
mod rbac;
mod validate;
mod versions;
pub(crate) mod webhook;
mod write;

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::controllers::cleanup::{Role, Task, work_for};
use crate::error::{ApiError, StatusCause};
use crate::kinds::registry::{Registry, ResourceType, StoreKey, crd_types};
use crate::merge::ssa;
use crate::store::{Attribution, Change, EventKind, HistoryLimits, ObjKey, Store, WriteCause};
use ctop_schema as schema;

pub use import::{ImportEvent, Imported};

/// How unknown fields in written objects are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and answer with a `Warning` header (the default).
    #[default]
    Warn,
    /// Reject the request with 400.
    Strict,
}

/// The patch formats the server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

/// Options of one write request.
#[derive(Clone, Debug, Default)]
pub struct WriteOpts {
    /// `fieldManager`; defaults to the User-Agent's prefix.
    pub field_manager: Option<String>,
    /// The client's User-Agent.
    pub user_agent: String,
    /// `dryRun=All`: compute, answer, store nothing.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `force` for server-side apply.
    pub force: bool,
    /// Who asks, as admission webhooks see it.
    pub user: admission::UserInfo,
    /// Who asks, for RBAC checks made while writing (OwnerReferencesPermissionEnforcement);
    /// `None` when the server does not authorize (no `--authz`).
    pub authz_user: Option<crate::auth::authz::User>,
    /// Set by server-side apply itself: the merged object never goes through the decoder,
    /// so a custom resource's non-nullable nulls (those pruning leaves) are validated, not
    /// dropped. The real server's apply patcher unmarshals the configuration straight
    /// into an unstructured object and hands the field manager's result to validation;
    /// only decoding prunes such nulls (apiextensions-apiserver
    /// pkg/apiserver/customresource_handler.go, schemaCoercingDecoder; handlers/patch.go,
    /// applyPatcher).
    pub(crate) from_apply: bool,
    /// What an overlay's request-write log records the write as; `None` for writes that
    /// are not logged (seeds, the workload controllers).
    pub log_as: Option<WriteCause>,
}

impl WriteOpts {
    fn manager(&self) -> String {
        match &self.field_manager {
            Some(m) => m.clone(),
            None => {
                let prefix = self.user_agent.split('/').next().unwrap_or_default();
                if prefix.is_empty() { "unknown".to_owned() } else { prefix.to_owned() }
            }
        }
    }

    /// Who makes the write, for an overlay's request-write log.
    fn attribution(&self) -> Option<Attribution> {
        Some(Attribution {
            cause: self.log_as?,
            field_manager: Some(self.manager()),
            user: Some(self.user.username.clone()).filter(|u| !u.is_empty()),
        })
    }
}

/// `DeleteOptions` as the server uses them.
#[derive(Clone, Debug, Default)]
pub struct DeleteOpts {
    /// `Background`, `Foreground` or `Orphan`.
    pub propagation: Option<String>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `gracePeriodSeconds` (a Pod's deletion is graceful: see `graceful.rs`).
    pub grace_period: Option<i64>,
    /// Who asks, as admission webhooks see it.
    pub user: admission::UserInfo,
    /// What an overlay's request-write log records the deletion as (see
    /// [`WriteOpts::log_as`]).
    pub log_as: Option<WriteCause>,
}

impl DeleteOpts {
    /// Read the JSON body of a DELETE (may be empty).
    pub fn from_body(body: &Value) -> Self {
        let s = |v: &Value| v.as_str().map(str::to_owned);
        Self {
            propagation: s(&body["propagationPolicy"]).or_else(|| match body["orphanDependents"].as_bool() {
                Some(true) => Some("Orphan".into()),
                Some(false) => Some("Background".into()),
                None => None,
            }),
            uid: s(&body["preconditions"]["uid"]),
            resource_version: s(&body["preconditions"]["resourceVersion"]),
            dry_run: body["dryRun"].as_array().is_some_and(|a| a.iter().any(|v| v == "All")),
            grace_period: body["gracePeriodSeconds"].as_i64(),
            user: admission::UserInfo::default(),
            log_as: None,
        }
    }

    /// Who deletes, for an overlay's request-write log.
    fn attribution(&self) -> Option<Attribution> {
        Some(Attribution {
            cause: self.log_as?,
            field_manager: None,
            user: Some(self.user.username.clone()).filter(|u| !u.is_empty()),
        })
    }
}

/// The answer to a write: the object in the served version, and how to answer.
#[derive(Debug)]
pub struct Written {
    /// The object as the client's version shows it.
    pub object: Value,
    /// 201 for creations, 200 otherwise.
    pub code: u16,
    /// `Warning` headers.
    pub warnings: Vec<String>,
}

/// The answer to a delete.
#[derive(Debug)]
pub enum Deleted {
    /// Deletion is pending (finalizers): the object with its deletionTimestamp.
    Pending(Value),
    /// The object is gone; for kinds that return it, the object, else a Success Status.
    Gone(Value),
}

/// An object a write starts from: as stored (its resourceVersion, and what a write that
/// changes nothing compares with) and in the form the write works on ([`Api::working`]).
struct Current {
    stored: Arc<Value>,
    object: Value,
}

/// The API logic over a store and a registry.
pub struct Api {
    /// The objects.
    pub store: Store,
    /// The kinds.
    pub registry: Registry,
    cleanup: mpsc::UnboundedSender<Task>,
    webhooks: parking_lot::RwLock<admission::Caller>,
    /// Where committed changes go when the workload controllers run, and which kinds' they
    /// want (group, kind).
    workloads: std::sync::OnceLock<(mpsc::UnboundedSender<Arc<Change>>, WantsKind)>,
    /// Cluster IPs handed out to Services, when the workload controllers run.
    service_ips: parking_lot::Mutex<Option<crate::controllers::service_ip::ServiceIps>>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("store", &self.store).finish_non_exhaustive()
    }
}

/// Whether a subscriber of the API's changes wants those of a kind (group, kind).
type WantsKind = fn(&str, &str) -> bool;

/// The subresource kubesim's scheduler assigns a Pod's node through, as the real one posts
/// to `pods/binding`: it sets `spec.nodeName`, which a Pod update may not change. Only the
/// in-process controllers write through it; the HTTP server routes no such subresource.
pub(crate) const BINDING: &str = "binding";

const SYSTEM_FIELDS: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
];

fn obj_key(rt: &ResourceType, ns: &str, name: &str) -> ObjKey {
    (if rt.namespaced { ns.to_owned() } else { String::new() }, name.to_owned())
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable_meta(),
    }
}

#[allow(clippy::panic)]
fn unreachable_meta() -> ! {
    // `metadata` was set to an object just above.
    panic!("metadata is an object")
}

/// `obj` without metadata (and without status when `status` is a subresource): what
/// generation counts.
fn spec_part(obj: &Value, ignore_status: bool) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if ignore_status {
            m.remove("status");
        }
    }
    o
}

fn rt_scope(rt: &ResourceType, subresource: Option<&str>) -> ssa::Scope {
    match subresource {
        Some("status") => ssa::Scope::StatusOnly,
        _ if rt.status => ssa::Scope::NoStatus,
        _ => ssa::Scope::All,
    }
}

fn ssa_error(rt: &ResourceType, name: &str, e: ssa::SsaError) -> ApiError {
    match e {
        ssa::SsaError::Conflict { conflicts } => {
            let causes = conflicts
                .iter()
                .map(|c| StatusCause {
                    reason: "FieldManagerConflict".into(),
                    message: c.message.clone(),
                    field: c.field.clone(),
                })
                .collect();
            ApiError::apply_conflict(rt.gr(), name, ssa::conflict_message(&conflicts), causes)
        }
        other => {
            let mut err = ApiError::internal(other.to_string());
            err.code = other.code();
            err.reason = match other.reason() {
                "" => "InternalError",
                r => r,
            };
            err
        }
    }
}

impl Api {
    /// The API over a fresh store with the built-in kinds, keeping a watch history within
    /// `history` (and, for an `overlay`, the uids deleted here and the request-write log);
    /// [`Api::bootstrap`] adds the default namespaces.
    pub fn new(history: HistoryLimits, cleanup: mpsc::UnboundedSender<Task>, overlay: bool) -> Self {
        let store = Store::new(history);
        if overlay {
            store.enable_overlay();
        }
        Self {
            store,
            registry: Registry::with_builtins(),
            cleanup,
            webhooks: parking_lot::RwLock::new(admission::Caller::new(std::collections::HashMap::new())),
            workloads: std::sync::OnceLock::new(),
            service_ips: parking_lot::Mutex::new(None),
        }
    }

    /// Hand the committed changes of the kinds `wanted` (by group and kind) to the workload
    /// controllers through `changes`, and give Services cluster IPs from now on.
    pub(crate) fn enable_workloads(&self, changes: mpsc::UnboundedSender<Arc<Change>>, wanted: WantsKind) {
        let _ = self.workloads.set((changes, wanted));
        *self.service_ips.lock() = Some(crate::controllers::service_ip::ServiceIps::default());
    }

    /// Create the namespaces every cluster has.
    pub async fn bootstrap(&self) -> Result<(), ApiError> {
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            self.seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})).await?;
        }
        Ok(())
    }

    /// Where admission webhooks that name a Service are reached: `"namespace/name"` →
    /// `"host:port"` (there is no cluster network to resolve `name.namespace.svc`).
    pub fn set_webhook_services(&self, hosts: std::collections::HashMap<String, String>) {
        *self.webhooks.write() = admission::Caller::new(hosts);
    }

    /// Seed an object as the system would (bootstrap RBAC, the default ServiceAccount).
    pub async fn seed(&self, body: Value) -> Result<(), ApiError> {
        let api_version = body["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = body["kind"].as_str().unwrap_or_default().to_owned();
        let rt = self
            .registry
            .by_kind(&api_version, &kind)
            .ok_or_else(|| ApiError::bad_request(format!("no kind {kind} in {api_version}")))?;
        let ns = body.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default().to_owned();
        let opts = WriteOpts { field_manager: Some("kube-apiserver".into()), ..WriteOpts::default() };
        self.create(&rt, &ns, body, &opts).await.map(|_| ())
    }

    /// `GET` one object.
    pub async fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        let stored = self.live(rt, ns, name).ok_or_else(|| ApiError::not_found(rt.gr(), name))?;
        Ok(self.served(rt, &stored).await?)
    }

    fn live(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.store.get(&rt.store, &obj_key(rt, ns, name))
    }

    /// The object `stored` as a write in `rt`'s version sees it.
    async fn current(&self, rt: &ResourceType, stored: Arc<Value>) -> Result<Current, ApiError> {
        let object = self.working(rt, &stored).await?;
        Ok(Current { stored, object })
    }

    /// Side effects of a committed change: CRD routes, the workload controllers, and the
    /// cleanup controllers' work (garbage collection, namespaces, CRDs), which carries the
    /// change's request-write log entry.
    fn after_commit(&self, rt: &ResourceType, change: &Arc<Change>) {
        self.after_store(rt, change);
        let role = if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            Role::Crd
        } else if rt.kind == "Namespace" && rt.group.is_empty() {
            Role::Namespace
        } else if let Some(crd) = &rt.crd {
            Role::CustomResource(crd.clone())
        } else {
            Role::Other
        };
        for work in work_for(change, &role) {
            // The collector lives as long as the server; a closed channel only means shutdown.
            let _ = self.cleanup.send(Task { work, because: change.logged });
        }
    }

    /// The side effects of any change to the store, an import's included: CRD routes, the
    /// workload controllers, Service IPs.
    fn after_store(&self, rt: &ResourceType, change: &Arc<Change>) {
        if let Some((tx, wanted)) = self.workloads.get()
            && wanted(&rt.group, &rt.kind)
        {
            let _ = tx.send(change.clone());
        }
        if rt.group.is_empty()
            && rt.kind == "Service"
            && change.kind == EventKind::Deleted
            && let Some(ips) = self.service_ips.lock().as_mut()
        {
            ips.release(&change.object);
        }
        let obj = &change.object;
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            let crd_name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
            match change.kind {
                EventKind::Deleted => {
                    let types = self.registry.all();
                    if let Some(t) =
                        types.iter().find(|t| t.crd.as_ref().is_some_and(|c| c.crd_name == crd_name))
                    {
                        let store: StoreKey = t.store.clone();
                        self.store.drop_table(&store);
                    }
                    self.registry.set_crd(crd_name, Vec::new());
                }
                _ => {
                    let types = crd_types(obj, |schema| match schema {
                        Some(s) => Arc::new(crate::merge::crd_shape::SchemaShape::new(s)),
                        None => Arc::new(crate::merge::shape::MetadataOnlyShape),
                    });
                    self.registry.set_crd(crd_name, types);
                }
            }
        }
    }
}

fn manager<'a>(name: &'a str, rt: &'a ResourceType, sub: Option<&'a str>, now: &'a str) -> ssa::Manager<'a> {
    ssa::Manager { name, api_version: &rt.gv, subresource: sub, time: now }
}

/// The RBAC objects the authorizer reads, straight from the store.
impl crate::auth::authz::RbacSource for Api {
    fn cluster_roles(&self) -> Vec<Value> {
        self.rbac_objects("clusterroles", None)
    }
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.rbac_objects("clusterrolebindings", None)
    }
    fn roles(&self, namespace: &str) -> Vec<Value> {
        self.rbac_objects("roles", Some(namespace))
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        self.rbac_objects("rolebindings", Some(namespace))
    }
}

impl Api {
    fn rbac_objects(&self, plural: &str, ns: Option<&str>) -> Vec<Value> {
        let Some(rt) = self.registry.get("rbac.authorization.k8s.io", "v1", plural) else {
            return Vec::new();
        };
        let (_, table) = self.store.snapshot(&rt.store, false);
        table.iter().filter(|((n, _), _)| ns.is_none_or(|ns| n == ns)).map(|(_, v)| (**v).clone()).collect()
    }
}

/// A schema cause as the Status body carries it.
fn status_cause(c: schema::Cause) -> StatusCause {
    StatusCause { reason: c.reason, message: c.message, field: c.field }
}
