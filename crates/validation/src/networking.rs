//! The networking.k8s.io group (pkg/apis/networking/validation/validation.go): Ingress
//! (`ValidateIngressCreate`, `ValidateIngressUpdate`, `ValidateIngressSpec` and the rule,
//! path, backend and TLS checks under it) and NetworkPolicy (`ValidateNetworkPolicySpec`,
//! its ports, peers and `ValidateIPBlock`).
//!
//! kubesim defaults neither kind, and the server's defaults here (a NetworkPolicy's
//! `policyTypes`, a port's `protocol: TCP`) only fill fields whose absence is valid, so
//! nothing is read as defaulted. Left out: a resource backend's required `kind`/`name`
//! (the wording of those two Required causes differs between releases), and
//! `RelaxedServiceNameValidation` (alpha after 1.33: backend service names are DNS-1035
//! labels).

use serde_json::Value;

use crate::enums;
use crate::field::{
    Bad, Cause, Path, forbid, int, invalid, invalid_int, invalid_str, list, listed, req, set, sorted, str_at,
    string, unsupported,
};
use crate::meta::validate_label_selector;
use crate::names;
use crate::net;

/// `invalidPathSequences` and `invalidPathSuffixes`.
const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];
const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];

/// What an update may keep that a create may not (`IngressValidationOptions`).
#[derive(Clone, Copy, Default)]
struct IngressOptions {
    allow_invalid_secret_name: bool,
    allow_invalid_wildcard_host_rule: bool,
}

/// `ValidateIngressCreate` (`old` is `None`) or `ValidateIngressUpdate`.
pub(crate) fn validate_ingress(ing: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = ing.get("spec").unwrap_or(&Value::Null);
    let opts = match old {
        None => IngressOptions::default(),
        Some(old) => {
            let old_spec = old.get("spec").unwrap_or(&Value::Null);
            IngressOptions {
                allow_invalid_secret_name: list(old_spec, "tls")
                    .iter()
                    .any(|t| !tls_secret_name_errors(string(t, "secretName")).is_empty()),
                allow_invalid_wildcard_host_rule: list(old_spec, "rules")
                    .iter()
                    .any(|r| string(r, "host").contains('*') && !rule_value(r, &Path::default()).is_empty()),
            }
        }
    };
    let mut out = validate_ingress_spec(spec, &Path::new("spec"), opts);
    if old.is_none()
        && let Some(annotation) =
            ing.pointer("/metadata/annotations/kubernetes.io~1ingress.class").and_then(Value::as_str)
        && let Some(class) = str_at(spec, "ingressClassName")
        && annotation != class
    {
        out.push(invalid_str(
            &Path::new("annotations").child("kubernetes.io/ingress.class"),
            annotation,
            "must match `ingressClassName` when both are specified",
        ));
    }
    out
}

/// `ValidateIngressSpec`.
fn validate_ingress_spec(spec: &Value, p: &Path, opts: IngressOptions) -> Vec<Cause> {
    let mut out = Vec::new();
    let rules = list(spec, "rules");
    let default_backend = set(spec, "defaultBackend");
    if rules.is_empty() && default_backend.is_none() {
        let shown = if spec.get("rules").is_some_and(Value::is_array) {
            "[]networking.IngressRule{}"
        } else {
            "[]networking.IngressRule(nil)"
        };
        out.push(invalid(
            p.as_str(),
            Bad::Raw(shown.to_owned()),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        out.extend(validate_backend(backend, &p.child("defaultBackend")));
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = p.child("rules").index(i);
        let host = string(rule, "host");
        let mut wildcard = false;
        if !host.is_empty() {
            if net::parse_ip(host).is_some() {
                out.push(invalid_str(&rp.child("host"), host, "must be a DNS name, not an IP address"));
            }
            let msgs = if host.contains('*') {
                wildcard = true;
                names::wildcard_dns1123_subdomain(host)
            } else {
                names::dns1123_subdomain(host)
            };
            out.extend(msgs.iter().map(|m| invalid_str(&rp.child("host"), host, m)));
        }
        if !wildcard || !opts.allow_invalid_wildcard_host_rule {
            out.extend(rule_value(rule, &rp));
        }
    }
    for (i, tls) in list(spec, "tls").iter().enumerate() {
        let tp = p.child("tls").index(i);
        for (j, host) in list(tls, "hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or_default();
            let msgs = if host.contains('*') {
                names::wildcard_dns1123_subdomain(host)
            } else {
                names::dns1123_subdomain(host)
            };
            out.extend(msgs.iter().map(|m| invalid_str(&tp.child("hosts").index(j), host, m)));
        }
        if !opts.allow_invalid_secret_name {
            let secret = string(tls, "secretName");
            out.extend(
                tls_secret_name_errors(secret)
                    .iter()
                    .map(|m| invalid_str(&tp.child("secretName"), secret, m)),
            );
        }
    }
    if let Some(class) = str_at(spec, "ingressClassName") {
        out.extend(
            names::subdomain_name(class).iter().map(|m| invalid_str(&p.child("ingressClassName"), class, m)),
        );
    }
    out
}

/// `validateTLSSecretName`: a Secret name, when one is given.
fn tls_secret_name_errors(name: &str) -> Vec<String> {
    if name.is_empty() { Vec::new() } else { names::subdomain_name(name) }
}

/// `validateIngressRuleValue` and `validateHTTPIngressRuleValue`.
fn rule_value(rule: &Value, p: &Path) -> Vec<Cause> {
    let Some(http) = set(rule, "http") else { return Vec::new() };
    let hp = p.child("http");
    let paths = list(http, "paths");
    let mut out = Vec::new();
    if paths.is_empty() {
        out.push(req(&hp.child("paths"), ""));
    }
    for (i, path) in paths.iter().enumerate() {
        out.extend(validate_http_path(path, &hp.child("paths").index(i)));
    }
    out
}

/// `validateHTTPIngressPath`.
fn validate_http_path(path: &Value, p: &Path) -> Vec<Cause> {
    let Some(path_type) = path.get("pathType").filter(|v| !v.is_null()) else {
        return vec![req(&p.child("pathType"), "pathType must be specified")];
    };
    let mut out = Vec::new();
    let value = string(path, "path");
    let pp = p.child("path");
    match path_type.as_str().unwrap_or_default() {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                out.push(invalid_str(&pp, value, "must be an absolute path"));
            }
            for seq in INVALID_PATH_SEQUENCES.iter().filter(|s| value.contains(**s)) {
                out.push(invalid_str(&pp, value, &format!("must not contain '{seq}'")));
            }
            for suffix in INVALID_PATH_SUFFIXES.iter().filter(|s| value.ends_with(**s)) {
                out.push(invalid_str(&pp, value, &format!("cannot end with '{suffix}'")));
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                out.push(invalid_str(&pp, value, "must be an absolute path"));
            }
        }
        other => out.push(unsupported(&p.child("pathType"), other, &sorted(enums::PATH_TYPE))),
    }
    out.extend(validate_backend(path.get("backend").unwrap_or(&Value::Null), &p.child("backend")));
    out
}

/// `validateIngressBackend`: a service (DNS-1035 name, port name xor number) or a
/// resource reference.
fn validate_backend(backend: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    match (set(backend, "resource"), set(backend, "service")) {
        (Some(_), Some(_)) => out.push(invalid_str(p, "", "cannot set both resource and service backends")),
        (Some(resource), None) => {
            let rp = p.child("resource");
            if let Some(group) = str_at(resource, "apiGroup") {
                out.extend(
                    names::dns1123_subdomain(group)
                        .iter()
                        .map(|m| invalid_str(&rp.child("apiGroup"), group, m)),
                );
            }
            for key in ["kind", "name"] {
                let value = string(resource, key);
                out.extend(
                    names::path_segment_name(value).iter().map(|m| invalid_str(&rp.child(key), value, m)),
                );
            }
        }
        (None, Some(service)) => {
            let sp = p.child("service");
            let name = string(service, "name");
            if name.is_empty() {
                out.push(req(&sp.child("name"), ""));
            } else {
                out.extend(
                    names::dns1035_label(name).iter().map(|m| invalid_str(&sp.child("name"), name, m)),
                );
            }
            let port = service.get("port").unwrap_or(&Value::Null);
            let port_name = string(port, "name");
            let number = int(port, "number").unwrap_or(0);
            match (port_name.is_empty(), number == 0) {
                (false, false) => out.push(invalid_str(p, "", "cannot set both port name & port number")),
                (false, true) => out.extend(
                    names::port_name(port_name)
                        .iter()
                        .map(|m| invalid_str(&sp.child("port").child("name"), port_name, m)),
                ),
                (true, false) => out.extend(
                    names::port_num(number)
                        .iter()
                        .map(|m| invalid_int(&sp.child("port").child("number"), number, m)),
                ),
                (true, true) => out.push(req(p, "port name or number is required")),
            }
        }
        (None, None) => out.push(invalid_str(p, "", "resource or service backend is required")),
    }
    out
}

/// `ValidateNetworkPolicySpec` (create and update: the update adds only metadata rules).
pub(crate) fn validate_network_policy(np: &Value) -> Vec<Cause> {
    let spec = np.get("spec").unwrap_or(&Value::Null);
    let p = Path::new("spec");
    let mut out =
        validate_label_selector(spec.get("podSelector").unwrap_or(&Value::Null), &p.child("podSelector"));
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in list(spec, direction).iter().enumerate() {
            let rp = p.child(direction).index(i);
            for (j, port) in list(rule, "ports").iter().enumerate() {
                out.extend(validate_policy_port(port, &rp.child("ports").index(j)));
            }
            for (j, peer) in list(rule, peers).iter().enumerate() {
                out.extend(validate_peer(peer, &rp.child(peers).index(j)));
            }
        }
    }
    let types = list(spec, "policyTypes");
    let tp = p.child("policyTypes");
    if types.len() > 2 {
        let shown: Vec<String> =
            types.iter().map(|t| ctop_schema::go::quote(t.as_str().unwrap_or_default())).collect();
        out.push(invalid(
            tp.as_str(),
            Bad::Raw(format!("[]networking.PolicyType{{{}}}", shown.join(", "))),
            "may not specify more than two policyTypes",
        ));
        return out;
    }
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or_default();
        if !enums::POLICY_TYPE.contains(&t) {
            out.push(unsupported(&tp.index(i), t, &listed(enums::POLICY_TYPE)));
        }
    }
    out
}

/// `ValidateNetworkPolicyPort`.
fn validate_policy_port(port: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(proto) = str_at(port, "protocol")
        && !enums::PROTOCOL.contains(&proto)
    {
        out.push(unsupported(&p.child("protocol"), proto, &listed(enums::PROTOCOL)));
    }
    let end_port = int(port, "endPort");
    let ep = p.child("endPort");
    match set(port, "port") {
        Some(Value::String(name)) => {
            if let Some(end) = end_port {
                out.push(invalid_int(&ep, end, "may not be specified when `port` is non-numeric"));
            }
            out.extend(names::port_name(name).iter().map(|m| invalid_str(&p.child("port"), name, m)));
        }
        Some(number) => {
            let number = number.as_i64().unwrap_or(0);
            out.extend(names::port_num(number).iter().map(|m| invalid_int(&p.child("port"), number, m)));
            if let Some(end) = end_port {
                if end < number {
                    out.push(invalid_int(&ep, end, "must be greater than or equal to `port`"));
                }
                out.extend(names::port_num(end).iter().map(|m| invalid_int(&ep, end, m)));
            }
        }
        None => {
            if let Some(end) = end_port {
                out.push(invalid_int(&ep, end, "may not be specified when `port` is not specified"));
            }
        }
    }
    out
}

/// `ValidateNetworkPolicyPeer`.
fn validate_peer(peer: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut peers = 0;
    for key in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = set(peer, key) {
            peers += 1;
            out.extend(validate_label_selector(sel, &p.child(key)));
        }
    }
    let block = set(peer, "ipBlock");
    if let Some(block) = block {
        peers += 1;
        out.extend(validate_ip_block(block, &p.child("ipBlock")));
    }
    if peers == 0 {
        out.push(req(p, "must specify a peer"));
    } else if peers > 1 && block.is_some() {
        out.push(forbid(p, "may not specify both ipBlock and another peer"));
    }
    out
}

/// `ValidateIPBlock`: `cidr` a CIDR, each `except` a CIDR strictly inside it.
fn validate_ip_block(block: &Value, p: &Path) -> Vec<Cause> {
    let cidr = string(block, "cidr");
    if cidr.is_empty() {
        return vec![req(&p.child("cidr"), "")];
    }
    let Some(net) = net::parse_cidr(cidr) else {
        return vec![invalid_str(&p.child("cidr"), cidr, net::INVALID_CIDR)];
    };
    let mut out = Vec::new();
    for (i, except) in list(block, "except").iter().enumerate() {
        let except = except.as_str().unwrap_or_default();
        let xp = p.child("except").index(i);
        match net::parse_cidr(except) {
            None => out.push(invalid_str(&xp, except, net::INVALID_CIDR)),
            Some(inner) => {
                if !net.contains(&inner.ip()) || net.prefix() >= inner.prefix() {
                    out.push(invalid_str(&xp, except, "must be a strict subset of `cidr`"));
                }
            }
        }
    }
    out
}
