//! The server-side-apply shape of a custom resource, read from its CRD schema's
//! `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` / `x-kubernetes-map-type`
//! ([`SchemaShape`]); kubesim's SSA (`ssa.rs`) asks it how lists and maps merge.

use ctop_schema::{EMBEDDED, LIST_MAP_KEYS, LIST_TYPE, MAP_TYPE, field_schema, items};
use serde_json::Value;

use crate::merge::shape::{ListType, MergeStrategy, MetadataOnlyShape, Shape};

/// The merge shape of a custom resource, read from its schema: lists are atomic unless
/// `x-kubernetes-list-type` says `set` or `map` (keys from `x-kubernetes-list-map-keys`);
/// maps are granular unless `x-kubernetes-map-type: atomic`. Paths into `metadata` (at
/// the root or of an embedded resource) follow the built-in `ObjectMeta` rules.
/// Strategic merge patch is not available for custom resources, so
/// [`Shape::merge_strategy`] is `Replace` outside metadata.
#[derive(Debug, Clone)]
pub struct SchemaShape {
    schema: Value,
}

impl SchemaShape {
    /// The shape of the objects `schema` (an `openAPIV3Schema`) describes.
    #[must_use]
    pub fn new(schema: &Value) -> Self {
        SchemaShape { schema: schema.clone() }
    }

    /// The schema at `path` (list levels skipped), or where a metadata path starts.
    fn lookup<'a>(&'a self, path: &[&str]) -> Lookup<'a> {
        let mut s = &self.schema;
        let mut resource = true;
        for (i, seg) in path.iter().enumerate() {
            while let Some(is) = items(s) {
                s = is;
            }
            if (resource || s.get(EMBEDDED).and_then(Value::as_bool).unwrap_or(false)) && *seg == "metadata" {
                return Lookup::Meta(i);
            }
            match field_schema(s, seg) {
                Some(next) => s = next,
                None => return Lookup::Unknown,
            }
            resource = false;
        }
        Lookup::Schema(s)
    }
}

enum Lookup<'a> {
    Schema(&'a Value),
    Meta(usize),
    Unknown,
}

impl Shape for SchemaShape {
    fn list_type(&self, path: &[&str]) -> ListType {
        match self.lookup(path) {
            Lookup::Meta(i) => MetadataOnlyShape.list_type(&path[i..]),
            Lookup::Schema(s) => match s.get(LIST_TYPE).and_then(Value::as_str) {
                Some("set") => ListType::Set,
                Some("map") => ListType::Map(
                    s.get(LIST_MAP_KEYS)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                ),
                _ => ListType::Atomic,
            },
            Lookup::Unknown => ListType::Atomic,
        }
    }

    fn merge_strategy(&self, path: &[&str]) -> MergeStrategy {
        match self.lookup(path) {
            Lookup::Meta(i) => MetadataOnlyShape.merge_strategy(&path[i..]),
            _ => MergeStrategy::Replace,
        }
    }

    fn atomic_map(&self, path: &[&str]) -> bool {
        match self.lookup(path) {
            Lookup::Schema(mut s) => {
                while let Some(is) = items(s) {
                    s = is;
                }
                s.get(MAP_TYPE).and_then(Value::as_str) == Some("atomic")
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec_schema(spec: Value) -> Value {
        json!({"type": "object", "properties": {"spec": spec}})
    }

    #[test]
    fn schema_shape_reads_extensions() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
            "plain": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
            "tmpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        }}));
        let shape = SchemaShape::new(&s);
        assert_eq!(
            shape.list_type(&["spec", "ports"]),
            ListType::Map(vec!["port".into(), "protocol".into()])
        );
        assert_eq!(shape.list_type(&["spec", "ports", "tags"]), ListType::Set);
        assert_eq!(shape.list_type(&["spec", "plain"]), ListType::Atomic);
        assert_eq!(shape.list_type(&["spec", "nowhere"]), ListType::Atomic);
        assert!(shape.atomic_map(&["spec", "selector"]));
        assert!(!shape.atomic_map(&["spec"]));
        assert_eq!(shape.list_type(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(shape.list_type(&["metadata", "ownerReferences"]), ListType::Map(vec!["uid".into()]));
        assert_eq!(shape.merge_strategy(&["metadata", "finalizers"]), MergeStrategy::MergePrimitives);
        assert_eq!(shape.list_type(&["spec", "tmpl", "metadata", "finalizers"]), ListType::Set);
        assert_eq!(shape.merge_strategy(&["spec", "ports"]), MergeStrategy::Replace);
    }
}
