//! The rbac.authorization.k8s.io group (pkg/apis/rbac/validation/validation.go): rules of
//! Roles and ClusterRoles, subjects and roleRef of bindings, and the roleRef that may not
//! change on update.

use serde_json::Value;

use crate::field::{Bad, Cause, Path, invalid, invalid_str, list, listed, req, string, unsupported};
use crate::names;

/// `ValidatePolicyRule` (non-resource URLs only on ClusterRoles). The copy of the Go source
/// these rules were read from also refuses `resourceNames` over several `resources`; that
/// check is not in every release, and ClusterRoles in use (ctop's generated webhook role
/// among them) do it, so it is left out rather than refuse what a cluster may accept.
fn validate_rule(rule: &Value, cluster: bool, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if list(rule, "verbs").is_empty() {
        out.push(req(&p.child("verbs"), "verbs must contain at least one value"));
    }
    let urls = list(rule, "nonResourceURLs");
    if !urls.is_empty() {
        if !cluster {
            out.push(invalid(
                p.child("nonResourceURLs").as_str(),
                Bad::Raw(crate::field::go_string_list(rule.get("nonResourceURLs"))),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !list(rule, "apiGroups").is_empty()
            || !list(rule, "resources").is_empty()
            || !list(rule, "resourceNames").is_empty()
        {
            out.push(invalid(
                p.child("nonResourceURLs").as_str(),
                Bad::Raw(crate::field::go_string_list(rule.get("nonResourceURLs"))),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return out;
    }
    if list(rule, "apiGroups").is_empty() {
        out.push(req(&p.child("apiGroups"), "resource rules must supply at least one api group"));
    }
    if list(rule, "resources").is_empty() {
        out.push(req(&p.child("resources"), "resource rules must supply at least one resource"));
    }
    out
}

/// `ValidateRole` / `ValidateClusterRole`.
pub(crate) fn validate_role(role: &Value, cluster: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, rule) in list(role, "rules").iter().enumerate() {
        out.extend(validate_rule(rule, cluster, &Path::new("rules").index(i)));
    }
    out
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding` and, with `old`, the immutable
/// roleRef of `ValidateRoleBindingUpdate`.
pub(crate) fn validate_binding(binding: &Value, cluster: bool, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let rp = Path::new("roleRef");
    if string(role_ref, "apiGroup") != "rbac.authorization.k8s.io" {
        out.push(unsupported(
            &rp.child("apiGroup"),
            string(role_ref, "apiGroup"),
            &listed(&["rbac.authorization.k8s.io"]),
        ));
    }
    let kind = string(role_ref, "kind");
    let kinds: &[&str] = if cluster { &["ClusterRole"] } else { &["Role", "ClusterRole"] };
    if !kinds.contains(&kind) {
        out.push(unsupported(&rp.child("kind"), kind, &listed(kinds)));
    }
    let name = string(role_ref, "name");
    if name.is_empty() {
        out.push(req(&rp.child("name"), ""));
    } else {
        out.extend(path_segment_name(name).iter().map(|m| invalid_str(&rp.child("name"), name, m)));
    }
    for (i, subject) in list(binding, "subjects").iter().enumerate() {
        out.extend(validate_subject(subject, cluster, &Path::new("subjects").index(i)));
    }
    if let Some(old) = old
        && old.get("roleRef") != binding.get("roleRef")
    {
        out.push(invalid(
            "roleRef",
            Bad::Raw(format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                ctop_schema::go::quote(string(role_ref, "apiGroup")),
                ctop_schema::go::quote(kind),
                ctop_schema::go::quote(name)
            )),
            "cannot change roleRef",
        ));
    }
    out
}

/// `path.ValidatePathSegmentName` (a role name).
fn path_segment_name(name: &str) -> Vec<String> {
    match name {
        "." | ".." => vec![format!("may not be '{name}'")],
        n => {
            ["/", "%"].iter().filter(|s| n.contains(**s)).map(|s| format!("may not contain '{s}'")).collect()
        }
    }
}

/// `ValidateRoleBindingSubject`.
fn validate_subject(s: &Value, cluster: bool, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = string(s, "name");
    if name.is_empty() {
        out.push(req(&p.child("name"), ""));
    }
    let group = string(s, "apiGroup");
    match string(s, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                out.extend(
                    names::subdomain_name(name).iter().map(|m| invalid_str(&p.child("name"), name, m)),
                );
            }
            if !group.is_empty() {
                out.push(unsupported(&p.child("apiGroup"), group, &listed(&[""])));
            }
            if cluster && string(s, "namespace").is_empty() {
                out.push(req(&p.child("namespace"), ""));
            }
        }
        kind @ ("User" | "Group") => {
            if name.is_empty() {
                let what = if kind == "User" { "user" } else { "group" };
                out.push(invalid_str(&p.child("name"), name, &format!("{what} name cannot be empty")));
            }
            // The server defaults a User's or Group's apiGroup (SetDefaults_Subject); kubesim does not.
            if !group.is_empty() && group != "rbac.authorization.k8s.io" {
                out.push(unsupported(&p.child("apiGroup"), group, &listed(&["rbac.authorization.k8s.io"])));
            }
        }
        other => {
            out.push(unsupported(&p.child("kind"), other, &listed(&["ServiceAccount", "User", "Group"])))
        }
    }
    out
}
