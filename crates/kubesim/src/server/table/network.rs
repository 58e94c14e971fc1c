//! The tables of the networking kinds (`printIngress`, `printIngressClass`,
//! `printNetworkPolicy`, `printEndpointSlice` in `pkg/printers/internalversion/printers.go`).
//! The `extensions/v1beta1` and `discovery/v1beta1` documentation the Go printer cites is
//! read from the GA types.

use serde_json::{Value, json};

use super::format::{age, format_selector, items, name, text};
use super::{Column, Printer, Row, age_col, col, docs, name_col};
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;

pub(super) fn printers() -> Vec<Printer> {
    let p = |group, kind, columns, row| Printer { group, kind, columns, row };
    vec![
        p("networking.k8s.io", "Ingress", ingress_columns, ingress),
        p("networking.k8s.io", "IngressClass", ingress_class_columns, ingress_class),
        p("networking.k8s.io", "NetworkPolicy", network_policy_columns, |o| {
            vec![name(o), json!(format_selector(o.pointer("/spec/podSelector"))), age(o)].into()
        }),
        p("discovery.k8s.io", "EndpointSlice", slice_columns, slice),
    ]
}

fn ingress_columns() -> Vec<Column> {
    vec![
        name_col(),
        col(
            "Class",
            "string",
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
        col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
        col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
        col("Ports", "string", "Ports of TLS configurations that open"),
        age_col(),
    ]
}

/// `N + M more...` after the first `max` of `count` entries.
fn with_more(list: &[String], more: bool, count: usize, max: usize) -> String {
    let joined = list.join(",");
    if more { format!("{joined} + {} more...", count - max) } else { joined }
}

/// HOSTS lists up to three rule hosts (`*` when none), ADDRESS the load balancer's IPs or
/// host names (sorted, unshortened as the server builds wide rows), PORTS `80` or
/// `80, 443` with TLS.
fn ingress(o: &Value) -> Row {
    const MAX: usize = 3;
    let rules = items(o, "/spec/rules");
    let mut hosts = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        if let Some(h) = rule["host"].as_str().filter(|h| !more && !h.is_empty()) {
            hosts.push(h.to_owned());
        }
    }
    let hosts = if hosts.is_empty() { "*".to_owned() } else { with_more(&hosts, more, rules.len(), MAX) };
    let mut address: Vec<&str> = items(o, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| i["ip"].as_str().filter(|s| !s.is_empty()).or_else(|| i["hostname"].as_str()))
        .filter(|s| !s.is_empty())
        .collect();
    address.sort_unstable();
    address.dedup();
    let ports = if items(o, "/spec/tls").is_empty() { "80" } else { "80, 443" };
    let class = o.pointer("/spec/ingressClassName").and_then(Value::as_str).unwrap_or("<none>");
    vec![name(o), json!(class), json!(hosts), json!(address.join(",")), json!(ports), age(o)].into()
}

fn ingress_class_columns() -> Vec<Column> {
    vec![
        name_col(),
        col("Controller", "string", "Controller that is responsible for handling this class"),
        col("Parameters", "string", "A reference to a resource with additional parameters"),
        age_col(),
    ]
}

fn ingress_class(o: &Value) -> Row {
    let parameters = match o.pointer("/spec/parameters").filter(|p| p.is_object()) {
        None => "<none>".to_owned(),
        Some(p) => {
            let kind = p["kind"].as_str().unwrap_or_default();
            let group = p["apiGroup"].as_str().map(|g| format!(".{g}")).unwrap_or_default();
            format!("{kind}{group}/{}", p["name"].as_str().unwrap_or_default())
        }
    };
    vec![name(o), json!(text(o, "/spec/controller")), json!(parameters), age(o)].into()
}

fn network_policy_columns() -> Vec<Column> {
    vec![
        name_col(),
        col("Pod-Selector", "string", docs::field::<networking::NetworkPolicySpec>("podSelector")),
        age_col(),
    ]
}

fn slice_columns() -> Vec<Column> {
    let slice = docs::field::<discovery::EndpointSlice>;
    vec![
        name_col(),
        col("AddressType", "string", slice("addressType")),
        col("Ports", "string", slice("ports")),
        col("Endpoints", "string", slice("endpoints")),
        age_col(),
    ]
}

/// PORTS and ENDPOINTS list up to three ports (`*` for a port without number or name)
/// and addresses, `<unset>` when there are none.
fn slice(o: &Value) -> Row {
    const MAX: usize = 3;
    let listed = |values: Vec<String>| {
        let count = values.len();
        let shown: Vec<String> = values.into_iter().take(MAX).collect();
        match with_more(&shown, count > MAX, count, MAX) {
            s if s.is_empty() => "<unset>".to_owned(),
            s => s,
        }
    };
    let ports = items(o, "/ports")
        .iter()
        .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
            (Some(n), _) => n.to_string(),
            (None, Some(name)) => name.to_owned(),
            (None, None) => "*".to_owned(),
        })
        .collect();
    let addresses = items(o, "/endpoints")
        .iter()
        .flat_map(|e| items(e, "/addresses").iter().filter_map(Value::as_str).map(str::to_owned))
        .collect();
    vec![name(o), json!(text(o, "/addressType")), json!(listed(ports)), json!(listed(addresses)), age(o)]
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingress_cells() {
        let i = json!({"spec": {"ingressClassName": "nginx", "rules": [{"host": "a"}, {}, {"host": "b"}, {"host": "c"}, {"host": "d"}],
            "tls": [{}]}, "status": {"loadBalancer": {"ingress": [{"ip": "2.2.2.2"}, {"hostname": "lb"}, {"ip": "1.1.1.1"}]}}});
        let cells = ingress(&i).cells;
        assert_eq!(
            cells[1..5],
            [json!("nginx"), json!("a,b,c + 2 more..."), json!("1.1.1.1,2.2.2.2,lb"), json!("80, 443")]
        );
        assert_eq!(ingress(&json!({})).cells[1..5], [json!("<none>"), json!("*"), json!(""), json!("80")]);
    }

    #[test]
    fn slice_cells() {
        let s = json!({"addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}, {}, {"port": 1}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]});
        assert_eq!(
            slice(&s).cells[1..4],
            [json!("IPv4"), json!("80,x,* + 1 more..."), json!("10.0.0.1,10.0.0.2")]
        );
        assert_eq!(slice(&json!({})).cells[2..4], [json!("<unset>"), json!("<unset>")]);
    }

    #[test]
    fn classes_and_policies() {
        let c = json!({"spec": {"controller": "k8s.io/nginx", "parameters": {"apiGroup": "example.com", "kind": "P", "name": "p"}}});
        assert_eq!(ingress_class(&c).cells[1..3], [json!("k8s.io/nginx"), json!("P.example.com/p")]);
    }
}
