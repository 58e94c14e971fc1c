//! The objects that run the operator: its Namespace, ServiceAccount, the ConfigMap that
//! carries the script and values, and the Deployment running `ctop run`.

use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::options::{
    BUNDLE_FILE, BUNDLE_HASH_ANNOTATION, DEFAULT_CONCURRENCY, DEFAULT_MAX_OUTPUT, DEFAULT_SCRIPT_MEMORY,
    HEALTH_PORT, METRICS_PORT, MOUNT_DIR, Options, ScriptBundle, VALUES_FILE, VALUES_HASH_ANNOTATION,
    WatchScope,
};
use crate::sizing::Memory;

/// The Pod Security Standard the generated Deployment meets; enforced on the namespace the
/// manifests own.
const POD_SECURITY: &str = "restricted";
/// UID and GID the container runs as (distroless `nonroot`).
const RUN_AS: u32 = 65532;

pub(crate) fn namespace(options: &Options, labels: &Map<String, Value>) -> Value {
    let mut labels = labels.clone();
    if options.owns_namespace() {
        labels.insert("pod-security.kubernetes.io/enforce".into(), json!(POD_SECURITY));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": options.namespace(), "labels": labels},
    })
}

pub(crate) fn service_account(options: &Options, labels: &Map<String, Value>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": options.name, "namespace": options.namespace(), "labels": labels},
    })
}

/// Name of the ConfigMap carrying the bundle and values.
pub(crate) fn config_map_name(options: &Options) -> String {
    format!("{}-bundle", options.name)
}

pub(crate) fn config_map(options: &Options, bundle: &ScriptBundle, labels: &Map<String, Value>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config_map_name(options), "namespace": options.namespace(), "labels": labels},
        "binaryData": {BUNDLE_FILE: base64::engine::general_purpose::STANDARD.encode(&bundle.gz)},
        "data": {VALUES_FILE: options.values_yaml},
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The arguments of `ctop run` in the container (the image's entrypoint is `ctop`): the
/// pool and limits the memory was sized from, when not `ctop run`'s defaults, the
/// deployer's extra egress, and `--migrate-storage` when `migrate`.
pub(crate) fn run_args(options: &Options, migrate: bool) -> Vec<String> {
    let mut args = vec![
        "run".to_owned(),
        "--bundle".to_owned(),
        format!("{MOUNT_DIR}/{BUNDLE_FILE}"),
        "--values".to_owned(),
        format!("{MOUNT_DIR}/{VALUES_FILE}"),
        // Its own name for its field manager, Leases, events and ring.
        "--name".to_owned(),
        options.name.clone(),
    ];
    if let WatchScope::Namespace(ns) = &options.watch {
        args.extend(["--namespace".to_owned(), ns.clone()]);
    }
    if options.sharding {
        args.push("--sharding".to_owned());
    }
    if migrate {
        args.push("--migrate-storage".to_owned());
    }
    if options.concurrency != DEFAULT_CONCURRENCY {
        args.extend(["--concurrency".to_owned(), options.concurrency.to_string()]);
    }
    if options.script_memory != DEFAULT_SCRIPT_MEMORY {
        args.extend(["--script-memory".to_owned(), options.script_memory.to_string()]);
    }
    if options.max_output != DEFAULT_MAX_OUTPUT {
        args.extend(["--max-output".to_owned(), options.max_output.to_string()]);
    }
    for rule in &options.egress {
        args.extend(["--egress".to_owned(), rule.to_string()]);
    }
    args.extend(["--log-format".to_owned(), "json".to_owned()]);
    args
}

/// The Deployment running `ctop run` ([`run_args`]; `migrate`: with `--migrate-storage`).
pub(crate) fn deployment(
    options: &Options,
    migrate: bool,
    bundle: &ScriptBundle,
    memory: &Memory,
    labels: &Map<String, Value>,
    selector: &Map<String, Value>,
) -> Value {
    let r = &options.resources;
    let mut limits = json!({"memory": memory.limit.to_string()});
    if let Some(cpu) = &r.cpu_limit {
        limits["cpu"] = json!(cpu);
    }
    let field = |path: &str| json!({"valueFrom": {"fieldRef": {"fieldPath": path}}});
    let mut pod_name = field("metadata.name");
    pod_name["name"] = json!("POD_NAME");
    let mut pod_namespace = field("metadata.namespace");
    pod_namespace["name"] = json!("POD_NAMESPACE");
    let probe = |path: &str, delay: u32, period: u32| {
        json!({
            "httpGet": {"path": path, "port": "health"},
            "initialDelaySeconds": delay,
            "periodSeconds": period,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        })
    };
    let container = json!({
        "name": "operator",
        "image": options.image,
        "args": run_args(options, migrate),
        "env": [pod_name, pod_namespace],
        "ports": [
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            {"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": probe("/healthz", 15, 20),
        "readinessProbe": probe("/readyz", 5, 10),
        "resources": {
            "requests": {"cpu": r.cpu_request, "memory": memory.request.to_string()},
            "limits": limits,
        },
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": "bundle", "mountPath": MOUNT_DIR, "readOnly": true},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    });
    let mut pod_labels = labels.clone();
    pod_labels.extend(selector.clone());
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": options.name, "namespace": options.namespace(), "labels": labels},
        "spec": {
            "replicas": options.replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {
                        BUNDLE_HASH_ANNOTATION: bundle.sha256,
                        VALUES_HASH_ANNOTATION: sha256_hex(options.values_yaml.as_bytes()),
                        "kubectl.kubernetes.io/default-container": "operator",
                    },
                },
                "spec": {
                    "serviceAccountName": options.name,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": RUN_AS,
                        "runAsGroup": RUN_AS,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": [
                        {"name": "bundle", "configMap": {"name": config_map_name(options)}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
                    ],
                },
            },
        },
    })
}
