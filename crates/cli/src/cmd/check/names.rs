//! The names a script fixes when it loads, checked as the API server checks them when the
//! CRD is created, and controller names as object names.
//!
//! The rules (facts from kubernetes/kubernetes, the messages are ctop's own):
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`
//! (`ValidateCustomResourceDefinitionSpec`: the group is a DNS-1123 subdomain with at least
//! one dot, each version name a DNS-1035 label; `ValidateCustomResourceDefinitionNames`:
//! plural, singular, each short name and the lowercased kind are DNS-1035 labels), with
//! `staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go` for what those are
//! (`IsDNS1123Subdomain`: at most 253 characters of lowercase labels joined by dots;
//! `IsDNS1035Label`: at most 63 characters `[a-z]([-a-z0-9]*[a-z0-9])?`).

use std::sync::LazyLock;

use ctop_core::OperatorSpec;
use regex::Regex;

use super::frame::Finding;

static DNS1035: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z]([-a-z0-9]*[a-z0-9])?$").unwrap_or_else(|e| unreachable!("valid pattern: {e}"))
});
static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").unwrap_or_else(|e| unreachable!("valid pattern: {e}"))
});

fn dns1035(s: &str) -> bool {
    s.len() <= 63 && DNS1035.is_match(s)
}

fn dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|l| l.len() <= 63 && DNS1123_LABEL.is_match(l))
}

/// A finding for each name of `spec` the API server would refuse.
pub fn check(spec: &OperatorSpec) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in &spec.resources {
        let what = format!("resource {} ({})", r.kind, r.api_version);
        if !dns1123_subdomain(&r.group) || !r.group.contains('.') {
            out.push(Finding::error(
                "name",
                format!("{what}: the group {:?} is not a domain name with at least one dot (lowercase letters, digits, '-' and '.', at most 253 characters)", r.group),
                Some("use a domain you own, like apps.example.com, in resource(\"<group>/<version>\", ...)".into()),
            ));
        }
        if !dns1035(&r.version) {
            out.push(Finding::error(
                "name",
                format!("{what}: the version {:?} is not a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, at most 63 characters)", r.version),
                Some("name versions like v1, v1beta1".into()),
            ));
        }
        let mut names = vec![
            ("plural", r.plural.clone(), "plural"),
            ("singular", r.singular.clone(), "singular"),
            ("kind, lowercased,", r.kind.to_lowercase(), "kind"),
        ];
        names.extend(r.short_names.iter().map(|s| ("short name", s.clone(), "shortNames")));
        for (field, value, option) in names {
            if !dns1035(&value) {
                let help = if option == "kind" {
                    "name the kind with letters and digits only, starting with a letter (PascalCase, like WebApp)".to_owned()
                } else {
                    format!("pass a valid {option} to resource(...), e.g. {:?}", fix(&value))
                };
                out.push(Finding::error(
                    "name",
                    format!("{what}: the {field} {value:?} is not a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, at most 63 characters); the API server refuses the CRD"),
                    Some(help),
                ));
            }
        }
    }
    for c in &spec.controllers {
        if !(c.name.len() <= 63 && DNS1123_LABEL.is_match(&c.name)) {
            out.push(Finding::error(
                "name",
                format!("operator {:?}: its name is not a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters); it names the controller's ControllerStatus object, its metrics and its lease", c.name),
                Some(format!("pass operator(kind, {{ name: {:?} }})", fix(&c.name))),
            ));
        }
    }
    out
}

/// `value` made a valid label, to suggest.
fn fix(value: &str) -> String {
    let lower: String =
        value.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let trimmed = lower
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .trim_start_matches(|c: char| c.is_ascii_digit());
    let s: String = trimmed.chars().take(63).collect();
    if s.is_empty() { "my-name".into() } else { s.trim_end_matches('-').to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(dns1035("web-apps") && !dns1035("1apps") && !dns1035("Apps") && !dns1035("apps-"));
        assert!(!dns1035(&"a".repeat(64)));
        assert!(dns1123_subdomain("apps.example.com") && !dns1123_subdomain("Apps.example.com"));
        assert!(!dns1123_subdomain("a..b") && !dns1123_subdomain("a_b.com"));
        assert_eq!(fix("My_App"), "my-app");
    }
}
