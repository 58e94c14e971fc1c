//! The resource name of a kind no discovery or table names: the SDK's rule.

/// The plural of a kind, as the SDK forms it for kinds it has no table entry for
/// (`Policy` → `policies`, `Ingress` → `ingresses`, `Widget` → `widgets`).
#[must_use]
pub fn guess_plural(kind: &str) -> String {
    let k = kind.to_lowercase();
    if ["s", "x", "z", "ch", "sh"].iter().any(|s| k.ends_with(s)) {
        format!("{k}es")
    } else if k.ends_with('y') && !k[..k.len() - 1].ends_with(['a', 'e', 'i', 'o', 'u']) {
        format!("{}ies", &k[..k.len() - 1])
    } else {
        format!("{k}s")
    }
}
