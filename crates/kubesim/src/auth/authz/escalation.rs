//! RBAC escalation prevention: what the API server's RBAC storage checks before it stores a
//! Role, ClusterRole, RoleBinding or ClusterRoleBinding written by someone outside
//! `system:masters`.
//!
//! - A binding ([`check_binding`]) is allowed if the user may `bind` the role it names
//!   (`pkg/registry/rbac/escalation_check.go`, `BindingAuthorized`: verb `bind` on
//!   `roles`/`clusterroles` named `roleRef.name`, in the binding's namespace), or already
//!   holds every permission of that role in the binding's namespace
//!   (`pkg/registry/rbac/rolebinding/policybased/storage.go`,
//!   `clusterrolebinding/policybased/storage.go`).
//! - A role ([`check_role`]) is allowed if the user may `escalate` it
//!   (`RoleEscalationAuthorized`: verb `escalate` on the request's resource, with the name
//!   *from the URL*, so a `POST` asks with no name), or already holds every rule it grants
//!   (`pkg/registry/rbac/role/policybased/storage.go`, `clusterrole/policybased/storage.go`);
//!   a ClusterRole's `aggregationRule` further needs `*` on `*.*` and every URL.
//! - "Holds" is `ConfirmNoEscalation` (`pkg/registry/rbac/validation/rule.go`): the rules of
//!   every binding that names the user (ClusterRoleBindings, and the RoleBindings of the
//!   namespace), then component-helpers' `Covers` (`auth/rbac/validation/policy_comparator.go`):
//!   each requested rule broken down to one group, resource, verb and name, each piece
//!   covered by one held rule (wildcards, `*/subresource`, `resourceNames`, URL prefixes).
//!   The uncovered pieces are compacted (`policy_compact.go`) and printed one per line,
//!   sorted, as `CompactString` (`pkg/apis/rbac/v1/helpers.go`) writes them.
//!
//! A binding whose role does not exist fails with the registry's `404`
//! (`clusterroles.rbac.authorization.k8s.io "x" not found`) unless the user may `bind` it.
//! Updates that change only `ownerReferences` and `finalizers` are never checked
//! (`pkg/registry/rbac/helpers.go`, `IsOnlyMutatingGCFields`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{
    Attributes, AuthzError, PRIVILEGED_GROUP, RbacSource, Resolver, Rule, User, decide, go_quote,
    parse_rules, str_at,
};

/// Why a write of an RBAC object is refused. `Display` is the text after
/// `<resource> "<name>" is forbidden: ` (or, for [`EscalationError::RoleNotFound`], the
/// whole `404` message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EscalationError {
    /// The object grants permissions the user does not hold, and the user may neither
    /// `bind` (bindings) nor `escalate` (roles) it. The text lists what is missing.
    #[error("{0}")]
    NotHeld(String),
    /// A ClusterRole with an `aggregationRule`, written by a user without full authority.
    #[error("must have cluster-admin privileges to use the aggregationRule")]
    Aggregation,
    /// The binding's role does not exist (`resource` is `roles` or `clusterroles`): a `404`.
    #[error("{resource}.rbac.authorization.k8s.io {} not found", go_quote(.name))]
    RoleNotFound {
        /// `roles` or `clusterroles`.
        resource: &'static str,
        /// The `roleRef.name`.
        name: String,
    },
    /// The binding's `roleRef.kind` is neither `Role` nor `ClusterRole`.
    #[error("unsupported role reference kind: {}", go_quote(.0))]
    UnsupportedKind(String),
}

/// Whether the user is exempt from every escalation check (`EscalationAllowed`: a member of
/// `system:masters`).
fn escalation_allowed(user: &User) -> bool {
    user.groups.iter().any(|g| g == PRIVILEGED_GROUP)
}

/// The check on creating or updating a RoleBinding (`namespace` set) or ClusterRoleBinding
/// (`namespace` empty). `old` is the stored object on update.
pub fn check_binding(
    user: &User,
    namespace: &str,
    binding: &Value,
    old: Option<&Value>,
    rbac: &dyn RbacSource,
) -> Result<(), EscalationError> {
    if escalation_allowed(user) || old.is_some_and(|old| only_gc_fields_change(old, binding)) {
        return Ok(());
    }
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let (kind, name) = (str_at(role_ref, "kind"), str_at(role_ref, "name"));
    let resource = match kind {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        other => return Err(EscalationError::UnsupportedKind(other.into())),
    };
    let mut bind = Attributes::resource("bind", str_at(role_ref, "apiGroup"), resource).named(name);
    bind.namespace = namespace.into();
    if decide(user, &bind, rbac).allowed {
        return Ok(());
    }
    let mut resolver = Resolver::new(rbac);
    let rules = resolver.role_ref_rules(role_ref, namespace).map_err(|e| match e {
        AuthzError::RoleNotFound(name) => EscalationError::RoleNotFound { resource: "roles", name },
        AuthzError::ClusterRoleNotFound(name) => {
            EscalationError::RoleNotFound { resource: "clusterroles", name }
        }
        other => EscalationError::NotHeld(other.to_string()),
    })?;
    confirm_no_escalation(user, namespace, &rules, rbac)
}

/// The check on creating or updating a Role (`namespace` set) or ClusterRole. `url_name` is
/// the name in the request's URL (empty for a `POST`), which the `escalate` check asks with.
pub fn check_role(
    user: &User,
    namespace: &str,
    url_name: &str,
    role: &Value,
    old: Option<&Value>,
    rbac: &dyn RbacSource,
) -> Result<(), EscalationError> {
    if escalation_allowed(user) {
        return Ok(());
    }
    let cluster = namespace.is_empty();
    let resource = if cluster { "clusterroles" } else { "roles" };
    let mut escalate = Attributes::resource("escalate", super::RBAC_GROUP, resource).named(url_name);
    escalate.namespace = namespace.into();
    if decide(user, &escalate, rbac).allowed {
        return Ok(());
    }
    if old.is_some_and(|old| only_gc_fields_change(old, role)) {
        return Ok(());
    }
    confirm_no_escalation(user, namespace, &parse_rules(role), rbac)?;
    let aggregates = |r: &Value| {
        r.pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
            .is_some_and(|s| !s.is_empty())
    };
    if cluster && (aggregates(role) || old.is_some_and(aggregates)) {
        let full = [
            Rule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                ..Rule::default()
            },
            Rule { verbs: vec!["*".into()], non_resource_urls: vec!["*".into()], ..Rule::default() },
        ];
        confirm_no_escalation(user, namespace, &full, rbac).map_err(|_| EscalationError::Aggregation)?;
    }
    Ok(())
}

/// `ConfirmNoEscalation`: the user's rules in `namespace` must cover `rules`.
fn confirm_no_escalation(
    user: &User,
    namespace: &str,
    rules: &[Rule],
    rbac: &dyn RbacSource,
) -> Result<(), EscalationError> {
    let (owned, errors) = rules_for(user, namespace, rbac);
    let missing = uncovered(&owned, rules);
    if missing.is_empty() {
        return Ok(());
    }
    let described: BTreeSet<String> = compact(missing).iter().map(compact_string).collect();
    let groups: Vec<String> = user.groups.iter().map(|g| go_quote(g)).collect();
    let mut msg = format!(
        "user {} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        groups.join(" "),
        described.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !errors.is_empty() {
        // `%v` of a one-element []error holding the resolver's aggregate.
        msg.push_str(&format!("; resolution errors: [{}]", aggregate(&errors)));
    }
    Err(EscalationError::NotHeld(msg))
}

/// `RulesFor`: every rule of every binding that names the user (ClusterRoleBindings, then
/// the RoleBindings of `namespace`), and the errors of bindings whose role is missing, in
/// the registry's words (`clusterroles.rbac.authorization.k8s.io "x" not found`).
fn rules_for(user: &User, namespace: &str, rbac: &dyn RbacSource) -> (Vec<Rule>, Vec<String>) {
    let mut resolver = Resolver::new(rbac);
    let (mut rules, mut errors) = (Vec::new(), Vec::new());
    let mut bindings: Vec<(Value, &str)> =
        rbac.cluster_role_bindings().into_iter().map(|b| (b, "")).collect();
    if !namespace.is_empty() {
        bindings.extend(rbac.role_bindings(namespace).into_iter().map(|b| (b, namespace)));
    }
    for (binding, ns) in &bindings {
        let applies = binding
            .get("subjects")
            .and_then(Value::as_array)
            .is_some_and(|subjects| subjects.iter().any(|s| super::subject_applies(user, s, ns)));
        if !applies {
            continue;
        }
        match resolver.role_ref_rules(binding.get("roleRef").unwrap_or(&Value::Null), ns) {
            Ok(found) => rules.extend(found),
            Err(AuthzError::RoleNotFound(name)) => {
                errors.push(format!("roles.rbac.authorization.k8s.io {} not found", go_quote(&name)))
            }
            Err(AuthzError::ClusterRoleNotFound(name)) => {
                errors.push(format!("clusterroles.rbac.authorization.k8s.io {} not found", go_quote(&name)))
            }
            Err(other) => errors.push(other.to_string()),
        }
    }
    (rules, errors)
}

/// apimachinery's error aggregate: one message alone, several as `[a, b]` (duplicates once).
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&String> = Vec::new();
    for e in errors {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => (*one).clone(),
        many => format!("[{}]", many.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")),
    }
}

/// Whether `new` differs from `old` only in `ownerReferences` and `finalizers` (and in the
/// managedFields such a write records).
fn only_gc_fields_change(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in ["ownerReferences", "finalizers", "managedFields", "selfLink"] {
                meta.remove(field);
            }
        }
        v
    };
    strip(old) == strip(new)
}

// ---------------------------------------------------------------------------------------------
// Covers
// ---------------------------------------------------------------------------------------------

/// `Covers`: the pieces of `requested` (each one group, resource, verb and resource name, or
/// one URL and verb) that no rule of `owned` covers, in breakdown order.
pub(super) fn uncovered(owned: &[Rule], requested: &[Rule]) -> Vec<Rule> {
    requested
        .iter()
        .flat_map(breakdown)
        .filter(|piece| !owned.iter().any(|rule| rule_covers(rule, piece)))
        .collect()
}

/// `BreakdownRule`.
fn breakdown(rule: &Rule) -> Vec<Rule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let piece = Rule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Rule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(piece);
                } else {
                    for name in &rule.resource_names {
                        out.push(Rule { resource_names: one(name), ..piece.clone() });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(Rule { verbs: one(verb), non_resource_urls: one(url), ..Rule::default() });
        }
    }
    out
}

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

/// `ruleCovers`: whether one held rule covers one broken-down piece.
fn rule_covers(owner: &Rule, piece: &Rule) -> bool {
    let verbs = has(&owner.verbs, "*") || has_all(&owner.verbs, &piece.verbs);
    let groups = has(&owner.api_groups, "*") || has_all(&owner.api_groups, &piece.api_groups);
    let resources = has(&owner.resources, "*")
        || has_all(&owner.resources, &piece.resources)
        || piece.resources.iter().all(|path| {
            has(&owner.resources, path)
                || path.split_once('/').is_some_and(|(_, sub)| has(&owner.resources, &format!("*/{sub}")))
        });
    let urls = piece.non_resource_urls.iter().all(|path| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == path || (o.ends_with('*') && path.starts_with(o.trim_end_matches('*'))))
    });
    let names = owner.resource_names.is_empty()
        || (!piece.resource_names.is_empty() && has_all(&owner.resource_names, &piece.resource_names));
    verbs && groups && resources && urls && names
}

/// `CompactRules`: pieces of one group and one resource with nothing but verbs merge into
/// one rule per group and resource (verbs in order, repeats kept, as the Go code appends).
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut simple: BTreeMap<(String, String), Rule> = BTreeMap::new();
    let mut out = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let key = (rule.api_groups[0].clone(), rule.resources[0].clone());
        match simple.get_mut(&key) {
            Some(existing) => existing.verbs.extend(rule.verbs),
            None => {
                simple.insert(key, rule);
            }
        }
    }
    out.extend(simple.into_values());
    out
}

/// `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`, each
/// non-empty list with Go's `%q`.
fn compact_string(rule: &Rule) -> String {
    let q = |list: &[String]| format!("[{}]", list.iter().map(|s| go_quote(s)).collect::<Vec<_>>().join(" "));
    let parts: Vec<String> = [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ]
    .into_iter()
    .filter(|(_, list)| !list.is_empty())
    .map(|(key, list)| format!("{key}:{}", q(list)))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
