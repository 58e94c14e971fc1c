//! # ctop-manifests: deploy an operator with one pipe
//!
//! From an [`OperatorSpec`], the script's bundle and [`Options`]
//! to the documents that install the operator, so that
//! `ctop manifests ./my-operator | kubectl apply --server-side -f -` is the whole deploy:
//!
//! 1. the `Namespace` (`<name>-system` unless told otherwise);
//! 2. one `CustomResourceDefinition` per declared resource, with every version it declares
//!    ([`crd_with`]); a resource with several versions converts through the operator's
//!    webhook ([`ConversionEndpoint`]);
//! 3. the `ServiceAccount` and least-privilege RBAC ([`permissions`], see [`rbac`]), with
//!    what the storage migration needs when [`Options::migrate_storage`] asks for it;
//! 4. a `ConfigMap` carrying `bundle.js.gz` (binaryData) and `values.yaml` (data);
//! 5. a `Deployment` running `ctop run --bundle …` with the bundle's SHA-256 in a
//!    pod-template annotation ([`BUNDLE_HASH_ANNOTATION`]): a changed script rolls the
//!    pods, an unchanged one does not, and no image is rebuilt either way; its memory is
//!    sized from the runtime's pool and limits ([`memory()`]), which it passes to `ctop run`;
//! 6. for scripts with `validate`/`mutate` handlers or resources with several versions, the
//!    webhook Service, the Validating/MutatingWebhookConfigurations of the handlers, and the
//!    RBAC to patch the `caBundle` of those and of the converting CRDs (see `webhook.rs`: the
//!    operator issues its certificate and patches the CA in);
//! 7. whatever the [`Plugin`]s add or change ([`PodDisruptionBudget`], [`NetworkPolicy`]:
//!    ingress to the served ports, egress to DNS, the API server and the script's fetch
//!    destinations).
//!
//! For Argo CD, [`argocd::health_checks`] writes the `argocd-cm` patch with a health check of
//! every kind the operators reconcile (`ctop manifests --argocd-health`); for `ctop run
//! --operators`, the manager of every Δ-controller `Operator`, [`generate_operators`].
//!
//! Before writing over a previous generation, check with [`removed_versions`] that the
//! script still declares every version objects may be stored in (see `stored.rs`).
//!
//! Start with [`generate`]; [`Manifests::to_yaml`] prints the result. The same inputs
//! always give the same bytes: documents come in a fixed order, object keys sorted, RBAC
//! rules merged and sorted.

pub mod argocd;
mod crd;
mod kinds;
pub mod netpol;
mod operators;
mod options;
mod plugin;
pub mod rbac;
mod schema_check;
mod shadow;
pub mod sizing;
mod stored;
mod webhook;
mod workload;

use ctop_core::OperatorSpec;
use serde_json::{Map, Value, json};

pub use crd::{
    APPLYSET_PARENT_TYPE_LABEL, ConversionEndpoint, crd, crd_name, crd_with, operator_crds,
    operator_crds_with,
};
pub use netpol::NetworkPolicy;
pub use operators::{ManagerRules, READ_VERBS, WRITE_VERBS, generate_operators};
pub use options::{
    BUNDLE_FILE, BUNDLE_HASH_ANNOTATION, ContainerResources, DEFAULT_CONCURRENCY, DEFAULT_IMAGE,
    DEFAULT_MAX_OUTPUT, DEFAULT_SCRIPT_MEMORY, DEFAULT_WEBHOOK_CONCURRENCY, HEALTH_PORT, METRICS_PORT,
    MOUNT_DIR, Options, ScriptBundle, VALUES_FILE, VALUES_HASH_ANNOTATION, WEBHOOK_PORT, WatchScope,
    is_dns_label, name_from,
};
pub use plugin::{Context, Plugin, PluginError, PodDisruptionBudget, ServedPort};
pub use rbac::{Permissions, permissions, read_permissions};
pub use schema_check::SchemaProblem;
pub use shadow::{SHADOW_UI_PORT, generate_shadow};
pub use sizing::{BASE_MEMORY, CALL_SLACK, Memory, memory};
pub use stored::{RemovedVersion, removed_versions};

/// Bytes a ConfigMap's `data` and `binaryData` values may hold together (binaryData counted
/// decoded, keys not counted): the API server's `ValidateConfigMap`
/// (kubernetes/kubernetes `pkg/apis/core/validation/validation.go`) refuses more than
/// `core.MaxSecretSize`, 1 MiB, with the `field.TooLong` error "Too long: must have at most
/// 1048576 bytes" (`staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go`).
pub const CONFIG_MAP_LIMIT: usize = 1024 * 1024;
/// Above this much base64, client-side `kubectl apply` fails: it copies the whole object
/// into the 256 KiB `last-applied-configuration` annotation.
const CLIENT_SIDE_APPLY_LIMIT: usize = 200 * 1024;

/// Why manifests could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A name is not a DNS label (lowercase letters, digits, `-`) or too long; for the
    /// operator name, derived objects such as `<name>-system` must stay within 63.
    #[error(
        "{field} {value:?} must be a DNS label of at most {max} characters (lowercase letters, digits and -)"
    )]
    BadName {
        /// Which option.
        field: &'static str,
        /// The value given.
        value: String,
        /// Its longest allowed length.
        max: usize,
    },
    /// The image reference is empty or contains whitespace.
    #[error("image {image:?} is not an image reference like ghcr.io/org/operator:1.0")]
    BadImage {
        /// The value given.
        image: String,
    },
    /// Zero replicas would deploy an operator that never runs.
    #[error("replicas must be at least 1")]
    NoReplicas,
    /// Zero script runtimes would run no call.
    #[error("{flag} must be at least 1")]
    NoRuntimes {
        /// Which option.
        flag: &'static str,
    },
    /// The memory formula does not fit in 64 bits: the script memory or output limit is absurd.
    #[error(
        "the memory of {runtimes} script runtimes does not fit in 64 bits; lower the script memory, max output or concurrency"
    )]
    MemoryOverflow {
        /// Script runtimes counted.
        runtimes: u32,
    },
    /// A memory request and limit both given, the request the larger: the API server
    /// refuses such a container.
    #[error("the memory request {request} is above the memory limit {limit}")]
    RequestAboveLimit {
        /// `requests.memory`.
        request: ctop_core::ByteSize,
        /// `limits.memory`.
        limit: ctop_core::ByteSize,
    },
    /// The values file is not YAML; `ctop run` would fail on it at start.
    #[error("the values file is not valid YAML: {message}")]
    BadValues {
        /// The parser's message.
        message: String,
    },
    /// The bundle hash is not 64 lowercase hex digits (`Bundle::sha256_hex`).
    #[error("bundle sha256 {0:?} is not 64 lowercase hex digits")]
    BadBundleHash(String),
    /// The script declares no `operator(...)`, so there is nothing to run.
    #[error("the script declares no operator(...); add one before deploying it")]
    NoController,
    /// Two resources map to the same CRD name.
    #[error("two resources are both {0}; give one another plural or group")]
    DuplicateCrd(String),
    /// The API server (and kubesim, which checks CRDs with the same `ctop_schema` rules)
    /// would refuse the CRD of a resource: its schema, as the script's `z` schema
    /// compiles it, breaks a structural-schema, default or CEL rule. Each problem names the
    /// server's field and message and where to change the script.
    #[error("the API server would refuse CRD {crd}:{}", problems.iter().map(|p| format!("\n  {p}")).collect::<String>())]
    RejectedCrd {
        /// The CRD's name.
        crd: String,
        /// Why, in the server's words.
        problems: Vec<SchemaProblem>,
    },
    /// The bundle and values do not fit in one ConfigMap ([`CONFIG_MAP_LIMIT`]).
    #[error(
        "the bundle ({bundle} bytes gzipped) and values ({values} bytes) make {total} bytes of ConfigMap data, \
         more than the {limit} bytes (1 MiB) the API server accepts (it would answer \"Too long: must have at \
         most {limit} bytes\"); make the script smaller: replace or drop the biggest packages that `ctop bundle` \
         lists, or move large data out of the script (fetch it, or read it from a ConfigMap with .reads())",
        total = bundle + values,
        limit = CONFIG_MAP_LIMIT
    )]
    TooLarge {
        /// Size of `bundle.js.gz`.
        bundle: usize,
        /// Size of the values file.
        values: usize,
    },
    /// A plugin failed.
    #[error("plugin {name} failed")]
    Plugin {
        /// The plugin's name.
        name: String,
        /// What it reported.
        source: PluginError,
    },
    /// A resource has several versions, so its CRD converts through the operator's webhook,
    /// and no endpoint for that webhook was given ([`crd()`], [`operator_crds`]).
    #[error(
        "{crd} has several versions, which the API server converts by calling the operator's conversion \
         webhook, but no address of that webhook was given; install the CRDs `ctop manifests` writes, which \
         point at the operator's webhook Service"
    )]
    NoConversionEndpoint {
        /// The CRD's name.
        crd: String,
    },
    /// The API server would refuse CRD `crd`: the deprecation warning the script gives a
    /// version is too long or holds a character that is not printable.
    #[error(
        "the API server would refuse CRD {crd}: {field}: {message} (change the deprecated: text of version \
         {version} in the script)"
    )]
    BadDeprecationWarning {
        /// The CRD's name.
        crd: String,
        /// The version.
        version: String,
        /// The server's field, `spec.versions[i].deprecationWarning`.
        field: String,
        /// The server's message.
        message: String,
    },
    /// `ctop manifests --argocd-health` found no kind to write a health check for: the
    /// script defines none, or none that one of its operators reconciles ([`argocd`]).
    #[error("{}", no_health_checks(kinds))]
    NoHealthChecks {
        /// The kinds the script defines.
        kinds: Vec<String>,
    },
    /// A document could not be written as YAML (a bug: documents are plain JSON).
    #[error("cannot write YAML")]
    Yaml(#[from] ctop_core::yaml::SerializeError),
}

fn no_health_checks(kinds: &[String]) -> String {
    if kinds.is_empty() {
        return "the script defines no kind of its own (resource(...)), so there is no Argo CD health check to \
                write: Argo CD judges built-in kinds itself"
            .to_owned();
    }
    format!(
        "no Argo CD health check to write: ctop keeps conditions only on the kinds an operator(...) of the \
         script reconciles, and none reconciles {}",
        kinds.join(" or ")
    )
}

/// The generated documents, in the order they should be applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifests {
    /// One Kubernetes object each.
    pub documents: Vec<Value>,
    /// Things the user should know, such as guessed plurals or a bundle near a size limit.
    pub notes: Vec<String>,
}

impl Manifests {
    /// Multi-document YAML, ready for `kubectl apply -f -`. Strings that a YAML 1.1 reader
    /// (kubectl's, Go's yaml.v2) would take for something else, such as `on`, `no`, `y` or
    /// `0x1f`, are quoted, so that what kubectl reads is what ctop meant.
    pub fn to_yaml(&self) -> Result<String, Error> {
        let mut out = String::from(
            "# Generated by `ctop manifests`; apply with `kubectl apply --server-side -f <this file>`.\n",
        );
        for doc in &self.documents {
            out.push_str("---\n");
            out.push_str(&ctop_core::yaml::to_string(doc)?);
        }
        Ok(out)
    }
}

/// How documents are written: YAML 1.1-ambiguous strings quoted (the default; kubectl reads
/// YAML the 1.1 way), and long strings on one line rather than folded, so that the bundle's
/// base64 and long descriptions read as they are.
/// Labels every generated object carries.
fn common_labels(options: &Options) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("app.kubernetes.io/name".into(), json!(options.name));
    m.insert("app.kubernetes.io/managed-by".into(), json!("ctop"));
    m
}

/// Labels selecting the operator's pods (immutable once deployed: keep them stable).
fn selector_labels(options: &Options) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("app.kubernetes.io/name".into(), json!(options.name));
    m.insert("app.kubernetes.io/component".into(), json!("operator"));
    m
}

/// Whether a `bundle.js.gz` of `bundle` bytes and a values file of `values` bytes fit in the
/// operator's ConfigMap ([`CONFIG_MAP_LIMIT`]); [`generate`] checks it, and `ctop bundle`
/// with no values.
pub fn check_config_map_size(bundle: usize, values: usize) -> Result<(), Error> {
    if bundle + values > CONFIG_MAP_LIMIT {
        return Err(Error::TooLarge { bundle, values });
    }
    Ok(())
}

/// Generate the documents that deploy the operator `spec` describes, running `plugins` in
/// order over the built-in documents.
pub fn generate(
    spec: &OperatorSpec,
    bundle: &ScriptBundle,
    options: &Options,
    plugins: &[&dyn Plugin],
) -> Result<Manifests, Error> {
    options.check()?;
    if bundle.sha256.len() != 64
        || !bundle.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(Error::BadBundleHash(bundle.sha256.clone()));
    }
    if spec.controllers.is_empty() {
        return Err(Error::NoController);
    }
    check_config_map_size(bundle.gz.len(), options.values_yaml.len())?;
    let labels = common_labels(options);
    let selector = selector_labels(options);
    let mut notes = Vec::new();

    let mut docs = vec![workload::namespace(options, &labels)];
    let mut crd_names = std::collections::BTreeSet::new();
    let conversion = webhook::conversion_endpoint(options);
    for resource in &spec.resources {
        let doc = crd_with(resource, &labels, &conversion)?;
        let name = doc["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        if !crd_names.insert(name.clone()) {
            return Err(Error::DuplicateCrd(name));
        }
        docs.push(doc);
    }
    // Where each controller's health is published (`kubectl get controllerstatuses`): one
    // CRD shared by every operator, unlabelled since no single operator owns it.
    docs.push(ctop_core::controller_status::crd());
    docs.push(workload::service_account(options, &labels));
    let perms = permissions(spec, options);
    notes.extend(perms.notes.iter().cloned());
    docs.extend(rbac::documents(&perms, options, &labels));
    docs.push(workload::config_map(options, bundle, &labels));
    let memory = memory(spec, options)?;
    docs.push(workload::deployment(options, options.migrates(spec), bundle, &memory, &labels, &selector));
    if options.migrate_storage && !options.migrates(spec) {
        notes.push(
            "storage migration was asked for, but the script declares no resource with several versions: \
             nothing to migrate, so ctop run is not given --migrate-storage"
                .to_owned(),
        );
    }

    webhook::add(spec, options, &labels, &selector, &mut docs);
    if bundle.gz.len() * 4 / 3 > CLIENT_SIDE_APPLY_LIMIT {
        notes.push(format!(
            "the bundle is {} bytes: apply with `kubectl apply --server-side`, client-side apply cannot \
             store it in its last-applied annotation",
            bundle.gz.len()
        ));
    }

    let ctx = Context { spec, options, labels, selector };
    for plugin in plugins {
        plugin
            .apply(&ctx, &mut docs)
            .map_err(|source| Error::Plugin { name: plugin.name().to_owned(), source })?;
    }
    Ok(Manifests { documents: docs, notes })
}

#[cfg(test)]
mod tests;
