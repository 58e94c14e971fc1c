//! Kubernetes RBAC authorization for kubesim: allow/deny decisions and the API server's
//! `403` Status bodies.
//!
//! Where to start:
//! - [`authorize`] answers "may this [`User`] do this request ([`Attributes`])?" against a
//!   snapshot of the RBAC objects ([`RbacSource`]); [`decide`] also returns the reason string
//!   the real server appends to a denial (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`).
//! - [`forbidden_status`] / [`forbidden_status_with_reason`] build the `403` body,
//! - [`bootstrap_objects`] returns the default ClusterRoles/ClusterRoleBindings a fresh cluster has.
//!
//! Behaviour follows kube-apiserver (`plugin/pkg/auth/authorizer/rbac`,
//! `pkg/registry/rbac/validation/rule.go`, `endpoints/handlers/responsewriters`):
//! - The privileged-group authorizer runs first: any member of `system:masters` is allowed
//!   everything, whatever the bindings say. RBAC ([`rbac_decide`]) runs after it.
//! - RBAC visits every ClusterRoleBinding, then (for a namespaced request only) the
//!   RoleBindings of the request's namespace; the first rule that matches allows. A binding
//!   whose role is missing is not a denial by itself: the error is collected and becomes the
//!   reason when nothing else allows.
//! - A ClusterRole with an `aggregationRule` gets, at evaluation time, the union of the rules of
//!   every other ClusterRole its selectors match (the steady state of the aggregation
//!   controller); its own stored `rules` are ignored, as the controller overwrites them.

mod escalation;

pub use escalation::{EscalationError, check_binding, check_role};

use crate::kinds::meta::str_at;
use crate::kinds::selector::LabelSelector;
use ctop_schema::go::quote as go_quote;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

/// The group whose members the API server allows everything, before RBAC is consulted.
pub const PRIVILEGED_GROUP: &str = "system:masters";
/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of the anonymous user.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The user name of requests without credentials when anonymous auth is on.
pub const ANONYMOUS_USER: &str = "system:anonymous";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// An authenticated identity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    /// User name, e.g. `system:serviceaccount:ns:sa`.
    pub name: String,
    /// Groups, e.g. `system:serviceaccounts`, `system:serviceaccounts:ns`, `system:authenticated`.
    pub groups: Vec<String>,
}

impl User {
    /// A user with the given name and groups.
    pub fn new(name: impl Into<String>, groups: &[&str]) -> Self {
        User { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect() }
    }

    /// The identity a service account token authenticates as (name and the three groups).
    pub fn service_account(namespace: &str, name: &str) -> Self {
        User {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{namespace}"),
                AUTHENTICATED_GROUP.to_string(),
            ],
        }
    }

    /// The identity of a request without credentials when anonymous auth is enabled.
    pub fn anonymous() -> Self {
        User::new(ANONYMOUS_USER, &[UNAUTHENTICATED_GROUP])
    }
}

/// What a request asks to do (the authorizer attributes of kube-apiserver's RequestInfo).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attributes {
    /// `get list watch create update patch delete deletecollection` (or e.g. `impersonate`);
    /// for non-resource requests the lowercased HTTP method.
    pub verb: String,
    /// API group, `""` for core.
    pub api_group: String,
    /// Resource (plural), e.g. `deployments`.
    pub resource: String,
    /// Subresource, e.g. `status`, or `""`.
    pub subresource: String,
    /// Object name, `""` for collection requests (list, watch, create, deletecollection).
    pub name: String,
    /// Namespace, `""` for cluster-scoped or all-namespaces requests.
    pub namespace: String,
    /// URL path; only used for non-resource requests.
    pub path: String,
    /// True for API resource requests, false for non-resource URLs (`/healthz`, `/api`, ...).
    pub resource_request: bool,
}

impl Attributes {
    /// A resource request (cluster scope, no name, no subresource until set).
    pub fn resource(verb: &str, api_group: &str, resource: &str) -> Self {
        Attributes {
            verb: verb.into(),
            api_group: api_group.into(),
            resource: resource.into(),
            resource_request: true,
            ..Default::default()
        }
    }

    /// A non-resource request for `path` with the lowercased HTTP method as `verb`.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Attributes { verb: verb.into(), path: path.into(), ..Default::default() }
    }

    /// Sets the namespace.
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets the object name.
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the subresource.
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.into();
        self
    }
}

/// Snapshot of the RBAC objects (as serde_json Values exactly as stored:
/// rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding, ClusterRoleBinding).
pub trait RbacSource {
    /// All ClusterRoles.
    fn cluster_roles(&self) -> Vec<Value>;
    /// All ClusterRoleBindings.
    fn cluster_role_bindings(&self) -> Vec<Value>;
    /// The Roles of one namespace.
    fn roles(&self, namespace: &str) -> Vec<Value>;
    /// The RoleBindings of one namespace.
    fn role_bindings(&self, namespace: &str) -> Vec<Value>;
}

/// Why a binding or an aggregation rule could not be resolved. The `Display` text is the
/// real server's, as it appears after `RBAC: ` in a denial.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthzError {
    /// A RoleBinding's `roleRef` names a Role that does not exist in the binding's namespace.
    #[error("role.rbac.authorization.k8s.io {} not found", go_quote(.0))]
    RoleNotFound(String),
    /// A binding's `roleRef` (or [`aggregated_rules`]) names a ClusterRole that does not exist.
    #[error("clusterrole.rbac.authorization.k8s.io {} not found", go_quote(.0))]
    ClusterRoleNotFound(String),
    /// A binding's `roleRef.kind` is neither `Role` nor `ClusterRole`.
    #[error("unsupported role reference kind: {}", go_quote(.0))]
    UnsupportedRoleRefKind(String),
    /// An `aggregationRule.clusterRoleSelectors` entry is not a valid label selector.
    #[error("{0}")]
    InvalidSelector(String),
}

/// The outcome of authorizing one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// On allow by RBAC, `RBAC: allowed by ...`; on deny, `RBAC: <resolution errors>` or `""`
    /// (the text the server appends to the 403 message after `": "`).
    pub reason: String,
}

/// Whether `user` may perform `attrs`: the privileged group first, then RBAC.
pub fn authorize(user: &User, attrs: &Attributes, rbac: &dyn RbacSource) -> bool {
    decide(user, attrs, rbac).allowed
}

/// Like [`authorize`], with the reason string (pass it to [`forbidden_status_with_reason`]).
pub fn decide(user: &User, attrs: &Attributes, rbac: &dyn RbacSource) -> Decision {
    if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        return Decision { allowed: true, reason: String::new() };
    }
    rbac_decide(user, attrs, rbac)
}

/// The RBAC authorizer alone (no `system:masters` short-circuit).
pub fn rbac_decide(user: &User, attrs: &Attributes, rbac: &dyn RbacSource) -> Decision {
    let mut resolver = Resolver::new(rbac);
    let mut errors = Vec::new();
    for binding in rbac.cluster_role_bindings() {
        if let Some(reason) = resolver.visit(&binding, "", user, attrs, &mut errors) {
            return Decision { allowed: true, reason };
        }
    }
    if !attrs.namespace.is_empty() {
        for binding in rbac.role_bindings(&attrs.namespace) {
            if let Some(reason) = resolver.visit(&binding, &attrs.namespace, user, attrs, &mut errors) {
                return Decision { allowed: true, reason };
            }
        }
    }
    Decision { allowed: false, reason: errors_reason(&errors) }
}

/// The real 403 Status body for a denied request (no authorizer reason).
pub fn forbidden_status(user: &User, attrs: &Attributes) -> Value {
    forbidden_status_with_reason(user, attrs, "")
}

/// The real 403 Status body; a non-empty `reason` (see [`Decision::reason`]) is appended
/// to the message after `": "`, as the server does.
pub fn forbidden_status_with_reason(user: &User, attrs: &Attributes, reason: &str) -> Value {
    let mut msg = forbidden_message(user, attrs);
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    let (group, resource, name) = if attrs.resource_request {
        (attrs.api_group.as_str(), attrs.resource.as_str(), attrs.name.as_str())
    } else {
        ("", "", "")
    };
    let qualified = if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") };
    let message = if group.is_empty() && resource.is_empty() {
        format!("forbidden: {msg}")
    } else if name.is_empty() {
        format!("{qualified} is forbidden: {msg}")
    } else {
        format!("{qualified} {} is forbidden: {msg}", go_quote(name))
    };
    let mut details = Map::new();
    for (key, value) in [("name", name), ("group", group), ("kind", resource)] {
        if !value.is_empty() {
            details.insert(key.into(), value.into());
        }
    }
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Forbidden", "details": details, "code": 403,
    })
}

/// The rules the aggregation controller writes into `role` (the union of the rules of the
/// other ClusterRoles its selectors match, nested aggregation resolved, duplicates dropped,
/// matched roles taken in name order); `None` for a role without an `aggregationRule` or
/// with a selector that cannot be read (the controller leaves those alone).
pub(crate) fn aggregated_rule_values(role: &Value, cluster_roles: &[Value]) -> Option<Vec<Value>> {
    selectors(aggregation_rule(role)?).ok()?;
    let rules = effective_rules(role, cluster_roles, &mut BTreeMap::new(), &mut BTreeSet::new());
    Some(rules.iter().map(Rule::to_value).collect())
}

/// The effective rules of the aggregated ClusterRole `name`. `Ok(None)` if the role has no
/// `aggregationRule`. The tests' view of what authorization resolves.
#[cfg(test)]
fn aggregated_rules(name: &str, cluster_roles: &[Value]) -> Result<Option<Vec<Value>>, AuthzError> {
    let role = cluster_roles
        .iter()
        .find(|r| meta_name(r) == name)
        .ok_or_else(|| AuthzError::ClusterRoleNotFound(name.into()))?;
    let Some(agg) = aggregation_rule(role) else {
        return Ok(None);
    };
    selectors(agg)?;
    let rules = effective_rules(role, cluster_roles, &mut BTreeMap::new(), &mut BTreeSet::new());
    Ok(Some(rules.iter().map(Rule::to_value).collect()))
}

// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

/// Looks roles up lazily, once per decision, and caches aggregated rules.
struct Resolver<'a> {
    rbac: &'a dyn RbacSource,
    cluster_roles: Option<Vec<Value>>,
    roles: Option<Vec<Value>>,
    cache: BTreeMap<String, Vec<Rule>>,
}

impl<'a> Resolver<'a> {
    fn new(rbac: &'a dyn RbacSource) -> Self {
        Resolver { rbac, cluster_roles: None, roles: None, cache: BTreeMap::new() }
    }

    /// Visits one binding; `Some(reason)` if one of its rules allows the request.
    fn visit(
        &mut self,
        binding: &Value,
        namespace: &str,
        user: &User,
        attrs: &Attributes,
        errors: &mut Vec<AuthzError>,
    ) -> Option<String> {
        let subjects = binding.get("subjects").and_then(Value::as_array)?;
        let subject = subjects.iter().find(|s| subject_applies(user, s, namespace))?;
        let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
        match self.role_ref_rules(role_ref, namespace) {
            Err(e) => {
                errors.push(e);
                None
            }
            Ok(rules) => rules.iter().any(|r| r.allows(attrs)).then(|| {
                let name = meta_name(binding);
                let (kind, name) = if namespace.is_empty() {
                    ("ClusterRoleBinding", name.to_string())
                } else {
                    ("RoleBinding", format!("{name}/{namespace}"))
                };
                format!(
                    "RBAC: allowed by {kind} {} of {} {} to {}",
                    go_quote(&name),
                    str_at(role_ref, "kind"),
                    go_quote(str_at(role_ref, "name")),
                    describe_subject(subject, namespace)
                )
            }),
        }
    }

    fn role_ref_rules(&mut self, role_ref: &Value, namespace: &str) -> Result<Vec<Rule>, AuthzError> {
        let name = str_at(role_ref, "name");
        match str_at(role_ref, "kind") {
            "Role" => {
                let rbac = self.rbac;
                let roles = self.roles.get_or_insert_with(|| rbac.roles(namespace));
                roles
                    .iter()
                    .find(|r| meta_name(r) == name)
                    .map(parse_rules)
                    .ok_or_else(|| AuthzError::RoleNotFound(name.into()))
            }
            "ClusterRole" => {
                let rbac = self.rbac;
                let all = self.cluster_roles.get_or_insert_with(|| rbac.cluster_roles());
                let role = all
                    .iter()
                    .find(|r| meta_name(r) == name)
                    .ok_or_else(|| AuthzError::ClusterRoleNotFound(name.into()))?;
                Ok(effective_rules(role, all, &mut self.cache, &mut BTreeSet::new()))
            }
            other => Err(AuthzError::UnsupportedRoleRefKind(other.into())),
        }
    }
}

/// A ClusterRole's rules, aggregated if it has an `aggregationRule`. A role met again while
/// its own aggregation is in progress (a cycle) contributes its stored rules; a role with an
/// invalid selector keeps its stored rules (the controller fails and leaves it untouched).
fn effective_rules(
    role: &Value,
    all: &[Value],
    cache: &mut BTreeMap<String, Vec<Rule>>,
    visiting: &mut BTreeSet<String>,
) -> Vec<Rule> {
    let name = meta_name(role);
    if let Some(rules) = cache.get(name) {
        return rules.clone();
    }
    let Some(agg) = aggregation_rule(role) else {
        return parse_rules(role);
    };
    if !visiting.insert(name.to_string()) {
        return parse_rules(role);
    }
    let rules = match selectors(agg) {
        Err(_) => parse_rules(role),
        Ok(selectors) => {
            let mut out: Vec<Rule> = Vec::new();
            for selector in selectors.iter().flatten() {
                let mut matching: Vec<&Value> = all
                    .iter()
                    .filter(|c| meta_name(c) != name && selector.matches(c.pointer("/metadata/labels")))
                    .collect();
                matching.sort_by_key(|c| meta_name(c));
                for other in matching {
                    for rule in effective_rules(other, all, cache, visiting) {
                        if !out.contains(&rule) {
                            out.push(rule);
                        }
                    }
                }
            }
            out
        }
    };
    visiting.remove(name);
    cache.insert(name.to_string(), rules.clone());
    rules
}

fn aggregation_rule(role: &Value) -> Option<&Value> {
    role.get("aggregationRule").filter(|a| a.is_object())
}

/// The parsed `clusterRoleSelectors`; `None` entries (JSON null) match nothing.
fn selectors(agg: &Value) -> Result<Vec<Option<LabelSelector>>, AuthzError> {
    agg.get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .map_or(Ok(Vec::new()), |s| s.iter().map(parse_selector).collect())
}

fn subject_applies(user: &User, subject: &Value, namespace: &str) -> bool {
    let name = str_at(subject, "name");
    match str_at(subject, "kind") {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let sa_namespace = match str_at(subject, "namespace") {
                "" => namespace,
                ns => ns,
            };
            !sa_namespace.is_empty() && user.name == format!("system:serviceaccount:{sa_namespace}:{name}")
        }
        _ => false,
    }
}

fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = str_at(subject, "kind");
    let name = str_at(subject, "name");
    if kind == "ServiceAccount" {
        let ns = match str_at(subject, "namespace") {
            "" => binding_namespace,
            ns => ns,
        };
        return format!("{kind} {}", go_quote(&format!("{name}/{ns}")));
    }
    format!("{kind} {}", go_quote(name))
}

/// `RBAC: <aggregate>` as apimachinery's error aggregate prints it: one error alone, or the
/// distinct messages in `[a, b]`.
fn errors_reason(errors: &[AuthzError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => format!("RBAC: {}", seen[0]),
        _ => format!("RBAC: [{}]", seen.join(", ")),
    }
}

/// The authorizer part of the 403 message (`User "u" cannot ...`).
pub(crate) fn forbidden_message(user: &User, attrs: &Attributes) -> String {
    let who = go_quote(&user.name);
    if !attrs.resource_request {
        return format!("User {who} cannot {} path {}", attrs.verb, go_quote(&attrs.path));
    }
    let mut resource = attrs.resource.clone();
    if !attrs.subresource.is_empty() {
        resource = format!("{resource}/{}", attrs.subresource);
    }
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {}", go_quote(&attrs.namespace))
    };
    format!(
        "User {who} cannot {} resource {} in API group {} {scope}",
        attrs.verb,
        go_quote(&resource),
        go_quote(&attrs.api_group)
    )
}

// ---------------------------------------------------------------------------------------------
// Rules and selectors
// ---------------------------------------------------------------------------------------------

/// A PolicyRule; missing and empty lists are the same (as in the aggregation controller's
/// semantic equality).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Rule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    resource_names: Vec<String>,
    non_resource_urls: Vec<String>,
}

impl Rule {
    fn parse(v: &Value) -> Rule {
        Rule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// The rule as the API writes it (empty lists left out).
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        for (key, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), json!(list));
            }
        }
        Value::Object(m)
    }

    /// RuleAllows: verb, then group/resource/name for resource requests or the URL otherwise.
    fn allows(&self, a: &Attributes) -> bool {
        if !self.verbs.iter().any(|v| v == "*" || *v == a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_urls.iter().any(|u| {
                u == "*" || *u == a.path || (u.ends_with('*') && a.path.starts_with(u.trim_end_matches('*')))
            });
        }
        let combined = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        self.api_groups.iter().any(|g| g == "*" || *g == a.api_group)
            && self.resources.iter().any(|r| {
                r == "*"
                    || *r == combined
                    || (!a.subresource.is_empty() && r.strip_prefix("*/") == Some(a.subresource.as_str()))
            })
            && (self.resource_names.is_empty() || self.resource_names.contains(&a.name))
    }
}

fn parse_rules(role: &Value) -> Vec<Rule> {
    role.get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(Rule::parse).collect())
        .unwrap_or_default()
}

/// A `clusterRoleSelectors` entry; JSON null matches nothing.
fn parse_selector(v: &Value) -> Result<Option<LabelSelector>, AuthzError> {
    if v.is_null() {
        return Ok(None);
    }
    LabelSelector::from_object(v).map(Some).map_err(AuthzError::InvalidSelector)
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default()
}

fn meta_name(v: &Value) -> &str {
    v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
}

// ---------------------------------------------------------------------------------------------
// Bootstrap policy
// ---------------------------------------------------------------------------------------------

const READ: &str = "get list watch";
const WRITE: &str = "create delete deletecollection patch update";
const READ_WRITE: &str = "create delete deletecollection get list patch update watch";
const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The real rules of the `system:aggregate-to-*` roles, one per line:
/// `role|group|resources|verbs`, verbs `READ`/`WRITE`/`READ_WRITE` or literal.
const AGGREGATE_RULES: &[&str] = &[
    "admin|authorization.k8s.io|localsubjectaccessreviews|create",
    "admin|rbac.authorization.k8s.io|rolebindings roles|READ_WRITE",
    "edit||pods/attach pods/exec pods/portforward pods/proxy secrets services/proxy|READ",
    "edit||serviceaccounts|impersonate",
    "edit||pods pods/attach pods/exec pods/portforward pods/proxy|WRITE",
    "edit||pods/eviction|create",
    "edit||configmaps events persistentvolumeclaims replicationcontrollers \
        replicationcontrollers/scale secrets serviceaccounts services services/proxy|WRITE",
    "edit||serviceaccounts/token|create",
    "edit|apps|daemonsets deployments deployments/rollback deployments/scale replicasets \
        replicasets/scale statefulsets statefulsets/scale|WRITE",
    "edit|autoscaling|horizontalpodautoscalers|WRITE",
    "edit|batch|cronjobs jobs|WRITE",
    "edit|extensions|daemonsets deployments deployments/rollback deployments/scale ingresses \
        networkpolicies replicasets replicasets/scale replicationcontrollers/scale|WRITE",
    "edit|policy|poddisruptionbudgets|WRITE",
    "edit|networking.k8s.io|ingresses networkpolicies|WRITE",
    "edit|coordination.k8s.io|leases|READ_WRITE",
    "view||configmaps endpoints persistentvolumeclaims persistentvolumeclaims/status pods \
        replicationcontrollers replicationcontrollers/scale serviceaccounts services services/status|READ",
    "view||bindings events limitranges namespaces/status pods/log pods/status \
        replicationcontrollers/status resourcequotas resourcequotas/status|READ",
    "view||namespaces|READ",
    "view|discovery.k8s.io|endpointslices|READ",
    "view|apps|controllerrevisions daemonsets daemonsets/status deployments deployments/scale \
        deployments/status replicasets replicasets/scale replicasets/status statefulsets \
        statefulsets/scale statefulsets/status|READ",
    "view|autoscaling|horizontalpodautoscalers horizontalpodautoscalers/status|READ",
    "view|batch|cronjobs cronjobs/status jobs jobs/status|READ",
    "view|extensions|daemonsets daemonsets/status deployments deployments/scale deployments/status \
        ingresses ingresses/status networkpolicies replicasets replicasets/scale replicasets/status \
        replicationcontrollers/scale|READ",
    "view|policy|poddisruptionbudgets poddisruptionbudgets/status|READ",
    "view|networking.k8s.io|ingresses ingresses/status networkpolicies|READ",
];

fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

fn rule(group: &str, resources: &str, verbs: &str) -> Value {
    json!({"apiGroups": [group], "resources": words(resources), "verbs": words(verbs)})
}

fn url_rule(urls: &str, verbs: &str) -> Value {
    json!({"nonResourceURLs": words(urls), "verbs": words(verbs)})
}

fn bootstrap_meta(name: &str, extra_label: Option<&str>) -> Value {
    let mut labels = Map::new();
    labels.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
    if let Some(label) = extra_label {
        labels.insert(label.into(), "true".into());
    }
    json!({
        "name": name, "labels": labels,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

fn cluster_role(name: &str, label: Option<&str>, rules: Vec<Value>) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
           "metadata": bootstrap_meta(name, label), "rules": rules})
}

/// An aggregated ClusterRole; `rules` is left unset (the controller fills it in).
fn aggregated_role(name: &str, label: Option<&str>, aggregate_from: &str) -> Value {
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
           "metadata": bootstrap_meta(name, label),
           "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {aggregate_from: "true"}}]}})
}

fn cluster_role_binding(name: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> =
        groups.iter().map(|g| json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": g})).collect();
    json!({"apiVersion": RBAC_API_VERSION, "kind": "ClusterRoleBinding",
           "metadata": bootstrap_meta(name, None),
           "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
           "subjects": subjects})
}

/// The default RBAC objects of a fresh cluster that matter here: ClusterRoles `cluster-admin`,
/// `system:discovery`, `system:basic-user`, `system:public-info-viewer`, `system:auth-delegator`, `system:monitoring`,
/// `system:service-account-issuer-discovery`, the aggregated `admin`/`edit`/`view` and the
/// `system:aggregate-to-{admin,edit,view}` roles they aggregate (real rules), plus the
/// ClusterRoleBindings of the real cluster (`cluster-admin` → `system:masters`, discovery and
/// basic-user → `system:authenticated`, public-info-viewer → authenticated + unauthenticated).
pub fn bootstrap_objects() -> Vec<Value> {
    let health = "/healthz /livez /readyz /version /version/";
    let mut objects = vec![
        cluster_role("cluster-admin", None, vec![rule("*", "*", "*"), url_rule("*", "*")]),
        cluster_role(
            "system:discovery",
            None,
            vec![url_rule(&format!("/api /api/* /apis /apis/* /openapi /openapi/* {health}"), "get")],
        ),
        cluster_role(
            "system:basic-user",
            None,
            vec![
                rule("authorization.k8s.io", "selfsubjectaccessreviews selfsubjectrulesreviews", "create"),
                rule("authentication.k8s.io", "selfsubjectreviews", "create"),
            ],
        ),
        cluster_role("system:public-info-viewer", None, vec![url_rule(health, "get")]),
        // bootstrappolicy/policy.go: "a role to use for allowing authentication and
        // authorization delegation" (kube-rbac-proxy, aggregated API servers).
        cluster_role(
            "system:auth-delegator",
            None,
            vec![
                rule("authentication.k8s.io", "tokenreviews", "create"),
                rule("authorization.k8s.io", "subjectaccessreviews", "create"),
            ],
        ),
        cluster_role(
            "system:monitoring",
            None,
            vec![url_rule(
                "/healthz /healthz/* /livez /livez/* /metrics /metrics/slis /readyz /readyz/*",
                "get",
            )],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            None,
            vec![url_rule("/.well-known/openid-configuration /openid/v1/jwks", "get")],
        ),
        aggregated_role("admin", None, TO_ADMIN),
        aggregated_role("edit", Some(TO_ADMIN), TO_EDIT),
        aggregated_role("view", Some(TO_EDIT), TO_VIEW),
    ];
    for (which, label) in [("admin", TO_ADMIN), ("edit", TO_EDIT), ("view", TO_VIEW)] {
        let rules = AGGREGATE_RULES
            .iter()
            .filter_map(|line| match line.split('|').collect::<Vec<_>>()[..] {
                [role, group, resources, verbs] if role == which => {
                    let verbs = match verbs {
                        "READ" => READ,
                        "WRITE" => WRITE,
                        "READ_WRITE" => READ_WRITE,
                        literal => literal,
                    };
                    Some(rule(group, resources, verbs))
                }
                _ => None,
            })
            .collect();
        objects.push(cluster_role(&format!("system:aggregate-to-{which}"), Some(label), rules));
    }
    let (authn, unauthn) = (AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP);
    objects.extend([
        cluster_role_binding("cluster-admin", &[PRIVILEGED_GROUP]),
        cluster_role_binding("system:basic-user", &[authn]),
        cluster_role_binding("system:discovery", &[authn]),
        cluster_role_binding("system:public-info-viewer", &[authn, unauthn]),
        cluster_role_binding("system:monitoring", &["system:monitoring"]),
        cluster_role_binding("system:service-account-issuer-discovery", &["system:serviceaccounts"]),
    ]);
    objects
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
