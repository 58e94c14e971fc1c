//! The shape of Kubernetes names, once for every layer that checks one.

/// Whether `s` is an RFC 1123 label as Kubernetes checks it (`IsDNS1123Label` in
/// k8s.io/apimachinery `pkg/util/validation`): lowercase alphanumerics and `-`, at most 63,
/// starting and ending alphanumeric.
#[must_use]
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// The fields of `metadata` only the API server sets: an apply that names them is refused
/// or ignored, so a copied object must drop them before it is applied.
pub const SERVER_SET_METADATA: [&str; 8] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

#[cfg(test)]
mod tests {
    use super::is_dns_label;

    #[test]
    fn dns_labels() {
        for ok in ["a", "web-1", "0abc", &"a".repeat(63)] {
            assert!(is_dns_label(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a.b", "a_b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
    }
}
