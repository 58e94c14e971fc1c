//! The apps group (pkg/apis/apps/validation/validation.go and the apps/v1 strategies):
//! Deployment, ReplicaSet, StatefulSet and DaemonSet specs, their selectors against their
//! templates, and what an update may not change (the selector; a StatefulSet's spec but
//! for replicas, ordinals, template, updateStrategy, revisionHistoryLimit,
//! persistentVolumeClaimRetentionPolicy and minReadySeconds).

use serde_json::Value;

use crate::core::pod::{template_restart_always, validate_pod_template};
use crate::enums;
use crate::field::{
    Bad, Cause, Path, forbid, go_int_or_string, go_label_selector, invalid, invalid_str, listed, req, set,
    string, unsupported,
};
use crate::meta::{
    immutable_selector, non_negative, selector_empty, selector_matches, selector_parses,
    template_labels_mismatch, validate_annotations, validate_label_selector, validate_labels,
};
use crate::names;

/// The selector checks every workload shares: required, valid, not empty, matching the
/// template's labels. `what` names the kind in "empty selector is invalid for ...".
fn selector_and_template(spec: &Value, p: &Path, what: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let template = spec.get("template").unwrap_or(&Value::Null);
    match set(spec, "selector") {
        None => out.push(req(&p.child("selector"), "")),
        Some(sel) => {
            out.extend(validate_label_selector(sel, &p.child("selector")));
            if selector_empty(sel) {
                out.push(invalid(
                    p.child("selector").as_str(),
                    Bad::Raw(go_label_selector(sel)),
                    &format!("empty selector is invalid for {what}"),
                ));
            }
            if selector_parses(sel)
                && !selector_empty(sel)
                && !selector_matches(sel, template.pointer("/metadata/labels"))
            {
                out.push(template_labels_mismatch(
                    template,
                    &p.child("template").child("metadata").child("labels"),
                ));
            }
        }
    }
    out
}

/// The apps/v1 strategies' `ValidateImmutableField` of `spec.selector` on update.
fn selector_unchanged(spec: &Value, old: Option<&Value>, p: &Path) -> Option<Cause> {
    immutable_selector(spec.get("selector"), old?.pointer("/spec/selector"), &p.child("selector"))
}

/// `ValidatePodTemplateSpecForReplicaSet` and the template rules of DaemonSets.
fn replica_template(spec: &Value, p: &Path, kind: &str) -> Vec<Cause> {
    let template = spec.get("template").unwrap_or(&Value::Null);
    let tp = p.child("template");
    let mut out = validate_pod_template(template, &tp);
    out.extend(template_restart_always(template, &tp));
    if set(template.get("spec").unwrap_or(&Value::Null), "activeDeadlineSeconds").is_some() {
        out.push(forbid(
            &tp.child("spec").child("activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    out
}

/// `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`.
pub(crate) fn int_or_percent(v: Option<&Value>, p: &Path, at_most_100: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    match v {
        Some(Value::String(s)) => {
            for m in names::percent(s) {
                out.push(invalid(p.as_str(), Bad::Raw(go_int_or_string(&Value::String(s.clone()))), &m));
            }
            if at_most_100 && percent_value(s).is_some_and(|n| n > 100) {
                out.push(invalid(
                    p.as_str(),
                    Bad::Raw(go_int_or_string(&Value::String(s.clone()))),
                    "must not be greater than 100%",
                ));
            }
        }
        Some(n) => {
            if let Some(i) = n.as_i64().filter(|i| *i < 0) {
                out.push(crate::field::invalid_int(p, i, "must be greater than or equal to 0"));
            }
        }
        None => {}
    }
    out
}

fn percent_value(s: &str) -> Option<i64> {
    if !names::percent(s).is_empty() {
        return None;
    }
    s.trim_end_matches('%').parse().ok()
}

/// `getIntOrPercentValue`.
fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) => percent_value(s).unwrap_or(0),
        Some(n) => n.as_i64().unwrap_or(0),
        None => 0,
    }
}

/// `ValidateDeploymentSpec` (create and update) and the selector immutability of apps/v1.
pub(crate) fn validate_deployment(d: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = d.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut out: Vec<Cause> = non_negative(spec, "replicas", &p).into_iter().collect();
    out.extend(selector_and_template(spec, &p, "deployment"));
    out.extend(replica_template(spec, &p, "ReplicaSet"));
    let strategy = spec.get("strategy").unwrap_or(&Value::Null);
    let sp = p.child("strategy");
    match string(strategy, "type") {
        "Recreate" => {
            if set(strategy, "rollingUpdate").is_some() {
                out.push(forbid(
                    &sp.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        // SetDefaults_Deployment fills a missing rollingUpdate (25%/25%); kubesim only
        // defaults a missing strategy, so an absent one counts as that default.
        "RollingUpdate" => {
            let ru = strategy.get("rollingUpdate").unwrap_or(&Value::Null);
            {
                let rp = sp.child("rollingUpdate");
                // The server defaults both to 25% when absent.
                let unavailable =
                    ru.get("maxUnavailable").cloned().unwrap_or_else(|| Value::String("25%".into()));
                let surge = ru.get("maxSurge").cloned().unwrap_or_else(|| Value::String("25%".into()));
                out.extend(int_or_percent(Some(&unavailable), &rp.child("maxUnavailable"), false));
                out.extend(int_or_percent(Some(&surge), &rp.child("maxSurge"), false));
                if int_or_percent_value(Some(&unavailable)) == 0 && int_or_percent_value(Some(&surge)) == 0 {
                    out.push(invalid(
                        rp.child("maxUnavailable").as_str(),
                        Bad::Raw(go_int_or_string(&unavailable)),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                out.extend(
                    int_or_percent(Some(&unavailable), &rp.child("maxUnavailable"), true)
                        .into_iter()
                        .filter(|c| c.message.ends_with("100%")),
                );
            }
        }
        other => out.push(crate::field::not_supported(
            sp.as_str(),
            Bad::Raw(format!(
                "apps.DeploymentStrategy{{Type:{}, RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}}",
                ctop_schema::go::quote(other)
            )),
            &listed(&["Recreate", "RollingUpdate"]),
        )),
    }
    out.extend(non_negative(spec, "minReadySeconds", &p));
    out.extend(non_negative(spec, "revisionHistoryLimit", &p));
    if let Some(pds) = crate::field::int(spec, "progressDeadlineSeconds") {
        out.extend(non_negative(spec, "progressDeadlineSeconds", &p));
        if pds <= crate::field::int(spec, "minReadySeconds").unwrap_or(0) {
            out.push(crate::field::invalid_int(
                &p.child("progressDeadlineSeconds"),
                pds,
                "must be greater than minReadySeconds",
            ));
        }
    }
    out.extend(selector_unchanged(spec, old, &p));
    out
}

/// `ValidateReplicaSetSpec` and the selector immutability of apps/v1.
pub(crate) fn validate_replica_set(rs: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = rs.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut out: Vec<Cause> = non_negative(spec, "replicas", &p).into_iter().collect();
    out.extend(non_negative(spec, "minReadySeconds", &p));
    out.extend(selector_and_template(spec, &p, "deployment"));
    out.extend(replica_template(spec, &p, "ReplicaSet"));
    out.extend(selector_unchanged(spec, old, &p));
    out
}

/// `ValidateDaemonSetSpec` and the selector immutability of apps/v1.
pub(crate) fn validate_daemon_set(ds: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = ds.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut out = Vec::new();
    match set(spec, "selector") {
        // A nil selector selects nothing, so it cannot match the template's labels.
        None => out.push(template_labels_mismatch(
            spec.get("template").unwrap_or(&Value::Null),
            &p.child("template").child("metadata").child("labels"),
        )),
        Some(_) => out.extend(selector_and_template(spec, &p, "daemonset")),
    }
    out.extend(replica_template(spec, &p, "DaemonSet"));
    out.extend(non_negative(spec, "minReadySeconds", &p));
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    let sp = p.child("updateStrategy");
    match string(strategy, "type") {
        "OnDelete" => {}
        // SetDefaults_DaemonSet fills a missing rollingUpdate (maxUnavailable 1, maxSurge
        // 0); kubesim only defaults a missing strategy.
        "RollingUpdate" => match set(strategy, "rollingUpdate") {
            None => {}
            Some(ru) => {
                let rp = sp.child("rollingUpdate");
                out.extend(int_or_percent(ru.get("maxUnavailable"), &rp.child("maxUnavailable"), true));
                out.extend(int_or_percent(ru.get("maxSurge"), &rp.child("maxSurge"), true));
                let (unavailable, surge) = (
                    int_or_percent_value(ru.get("maxUnavailable")),
                    int_or_percent_value(ru.get("maxSurge")),
                );
                if unavailable != 0 && surge != 0 {
                    out.push(invalid(
                        rp.child("maxSurge").as_str(),
                        Bad::Raw(go_int_or_string(ru.get("maxSurge").unwrap_or(&Value::Null))),
                        "may not be set when maxUnavailable is non-zero",
                    ));
                } else if unavailable == 0 && surge == 0 {
                    out.push(req(&rp.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"));
                }
            }
        },
        other => out.push(unsupported(&sp, other, &listed(&["RollingUpdate", "OnDelete"]))),
    }
    out.extend(non_negative(spec, "revisionHistoryLimit", &p));
    out.extend(selector_unchanged(spec, old, &p));
    out
}

/// `ValidateStatefulSetSpec` (create and update) and `ValidateStatefulSetUpdate`.
pub(crate) fn validate_stateful_set(sts: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = sts.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut out = Vec::new();
    match string(spec, "podManagementPolicy") {
        "" => out.push(req(&p.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => out.push(invalid_str(
            &p.child("podManagementPolicy"),
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = spec.get("updateStrategy").unwrap_or(&Value::Null);
    let sp = p.child("updateStrategy");
    match string(strategy, "type") {
        "" => out.push(req(&sp, "")),
        "OnDelete" => {
            if set(strategy, "rollingUpdate").is_some() {
                let ru = strategy.get("rollingUpdate").unwrap_or(&Value::Null);
                let partition = crate::field::int(ru, "partition").unwrap_or(0);
                out.push(invalid(
                    sp.child("rollingUpdate").as_str(),
                    Bad::Raw(format!(
                        "apps.RollingUpdateStatefulSetStrategy{{Partition:{partition}, MaxUnavailable:(*intstr.IntOrString)(nil)}}"
                    )),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = set(strategy, "rollingUpdate") {
                out.extend(non_negative(ru, "partition", &sp.child("rollingUpdate")));
            }
        }
        other => out.push(invalid(
            sp.as_str(),
            Bad::Raw(format!(
                "apps.StatefulSetUpdateStrategy{{Type:{}, RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}}",
                ctop_schema::go::quote(other)
            )),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(policy) = set(spec, "persistentVolumeClaimRetentionPolicy") {
        let pp = p.child("persistentVolumeClaimRetentionPolicy");
        for key in ["whenDeleted", "whenScaled"] {
            let v = string(policy, key);
            if !enums::PVC_RETENTION_POLICY_TYPE.contains(&v) {
                out.push(unsupported(&pp.child(key), v, &listed(enums::PVC_RETENTION_POLICY_TYPE)));
            }
        }
    }
    out.extend(non_negative(spec, "replicas", &p));
    out.extend(non_negative(spec, "minReadySeconds", &p));
    if let Some(start) = spec.pointer("/ordinals/start").and_then(Value::as_i64).filter(|s| *s < 0) {
        out.push(crate::field::invalid_int(
            &p.child("ordinals.start"),
            start,
            "must be greater than or equal to 0",
        ));
    }
    match set(spec, "selector") {
        None => out.push(req(&p.child("selector"), "")),
        Some(sel) => {
            out.extend(validate_label_selector(sel, &p.child("selector")));
            if selector_empty(sel) {
                out.push(invalid(
                    p.child("selector").as_str(),
                    Bad::Raw(go_label_selector(sel)),
                    "empty selector is invalid for statefulset",
                ));
            }
        }
    }
    let template = spec.get("template").unwrap_or(&Value::Null);
    let tp = p.child("template");
    let sel = spec.get("selector").unwrap_or(&Value::Null);
    if selector_parses(sel) {
        if !selector_empty(sel) && !selector_matches(sel, template.pointer("/metadata/labels")) {
            out.push(template_labels_mismatch(template, &tp.child("metadata").child("labels")));
        }
        let meta = template.get("metadata").unwrap_or(&Value::Null);
        out.extend(validate_labels(meta, "labels", &tp.child("labels")));
        out.extend(validate_annotations(meta, "annotations", &tp.child("annotations")));
    }
    out.extend(template_restart_always(template, &tp));
    if set(template.get("spec").unwrap_or(&Value::Null), "activeDeadlineSeconds").is_some() {
        out.push(forbid(
            &tp.child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    if let Some(old) = old {
        let strip = |s: &Value| {
            let mut s = s.get("spec").cloned().unwrap_or(Value::Null);
            if let Some(m) = s.as_object_mut() {
                for key in [
                    "replicas",
                    "ordinals",
                    "template",
                    "updateStrategy",
                    "revisionHistoryLimit",
                    "persistentVolumeClaimRetentionPolicy",
                    "minReadySeconds",
                ] {
                    m.remove(key);
                }
            }
            s
        };
        if strip(sts) != strip(old) {
            out.push(forbid(&p, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"));
        }
    }
    out
}

/// The status counters of each apps kind (`ValidateDeploymentStatus`,
/// `ValidateReplicaSetStatus`, `ValidateStatefulSetStatus`, `validateDaemonSetStatus`):
/// the fields that may not be negative, then the `(field, bound)` pairs where the field may
/// not exceed the bound (`cannot be greater than status.<bound>`), in the server's order.
struct StatusRules {
    non_negative: &'static [&'static str],
    at_most: &'static [(&'static str, &'static str, &'static str)],
}

const REPLICAS_BOUND: &str = "cannot be greater than status.replicas";

fn status_rules(kind: &str) -> Option<StatusRules> {
    Some(match kind {
        "Deployment" => StatusRules {
            non_negative: &[
                "observedGeneration",
                "replicas",
                "updatedReplicas",
                "readyReplicas",
                "availableReplicas",
                "unavailableReplicas",
                "collisionCount",
            ],
            at_most: &[
                ("updatedReplicas", "replicas", REPLICAS_BOUND),
                ("readyReplicas", "replicas", REPLICAS_BOUND),
                ("availableReplicas", "replicas", REPLICAS_BOUND),
                ("availableReplicas", "readyReplicas", "cannot be greater than readyReplicas"),
            ],
        },
        "ReplicaSet" => StatusRules {
            non_negative: &[
                "replicas",
                "fullyLabeledReplicas",
                "readyReplicas",
                "availableReplicas",
                "observedGeneration",
            ],
            at_most: &[
                ("fullyLabeledReplicas", "replicas", REPLICAS_BOUND),
                ("readyReplicas", "replicas", REPLICAS_BOUND),
                ("availableReplicas", "replicas", REPLICAS_BOUND),
                ("availableReplicas", "readyReplicas", "cannot be greater than readyReplicas"),
            ],
        },
        "StatefulSet" => StatusRules {
            non_negative: &[
                "replicas",
                "readyReplicas",
                "currentReplicas",
                "updatedReplicas",
                "availableReplicas",
                "observedGeneration",
                "collisionCount",
            ],
            at_most: &[
                ("readyReplicas", "replicas", REPLICAS_BOUND),
                ("currentReplicas", "replicas", REPLICAS_BOUND),
                ("updatedReplicas", "replicas", REPLICAS_BOUND),
                ("availableReplicas", "replicas", REPLICAS_BOUND),
                ("availableReplicas", "readyReplicas", "cannot be greater than status.readyReplicas"),
            ],
        },
        "DaemonSet" => StatusRules {
            non_negative: &[
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
                "observedGeneration",
                "updatedNumberScheduled",
                "numberAvailable",
                "numberUnavailable",
                "collisionCount",
            ],
            at_most: &[],
        },
        _ => return None,
    })
}

/// `Validate<Kind>StatusUpdate` of the apps kinds: the counters, then
/// `IsDecremented(collisionCount)` (`cannot be decremented`; an unset count after a set
/// one shows as 0). Metadata is kubesim's. `None` for a kind without status rules.
pub(crate) fn validate_status(kind: &str, new: &Value, old: &Value) -> Option<Vec<Cause>> {
    let rules = status_rules(kind)?;
    let status = new.get("status").unwrap_or(&Value::Null);
    let p = Path::new("status");
    let mut out: Vec<Cause> = rules.non_negative.iter().filter_map(|k| non_negative(status, k, &p)).collect();
    let count = |k: &str| crate::field::int(status, k).unwrap_or(0);
    for (field, bound, msg) in rules.at_most {
        if count(field) > count(bound) {
            out.push(crate::field::invalid_int(&p.child(field), count(field), msg));
        }
    }
    let old_count = old.pointer("/status/collisionCount").and_then(Value::as_i64);
    let new_count = crate::field::int(status, "collisionCount");
    let decremented = match (new_count, old_count) {
        (None, Some(_)) => true,
        (Some(n), Some(o)) => n < o,
        _ => false,
    };
    if decremented {
        out.push(crate::field::invalid_int(
            &p.child("collisionCount"),
            new_count.unwrap_or(0),
            "cannot be decremented",
        ));
    }
    Some(out)
}
