//! The NetworkPolicy plugin: ingress only to the ports the operator serves, egress only to
//! DNS, the API server and the destinations its scripts may `fetch`.
//!
//! What a script may reach is decided by the runtime, which checks every request against
//! the URL prefixes of `.egress(...)` and `ctop run --egress`; this policy is the network's
//! coarser second line, for when the process itself is subverted. It can only speak of
//! addresses, namespaces and ports, not of names or paths, so each URL maps to the
//! narrowest peer that is still correct in every cluster:
//!
//! | destination host | peer | ports |
//! |---|---|---|
//! | an IP address (`http://10.0.0.7:9000`, `https://[fd00::7]`) | `ipBlock` `/32` or `/128` | the URL's port; none for `:*` |
//! | an in-cluster service (`name.ns.svc`, `name.ns.svc.cluster.local`, `*.ns.svc`) | `namespaceSelector` `kubernetes.io/metadata.name: ns` | none (see below) |
//! | every service (`*.svc`, `*.svc.cluster.local`) | `namespaceSelector: {}` | none |
//! | any other DNS name or wildcard (`api.github.com`, `*.example.com`) | `0.0.0.0/0` and `::/0` except link-local and cloud metadata addresses | the URL's port; none for `:*` |
//!
//! - A DNS name has no address a policy could name: it resolves at run time, often to
//!   addresses shared with other sites (CDNs). So names open the URL's port to every
//!   address except the link-local ranges `169.254.0.0/16` and `fe80::/10`, where clouds
//!   serve instance metadata and credentials (`169.254.169.254`), and the two metadata
//!   addresses outside them (Alibaba's `100.100.100.200`, AWS's IPv6 `fd00:ec2::254`).
//! - A service's port in the URL is the Service's, while a policy matches the pod's port
//!   after the Service has translated it (often 80 → 8080), which the manifests cannot
//!   know; a port there would block the common case, so the namespace is the limit.
//! - Fixed rules come first: DNS (UDP and TCP 53, any destination: the cluster DNS Service,
//!   a node-local cache on a link-local address or the node's resolver) and the API server
//!   (TCP 443 and 6443, any destination: policies see the Service's endpoints, the control
//!   plane's addresses, which are no pods, differ per cluster and, being node addresses
//!   in self-hosted clusters, are not even matched by `ipBlock` on Cilium by default).
//!   Then one rule per peer with the ports of every URL that maps to it, without repeats:
//!   443 and 6443 add nothing (the API server rule opens them everywhere), a peer also
//!   given with `:*` is open on every port, and `*.svc` makes one namespace's rule moot.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ctop_core::{EgressHost, EgressRule};
use serde_json::{Value, json};

use crate::plugin::{Context, Plugin, PluginError};

/// Metadata addresses outside the link-local ranges: Alibaba Cloud's and AWS's IPv6 one.
const METADATA_V4: &str = "100.100.100.200/32";
const METADATA_V6: &str = "fd00:ec2::254/128";

/// Ports of the API server: 443 is the `kubernetes` Service's and most managed control
/// planes'; 6443 is kube-apiserver's own, which the Service's endpoints usually are.
const API_SERVER_PORTS: [u16; 2] = [443, 6443];

/// Adds a NetworkPolicy for the operator's pods: ingress only on the ports they serve
/// ([`Context::ports`]: metrics, health, and the webhook once generated); egress only to
/// DNS, the API server and the fetch destinations ([`Context::egress`]: the scripts'
/// `.egress(...)` and [`Options::egress`](crate::Options::egress)), mapped to peers as the
/// [module docs](self) describe.
#[derive(Clone, Copy, Debug, Default)]
pub struct NetworkPolicy;

impl Plugin for NetworkPolicy {
    fn name(&self) -> &str {
        "network-policy"
    }

    fn apply(&self, ctx: &Context<'_>, docs: &mut Vec<Value>) -> Result<(), PluginError> {
        let ports: Vec<Value> = ctx.ports().iter().map(|p| tcp(p.port)).collect();
        docs.push(json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": ctx.metadata(ctx.name()),
            "spec": {
                "podSelector": {"matchLabels": ctx.selector()},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"ports": ports}],
                "egress": egress(ctx.egress()),
            },
        }));
        Ok(())
    }
}

/// Who an egress rule lets the pods reach. Ordered as the rules are written.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Peer {
    /// Every address but the link-local and metadata ones.
    Outside,
    /// Pods of every namespace.
    AllNamespaces,
    /// Pods of this namespace.
    Namespace(String),
    /// This address.
    Ip(IpAddr),
}

/// The TCP ports open to a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ports {
    /// Every port (and protocol).
    Any,
    /// These.
    Tcp(BTreeSet<u16>),
}

/// The egress rules: DNS, the API server, then one per destination peer.
fn egress<'r>(rules: impl IntoIterator<Item = &'r EgressRule>) -> Vec<Value> {
    let mut peers: BTreeMap<Peer, Ports> = BTreeMap::new();
    for rule in rules {
        let (peer, port) = peer(rule);
        let ports = peers.entry(peer).or_insert_with(|| Ports::Tcp(BTreeSet::new()));
        match (ports, port) {
            (Ports::Any, _) => {}
            (ports, None) => *ports = Ports::Any,
            (Ports::Tcp(set), Some(p)) => {
                set.insert(p);
            }
        }
    }
    // Services are open on every port (see `peer`), so every namespace covers each one.
    let all_namespaces = peers.contains_key(&Peer::AllNamespaces);
    let mut out = vec![dns(), api_server()];
    for (peer, mut ports) in peers {
        if all_namespaces && matches!(peer, Peer::Namespace(_)) {
            continue;
        }
        if let Ports::Tcp(set) = &mut ports {
            set.retain(|p| !API_SERVER_PORTS.contains(p));
            if set.is_empty() {
                continue;
            }
        }
        let to = match &peer {
            Peer::Outside => outside(),
            Peer::AllNamespaces => json!([{"namespaceSelector": {}}]),
            Peer::Namespace(ns) => {
                json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}])
            }
            Peer::Ip(ip) => {
                let bits = if ip.is_ipv4() { 32 } else { 128 };
                json!([{"ipBlock": {"cidr": format!("{ip}/{bits}")}}])
            }
        };
        out.push(match ports {
            Ports::Any => json!({"to": to}),
            Ports::Tcp(set) => json!({"to": to, "ports": set.into_iter().map(tcp).collect::<Vec<_>>()}),
        });
    }
    out
}

/// The peer of a URL prefix, and its port (`None`: any).
fn peer(rule: &EgressRule) -> (Peer, Option<u16>) {
    match &rule.host {
        EgressHost::Ip(ip) => (Peer::Ip(*ip), rule.exact_port()),
        host => match in_cluster(host) {
            Some(peer) => (peer, None),
            None => (Peer::Outside, rule.exact_port()),
        },
    }
}

/// The namespace(s) of an in-cluster service name: `name.ns.svc[.cluster.local]` (also a
/// pod of a headless service, `pod.name.ns.svc`), `*.ns.svc[.cluster.local]`, or every
/// namespace for `*.svc[.cluster.local]`. `None` for any other name.
fn in_cluster(host: &EgressHost) -> Option<Peer> {
    let (name, wildcard) = match host {
        EgressHost::Name(name) => (name.as_str(), false),
        EgressHost::Subdomains(suffix) => (suffix.as_str(), true),
        EgressHost::Ip(_) => return None,
    };
    let before = ["svc.cluster.local", "svc"]
        .into_iter()
        .find_map(|svc| if name == svc { Some("") } else { name.strip_suffix(svc)?.strip_suffix('.') })?;
    let labels: Vec<&str> = before.split('.').filter(|l| !l.is_empty()).collect();
    match labels.last() {
        None if wildcard => Some(Peer::AllNamespaces),
        Some(ns) if wildcard || labels.len() >= 2 => Some(Peer::Namespace((*ns).to_owned())),
        _ => None,
    }
}

fn tcp(port: u16) -> Value {
    json!({"port": port, "protocol": "TCP"})
}

/// Every address but the link-local ranges (instance metadata and credentials on every
/// cloud) and the metadata addresses outside them.
fn outside() -> Value {
    json!([
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": [METADATA_V4, "169.254.0.0/16"]}},
        {"ipBlock": {"cidr": "::/0", "except": [METADATA_V6, "fe80::/10"]}},
    ])
}

/// Name resolution: UDP and TCP 53 to any address. The resolver may be the cluster DNS
/// Service, a node-local cache on a link-local address (`169.254.20.10`) or the node's own,
/// so no destination is named.
fn dns() -> Value {
    json!({"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]})
}

/// The API server: TCP 443 and 6443 to any address.
///
/// No narrower destination can be written portably. The operator dials the `kubernetes`
/// Service's cluster IP, which differs per cluster; network plugins apply policy after the
/// Service has been translated to its endpoints, and those are the control plane's
/// addresses: node IPs of a self-hosted cluster, a managed provider's addresses outside the
/// cluster, changing on upgrades. They are not pods, so no pod or namespace selector
/// matches them; an `ipBlock` of them would have to be written per cluster; and not even
/// `0.0.0.0/0` is safe: Cilium does not match node addresses with `ipBlock` unless
/// configured to (`policy-cidr-match-mode: nodes`), which breaks self-hosted clusters (see
/// cert-manager#8285, cilium#20550). So the ports are the limit. A cluster whose API
/// server listens on another port (minikube: 8443) needs a rule added.
fn api_server() -> Value {
    json!({"ports": API_SERVER_PORTS.map(tcp)})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(urls: &[&str]) -> Vec<EgressRule> {
        urls.iter().map(|u| u.parse().unwrap_or_else(|e| panic!("{e}"))).collect()
    }

    /// The rules after DNS and the API server.
    fn destinations(urls: &[&str]) -> Vec<Value> {
        let all = egress(&rules(urls));
        assert_eq!(all[..2], [dns(), api_server()]);
        all[2..].to_vec()
    }

    fn namespace(ns: &str) -> Value {
        json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}])
    }

    #[test]
    fn dns_and_the_api_server_always() {
        assert_eq!(
            egress(&[] as &[EgressRule]),
            [
                json!({"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]}),
                json!({"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]}),
            ]
        );
    }

    #[test]
    fn an_ip_is_a_host_block_on_its_port() {
        assert_eq!(
            destinations(&["http://10.0.0.7:9000/v1", "http://[fd00::7]"]),
            [
                json!({"to": [{"ipBlock": {"cidr": "10.0.0.7/32"}}], "ports": [tcp(9000)]}),
                json!({"to": [{"ipBlock": {"cidr": "fd00::7/128"}}], "ports": [tcp(80)]}),
            ]
        );
        assert_eq!(
            destinations(&["http://10.0.0.7:*"]),
            [json!({"to": [{"ipBlock": {"cidr": "10.0.0.7/32"}}]})],
            "any port: no port restriction"
        );
    }

    #[test]
    fn an_in_cluster_service_is_its_namespace() {
        for url in [
            "http://api.tools.svc:8080",
            "http://api.tools.svc.cluster.local",
            "https://*.tools.svc",
            "http://pod-0.db.tools.svc.cluster.local:5432",
            "http://*.tools.svc.cluster.local:*",
        ] {
            assert_eq!(destinations(&[url]), [json!({"to": namespace("tools")})], "{url}");
        }
        assert_eq!(
            destinations(&["http://*.svc.cluster.local"]),
            [json!({"to": [{"namespaceSelector": {}}]})]
        );
        assert_eq!(
            destinations(&["http://api.tools.svc", "http://*.svc", "http://db.apps.svc:5432"]),
            [json!({"to": [{"namespaceSelector": {}}]})],
            "every namespace covers each"
        );
        // Not service names: outside the cluster.
        for url in ["http://tools.svc", "http://svc", "http://a.b.svcx", "http://svc.example.com"] {
            assert_eq!(destinations(&[url]), [json!({"to": outside(), "ports": [tcp(80)]})], "{url}");
        }
    }

    #[test]
    fn names_and_wildcards_are_outside_on_their_port() {
        assert_eq!(
            destinations(&["http://example.com", "https://*.example.com:8443", "http://*.example.org:81/x"]),
            [json!({"to": outside(), "ports": [tcp(80), tcp(81), tcp(8443)]})]
        );
        assert_eq!(destinations(&["http://*.example.com:*"]), [json!({"to": outside()})]);
        // 443 and 6443 are already open everywhere, for the API server.
        assert_eq!(
            destinations(&["https://api.github.com", "https://*.s3.amazonaws.com", "https://10.0.0.1:6443"]),
            Vec::<Value>::new()
        );
        assert_eq!(
            destinations(&["https://a.io", "http://a.io", "https://10.0.0.1"]),
            [json!({"to": outside(), "ports": [tcp(80)]})]
        );
    }

    #[test]
    fn repeats_and_covered_ports_are_dropped() {
        assert_eq!(
            destinations(&[
                "http://10.0.0.7:9000",
                "http://10.0.0.7:9000/other",
                "http://10.0.0.7:9001",
                "HTTP://10.0.0.7:9000",
                "http://a.io:8080",
                "https://b.io:8080",
                "http://api.tools.svc",
                "http://db.tools.svc:5432",
                "http://api.apps.svc",
                "http://10.0.0.8",
                "http://10.0.0.8:*",
                "http://10.0.0.8:81",
            ]),
            [
                json!({"to": outside(), "ports": [tcp(8080)]}),
                json!({"to": namespace("apps")}),
                json!({"to": namespace("tools")}),
                json!({"to": [{"ipBlock": {"cidr": "10.0.0.7/32"}}], "ports": [tcp(9000), tcp(9001)]}),
                json!({"to": [{"ipBlock": {"cidr": "10.0.0.8/32"}}]}),
            ]
        );
    }
}
