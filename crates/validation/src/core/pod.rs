//! The PodSpec and pod templates (`ValidatePodSpec`, `ValidatePodTemplateSpec`,
//! `validateContainers`, `validateInitContainers`, `ValidateTolerations`) and the Pod kind
//! (`ValidatePodCreate`, `ValidatePodUpdate`) of core/validation/validation.go. Start at
//! [`validate_pod_spec`]; the workload kinds call [`validate_pod_template`].

use std::collections::BTreeSet;

use serde_json::Value;

use crate::core::container::{self, validate_common, validate_handler, validate_probe};
use crate::core::volume::validate_volumes;
use crate::core::{scheduling, security};
use crate::enums;
use crate::field::{
    Bad, Cause, Path, duplicate, forbid, int, invalid, invalid_int, invalid_str, list, listed, req, set,
    string, unsupported,
};
use crate::meta::{label_name, validate_annotations, validate_labels};
use crate::names;

/// `ValidatePodSpec`. `is_pod`: the spec is a Pod's own (`ResourceIsPod`), not a template's.
pub(crate) fn validate_pod_spec(spec: &Value, p: &Path, is_pod: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let grace = int(spec, "terminationGracePeriodSeconds");
    if set(spec, "terminationGracePeriodSeconds").is_none() {
        out.push(req(&p.child("terminationGracePeriodSeconds"), ""));
    }
    let (vol_errs, volumes) = validate_volumes(spec, &p.child("volumes"));
    out.extend(vol_errs);
    out.extend(validate_containers(spec, &volumes, grace, &p.child("containers")));
    out.extend(validate_init_containers(spec, &volumes, grace, &p.child("initContainers")));
    out.extend(host_network_ports(spec, p, is_pod));
    match string(spec, "restartPolicy") {
        "Always" | "OnFailure" | "Never" => {}
        "" => out.push(req(&p.child("restartPolicy"), "")),
        other => out.push(unsupported(&p.child("restartPolicy"), other, &listed(enums::RESTART_POLICY))),
    }
    match string(spec, "dnsPolicy") {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => out.push(req(&p.child("dnsPolicy"), "")),
        other => out.push(unsupported(&p.child("dnsPolicy"), other, &listed(enums::DNS_POLICY))),
    }
    out.extend(validate_labels(spec, "nodeSelector", &p.child("nodeSelector")));
    if let Some(sc) = set(spec, "securityContext") {
        let sp = p.child("securityContext");
        out.extend(security::ids(sc, &["fsGroup", "runAsUser", "runAsGroup"], &sp));
        if let Some(profile) = set(sc, "seccompProfile") {
            out.extend(security::validate_seccomp_profile(profile, &sp.child("seccompProfile")));
        }
    }
    for key in ["serviceAccountName", "nodeName", "priorityClassName"] {
        let value = string(spec, key);
        if !value.is_empty() {
            out.extend(names::subdomain_name(value).iter().map(|m| invalid_str(&p.child(key), value, m)));
        }
    }
    if let Some(ads) = int(spec, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        out.push(invalid_int(
            &p.child("activeDeadlineSeconds"),
            ads,
            &names::range_error(1, i64::from(i32::MAX)),
        ));
    }
    for key in ["hostname", "subdomain"] {
        let value = string(spec, key);
        if !value.is_empty() {
            out.extend(names::dns1123_label(value).iter().map(|m| invalid_str(&p.child(key), value, m)));
        }
    }
    out.extend(validate_tolerations(list(spec, "tolerations"), &p.child("tolerations")));
    if let Some(affinity) = set(spec, "affinity") {
        out.extend(scheduling::validate_affinity(affinity, &p.child("affinity")));
    }
    out.extend(scheduling::validate_topology_spread(
        list(spec, "topologySpreadConstraints"),
        &p.child("topologySpreadConstraints"),
    ));
    if let Some(policy) = spec.get("preemptionPolicy").and_then(Value::as_str) {
        match policy {
            "PreemptLowerPriority" | "Never" => {}
            "" => out.push(req(&p.child("preemptionPolicy"), "")),
            other => {
                out.push(unsupported(&p.child("preemptionPolicy"), other, &listed(enums::PREEMPTION_POLICY)))
            }
        }
    }
    out
}

/// `validateContainers`.
fn validate_containers(spec: &Value, volumes: &BTreeSet<String>, grace: Option<i64>, p: &Path) -> Vec<Cause> {
    let containers = list(spec, "containers");
    if containers.is_empty() {
        return vec![req(p, "")];
    }
    let mut out = Vec::new();
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let cp = p.index(i);
        out.extend(validate_common(c, volumes, &cp));
        let name = string(c, "name");
        if !names.insert(name.to_owned()) {
            out.push(duplicate(cp.child("name").as_str(), Bad::Str(name.to_owned())));
        }
        out.extend(lifecycle_and_probes(c, grace, &cp));
        if set(c, "restartPolicy").is_some() {
            out.push(forbid(&cp.child("restartPolicy"), "may not be set for non-init containers"));
        }
    }
    out.extend(host_port_conflicts(containers, p));
    out
}

fn lifecycle_and_probes(c: &Value, grace: Option<i64>, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(lc) = set(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = set(lc, hook) {
                out.extend(validate_handler(h, true, grace, &p.child("lifecycle").child(hook)));
            }
        }
    }
    for kind in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = set(c, kind) {
            out.extend(validate_probe(probe, kind, grace, &p.child(kind)));
        }
    }
    out
}

/// `validateInitContainers`.
fn validate_init_containers(
    spec: &Value,
    volumes: &BTreeSet<String>,
    grace: Option<i64>,
    p: &Path,
) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut names: BTreeSet<String> =
        list(spec, "containers").iter().map(|c| string(c, "name").to_owned()).collect();
    for (i, c) in list(spec, "initContainers").iter().enumerate() {
        let cp = p.index(i);
        out.extend(validate_common(c, volumes, &cp));
        if let Some(policy) = c.get("restartPolicy").and_then(Value::as_str)
            && policy != "Always"
        {
            out.push(unsupported(
                &cp.child("restartPolicy"),
                policy,
                &listed(enums::CONTAINER_RESTART_POLICY),
            ));
        }
        let name = string(c, "name");
        if names.contains(name) {
            out.push(duplicate(cp.child("name").as_str(), Bad::Str(name.to_owned())));
        } else if !name.is_empty() {
            names.insert(name.to_owned());
        }
        out.extend(host_port_conflicts(std::slice::from_ref(c), p));
        if container::restartable(c) {
            out.extend(lifecycle_and_probes(c, grace, &cp));
        } else {
            for key in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
                if set(c, key).is_some() {
                    out.push(forbid(
                        &cp.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    out
}

/// `checkHostPortConflicts`: `<protocol>/<hostIP>/<hostPort>` once across the list.
fn host_port_conflicts(containers: &[Value], p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in list(c, "ports").iter().enumerate() {
            let hp = int(port, "hostPort").unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let key = format!("{}/{}/{hp}", string(port, "protocol"), string(port, "hostIP"));
            if !seen.insert(key.clone()) {
                out.push(duplicate(
                    p.index(ci).child("ports").index(pi).child("hostPort").as_str(),
                    Bad::Str(key),
                ));
            }
        }
    }
    out
}

/// `validatePodHostNetworkDeps`. The server defaults a Pod's hostPort to its
/// containerPort under hostNetwork (kubesim does not), so an unset one passes.
fn host_network_ports(spec: &Value, p: &Path, _is_pod: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    if !spec.get("hostNetwork").and_then(Value::as_bool).unwrap_or(false) {
        return out;
    }
    for (i, c) in list(spec, "containers").iter().enumerate() {
        for (j, port) in list(c, "ports").iter().enumerate() {
            let (hp, cp) = (int(port, "hostPort").unwrap_or(0), int(port, "containerPort").unwrap_or(0));
            if hp != 0 && hp != cp {
                out.push(invalid_int(
                    &p.child("containers").index(i).child("ports").index(j).child("hostPort"),
                    hp,
                    "must match `containerPort` when `hostNetwork` is true",
                ));
            }
        }
    }
    out
}

/// `ValidateTolerations`.
pub(crate) fn validate_tolerations(tolerations: &[Value], p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let tp = p.index(i);
        let key = string(t, "key");
        let operator = string(t, "operator");
        let effect = string(t, "effect");
        let value = string(t, "value");
        if !key.is_empty() {
            out.extend(label_name(key, &tp.child("key")));
        }
        if key.is_empty() && operator != "Exists" {
            out.push(invalid_str(
                &tp.child("operator"),
                operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if set(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
            out.push(invalid_str(
                &tp.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let errs = names::label_value(value);
                if !errs.is_empty() {
                    out.push(invalid_str(&tp.child("operator"), value, &errs.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    out.push(invalid_str(
                        &tp.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => out.push(unsupported(&tp.child("operator"), other, &listed(&["Equal", "Exists"]))),
        }
        if !effect.is_empty() && !enums::TAINT_EFFECT.contains(&effect) {
            out.push(unsupported(&tp.child("effect"), effect, &listed(enums::TAINT_EFFECT)));
        }
    }
    out
}

/// `ValidatePodTemplateSpec`: the template's labels and annotations (at `<p>.labels`,
/// `<p>.annotations`, as the server names them), its spec, and no ephemeral containers.
pub(crate) fn validate_pod_template(template: &Value, p: &Path) -> Vec<Cause> {
    let meta = template.get("metadata").unwrap_or(&Value::Null);
    let mut out = validate_labels(meta, "labels", &p.child("labels"));
    out.extend(validate_annotations(meta, "annotations", &p.child("annotations")));
    let spec = template.get("spec").unwrap_or(&Value::Null);
    out.extend(validate_pod_spec(spec, &p.child("spec"), false));
    if !list(spec, "ephemeralContainers").is_empty() {
        out.push(forbid(
            &p.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    out
}

/// `ValidatePodCreate` (the metadata is kubesim's).
pub(crate) fn validate_pod(pod: &Value) -> Vec<Cause> {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut out = validate_pod_spec(spec, &p, true);
    for list_key in ["containers", "initContainers"] {
        for (i, c) in list(spec, list_key).iter().enumerate() {
            let image = string(c, "image");
            if image.len() != image.trim().len() {
                out.push(invalid_str(
                    &p.child(list_key).index(i).child("image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    if !list(spec, "ephemeralContainers").is_empty() {
        out.push(forbid(&p.child("ephemeralContainers"), "cannot be set on create"));
    }
    if !string(spec, "nodeName").is_empty() && !list(spec, "schedulingGates").is_empty() {
        out.push(forbid(&p.child("nodeName"), "cannot be set until all schedulingGates have been cleared"));
    }
    out
}

const UPDATABLE_POD_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodUpdate`: the spec is fixed but for images, activeDeadlineSeconds (only
/// lowered), added tolerations and removed scheduling gates. The server appends a
/// `cmp.Diff` of the two specs to the Forbidden message; this one ends after the list.
pub(crate) fn validate_pod_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = validate_pod(new);
    out.retain(|c| c.field != "spec.ephemeralContainers");
    let p = Path::new("spec");
    let (ns, os) = (new.get("spec").unwrap_or(&Value::Null), old.get("spec").unwrap_or(&Value::Null));
    for key in ["containers", "initContainers"] {
        if list(ns, key).len() != list(os, key).len() {
            out.push(forbid(&p.child(key), "pod updates may not add or remove containers"));
            return out;
        }
    }
    match (int(ns, "activeDeadlineSeconds"), int(os, "activeDeadlineSeconds")) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            out.push(invalid_int(
                &p.child("activeDeadlineSeconds"),
                n,
                &names::range_error(0, i64::from(i32::MAX)),
            ));
            return out;
        }
        (Some(n), Some(o)) if o < n => {
            out.push(invalid_int(
                &p.child("activeDeadlineSeconds"),
                n,
                "must be less than or equal to previous value",
            ));
            return out;
        }
        (None, Some(_)) => out.push(invalid(
            p.child("activeDeadlineSeconds").as_str(),
            Bad::Data(Value::Null),
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    let old_tolerations = list(os, "tolerations");
    let new_tolerations = list(ns, "tolerations");
    let kept = old_tolerations.iter().all(|o| {
        new_tolerations.iter().any(|n| {
            let strip = |t: &Value| {
                let mut t = t.clone();
                if let Some(m) = t.as_object_mut() {
                    m.remove("tolerationSeconds");
                }
                t
            };
            strip(o) == strip(n)
        })
    });
    if !kept {
        out.push(forbid(
            &p.child("tolerations"),
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    let munge = |spec: &Value, images_from: &Value| {
        let mut s = spec.clone();
        if let Some(m) = s.as_object_mut() {
            for key in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
                m.remove(key);
            }
            for key in ["containers", "initContainers"] {
                if let Some(Value::Array(cs)) = m.get_mut(key) {
                    for (i, c) in cs.iter_mut().enumerate() {
                        let image =
                            images_from.get(key).and_then(|l| l.get(i)).and_then(|c| c.get("image")).cloned();
                        if let Some(c) = c.as_object_mut() {
                            match image {
                                Some(image) => c.insert("image".to_owned(), image),
                                None => c.remove("image"),
                            };
                        }
                    }
                }
            }
        }
        s
    };
    if munge(ns, os) != munge(os, os) {
        out.push(forbid(&p, &format!("pod updates may not change fields other than {UPDATABLE_POD_FIELDS}")));
    }
    out
}

/// The restartPolicy values a template of a workload kind may have (Deployment, ReplicaSet,
/// DaemonSet, StatefulSet: Always only).
pub(crate) fn template_restart_always(template: &Value, p: &Path) -> Option<Cause> {
    let policy = template.pointer("/spec/restartPolicy").and_then(Value::as_str).unwrap_or_default();
    (policy != "Always")
        .then(|| unsupported(&p.child("spec").child("restartPolicy"), policy, &listed(&["Always"])))
}
