//! Built-in kinds' schemas, and decoding a built-in object like the API server's Go types.
//!
//! Start at [`catalog`]: made once per process from k8s-openapi's schemas ([`schemas`]),
//! it serves the `/openapi/v3` components of each group-version (`crate::server::openapi`) and
//! holds the compiled decoding tree ([`tree`]) of every kind. The checks on writes are
//! [`Catalog::decode`] (create and update bodies, and the result of JSON and merge
//! patches: Go's JSON decoder, see [`decode`]), [`Catalog::convert_unstructured`] (the result
//! of a strategic merge patch: apimachinery's unstructured converter, see [`unstructured`])
//! and [`Catalog::apply_errors`] (server-side apply configurations: structured-merge-diff's
//! validation, see [`typed`]).

mod decode;
mod facts;
mod golang;
pub(crate) mod schemas;
mod tree;
mod typed;
mod unstructured;
pub(crate) mod writes;
pub(crate) mod zero;

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha512};

pub(crate) use decode::DecodeError;
use tree::{NodeId, Tree};

/// The components one group-version document carries, and their hash.
#[derive(Debug)]
pub(crate) struct GvComponents {
    /// Component name → schema.
    pub(crate) schemas: Map<String, Value>,
    /// The SHA-512 of their JSON, which the `/openapi/v3` index's hash of the whole
    /// document continues from.
    pub(crate) digest: Vec<u8>,
}

/// One built-in kind.
#[derive(Debug)]
struct KindEntry {
    group: &'static str,
    version: &'static str,
    schema: String,
    root: NodeId,
}

/// Everything kubesim knows about the built-in kinds' types.
#[derive(Debug)]
pub(crate) struct Catalog {
    gvs: HashMap<String, GvComponents>,
    /// By kind, then group and version.
    kinds: HashMap<&'static str, Vec<KindEntry>>,
    tree: Tree,
}

/// The catalog, generated on first use.
pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: LazyLock<Catalog> = LazyLock::new(Catalog::build);
    &CATALOG
}

/// `api/v1` or `apis/apps/v1`, as `/openapi/v3` names a group-version.
pub(crate) fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") }
}

impl Catalog {
    fn build() -> Self {
        let generated = schemas::generate();
        let mut components = generated.components;
        // The PATCH operations' request bodies name this type.
        components.insert("io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(), json!({"type": "object"}));
        let roots: Vec<&str> = generated.kinds.iter().map(|k| k.schema.as_str()).collect();
        let (tree, ids) = Tree::compile(&components, &roots);
        let mut by_gv: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        let mut kinds: HashMap<&'static str, Vec<KindEntry>> = HashMap::new();
        for (k, root) in generated.kinds.iter().zip(ids) {
            by_gv.entry(gv_path(k.group, k.version)).or_default().push(&k.schema);
            let entry = KindEntry { group: k.group, version: k.version, schema: k.schema.clone(), root };
            kinds.entry(k.kind).or_default().push(entry);
        }
        let gvs = by_gv
            .into_iter()
            .map(|(gv, roots)| {
                let names = schemas::closure(
                    &components,
                    roots.into_iter().chain(["io.k8s.apimachinery.pkg.apis.meta.v1.Patch"]),
                );
                let schemas: Map<String, Value> =
                    names.into_iter().map(|n| (n.to_owned(), components[n].clone())).collect();
                let digest = Sha512::digest(Value::Object(schemas.clone()).to_string()).to_vec();
                (gv, GvComponents { schemas, digest })
            })
            .collect();
        Self { gvs, kinds, tree }
    }

    /// The built-in components of the group-version document `gv` (`apis/apps/v1`).
    pub(crate) fn gv_components(&self, gv: &str) -> Option<&GvComponents> {
        self.gvs.get(gv)
    }

    /// The built-in components of every group-version document.
    pub(crate) fn all_components(&self) -> impl Iterator<Item = &GvComponents> {
        self.gvs.values()
    }

    /// The component name of a built-in kind, e.g. `io.k8s.api.apps.v1.Deployment`.
    pub(crate) fn schema_name(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.entry((group, version, kind)).map(|k| k.schema.as_str())
    }

    /// The kind `(group, version, kind)`, found without allocating.
    fn entry(&self, (group, version, kind): (&str, &str, &str)) -> Option<&KindEntry> {
        self.kinds.get(kind)?.iter().find(|k| k.group == group && k.version == version)
    }

    /// Decodes `obj` like the API server decodes a request body into the kind's Go type:
    /// `Ok` with the unknown fields (as strict decoding names them, already dropped from
    /// `obj`), or the decoder's error. `before_change` sees `obj` as it came when decoding
    /// fails or changes it (the common case, a clean object, walks it once and calls
    /// nothing). Kinds without a schema decode as they are.
    pub(crate) fn decode(
        &self,
        rt: (&str, &str, &str),
        obj: &mut Value,
        before_change: &mut dyn FnMut(&Value),
    ) -> Result<Vec<String>, DecodeError> {
        match self.entry(rt) {
            Some(k) => decode::decode(&self.tree, k.root, obj, before_change),
            None => Ok(Vec::new()),
        }
    }

    /// Converts `obj` like apimachinery's `FromUnstructuredWithValidation` converts the
    /// result of a strategic merge patch into the Go type: `Ok` with the unknown fields
    /// (sorted, dropped from `obj`), or the converter's error.
    pub(crate) fn convert_unstructured(
        &self,
        rt: (&str, &str, &str),
        obj: &mut Value,
    ) -> Result<Vec<String>, String> {
        match self.entry(rt) {
            Some(k) => unstructured::convert(&self.tree, k.root, obj),
            None => Ok(Vec::new()),
        }
    }

    /// The errors structured-merge-diff finds in a server-side apply configuration of a
    /// built-in kind (fields the schema does not declare, values of the wrong type), as the
    /// API server lists them; empty when it is fine.
    pub(crate) fn apply_errors(&self, rt: (&str, &str, &str), config: &Value) -> Vec<String> {
        match self.entry(rt) {
            Some(k) => typed::validate(&self.tree, k.root, config),
            None => Vec::new(),
        }
    }
}

/// The request body of a built-in kind's PATCH operation: the four patch types, which
/// tells kubectl's client-side apply that strategic merge patches are accepted (it then
/// reads the merge keys from the schemas).
pub(crate) fn patch_request_body() -> Value {
    let patch =
        json!({"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}});
    json!({
        "content": {
            "application/apply-patch+yaml": patch,
            "application/json-patch+json": patch,
            "application/merge-patch+json": patch,
            "application/strategic-merge-patch+json": patch,
        },
        "required": true,
    })
}
