//! The API server's defaulting of built-in objects: the fields that matter for merge keys,
//! common reads and the simulated controllers (Service, container and PodSpec defaults,
//! the spec defaults of the workload kinds), applied on create, update and apply.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{Api, meta_mut};
use crate::kinds::registry::ResourceType;

impl Api {
    /// Kind-specific defaults and normalisation every write goes through.
    pub(super) fn normalize(rt: &ResourceType, obj: &mut Value) {
        match (rt.group.as_str(), rt.kind.as_str()) {
            ("", "Secret") => {
                if let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|m| m.remove("stringData")) {
                    let data = obj.as_object_mut().map(|m| m.entry("data").or_insert_with(|| json!({})));
                    if let Some(Value::Object(data)) = data {
                        for (k, v) in sd {
                            let s = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                            data.insert(k, json!(base64::engine::general_purpose::STANDARD.encode(s)));
                        }
                    }
                }
                if obj.get("type").is_none_or(Value::is_null) {
                    obj["type"] = json!("Opaque");
                }
            }
            ("", "Pod") if obj.pointer("/status/phase").is_none() => {
                obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
            }
            ("", "Namespace") => {
                if obj.pointer("/spec/finalizers").is_none() {
                    obj["spec"] = json!({"finalizers": ["kubernetes"]});
                }
                if obj.pointer("/status/phase").is_none() {
                    obj["status"] = json!({"phase": "Active"});
                }
            }
            ("", "Service") => {
                let spec = obj.as_object_mut().map(|m| m.entry("spec").or_insert_with(|| json!({})));
                if let Some(Value::Object(spec)) = spec {
                    spec.entry("type").or_insert_with(|| json!("ClusterIP"));
                    spec.entry("sessionAffinity").or_insert_with(|| json!("None"));
                    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
                        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                            p.entry("protocol").or_insert_with(|| json!("TCP"));
                            if let Some(port) = p.get("port").cloned() {
                                p.entry("targetPort").or_insert(port);
                            }
                        }
                    }
                }
            }
            ("apps", _) | ("batch", _) if obj.get("spec").is_some_and(Value::is_object) => {
                workload_defaults(&rt.kind, &mut obj["spec"]);
            }
            // `SetDefaults_PersistentVolumeClaimSpec` and `SetDefaults_HorizontalPodAutoscaler`.
            ("", "PersistentVolumeClaim") => {
                if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.entry("volumeMode").or_insert_with(|| json!("Filesystem"));
                }
            }
            ("apiextensions.k8s.io", "CustomResourceDefinition") => super::crd::default_crd(obj),
            ("autoscaling", "HorizontalPodAutoscaler") => {
                if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.entry("minReplicas").or_insert_with(|| json!(1));
                }
            }
            _ => {}
        }
        if let Some(anchor) = pod_spec_pointer(&rt.kind)
            && let Some(spec) = obj.pointer_mut(anchor)
        {
            pod_spec_defaults(spec, rt.kind == "Pod", matches!(rt.kind.as_str(), "Job" | "CronJob"));
        }
        if rt.group.is_empty()
            && rt.kind == "Namespace"
            && let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned)
        {
            let meta = meta_mut(obj);
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
    }

    /// Defaults on key fields must hold in an apply configuration too, or list-map keys
    /// would not match the stored items.
    pub(super) fn normalize_apply(rt: &ResourceType, config: &mut Value) {
        if rt.kind == "Service" && rt.group.is_empty() {
            for p in config.pointer_mut("/spec/ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = p.as_object_mut() {
                    p.entry("protocol").or_insert_with(|| json!("TCP"));
                }
            }
        }
        if let Some(anchor) = pod_spec_pointer(&rt.kind)
            && let Some(spec) = config.pointer_mut(anchor)
        {
            for list in ["containers", "initContainers"] {
                for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
                    for p in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                        if let Some(p) = p.as_object_mut() {
                            p.entry("protocol").or_insert_with(|| json!("TCP"));
                        }
                    }
                }
            }
        }
    }
}

/// The API server's defaults for the workload kinds' specs (`pkg/apis/apps/v1` and
/// `pkg/apis/batch/v1` defaulting), set where absent.
fn workload_defaults(kind: &str, spec: &mut Value) {
    let Some(spec) = spec.as_object_mut() else { return };
    let mut default = |key: &str, value: Value| {
        spec.entry(key).or_insert(value);
    };
    match kind {
        "Deployment" => {
            default("replicas", json!(1));
            default(
                "strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
            );
            default("revisionHistoryLimit", json!(10));
            default("progressDeadlineSeconds", json!(600));
        }
        "ReplicaSet" => default("replicas", json!(1)),
        "StatefulSet" => {
            default("replicas", json!(1));
            default("podManagementPolicy", json!("OrderedReady"));
            default("updateStrategy", json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}));
            default("revisionHistoryLimit", json!(10));
            default(
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
        }
        "DaemonSet" => {
            default(
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            default("revisionHistoryLimit", json!(10));
        }
        "Job" => {
            default("parallelism", json!(1));
            default("completions", json!(1));
            default("backoffLimit", json!(6));
            default("completionMode", json!("NonIndexed"));
            default("suspend", json!(false));
            default("podReplacementPolicy", json!("TerminatingOrFailed"));
        }
        "CronJob" => {
            default("concurrencyPolicy", json!("Allow"));
            default("suspend", json!(false));
            default("successfulJobsHistoryLimit", json!(3));
            default("failedJobsHistoryLimit", json!(1));
        }
        _ => {}
    }
}

/// The API server's defaults of a PodSpec (`SetDefaults_PodSpec`, the container defaults)
/// and, for a Pod itself, of the admission plugins every cluster runs (ServiceAccount,
/// Priority, DefaultTolerationSeconds). A Job's template keeps its `restartPolicy` as
/// written (the default, Always, is invalid there).
fn pod_spec_defaults(spec: &mut Value, pod: bool, job: bool) {
    let Some(spec) = spec.as_object_mut() else { return };
    for list in ["containers", "initContainers"] {
        for c in spec.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(c) = c.as_object_mut() else { continue };
            for p in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(p) = p.as_object_mut() {
                    p.entry("protocol").or_insert_with(|| json!("TCP"));
                }
            }
            let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
            // The tag after the last `/`; a digest pins the image.
            let tail = image.rsplit('/').next().unwrap_or_default();
            let latest = !image.contains('@') && tail.split_once(':').is_none_or(|(_, tag)| tag == "latest");
            let pull = if latest { "Always" } else { "IfNotPresent" };
            c.entry("imagePullPolicy").or_insert_with(|| json!(pull));
            c.entry("terminationMessagePath").or_insert_with(|| json!("/dev/termination-log"));
            c.entry("terminationMessagePolicy").or_insert_with(|| json!("File"));
            c.entry("resources").or_insert_with(|| json!({}));
        }
    }
    if !job {
        spec.entry("restartPolicy").or_insert_with(|| json!("Always"));
    }
    spec.entry("dnsPolicy").or_insert_with(|| json!("ClusterFirst"));
    spec.entry("terminationGracePeriodSeconds").or_insert_with(|| json!(30));
    spec.entry("schedulerName").or_insert_with(|| json!("default-scheduler"));
    spec.entry("securityContext").or_insert_with(|| json!({}));
    if pod {
        spec.entry("enableServiceLinks").or_insert_with(|| json!(true));
        // The Priority admission plugin: the API server's own classes (its bootstrap
        // PriorityClasses), else 0; other classes are not looked up.
        let priority = match spec.get("priorityClassName").and_then(Value::as_str) {
            Some("system-node-critical") => 2_000_001_000,
            Some("system-cluster-critical") => 2_000_000_000,
            _ => 0,
        };
        spec.entry("priority").or_insert_with(|| json!(priority));
        spec.entry("preemptionPolicy").or_insert_with(|| json!("PreemptLowerPriority"));
        let account = spec.get("serviceAccountName").cloned().unwrap_or_else(|| json!("default"));
        spec.entry("serviceAccountName").or_insert_with(|| account.clone());
        spec.entry("serviceAccount").or_insert(account);
        spec.entry("tolerations").or_insert_with(|| {
            json!([
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ])
        });
    }
}

/// Where a kind keeps its PodSpec, as a JSON pointer.
fn pod_spec_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec"),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => Some("/spec/template/spec"),
        "CronJob" => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}
