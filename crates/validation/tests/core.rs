//! Pods, Services, ConfigMaps, Secrets and PVCs: valid objects give no causes; each
//! error is worded as core/validation/validation.go words it (the function is named).

mod common;

use common::*;
use ctop_validation::{validate, validate_update};
use serde_json::json;

#[test]
fn normal_objects_are_valid() {
    assert_eq!(errors(&validate(&DEPLOYMENT, &deployment())), Vec::<String>::new());
    assert_eq!(errors(&validate(&SERVICE, &service())), Vec::<String>::new());
    let pod = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    assert_eq!(errors(&validate(&POD, &pod)), Vec::<String>::new());
    let cm = json!({"metadata": {"name": "c"}, "data": {"app.yaml": "a: 1", "KEY_1": "x"}});
    assert_eq!(errors(&validate(&CONFIG_MAP, &cm)), Vec::<String>::new());
}

/// validateContainerCommon: `field.Required(path.Child("name"), "")`.
#[test]
fn container_without_name_is_required() {
    let mut pod = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    pod["spec"]["containers"][0].as_object_mut().map(|c| c.remove("name"));
    assert_eq!(errors(&validate(&POD, &pod)), vec!["spec.containers[0].name: Required value"]);
}

/// validateContainerCommon (ValidateDNS1123Label) and validateContainerPorts (IsValidPortNum).
#[test]
fn bad_container_name_and_port() {
    let mut pod = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    pod["spec"]["containers"][0]["name"] = json!("Web");
    pod["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(70000);
    assert_eq!(
        errors(&validate(&POD, &pod)),
        vec![
            "spec.containers[0].name: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ]
    );
}

/// validateRestartPolicy / validateDNSPolicy: NotSupported in the order the switch lists.
#[test]
fn unsupported_restart_and_dns_policy() {
    let mut pod = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    pod["spec"]["restartPolicy"] = json!("Sometimes");
    pod["spec"]["dnsPolicy"] = json!("X");
    assert_eq!(
        errors(&validate(&POD, &pod)),
        vec![
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            "spec.dnsPolicy: Unsupported value: \"X\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
        ]
    );
}

/// ValidateVolumeMounts: `field.NotFound(idxPath.Child("name"), mnt.Name)`.
#[test]
fn mount_of_unknown_volume_is_not_found() {
    let mut pod = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    pod["spec"]["volumes"] = json!([]);
    assert_eq!(
        errors(&validate(&POD, &pod)),
        vec!["spec.containers[0].volumeMounts[0].name: Not found: \"config\""]
    );
}

/// validateResourceRequirements: request above limit, with Quantity.String() values.
#[test]
fn request_above_limit() {
    let mut pod = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    pod["spec"]["containers"][0]["resources"] =
        json!({"requests": {"memory": "1Gi"}, "limits": {"memory": "512Mi"}});
    assert_eq!(
        errors(&validate(&POD, &pod)),
        vec![
            "spec.containers[0].resources.requests: Invalid value: \"1Gi\": must be less than or equal to memory limit of 512Mi"
        ]
    );
}

/// validateProbe/validateHandler: `field.Required(fldPath, "must specify a handler type")`.
#[test]
fn probe_without_handler() {
    let mut pod = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    pod["spec"]["containers"][0]["livenessProbe"] = json!({"periodSeconds": 5});
    assert_eq!(
        errors(&validate(&POD, &pod)),
        vec!["spec.containers[0].livenessProbe: Required value: must specify a handler type"]
    );
}

/// ValidatePodUpdate: only images (and a few fields) may change.
#[test]
fn pod_update_may_change_image_only() {
    let old = json!({"metadata": {"name": "p"}, "spec": pod_spec()});
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    assert!(validate_update(&POD, &new, &old).is_empty());
    new["spec"]["dnsPolicy"] = json!("Default");
    let causes = validate_update(&POD, &new, &old);
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "spec");
    assert!(
        causes[0].message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
        )
    );
}

/// ValidateService: ports required; validateServicePort; NotSupported type (sorted set).
#[test]
fn service_errors() {
    let mut svc = service();
    svc["spec"]["ports"] = json!([]);
    assert_eq!(errors(&validate(&SERVICE, &svc)), vec!["spec.ports: Required value"]);
    let mut svc = service();
    svc["spec"]["type"] = json!("Cluster");
    svc["spec"]["ports"][0]["protocol"] = json!("HTTP");
    assert_eq!(
        errors(&validate(&SERVICE, &svc)),
        vec![
            "spec.ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.type: Unsupported value: \"Cluster\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
        ]
    );
    let mut svc = service();
    svc["spec"]["ports"][0]["nodePort"] = json!(30080);
    assert_eq!(
        errors(&validate(&SERVICE, &svc)),
        vec!["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]
    );
}

/// validateUpgradeDowngradeClusterIPs: a set clusterIP may not change; a dropped one is kept.
#[test]
fn service_cluster_ip_is_immutable() {
    let mut old = service();
    old["spec"]["clusterIP"] = json!("10.96.0.10");
    old["spec"]["clusterIPs"] = json!(["10.96.0.10"]);
    assert!(validate_update(&SERVICE, &service(), &old).is_empty());
    let mut new = old.clone();
    new["spec"]["clusterIP"] = json!("10.96.0.11");
    new["spec"]["clusterIPs"] = json!(["10.96.0.11"]);
    assert_eq!(
        errors(&validate_update(&SERVICE, &new, &old)),
        vec!["spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.11\"}: may not change once set"]
    );
}

/// ValidateConfigMap (IsConfigMapKey) and ValidateConfigMapUpdate (immutable).
#[test]
fn config_map_keys_and_immutability() {
    let cm = json!({"metadata": {"name": "c"}, "data": {"a/b": "x"}});
    assert_eq!(
        errors(&validate(&CONFIG_MAP, &cm)),
        vec![
            "data[a/b]: Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        ]
    );
    let old = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"a": "1"}});
    let new = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"a": "2"}});
    assert_eq!(
        errors(&validate_update(&CONFIG_MAP, &new, &old)),
        vec!["data: Forbidden: field is immutable when `immutable` is set"]
    );
}

/// ValidateSecret: kubernetes.io/tls needs tls.crt and tls.key; dockerconfigjson must be a JSON object.
#[test]
fn secret_type_keys() {
    let s = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
    assert_eq!(errors(&validate(&SECRET, &s)), vec!["data[tls.key]: Required value"]);
    let s = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "WzFd"}});
    assert_eq!(
        errors(&validate(&SECRET, &s)),
        vec![
            "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"
        ]
    );
    let old = json!({"metadata": {"name": "s"}, "type": "Opaque"});
    let new =
        json!({"metadata": {"name": "s"}, "type": "kubernetes.io/basic-auth", "data": {"username": "dQ=="}});
    assert_eq!(
        errors(&validate_update(&SECRET, &new, &old)),
        vec!["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
    );
}

/// ValidatePersistentVolumeClaimSpec: access modes and storage request required.
#[test]
fn pvc_spec_and_update() {
    let pvc = json!({"metadata": {"name": "d"}, "spec": {"volumeMode": "Filesystem"}});
    assert_eq!(
        errors(&validate(&PVC, &pvc)),
        vec![
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value"
        ]
    );
    let old = json!({"metadata": {"name": "d"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let mut new = old.clone();
    new["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    let causes = validate_update(&PVC, &new, &old);
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "spec");
}
