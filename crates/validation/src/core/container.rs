//! One container of a PodSpec (`validateContainerCommon`, `validateContainerPorts`,
//! `ValidateEnv`, `ValidateEnvFrom`, `ValidateVolumeMounts`, probes and lifecycle
//! handlers, `ValidateContainerResourceRequirements`) in core/validation/validation.go.
//! Fields kubesim defaults (imagePullPolicy, terminationMessagePolicy, port protocol) are
//! checked as the server does; probe fields the server defaults and kubesim does not
//! (thresholds, httpGet scheme and path) count as their defaults when absent.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::enums;
use crate::field::{
    Bad, Cause, Path, forbid, int, invalid, invalid_int, invalid_str, list, listed, not_found, object, req,
    set, sorted, string, unsupported,
};
use crate::names;
use crate::quantity::Quantity;

/// `validateContainerCommon`: what regular and init containers share. `volumes` holds the
/// names of the pod's valid volumes.
pub(crate) fn validate_common(c: &Value, volumes: &BTreeSet<String>, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = string(c, "name");
    if name.is_empty() {
        out.push(req(&p.child("name"), ""));
    } else {
        out.extend(names::dns1123_label(name).iter().map(|m| invalid_str(&p.child("name"), name, m)));
    }
    if string(c, "image").is_empty() {
        out.push(req(&p.child("image"), ""));
    }
    match string(c, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => out.push(req(&p.child("terminationMessagePolicy"), "")),
        other => out.push(unsupported(
            &p.child("terminationMessagePolicy"),
            other,
            &listed(enums::TERMINATION_MESSAGE_POLICY),
        )),
    }
    out.extend(validate_ports(c, &p.child("ports")));
    out.extend(validate_env(c, &p.child("env")));
    out.extend(validate_env_from(c, &p.child("envFrom")));
    out.extend(validate_volume_mounts(c, volumes, &p.child("volumeMounts")));
    match string(c, "imagePullPolicy") {
        "Always" | "IfNotPresent" | "Never" => {}
        "" => out.push(req(&p.child("imagePullPolicy"), "")),
        other => out.push(unsupported(&p.child("imagePullPolicy"), other, &sorted(enums::PULL_POLICY))),
    }
    if let Some(r) = set(c, "resources") {
        out.extend(validate_resources(r, &p.child("resources")));
    }
    if let Some(sc) = set(c, "securityContext") {
        out.extend(crate::core::security::validate_container_security_context(
            sc,
            &p.child("securityContext"),
        ));
    }
    out
}

/// `validateContainerPorts`.
fn validate_ports(c: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, port) in list(c, "ports").iter().enumerate() {
        let ip = p.index(i);
        let name = string(port, "name");
        if !name.is_empty() {
            let msgs = names::port_name(name);
            if !msgs.is_empty() {
                out.extend(msgs.iter().map(|m| invalid_str(&ip.child("name"), name, m)));
            } else if !seen.insert(name.to_owned()) {
                out.push(crate::field::duplicate(ip.child("name").as_str(), Bad::Str(name.to_owned())));
            }
        }
        match int(port, "containerPort").unwrap_or(0) {
            0 => out.push(req(&ip.child("containerPort"), "")),
            n => out.extend(names::port_num(n).iter().map(|m| invalid_int(&ip.child("containerPort"), n, m))),
        }
        if let Some(hp) = int(port, "hostPort").filter(|&h| h != 0) {
            out.extend(names::port_num(hp).iter().map(|m| invalid_int(&ip.child("hostPort"), hp, m)));
        }
        match string(port, "protocol") {
            "TCP" | "UDP" | "SCTP" => {}
            "" => out.push(req(&ip.child("protocol"), "")),
            other => out.push(unsupported(&ip.child("protocol"), other, &sorted(enums::PROTOCOL))),
        }
    }
    out
}

const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];
/// The labels `ConvertDownwardAPIFieldLabel` accepts for v1 (pkg/apis/core/pods/helpers.go).
const CONVERTIBLE_FIELD_PATHS: [&str; 14] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];
const RESOURCE_FIELD_PATHS: [&str; 6] = [
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
];

/// `ValidateEnv` and `validateEnvVarValueFrom`.
fn validate_env(c: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, ev) in list(c, "env").iter().enumerate() {
        let ip = p.index(i);
        let name = string(ev, "name");
        if name.is_empty() {
            out.push(req(&ip.child("name"), ""));
        } else {
            out.extend(
                names::relaxed_env_var_name(name).iter().map(|m| invalid_str(&ip.child("name"), name, m)),
            );
        }
        let Some(from) = set(ev, "valueFrom") else { continue };
        let fp = ip.child("valueFrom");
        let mut sources = 0;
        if let Some(fr) = set(from, "fieldRef") {
            sources += 1;
            out.extend(validate_object_field_selector(fr, &ENV_FIELD_PATHS, &fp.child("fieldRef")));
        }
        if let Some(rr) = set(from, "resourceFieldRef") {
            sources += 1;
            let rp = fp.child("resourceFieldRef");
            let resource = string(rr, "resource");
            if resource.is_empty() {
                out.push(req(&rp.child("resource"), ""));
            } else if !RESOURCE_FIELD_PATHS.contains(&resource)
                && !resource.starts_with("requests.hugepages-")
                && !resource.starts_with("limits.hugepages-")
            {
                out.push(unsupported(&rp.child("resource"), resource, &sorted(&RESOURCE_FIELD_PATHS)));
            }
        }
        for key in ["configMapKeyRef", "secretKeyRef"] {
            if let Some(sel) = set(from, key) {
                sources += 1;
                out.extend(validate_key_selector(sel, &fp.child(key)));
            }
        }
        if sources == 0 {
            out.push(invalid_str(
                &fp,
                "",
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !string(ev, "value").is_empty() {
            out.push(invalid_str(&fp, "", "may not be specified when `value` is not empty"));
        } else if sources > 1 {
            out.push(invalid_str(&fp, "", "may not have more than one field specified at a time"));
        }
    }
    out
}

/// `validateObjectFieldSelector` (apiVersion is defaulted to v1 by the server).
pub(crate) fn validate_object_field_selector(fs: &Value, allowed: &[&str], p: &Path) -> Vec<Cause> {
    let path = string(fs, "fieldPath");
    if path.is_empty() {
        return vec![req(&p.child("fieldPath"), "")];
    }
    let (base, subscript) = match path.split_once('[') {
        Some((base, rest)) => (base, rest.strip_suffix(']').map(|s| s.trim_matches('\''))),
        None => (path, None),
    };
    if !CONVERTIBLE_FIELD_PATHS.contains(&base) {
        return vec![invalid_str(
            &p.child("fieldPath"),
            path,
            &format!("error converting fieldPath: field label not supported: {path}"),
        )];
    }
    match subscript {
        Some(sub) => match base {
            "metadata.annotations" => {
                let lower = sub.to_lowercase();
                names::qualified_name(&lower).iter().map(|m| invalid_str(p, &lower, m)).collect()
            }
            "metadata.labels" => names::qualified_name(sub).iter().map(|m| invalid_str(p, sub, m)).collect(),
            _ => vec![invalid_str(p, base, "does not support subscript")],
        },
        None if !allowed.contains(&base) => vec![unsupported(&p.child("fieldPath"), base, &sorted(allowed))],
        None => Vec::new(),
    }
}

/// `validateConfigMapKeySelector` / `validateSecretKeySelector`.
fn validate_key_selector(sel: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = string(sel, "name");
    out.extend(names::subdomain_name(name).iter().map(|m| invalid_str(&p.child("name"), name, m)));
    let key = string(sel, "key");
    if key.is_empty() {
        out.push(req(&p.child("key"), ""));
    } else {
        out.extend(names::config_map_key(key).iter().map(|m| invalid_str(&p.child("key"), key, m)));
    }
    out
}

/// A name checked with `prefix: true` (`maskTrailingDash`: a trailing `-` is allowed).
fn prefix_name_errors(name: &str) -> Vec<String> {
    let masked = match name.strip_suffix('-') {
        Some(head) if !head.is_empty() => format!("{head}a"),
        _ => name.to_owned(),
    };
    names::subdomain_name(&masked)
}

/// `ValidateEnvFrom`.
fn validate_env_from(c: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, ev) in list(c, "envFrom").iter().enumerate() {
        let ip = p.index(i);
        let prefix = string(ev, "prefix");
        if !prefix.is_empty() {
            out.extend(
                names::relaxed_env_var_name(prefix)
                    .iter()
                    .map(|m| invalid_str(&ip.child("prefix"), prefix, m)),
            );
        }
        let mut sources = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = set(ev, key) {
                sources += 1;
                let name = string(r, "name");
                if name.is_empty() {
                    out.push(req(&ip.child(key).child("name"), ""));
                } else {
                    out.extend(
                        prefix_name_errors(name)
                            .iter()
                            .map(|m| invalid_str(&ip.child(key).child("name"), name, m)),
                    );
                }
            }
        }
        if sources == 0 {
            out.push(invalid_str(p, "", "must specify one of: `configMapRef` or `secretRef`"));
        } else if sources > 1 {
            out.push(invalid_str(p, "", "may not have more than one field specified at a time"));
        }
    }
    out
}

/// `validateLocalDescendingPath`.
pub(crate) fn local_descending_path(path: &str, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if path.starts_with('/') {
        out.push(invalid_str(p, path, "must be a relative path"));
    }
    out.extend(no_backsteps(path, p));
    out
}

/// `validatePathNoBacksteps`.
pub(crate) fn no_backsteps(path: &str, p: &Path) -> Vec<Cause> {
    if path.split('/').any(|part| part == "..") {
        vec![invalid_str(p, path, "must not contain '..'")]
    } else {
        Vec::new()
    }
}

/// `ValidateVolumeMounts`.
fn validate_volume_mounts(c: &Value, volumes: &BTreeSet<String>, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut mount_points = BTreeSet::new();
    let privileged = c.pointer("/securityContext/privileged").and_then(Value::as_bool).unwrap_or(false);
    for (i, m) in list(c, "volumeMounts").iter().enumerate() {
        let ip = p.index(i);
        let name = string(m, "name");
        if name.is_empty() {
            out.push(req(&ip.child("name"), ""));
        }
        if !volumes.contains(name) {
            out.push(not_found(ip.child("name").as_str(), Bad::Str(name.to_owned())));
        }
        let mount_path = string(m, "mountPath");
        if mount_path.is_empty() {
            out.push(req(&ip.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path.to_owned()) {
            out.push(invalid_str(&ip.child("mountPath"), mount_path, "must be unique"));
        }
        let sub_path = string(m, "subPath");
        if !sub_path.is_empty() {
            out.extend(local_descending_path(sub_path, &p.child("subPath")));
        }
        let expr = string(m, "subPathExpr");
        if !expr.is_empty() {
            if !sub_path.is_empty() {
                out.push(invalid_str(
                    &ip.child("subPathExpr"),
                    expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            out.extend(local_descending_path(expr, &p.child("subPathExpr")));
        }
        if let Some(prop) = m.get("mountPropagation").and_then(Value::as_str) {
            let pp = p.child("mountPropagation");
            if !enums::MOUNT_PROPAGATION_MODE.contains(&prop) {
                out.push(unsupported(&pp, prop, &sorted(enums::MOUNT_PROPAGATION_MODE)));
            }
            if prop == "Bidirectional" && !privileged {
                out.push(forbid(
                    &pp,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
    }
    out
}

/// `validateProbe` plus the liveness/startup (`successThreshold` must be 1) and readiness
/// (no `terminationGracePeriodSeconds`) rules.
pub(crate) fn validate_probe(probe: &Value, kind: &str, grace: Option<i64>, p: &Path) -> Vec<Cause> {
    let mut out = validate_handler(probe, false, grace, p);
    for key in
        ["initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"]
    {
        out.extend(crate::meta::non_negative(probe, key, p));
    }
    if let Some(t) = int(probe, "terminationGracePeriodSeconds").filter(|&t| t <= 0) {
        out.push(invalid_int(&p.child("terminationGracePeriodSeconds"), t, "must be greater than 0"));
    }
    let success = int(probe, "successThreshold").unwrap_or(1);
    match kind {
        "livenessProbe" | "startupProbe" if success != 1 => {
            out.push(invalid_int(&p.child("successThreshold"), success, "must be 1"));
        }
        "readinessProbe" => {
            if let Some(t) = set(probe, "terminationGracePeriodSeconds") {
                out.push(invalid(
                    p.child("terminationGracePeriodSeconds").as_str(),
                    Bad::of(t),
                    "must not be set for readinessProbes",
                ));
            }
        }
        _ => {}
    }
    out
}

/// `validateHandler` of a probe (`lifecycle: false`: exec, httpGet, tcpSocket, grpc) or a
/// lifecycle hook (`lifecycle: true`: exec, httpGet, tcpSocket, sleep).
pub(crate) fn validate_handler(h: &Value, lifecycle: bool, grace: Option<i64>, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut handlers = 0;
    let kinds: &[&str] = if lifecycle {
        &["exec", "httpGet", "tcpSocket", "sleep"]
    } else {
        &["exec", "httpGet", "tcpSocket", "grpc"]
    };
    for &kind in kinds {
        let Some(action) = set(h, kind) else { continue };
        let kp = p.child(kind);
        if handlers > 0 {
            out.push(forbid(&kp, "may not specify more than 1 handler type"));
            continue;
        }
        handlers += 1;
        match kind {
            "exec" if list(action, "command").is_empty() => out.push(req(&kp.child("command"), "")),
            "httpGet" => {
                out.extend(port_num_or_name(action.get("port"), &kp.child("port")));
                let scheme = action.get("scheme").and_then(Value::as_str).unwrap_or("HTTP");
                if !enums::URI_SCHEME.contains(&scheme) {
                    out.push(unsupported(&kp.child("scheme"), scheme, &sorted(enums::URI_SCHEME)));
                }
                for header in list(action, "httpHeaders") {
                    let name = string(header, "name");
                    out.extend(
                        names::http_header_name(name)
                            .iter()
                            .map(|m| invalid_str(&kp.child("httpHeaders"), name, m)),
                    );
                }
            }
            "tcpSocket" => out.extend(port_num_or_name(action.get("port"), &kp.child("port"))),
            "grpc" => {
                let port = int(action, "port").unwrap_or(0);
                out.extend(names::port_num(port).iter().map(|m| invalid_int(&kp.child("port"), port, m)));
            }
            "sleep" => {
                let seconds = int(action, "seconds").unwrap_or(0);
                if let Some(grace) = grace
                    && (seconds < 0 || seconds > grace)
                {
                    out.push(invalid_int(
                        &kp,
                        seconds,
                        &format!(
                            "must be non-negative and less than terminationGracePeriodSeconds ({grace})"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if handlers == 0 {
        out.push(req(p, "must specify a handler type"));
    }
    out
}

/// `ValidatePortNumOrName` of an IntOrString port (absent: the zero int).
pub(crate) fn port_num_or_name(port: Option<&Value>, p: &Path) -> Vec<Cause> {
    match port {
        Some(Value::String(name)) => names::port_name(name).iter().map(|m| invalid_str(p, name, m)).collect(),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            names::port_num(n).iter().map(|m| invalid_int(p, n, m)).collect()
        }
    }
}

fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// `validateContainerResourceName`.
fn validate_resource_name(name: &str, p: &Path) -> Vec<Cause> {
    let mut out: Vec<Cause> = names::qualified_name(name).iter().map(|m| invalid_str(p, name, m)).collect();
    if !out.is_empty() {
        return out;
    }
    if !name.contains('/') {
        if !matches!(name, "cpu" | "memory" | "ephemeral-storage") && !is_hugepages(name) {
            out.push(invalid_str(p, name, "must be a standard resource for containers"));
        }
    } else if !is_native(name)
        && (name.starts_with("requests.") || !names::qualified_name(&format!("requests.{name}")).is_empty())
    {
        out.push(invalid_str(p, name, "doesn't follow extended resource name standard"));
    }
    out
}

/// `ValidateContainerResourceRequirements` (the resource-name, non-negative and
/// request-versus-limit rules).
pub(crate) fn validate_resources(r: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let lim_path = p.child("limits");
    let req_path = p.child("requests");
    let limits = object(r, "limits");
    for (name, q) in limits.into_iter().flatten() {
        let kp = lim_path.key(name);
        out.extend(validate_resource_name(name, &kp));
        out.extend(non_negative_quantity(q, &kp));
    }
    for (name, q) in object(r, "requests").into_iter().flatten() {
        let kp = req_path.key(name);
        out.extend(validate_resource_name(name, &kp));
        out.extend(non_negative_quantity(q, &kp));
        let overcommit = is_native(name) && !is_hugepages(name);
        let request = q.as_str().and_then(Quantity::parse);
        match limits.and_then(|l| l.get(name)) {
            Some(limit) => {
                let (Some(request), Some(limit)) = (request, limit.as_str().and_then(Quantity::parse)) else {
                    continue;
                };
                let order = request.cmp_value(&limit);
                if !order.is_eq() && !overcommit {
                    out.push(invalid_str(
                        &req_path,
                        &request.canonical(),
                        &format!("must be equal to {name} limit of {}", limit.canonical()),
                    ));
                } else if order.is_gt() {
                    out.push(invalid_str(
                        &req_path,
                        &request.canonical(),
                        &format!("must be less than or equal to {name} limit of {}", limit.canonical()),
                    ));
                }
            }
            None if !overcommit => {
                out.push(req(&lim_path, "Limit must be set for non overcommitable resources"))
            }
            None => {}
        }
    }
    out
}

/// `ValidateNonnegativeQuantity`.
pub(crate) fn non_negative_quantity(q: &Value, p: &Path) -> Option<Cause> {
    let q = q.as_str().and_then(Quantity::parse)?;
    q.is_negative().then(|| invalid_str(p, &q.canonical(), "must be greater than or equal to 0"))
}

/// Whether an init container is a sidecar (`restartPolicy: Always`).
pub(crate) fn restartable(c: &Value) -> bool {
    string(c, "restartPolicy") == "Always"
}
