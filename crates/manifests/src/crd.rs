//! One `CustomResourceDefinition` per resource the script declares, with every version it
//! declares ([`ResourceSpec::all_versions`]) and how the API server converts between them.
//!
//! Each version carries its own schema (with `apiVersion`, `kind` and `metadata` added at
//! the root), `served`, `storage`, `deprecated` (and `deprecationWarning` when the script
//! gave the text; without it clients get the server's own), its printer columns (plus Age)
//! and, when the resource has one, the status subresource.
//!
//! `spec.conversion` is always written, so that what is applied is what the server keeps:
//! - one version: `{strategy: None}`, there is nothing to convert;
//! - several ([`ResourceSpec::converts`]): `{strategy: Webhook}` with
//!   `conversionReviewVersions: [v1]` and a `clientConfig` pointing at the operator's
//!   [`ctop_webhook::CONVERSION_PATH`], at a [`ConversionEndpoint`]: the webhook Service
//!   (`ctop manifests`; no `caBundle`, the running operator patches its CA in as it does
//!   for its admission configurations) or a URL with a known CA (`ctop dev`, `ctop test`).
//!
//! Without an endpoint ([`crd`], [`operator_crds`]) a resource with several versions is
//! refused ([`Error::NoConversionEndpoint`]): with `strategy: None` the API server would
//! only rewrite `apiVersion` and prune whatever the other version's schema lacks.

use base64::Engine as _;
use ctop_core::{OperatorSpec, ResourceSpec, Scope, VersionSpec};
use ctop_webhook::CONVERSION_PATH;
use serde_json::{Map, Value, json};

use crate::Error;

/// Label that lets objects of the kind be ApplySet parents (`kubectl apply --applyset`).
pub const APPLYSET_PARENT_TYPE_LABEL: &str = "applyset.kubernetes.io/is-parent-type";

/// Where the API server sends the `ConversionReview`s of resources with several versions:
/// the CRD's `spec.conversion.webhook.clientConfig`, always at [`CONVERSION_PATH`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConversionEndpoint {
    /// A Service in the cluster (`https://<name>.<namespace>.svc:<port>/convert`), written
    /// without a `caBundle`: the operator patches its CA in at run time.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: u16,
    },
    /// A base URL such as `https://127.0.0.1:9443` (the API server requires `https`), to
    /// which [`CONVERSION_PATH`] is appended, and the CA that signed its certificate.
    Url {
        /// The base URL.
        url: String,
        /// The CA certificate (PEM) the API server verifies the webhook with.
        ca_bundle: String,
    },
}

impl From<&ctop_webhook::dev::ConversionEndpoint> for ConversionEndpoint {
    /// The dev webhook's loopback URL and CA (`ctop dev`, `ctop test`).
    fn from(dev: &ctop_webhook::dev::ConversionEndpoint) -> Self {
        ConversionEndpoint::Url {
            url: dev.url.strip_suffix(CONVERSION_PATH).unwrap_or(&dev.url).to_owned(),
            ca_bundle: dev.ca_pem.clone(),
        }
    }
}

impl ConversionEndpoint {
    /// The `clientConfig` of a CRD's conversion webhook.
    fn client_config(&self) -> Value {
        match self {
            ConversionEndpoint::Service { namespace, name, port } => json!({
                "service": {"namespace": namespace, "name": name, "path": CONVERSION_PATH, "port": port},
            }),
            ConversionEndpoint::Url { url, ca_bundle } => json!({
                "url": format!("{}{CONVERSION_PATH}", url.trim_end_matches('/')),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_bundle),
            }),
        }
    }
}

/// The name of `resource`'s CRD: `<plural>.<group>`.
#[must_use]
pub fn crd_name(resource: &ResourceSpec) -> String {
    format!("{}.{}", resource.plural, resource.group)
}

/// What a running operator needs installed: the CRD of every resource of `spec` (no extra
/// labels) and the `ControllerStatus` CRD its controllers report in (`ctop dev`, `ctop run
/// --install-crds`). A resource with several versions is refused, its CRD needs a
/// conversion endpoint: see [`operator_crds_with`].
pub fn operator_crds(spec: &OperatorSpec) -> Result<Vec<Value>, Error> {
    operator_crds_for(spec, None)
}

/// [`operator_crds`] with the conversion webhook of every resource with several versions at
/// `conversion`, e.g. a loopback URL and the CA of the server `ctop dev` or `ctop test`
/// runs; resources with one version do not convert and ignore it.
pub fn operator_crds_with(spec: &OperatorSpec, conversion: &ConversionEndpoint) -> Result<Vec<Value>, Error> {
    operator_crds_for(spec, Some(conversion))
}

fn operator_crds_for(
    spec: &OperatorSpec,
    conversion: Option<&ConversionEndpoint>,
) -> Result<Vec<Value>, Error> {
    let labels = Map::new();
    spec.resources
        .iter()
        .map(|r| crd_for(r, &labels, conversion))
        .chain([Ok(ctop_core::controller_status::crd())])
        .collect()
}

/// The CRD of `resource`: every version with its schema (`apiVersion`, `kind` and
/// `metadata` added at the root), `served`, `storage`, `deprecated` and
/// `deprecationWarning`, printer columns (plus Age) and the status subresource, and
/// `spec.conversion: {strategy: None}`; checked as the API server would check it
/// ([`Error::RejectedCrd`], [`Error::BadDeprecationWarning`]). A resource with several
/// versions is refused ([`Error::NoConversionEndpoint`]): use [`crd_with`].
pub fn crd(resource: &ResourceSpec, labels: &Map<String, Value>) -> Result<Value, Error> {
    crd_for(resource, labels, None)
}

/// [`crd()`] with, when `resource` has several versions, `spec.conversion: {strategy:
/// Webhook}`, `conversionReviewVersions: [v1]` and the `clientConfig` of `conversion`
/// (always at [`CONVERSION_PATH`]).
pub fn crd_with(
    resource: &ResourceSpec,
    labels: &Map<String, Value>,
    conversion: &ConversionEndpoint,
) -> Result<Value, Error> {
    crd_for(resource, labels, Some(conversion))
}

fn crd_for(
    resource: &ResourceSpec,
    labels: &Map<String, Value>,
    conversion: Option<&ConversionEndpoint>,
) -> Result<Value, Error> {
    let conversion = match conversion {
        _ if !resource.converts() => json!({"strategy": "None"}),
        Some(endpoint) => json!({
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": endpoint.client_config()},
        }),
        None => return Err(Error::NoConversionEndpoint { crd: crd_name(resource) }),
    };
    let doc = crd_document(resource, labels, conversion);
    crate::schema_check::check(&doc, resource)?;
    Ok(doc)
}

/// The CRD document with `conversion` as its `spec.conversion`, unchecked.
pub(crate) fn crd_document(resource: &ResourceSpec, labels: &Map<String, Value>, conversion: Value) -> Value {
    let mut names = json!({
        "kind": resource.kind,
        "listKind": format!("{}List", resource.kind),
        "plural": resource.plural,
        "singular": resource.singular,
    });
    if !resource.short_names.is_empty() {
        names["shortNames"] = json!(resource.short_names);
    }
    let versions: Vec<Value> = resource.all_versions().iter().map(|v| version(resource, v)).collect();
    let mut labels = labels.clone();
    labels.insert(APPLYSET_PARENT_TYPE_LABEL.into(), json!("true"));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(resource), "labels": labels},
        "spec": {
            "group": resource.group,
            "names": names,
            "scope": match resource.scope { Scope::Namespaced => "Namespaced", Scope::Cluster => "Cluster" },
            "versions": versions,
            "conversion": conversion,
        },
    })
}

/// One entry of `spec.versions`: the version's structural schema with `apiVersion`, `kind`
/// and `metadata` added at the root, the status subresource, and its printer columns (plus
/// Age, which kubectl stops showing once a CRD names its own columns).
fn version(resource: &ResourceSpec, v: &VersionSpec) -> Value {
    let mut schema = v.schema.clone();
    if let Some(props) = schema.as_object_mut().and_then(|s| {
        s.entry("properties").or_insert_with(|| json!({}));
        s.get_mut("properties").and_then(Value::as_object_mut)
    }) {
        props.entry("apiVersion").or_insert_with(|| json!({"type": "string"}));
        props.entry("kind").or_insert_with(|| json!({"type": "string"}));
        props.entry("metadata").or_insert_with(|| json!({"type": "object"}));
    }
    let mut version = json!({
        "name": v.name,
        "served": v.served,
        "storage": v.storage,
        "schema": {"openAPIV3Schema": schema},
    });
    if let Some(deprecation) = &v.deprecated {
        version["deprecated"] = json!(true);
        if let Some(warning) = &deprecation.warning {
            version["deprecationWarning"] = json!(warning);
        }
    }
    if resource.status_subresource {
        version["subresources"] = json!({"status": {}});
    }
    if !v.printer_columns.is_empty() {
        let mut columns: Vec<Value> =
            v.printer_columns.iter().map(|c| serde_json::to_value(c).unwrap_or_default()).collect();
        if !v.printer_columns.iter().any(|c| c.name == "Age") {
            columns.push(json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}));
        }
        version["additionalPrinterColumns"] = Value::Array(columns);
    }
    version
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ctop_core::{Deprecation, PrinterColumn};

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
        assert_eq!(spec["versions"].as_array().map(Vec::len), Some(1));
        assert!(v.get("deprecated").is_none());
        // One version: nothing to convert, said explicitly so that what is applied is what
        // the server keeps.
        assert_eq!(spec["conversion"], json!({"strategy": "None"}));
        let service =
            ConversionEndpoint::Service { namespace: "ns".into(), name: "op-webhook".into(), port: 443 };
        assert_eq!(crd_with(&resource(schema()), &Map::new(), &service).unwrap(), crd, "no endpoint needed");
    }

    #[test]
    fn a_deprecated_single_version_says_so() {
        let mut r = resource(schema());
        r.deprecated = Some(Deprecation { warning: None });
        let v = &crd(&r, &Map::new()).unwrap()["spec"]["versions"][0];
        assert_eq!(v["deprecated"], true);
        assert!(v.get("deprecationWarning").is_none(), "the server's own warning");
    }

    fn column(name: &str, path: &str) -> PrinterColumn {
        PrinterColumn {
            name: name.into(),
            type_: "string".into(),
            json_path: path.into(),
            description: None,
            priority: None,
        }
    }

    /// `WebApp` with versions v2 (the hub, served), v1 (stored, deprecated with a warning,
    /// its own column) and v1alpha1 (deprecated without a warning, not served, no columns).
    pub(crate) fn converting() -> ResourceSpec {
        let mut r = resource(schema());
        let old = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"image": {"type": "string"}, "size": {"type": "integer", "default": 1}}},
        }});
        r.versions = vec![
            VersionSpec {
                name: "v1".into(),
                served: true,
                storage: false,
                deprecated: None,
                schema: schema(),
                printer_columns: r.printer_columns.clone(),
            },
            VersionSpec {
                name: "v1beta1".into(),
                served: true,
                storage: true,
                deprecated: Some(Deprecation { warning: Some("use apps.example.com/v1".into()) }),
                schema: old.clone(),
                printer_columns: vec![
                    column("Image", ".spec.image"),
                    column("Age", ".metadata.creationTimestamp"),
                ],
            },
            VersionSpec {
                name: "v1alpha1".into(),
                served: false,
                storage: false,
                deprecated: Some(Deprecation { warning: None }),
                schema: old,
                printer_columns: vec![],
            },
        ];
        r
    }

    fn service() -> ConversionEndpoint {
        ConversionEndpoint::Service { namespace: "op-system".into(), name: "op-webhook".into(), port: 443 }
    }

    #[test]
    fn every_version_with_its_schema_flags_and_columns() {
        let crd = crd_with(&converting(), &Map::new(), &service()).expect("the API server accepts it");
        let versions = crd["spec"]["versions"].as_array().expect("versions");
        let flags: Vec<_> = versions
            .iter()
            .map(|v| (v["name"].as_str(), v["served"].as_bool(), v["storage"].as_bool()))
            .collect();
        assert_eq!(
            flags,
            [
                (Some("v1"), Some(true), Some(false)),
                (Some("v1beta1"), Some(true), Some(true)),
                (Some("v1alpha1"), Some(false), Some(false)),
            ]
        );
        for v in versions {
            let props = &v["schema"]["openAPIV3Schema"]["properties"];
            assert_eq!(props["apiVersion"], json!({"type": "string"}), "{}", v["name"]);
            assert_eq!(props["metadata"], json!({"type": "object"}));
            assert_eq!(v["subresources"], json!({"status": {}}), "the status subresource in every version");
        }
        assert_eq!(
            versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"]["maximum"],
            20
        );
        assert_eq!(
            versions[1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["default"],
            1
        );

        // Deprecation: the flag, and the warning only where the script gave one.
        assert!(versions[0].get("deprecated").is_none());
        assert_eq!(
            (&versions[1]["deprecated"], &versions[1]["deprecationWarning"]),
            (&json!(true), &json!("use apps.example.com/v1"))
        );
        assert_eq!(versions[2]["deprecated"], true);
        assert!(versions[2].get("deprecationWarning").is_none());

        // Columns per version, Age added unless named; none where the version has none.
        let names = |v: &Value| -> Vec<String> {
            v["additionalPrinterColumns"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(names(&versions[0]), ["Phase", "Age"]);
        assert_eq!(names(&versions[1]), ["Image", "Age"]);
        assert_eq!(versions[1]["additionalPrinterColumns"][0]["jsonPath"], ".spec.image");
        assert!(versions[2].get("additionalPrinterColumns").is_none());
    }

    #[test]
    fn several_versions_convert_through_the_operators_webhook_service() {
        let crd = crd_with(&converting(), &Map::new(), &service()).unwrap();
        assert_eq!(
            crd["spec"]["conversion"],
            json!({"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "op-system", "name": "op-webhook", "path": "/convert", "port": 443}},
            }}),
            "no caBundle: the operator patches its CA in"
        );
        assert_eq!(CONVERSION_PATH, "/convert");
    }

    #[test]
    fn a_url_endpoint_carries_its_ca() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        for url in ["https://127.0.0.1:9443", "https://127.0.0.1:9443/"] {
            let endpoint = ConversionEndpoint::Url { url: url.into(), ca_bundle: pem.into() };
            let crd = crd_with(&converting(), &Map::new(), &endpoint).unwrap();
            let config = &crd["spec"]["conversion"]["webhook"]["clientConfig"];
            assert_eq!(config["url"], "https://127.0.0.1:9443/convert");
            assert!(config.get("service").is_none());
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(config["caBundle"].as_str().expect("caBundle"))
                .expect("base64");
            assert_eq!(decoded, pem.as_bytes());
        }
    }

    #[test]
    fn several_versions_without_an_endpoint_are_refused() {
        let err = crd(&converting(), &Map::new()).unwrap_err();
        assert!(
            matches!(&err, Error::NoConversionEndpoint { crd } if crd == "webapps.apps.example.com"),
            "{err}"
        );
        assert!(err.to_string().contains("install the CRDs `ctop manifests` writes"), "{err}");
        let spec = OperatorSpec { resources: vec![resource(schema()), converting()], controllers: vec![] };
        assert!(matches!(operator_crds(&spec), Err(Error::NoConversionEndpoint { .. })));
        // With an endpoint: the converting CRD, the one-version CRD as before, ControllerStatus.
        let pem = "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n";
        let url = ConversionEndpoint::Url { url: "https://127.0.0.1:1".into(), ca_bundle: pem.into() };
        let mut one = resource(schema());
        one.plural = "others".into();
        one.kind = "Other".into();
        let spec = OperatorSpec { resources: vec![one, converting()], controllers: vec![] };
        let crds = operator_crds_with(&spec, &url).unwrap();
        let strategies: Vec<_> = crds.iter().map(|c| c["spec"]["conversion"]["strategy"].clone()).collect();
        assert_eq!(strategies[..2], [json!("None"), json!("Webhook")]);
        assert_eq!(crds[2]["metadata"]["name"], "controllerstatuses.ctop.dev");
    }

    #[test]
    fn each_versions_schema_is_checked_and_named() {
        let mut r = converting();
        r.versions[1].schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"description": "untyped"}}}}});
        let Err(Error::RejectedCrd { problems, .. }) = crd_with(&r, &Map::new(), &service()) else {
            panic!("refused")
        };
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(
            problems[0].field,
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[x].type"
        );
        assert_eq!(problems[0].version.as_deref(), Some("v1beta1"));
        assert!(problems[0].to_string().ends_with("(in the script's v1beta1 schema at spec.x: give it a type: a typed z schema, or z.any() to keep any value)"), "{}", problems[0]);

        // The decoder's type check names the version too.
        r.versions[1].schema = json!({"type": "object", "required": [false]});
        let Err(Error::RejectedCrd { problems, .. }) = crd_with(&r, &Map::new(), &service()) else {
            panic!("refused")
        };
        assert_eq!(
            (problems[0].field.as_str(), problems[0].version.as_deref()),
            ("spec.versions[1].schema.openAPIV3Schema", Some("v1beta1"))
        );
    }

    #[test]
    fn deprecation_warnings_the_server_refuses_are_refused() {
        let mut r = converting();
        r.versions[1].deprecated = Some(Deprecation { warning: Some("x".repeat(257)) });
        let err = crd_with(&r, &Map::new(), &service()).unwrap_err();
        let Error::BadDeprecationWarning { field, message, version, .. } = &err else { panic!("{err}") };
        assert_eq!((field.as_str(), version.as_str()), ("spec.versions[1].deprecationWarning", "v1beta1"));
        assert!(message.ends_with(": must be <= 256 characters long"), "{message}");
        r.versions[1].deprecated = Some(Deprecation { warning: Some("x".repeat(256)) });
        assert!(crd_with(&r, &Map::new(), &service()).is_ok(), "256 bytes fit");

        r.versions[2].deprecated = Some(Deprecation { warning: Some("use\tv1".into()) });
        let err = crd_with(&r, &Map::new(), &service()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the API server would refuse CRD webapps.apps.example.com: spec.versions[2].deprecationWarning: Invalid \
             value: \"use\\tv1\": must only contain printable UTF-8 characters; non-printable character found at \
             index 3 (change the deprecated: text of version v1alpha1 in the script)"
        );
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
