//! Services (`ValidateService`, `validateServicePort`, `ValidateServiceClusterIPsRelatedFields`,
//! `ValidateServiceUpdate`) of core/validation/validation.go. The server allocates cluster
//! IPs before it validates and keeps allocated values on update; kubesim allocates after,
//! so `clusterIPs` is read as the strategy leaves it (`clusterIP` copied in when only that
//! is set) and a missing `clusterIP`/`clusterIPs` on update counts as the old one.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::core::container::port_num_or_name;
use crate::enums;
use crate::field::{
    Bad, Cause, Path, duplicate, forbid, int, invalid, invalid_int, invalid_str, list, req, set, sorted,
    string, unsupported,
};
use crate::meta::validate_labels;
use crate::names;
use crate::net;

/// The spec as the server's strategy hands it to validation.
fn normalized(svc: &Value, old: Option<&Value>) -> Value {
    let mut spec = svc.get("spec").cloned().unwrap_or_else(|| json!({}));
    let Some(m) = spec.as_object_mut() else { return spec };
    if let Some(old) = old.and_then(|o| o.get("spec")) {
        for key in ["clusterIP", "clusterIPs"] {
            let missing =
                m.get(key).is_none_or(|v| v.is_null() || v == "" || v.as_array().is_some_and(Vec::is_empty));
            let external = m.get("type").and_then(Value::as_str) == Some("ExternalName");
            if missing
                && !external
                && let Some(v) = old.get(key)
            {
                m.insert(key.to_owned(), v.clone());
            }
        }
    }
    let ip = m.get("clusterIP").and_then(Value::as_str).unwrap_or_default().to_owned();
    let ips_empty = m.get("clusterIPs").and_then(Value::as_array).is_none_or(Vec::is_empty);
    if !ip.is_empty() && ips_empty {
        m.insert("clusterIPs".to_owned(), json!([ip]));
    }
    spec
}

fn cluster_ips(spec: &Value) -> Vec<&str> {
    list(spec, "clusterIPs").iter().filter_map(Value::as_str).collect()
}

fn headless(spec: &Value) -> bool {
    cluster_ips(spec) == ["None"]
}

/// `ValidateService` (create) and, with `old`, `ValidateServiceUpdate`.
pub(crate) fn validate_service(svc: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = normalized(svc, old);
    let p = Path::new("spec");
    let mut out = Vec::new();
    if let Some(old) = old {
        out.extend(validate_update(&spec, &normalized(old, None), &p));
    }
    let ty = string(&spec, "type");
    let ports = list(&spec, "ports");
    if ports.is_empty() && !headless(&spec) && ty != "ExternalName" {
        out.push(req(&p.child("ports"), ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless(&spec) => out.push(invalid_str(
            &p.child("clusterIPs").index(0),
            "None",
            &format!("may not be set to 'None' for {ty} services"),
        )),
        "ExternalName" => {
            if !cluster_ips(&spec).is_empty() {
                out.push(forbid(&p.child("clusterIPs"), "may not be set for ExternalName services"));
            }
            if !list(&spec, "ipFamilies").is_empty() {
                out.push(forbid(&p.child("ipFamilies"), "may not be set for ExternalName services"));
            }
            if set(&spec, "ipFamilyPolicy").is_some() {
                out.push(forbid(&p.child("ipFamilyPolicy"), "may not be set for ExternalName services"));
            }
            let cname = string(&spec, "externalName").trim_end_matches('.');
            if cname.is_empty() {
                out.push(req(&p.child("externalName"), ""));
            } else {
                out.extend(
                    names::dns1123_subdomain(cname)
                        .iter()
                        .map(|m| invalid_str(&p.child("externalName"), cname, m)),
                );
            }
        }
        _ => {}
    }
    let mut port_names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        out.extend(validate_port(port, ports.len() > 1, &mut port_names, &p.child("ports").index(i)));
    }
    if set(&spec, "selector").is_some() {
        out.extend(validate_labels(&spec, "selector", &p.child("selector")));
    }
    match string(&spec, "sessionAffinity") {
        "" => out.push(req(&p.child("sessionAffinity"), "")),
        "ClientIP" => {
            let cp = p.child("sessionAffinityConfig");
            match set(&spec, "sessionAffinityConfig") {
                None => out.push(req(&cp, "when session affinity type is ClientIP")),
                Some(config) => match set(config, "clientIP") {
                    None => out.push(req(&cp.child("clientIP"), "when session affinity type is ClientIP")),
                    Some(client) => {
                        let tp = cp.child("clientIP").child("timeoutSeconds");
                        match int(client, "timeoutSeconds") {
                            None => out.push(req(&tp, "when session affinity type is ClientIP")),
                            Some(t) if t <= 0 || t > 86400 => {
                                out.push(invalid_int(&tp, t, "must be greater than 0 and less than 86400"));
                            }
                            Some(_) => {}
                        }
                    }
                },
            }
        }
        "None" => {
            if set(&spec, "sessionAffinityConfig").is_some() {
                out.push(forbid(
                    &p.child("sessionAffinityConfig"),
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => out.push(unsupported(&p.child("sessionAffinity"), other, &sorted(enums::SERVICE_AFFINITY))),
    }
    out.extend(cluster_ip_fields(&spec, &p));
    out.extend(external_ips(&spec, old, &p.child("externalIPs")));
    match ty {
        "" => out.push(req(&p.child("type"), "")),
        t if !enums::SERVICE_TYPE.contains(&t) => {
            out.push(unsupported(&p.child("type"), t, &sorted(enums::SERVICE_TYPE)))
        }
        _ => {}
    }
    let mut node_ports = BTreeSet::new();
    let mut seen_ports = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let pp = p.child("ports").index(i);
        let node_port = int(port, "nodePort").unwrap_or(0);
        if ty == "ClusterIP" && node_port != 0 {
            out.push(forbid(&pp.child("nodePort"), "may not be used when `type` is 'ClusterIP'"));
        }
        let protocol = string(port, "protocol");
        if node_port != 0 && !node_ports.insert((protocol.to_owned(), node_port)) {
            out.push(duplicate(pp.child("nodePort").as_str(), Bad::Int(node_port)));
        }
        let number = int(port, "port").unwrap_or(0);
        if !seen_ports.insert((protocol.to_owned(), number)) {
            let key = format!(
                "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{number}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                ctop_schema::go::quote(protocol)
            );
            out.push(duplicate(pp.as_str(), Bad::Raw(key)));
        }
    }
    if !list(&spec, "loadBalancerSourceRanges").is_empty() && ty != "LoadBalancer" {
        out.push(forbid(
            &p.child("LoadBalancerSourceRanges"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if set(&spec, "allocateLoadBalancerNodePorts").is_some() && ty != "LoadBalancer" {
        out.push(forbid(
            &p.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if let Some(class) = spec.get("loadBalancerClass").and_then(Value::as_str) {
        if ty == "LoadBalancer" {
            out.extend(crate::meta::label_name(class, &p.child("loadBalancerClass")));
        } else {
            out.push(forbid(&p.child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"));
        }
    }
    let external = matches!(ty, "NodePort" | "LoadBalancer") || !list(&spec, "externalIPs").is_empty();
    let etp = string(&spec, "externalTrafficPolicy");
    if !external && !etp.is_empty() {
        out.push(invalid_str(
            &p.child("externalTrafficPolicy"),
            etp,
            "may only be set for externally-accessible services",
        ));
    } else if external && !etp.is_empty() && !enums::SERVICE_EXTERNAL_TRAFFIC_POLICY.contains(&etp) {
        out.push(unsupported(
            &p.child("externalTrafficPolicy"),
            etp,
            &sorted(enums::SERVICE_EXTERNAL_TRAFFIC_POLICY),
        ));
    }
    if let Some(itp) = spec.get("internalTrafficPolicy").and_then(Value::as_str)
        && !enums::SERVICE_INTERNAL_TRAFFIC_POLICY.contains(&itp)
    {
        out.push(unsupported(
            &p.child("internalTrafficPolicy"),
            itp,
            &sorted(enums::SERVICE_INTERNAL_TRAFFIC_POLICY),
        ));
    }
    if let Some(td) = spec.get("trafficDistribution").and_then(Value::as_str)
        && td != "PreferClose"
    {
        out.push(unsupported(&p.child("trafficDistribution"), td, &["PreferClose".to_owned()]));
    }
    out
}

/// `spec.externalIPs` in `ValidateService`: each a valid IP (`IsValidIPForLegacyField`)
/// and, unless the stored object already had it, not a special one
/// (`ValidateNonSpecialIP`).
fn external_ips(spec: &Value, old: Option<&Value>, p: &Path) -> Vec<Cause> {
    let existing: Vec<&str> = old
        .and_then(|o| o.pointer("/spec/externalIPs"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (i, ip) in list(spec, "externalIPs").iter().enumerate() {
        let ip = ip.as_str().unwrap_or_default();
        match net::parse_ip(ip) {
            None => out.push(invalid_str(&p.index(i), ip, net::INVALID_IP)),
            Some(parsed) if !existing.contains(&ip) => {
                out.extend(
                    net::special_ip_errors(&parsed, ip).iter().map(|m| invalid_str(&p.index(i), ip, m)),
                );
            }
            Some(_) => {}
        }
    }
    out
}

/// `validateServicePort`.
fn validate_port(port: &Value, require_name: bool, seen: &mut BTreeSet<String>, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = string(port, "name");
    if require_name && name.is_empty() {
        out.push(req(&p.child("name"), ""));
    } else if !name.is_empty() {
        out.extend(names::dns1123_label(name).iter().map(|m| invalid_str(&p.child("name"), name, m)));
        if !seen.insert(name.to_owned()) {
            out.push(duplicate(p.child("name").as_str(), Bad::Str(name.to_owned())));
        }
    }
    let number = int(port, "port").unwrap_or(0);
    out.extend(names::port_num(number).iter().map(|m| invalid_int(&p.child("port"), number, m)));
    match string(port, "protocol") {
        "" => out.push(req(&p.child("protocol"), "")),
        proto if !enums::PROTOCOL.contains(&proto) => {
            out.push(unsupported(&p.child("protocol"), proto, &sorted(enums::PROTOCOL)));
        }
        _ => {}
    }
    // The server defaults targetPort to port; kubesim does too.
    out.extend(port_num_or_name(port.get("targetPort").or(port.get("port")), &p.child("targetPort")));
    if let Some(app) = port.get("appProtocol").and_then(Value::as_str) {
        out.extend(crate::meta::label_name(app, &p.child("appProtocol")));
    }
    out
}

/// `ValidateServiceClusterIPsRelatedFields`: families, policy, `clusterIPs` in step with
/// `clusterIP`, each a valid IP but a leading `None`, at most two. (The dual-stack family
/// checks that follow in the server are left out.)
fn cluster_ip_fields(spec: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if string(spec, "type") == "ExternalName" {
        return out;
    }
    let ips = cluster_ips(spec);
    let families_path = p.child("ipFamilies");
    let mut seen = BTreeSet::new();
    for (i, family) in list(spec, "ipFamilies").iter().filter_map(Value::as_str).enumerate() {
        if !matches!(family, "IPv4" | "IPv6") {
            out.push(unsupported(&families_path.index(i), family, &sorted(&["IPv4", "IPv6"])));
        }
        if !seen.insert(family) {
            out.push(duplicate(families_path.index(i).as_str(), Bad::Str(family.to_owned())));
        }
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").and_then(Value::as_str)
        && !enums::IP_FAMILY_POLICY.contains(&policy)
    {
        out.push(unsupported(&p.child("ipFamilyPolicy"), policy, &sorted(enums::IP_FAMILY_POLICY)));
    }
    let ips_value = crate::field::go_string_list(spec.get("clusterIPs"));
    if let Some(first) = ips.first()
        && *first != string(spec, "clusterIP")
    {
        out.push(invalid(
            p.child("clusterIPs").as_str(),
            Bad::Raw(ips_value.clone()),
            "first value must match `clusterIP`",
        ));
    }
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && *ip == "None" {
            if ips.len() > 1 {
                out.push(invalid(
                    p.child("clusterIPs").as_str(),
                    Bad::Raw(ips_value.clone()),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        // IsValidIPForLegacyField (StrictIPCIDRValidation is off in 1.33: IsValidIP).
        if net::parse_ip(ip).is_none() {
            out.push(invalid_str(&p.child("clusterIPs").index(i), ip, net::INVALID_IP));
        }
    }
    if ips.len() > 2 {
        out.push(invalid(
            p.child("clusterIPs").as_str(),
            Bad::Raw(ips_value),
            "may only hold up to 2 values",
        ));
    }
    out
}

/// `validateUpgradeDowngradeClusterIPs`, the loadBalancerClass and healthCheckNodePort
/// update rules.
fn validate_update(spec: &Value, old: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let external = |s: &Value| string(s, "type") == "ExternalName";
    let skip = external(spec) || external(old) || (headless(spec) && headless(old));
    if !skip {
        let (new_ips, old_ips) = (cluster_ips(spec), cluster_ips(old));
        let bad = || Bad::Raw(crate::field::go_string_list(spec.get("clusterIPs")));
        if new_ips.len() == old_ips.len() {
            for (i, ip) in old_ips.iter().enumerate() {
                if new_ips[i] != *ip {
                    out.push(invalid(
                        p.child("clusterIPs").index(i).as_str(),
                        bad(),
                        "may not change once set",
                    ));
                }
            }
        } else if new_ips.is_empty() {
            out.push(invalid(
                p.child("clusterIPs").index(0).as_str(),
                bad(),
                "primary clusterIP can not be unset",
            ));
        } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
            out.push(invalid(p.child("clusterIPs").index(0).as_str(), bad(), "may not change once set"));
        }
    }
    if string(spec, "type") == "LoadBalancer"
        && string(old, "type") == "LoadBalancer"
        && spec.get("loadBalancerClass") != old.get("loadBalancerClass")
    {
        let bad = spec.get("loadBalancerClass").map_or(Bad::Data(Value::Null), Bad::of);
        out.push(invalid(p.child("loadBalancerClass").as_str(), bad, "may not change once set"));
    }
    out
}
