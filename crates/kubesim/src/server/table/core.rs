//! The tables of the core kinds but Pod (`printNode`, `printService`,
//! `printPersistentVolume(Claim)`, `printEndpoints`, `printEvent`, `printNamespace`,
//! `printConfigMap`, `printSecret`, `printServiceAccount`, `printReplicationController`,
//! `printResourceQuota` in `pkg/printers/internalversion/printers.go`).

use serde_json::{Value, json};

use super::format::{age, deleting, items, labels, len, name, since, text, text_or, time};
use super::{Column, Printer, Row, age_col, col, containers_cols, docs, name_col, wide};
use k8s_openapi::api::core::v1 as core;

pub(super) fn printers() -> Vec<Printer> {
    let p = |kind, columns, row| Printer { group: "", kind, columns, row };
    vec![
        p("Node", node_columns, node),
        p("Service", service_columns, service),
        p("PersistentVolume", pv_columns, pv),
        p("PersistentVolumeClaim", pvc_columns, pvc),
        p("Endpoints", endpoints_columns, endpoints),
        p("Event", event_columns, event),
        Printer { group: "events.k8s.io", kind: "Event", columns: event_columns, row: event },
        p("Namespace", namespace_columns, |o| vec![name(o), json!(text(o, "/status/phase")), age(o)].into()),
        p("ConfigMap", configmap_columns, |o| {
            vec![name(o), json!(len(o, "/data") + len(o, "/binaryData")), age(o)].into()
        }),
        p("Secret", secret_columns, |o| {
            vec![name(o), json!(text(o, "/type")), json!(len(o, "/data")), age(o)].into()
        }),
        p("ServiceAccount", || vec![name_col(), age_col()], |o| vec![name(o), age(o)].into()),
        p("ReplicationController", rc_columns, rc),
        p("ResourceQuota", quota_columns, quota),
    ]
}

fn node_columns() -> Vec<Column> {
    let info = docs::field::<core::NodeSystemInfo>;
    let addresses = || docs::field::<core::NodeStatus>("addresses");
    vec![
        name_col(),
        col("Status", "string", "The status of the node"),
        col("Roles", "string", "The roles of the node"),
        age_col(),
        col("Version", "string", info("kubeletVersion")),
        wide("Internal-IP", "string", addresses()),
        wide("External-IP", "string", addresses()),
        wide("OS-Image", "string", info("osImage")),
        wide("Kernel-Version", "string", info("kernelVersion")),
        wide("Container-Runtime", "string", info("containerRuntimeVersion")),
    ]
}

/// STATUS is `Ready` or `NotReady` (`Unknown` without the condition), with
/// `SchedulingDisabled` for a cordoned node; ROLES come from the `node-role.kubernetes.io/<role>`
/// and `kubernetes.io/role` labels.
fn node(o: &Value) -> Row {
    let mut status = match items(o, "/status/conditions").iter().rev().find(|c| c["type"] == "Ready") {
        Some(c) if c["status"] == "True" => vec!["Ready"],
        Some(_) => vec!["NotReady"],
        None => vec!["Unknown"],
    };
    if o.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<&str> = o
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role),
            Some(_) => None,
            None => v.as_str().filter(|v| k == "kubernetes.io/role" && !v.is_empty()),
        })
        .collect();
    roles.sort_unstable();
    roles.dedup();
    let address = |type_: &str| {
        items(o, "/status/addresses")
            .iter()
            .find(|a| a["type"] == type_)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_owned()
    };
    let info = |field: &str| text_or(o, &format!("/status/nodeInfo/{field}"), "<unknown>");
    vec![
        name(o),
        json!(status.join(",")),
        json!(if roles.is_empty() { "<none>".to_owned() } else { roles.join(",") }),
        age(o),
        json!(text(o, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
    .into()
}

fn service_columns() -> Vec<Column> {
    let spec = docs::field::<core::ServiceSpec>;
    vec![
        name_col(),
        col("Type", "string", spec("type")),
        col("Cluster-IP", "string", spec("clusterIP")),
        col("External-IP", "string", spec("externalIPs")),
        col("Port(s)", "string", spec("ports")),
        age_col(),
        wide("Selector", "string", spec("selector")),
    ]
}

/// `getServiceExternalIP` as the server calls it (wide, so load balancer addresses are
/// not shortened).
fn external_ip(o: &Value) -> String {
    let external: Vec<&str> = items(o, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
    match text(o, "/spec/type").as_str() {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".into(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut lb: Vec<&str> = items(o, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| i["ip"].as_str().filter(|s| !s.is_empty()).or_else(|| i["hostname"].as_str()))
                .filter(|s| !s.is_empty())
                .collect();
            lb.sort_unstable();
            lb.dedup();
            lb.extend(external);
            if lb.is_empty() { "<pending>".into() } else { lb.join(",") }
        }
        "ExternalName" => text(o, "/spec/externalName"),
        _ => "<unknown>".into(),
    }
}

fn service(o: &Value) -> Row {
    let ports: Vec<String> = items(o, "/spec/ports")
        .iter()
        .map(|p| {
            let (port, proto) = (p["port"].as_i64().unwrap_or(0), p["protocol"].as_str().unwrap_or_default());
            match p["nodePort"].as_i64().filter(|n| *n > 0) {
                Some(node_port) => format!("{port}:{node_port}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    vec![
        name(o),
        json!(text(o, "/spec/type")),
        json!(text_or(o, "/spec/clusterIPs/0", "<none>")),
        json!(external_ip(o)),
        json!(if ports.is_empty() { "<none>".to_owned() } else { ports.join(",") }),
        age(o),
        json!(labels(o, "/spec/selector")),
    ]
    .into()
}

/// `helper.GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order.
fn access_modes(o: &Value, pointer: &str) -> String {
    let modes = items(o, pointer);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.iter().any(|m| m == mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// A quantity as stored, `0` when unset (Go's zero `Quantity`).
fn quantity(o: &Value, pointer: &str) -> String {
    match o.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

const BETA_CLASS: &str = "/metadata/annotations/volume.beta.kubernetes.io~1storage-class";

fn pv_columns() -> Vec<Column> {
    let (spec, status) =
        (docs::field::<core::PersistentVolumeSpec>, docs::field::<core::PersistentVolumeStatus>);
    vec![
        name_col(),
        col("Capacity", "string", spec("capacity")),
        col("Access Modes", "string", spec("accessModes")),
        col("Reclaim Policy", "string", spec("persistentVolumeReclaimPolicy")),
        col("Status", "string", status("phase")),
        col("Claim", "string", spec("claimRef")),
        col("StorageClass", "string", "StorageClass of the pv"),
        col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
        col("Reason", "string", status("reason")),
        age_col(),
        wide("VolumeMode", "string", spec("volumeMode")),
    ]
}

fn pv(o: &Value) -> Row {
    let claim = match o.pointer("/spec/claimRef").filter(|c| c.is_object()) {
        Some(c) => format!(
            "{}/{}",
            c["namespace"].as_str().unwrap_or_default(),
            c["name"].as_str().unwrap_or_default()
        ),
        None => String::new(),
    };
    let phase = if deleting(o) { "Terminating".to_owned() } else { text(o, "/status/phase") };
    let class = o
        .pointer(BETA_CLASS)
        .and_then(Value::as_str)
        .map_or_else(|| text(o, "/spec/storageClassName"), str::to_owned);
    vec![
        name(o),
        json!(quantity(o, "/spec/capacity/storage")),
        json!(access_modes(o, "/spec/accessModes")),
        json!(text(o, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase),
        json!(claim),
        json!(class),
        json!(text_or(o, "/spec/volumeAttributesClassName", "<unset>")),
        json!(text(o, "/status/reason")),
        age(o),
        json!(text_or(o, "/spec/volumeMode", "<unset>")),
    ]
    .into()
}

fn pvc_columns() -> Vec<Column> {
    let (spec, status) =
        (docs::field::<core::PersistentVolumeClaimSpec>, docs::field::<core::PersistentVolumeClaimStatus>);
    vec![
        name_col(),
        col("Status", "string", status("phase")),
        col("Volume", "string", spec("volumeName")),
        col("Capacity", "string", status("capacity")),
        col("Access Modes", "string", status("accessModes")),
        col("StorageClass", "string", "StorageClass of the pvc"),
        col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
        age_col(),
        wide("VolumeMode", "string", spec("volumeMode")),
    ]
}

fn pvc(o: &Value) -> Row {
    let phase = if deleting(o) { "Terminating".to_owned() } else { text(o, "/status/phase") };
    let volume = text(o, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (quantity(o, "/status/capacity/storage"), access_modes(o, "/status/accessModes"))
    };
    let class = o
        .pointer(BETA_CLASS)
        .and_then(Value::as_str)
        .map_or_else(|| text(o, "/spec/storageClassName"), str::to_owned);
    vec![
        name(o),
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(text_or(o, "/spec/volumeAttributesClassName", "<unset>")),
        age(o),
        json!(text_or(o, "/spec/volumeMode", "<unset>")),
    ]
    .into()
}

fn endpoints_columns() -> Vec<Column> {
    vec![name_col(), col("Endpoints", "string", docs::field::<core::Endpoints>("subsets")), age_col()]
}

/// `formatEndpoints`: up to three `ip:port` (or `ip` for a subset without ports), then
/// `+ N more...`; `<none>` without subsets.
fn endpoints(o: &Value) -> Row {
    let subsets = items(o, "/subsets");
    if subsets.is_empty() {
        return vec![name(o), json!("<none>"), age(o)].into();
    }
    const MAX: usize = 3;
    let (mut list, mut more, mut count) = (Vec::new(), false, 0);
    for ss in subsets {
        let addresses = items(ss, "/addresses");
        let ip = |a: &Value| a["ip"].as_str().unwrap_or_default().to_owned();
        let ports = items(ss, "/ports");
        if ports.is_empty() {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(ip(a));
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                let (ip, port) = (ip(a), port["port"].as_i64().unwrap_or(0));
                list.push(if ip.contains(':') { format!("[{ip}]:{port}") } else { format!("{ip}:{port}") });
            }
        }
    }
    let joined = list.join(",");
    let cell = if more { format!("{joined} + {} more...", count - MAX) } else { joined };
    vec![name(o), json!(cell), age(o)].into()
}

fn event_columns() -> Vec<Column> {
    let ev = docs::field::<core::Event>;
    vec![
        col("Last Seen", "string", ev("lastTimestamp")),
        col("Type", "string", ev("type")),
        col("Reason", "string", ev("reason")),
        col("Object", "string", ev("involvedObject")),
        wide("Subobject", "string", docs::field::<core::ObjectReference>("fieldPath")),
        wide("Source", "string", ev("source")),
        col("Message", "string", ev("message")),
        wide("First Seen", "string", ev("firstTimestamp")),
        wide("Count", "string", ev("count")),
        Column { format: "name", ..wide("Name", "string", docs::meta_name()) },
    ]
}

/// A core Event field, or its `events.k8s.io/v1` name when the table is of that API.
fn ev<'a>(o: &'a Value, core: &str, events: &str) -> &'a Value {
    match o.get(core) {
        Some(v) if !v.is_null() => v,
        _ => o.get(events).unwrap_or(&Value::Null),
    }
}

fn event(o: &Value) -> Row {
    let stamp = |v: &Value| v.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let first = match stamp(ev(o, "firstTimestamp", "deprecatedFirstTimestamp")) {
        Some(t) => since(Some(t)),
        None => since(time(o, "/eventTime")),
    };
    let mut last = stamp(ev(o, "lastTimestamp", "deprecatedLastTimestamp"))
        .map_or_else(|| first.clone(), |t| since(Some(t)));
    let mut count = ev(o, "count", "deprecatedCount").as_i64().unwrap_or(0);
    if let Some(series) = o.get("series").filter(|s| s.is_object()) {
        last = since(time(series, "/lastObservedTime"));
        count = series["count"].as_i64().unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let involved = ev(o, "involvedObject", "regarding");
    let kind = involved["kind"].as_str().unwrap_or_default().to_lowercase();
    let target = match involved["name"].as_str().filter(|n| !n.is_empty()) {
        Some(n) => format!("{kind}/{n}"),
        None => kind,
    };
    let source = ev(o, "source", "deprecatedSource");
    let first_of = |a: &Value, b: &Value| {
        a.as_str().filter(|s| !s.is_empty()).or(b.as_str()).unwrap_or_default().to_owned()
    };
    let component = first_of(&source["component"], ev(o, "reportingComponent", "reportingController"));
    let instance = first_of(&source["host"], &o["reportingInstance"]);
    let source = if instance.is_empty() { component } else { format!("{component}, {instance}") };
    vec![
        json!(last),
        json!(text(o, "/type")),
        json!(text(o, "/reason")),
        json!(target),
        json!(involved["fieldPath"].as_str().unwrap_or_default()),
        json!(source),
        json!(ev(o, "message", "note").as_str().unwrap_or_default().trim()),
        json!(first),
        json!(count),
        name(o),
    ]
    .into()
}

fn namespace_columns() -> Vec<Column> {
    vec![name_col(), col("Status", "string", "The status of the namespace"), age_col()]
}

fn configmap_columns() -> Vec<Column> {
    vec![name_col(), col("Data", "string", docs::field::<core::ConfigMap>("data")), age_col()]
}

fn secret_columns() -> Vec<Column> {
    let secret = docs::field::<core::Secret>;
    vec![name_col(), col("Type", "string", secret("type")), col("Data", "string", secret("data")), age_col()]
}

fn rc_columns() -> Vec<Column> {
    let (spec, status) =
        (docs::field::<core::ReplicationControllerSpec>, docs::field::<core::ReplicationControllerStatus>);
    let [containers, images] = containers_cols();
    vec![
        name_col(),
        col("Desired", "integer", spec("replicas")),
        col("Current", "integer", status("replicas")),
        col("Ready", "integer", status("readyReplicas")),
        age_col(),
        containers,
        images,
        wide("Selector", "string", spec("selector")),
    ]
}

fn rc(o: &Value) -> Row {
    super::apps::replicated(o, labels(o, "/spec/selector"))
}

fn quota_columns() -> Vec<Column> {
    vec![
        name_col(),
        col(
            "Request",
            "string",
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        col(
            "Limit",
            "string",
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
        age_col(),
    ]
}

/// `resource: used/hard` for each hard limit, sorted; `limits.*` in the Limit column.
fn quota(o: &Value) -> Row {
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for (resource, hard) in o.pointer("/status/hard").and_then(Value::as_object).into_iter().flatten() {
        let used = quantity(o, &format!("/status/used/{}", resource.replace('~', "~0").replace('/', "~1")));
        let hard = hard.as_str().map_or_else(|| hard.to_string(), str::to_owned);
        let entry = format!("{resource}: {used}/{hard}");
        let pieces: Vec<&str> = resource.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" { limit.push(entry) } else { request.push(entry) }
    }
    vec![name(o), json!(request.join(", ")), json!(limit.join(", ")), age(o)].into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_show_readiness_roles_and_info() {
        let n = json!({"metadata": {"name": "n", "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}], "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "x"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}]}});
        let cells = node(&n).cells;
        assert_eq!(cells[1], "NotReady,SchedulingDisabled");
        assert_eq!(cells[2], "control-plane,worker");
        assert_eq!(cells[4], "v1.33.0");
        assert_eq!(
            &cells[5..],
            &[json!("10.0.0.2"), json!("<none>"), json!("x"), json!("<unknown>"), json!("<unknown>")]
        );
        assert_eq!(node(&json!({})).cells[1..3], [json!("Unknown"), json!("<none>")]);
    }

    #[test]
    fn services_show_node_ports_and_external_addresses() {
        let s = json!({"spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.9"], "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
            "selector": {"app": "web"}}, "status": {"loadBalancer": {}}});
        let cells = service(&s).cells;
        assert_eq!(
            cells[1..5],
            [json!("LoadBalancer"), json!("10.96.0.9"), json!("<pending>"), json!("80:30080/TCP")]
        );
        assert_eq!(cells[6], "app=web");
        let none = service(&json!({"spec": {"type": "ClusterIP"}})).cells;
        assert_eq!(none[2..5], [json!("<none>"), json!("<none>"), json!("<none>")]);
    }

    #[test]
    fn endpoints_list_three_addresses_then_how_many_more() {
        let e = json!({"subsets": [{"addresses": [{"ip": "1.1.1.1"}, {"ip": "1.1.1.2"}], "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(endpoints(&e).cells[1], "1.1.1.1:80,1.1.1.2:80,1.1.1.1:443 + 1 more...");
        assert_eq!(endpoints(&json!({})).cells[1], "<none>");
    }

    #[test]
    fn events_of_both_apis() {
        let core = json!({"metadata": {"name": "e1"}, "type": "Normal", "reason": "Started", "message": " hi \n",
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
            "source": {"component": "kubelet", "host": "n1"}, "count": 3});
        let cells = event(&core).cells;
        assert_eq!(
            cells[1..7],
            [
                json!("Normal"),
                json!("Started"),
                json!("pod/p"),
                json!("spec.containers{c}"),
                json!("kubelet, n1"),
                json!("hi")
            ]
        );
        assert_eq!(cells[8], 3);
        let new = json!({"metadata": {"name": "e2"}, "regarding": {"kind": "Deployment", "name": "d"}, "note": "x",
            "reportingController": "deployment-controller"});
        let cells = event(&new).cells;
        assert_eq!(
            cells[3..7],
            [json!("deployment/d"), json!(""), json!("deployment-controller"), json!("x")]
        );
        assert_eq!(cells[8], 1);
    }

    #[test]
    fn quotas_split_requests_and_limits() {
        let q = json!({"status": {"hard": {"pods": "10", "limits.cpu": "2", "requests.memory": "1Gi"}, "used": {"pods": "1"}}});
        assert_eq!(
            quota(&q).cells[1..3],
            [json!("pods: 1/10, requests.memory: 0/1Gi"), json!("limits.cpu: 0/2")]
        );
    }
}
