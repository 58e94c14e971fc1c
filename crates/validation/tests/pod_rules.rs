//! The PodSpec and Service rules an operator meets most (core/validation/validation.go):
//! security contexts, affinity, topology spread, Service IPs. Normal values give no causes.

mod common;

use common::*;
use ctop_validation::{validate, validate_update};
use serde_json::{Value, json};

fn pod(spec: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": spec})
}

#[test]
fn restricted_pod_with_affinity_and_spread_is_valid() {
    let mut spec = pod_spec();
    spec["securityContext"] = json!({"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000, "seccompProfile": {"type": "RuntimeDefault"}});
    spec["containers"][0]["securityContext"] = json!({
        "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
        "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
        "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/web.json"},
    });
    spec["affinity"] = json!({
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                                  {"key": "gpu-count", "operator": "Gt", "values": ["1"]}]}]},
                         "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}}]},
    });
    spec["topologySpreadConstraints"] = json!([
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "minDomains": 2, "labelSelector": {"matchLabels": {"app": "web"}}},
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway"},
    ]);
    assert_eq!(errors(&validate(&POD, &pod(spec))), Vec::<String>::new());
}

/// ValidateSecurityContext: allowPrivilegeEscalation false conflicts with privileged and
/// CAP_SYS_ADMIN (the server prints the whole struct; see security.rs); validateSeccompProfileField.
/// ValidatePodSpec checks the containers before the pod's security context.
#[test]
fn security_context_conflicts_and_seccomp() {
    let mut spec = pod_spec();
    spec["securityContext"]["seccompProfile"] = json!({"type": "Custom"});
    spec["containers"][0]["securityContext"] = json!({
        "allowPrivilegeEscalation": false, "privileged": true, "runAsUser": -1,
        "capabilities": {"add": ["CAP_SYS_ADMIN"]},
        "seccompProfile": {"type": "Localhost"},
    });
    assert_eq!(
        errors(&validate(&POD, &pod(spec))),
        vec![
            "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 4294967295, inclusive",
            "spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
            "spec.containers[0].securityContext: Invalid value: core.SecurityContext{Privileged:true, AllowPrivilegeEscalation:false, Capabilities:[]string{\"CAP_SYS_ADMIN\"}}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            "spec.containers[0].securityContext: Invalid value: core.SecurityContext{Privileged:true, AllowPrivilegeEscalation:false, Capabilities:[]string{\"CAP_SYS_ADMIN\"}}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            "spec.securityContext.seccompProfile.type: Unsupported value: \"Custom\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
        ]
    );
}

/// ValidateNodeSelectorRequirement, the preferred weight, and validatePodAffinityTerm.
#[test]
fn affinity_requirements() {
    let mut spec = pod_spec();
    spec["affinity"] = json!({
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In"},
                                  {"key": "zone", "operator": "Exists", "values": ["a"]},
                                  {"key": "cpus", "operator": "Gt", "values": ["1", "2"]},
                                  {"key": "zone", "operator": "Equals", "values": ["a"]}]}]},
                         "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]},
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn"}]}, "topologyKey": ""}]},
    });
    let p = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions";
    let a = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
    assert_eq!(
        errors(&validate(&POD, &pod(spec))),
        vec![
            format!("{p}[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
            format!("{p}[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
            format!("{p}[2].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"),
            format!("{p}[3].operator: Invalid value: \"Equals\": not a valid selector operator"),
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100".to_owned(),
            format!("{a}.labelSelector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
            format!("{a}.topologyKey: Required value: can not be empty"),
            format!("{a}.topologyKey: Invalid value: \"\": name part must be non-empty"),
            format!("{a}.topologyKey: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ]
    );
}

/// validateTopologySpreadConstraints: maxSkew, topologyKey, whenUnsatisfiable, repeats, minDomains.
#[test]
fn topology_spread_rules() {
    let mut spec = pod_spec();
    spec["topologySpreadConstraints"] = json!([
        {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": "Never"},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "nodeTaintsPolicy": "Respect"},
    ]);
    let p = "spec.topologySpreadConstraints";
    assert_eq!(
        errors(&validate(&POD, &pod(spec))),
        vec![
            format!("{p}[0].maxSkew: Invalid value: 0: must be greater than zero"),
            format!("{p}[0].topologyKey: Required value: can not be empty"),
            format!(
                "{p}[0].whenUnsatisfiable: Unsupported value: \"Never\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
            ),
            format!(
                "{p}[1].{{topologyKey, whenUnsatisfiable}}: Duplicate value: \"{{zone, ScheduleAnyway}}\""
            ),
            format!(
                "{p}[1].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"
            ),
            format!(
                "{p}[2].nodeTaintsPolicy: Unsupported value: \"Respect\": supported values: \"Honor\", \"Ignore\""
            ),
        ]
    );
}

/// ValidateServiceClusterIPsRelatedFields (each clusterIP an IP) and ValidateService's
/// externalIPs (IsValidIP, then ValidateNonSpecialIP for new ones).
#[test]
fn service_ip_syntax() {
    let mut svc = service();
    svc["spec"]["clusterIP"] = json!("10.96.0.300");
    svc["spec"]["externalIPs"] = json!(["203.0.113.7", "localhost", "127.0.0.1", "0.0.0.0", "169.254.1.1"]);
    assert_eq!(
        errors(&validate(&SERVICE, &svc)),
        vec![
            "spec.clusterIPs[0]: Invalid value: \"10.96.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "spec.externalIPs[1]: Invalid value: \"localhost\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "spec.externalIPs[2]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "spec.externalIPs[3]: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
            "spec.externalIPs[4]: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ]
    );
    let mut ok = service();
    ok["spec"]["clusterIP"] = json!("None");
    ok["spec"]["externalIPs"] = json!(["2001:db8::10"]);
    assert_eq!(errors(&validate(&SERVICE, &ok)), Vec::<String>::new());
    // A special external IP the stored Service already had is kept.
    let mut old = service();
    old["spec"]["clusterIP"] = json!("10.96.0.10");
    old["spec"]["externalIPs"] = json!(["127.0.0.1"]);
    assert_eq!(errors(&validate_update(&SERVICE, &old, &old)), Vec::<String>::new());
}
