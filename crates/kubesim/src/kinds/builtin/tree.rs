//! The decoding tree: the built-in schemas compiled once into nodes that say what Go type
//! sits at each place of an object and what the JSON decoder calls it (`[]v1.Container`,
//! `v1.PullPolicy`, `int32`), so that checking an object walks it once with no lookups
//! but a binary search of a struct's fields.
//!
//! Start at [`Tree::compile`]; [`Node`] and [`Shape`] are what the walkers in
//! [`super::decode`] and [`super::convert`] read.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{facts, schemas};

/// An index into [`Tree::nodes`].
pub(crate) type NodeId = usize;

/// What Go type a place in an object has, as far as decoding goes.
#[derive(Debug)]
pub(crate) enum Shape {
    /// A struct: its Go name (`PodSpec`) and its JSON fields, sorted by name.
    Struct {
        /// The struct's name, as `UnmarshalTypeError.Struct` shows it.
        name: Box<str>,
        /// `(JSON name, node)`, sorted.
        fields: Box<[(Box<str>, NodeId)]>,
    },
    /// A slice of the element node.
    Slice(NodeId),
    /// A map with string keys.
    Map(NodeId),
    /// A string (or a named string type).
    Str,
    /// `[]byte`: base64 in JSON.
    Bytes,
    /// A bool.
    Bool,
    /// `int32` or `int64` (or a named one).
    Int {
        /// 32 or 64.
        bits: u32,
    },
    /// `float64`.
    Float,
    /// `intstr.IntOrString`.
    IntOrString,
    /// `resource.Quantity`.
    Quantity,
    /// `metav1.Time` (RFC 3339).
    Time,
    /// `metav1.MicroTime` (RFC 3339 with microseconds).
    MicroTime,
    /// Anything goes: `runtime.RawExtension`, `apiextensions.JSON`, `FieldsV1` and the
    /// `JSONSchemaProps` unions, which decode themselves.
    Any,
}

/// How the items of a list are identified (`+listType`), for paths into it.
#[derive(Debug, Default)]
pub(crate) enum ListKind {
    /// By index (`atomic`, or no marker).
    #[default]
    Atomic,
    /// By value (`set`).
    Set,
    /// By the values of these key fields (`map`).
    Map(Box<[Box<str>]>),
}

/// One place in the tree.
#[derive(Debug)]
pub(crate) struct Node {
    /// What it holds.
    pub(crate) shape: Shape,
    /// The Go type as `reflect.Type.String()` prints it in decoding errors.
    pub(crate) go: Box<str>,
    /// For lists: how their items are identified.
    pub(crate) list: ListKind,
}

/// Every node of every served built-in kind.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    /// The nodes; a kind's root is found through [`Tree::compile`]'s map.
    pub(crate) nodes: Vec<Node>,
}

impl Tree {
    /// The node `id`.
    pub(crate) fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The field `name` of a struct node, if it has one.
    pub(crate) fn field(&self, fields: &[(Box<str>, NodeId)], name: &str) -> Option<NodeId> {
        fields.binary_search_by(|(f, _)| (**f).cmp(name)).ok().map(|i| fields[i].1)
    }

    /// Compiles the components reachable from `roots` (component names); returns the
    /// tree and each root's node.
    pub(crate) fn compile(components: &BTreeMap<String, Value>, roots: &[&str]) -> (Self, Vec<NodeId>) {
        let go_types: HashMap<(&str, &str), (&str, &str)> =
            facts::GO_TYPES.iter().map(|&(s, f, go, elem)| ((s, f), (go, elem))).collect();
        let lists: HashMap<(&str, &str), (&str, &str)> =
            facts::MARKERS.iter().map(|&(s, f, list, keys, ..)| ((s, f), (list, keys))).collect();
        let mut c = Compiler { components, go_types, lists, tree: Self::default(), structs: HashMap::new() };
        let ids = roots.iter().map(|r| c.named(r)).collect();
        (c.tree, ids)
    }
}

struct Compiler<'a> {
    components: &'a BTreeMap<String, Value>,
    go_types: HashMap<(&'static str, &'static str), (&'static str, &'static str)>,
    lists: HashMap<(&'static str, &'static str), (&'static str, &'static str)>,
    tree: Tree,
    structs: HashMap<&'a str, NodeId>,
}

/// `io.k8s.api.core.v1.PodSpec` → (`v1`, `PodSpec`).
fn go_package_and_name(schema: &str) -> (&str, &str) {
    let mut parts = schema.rsplitn(3, '.');
    let name = parts.next().unwrap_or(schema);
    let package = parts.next().unwrap_or_default();
    (package, name)
}

impl<'a> Compiler<'a> {
    fn push(&mut self, shape: Shape, go: impl Into<Box<str>>) -> NodeId {
        self.tree.nodes.push(Node { shape, go: go.into(), list: ListKind::Atomic });
        self.tree.nodes.len() - 1
    }

    /// The node of the component `name` (shared by every place that references it).
    fn named(&mut self, name: &'a str) -> NodeId {
        if let Some(&id) = self.structs.get(name) {
            return id;
        }
        let (package, short) = go_package_and_name(name);
        let go = format!("{package}.{short}");
        let special = match short {
            "IntOrString" => Some(Shape::IntOrString),
            "Quantity" => Some(Shape::Quantity),
            "Time" if package == "v1" && name.contains(".meta.") => Some(Shape::Time),
            "MicroTime" => Some(Shape::MicroTime),
            "RawExtension"
            | "JSON"
            | "FieldsV1"
            | "JSONSchemaPropsOrArray"
            | "JSONSchemaPropsOrBool"
            | "JSONSchemaPropsOrStringArray" => Some(Shape::Any),
            _ => None,
        };
        if let Some(shape) = special {
            let id = self.push(shape, go);
            self.structs.insert(name, id);
            return id;
        }
        let id = self.push(Shape::Struct { name: short.into(), fields: Box::new([]) }, go);
        self.structs.insert(name, id);
        let Some(schema) = self.components.get(name) else { return id };
        let mut fields: Vec<(Box<str>, NodeId)> = Vec::new();
        if let Some(Value::Object(props)) = schema.get("properties") {
            for (field, prop) in props {
                let (go, elem) = self.go_types.get(&(name, field.as_str())).copied().unwrap_or_default();
                let node = self.property(prop, go, elem);
                match self.lists.get(&(name, field.as_str())) {
                    Some(&("set", _)) => self.tree.nodes[node].list = ListKind::Set,
                    Some(&("map", keys)) => {
                        self.tree.nodes[node].list = ListKind::Map(keys.split(',').map(Into::into).collect());
                    }
                    _ => {}
                }
                fields.push((field.as_str().into(), node));
            }
        }
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        if let Shape::Struct { fields: f, .. } = &mut self.tree.nodes[id].shape {
            *f = fields.into_boxed_slice();
        }
        id
    }

    /// The node of a property schema; `go`/`elem` name a Go type (and its element type)
    /// the schema cannot tell, else are empty.
    fn property(&mut self, prop: &'a Value, go: &str, elem: &str) -> NodeId {
        if let Some(r) = schemas::ref_name(prop) {
            // Structs and the types with their own decoding are named by the schema.
            return self.named(r);
        }
        let ty = prop.get("type").and_then(Value::as_str).unwrap_or_default();
        let format = prop.get("format").and_then(Value::as_str).unwrap_or_default();
        let (shape, default_go): (Shape, String) = match (ty, format) {
            ("string", "byte") => (Shape::Bytes, "[]uint8".into()),
            ("string", _) => (Shape::Str, "string".into()),
            ("boolean", _) => (Shape::Bool, "bool".into()),
            ("integer", "int32") => (Shape::Int { bits: 32 }, "int32".into()),
            ("integer", _) => (Shape::Int { bits: 64 }, "int64".into()),
            ("number", _) => (Shape::Float, "float64".into()),
            ("array", _) => {
                let item = match prop.get("items") {
                    Some(items) => self.property(items, elem, ""),
                    None => self.push(Shape::Any, "interface {}"),
                };
                let go = format!("[]{}", self.tree.nodes[item].go);
                (Shape::Slice(item), go)
            }
            ("object", _) => match prop.get("additionalProperties") {
                Some(values) if values.is_object() => {
                    let item = self.property(values, elem, "");
                    let go = format!("map[string]{}", self.tree.nodes[item].go);
                    (Shape::Map(item), go)
                }
                _ => (Shape::Any, "map[string]interface {}".into()),
            },
            _ => (Shape::Any, "interface {}".into()),
        };
        let go = if go.is_empty() { default_go } else { go.to_owned() };
        self.push(shape, go)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field<'t>(tree: &'t Tree, id: NodeId, path: &[&str]) -> &'t Node {
        let mut id = id;
        for name in path {
            id = match &tree.node(id).shape {
                Shape::Struct { fields, .. } => tree.field(fields, name).expect(name),
                Shape::Slice(e) | Shape::Map(e) => {
                    let Shape::Struct { fields, .. } = &tree.node(*e).shape else { panic!("{name}") };
                    tree.field(fields, name).expect(name)
                }
                other => panic!("{other:?} at {name}"),
            };
        }
        tree.node(id)
    }

    #[test]
    fn go_names_of_fields() {
        let g = schemas::generate();
        let (tree, roots) = Tree::compile(&g.components, &["io.k8s.api.apps.v1.Deployment"]);
        let d = roots[0];
        assert_eq!(&*tree.node(d).go, "v1.Deployment");
        let containers = field(&tree, d, &["spec", "template", "spec", "containers"]);
        assert_eq!(&*containers.go, "[]v1.Container");
        assert_eq!(
            &*field(&tree, d, &["spec", "template", "spec", "containers", "imagePullPolicy"]).go,
            "v1.PullPolicy"
        );
        assert_eq!(
            &*field(&tree, d, &["spec", "template", "spec", "containers", "env", "value"]).go,
            "string"
        );
        assert_eq!(&*field(&tree, d, &["spec", "replicas"]).go, "int32");
        assert_eq!(&*field(&tree, d, &["metadata", "labels"]).go, "map[string]string");
        assert_eq!(&*field(&tree, d, &["metadata", "uid"]).go, "types.UID");
        assert_eq!(
            &*field(&tree, d, &["spec", "template", "spec", "containers", "resources", "limits"]).go,
            "v1.ResourceList"
        );
        assert_eq!(&*field(&tree, d, &["spec", "template", "spec"]).go, "v1.PodSpec");
        let caps = field(
            &tree,
            d,
            &["spec", "template", "spec", "containers", "securityContext", "capabilities", "add"],
        );
        assert_eq!(&*caps.go, "[]v1.Capability");
        let Shape::Slice(e) = caps.shape else { panic!() };
        assert_eq!(&*tree.node(e).go, "v1.Capability");
    }
}
