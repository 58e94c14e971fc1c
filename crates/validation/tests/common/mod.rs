//! What the tests share: the kinds, a stored (kubesim-defaulted) Deployment and Service,
//! and a helper that renders causes as `field: message`.

#![allow(dead_code)]

use ctop_validation::{Cause, KindKey};
use serde_json::{Value, json};

pub const DEPLOYMENT: KindKey<'static> = KindKey { group: "apps", kind: "Deployment" };
pub const POD: KindKey<'static> = KindKey { group: "", kind: "Pod" };
pub const SERVICE: KindKey<'static> = KindKey { group: "", kind: "Service" };
pub const CONFIG_MAP: KindKey<'static> = KindKey { group: "", kind: "ConfigMap" };
pub const SECRET: KindKey<'static> = KindKey { group: "", kind: "Secret" };
pub const JOB: KindKey<'static> = KindKey { group: "batch", kind: "Job" };
pub const CRON_JOB: KindKey<'static> = KindKey { group: "batch", kind: "CronJob" };
pub const STATEFUL_SET: KindKey<'static> = KindKey { group: "apps", kind: "StatefulSet" };
pub const PVC: KindKey<'static> = KindKey { group: "", kind: "PersistentVolumeClaim" };
pub const ROLE_BINDING: KindKey<'static> =
    KindKey { group: "rbac.authorization.k8s.io", kind: "RoleBinding" };
pub const ROLE: KindKey<'static> = KindKey { group: "rbac.authorization.k8s.io", kind: "Role" };

/// Each cause as the Status message lists it.
pub fn errors(causes: &[Cause]) -> Vec<String> {
    causes.iter().map(Cause::error_string).collect()
}

/// A PodSpec as kubesim stores it after `pod_spec_defaults`.
pub fn pod_spec() -> Value {
    json!({
        "containers": [{
            "name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
            "env": [{"name": "MODE", "value": "prod"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}],
            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
        }],
        "volumes": [{"name": "config", "configMap": {"name": "web"}}],
        "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30,
        "schedulerName": "default-scheduler", "securityContext": {},
    })
}

/// A Deployment as kubesim stores it.
pub fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()},
        },
    })
}

/// A Service as kubesim stores it before allocating its IP.
pub fn service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "type": "ClusterIP", "sessionAffinity": "None", "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    })
}
pub const INGRESS: KindKey<'static> = KindKey { group: "networking.k8s.io", kind: "Ingress" };
pub const NETWORK_POLICY: KindKey<'static> = KindKey { group: "networking.k8s.io", kind: "NetworkPolicy" };
pub const PDB: KindKey<'static> = KindKey { group: "policy", kind: "PodDisruptionBudget" };
pub const HPA: KindKey<'static> = KindKey { group: "autoscaling", kind: "HorizontalPodAutoscaler" };
