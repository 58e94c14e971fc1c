//! The kinds the server knows: the built-in table and the CRDs registered at run time,
//! and the discovery documents built from them.

use ctop_core::split_api_version;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::{Value, json};

use crate::merge::shape::{Shape, builtin_shape};

/// Where objects of a resource are stored. Versions of one resource share a store; the
/// two Event APIs share one too.
pub type StoreKey = Arc<str>;

/// Everything the server knows about one served `group/version/resource`.
#[derive(Clone)]
pub struct ResourceType {
    /// API group, empty for core.
    pub group: String,
    /// Served version.
    pub version: String,
    /// `apiVersion` of this type, e.g. `apps/v1` or `v1`.
    pub gv: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Plural resource name, e.g. `deployments`.
    pub plural: String,
    /// Singular name, e.g. `deployment`.
    pub singular: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for kubectl (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether `/status` is a subresource (status is then ignored on the main endpoint).
    pub status: bool,
    /// Whether `/scale` is served, with the paths of spec/status replicas.
    pub scale: Option<Scale>,
    /// Whether `metadata.generation` is maintained.
    pub generation: bool,
    /// The verbs served.
    pub verbs: &'static [&'static str],
    /// The store shared by all versions of this resource.
    pub store: StoreKey,
    /// The custom resource definition data, for CRD-backed kinds.
    pub crd: Option<Arc<CrdVersion>>,
    /// List types and merge keys.
    pub shape: Arc<dyn Shape>,
}

impl std::fmt::Debug for ResourceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} {}", self.group, self.version, self.plural)
    }
}

/// Paths of the replica fields behind `/scale`.
#[derive(Clone, Debug)]
pub struct Scale {
    /// JSON pointer to the desired replicas, e.g. `/spec/replicas`.
    pub spec_replicas: String,
    /// JSON pointer to the observed replicas.
    pub status_replicas: String,
    /// JSON pointer to the label selector string, if any.
    pub label_selector: Option<String>,
}

/// The schema-related parts of one CRD version.
#[derive(Clone, Debug)]
pub struct CrdVersion {
    /// The CRD's name (`<plural>.<group>`).
    pub crd_name: String,
    /// `openAPIV3Schema`, if given.
    pub schema: Option<Value>,
    /// Its `x-kubernetes-validations`, compiled once when the CRD is stored.
    pub cel: ctop_schema::CelRules,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<Value>,
    /// The `Warning` every request in this version is answered with when it is
    /// `deprecated`: its `deprecationWarning`, or the API server's default text.
    pub deprecation: Option<String>,
    /// What all versions of the CRD share.
    pub definition: Arc<CrdDefinition>,
}

/// What every version of one CRD shares: where its objects are stored and how they convert
/// between versions.
#[derive(Debug)]
pub struct CrdDefinition {
    /// `spec.group`.
    pub group: String,
    /// `spec.names.listKind` (`<Kind>List` by default).
    pub list_kind: String,
    /// The version objects are written in (`storage: true`).
    pub storage_version: String,
    /// Every version of `spec.versions`, served or not, in its order, with its schema: a
    /// conversion's result is pruned with its target version's.
    pub versions: Vec<(String, Option<Value>)>,
    /// `spec.conversion`.
    pub conversion: Conversion,
    /// Whether the server cannot make the conversion webhook's client (its `caBundle` does
    /// not load): it then serves none of the CRD's objects.
    pub unservable: bool,
}

/// A CRD's `spec.conversion.strategy`, with what it needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Conversion {
    /// `None`: only `apiVersion` changes.
    None,
    /// `Webhook`: a `ConversionReview` to `client_config` (a `clientConfig` as written), in
    /// the first of `review_versions` the server knows.
    Webhook {
        /// `spec.conversion.webhook.clientConfig`.
        client_config: Value,
        /// `spec.conversion.webhook.conversionReviewVersions`.
        review_versions: Vec<String>,
    },
}

impl CrdDefinition {
    /// `group/version`.
    pub fn api_version(&self, version: &str) -> String {
        join_gv(&self.group, version)
    }

    /// The schema of `version`, if the CRD has that version and it has one.
    pub fn schema(&self, version: &str) -> Option<&Value> {
        self.versions.iter().find(|(v, _)| v == version).and_then(|(_, s)| s.as_ref())
    }
}

const ALL_VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

impl ResourceType {
    /// `apiVersion` for this type, e.g. `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        self.gv.clone()
    }

    /// `group/resource` for error messages.
    pub fn gr(&self) -> crate::error::GroupResource<'_> {
        crate::error::GroupResource { group: &self.group, resource: &self.plural }
    }

    /// `Kind.group` as used in 422 messages.
    pub fn kind_group(&self) -> String {
        if self.group.is_empty() { self.kind.clone() } else { format!("{}.{}", self.kind, self.group) }
    }

    fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            gv: join_gv(group, version),
            kind: kind.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status: false,
            scale: None,
            generation: false,
            verbs: ALL_VERBS,
            store: Arc::from(format!("{group}/{plural}")),
            crd: None,
            shape: Arc::new(builtin_shape(kind)),
        }
    }

    fn short(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    fn all(mut self) -> Self {
        self.categories = vec!["all".into()];
        self
    }

    /// The `api-extensions` category (`kubectl get api-extensions`).
    fn extension(mut self) -> Self {
        self.categories = vec!["api-extensions".into()];
        self
    }

    fn verbs(mut self, verbs: &'static [&'static str]) -> Self {
        self.verbs = verbs;
        self
    }

    fn status(mut self) -> Self {
        self.status = true;
        self
    }

    fn generation(mut self) -> Self {
        self.generation = true;
        self
    }

    fn scale(mut self) -> Self {
        self.scale = Some(Scale {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            label_selector: Some("/spec/selector".into()),
        });
        self
    }

    fn store(mut self, key: &str) -> Self {
        self.store = Arc::from(key);
        self
    }

    /// A create-only review resource: answered at once, never stored.
    fn review(mut self) -> Self {
        self.verbs = &["create"];
        self
    }

    /// Whether this is a create-only review (the access reviews, SelfSubjectReview,
    /// TokenReview).
    pub fn is_review(&self) -> bool {
        self.verbs == ["create"]
    }
}

fn builtins() -> Vec<ResourceType> {
    let b = ResourceType::builtin;
    vec![
        // Namespaces have no deletecollection (`pkg/registry/core/namespace/storage`).
        b("", "v1", "Namespace", "namespaces", false)
            .short(&["ns"])
            .status()
            .verbs(&["create", "delete", "get", "list", "patch", "update", "watch"]),
        b("", "v1", "ConfigMap", "configmaps", true).short(&["cm"]),
        b("", "v1", "Secret", "secrets", true),
        b("", "v1", "Service", "services", true).short(&["svc"]).all().status(),
        b("", "v1", "ServiceAccount", "serviceaccounts", true).short(&["sa"]),
        b("", "v1", "Pod", "pods", true).short(&["po"]).all().status(),
        b("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true).short(&["pvc"]).status(),
        b("", "v1", "PersistentVolume", "persistentvolumes", false).short(&["pv"]).status(),
        b("", "v1", "Event", "events", true).short(&["ev"]).store("/events"),
        b("", "v1", "Endpoints", "endpoints", true).short(&["ep"]),
        b("", "v1", "ReplicationController", "replicationcontrollers", true)
            .short(&["rc"])
            .all()
            .status()
            .scale()
            .generation(),
        b("", "v1", "Node", "nodes", false).short(&["no"]).status(),
        b("", "v1", "ResourceQuota", "resourcequotas", true).short(&["quota"]).status(),
        b("", "v1", "LimitRange", "limitranges", true).short(&["limits"]),
        b("", "v1", "PodTemplate", "podtemplates", true),
        b("apps", "v1", "Deployment", "deployments", true)
            .short(&["deploy"])
            .all()
            .status()
            .scale()
            .generation(),
        b("apps", "v1", "StatefulSet", "statefulsets", true)
            .short(&["sts"])
            .all()
            .status()
            .scale()
            .generation(),
        b("apps", "v1", "DaemonSet", "daemonsets", true).short(&["ds"]).all().status().generation(),
        b("apps", "v1", "ReplicaSet", "replicasets", true).short(&["rs"]).all().status().scale().generation(),
        b("apps", "v1", "ControllerRevision", "controllerrevisions", true),
        b("batch", "v1", "Job", "jobs", true).all().status().generation(),
        b("batch", "v1", "CronJob", "cronjobs", true).short(&["cj"]).all().status().generation(),
        b("networking.k8s.io", "v1", "Ingress", "ingresses", true).short(&["ing"]).status().generation(),
        b("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false),
        b("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true)
            .short(&["netpol"])
            .generation(),
        b("networking.k8s.io", "v1", "IPAddress", "ipaddresses", false).short(&["ip"]),
        b("networking.k8s.io", "v1", "ServiceCIDR", "servicecidrs", false).status(),
        b("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true)
            .short(&["pdb"])
            .status()
            .generation(),
        b("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true)
            .short(&["hpa"])
            .all()
            .status(),
        b("coordination.k8s.io", "v1", "Lease", "leases", true),
        b("apiregistration.k8s.io", "v1", "APIService", "apiservices", false).extension().status(),
        b("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true),
        b("events.k8s.io", "v1", "Event", "events", true).short(&["ev"]).store("/events"),
        b("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
        b("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true),
        b("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
        b("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
        )
        .extension()
        .generation(),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
        )
        .extension()
        .generation(),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
        )
        .extension()
        .status()
        .generation(),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
        )
        .extension()
        .generation(),
        b("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false)
            .short(&["crd", "crds"])
            .extension()
            .status()
            .generation(),
        b("storage.k8s.io", "v1", "StorageClass", "storageclasses", false).short(&["sc"]),
        b("storage.k8s.io", "v1", "CSIDriver", "csidrivers", false),
        b("storage.k8s.io", "v1", "CSINode", "csinodes", false),
        b("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", true),
        b("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", false).status(),
        b("certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests", false)
            .short(&["csr"])
            .status(),
        b("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false),
        b("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", false).status().generation(),
        b(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            "prioritylevelconfigurations",
            false,
        )
        .status()
        .generation(),
        b("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", false)
            .review(),
        b("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", false).review(),
        b("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", true)
            .review(),
        b("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", false).review(),
        b("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false).review(),
        b("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false).short(&["pc"]),
    ]
}

/// The table of served resources. Cheap to clone (an `Arc` inside).
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<RwLock<Vec<Arc<ResourceType>>>>,
}

impl Registry {
    /// A registry with the built-in kinds.
    pub fn with_builtins() -> Self {
        let r = Self::default();
        r.inner.write().extend(builtins().into_iter().map(Arc::new));
        r
    }

    /// The type served at `group/version/plural`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.inner
            .read()
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
            .cloned()
    }

    /// The type of `apiVersion` + `kind`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = split_api_version(api_version);
        self.inner.read().iter().find(|t| t.group == group && t.version == version && t.kind == kind).cloned()
    }

    /// Every served type.
    pub fn all(&self) -> Vec<Arc<ResourceType>> {
        self.inner.read().clone()
    }

    /// Every type that shares `store`.
    pub fn by_store(&self, store: &str) -> Vec<Arc<ResourceType>> {
        self.inner.read().iter().filter(|t| &*t.store == store).cloned().collect()
    }

    /// Replace all types of the CRD `crd_name` with `types` (empty to remove it).
    pub fn set_crd(&self, crd_name: &str, types: Vec<ResourceType>) {
        let mut inner = self.inner.write();
        inner.retain(|t| t.crd.as_ref().is_none_or(|c| c.crd_name != crd_name));
        inner.extend(types.into_iter().map(Arc::new));
    }

    /// Groups and their versions, core first then in registration order (kube's
    /// priority order for built-ins).
    fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in self.inner.read().iter() {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) => {
                    if !versions.contains(&t.version) {
                        versions.push(t.version.clone());
                    }
                }
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        for (_, versions) in &mut out {
            versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        }
        out
    }

    /// `GET /api`.
    pub fn api_versions(&self, server_address: &str) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        })
    }

    /// `GET /apis`.
    pub fn api_group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .into_iter()
            .filter(|(g, _)| !g.is_empty())
            .map(|(g, versions)| group_doc(&g, &versions))
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /apis/{group}`.
    pub fn api_group(&self, group: &str) -> Option<Value> {
        let (g, versions) = self.groups().into_iter().find(|(g, _)| g == group)?;
        let mut doc = group_doc(&g, &versions);
        doc["kind"] = json!("APIGroup");
        doc["apiVersion"] = json!("v1");
        Some(doc)
    }

    /// `GET /api/v1` or `/apis/{group}/{version}`.
    pub fn api_resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let types: Vec<Arc<ResourceType>> =
            self.inner.read().iter().filter(|t| t.group == group && t.version == version).cloned().collect();
        if types.is_empty() {
            return None;
        }
        let mut resources = Vec::new();
        for t in &types {
            let mut r = json!({
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": t.verbs,
            });
            if !t.short_names.is_empty() {
                r["shortNames"] = json!(t.short_names);
            }
            if !t.categories.is_empty() {
                r["categories"] = json!(t.categories);
            }
            resources.push(r);
            if t.status {
                resources.push(json!({"name": format!("{}/status", t.plural), "singularName": "", "namespaced": t.namespaced, "kind": t.kind, "verbs": ["get", "patch", "update"]}));
            }
            if t.scale.is_some() {
                resources.push(json!({"name": format!("{}/scale", t.plural), "singularName": "", "namespaced": t.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
            }
            if t.kind == "Namespace" {
                resources.push(json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]}));
            }
            if t.kind == "ServiceAccount" {
                resources.push(json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true, "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"]}));
            }
        }
        let gv = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
        Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
        )
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.inner.read().iter()).finish()
    }
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

/// Kubernetes version priority: GA > beta > alpha, higher numbers first.
pub fn version_priority(v: &str) -> (u8, u32, u32) {
    let rest = v.strip_prefix('v').unwrap_or(v);
    let major_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(major) = rest[..major_len].parse::<u32>() else {
        return (0, 0, 0);
    };
    let tail = &rest[major_len..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    let (stage, num) = if let Some(n) = tail.strip_prefix("beta") {
        (2, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n)
    } else {
        return (0, 0, 0);
    };
    (stage, major, num.parse().unwrap_or(0))
}

fn join_gv(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }
}

/// Built-in ClusterRoles etc. are seeded by the store; this maps a CRD object to the
/// resource types it serves.
pub fn crd_types(crd: &Value, shape_for: impl Fn(Option<&Value>) -> Arc<dyn Shape>) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default().to_owned();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default().to_owned();
    let kind = names["kind"].as_str().unwrap_or_default().to_owned();
    let singular = names["singular"].as_str().map_or_else(|| kind.to_lowercase(), str::to_owned);
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let store: StoreKey = Arc::from(format!("{group}/{plural}"));
    let all_versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let conversion = match spec.pointer("/conversion/strategy").and_then(Value::as_str) {
        Some("Webhook") => Conversion::Webhook {
            client_config: webhook_client_config(spec),
            review_versions: strings(
                spec.pointer("/conversion/webhook/conversionReviewVersions").unwrap_or(&Value::Null),
            ),
        },
        _ => Conversion::None,
    };
    let unservable = match &conversion {
        Conversion::Webhook { client_config, .. } => {
            crate::api::webhook::Target::new(client_config, &std::collections::HashMap::new()).is_err()
        }
        Conversion::None => false,
    };
    let definition = Arc::new(CrdDefinition {
        group: group.clone(),
        list_kind: names["listKind"].as_str().map_or_else(|| format!("{kind}List"), str::to_owned),
        storage_version: all_versions
            .iter()
            .find(|v| v["storage"].as_bool() == Some(true))
            .and_then(|v| v["name"].as_str())
            .unwrap_or_default()
            .to_owned(),
        versions: all_versions
            .iter()
            .map(|v| {
                let schema = v.pointer("/schema/openAPIV3Schema").filter(|s| !s.is_null()).cloned();
                (v["name"].as_str().unwrap_or_default().to_owned(), schema)
            })
            .collect(),
        conversion,
        unservable,
    });
    let mut out = Vec::new();
    for v in spec["versions"].as_array().into_iter().flatten() {
        if v["served"].as_bool() == Some(false) {
            continue;
        }
        let version = v["name"].as_str().unwrap_or_default().to_owned();
        let deprecation =
            (v["deprecated"].as_bool() == Some(true)).then(|| match v["deprecationWarning"].as_str() {
                Some(text) => text.to_owned(),
                None => default_deprecation_warning(&version, &group, &kind, &all_versions),
            });
        let schema = v["schema"]["openAPIV3Schema"].clone();
        let schema = (!schema.is_null()).then_some(schema);
        let sub = &v["subresources"];
        let scale = sub.get("scale").map(|s| Scale {
            spec_replicas: path_to_pointer(s["specReplicasPath"].as_str().unwrap_or(".spec.replicas")),
            status_replicas: path_to_pointer(s["statusReplicasPath"].as_str().unwrap_or(".status.replicas")),
            label_selector: s["labelSelectorPath"].as_str().map(path_to_pointer),
        });
        out.push(ResourceType {
            gv: join_gv(&group, &version),
            group: group.clone(),
            version,
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced,
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            status: sub.get("status").is_some(),
            scale,
            generation: true,
            verbs: ALL_VERBS,
            store: store.clone(),
            shape: shape_for(schema.as_ref()),
            crd: Some(Arc::new(CrdVersion {
                crd_name: crd_name.clone(),
                cel: schema.as_ref().map(ctop_schema::CelRules::compile).unwrap_or_default(),
                schema,
                printer_columns: v["additionalPrinterColumns"].as_array().cloned().unwrap_or_default(),
                deprecation,
                definition: definition.clone(),
            })),
        });
    }
    out
}

/// The conversion webhook's `clientConfig`, a whitespace-only `caBundle` left out as the
/// server leaves it out (`webhook_converter.go`, `webhookClientConfigForCRD`).
fn webhook_client_config(spec: &Value) -> Value {
    use base64::Engine as _;
    let mut cc = spec.pointer("/conversion/webhook/clientConfig").cloned().unwrap_or(Value::Null);
    let bundle =
        cc["caBundle"].as_str().and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
    if bundle.is_some_and(|b| !b.is_empty() && b.trim_ascii().is_empty())
        && let Some(m) = cc.as_object_mut()
    {
        m.remove("caBundle");
    }
    cc
}

/// The warning of a deprecated CRD version without a `deprecationWarning`
/// (apiextensions-apiserver `pkg/apiserver/customresource_handler.go`,
/// `defaultDeprecationWarning`): `<group>/<version> <Kind> is deprecated`, and where a served,
/// non-deprecated version ranks above it, `; use <group>/<highest such version> <Kind>`.
fn default_deprecation_warning(deprecated: &str, group: &str, kind: &str, versions: &[Value]) -> String {
    let message = format!("{group}/{deprecated} {kind} is deprecated");
    let newer = versions
        .iter()
        .filter(|v| v["served"].as_bool() == Some(true) && v["deprecated"].as_bool() != Some(true))
        .filter_map(|v| v["name"].as_str())
        .filter(|v| version_priority(v) > version_priority(deprecated))
        .max_by_key(|v| version_priority(v));
    match newer {
        Some(v) => format!("{message}; use {group}/{v} {kind}"),
        None => message,
    }
}

/// `.spec.replicas` → `/spec/replicas`.
fn path_to_pointer(path: &str) -> String {
    path.split('.').filter(|s| !s.is_empty()).fold(String::new(), |mut acc, s| {
        acc.push('/');
        acc.push_str(s);
        acc
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_priority_orders_like_kubernetes() {
        let mut vs = vec!["v1beta1", "v1", "v2alpha1", "v2", "v1alpha1", "v10beta3", "foo"];
        vs.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(vs, ["v2", "v1", "v10beta3", "v1beta1", "v2alpha1", "v1alpha1", "foo"]);
    }

    #[test]
    fn discovery_lists_subresources() {
        let r = Registry::with_builtins();
        let doc = r.api_resource_list("apps", "v1").expect("apps/v1 served");
        let names: Vec<&str> =
            doc["resources"].as_array().into_iter().flatten().filter_map(|r| r["name"].as_str()).collect();
        assert!(names.contains(&"deployments"));
        assert!(names.contains(&"deployments/status"));
        assert!(names.contains(&"deployments/scale"));
        let groups = r.api_group_list();
        assert!(
            groups["groups"].as_array().is_some_and(|g| g.iter().any(|g| g["name"] == "coordination.k8s.io"))
        );
    }
}
