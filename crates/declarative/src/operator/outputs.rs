//! From a target view to what the controller writes.
//!
//! * **Updater**: each view object is a child of the Operator (server-side applied with an
//!   owner reference and ctop's ApplySet labels, pruned when it leaves the view, also after a
//!   restart). An existing object the Operator did not make is never taken over: it is left
//!   out and the refusal is the controller's error.
//! * **Patcher**: each view object is server-side applied onto the existing object under a
//!   field manager of the Δ controller's own (`<operator>-<controller>`), with an annotation
//!   (`patch.ctop.dev/<hash of the manager>`) holding the hash of what was applied. The
//!   server drops the fields the manager applied before and leaves out now; an object that
//!   carries the annotation but is no longer in the view gets an empty apply, which drops
//!   everything the manager contributed (after a restart too: the annotation says who
//!   patched it). An object whose annotation holds the current hash is not applied again.

use std::collections::BTreeSet;

use ctop_core::{ForeignApply, KindRef, Observer};
use md5::{Digest as _, Md5};
use serde_json::{Map, Value, json};

use super::runner::Key;

/// `obj` without the metadata only the server sets (and without owner references, which
/// are the controller's to set).
pub(super) fn sanitize(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ctop_core::SERVER_SET_METADATA.iter().chain(&["ownerReferences"]) {
            meta.remove(*k);
        }
    }
    obj
}

/// The key of an object.
pub(super) fn key_of(obj: &Value) -> Key {
    let meta = &obj["metadata"];
    (
        meta["namespace"].as_str().unwrap_or_default().to_string(),
        meta["name"].as_str().unwrap_or_default().to_string(),
    )
}

/// The Updater children of a view, and the errors of objects refused (they exist and the
/// Operator with `owner_uid` did not make them).
pub(super) fn updater_children<'a>(
    view: impl Iterator<Item = &'a Value>,
    kind: &KindRef,
    owner_uid: &str,
    observer: &dyn Observer,
) -> (Vec<Value>, Vec<String>) {
    let (mut children, mut errors) = (Vec::new(), Vec::new());
    for obj in view {
        let (ns, name) = key_of(obj);
        let ns = Some(ns.as_str()).filter(|n| !n.is_empty());
        if let Some(Some(live)) = observer.get(&kind.key(), ns, &name)
            && let Ok(live) = serde_json::from_str::<Value>(&live)
        {
            let owners = live["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
            if !owners.iter().any(|o| o["uid"].as_str() == Some(owner_uid)) {
                let at = ns.map_or_else(|| name.clone(), |ns| format!("{ns}/{name}"));
                errors.push(format!(
                    "target {} {at} exists and was not made by this Operator: ctop does not take it over (delete \
                     it, or use a Patcher target)",
                    kind.kind
                ));
                continue;
            }
        }
        children.push(sanitize(obj));
    }
    (children, errors)
}

/// The annotation marking an object patched by `manager`.
pub(super) fn patch_annotation(manager: &str) -> String {
    let digest = Md5::digest(manager.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("patch.ctop.dev/{hex}")
}

/// The applies that bring the objects of `kind` in line with a Patcher's view: the view
/// objects whose target exists and does not carry the current hash, and an empty apply for
/// each object carrying `manager`'s annotation that the view no longer has.
pub(super) fn patcher_applies<'a>(
    view: impl Iterator<Item = &'a Value>,
    kind: &KindRef,
    manager: &str,
    observer: &dyn Observer,
) -> Result<Vec<ForeignApply>, String> {
    let annotation = patch_annotation(manager);
    let text = observer
        .list(&kind.key())
        .ok_or_else(|| format!("target {}: this ctop process does not watch {}", kind.kind, kind.key()))?;
    let live: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| format!("target {}: the cache's list does not read: {e}", kind.kind))?;
    let marked = |o: &Value| o["metadata"]["annotations"][&annotation].as_str().map(str::to_owned);
    let live: std::collections::BTreeMap<Key, Option<String>> =
        live.iter().map(|o| (key_of(o), marked(o))).collect();
    let mut out = Vec::new();
    let mut wanted = BTreeSet::new();
    for obj in view {
        let key = key_of(obj);
        wanted.insert(key.clone());
        // A Patcher changes objects that exist; it never creates one.
        let Some(current) = live.get(&key) else { continue };
        let mut config = sanitize(obj);
        config["apiVersion"] = json!(kind.api_version);
        config["kind"] = json!(kind.kind);
        let hash = hash_of(&config);
        if current.as_deref() == Some(hash.as_str()) {
            continue;
        }
        if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
            let annotations = meta.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(annotation.clone(), Value::String(hash));
            }
        }
        out.push(ForeignApply { manager: manager.to_string(), object: config });
    }
    for (key, mark) in &live {
        if mark.is_some() && !wanted.contains(key) {
            let mut metadata = json!({"name": key.1});
            if !key.0.is_empty() {
                metadata["namespace"] = json!(key.0);
            }
            let object = json!({"apiVersion": kind.api_version, "kind": kind.kind, "metadata": metadata});
            out.push(ForeignApply { manager: manager.to_string(), object });
        }
    }
    Ok(out)
}

/// A short hash of what a Patcher applies.
fn hash_of(config: &Value) -> String {
    let digest = Md5::digest(config.to_string().as_bytes());
    digest.iter().take(10).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache of one kind.
    struct Cache(Vec<Value>);

    impl Observer for Cache {
        fn list(&self, _: &str) -> Option<String> {
            Some(Value::Array(self.0.clone()).to_string())
        }
        fn get(&self, _: &str, ns: Option<&str>, name: &str) -> Option<Option<String>> {
            Some(
                self.0
                    .iter()
                    .find(|o| key_of(o) == (ns.unwrap_or_default().to_string(), name.to_string()))
                    .map(Value::to_string),
            )
        }
    }

    fn deploy() -> KindRef {
        KindRef { api_version: "apps/v1".into(), kind: "Deployment".into() }
    }

    #[test]
    fn a_patcher_applies_changes_once_and_unpatches_what_left_the_view() {
        let out =
            json!({"metadata": {"name": "web", "namespace": "a", "resourceVersion": "3"}, "spec": {"x": 1}});
        let cache = Cache(vec![
            json!({"metadata": {"name": "web", "namespace": "a"}}),
            json!({"metadata": {"name": "old", "namespace": "a", "annotations": {patch_annotation("op-c"): "h"}}}),
        ]);
        let applies = patcher_applies([&out].into_iter(), &deploy(), "op-c", &cache).expect("applies");
        assert_eq!(applies.len(), 2);
        let first = &applies[0].object;
        assert_eq!(first["spec"]["x"], 1);
        assert!(first["metadata"].get("resourceVersion").is_none());
        assert_eq!(first["kind"], "Deployment");
        assert_eq!(
            applies[1].object,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "old", "namespace": "a"}})
        );
        // Once the object carries the hash, nothing more is applied.
        let applied = first.clone();
        let cache = Cache(vec![applied]);
        let again = patcher_applies([&out].into_iter(), &deploy(), "op-c", &cache).expect("applies");
        assert!(again.is_empty(), "{again:?}");
    }

    #[test]
    fn a_patcher_never_creates() {
        let out = json!({"metadata": {"name": "nowhere"}});
        assert!(
            patcher_applies([&out].into_iter(), &deploy(), "m", &Cache(vec![])).expect("applies").is_empty()
        );
    }

    #[test]
    fn an_updater_refuses_objects_it_did_not_make() {
        let view = [json!({"metadata": {"name": "mine"}}), json!({"metadata": {"name": "theirs"}})];
        let cache = Cache(vec![
            json!({"metadata": {"name": "mine", "ownerReferences": [{"uid": "u1"}]}}),
            json!({"metadata": {"name": "theirs"}}),
        ]);
        let (children, errors) = updater_children(view.iter(), &deploy(), "u1", &cache);
        assert_eq!(children.len(), 1);
        assert!(
            errors[0].starts_with("target Deployment theirs exists and was not made by this Operator"),
            "{errors:?}"
        );
    }
}
