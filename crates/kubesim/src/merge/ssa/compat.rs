//! What the API server does around structured-merge-diff for its clients' sake: kubectl's
//! last-applied annotation kept in step by its server-side apply. (The Go zero value a
//! create is compared against is `crate::kinds::builtin::zero`.)

use ctop_schema::go::json as go_json;
use serde_json::{Value, json};

pub(super) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
pub(super) const LAST_APPLIED_POINTER: &str =
    "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration";

/// kubectl's server-side apply keeps an existing client-side annotation in step with what
/// it applied.
pub(super) fn sync_last_applied(obj: &mut Value, config: &Value) {
    if obj.pointer(LAST_APPLIED_POINTER).is_none() {
        return;
    }
    let mut cfg = config.clone();
    if let Some(Value::Object(a)) = cfg.pointer_mut("/metadata/annotations") {
        a.remove(LAST_APPLIED);
    }
    let text = format!("{}\n", go_json(&cfg));
    if let Some(Value::Object(annotations)) = obj.pointer_mut("/metadata/annotations") {
        annotations.insert(LAST_APPLIED.into(), json!(text));
        let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
        if size > 256 * 1024 {
            annotations.remove(LAST_APPLIED);
        }
    }
}
