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
    let name = format!("{}.{}", resource.plural, resource.group);
    let mut schema = resource.schema.clone();
    check_structural(&schema, "openAPIV3Schema").map_err(|(path, problem)| Error::NotStructural {
        crd: name.clone(),
        path,
        problem,
    })?;
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
    Ok(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "group": resource.group,
            "names": names,
            "scope": match resource.scope { Scope::Namespaced => "Namespaced", Scope::Cluster => "Cluster" },
            "versions": [version],
        },
    }))
}

/// Keywords a CRD schema may not use (apiextensions rejects them).
const FORBIDDEN: &[&str] =
    &["$ref", "$schema", "definitions", "dependencies", "additionalItems", "patternProperties", "id"];

/// Check the rules of a structural schema the API server would otherwise reject the CRD
/// for, so the error names the field: every node has a `type` (unless it preserves unknown
/// fields or is int-or-string), `properties` and `additionalProperties` are not combined,
/// arrays have `items`, and no forbidden keyword appears.
fn check_structural(node: &Value, path: &str) -> Result<(), (String, String)> {
    let fail = |problem: &str| Err((path.to_owned(), problem.to_owned()));
    let Some(obj) = node.as_object() else { return fail("is not an object") };
    if let Some(k) = FORBIDDEN.iter().find(|k| obj.contains_key(**k)) {
        return fail(&format!("uses {k}, which CRD schemas do not allow"));
    }
    let flag = |k: &str| obj.get(k).and_then(Value::as_bool) == Some(true);
    let ty = obj.get("type").and_then(Value::as_str);
    if ty.is_none() && !flag("x-kubernetes-preserve-unknown-fields") && !flag("x-kubernetes-int-or-string") {
        return fail("has no type (use a typed schema, or z.any() to keep any value)");
    }
    if flag("uniqueItems") {
        return fail("sets uniqueItems, which CRD schemas do not allow");
    }
    if obj.contains_key("properties") && obj.get("additionalProperties").is_some_and(|a| a != &json!(false)) {
        return fail("has both properties and additionalProperties");
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            check_structural(v, &format!("{path}.properties.{k}"))?;
        }
    }
    if let Some(extra @ Value::Object(_)) = obj.get("additionalProperties") {
        check_structural(extra, &format!("{path}.additionalProperties"))?;
    }
    match (ty, obj.get("items")) {
        (Some("array"), None) => return fail("is an array without items"),
        (_, Some(items)) => check_structural(items, &format!("{path}.items"))?,
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctop_core::PrinterColumn;

    fn resource(schema: Value) -> ResourceSpec {
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
        let Err(Error::NotStructural { path, .. }) = crd(&resource(bad), &Map::new()) else { panic!() };
        assert_eq!(path, "openAPIV3Schema.properties.spec.properties.x");
        let list = json!({"type": "object", "properties": {"l": {"type": "array"}}});
        assert!(crd(&resource(list), &Map::new()).is_err());
        let refd = json!({"type": "object", "properties": {"r": {"$ref": "#/x"}}});
        assert!(crd(&resource(refd), &Map::new()).is_err());
    }
}
