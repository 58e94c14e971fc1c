//! The operator description a script declares, as the runtime extracts it from
//! `globalThis.__ct_operator`: resources with their schemas and the controllers that
//! reconcile them. Manifests, webhooks and the controller read this, never JavaScript.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Duration, EgressRule};

/// Everything one script declares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorSpec {
    /// Custom resources the script defines (one CRD each).
    #[serde(default)]
    pub resources: Vec<ResourceSpec>,
    /// Controllers, one per `operator(...)` call, in declaration order.
    #[serde(default)]
    pub controllers: Vec<ControllerSpec>,
}

impl OperatorSpec {
    /// The resources whose versions the operator converts (those with more than one).
    pub fn converting(&self) -> impl Iterator<Item = &ResourceSpec> {
        self.resources.iter().filter(|r| r.converts())
    }
}

/// Whether objects of a kind live in namespaces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scope {
    /// Objects live in namespaces.
    #[default]
    Namespaced,
    /// Objects are cluster-wide.
    Cluster,
}

/// A custom resource the script defines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpec {
    /// `group/version`.
    pub api_version: String,
    /// API group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind, e.g. `WebApp`.
    pub kind: String,
    /// Plural resource name, e.g. `webapps`.
    pub plural: String,
    /// Singular name, e.g. `webapp`.
    pub singular: String,
    /// Namespaced or cluster-wide.
    #[serde(default)]
    pub scope: Scope,
    /// kubectl short names.
    #[serde(default)]
    pub short_names: Vec<String>,
    /// `additionalPrinterColumns`.
    #[serde(default)]
    pub printer_columns: Vec<PrinterColumn>,
    /// The structural OpenAPI v3 schema of the whole object.
    pub schema: Value,
    /// Whether status is written through the status subresource.
    #[serde(default)]
    pub status_subresource: bool,
    /// Whether the version above (the hub) is deprecated, and the warning clients get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<Deprecation>,
    /// Every version the CRD serves when the script declares more than one
    /// (`res.version(name, {...})`), the hub above first; empty when the resource has one
    /// version, which is then `version` with `schema` and `printer_columns`. Read them with
    /// [`ResourceSpec::all_versions`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<VersionSpec>,
}

/// One version of a resource with several: its schema and what the API server does with it.
/// The script converts between it and the hub (the version its handlers are written
/// against) with the two functions it declared.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionSpec {
    /// The version, e.g. `v1alpha1`.
    pub name: String,
    /// Whether the API serves it.
    pub served: bool,
    /// Whether objects are stored in it (exactly one version is).
    pub storage: bool,
    /// Whether it is deprecated, and the warning clients get.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<Deprecation>,
    /// The structural OpenAPI v3 schema of the whole object in this version.
    pub schema: Value,
    /// `additionalPrinterColumns` of this version.
    #[serde(default)]
    pub printer_columns: Vec<PrinterColumn>,
}

/// A deprecated version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Deprecation {
    /// The `Warning` clients get for every request in the version; `None` leaves the API
    /// server's default (`<group>/<version> <Kind> is deprecated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl ResourceSpec {
    /// Every version of the resource, as the CRD lists them: the declared
    /// [`ResourceSpec::versions`], or the one version (served and stored) when there is one.
    #[must_use]
    pub fn all_versions(&self) -> Vec<VersionSpec> {
        if !self.versions.is_empty() {
            return self.versions.clone();
        }
        vec![VersionSpec {
            name: self.version.clone(),
            served: true,
            storage: true,
            deprecated: self.deprecated.clone(),
            schema: self.schema.clone(),
            printer_columns: self.printer_columns.clone(),
        }]
    }

    /// Whether the API server must convert objects between versions through the operator
    /// (a conversion webhook): the resource has more than one version.
    #[must_use]
    pub fn converts(&self) -> bool {
        self.versions.len() > 1
    }

    /// The version objects are stored in.
    #[must_use]
    pub fn storage_version(&self) -> &str {
        self.versions.iter().find(|v| v.storage).map_or(self.version.as_str(), |v| v.name.as_str())
    }

    /// `group/<version>` of one of its versions.
    #[must_use]
    pub fn api_version_of(&self, version: &str) -> String {
        format!("{}/{version}", self.group)
    }
}

/// A column `kubectl get` shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrinterColumn {
    /// Header.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean`, `date`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Where the value is, e.g. `.status.phase`.
    pub json_path: String,
    /// Help text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// 0 shows by default, higher with `-o wide`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

/// A kind, by `apiVersion` and `kind`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KindRef {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// Kind.
    pub kind: String,
}

impl KindRef {
    /// The API group (empty for core).
    #[must_use]
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    /// The version (`v1`).
    #[must_use]
    pub fn version(&self) -> &str {
        split_api_version(&self.api_version).1
    }

    /// The key ctop names the kind by ([`kind_key`]): `apps/v1/Deployment`, `v1/Secret`.
    #[must_use]
    pub fn key(&self) -> String {
        kind_key(&self.api_version, &self.kind)
    }
}

/// An `apiVersion` as group and version: `apps/v1` → (`apps`, `v1`), `v1` → (``, `v1`).
#[must_use]
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// The group of an `apiVersion` (`apps/v1` → `apps`; `v1`, the core group, → ``).
#[must_use]
pub fn group_of(api_version: &str) -> &str {
    split_api_version(api_version).0
}

/// The key ctop names a kind by everywhere (caches, reads, the history): `apiVersion/kind`,
/// as `apps/v1/Deployment` or `v1/Secret`.
#[must_use]
pub fn kind_key(api_version: &str, kind: &str) -> String {
    format!("{api_version}/{kind}")
}

/// An event filter of a watch, like controller-runtime's predicates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Predicate {
    /// One of the named predicates.
    Named(NamedPredicate),
    /// All must hold.
    And {
        /// The predicates.
        and: Vec<Predicate>,
    },
    /// One must hold.
    Or {
        /// The predicates.
        or: Vec<Predicate>,
    },
}

/// The named predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NamedPredicate {
    /// `metadata.generation` changed (spec changes of kinds that keep a generation).
    GenerationChanged,
    /// `metadata.resourceVersion` changed (any change).
    ResourceVersionChanged,
    /// Labels changed.
    LabelChanged,
    /// Annotations changed.
    AnnotationChanged,
}

/// A secondary watch declared with `.watches(kind, mapper, options)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchSpec {
    /// The watched kind.
    pub kind: KindRef,
    /// Only this namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only objects matching this label selector (`a=b,c in (d)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Only events passing this predicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<Predicate>,
    /// Whether the script maps events to primary objects (handler `map:<index>`).
    #[serde(default)]
    pub mapper: bool,
}

/// An RBAC rule the script asks for with `.permission(rule)`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// API groups.
    #[serde(default)]
    pub api_groups: Vec<String>,
    /// Resources.
    #[serde(default)]
    pub resources: Vec<String>,
    /// Verbs.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Object names, if restricted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

/// One `operator(resource)` declaration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerSpec {
    /// Position in the script; the index the runtime dispatches with.
    pub index: u32,
    /// A unique name (used in logs, metrics, leases).
    pub name: String,
    /// The primary kind.
    #[serde(rename = "for")]
    pub for_: KindRef,
    /// Watch the primary kind in this namespace only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only primary objects matching this label selector (applied by the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// Only primary objects matching this field selector (`metadata.name=x`, applied by the
    /// server): a declarative `Operator` reconciles its own object alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// Only primary objects whose annotations match this selector (label-selector syntax;
    /// applied by the controller, the API server selects by labels only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation_selector: Option<String>,
    /// Which updates of a primary object trigger a reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<Predicate>,
    /// Periodic resync of every primary object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<Duration>,
    /// Run the reconcile handler on every trigger, periodic ticks included, even when
    /// nothing it read changed since its last run (`.every(d, { always: true })`); by
    /// default such a reconcile is skipped (see `ctop-controller`'s fingerprints).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub always_run: bool,
    /// Owned children: watched, fully permitted, pruned.
    #[serde(default)]
    pub manages: Vec<KindRef>,
    /// Managed kinds whose cache holds only objects that are children of some operator
    /// (they carry the ApplySet `applyset.kubernetes.io/part-of` label ctop puts on every
    /// child), from `.manages(kind, { childrenOnly: true })`: the watch asks the server for
    /// those alone, so unrelated objects of the kind cost no memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children_only: Vec<KindRef>,
    /// Managed kinds whose existing objects a reconcile may take over as children when it
    /// applies one under their name (`.manages(kind, { adopt: true })`). Without it, an
    /// existing object that is not already a child is left alone and the apply of that
    /// child fails, naming who holds the object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopt: Vec<KindRef>,
    /// Watched read-only kinds.
    #[serde(default)]
    pub reads: Vec<KindRef>,
    /// Read kinds watched and cached as their metadata only (`meta.k8s.io/v1`
    /// `PartialObjectMetadata`), from `.reads(kind, { metadataOnly: true })`: the script's
    /// `getObserved` and `listObserved` of such a kind see `apiVersion`, `kind` and
    /// `metadata`, never `spec` or `status`. Each is also in [`reads`](Self::reads); a kind
    /// the controller also reconciles, manages or watches is refused by
    /// [`ControllerSpec::metadata_only_conflict`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata_only: Vec<KindRef>,
    /// Secondary watches with mappers.
    #[serde(default)]
    pub watches: Vec<WatchSpec>,
    /// Extra RBAC rules.
    #[serde(default)]
    pub permissions: Vec<PolicyRule>,
    /// Where the script's `fetch` may go, from `.egress(url, ...)`: URL prefixes
    /// `scheme://host[:port][/path]` (host may be `*.example.com`, port `*`). Nothing else is
    /// reachable; the generated NetworkPolicy allows the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<EgressRule>,
    /// The finalizer name, when `.finalize(fn)` was declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizer: Option<String>,
    /// The handlers declared: `reconcile`, `finalize`, `onStart`, `validate`, `mutate`, and
    /// `invariant` when the script declares invariants.
    #[serde(default)]
    pub handlers: Vec<String>,
    /// The names of the controller's invariants (`.invariant(name, fn)`), in order: rules
    /// each primary object satisfies once the operator is quiet, which `ctop test --fuzz`
    /// checks through the `invariant` handler. The running operator never calls them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invariants: Vec<String>,
}

impl ControllerSpec {
    /// Whether the controller caches `kind` as metadata only (`.reads(kind, { metadataOnly: true })`).
    #[must_use]
    pub fn is_metadata_only(&self, kind: &KindRef) -> bool {
        self.metadata_only.iter().any(|k| k.key() == kind.key())
    }

    /// The first `metadataOnly` kind the controller also needs in full, if any: its own kind
    /// (its handlers get whole objects) or a managed kind (the applier, pruning and the
    /// `Ready` condition read children's status from the cache). A `.watches()` of a
    /// metadata-only kind shares its watch and is fine: predicates and mappers see the
    /// metadata.
    #[must_use]
    pub fn metadata_only_conflict(&self) -> Option<MetadataOnlyConflict> {
        self.metadata_only.iter().find_map(|k| {
            let same = |x: &KindRef| x.key() == k.key();
            let why = if same(&self.for_) {
                MetadataOnlyNeed::Reconciled
            } else if self.manages.iter().any(same) {
                MetadataOnlyNeed::Managed
            } else {
                return None;
            };
            Some(MetadataOnlyConflict { controller: self.name.clone(), kind: k.clone(), why })
        })
    }
}

/// A kind declared `metadataOnly` that its controller needs in full (see
/// [`ControllerSpec::metadata_only_conflict`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "operator {controller:?}: .reads({kind}, {{ metadataOnly: true }}): {kind} is {why}, so its objects are cached in full; drop metadataOnly",
    kind = kind.kind
)]
pub struct MetadataOnlyConflict {
    /// The controller's name.
    pub controller: String,
    /// The kind declared `metadataOnly`.
    pub kind: KindRef,
    /// What needs its full objects.
    pub why: MetadataOnlyNeed,
}

/// What needs the full objects of a kind declared `metadataOnly`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataOnlyNeed {
    /// It is the kind the controller reconciles.
    Reconciled,
    /// The controller manages it (`.manages()`): children's health and the applier read them.
    Managed,
}

impl std::fmt::Display for MetadataOnlyNeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Reconciled => "the kind this operator reconciles",
            Self::Managed => "managed by this operator (the Ready condition reads its children's status)",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_api_version_splits_into_group_and_version() {
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(group_of("apps.example.com/v1beta1"), "apps.example.com");
        let k = KindRef { api_version: "batch/v1".into(), kind: "Job".into() };
        assert_eq!((k.group(), k.version(), k.key().as_str()), ("batch", "v1", "batch/v1/Job"));
    }

    #[test]
    fn reads_the_runtime_registry_shape() {
        let json = serde_json::json!({
            "resources": [{"apiVersion": "apps.example.com/v1", "group": "apps.example.com", "version": "v1",
                "kind": "WebApp", "plural": "webapps", "singular": "webapp", "scope": "Namespaced",
                "shortNames": [], "printerColumns": [{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}],
                "schema": {"type": "object"}, "statusSubresource": true}],
            "controllers": [{"index": 0, "name": "webapp", "for": {"apiVersion": "apps.example.com/v1", "kind": "WebApp"},
                "every": "5m", "manages": [{"apiVersion": "v1", "kind": "Secret"}], "reads": [],
                "watches": [{"kind": {"apiVersion": "v1", "kind": "ConfigMap"}, "predicate": {"or": ["LabelChanged", "AnnotationChanged"]}, "mapper": true}],
                "permissions": [], "finalizer": null, "handlers": ["reconcile"]}]
        });
        let spec: OperatorSpec = serde_json::from_value(json).expect("valid registry");
        let c = &spec.controllers[0];
        assert_eq!(c.every, Some(Duration::from_secs(300)));
        assert_eq!(c.manages[0].group(), "");
        assert_eq!(
            c.watches[0].predicate,
            Some(Predicate::Or {
                or: vec![
                    Predicate::Named(NamedPredicate::LabelChanged),
                    Predicate::Named(NamedPredicate::AnnotationChanged)
                ]
            })
        );
        assert_eq!(spec.resources[0].printer_columns[0].type_, "string");
        let r = &spec.resources[0];
        assert!(!r.converts());
        assert_eq!(r.storage_version(), "v1");
        let all = r.all_versions();
        assert_eq!((all.len(), all[0].name.as_str(), all[0].served, all[0].storage), (1, "v1", true, true));
    }

    #[test]
    fn reads_metadata_only_kinds_and_refuses_those_needed_in_full() {
        let json = serde_json::json!({
            "index": 0, "name": "podwatch", "for": {"apiVersion": "apps.example.com/v1", "kind": "WebApp"},
            "every": null, "manages": [{"apiVersion": "v1", "kind": "Secret"}],
            "reads": [{"apiVersion": "v1", "kind": "Pod"}],
            "metadataOnly": [{"apiVersion": "v1", "kind": "Pod"}],
            "watches": [], "permissions": [], "finalizer": null, "handlers": ["reconcile"]
        });
        let mut c: ControllerSpec = serde_json::from_value(json).expect("valid controller");
        let pod = KindRef { api_version: "v1".into(), kind: "Pod".into() };
        assert_eq!(c.metadata_only, std::slice::from_ref(&pod));
        assert!(c.is_metadata_only(&pod));
        assert_eq!(c.metadata_only_conflict(), None);
        // Written back only when there are some (older specs stay byte for byte).
        let back = serde_json::to_value(&c).expect("serializes");
        assert_eq!(back["metadataOnly"], serde_json::json!([{"apiVersion": "v1", "kind": "Pod"}]));
        let without: ControllerSpec = serde_json::from_value(serde_json::json!({"index": 0, "name": "x",
            "for": {"apiVersion": "v1", "kind": "ConfigMap"}}))
        .expect("valid controller");
        assert!(serde_json::to_value(&without).expect("serializes").get("metadataOnly").is_none());

        c.manages.push(pod.clone());
        let conflict = c.metadata_only_conflict().expect("a managed kind is needed in full");
        assert_eq!(conflict.why, MetadataOnlyNeed::Managed);
        assert_eq!(
            conflict.to_string(),
            "operator \"podwatch\": .reads(Pod, { metadataOnly: true }): Pod is managed by this operator \
             (the Ready condition reads its children's status), so its objects are cached in full; drop metadataOnly"
        );
        c.manages.clear();
        c.for_ = pod;
        assert_eq!(c.metadata_only_conflict().map(|e| e.why), Some(MetadataOnlyNeed::Reconciled));
    }

    #[test]
    fn reads_several_versions() {
        let json = serde_json::json!({
            "apiVersion": "batch.example.com/v2", "group": "batch.example.com", "version": "v2",
            "kind": "CronTab", "plural": "crontabs", "singular": "crontab", "schema": {"type": "object"},
            "versions": [
                {"name": "v2", "served": true, "storage": false, "schema": {"type": "object"}},
                {"name": "v1", "served": true, "storage": true, "deprecated": {"warning": "use v2"},
                 "schema": {"type": "object"}, "printerColumns": []}
            ]
        });
        let r: ResourceSpec = serde_json::from_value(json).expect("valid resource");
        assert!(r.converts());
        assert_eq!(r.storage_version(), "v1");
        assert_eq!(r.api_version_of("v1"), "batch.example.com/v1");
        assert_eq!(
            r.all_versions()[1].deprecated.as_ref().and_then(|d| d.warning.as_deref()),
            Some("use v2")
        );
    }
}
