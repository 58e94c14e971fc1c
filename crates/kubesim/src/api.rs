//! The request logic of the API server, independent of HTTP: what create, replace, patch,
//! apply and delete do to an object before the store commits it (metadata rules, status
//! subresource separation, generation, finalizers, CRD schemas, managedFields), and the
//! side effects after (CRD routes, garbage collection, namespace termination).

use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::admission::{self, Operation};
use crate::builtin;
use crate::convert;
use crate::error::{ApiError, StatusCause};
use crate::meta::{self, deleting, finalizers};
use crate::registry::{Registry, ResourceType, StoreKey, crd_types};
use crate::ssa;
use crate::store::{Change, CommitError, EventKind, HistoryLimits, ObjKey, Store, object_rv, uid_of};
use ctop_schema as schema;

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
    pub authz_user: Option<crate::authz::User>,
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
    /// Who asks, as admission webhooks see it.
    pub user: admission::UserInfo,
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
            user: admission::UserInfo::default(),
        }
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

/// The API logic over a store and a registry.
pub struct Api {
    /// The objects.
    pub store: Store,
    /// The kinds.
    pub registry: Registry,
    controllers: mpsc::UnboundedSender<Committed>,
    webhooks: parking_lot::RwLock<admission::Caller>,
    /// Where committed changes go when the workload controllers run.
    workloads: std::sync::OnceLock<mpsc::UnboundedSender<Arc<Change>>>,
    /// Cluster IPs handed out to Services, when the workload controllers run.
    service_ips: parking_lot::Mutex<Option<crate::service_ip::ServiceIps>>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("store", &self.store).finish_non_exhaustive()
    }
}

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

/// A committed change, as the cluster's own controllers receive it (the garbage collector,
/// namespace and CRD cleanup in `gc`): they act on it through the same [`Api`], so the
/// API never calls them.
#[derive(Clone, Debug)]
pub struct Committed {
    /// What changed.
    pub change: Arc<Change>,
    /// What the changed object is to those controllers.
    pub role: Role,
}

/// What kind of object a [`Committed`] change is about, as far as cleanup cares.
#[derive(Clone, Debug)]
pub enum Role {
    /// A CustomResourceDefinition.
    Crd,
    /// A Namespace.
    Namespace,
    /// A custom resource, served by this CRD version.
    CustomResource(Arc<crate::registry::CrdVersion>),
    /// Any other object.
    Other,
}

impl Api {
    /// The API over a fresh store with the built-in kinds, keeping a watch history within
    /// `history`; [`Api::bootstrap`] adds the default namespaces.
    pub fn new(history: HistoryLimits, controllers: mpsc::UnboundedSender<Committed>) -> Self {
        Self {
            store: Store::new(history),
            registry: Registry::with_builtins(),
            controllers,
            webhooks: parking_lot::RwLock::new(admission::Caller::new(std::collections::HashMap::new())),
            workloads: std::sync::OnceLock::new(),
            service_ips: parking_lot::Mutex::new(None),
        }
    }

    /// Hand every committed change to the workload controllers through `changes`, and give
    /// Services cluster IPs from now on.
    pub(crate) fn enable_workloads(&self, changes: mpsc::UnboundedSender<Arc<Change>>) {
        let _ = self.workloads.set(changes);
        *self.service_ips.lock() = Some(crate::service_ip::ServiceIps::default());
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

    fn webhook_configs(&self, kind: &str) -> Vec<Value> {
        let Some(rt) = self.registry.get("admissionregistration.k8s.io", "v1", kind) else {
            return Vec::new();
        };
        let (_, table) = self.store.snapshot(&rt.store, false);
        table.values().map(|v| (**v).clone()).collect()
    }

    fn admission_attrs(
        &self,
        rt: &ResourceType,
        req: &Admit<'_>,
        object: Option<Value>,
    ) -> admission::Attributes {
        let is_ns = rt.group.is_empty() && rt.kind == "Namespace";
        let ns_name = if is_ns { req.name } else { req.ns };
        let namespace_labels = self.store.get("/namespaces", &(String::new(), ns_name.to_owned())).map(|n| {
            n.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        });
        admission::Attributes {
            operation: req.op,
            group: rt.group.clone(),
            version: rt.version.clone(),
            kind: rt.kind.clone(),
            resource: rt.plural.clone(),
            subresource: req.sub.unwrap_or_default().to_owned(),
            namespace: if is_ns { req.name.to_owned() } else { req.ns.to_owned() },
            name: req.name.to_owned(),
            object: object.map(|o| convert::to_served(rt, &o)),
            old_object: req.old.map(|o| convert::to_served(rt, o)),
            dry_run: req.dry_run,
            options: match req.op {
                Operation::Delete => json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}),
                Operation::Update => json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}),
                _ => json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
            },
            user: req.user.clone(),
            namespace_labels,
        }
    }

    /// The create pipeline after defaulting: mutating webhooks, validation, validating
    /// webhooks. Returns the object to store.
    async fn admit_create(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        mut obj: Value,
        opts: &WriteOpts,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let req = Admit {
            op: Operation::Create,
            ns,
            name,
            sub: None,
            old: None,
            dry_run: opts.dry_run,
            user: &opts.user,
        };
        if let Some(mutated) = self.admit_mutate(rt, &req, Some(obj.clone()), warnings).await? {
            obj = mutated;
        }
        self.validate(rt, &mut obj, None, opts, warnings)?;
        self.admit_validate(rt, &req, Some(&obj), warnings).await?;
        self.owner_references_permitted(rt, ns, name, None, &obj, opts)?;
        Ok(obj)
    }

    /// The OwnerReferencesPermissionEnforcement admission plugin (run when the server
    /// authorizes): changing an object's `ownerReferences` on update needs `delete` on the
    /// object, and a reference that newly sets `blockOwnerDeletion` needs `update` on the
    /// owner's `finalizers` subresource.
    fn owner_references_permitted(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        old: Option<&Value>,
        new: &Value,
        opts: &WriteOpts,
    ) -> Result<(), ApiError> {
        let Some(user) = &opts.authz_user else { return Ok(()) };
        let refs = |o: Option<&Value>| -> Vec<Value> {
            o.and_then(|o| o.pointer("/metadata/ownerReferences"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (before, after) = (refs(old), refs(Some(new)));
        if before == after {
            return Ok(());
        }
        let in_ns = |a: crate::authz::Attributes| if rt.namespaced { a.in_namespace(ns) } else { a };
        let forbidden = |why: String| {
            ApiError::forbidden(rt.gr(), name, format!("{} \"{name}\" is forbidden: {why}", rt.gr()))
        };
        if old.is_some() {
            let attrs =
                in_ns(crate::authz::Attributes::resource("delete", &rt.group, &rt.plural).named(name));
            if !crate::authz::authorize(user, &attrs, self) {
                return Err(forbidden(format!(
                    "cannot set an ownerRef on a resource you can't delete: {}",
                    crate::authz::forbidden_message(user, &attrs)
                )));
            }
        }
        let blocking = |r: &Value| r["blockOwnerDeletion"] == json!(true);
        for r in after.iter().filter(|r| blocking(r)) {
            let was_blocking = before.iter().any(|b| b["uid"] == r["uid"] && blocking(b));
            if was_blocking {
                continue;
            }
            let (api_version, kind) =
                (r["apiVersion"].as_str().unwrap_or(""), r["kind"].as_str().unwrap_or(""));
            let Some(owner) = self.registry.by_kind(api_version, kind) else {
                return Err(forbidden(format!(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}"
                )));
            };
            let resource = format!("{}/finalizers", owner.plural);
            let mut attrs = crate::authz::Attributes::resource("update", &owner.group, &owner.plural)
                .with_subresource("finalizers")
                .named(r["name"].as_str().unwrap_or(""));
            if owner.namespaced {
                attrs = attrs.in_namespace(ns);
            }
            if !crate::authz::authorize(user, &attrs, self) {
                return Err(forbidden(format!(
                    "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: {}",
                    crate::authz::forbidden_message(user, &attrs)
                )));
            }
            tracing::trace!(resource, "blockOwnerDeletion permitted");
        }
        Ok(())
    }

    /// Run the mutating admission webhooks; returns the (possibly changed) object.
    async fn admit_mutate(
        &self,
        rt: &ResourceType,
        req: &Admit<'_>,
        object: Option<Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Value>, ApiError> {
        let configs = self.webhook_configs("mutatingwebhookconfigurations");
        if configs.is_empty() {
            return Ok(object);
        }
        let attrs = self.admission_attrs(rt, req, object);
        let caller = self.webhooks.read().clone();
        let out = caller.mutate_into(&configs, &attrs, warnings).await.map_err(admission_error)?;
        Ok(out.map(|o| convert::to_stored(rt, o)))
    }

    /// Run the validating admission webhooks.
    async fn admit_validate(
        &self,
        rt: &ResourceType,
        req: &Admit<'_>,
        object: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let configs = self.webhook_configs("validatingwebhookconfigurations");
        if configs.is_empty() {
            return Ok(());
        }
        let attrs = self.admission_attrs(rt, req, object.cloned());
        let caller = self.webhooks.read().clone();
        caller.validate_into(&configs, &attrs, warnings).await.map_err(admission_error)
    }

    /// `GET` one object.
    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Value, ApiError> {
        self.store
            .get(&rt.store, &obj_key(rt, ns, name))
            .map(|o| convert::to_served(rt, &o))
            .ok_or_else(|| ApiError::not_found(rt.gr(), name))
    }

    fn live(&self, rt: &ResourceType, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.store.get(&rt.store, &obj_key(rt, ns, name))
    }

    fn check_namespace(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
        if !rt.namespaced {
            return Ok(());
        }
        let ns_key = (String::new(), ns.to_owned());
        match self.store.get("/namespaces", &ns_key) {
            None => Err(ApiError::not_found(
                crate::error::GroupResource { group: "", resource: "namespaces" },
                ns,
            )),
            Some(n) if deleting(&n) => Err(ApiError::forbidden(
                rt.gr(),
                name,
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    rt.gr()
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Type, namespace and name checks of a body against the URL.
    fn check_identity(
        &self,
        rt: &ResourceType,
        ns: &str,
        url_name: Option<&str>,
        body: &mut Value,
    ) -> Result<(), ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request("the body of the request must be a JSON object"));
        }
        let av = body["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = body["kind"].as_str().unwrap_or_default().to_owned();
        let expected_av = rt.api_version();
        if !av.is_empty() && av != expected_av {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({expected_av})"
            )));
        }
        if !kind.is_empty() && kind != rt.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        body["apiVersion"] = json!(expected_av);
        body["kind"] = json!(rt.kind);
        let meta = meta_mut(body);
        if rt.namespaced {
            match meta.get("namespace").and_then(Value::as_str) {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => {
                    meta.insert("namespace".into(), json!(ns));
                }
            }
        } else {
            meta.remove("namespace");
        }
        if let Some(url_name) = url_name {
            match meta.get("name").and_then(Value::as_str) {
                Some(n) if !n.is_empty() && n != url_name => {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({n}) does not match the name on the URL ({url_name})"
                    )));
                }
                _ => {
                    meta.insert("name".into(), json!(url_name));
                }
            }
        }
        Ok(())
    }

    /// Kind-specific defaults and normalisation every write goes through.
    fn normalize(rt: &ResourceType, obj: &mut Value) {
        match (rt.group.as_str(), rt.kind.as_str()) {
            ("", "Secret") => {
                if let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|m| m.remove("stringData")) {
                    let data = obj.as_object_mut().map(|m| m.entry("data").or_insert_with(|| json!({})));
                    if let Some(Value::Object(data)) = data {
                        for (k, v) in sd {
                            let s = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                            data.insert(k, json!(base64::engine::general_purpose::STANDARD.encode(s)));
                        }
                    }
                }
                if obj.get("type").is_none_or(Value::is_null) {
                    obj["type"] = json!("Opaque");
                }
            }
            ("", "Pod") if obj.pointer("/status/phase").is_none() => {
                obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
            }
            ("", "Namespace") => {
                if obj.pointer("/spec/finalizers").is_none() {
                    obj["spec"] = json!({"finalizers": ["kubernetes"]});
                }
                if obj.pointer("/status/phase").is_none() {
                    obj["status"] = json!({"phase": "Active"});
                }
            }
            ("", "Service") => {
                let spec = obj.as_object_mut().map(|m| m.entry("spec").or_insert_with(|| json!({})));
                if let Some(Value::Object(spec)) = spec {
                    spec.entry("type").or_insert_with(|| json!("ClusterIP"));
                    spec.entry("sessionAffinity").or_insert_with(|| json!("None"));
                    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
                        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                            p.entry("protocol").or_insert_with(|| json!("TCP"));
                            if let Some(port) = p.get("port").cloned() {
                                p.entry("targetPort").or_insert(port);
                            }
                        }
                    }
                }
            }
            ("apps", _) | ("batch", _) if obj.get("spec").is_some_and(Value::is_object) => {
                workload_defaults(&rt.kind, &mut obj["spec"]);
            }
            _ => {}
        }
        if let Some(anchor) = pod_spec_pointer(&rt.kind)
            && let Some(spec) = obj.pointer_mut(anchor)
        {
            pod_spec_defaults(spec, rt.kind == "Pod", matches!(rt.kind.as_str(), "Job" | "CronJob"));
        }
        if rt.group.is_empty()
            && rt.kind == "Namespace"
            && let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned)
        {
            let meta = meta_mut(obj);
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
    }

    /// Prune, default and validate a custom resource against its schema; metadata rules
    /// for every kind.
    fn validate(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOpts,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut causes = meta::validate_metadata(&obj["metadata"], meta::name_rule(&rt.group, &rt.kind));
        if let Some((schema, crd)) = rt.crd.as_ref().and_then(|c| Some((c.schema.as_ref()?, c))) {
            let removed = schema::prune(obj, schema);
            if !removed.is_empty() {
                match opts.field_validation {
                    FieldValidation::Strict => {
                        let list: Vec<String> =
                            removed.iter().map(|p| format!("unknown field \"{p}\"")).collect();
                        return Err(ApiError::bad_request(format!(
                            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                            list.join(", "),
                            kind = rt.kind,
                            version = rt.version,
                        )));
                    }
                    FieldValidation::Warn => {
                        warnings.extend(removed.iter().map(|p| format!("unknown field \"{p}\"")));
                    }
                    FieldValidation::Ignore => {}
                }
            }
            schema::drop_nulls(obj, schema);
            schema::apply_defaults(obj, schema);
            let found = match old {
                Some(old) => schema::validate_update(obj, old, schema),
                None => schema::validate(obj, schema),
            };
            causes.extend(found.into_iter().map(status_cause));
            // x-kubernetes-validations run after the OpenAPI validation, and not at all
            // when it found a type, required, enum or size error (registry/customresource/strategy.go).
            if !crd.cel.is_empty() {
                match schema::CelRules::blocking_cause(causes.iter().map(|c| c.reason.as_str())) {
                    Some(c) => causes.push(status_cause(c)),
                    None => {
                        let cel = crd.cel.validate(obj, old);
                        causes.extend(cel.causes.into_iter().map(status_cause));
                        warnings.extend(cel.warnings);
                    }
                }
            }
        }
        if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
            if let Some(message) = ctop_schema::decode_error(obj) {
                return Err(ApiError::bad_request(message));
            }
            causes.extend(validate_crd(obj));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(rt.gr(), &rt.kind_group(), &name, causes))
        }
    }

    /// `POST`.
    pub async fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        mut body: Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let mut warnings = builtin::writes::decode_body(rt, &mut body, opts.field_validation)?;
        self.check_identity(rt, ns, None, &mut body)?;
        body = convert::to_stored(rt, body);
        let meta = meta_mut(&mut body);
        for f in SYSTEM_FIELDS {
            meta.remove(*f);
        }
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    // As the API server's name generator: a base over 58 characters is cut
                    // there, so that base and suffix fit a 63-character label.
                    let base = prefix.get(..58).unwrap_or(prefix);
                    let n = format!("{base}{}", meta::name_suffix());
                    meta.insert("name".into(), json!(n));
                    n
                }
                _ => {
                    return Err(ApiError::invalid_field(
                        rt.gr(),
                        &rt.kind_group(),
                        "",
                        "FieldValueRequired",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    ));
                }
            },
        };
        self.check_namespace(rt, ns, &name)?;
        if let Some(crd) = &rt.crd
            && self.crd_terminating(&crd.crd_name)
        {
            let mut e = ApiError::method_not_allowed("create");
            e.message = "create not allowed while custom resource definition is terminating".to_owned();
            return Err(e);
        }
        if rt.status
            && let Some(m) = body.as_object_mut()
        {
            m.remove("status");
        }
        Self::normalize(rt, &mut body);
        body = self.admit_create(rt, ns, &name, body, opts, &mut warnings).await?;
        if rt.group.is_empty()
            && rt.kind == "Service"
            && !opts.dry_run
            && let Some(ips) = self.service_ips.lock().as_mut()
        {
            ips.allocate(&mut body).map_err(|message| {
                ApiError::invalid_field(
                    rt.gr(),
                    &rt.kind_group(),
                    &name,
                    "FieldValueInvalid",
                    "spec.clusterIPs",
                    &message,
                )
            })?;
        }
        let meta = meta_mut(&mut body);
        meta.insert("uid".into(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".into(), json!(meta::now()));
        if rt.generation {
            meta.insert("generation".into(), json!(1));
        }
        if rt.kind == "CustomResourceDefinition" {
            establish_crd(&mut body);
            meta_mut(&mut body)
                .insert("finalizers".into(), json!(["customresourcecleanup.apiextensions.k8s.io"]));
        }
        let mgr = opts.manager();
        let now = meta::now();
        let body =
            ssa::update(None, body, &manager(&mgr, rt, None, &now), rt.shape.as_ref(), ssa::Scope::All)
                .map_err(|e| ssa_error(rt, &name, e))?;
        self.commit_create(rt, ns, &name, body, opts.dry_run, warnings)
    }

    fn commit_create(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        body: Value,
        dry_run: bool,
        warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        if dry_run {
            return Ok(Written { object: convert::to_served(rt, &body), code: 201, warnings });
        }
        let change = self
            .store
            .create(&rt.store, obj_key(rt, ns, name), body)
            .map_err(|_| ApiError::already_exists(rt.gr(), name))?;
        self.after_commit(rt, &change);
        Ok(Written { object: convert::to_served(rt, &change.object), code: 201, warnings })
    }

    fn crd_terminating(&self, crd_name: &str) -> bool {
        self.store
            .get("apiextensions.k8s.io/customresourcedefinitions", &(String::new(), crd_name.to_owned()))
            .is_some_and(|c| deleting(&c))
    }

    /// `PUT` on an object or its `/status`.
    pub async fn replace(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        mut body: Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let warnings = builtin::writes::decode_body(rt, &mut body, opts.field_validation)?;
        self.check_identity(rt, ns, Some(name), &mut body)?;
        body = convert::to_stored(rt, body);
        let live = self.live(rt, ns, name).ok_or_else(|| ApiError::not_found(rt.gr(), name))?;
        match body.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|rv| !rv.is_empty()) {
            Some(rv) if rv.parse::<u64>().ok() != Some(object_rv(&live)) => {
                return Err(ApiError::stale(rt.gr(), name));
            }
            Some(_) => {}
            None if rt.crd.is_some() => {
                return Err(ApiError::invalid_field(
                    rt.gr(),
                    &rt.kind_group(),
                    name,
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                ));
            }
            _ => {}
        }
        let mgr = opts.manager();
        self.write_over(rt, ns, name, sub, &live, body, opts, &mgr, true, warnings).await
    }

    /// The shared tail of PUT and PATCH: carry system fields over from `live`, separate
    /// spec and status, track managedFields, validate, commit.
    #[allow(clippy::too_many_arguments)]
    async fn write_over(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        live: &Value,
        mut new: Value,
        opts: &WriteOpts,
        mgr: &str,
        track: bool,
        mut warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        // System metadata always comes from the live object.
        {
            let live_meta = live["metadata"].as_object().cloned().unwrap_or_default();
            let meta = meta_mut(&mut new);
            for f in SYSTEM_FIELDS.iter().chain(["name", "namespace"].iter()) {
                match live_meta.get(*f) {
                    Some(v) => meta.insert((*f).to_owned(), v.clone()),
                    None => meta.remove(*f),
                };
            }
        }
        match sub {
            Some("status") => {
                // Only status changes through /status; metadata changes other than
                // managedFields are ignored.
                let mut merged = live.clone();
                merged["status"] = new.get("status").cloned().unwrap_or(Value::Null);
                if merged["status"].is_null()
                    && let Some(m) = merged.as_object_mut()
                {
                    m.remove("status");
                }
                if let Some(mf) = new.pointer("/metadata/managedFields") {
                    merged["metadata"]["managedFields"] = mf.clone();
                }
                new = merged;
            }
            _ if rt.status => match live.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            },
            _ => {}
        }
        Self::normalize(rt, &mut new);
        let req = Admit {
            op: Operation::Update,
            ns,
            name,
            sub,
            old: Some(live),
            dry_run: opts.dry_run,
            user: &opts.user,
        };
        if let Some(mutated) = self.admit_mutate(rt, &req, Some(new.clone()), &mut warnings).await? {
            new = mutated;
        }
        self.validate(rt, &mut new, Some(live), opts, &mut warnings)?;
        self.admit_validate(rt, &req, Some(&new), &mut warnings).await?;
        self.owner_references_permitted(rt, ns, name, Some(live), &new, opts)?;
        if deleting(live) {
            let before = finalizers(live);
            let added: Vec<String> = finalizers(&new).into_iter().filter(|f| !before.contains(f)).collect();
            if !added.is_empty() {
                let list = added.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ");
                return Err(ApiError::invalid_field(
                    rt.gr(),
                    &rt.kind_group(),
                    name,
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    &format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
                    ),
                ));
            }
        }
        if rt.generation && spec_part(live, rt.status) != spec_part(&new, rt.status) {
            let g = live.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
            meta_mut(&mut new).insert("generation".into(), json!(g + 1));
        }
        if rt.kind == "CustomResourceDefinition" && sub.is_none() {
            if let Some(status) = live.get("status") {
                new["status"] = status.clone();
            }
            establish_crd(&mut new);
        }
        if track {
            let now = meta::now();
            new = ssa::update(
                Some(live),
                new,
                &manager(mgr, rt, sub, &now),
                rt.shape.as_ref(),
                rt_scope(rt, sub),
            )
            .map_err(|e| ssa_error(rt, name, e))?;
        }
        if new == *live {
            return Ok(Written { object: convert::to_served(rt, live), code: 200, warnings });
        }
        if opts.dry_run {
            return Ok(Written { object: convert::to_served(rt, &new), code: 200, warnings });
        }
        let key = obj_key(rt, ns, name);
        let expected = object_rv(live);
        let change = if deleting(&new) && finalizers(&new).is_empty() {
            self.store.remove(&rt.store, &key, expected)
        } else {
            self.store.update(&rt.store, &key, expected, new)
        };
        let change = change.map_err(|e| match e {
            CommitError::Missing => ApiError::not_found(rt.gr(), name),
            _ => ApiError::stale(rt.gr(), name),
        })?;
        self.after_commit(rt, &change);
        Ok(Written { object: convert::to_served(rt, &change.object), code: 200, warnings })
    }

    /// `PATCH` in any of the four formats, on an object or its `/status`. Apply creates
    /// the object when it is missing.
    #[allow(clippy::too_many_arguments)]
    pub async fn patch(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        kind: PatchKind,
        body: &Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        if kind == PatchKind::Strategic && rt.crd.is_some() {
            return Err(ApiError::unsupported_patch_type());
        }
        if kind == PatchKind::Apply && opts.field_manager.as_deref().is_none_or(str::is_empty) {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml requires fieldManager parameter",
            ));
        }
        // Optimistic retries when another writer commits between our read and our write.
        for _ in 0..16 {
            let live = self.live(rt, ns, name);
            let result = match (kind, live) {
                (PatchKind::Apply, None) => {
                    if sub.is_some() {
                        return Err(ApiError::not_found(rt.gr(), name));
                    }
                    self.apply_create(rt, ns, name, body, opts).await
                }
                (_, None) => return Err(ApiError::not_found(rt.gr(), name)),
                (PatchKind::Apply, Some(live)) => {
                    self.apply_update(rt, ns, name, sub, &live, body, opts).await
                }
                (_, Some(live)) => {
                    let served = convert::to_served(rt, &live);
                    let mut patched = apply_patch(rt, &served, kind, body)?;
                    let warnings =
                        builtin::writes::check_patched(rt, kind, body, &mut patched, opts.field_validation)?;
                    if let Some(rv) = body.pointer("/metadata/resourceVersion").and_then(Value::as_str)
                        && rv.parse::<u64>().ok() != Some(object_rv(&live))
                    {
                        return Err(ApiError::stale(rt.gr(), name));
                    }
                    self.check_identity(rt, ns, Some(name), &mut patched)?;
                    let patched = convert::to_stored(rt, patched);
                    let mgr = opts.manager();
                    self.write_over(rt, ns, name, sub, &live, patched, opts, &mgr, true, warnings).await
                }
            };
            match result {
                Err(e) if e.code == 409 && e.reason == "Conflict" && e.causes.is_empty() => continue,
                Err(e) if e.code == 409 && e.reason == "AlreadyExists" && kind == PatchKind::Apply => {
                    continue;
                }
                other => return other,
            }
        }
        Err(ApiError::stale(rt.gr(), name))
    }

    fn apply_config(&self, rt: &ResourceType, ns: &str, name: &str, body: &Value) -> Result<Value, ApiError> {
        let mut config = body.clone();
        if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        self.check_identity(rt, ns, Some(name), &mut config)?;
        builtin::writes::check_apply(rt, &config)?;
        let mut config = convert::to_stored(rt, config);
        Self::normalize_apply(rt, &mut config);
        Ok(config)
    }

    /// Defaults on key fields must hold in an apply configuration too, or list-map keys
    /// would not match the stored items.
    fn normalize_apply(rt: &ResourceType, config: &mut Value) {
        if rt.kind == "Service" && rt.group.is_empty() {
            for p in config.pointer_mut("/spec/ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = p.as_object_mut() {
                    p.entry("protocol").or_insert_with(|| json!("TCP"));
                }
            }
        }
        if let Some(anchor) = pod_spec_pointer(&rt.kind)
            && let Some(spec) = config.pointer_mut(anchor)
        {
            for list in ["containers", "initContainers"] {
                for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                    for p in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                        if let Some(p) = p.as_object_mut() {
                            p.entry("protocol").or_insert_with(|| json!("TCP"));
                        }
                    }
                }
            }
        }
    }

    async fn apply_create(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        body: &Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let config = self.apply_config(rt, ns, name, body)?;
        self.check_namespace(rt, ns, name)?;
        let mgr = opts.manager();
        let now = meta::now();
        let scope = if rt.status { ssa::Scope::NoStatus } else { ssa::Scope::All };
        let mut obj =
            ssa::apply(None, &config, &manager(&mgr, rt, None, &now), opts.force, rt.shape.as_ref(), scope)
                .map_err(|e| ssa_error(rt, name, e))?;
        if rt.status
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        Self::normalize(rt, &mut obj);
        let mut warnings = Vec::new();
        obj = self.admit_create(rt, ns, name, obj, opts, &mut warnings).await?;
        let meta = meta_mut(&mut obj);
        for f in SYSTEM_FIELDS {
            meta.remove(*f);
        }
        meta.insert("uid".into(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".into(), json!(now));
        if rt.generation {
            meta.insert("generation".into(), json!(1));
        }
        if rt.kind == "CustomResourceDefinition" {
            establish_crd(&mut obj);
            meta_mut(&mut obj)
                .insert("finalizers".into(), json!(["customresourcecleanup.apiextensions.k8s.io"]));
        }
        self.commit_create(rt, ns, name, obj, opts.dry_run, warnings)
    }

    #[allow(clippy::too_many_arguments)]
    async fn apply_update(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        live: &Value,
        body: &Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let config = self.apply_config(rt, ns, name, body)?;
        let mgr = opts.manager();
        let now = meta::now();
        let new = ssa::apply(
            Some(live),
            &config,
            &manager(&mgr, rt, sub, &now),
            opts.force,
            rt.shape.as_ref(),
            rt_scope(rt, sub),
        )
        .map_err(|e| ssa_error(rt, name, e))?;
        self.write_over(rt, ns, name, sub, live, new, opts, &mgr, false, Vec::new()).await
    }

    /// `DELETE`.
    pub async fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<Deleted, ApiError> {
        for _ in 0..16 {
            let live = self.live(rt, ns, name).ok_or_else(|| ApiError::not_found(rt.gr(), name))?;
            if let Some(uid) = &opts.uid {
                let have = uid_of(&live).unwrap_or_default();
                if uid != have {
                    return Err(ApiError::conflict(
                        rt.gr(),
                        name,
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                        ),
                    ));
                }
            }
            if let Some(rv) = &opts.resource_version {
                let have = object_rv(&live).to_string();
                if *rv != have {
                    return Err(ApiError::conflict(
                        rt.gr(),
                        name,
                        &format!(
                            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}"
                        ),
                    ));
                }
            }
            let req = Admit {
                op: Operation::Delete,
                ns,
                name,
                sub: None,
                old: Some(&live),
                dry_run: opts.dry_run,
                user: &opts.user,
            };
            let mut warnings = Vec::new();
            self.admit_mutate(rt, &req, None, &mut warnings).await?;
            self.admit_validate(rt, &req, None, &mut warnings).await?;
            let mut fins = finalizers(&live);
            let policy_fin = match opts.propagation.as_deref() {
                Some("Foreground") => Some("foregroundDeletion"),
                Some("Orphan") => Some("orphan"),
                _ => None,
            };
            let is_ns = rt.group.is_empty() && rt.kind == "Namespace";
            let ns_pending = is_ns
                && live.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
            if let Some(f) = policy_fin
                && !fins.iter().any(|x| x == f)
            {
                fins.push(f.to_owned());
            }
            let key = obj_key(rt, ns, name);
            if fins.is_empty() && !ns_pending {
                if opts.dry_run {
                    return Ok(Deleted::Gone(convert::to_served(rt, &live)));
                }
                match self.store.remove(&rt.store, &key, object_rv(&live)) {
                    Ok(change) => {
                        self.after_commit(rt, &change);
                        let body = if returns_deleted_object(rt) {
                            convert::to_served(rt, &change.object)
                        } else {
                            let mut details = json!({"name": name, "kind": rt.plural, "uid": uid_of(&live)});
                            if !rt.group.is_empty() {
                                details["group"] = json!(rt.group);
                            }
                            json!({
                                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                "details": details,
                            })
                        };
                        return Ok(Deleted::Gone(body));
                    }
                    Err(CommitError::Missing) => return Err(ApiError::not_found(rt.gr(), name)),
                    Err(_) => continue,
                }
            }
            let mut new = (*live).clone();
            let meta = meta_mut(&mut new);
            meta.insert("finalizers".into(), json!(fins));
            if !deleting(&live) {
                meta.insert("deletionTimestamp".into(), json!(meta::now()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                if rt.generation {
                    let g = meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
                    meta.insert("generation".into(), json!(g + 1));
                }
            }
            if is_ns {
                new["status"]["phase"] = json!("Terminating");
            }
            if new == *live {
                return Ok(Deleted::Pending(convert::to_served(rt, &live)));
            }
            if opts.dry_run {
                return Ok(Deleted::Pending(convert::to_served(rt, &new)));
            }
            match self.store.update(&rt.store, &key, object_rv(&live), new) {
                Ok(change) => {
                    self.after_commit(rt, &change);
                    return Ok(Deleted::Pending(convert::to_served(rt, &change.object)));
                }
                Err(CommitError::Missing) => return Err(ApiError::not_found(rt.gr(), name)),
                Err(_) => continue,
            }
        }
        Err(ApiError::stale(rt.gr(), name))
    }

    /// `PUT /api/v1/namespaces/{name}/finalize`: replace `spec.finalizers`.
    pub fn finalize_namespace(&self, name: &str, body: &Value) -> Result<Written, ApiError> {
        let rt = self.registry.get("", "v1", "namespaces").ok_or_else(ApiError::no_route)?;
        let live = self.live(&rt, "", name).ok_or_else(|| ApiError::not_found(rt.gr(), name))?;
        let mut new = (*live).clone();
        new["spec"]["finalizers"] = body.pointer("/spec/finalizers").cloned().unwrap_or_else(|| json!([]));
        let key = obj_key(&rt, "", name);
        let empty = new.pointer("/spec/finalizers").and_then(Value::as_array).is_none_or(Vec::is_empty);
        let change = if deleting(&new) && empty && finalizers(&new).is_empty() {
            self.store.remove(&rt.store, &key, object_rv(&live))
        } else {
            self.store.update(&rt.store, &key, object_rv(&live), new)
        }
        .map_err(|_| ApiError::stale(rt.gr(), name))?;
        self.after_commit(&rt, &change);
        Ok(Written { object: convert::to_served(&rt, &change.object), code: 200, warnings: Vec::new() })
    }

    /// Side effects of a committed change: CRD routes, garbage collection, namespaces.
    fn after_commit(&self, rt: &ResourceType, change: &Arc<Change>) {
        if let Some(tx) = self.workloads.get()
            && crate::workloads::watches(&rt.group, &rt.kind)
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
                        Some(s) => Arc::new(crate::crd_shape::SchemaShape::new(s)),
                        None => Arc::new(crate::shape::MetadataOnlyShape),
                    });
                    self.registry.set_crd(crd_name, types);
                }
            }
        }
        let role = if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            Role::Crd
        } else if rt.kind == "Namespace" && rt.group.is_empty() {
            Role::Namespace
        } else if let Some(crd) = &rt.crd {
            Role::CustomResource(crd.clone())
        } else {
            Role::Other
        };
        // The controllers live as long as the server; a closed channel only means shutdown.
        let _ = self.controllers.send(Committed { change: change.clone(), role });
    }
}

/// What admission needs to know about a request besides the objects.
struct Admit<'a> {
    op: Operation,
    ns: &'a str,
    name: &'a str,
    sub: Option<&'a str>,
    old: Option<&'a Value>,
    dry_run: bool,
    user: &'a admission::UserInfo,
}

fn admission_error(e: admission::AdmissionError) -> ApiError {
    let status = e.status();
    let mut err = ApiError::internal(status["message"].as_str().unwrap_or_default());
    err.code = e.code();
    err.reason = match status["reason"].as_str().unwrap_or_default() {
        "" => "",
        "Forbidden" => "Forbidden",
        "BadRequest" => "BadRequest",
        "NotFound" => "NotFound",
        "Invalid" => "Invalid",
        "InternalError" => "InternalError",
        "Conflict" => "Conflict",
        "TooManyRequests" => "TooManyRequests",
        _ => "",
    };
    err
}

fn manager<'a>(name: &'a str, rt: &'a ResourceType, sub: Option<&'a str>, now: &'a str) -> ssa::Manager<'a> {
    ssa::Manager { name, api_version: &rt.gv, subresource: sub, time: now }
}

/// Whether `DELETE` answers with the deleted object rather than a `Status`: custom
/// resources and the built-in kinds whose storage says so (`ReturnDeletedObject` in
/// kube-apiserver's registry).
fn returns_deleted_object(rt: &ResourceType) -> bool {
    rt.crd.is_some()
        || matches!(
            (rt.group.as_str(), rt.kind.as_str()),
            (
                "",
                "Pod"
                    | "Service"
                    | "PersistentVolume"
                    | "PersistentVolumeClaim"
                    | "ServiceAccount"
                    | "ResourceQuota"
            ) | ("storage.k8s.io", "StorageClass")
        )
}

/// The API server's defaults for the workload kinds' specs (`pkg/apis/apps/v1` and
/// `pkg/apis/batch/v1` defaulting), set where absent.
fn workload_defaults(kind: &str, spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else { return };
    let mut default = |key: &str, value: Value| {
        spec.entry(key).or_insert(value);
    };
    match kind {
        "Deployment" => {
            default("replicas", json!(1));
            default(
                "strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            );
            default("revisionHistoryLimit", json!(10));
            default("progressDeadlineSeconds", json!(600));
        }
        "ReplicaSet" => default("replicas", json!(1)),
        "StatefulSet" => {
            default("replicas", json!(1));
            default("podManagementPolicy", json!("OrderedReady"));
            default("updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
            default("revisionHistoryLimit", json!(10));
            default(
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
        }
        "DaemonSet" => {
            default(
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            default("revisionHistoryLimit", json!(10));
        }
        "Job" => {
            default("parallelism", json!(1));
            default("completions", json!(1));
            default("backoffLimit", json!(6));
            default("completionMode", json!("NonIndexed"));
            default("suspend", json!(false));
            default("podReplacementPolicy", json!("TerminatingOrFailed"));
        }
        "CronJob" => {
            default("concurrencyPolicy", json!("Allow"));
            default("suspend", json!(false));
            default("successfulJobsHistoryLimit", json!(3));
            default("failedJobsHistoryLimit", json!(1));
        }
        _ => {}
    }
}

/// The API server's defaults of a PodSpec (`SetDefaults_PodSpec`, the container defaults)
/// and, for a Pod itself, of the admission plugins every cluster runs (ServiceAccount,
/// Priority, DefaultTolerationSeconds). A Job's template keeps its `restartPolicy` as
/// written (the default, Always, is invalid there).
fn pod_spec_defaults(spec: &mut Value, pod: bool, job: bool) {
    let Some(spec) = spec.as_object_mut() else { return };
    for list in ["containers", "initContainers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(c) = c.as_object_mut() else { continue };
            for p in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = p.as_object_mut() {
                    p.entry("protocol").or_insert_with(|| json!("TCP"));
                }
            }
            let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
            // The tag after the last `/`; a digest pins the image.
            let tail = image.rsplit('/').next().unwrap_or_default();
            let latest = !image.contains('@') && tail.split_once(':').is_none_or(|(_, tag)| tag == "latest");
            let pull = if latest { "Always" } else { "IfNotPresent" };
            c.entry("imagePullPolicy").or_insert_with(|| json!(pull));
            c.entry("terminationMessagePath").or_insert_with(|| json!("/dev/termination-log"));
            c.entry("terminationMessagePolicy").or_insert_with(|| json!("File"));
            c.entry("resources").or_insert_with(|| json!({}));
        }
    }
    if !job {
        spec.entry("restartPolicy").or_insert_with(|| json!("Always"));
    }
    spec.entry("dnsPolicy").or_insert_with(|| json!("ClusterFirst"));
    spec.entry("terminationGracePeriodSeconds").or_insert_with(|| json!(30));
    spec.entry("schedulerName").or_insert_with(|| json!("default-scheduler"));
    spec.entry("securityContext").or_insert_with(|| json!({}));
    if pod {
        spec.entry("enableServiceLinks").or_insert_with(|| json!(true));
        spec.entry("priority").or_insert_with(|| json!(0));
        spec.entry("preemptionPolicy").or_insert_with(|| json!("PreemptLowerPriority"));
        let account = spec.get("serviceAccountName").cloned().unwrap_or_else(|| json!("default"));
        spec.entry("serviceAccountName").or_insert_with(|| account.clone());
        spec.entry("serviceAccount").or_insert(account);
        spec.entry("tolerations").or_insert_with(|| {
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        });
    }
}

/// Where a kind keeps its PodSpec, as a JSON pointer.
fn pod_spec_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec"),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => Some("/spec/template/spec"),
        "CronJob" => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

/// Apply a merge, JSON or strategic patch to the served form of an object.
fn apply_patch(rt: &ResourceType, served: &Value, kind: PatchKind, body: &Value) -> Result<Value, ApiError> {
    let mut doc = served.clone();
    match kind {
        PatchKind::Merge => {
            if !body.is_object() {
                return Err(ApiError::bad_request(
                    "json: cannot unmarshal array into Go value of type map[string]interface {}",
                ));
            }
            json_patch::merge(&mut doc, body);
        }
        PatchKind::Json => {
            let ops = body.as_array().ok_or_else(|| {
                ApiError::bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
            })?;
            // A `test` for null passes on a missing path, as in the API server.
            let ops: Vec<Value> = ops
                .iter()
                .filter(|op| {
                    !(op["op"] == "test"
                        && op["value"].is_null()
                        && op["path"].as_str().is_some_and(|p| doc.pointer(p).is_none()))
                })
                .cloned()
                .collect();
            let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).map_err(|e| {
                ApiError::bad_request(format!(
                    "the server rejected our request due to an error in our request: {e}"
                ))
            })?;
            json_patch::patch(&mut doc, &patch).map_err(|e| {
                tracing::debug!(error = %e, "JSON patch failed");
                ApiError::rejected()
            })?;
        }
        PatchKind::Strategic => {
            doc = crate::smp::strategic_merge(&doc, body, rt.shape.as_ref()).map_err(|e| {
                let mut err = ApiError::internal(e.status_message());
                err.code = e.code();
                err.reason = match e.reason() {
                    "" => "InternalError",
                    r => r,
                };
                err
            })?;
        }
        PatchKind::Apply => {}
    }
    Ok(doc)
}

/// Fill a CRD's status: accepted names, stored versions, Established.
fn establish_crd(crd: &mut Value) {
    let mut names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let kind = names["kind"].as_str().unwrap_or_default().to_owned();
    if names.get("singular").is_none() {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names.get("listKind").is_none() {
        names["listKind"] = json!(format!("{kind}List"));
    }
    crd["spec"]["names"] = names.clone();
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .map(|v| v["name"].clone())
        .collect();
    let mut stored: Vec<Value> =
        crd.pointer("/status/storedVersions").and_then(Value::as_array).cloned().unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let previous: Vec<Value> =
        crd.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let since = |t: &str| {
        previous
            .iter()
            .find(|c| c["type"] == t && c["status"] == "True")
            .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned))
            .unwrap_or_else(meta::now)
    };
    let terminating = deleting(crd);
    let mut conditions = vec![
        json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")}),
        json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": since("Established")}),
    ];
    if terminating {
        conditions.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress", "lastTransitionTime": since("Terminating")}));
    }
    crd["status"] = json!({"acceptedNames": names, "storedVersions": stored, "conditions": conditions});
}

/// The checks the API server makes on a CRD body.
fn validate_crd(crd: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let cause = |reason: &str, field: &str, message: String| StatusCause {
        reason: reason.into(),
        message,
        field: field.into(),
    };
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec.pointer("/names/plural").and_then(Value::as_str).unwrap_or_default();
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if group.is_empty() {
        causes.push(cause("FieldValueRequired", "spec.group", "Required value".into()));
    } else if !group.contains('.') {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.group",
            format!("Invalid value: {}: should be a domain with at least one dot", json!(group)),
        ));
    }
    if plural.is_empty() {
        causes.push(cause("FieldValueRequired", "spec.names.plural", "Required value".into()));
    }
    if spec.pointer("/names/kind").and_then(Value::as_str).is_none_or(str::is_empty) {
        causes.push(cause("FieldValueRequired", "spec.names.kind", "Required value".into()));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(cause(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: {}: must be spec.names.plural+\".\"+spec.group", json!(name)),
        ));
    }
    match spec["scope"].as_str() {
        Some("Namespaced" | "Cluster") => {}
        Some(other) => causes.push(cause(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"", json!(other)),
        )),
        None => causes.push(cause("FieldValueRequired", "spec.scope", "Required value".into())),
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version".into(),
        ));
    } else if versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).count() != 1 {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.versions",
            format!(
                "Invalid value: {}: must have exactly one version marked as storage version",
                json!(versions)
            ),
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        let base = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match v.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => {
                causes.push(cause("FieldValueRequired", &base, "Required value: schemas are required".into()))
            }
            Some(s) => causes.extend(schema::check_structural(s, &base).into_iter().map(status_cause)),
        }
    }
    causes
}

/// The RBAC objects the authorizer reads, straight from the store.
impl crate::authz::RbacSource for Api {
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
