//! Pruning: removing the fields a structural schema does not specify, as the server's
//! `pruning.Prune` and `objectmeta.Coerce` do on every write (before defaulting and
//! validation). Start at [`prune`].

use serde_json::Value;

use crate::access::*;

// ---------------------------------------------------------------------------

/// Fields of `metav1.ObjectMeta`, and of the list items inside it.
pub(crate) const OBJECT_META: [&str; 15] = [
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];
pub(crate) const OWNER_REFERENCE: [&str; 6] =
    ["apiVersion", "blockOwnerDeletion", "controller", "kind", "name", "uid"];
pub(crate) const MANAGED_FIELDS_ENTRY: [&str; 7] =
    ["apiVersion", "fieldsType", "fieldsV1", "manager", "operation", "subresource", "time"];

/// Removes the fields the schema does not specify, as the server does on every write
/// (before defaulting and validation). At the root, and in objects marked
/// `x-kubernetes-embedded-resource`, `apiVersion`, `kind` and `metadata` are kept;
/// `metadata` is reduced to the fields of `ObjectMeta`. `x-kubernetes-preserve-unknown-fields`
/// keeps unknown fields (specified fields below are still pruned) and
/// `additionalProperties` lets any key through to its schema.
///
/// Returns the removed paths in the server's order (unknown `metadata.*` fields first,
/// then the schema's, sorted, then those in embedded resources' metadata), e.g.
/// `spec.foo`, `spec.items[0].bar`: the text of `unknown field "<path>"` warnings.
pub fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    if let Some(meta) = obj.get_mut("metadata") {
        prune_object_meta(meta, "metadata", &mut paths);
    }
    let mut pruned = Vec::new();
    prune_value(obj, Some(schema), true, "", &mut pruned);
    pruned.sort();
    paths.extend(pruned);
    coerce_embedded(obj, schema, "", &mut paths);
    paths
}

pub(crate) fn prune_value(
    x: &mut Value,
    s: Option<&Value>,
    resource_root: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    if let Some(s) = s.filter(|s| flag(s, PRESERVE)) {
        skip_prune(x, s, resource_root, path, out);
        return;
    }
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                out.extend(map.keys().map(|k| child(path, k)));
                map.clear();
                return;
            };
            let embedded = resource_root || flag(s, EMBEDDED);
            let mut remove = Vec::new();
            for (k, v) in map.iter_mut() {
                if embedded && is_meta(k) {
                    continue;
                }
                if let Some(p) = prop(s, k) {
                    prune_value(v, Some(p), false, &child(path, k), out);
                } else if has_addl(s) {
                    prune_value(v, addl_schema(s), false, &child(path, k), out);
                } else {
                    if !is_meta(k) || !path.is_empty() {
                        out.push(child(path, k));
                    }
                    remove.push(k.clone());
                }
            }
            for k in remove {
                map.remove(&k);
            }
        }
        Value::Array(a) => {
            let item_schema = s.and_then(items);
            for (i, v) in a.iter_mut().enumerate() {
                prune_value(v, item_schema, false, &index(path, i), out);
            }
        }
        _ => {}
    }
}

pub(crate) fn skip_prune(x: &mut Value, s: &Value, resource_root: bool, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            let embedded = resource_root || flag(s, EMBEDDED);
            for (k, v) in map.iter_mut() {
                if embedded && is_meta(k) {
                    continue;
                }
                if let Some(p) = prop(s, k) {
                    prune_value(v, Some(p), false, &child(path, k), out);
                } else if has_addl(s) {
                    prune_value(v, addl_schema(s), false, &child(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(is) = items(s) {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(v, is, false, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

/// Drops unknown `ObjectMeta` fields (what the strict decode into `ObjectMeta` reports).
pub(crate) fn prune_object_meta(meta: &mut Value, prefix: &str, out: &mut Vec<String>) {
    let Some(map) = meta.as_object_mut() else {
        return;
    };
    let mut remove = Vec::new();
    for (k, v) in map.iter_mut() {
        if !OBJECT_META.contains(&k.as_str()) {
            out.push(format!("{prefix}.{k}"));
            remove.push(k.clone());
            continue;
        }
        let known: &[&str] = match k.as_str() {
            "ownerReferences" => &OWNER_REFERENCE,
            "managedFields" => &MANAGED_FIELDS_ENTRY,
            _ => continue,
        };
        let Some(entries) = v.as_array_mut() else {
            continue;
        };
        for (i, item) in entries.iter_mut().enumerate() {
            if let Some(entry) = item.as_object_mut() {
                let unknown: Vec<String> =
                    entry.keys().filter(|f| !known.contains(&f.as_str())).cloned().collect();
                for f in unknown {
                    out.push(format!("{prefix}.{k}[{i}].{f}"));
                    entry.remove(&f);
                }
            }
        }
    }
    for k in remove {
        map.remove(&k);
    }
}

/// The metadata of embedded resources below the root (`objectmeta.Coerce`).
pub(crate) fn coerce_embedded(x: &mut Value, s: &Value, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            let resource = path.is_empty() || flag(s, EMBEDDED);
            for (k, v) in map.iter_mut() {
                if resource && is_meta(k) {
                    continue;
                }
                if let Some(sub) = field_schema(s, k) {
                    visit_embedded(v, sub, &child(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(is) = items(s) {
                for (i, item) in a.iter_mut().enumerate() {
                    visit_embedded(item, is, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

pub(crate) fn visit_embedded(v: &mut Value, s: &Value, path: &str, out: &mut Vec<String>) {
    if flag(s, EMBEDDED)
        && let Some(meta) = v.get_mut("metadata")
    {
        prune_object_meta(meta, &child(path, "metadata"), out);
    }
    coerce_embedded(v, s, path, out);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::test_util::*;

    #[test]
    fn prune_removes_unknown_fields_and_reports_paths() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"type": "object", "properties": {}}}},
        }}));
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "bogus": 1, "ownerReferences": [{"uid": "u", "extra": 1}]},
            "spec": {"foo": 1, "items": [{"name": "a", "bar": 2}], "labels": {"k": "v"},
                     "free": {"anything": {"deep": 1}, "known": {"x": 1}}},
            "status": {"phase": "x"}
        });
        let paths = prune(&mut obj, &s);
        assert_eq!(
            paths,
            vec![
                "metadata.bogus",
                "metadata.ownerReferences[0].extra",
                "spec.foo",
                "spec.free.known.x",
                "spec.items[0].bar",
                "status"
            ]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "ownerReferences": [{"uid": "u"}]},
                   "spec": {"items": [{"name": "a"}], "labels": {"k": "v"}, "free": {"anything": {"deep": 1}, "known": {}}}})
        );
    }

    #[test]
    fn prune_keeps_embedded_resource_meta() {
        let s = spec_schema(json!({"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}));
        let mut obj = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "junk": true}, "spec": {"a": "x", "b": "y"}, "other": 1}}});
        let paths = prune(&mut obj, &s);
        assert_eq!(paths, vec!["spec.template.other", "spec.template.spec.b", "spec.template.metadata.junk"]);
        assert_eq!(
            obj,
            json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "x"}}}})
        );
        // Without the marker, apiVersion/kind/metadata below the root are pruned like anything else.
        let plain = spec_schema(
            json!({"type": "object", "properties": {"template": {"type": "object", "properties": {}}}}),
        );
        let mut obj = json!({"spec": {"template": {"kind": "Pod"}}});
        assert_eq!(prune(&mut obj, &plain), vec!["spec.template.kind"]);
    }

    #[test]
    fn prune_with_preserve_unknown_at_root() {
        let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut obj = json!({"apiVersion": "a/v1", "kind": "K", "spec": {"x": 1}});
        assert!(prune(&mut obj, &s).is_empty());
        assert_eq!(obj["spec"]["x"], 1);
    }
}
