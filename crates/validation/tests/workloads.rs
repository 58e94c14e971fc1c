//! Deployments, StatefulSets, Jobs and CronJobs (pkg/apis/apps/validation,
//! pkg/apis/batch/validation) and RBAC (pkg/apis/rbac/validation).

mod common;

use common::*;
use ctop_validation::{validate, validate_update};
use serde_json::json;

/// ValidatePodTemplateSpecForReplicaSet: `` `selector` does not match template `labels` ``.
#[test]
fn selector_must_match_template_labels() {
    let mut d = deployment();
    d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other", "tier": "web"});
    assert_eq!(
        errors(&validate(&DEPLOYMENT, &d)),
        vec![
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\", \"tier\":\"web\"}: `selector` does not match template `labels`"
        ]
    );
}

/// The apps/v1 Deployment strategy's ValidateUpdate: the selector is immutable.
#[test]
fn deployment_selector_is_immutable() {
    let old = deployment();
    let mut new = deployment();
    new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "v": "2"}});
    new["spec"]["template"]["metadata"]["labels"] = json!({"app": "web", "v": "2"});
    assert_eq!(
        errors(&validate_update(&DEPLOYMENT, &new, &old)),
        vec![
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"v\":\"2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
        ]
    );
}

/// ValidateDeploymentSpec: selector required, replicas non-negative.
#[test]
fn deployment_required_selector_and_replicas() {
    let mut d = deployment();
    d["spec"].as_object_mut().map(|s| s.remove("selector"));
    d["spec"]["replicas"] = json!(-1);
    assert_eq!(
        errors(&validate(&DEPLOYMENT, &d)),
        vec![
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.selector: Required value"
        ]
    );
}

/// ValidateStatefulSetUpdate: the forbidden-update message.
#[test]
fn stateful_set_forbidden_update() {
    let sts = json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 1, "podManagementPolicy": "OrderedReady", "serviceName": "db",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": pod_spec()},
        },
    });
    assert!(validate(&STATEFUL_SET, &sts).is_empty());
    let mut new = sts.clone();
    new["spec"]["replicas"] = json!(3);
    assert!(validate_update(&STATEFUL_SET, &new, &sts).is_empty());
    new["spec"]["serviceName"] = json!("other");
    assert_eq!(
        errors(&validate_update(&STATEFUL_SET, &new, &sts)),
        vec![
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        ]
    );
}

fn job() -> serde_json::Value {
    let mut spec = pod_spec();
    spec.as_object_mut().map(|s| s.remove("restartPolicy"));
    spec["restartPolicy"] = json!("Never");
    json!({
        "metadata": {"name": "once"},
        "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                 "template": {"spec": spec}},
    })
}

/// validateJobSpec: a valid Job passes before kubesim generates its selector; a missing
/// restartPolicy (the server defaults Always) is `Required: valid values: "OnFailure", "Never"`.
#[test]
fn job_restart_policy() {
    assert_eq!(errors(&validate(&JOB, &job())), Vec::<String>::new());
    let mut j = job();
    j["spec"]["template"]["spec"].as_object_mut().map(|s| s.remove("restartPolicy"));
    assert_eq!(
        errors(&validate(&JOB, &j)),
        vec!["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
    );
}

/// validateScheduleFormat (robfig/cron ParseStandard) and validateTimeZone.
#[test]
fn cron_job_schedule_and_zone() {
    let mut spec = pod_spec();
    spec["restartPolicy"] = json!("OnFailure");
    let cj = json!({
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "concurrencyPolicy": "Allow", "timeZone": "Europe/Warsaw",
                 "jobTemplate": {"spec": {"template": {"spec": spec}}}},
    });
    assert_eq!(errors(&validate(&CRON_JOB, &cj)), Vec::<String>::new());
    let mut bad = cj.clone();
    bad["spec"]["schedule"] = json!("0 3 * *");
    bad["spec"]["timeZone"] = json!("Mars/Olympus");
    assert_eq!(
        errors(&validate(&CRON_JOB, &bad)),
        vec![
            "spec.schedule: Invalid value: \"0 3 * *\": expected exactly 5 fields, found 4: [0 3 * *]",
            "spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus",
        ]
    );
    bad["spec"]["schedule"] = json!("61 * * * *");
    bad["spec"]["timeZone"] = json!("UTC");
    assert_eq!(
        errors(&validate(&CRON_JOB, &bad)),
        vec!["spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"]
    );
}

/// ValidateRoleBindingUpdate: `cannot change roleRef`; validatePolicyRule.
#[test]
fn rbac_rules() {
    let rb = json!({
        "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "op"}, {"kind": "User", "name": "alice"}],
    });
    assert!(validate(&ROLE_BINDING, &rb).is_empty());
    let mut new = rb.clone();
    new["roleRef"]["name"] = json!("writer");
    assert_eq!(
        errors(&validate_update(&ROLE_BINDING, &new, &rb)),
        vec![
            "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"writer\"}: cannot change roleRef"
        ]
    );
    let role = json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]});
    assert_eq!(
        errors(&validate(&ROLE, &role)),
        vec!["rules[0].verbs: Required value: verbs must contain at least one value"]
    );
}

/// SetDefaults_Deployment / SetDefaults_DaemonSet fill a missing rollingUpdate before
/// validation, so `strategy: {type: RollingUpdate}` alone is valid.
#[test]
fn rolling_update_without_parameters_is_valid() {
    let mut d = deployment();
    d["spec"]["strategy"] = json!({"type": "RollingUpdate"});
    assert_eq!(errors(&validate(&DEPLOYMENT, &d)), Vec::<String>::new());
    let ds = json!({
        "metadata": {"name": "agent"},
        "spec": {"updateStrategy": {"type": "RollingUpdate"}, "revisionHistoryLimit": 10,
                 "selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod_spec()}},
    });
    let kind = ctop_validation::KindKey::new("apps", "DaemonSet");
    assert_eq!(errors(&validate(&kind, &ds)), Vec::<String>::new());
}
