//! One `CustomResourceDefinition` per resource the script declares.

use ctop_core::{ResourceSpec, Scope};
use serde_json::{Map, Value, json};

use crate::Error;

/// Label that lets objects of the kind be ApplySet parents (`kubectl apply --applyset`).
pub const APPLYSET_PARENT_TYPE_LABEL: &str = "applyset.kubernetes.io/is-parent-type";

/// What a running operator needs installed: the CRD of every resource of `spec` (no extra
/// labels) and the `ControllerStatus` CRD its controllers report in (`ctop dev`, `ctop run
/// --install-crds`).
pub fn operator_crds(spec: &ctop_core::OperatorSpec) -> Result<Vec<Value>, Error> {
    let labels = Map::new();
    spec.resources.iter().map(|r| crd(r, &labels)).chain([Ok(ctop_core::controller_status::crd())]).collect()
}

/// The CRD of `resource`: its structural schema with `apiVersion`, `kind` and `metadata`
/// added at the root, the status subresource, scope, names and printer columns (plus Age,
/// which kubectl stops showing once a CRD names its own columns).
pub fn crd(resource: &ResourceSpec, labels: &Map<String, Value>) -> Result<Value, Error> {
    let doc = crd_document(resource, labels);
    crate::schema_check::check(&doc, resource)?;
    Ok(doc)
}

/// The CRD document, unchecked.
pub(crate) fn crd_document(resource: &ResourceSpec, labels: &Map<String, Value>) -> Value {
    let name = format!("{}.{}", resource.plural, resource.group);
    let mut schema = resource.schema.clone();
    if let Some(props) = schema.as_object_mut().and_then(|s| {
        s.entry("properties").or_insert_with(|| json!({}));
        s.get_mut("properties").and_then(Value::as_object_mut)
    }) {
        props.entry("apiVersion").or_insert_with(|| json!({"type": "string"}));
        props.entry("kind").or_insert_with(|| json!({"type": "string"}));
        props.entry("metadata").or_insert_with(|| json!({"type": "object"}));
    }

    let mut names = json!({
        "kind": resource.kind,
        "listKind": format!("{}List", resource.kind),
        "plural": resource.plural,
        "singular": resource.singular,
    });
    if !resource.short_names.is_empty() {
        names["shortNames"] = json!(resource.short_names);
    }
    let mut version = json!({
        "name": resource.version,
        "served": true,
        "storage": true,
        "schema": {"openAPIV3Schema": schema},
    });
    if resource.status_subresource {
        version["subresources"] = json!({"status": {}});
    }
    if !resource.printer_columns.is_empty() {
        let mut columns: Vec<Value> =
            resource.printer_columns.iter().map(|c| serde_json::to_value(c).unwrap_or_default()).collect();
        if !resource.printer_columns.iter().any(|c| c.name == "Age") {
            columns.push(json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}));
        }
        version["additionalPrinterColumns"] = Value::Array(columns);
    }
    let mut labels = labels.clone();
    labels.insert(APPLYSET_PARENT_TYPE_LABEL.into(), json!("true"));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "group": resource.group,
            "names": names,
            "scope": match resource.scope { Scope::Namespaced => "Namespaced", Scope::Cluster => "Cluster" },
            "versions": [version],
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ctop_core::PrinterColumn;

    /// A namespaced `WebApp` with a Phase column and `schema`.
    pub(crate) fn resource(schema: Value) -> ResourceSpec {
        ResourceSpec {
            api_version: "apps.example.com/v1".into(),
            group: "apps.example.com".into(),
            version: "v1".into(),
            kind: "WebApp".into(),
            plural: "webapps".into(),
            singular: "webapp".into(),
            scope: Scope::Namespaced,
            short_names: vec!["wa".into()],
            printer_columns: vec![PrinterColumn {
                name: "Phase".into(),
                type_: "string".into(),
                json_path: ".status.phase".into(),
                description: None,
                priority: None,
            }],
            schema,
            status_subresource: true,
            ..Default::default()
        }
    }

    fn schema() -> Value {
        json!({"type": "object", "required": ["spec"], "properties": {
            "spec": {"type": "object", "required": ["image"], "properties": {
                "image": {"type": "string", "description": "The image.", "pattern": "^[a-z]"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 20, "default": 1},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "extra": {"x-kubernetes-preserve-unknown-fields": true},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        }})
    }

    #[test]
    fn crd_from_a_schema() {
        let crd = crd(&resource(schema()), &Map::new()).unwrap();
        assert_eq!(crd["metadata"]["name"], "webapps.apps.example.com");
        assert_eq!(crd["metadata"]["labels"][APPLYSET_PARENT_TYPE_LABEL], "true");
        let spec = &crd["spec"];
        assert_eq!(spec["scope"], "Namespaced");
        assert_eq!(
            spec["names"],
            json!({"kind": "WebApp", "listKind": "WebAppList", "plural": "webapps", "singular": "webapp", "shortNames": ["wa"]})
        );
        let v = &spec["versions"][0];
        assert_eq!(
            (v["name"].as_str(), v["served"].as_bool(), v["storage"].as_bool()),
            (Some("v1"), Some(true), Some(true))
        );
        assert_eq!(v["subresources"], json!({"status": {}}));
        let s = &v["schema"]["openAPIV3Schema"];
        assert_eq!(s["properties"]["metadata"], json!({"type": "object"}));
        assert_eq!(s["properties"]["kind"], json!({"type": "string"}));
        let fields = &s["properties"]["spec"]["properties"];
        assert_eq!(fields["replicas"], json!({"type": "integer", "minimum": 1, "maximum": 20, "default": 1}));
        assert_eq!(fields["mode"]["enum"], json!(["a", "b"]));
        assert_eq!(fields["image"]["pattern"], "^[a-z]");
        assert_eq!(s["properties"]["spec"]["required"], json!(["image"]));
        let cols = v["additionalPrinterColumns"].as_array().unwrap();
        assert_eq!(cols[0], json!({"name": "Phase", "type": "string", "jsonPath": ".status.phase"}));
        assert_eq!(cols[1]["name"], "Age");
    }

    #[test]
    fn cluster_scope_without_columns_or_short_names() {
        let mut r = resource(schema());
        r.scope = Scope::Cluster;
        r.short_names.clear();
        r.printer_columns.clear();
        let crd = crd(&r, &Map::new()).unwrap();
        assert_eq!(crd["spec"]["scope"], "Cluster");
        assert!(crd["spec"]["names"].get("shortNames").is_none());
        assert!(crd["spec"]["versions"][0].get("additionalPrinterColumns").is_none());
    }

    #[test]
    fn non_structural_schemas_are_refused_with_the_path() {
        let bad = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"description": "untyped"}}}}});
        let Err(Error::RejectedCrd { problems, .. }) = crd(&resource(bad), &Map::new()) else { panic!() };
        assert_eq!(problems[0].script_path, "spec.x");
        assert_eq!(
            problems[0].to_string(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].type: Required value: must not be \
             empty for specified object fields (in the script's schema at spec.x: give it a type: a typed z schema, \
             or z.any() to keep any value)"
        );
        let list = json!({"type": "object", "properties": {"l": {"type": "array"}}});
        assert!(crd(&resource(list), &Map::new()).is_err());
        let refd = json!({"type": "object", "properties": {"r": {"$ref": "#/x"}}});
        assert!(crd(&resource(refd), &Map::new()).is_err());
    }
}
