//! The applier: one pass of "make the children of this owner exactly this set".

use std::collections::BTreeSet;

use foldhash::{HashMap, HashSet, HashSetExt as _};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Patch, PatchParams};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::adopt::{ChildError, Desired};
use crate::answer::Answer;
use crate::applyset::{
    ADDITIONAL_NAMESPACES_ANNOTATION, CONTAINS_GROUP_KINDS_ANNOTATION, DEFAULT_TOOLING, GroupKind, ID_LABEL,
    TOOLING_ANNOTATION, applyset_id, join, parse_group_kinds, parse_list, tool_name,
};
use crate::cache::ChildCache;
use crate::discovery::{Discovery, Resolved, code};
use crate::error::{ApplyError, ChildFailure, api_error_text};
use crate::fingerprint::Fingerprint;
use crate::memory::{OwnerMemory, Tie};
use crate::object::{ChildRef, Key, ObjectInfo, Owner};
use crate::prepare::Claim;
use crate::status::StatusWriter;

/// How an [`Applier`] writes.
///
/// ```
/// let config = ctop_applier::ApplierConfig { force: false, ..ctop_applier::ApplierConfig::new("my-operator") };
/// assert_eq!(config.field_manager, "my-operator");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplierConfig {
    /// The server-side apply field manager of every write (default `ctop`). Use one name
    /// per controller: fields a manager stops applying are removed by the API server.
    pub field_manager: String,
    /// Take over fields other managers own instead of failing with `409 Conflict`
    /// (default `true`, what controllers normally want: the owner's desired state wins).
    pub force: bool,
    /// The `applyset.kubernetes.io/tooling` value written on owners (default
    /// `ctop/v<version>`). An owner whose tooling names another tool is refused.
    pub tooling: String,
    /// Labels every child carries besides the ApplySet's, over the desired object's own
    /// (a sharded operator's member label; default none).
    pub child_labels: Vec<(String, String)>,
}

impl Default for ApplierConfig {
    fn default() -> Self {
        Self {
            field_manager: "ctop".to_owned(),
            force: true,
            tooling: DEFAULT_TOOLING.to_owned(),
            child_labels: Vec::new(),
        }
    }
}

impl ApplierConfig {
    /// The defaults with another field manager.
    #[must_use]
    pub fn new(field_manager: impl Into<String>) -> Self {
        Self { field_manager: field_manager.into(), ..Self::default() }
    }
}

/// What one [`Applier::apply`] pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Children server-side applied in this pass.
    pub applied: Vec<ChildRef>,
    /// Children not written because neither their desired content nor the live object
    /// changed since this applier last applied them.
    pub skipped: Vec<ChildRef>,
    /// Former children deleted because they left the desired set.
    pub pruned: Vec<ChildRef>,
    /// Existing objects taken over as children (they were marked [`Desired::adopt`]).
    pub adopted: Vec<ChildRef>,
    /// Former children that left the desired set but opted out of pruning with
    /// `ctop.dev/prune: "false"`; they stay.
    pub kept: Vec<ChildRef>,
    /// The owner's resourceVersions this pass produced by recording its ApplySet
    /// annotations and labels on it (empty when the record was already current).
    pub owner_versions: Vec<String>,
    /// The `resourceVersion` the API server answered each server-side apply of this pass
    /// with, in the order of `applied` (skipped children have none). A controller watching
    /// its children recognises the watch event of its own write by it.
    pub versions: Vec<(ChildRef, String)>,
}

impl ApplyReport {
    /// `true` when nothing was written to any child.
    #[must_use]
    pub fn is_noop(&self) -> bool {
        self.applied.is_empty() && self.pruned.is_empty()
    }
}

/// How the live state of children is read for the unchanged-skip (and prune candidates).
#[derive(Clone, Copy)]
pub(crate) enum Live<'a> {
    /// `GET` the metadata of each child that might be skipped.
    Server,
    /// Ask the caller's cache.
    Cache(&'a (dyn Fn(&ChildRef) -> Option<ObjectMeta> + Send + Sync)),
    /// Ask the caller's caches, for prune candidates too.
    Cached(&'a dyn ChildCache),
}

/// Applies desired sets of children under owners; see the [crate documentation](crate).
///
/// Cheap to clone (clones share the discovery cache and the memory of what was applied);
/// use one per controller. Passes for the *same* owner must not run concurrently (a
/// controller reconciles one object at a time); passes for different owners may.
#[derive(Clone)]
pub struct Applier {
    pub(crate) client: Client,
    pub(crate) config: Arc<ApplierConfig>,
    pub(crate) discovery: Arc<Discovery>,
    pub(crate) memory: Arc<Mutex<HashMap<String, OwnerMemory>>>,
    status: StatusWriter,
}

impl std::fmt::Debug for Applier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applier").field("config", &self.config).finish_non_exhaustive()
    }
}

/// A desired child, checked and ready to send.
pub(crate) struct Prepared {
    pub(crate) child: ChildRef,
    pub(crate) key: Key,
    pub(crate) kind: Resolved,
    pub(crate) body: Value,
    pub(crate) hash: Fingerprint,
    /// An existing object that is not a child may be taken over.
    pub(crate) adopt: bool,
    pub(crate) tie: Tie,
}

impl Applier {
    /// An applier writing with `client` as `config` says.
    #[must_use]
    pub fn new(client: Client, config: ApplierConfig) -> Self {
        let discovery = Arc::new(Discovery::new(client.clone()));
        let status = StatusWriter::with_discovery(client.clone(), &config.field_manager, discovery.clone());
        Self { client, config: Arc::new(config), discovery, memory: Arc::default(), status }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ApplierConfig {
        &self.config
    }

    /// The REST resource of `api_version`/`kind` and whether its objects are namespaced,
    /// through this applier's discovery cache (shared with its status writer; a kind not
    /// served is asked again next time).
    ///
    /// # Errors
    ///
    /// The API server does not serve the kind, or discovery failed.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(kube::api::ApiResource, bool), kube::Error> {
        let resolved = self.discovery.kind(api_version, kind).await?;
        Ok((resolved.resource, resolved.namespaced))
    }

    /// The [`StatusWriter`] of this applier: the same client, field manager and discovery
    /// cache; every call returns a clone sharing one memory of past writes.
    #[must_use]
    pub fn status_writer(&self) -> StatusWriter {
        self.status.clone()
    }

    /// Make `desired` the complete set of children of `owner`, in one pass:
    ///
    /// 1. check every child (well-formed, a kind the server serves, ownable by `owner`,
    ///    no duplicates) — on any error nothing is written;
    /// 2. record the ApplySet on the owner (`applyset.kubernetes.io/id` label, `tooling` and
    ///    `contains-group-kinds` annotations, now including the kinds about to be applied);
    /// 3. server-side apply each child in order with the `part-of` label and a controller
    ///    owner reference, skipping children unchanged since the last apply;
    /// 4. only if every apply succeeded, delete former children that left the set;
    /// 5. narrow the owner's `contains-group-kinds` to what is left.
    ///
    /// `owner` is any object as read from the API server (`DynamicObject` with `types`,
    /// a k8s-openapi type, a `CustomResource`); `desired` are complete objects with
    /// `apiVersion`, `kind` and `metadata.name` (the namespace defaults to the owner's).
    ///
    /// ## Warning
    /// `desired` is the *complete* set: an empty set prunes every child. Call this only
    /// with the outcome of a successful reconcile.
    ///
    /// The unchanged-skip reads each candidate's metadata with a `GET`; a controller that
    /// has the children in a cache should call [`Applier::apply_observed`] instead.
    pub async fn apply<K: Serialize + Sync, D: Into<Desired>>(
        &self,
        owner: &K,
        desired: impl IntoIterator<Item = D>,
    ) -> Result<ApplyReport, ApplyError> {
        let owner = owner_info(owner)?;
        self.run(owner, desired.into_iter().map(Into::into).collect(), Live::Server).await
    }

    /// [`Applier::apply`], reading the live children for the unchanged-skip from the
    /// caller's cache (e.g. a kube-runtime reflector store) instead of the API server.
    /// `observed` returns the child's metadata, or `None` when the cache does not have it
    /// (the child is then applied). A stale cache costs at most one redundant apply.
    pub async fn apply_observed<K, D, F>(
        &self,
        owner: &K,
        desired: impl IntoIterator<Item = D>,
        observed: F,
    ) -> Result<ApplyReport, ApplyError>
    where
        K: Serialize + Sync,
        D: Into<Desired>,
        F: Fn(&ChildRef) -> Option<ObjectMeta> + Send + Sync,
    {
        let owner = owner_info(owner)?;
        self.run(owner, desired.into_iter().map(Into::into).collect(), Live::Cache(&observed)).await
    }

    /// [`Applier::apply`] reading both the unchanged-skip and the prune candidates from the
    /// caller's caches: a pass whose children are unchanged makes no API request at all.
    pub async fn apply_cached<K, D>(
        &self,
        owner: &K,
        desired: impl IntoIterator<Item = D>,
        cache: &dyn ChildCache,
    ) -> Result<ApplyReport, ApplyError>
    where
        K: Serialize + Sync,
        D: Into<Desired>,
    {
        let owner = owner_info(owner)?;
        self.run(owner, desired.into_iter().map(Into::into).collect(), Live::Cached(cache)).await
    }

    /// [`Applier::apply_cached`] without the pruning: the children given are applied, former
    /// children left out stay as they are. For a pass that is not the complete desired set
    /// (an early return that must not delete what the last complete pass made).
    pub async fn apply_cached_keeping<K, D>(
        &self,
        owner: &K,
        desired: impl IntoIterator<Item = D>,
        cache: &dyn ChildCache,
    ) -> Result<ApplyReport, ApplyError>
    where
        K: Serialize + Sync,
        D: Into<Desired>,
    {
        let owner = owner_info(owner)?;
        self.run_with(owner, desired.into_iter().map(Into::into).collect(), Live::Cached(cache), false).await
    }

    /// [`Applier::apply_cached`] (or, `prune` false, [`Applier::apply_cached_keeping`]) for
    /// an owner whose identity and metadata the caller already holds apart (a cache of JSON
    /// text): nothing of the owner is serialized or parsed again. An empty `uid` or name
    /// is refused as [`ApplyError::InvalidOwner`].
    pub async fn apply_cached_to<D: Into<Desired>>(
        &self,
        owner: Owner,
        desired: impl IntoIterator<Item = D>,
        cache: &dyn ChildCache,
        prune: bool,
    ) -> Result<ApplyReport, ApplyError> {
        let owner = ObjectInfo::from(owner);
        for (field, value) in [
            ("apiVersion", &owner.api_version),
            ("kind", &owner.kind),
            ("metadata.name", &owner.name),
            ("metadata.uid", &owner.uid),
        ] {
            if value.is_empty() {
                return Err(ApplyError::InvalidOwner {
                    owner: owner.describe(),
                    reason: format!("it has no {field}"),
                });
            }
        }
        self.run_with(owner, desired.into_iter().map(Into::into).collect(), Live::Cached(cache), prune).await
    }

    async fn run(
        &self,
        owner: ObjectInfo,
        desired: Vec<Desired>,
        live: Live<'_>,
    ) -> Result<ApplyReport, ApplyError> {
        self.run_with(owner, desired, live, true).await
    }

    async fn run_with(
        &self,
        mut owner: ObjectInfo,
        desired: Vec<Desired>,
        live: Live<'_>,
        prune: bool,
    ) -> Result<ApplyReport, ApplyError> {
        let set_id =
            applyset_id(&owner.name, owner.namespace.as_deref().unwrap_or(""), &owner.kind, owner.group());
        self.check_parent(&owner, &set_id)?;

        // 1. Check the whole desired set before writing anything.
        let total = desired.len();
        let mut prepared = Vec::with_capacity(total);
        let mut seen = HashSet::with_capacity(total);
        for (index, Desired { object, adopt }) in desired.into_iter().enumerate() {
            let mut p = self.prepare(index, object, &owner, &set_id).await?;
            p.adopt = adopt;
            if !seen.insert(p.key.clone()) {
                return Err(ApplyError::Duplicate { child: p.child });
            }
            prepared.push(p);
        }

        // 2. Record the superset of what was and what will be on the owner first, so that a
        // pass interrupted after applying a new kind still finds it to prune later.
        let (mut recorded_kinds, mut recorded_namespaces) = {
            let memory = self.memory.lock();
            let remembered = memory.get(&owner.uid);
            let mut kinds = parse_group_kinds(owner.annotation(CONTAINS_GROUP_KINDS_ANNOTATION));
            let mut namespaces = parse_list(owner.annotation(ADDITIONAL_NAMESPACES_ANNOTATION));
            if let Some(m) = remembered {
                kinds.extend(m.group_kinds.iter().cloned());
                namespaces.extend(m.namespaces.iter().cloned());
            }
            (kinds, namespaces)
        };
        let current_kinds: BTreeSet<GroupKind> = prepared.iter().map(|p| p.key.group_kind.clone()).collect();
        // The namespaces besides the owner's own: every one for a cluster-scoped owner, those
        // of children tied by label for a namespaced one.
        let current_namespaces: BTreeSet<String> = prepared
            .iter()
            .filter(|p| owner.namespace.is_none() || p.tie == Tie::Label)
            .filter_map(|p| p.child.namespace.clone())
            .collect();
        recorded_kinds.extend(current_kinds.iter().cloned());
        recorded_namespaces.extend(current_namespaces.iter().cloned());
        let mut report = ApplyReport::default();
        let recorded =
            self.record(&mut owner, &set_id, &recorded_kinds, &recorded_namespaces, &report).await?;
        report.owner_versions.extend(recorded);

        // 3. Apply, continuing past failures so that one bad child does not hold back the
        // rest; an existing object that is not a child is left alone (see `adopt`).
        let mut failures = Vec::new();
        for p in &prepared {
            if self.unchanged(&owner.uid, p, live).await {
                report.skipped.push(p.child.clone());
                continue;
            }
            match self.claim(&owner, &set_id, p, live).await {
                Ok(Claim::Child) => {}
                Ok(Claim::Adopted) => report.adopted.push(p.child.clone()),
                Ok(Claim::Again) => {
                    // This applier made it and it is gone: the owner may be gone too (the
                    // garbage collector deletes the children of a deleted owner, and the
                    // caller's cache may not know yet). Never re-create a child for an
                    // owner that no longer exists.
                    match self.owner_exists(&owner).await {
                        Ok(true) => {}
                        Ok(false) => {
                            return Err(ApplyError::OwnerGone {
                                owner: owner.describe(),
                                report: Box::new(report),
                            });
                        }
                        Err(source) => {
                            failures.push(ChildFailure {
                                child: p.child.clone(),
                                error: ChildError::Api(source),
                            });
                            continue;
                        }
                    }
                }
                Err(error) => {
                    failures.push(ChildFailure { child: p.child.clone(), error });
                    continue;
                }
            }
            match self.send(p).await {
                Ok(result) => {
                    self.remember(&owner.uid, p, &result.metadata);
                    if let Some(rv) = result.metadata.resource_version {
                        report.versions.push((p.child.clone(), rv));
                    }
                    report.applied.push(p.child.clone());
                }
                Err(error) => {
                    if code(&error) == Some(404) {
                        self.discovery.forget(&p.kind.resource);
                    }
                    if let Some(m) = self.memory.lock().get_mut(&owner.uid) {
                        m.applied.remove(&p.key);
                    }
                    tracing::debug!(child = %p.child, error = %api_error_text(&error), "apply failed");
                    failures.push(ChildFailure { child: p.child.clone(), error: ChildError::Api(error) });
                }
            }
        }
        if !failures.is_empty() {
            return Err(ApplyError::Apply { failures, total, report: Box::new(report) });
        }

        if !prune {
            tracing::debug!(owner = %owner.describe(), applied = report.applied.len(), skipped = report.skipped.len(), "applied children; pruning skipped");
            return Ok(report);
        }

        // 4. Prune, only now that every child is in place.
        let keep: HashSet<Key> = prepared.iter().map(|p| p.key.clone()).collect();
        let known: HashMap<GroupKind, Resolved> =
            prepared.iter().map(|p| (p.key.group_kind.clone(), p.kind.clone())).collect();
        let remembered: Vec<Key> = self
            .memory
            .lock()
            .get(&owner.uid)
            .map(|m| m.applied.keys().cloned().collect())
            .unwrap_or_default();
        let scope = crate::prune::Scope {
            remembered: &remembered,
            owner: &owner,
            set_id: &set_id,
            kinds: &recorded_kinds,
            namespaces: &recorded_namespaces,
            keep: &keep,
            known: &known,
            cache: match live {
                Live::Cached(cache) => Some(cache),
                _ => None,
            },
        };
        let left = match crate::prune::prune(&self.client, &self.discovery, &scope, &mut report).await {
            Ok(left) => left,
            Err((what, error)) => return Err(ApplyError::Prune { what, error, report: Box::new(report) }),
        };
        if let Some(m) = self.memory.lock().get_mut(&owner.uid) {
            for child in &report.pruned {
                m.applied.remove(&child.key());
            }
        }

        // 5. Narrow the record to what is left: the desired kinds and kept former children.
        let mut final_kinds = current_kinds;
        let mut final_namespaces = current_namespaces;
        for child in &left {
            final_kinds.insert(child.group_kind());
            if child.namespace != owner.namespace {
                final_namespaces.extend(child.namespace.clone());
            }
        }
        // Everything that matters is done: a record left wider than needed only costs a few
        // empty lists on the next pass, so a failure here is logged, not returned.
        match self.record(&mut owner, &set_id, &final_kinds, &final_namespaces, &report).await {
            Ok(Some(version)) => report.owner_versions.push(version),
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, "cannot narrow the ApplySet record; retried on the next pass");
            }
        }
        tracing::debug!(
            owner = %owner.describe(),
            applied = report.applied.len(),
            skipped = report.skipped.len(),
            pruned = report.pruned.len(),
            kept = report.kept.len(),
            "applied desired set"
        );
        Ok(report)
    }

    /// Refuse owners that are the parent of someone else's ApplySet.
    fn check_parent(&self, owner: &ObjectInfo, set_id: &str) -> Result<(), ApplyError> {
        if let Some(id) = owner.label(ID_LABEL).filter(|id| *id != set_id) {
            return Err(ApplyError::ForeignApplySet {
                owner: owner.describe(),
                reason: format!("its {ID_LABEL} label is {id:?}, but its ApplySet id is {set_id:?}"),
            });
        }
        if let Some(tooling) = owner.annotation(TOOLING_ANNOTATION)
            && tool_name(tooling) != tool_name(&self.config.tooling)
        {
            return Err(ApplyError::ForeignApplySet {
                owner: owner.describe(),
                reason: format!(
                    "its {TOOLING_ANNOTATION} is {tooling:?}, this applier is {:?}",
                    self.config.tooling
                ),
            });
        }
        Ok(())
    }

    async fn send(&self, p: &Prepared) -> Result<Answer, kube::Error> {
        let mut params = PatchParams::apply(&self.config.field_manager);
        params.force = self.config.force;
        p.kind
            .patch(
                &self.client,
                p.child.namespace.as_deref(),
                None,
                &p.child.name,
                &params,
                &Patch::Apply(&p.body),
            )
            .await
    }

    /// Make the owner's ApplySet label and annotations say `kinds` (and, for a
    /// cluster-scoped owner, `namespaces`), with a merge patch and only when they differ.
    async fn record(
        &self,
        owner: &mut ObjectInfo,
        set_id: &str,
        kinds: &BTreeSet<GroupKind>,
        namespaces: &BTreeSet<String>,
        report: &ApplyReport,
    ) -> Result<Option<String>, ApplyError> {
        let Some(patch) = owner_patch(owner, set_id, &self.config.tooling, kinds, namespaces) else {
            self.remember_record(owner, kinds, namespaces);
            return Ok(None);
        };
        let failed = |error| ApplyError::OwnerUpdate {
            owner: owner.describe(),
            error,
            report: Box::new(report.clone()),
        };
        let resolved = match self.discovery.kind(&owner.api_version, &owner.kind).await {
            Ok(r) => r,
            Err(source) => return Err(failed(source)),
        };
        let params =
            PatchParams { field_manager: Some(self.config.field_manager.clone()), ..PatchParams::default() };
        let updated: Answer = resolved
            .patch(
                &self.client,
                owner.namespace.as_deref(),
                None,
                &owner.name,
                &params,
                &Patch::Merge(&patch),
            )
            .await
            .map_err(failed)?;
        if updated.metadata.uid.as_deref() != Some(&owner.uid) {
            // The owner was deleted and re-created under the same name meanwhile; its
            // children belong to the old uid and are the garbage collector's now.
            tracing::warn!(owner = %owner.describe(), "owner was replaced during the pass");
        }
        owner.labels = to_map(updated.metadata.labels);
        owner.annotations = to_map(updated.metadata.annotations);
        self.remember_record(owner, kinds, namespaces);
        Ok(updated.metadata.resource_version)
    }
}

/// The merge patch that makes the owner's ApplySet metadata say `kinds`/`namespaces`, or
/// `None` when it already does (or when there is nothing to record on an owner that was
/// never a parent). An owner left with no children at all stops being a parent: its label
/// and annotations are removed, so that an object the operator does not own (a decorated
/// StatefulSet, a Namespace) does not keep them for good.
fn owner_patch(
    owner: &ObjectInfo,
    set_id: &str,
    tooling: &str,
    kinds: &BTreeSet<GroupKind>,
    namespaces: &BTreeSet<String>,
) -> Option<Value> {
    let is_parent = owner.label(ID_LABEL).is_some();
    if kinds.is_empty() && namespaces.is_empty() {
        let ours = [TOOLING_ANNOTATION, CONTAINS_GROUP_KINDS_ANNOTATION, ADDITIONAL_NAMESPACES_ANNOTATION];
        let annotations: Map<String, Value> = ours
            .iter()
            .filter(|a| owner.annotations.contains_key(**a))
            .map(|a| ((*a).to_owned(), Value::Null))
            .collect();
        if !is_parent && annotations.is_empty() {
            return None;
        }
        let mut meta = Map::new();
        if is_parent {
            meta.insert("labels".into(), json!({ ID_LABEL: null }));
        }
        if !annotations.is_empty() {
            meta.insert("annotations".into(), Value::Object(annotations));
        }
        return Some(json!({ "metadata": meta }));
    }
    let kinds = join(kinds);
    let mut labels = Map::new();
    let mut annotations = Map::new();
    if owner.label(ID_LABEL) != Some(set_id) {
        labels.insert(ID_LABEL.into(), set_id.into());
    }
    if owner.annotation(TOOLING_ANNOTATION) != Some(tooling) {
        annotations.insert(TOOLING_ANNOTATION.into(), tooling.into());
    }
    if owner.annotation(CONTAINS_GROUP_KINDS_ANNOTATION) != Some(kinds.as_str()) {
        annotations.insert(CONTAINS_GROUP_KINDS_ANNOTATION.into(), kinds.into());
    }
    let namespaces = join(namespaces);
    let current = owner.annotation(ADDITIONAL_NAMESPACES_ANNOTATION);
    if namespaces.is_empty() {
        if owner.annotations.contains_key(ADDITIONAL_NAMESPACES_ANNOTATION) {
            annotations.insert(ADDITIONAL_NAMESPACES_ANNOTATION.into(), Value::Null);
        }
    } else if current != Some(namespaces.as_str()) {
        annotations.insert(ADDITIONAL_NAMESPACES_ANNOTATION.into(), namespaces.into());
    }
    if labels.is_empty() && annotations.is_empty() {
        return None;
    }
    let mut meta = Map::new();
    if !labels.is_empty() {
        meta.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
    Some(json!({ "metadata": meta }))
}

fn to_map(m: Option<std::collections::BTreeMap<String, String>>) -> Map<String, Value> {
    m.unwrap_or_default().into_iter().map(|(k, v)| (k, Value::String(v))).collect()
}

fn owner_info<K: Serialize>(owner: &K) -> Result<ObjectInfo, ApplyError> {
    ObjectInfo::of(owner).map_err(|(owner, reason)| ApplyError::InvalidOwner { owner, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(labels: Value, annotations: Value, namespace: Option<&str>) -> ObjectInfo {
        let mut obj = json!({
            "apiVersion": "apps.example.com/v1", "kind": "App",
            "metadata": {"name": "web", "uid": "u1", "labels": labels, "annotations": annotations},
        });
        if let Some(ns) = namespace {
            obj["metadata"]["namespace"] = json!(ns);
        }
        ObjectInfo::of(&obj).expect("owner")
    }

    /// Compile-time check: the passes can run on a multi-threaded runtime.
    #[allow(dead_code)]
    fn futures_are_send(applier: &Applier, owner: &kube::api::DynamicObject) {
        fn send<T: Send>(_: T) {}
        send(applier.apply(owner, Vec::<Value>::new()));
        send(applier.apply_observed(owner, Vec::<Value>::new(), |_: &ChildRef| None));
        send(applier.status_writer().write(owner, crate::StatusPatch::default()));
    }

    fn kinds(list: &[&str]) -> BTreeSet<GroupKind> {
        list.iter().filter_map(|s| GroupKind::parse(s)).collect()
    }

    #[test]
    fn owner_patch_writes_only_differences() {
        let o = owner(json!({}), json!({}), Some("ns"));
        assert_eq!(
            owner_patch(&o, "id", "ctop/v1", &BTreeSet::new(), &BTreeSet::new()),
            None,
            "never a parent, nothing to record"
        );
        let patch =
            owner_patch(&o, "id", "ctop/v1", &kinds(&["Deployment.apps", "ConfigMap"]), &BTreeSet::new());
        assert_eq!(
            patch,
            Some(json!({"metadata": {
                "labels": {ID_LABEL: "id"},
                "annotations": {TOOLING_ANNOTATION: "ctop/v1", CONTAINS_GROUP_KINDS_ANNOTATION: "ConfigMap,Deployment.apps"},
            }}))
        );
        let o = owner(
            json!({ID_LABEL: "id"}),
            json!({TOOLING_ANNOTATION: "ctop/v1", CONTAINS_GROUP_KINDS_ANNOTATION: "ConfigMap"}),
            Some("ns"),
        );
        assert_eq!(owner_patch(&o, "id", "ctop/v1", &kinds(&["ConfigMap"]), &BTreeSet::new()), None);
        assert_eq!(
            owner_patch(&o, "id", "ctop/v1", &BTreeSet::new(), &BTreeSet::new()),
            Some(json!({"metadata": {
                "labels": {ID_LABEL: null},
                "annotations": {TOOLING_ANNOTATION: null, CONTAINS_GROUP_KINDS_ANNOTATION: null},
            }})),
            "a parent whose children are all gone is a parent no more"
        );
    }

    #[test]
    fn cluster_scoped_owners_record_namespaces() {
        let o = owner(
            json!({ID_LABEL: "id"}),
            json!({TOOLING_ANNOTATION: "ctop/v1", CONTAINS_GROUP_KINDS_ANNOTATION: "ConfigMap",
                   ADDITIONAL_NAMESPACES_ANNOTATION: "a"}),
            None,
        );
        let ns: BTreeSet<String> = ["b".to_owned(), "a".to_owned()].into();
        assert_eq!(
            owner_patch(&o, "id", "ctop/v1", &kinds(&["ConfigMap"]), &ns),
            Some(json!({"metadata": {"annotations": {ADDITIONAL_NAMESPACES_ANNOTATION: "a,b"}}}))
        );
        assert_eq!(
            owner_patch(&o, "id", "ctop/v1", &kinds(&["ConfigMap"]), &BTreeSet::new()),
            Some(json!({"metadata": {"annotations": {ADDITIONAL_NAMESPACES_ANNOTATION: null}}}))
        );
    }
}
