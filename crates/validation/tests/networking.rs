//! Ingress and NetworkPolicy (pkg/apis/networking/validation/validation.go): normal
//! objects give no causes; each rule's cause is worded as the named Go function words it.

mod common;

use common::*;
use ctop_validation::{validate, validate_update};
use serde_json::{Value, json};

fn ingress() -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "ingressClassName": "nginx",
            "rules": [{"host": "web.example.com", "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}},
            }]}}],
            "tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}],
        },
    })
}

fn path0(ing: &mut Value) -> &mut Value {
    &mut ing["spec"]["rules"][0]["http"]["paths"][0]
}

#[test]
fn plain_ingress_and_wildcard_host_are_valid() {
    assert_eq!(errors(&validate(&INGRESS, &ingress())), Vec::<String>::new());
    let mut ing = ingress();
    ing["spec"]["rules"][0]["host"] = json!("*.example.com");
    ing["spec"]["tls"][0]["hosts"] = json!(["*.example.com"]);
    path0(&mut ing)["pathType"] = json!("ImplementationSpecific");
    path0(&mut ing)["backend"]["service"]["port"] = json!({"name": "http"});
    assert_eq!(errors(&validate(&INGRESS, &ing)), Vec::<String>::new());
    let backend_only = json!({"metadata": {"name": "d"}, "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 8080}}}}});
    assert_eq!(errors(&validate(&INGRESS, &backend_only)), Vec::<String>::new());
}

/// ValidateIngressSpec: `either `defaultBackend` or `rules` must be specified`.
#[test]
fn ingress_needs_rules_or_default_backend() {
    let ing = json!({"metadata": {"name": "e"}, "spec": {}});
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
        ]
    );
}

/// validateHTTPIngressPath: pathType required (and nothing else checked), enum, absolute
/// path for Prefix/Exact, invalid sequences.
#[test]
fn ingress_path_rules() {
    let mut ing = ingress();
    path0(&mut ing).as_object_mut().map(|p| p.remove("pathType"));
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec!["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]
    );
    path0(&mut ing)["pathType"] = json!("Regex");
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec.rules[0].http.paths[0].pathType: Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""
        ]
    );
    path0(&mut ing)["pathType"] = json!("Exact");
    path0(&mut ing)["path"] = json!("api//v1/..");
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec.rules[0].http.paths[0].path: Invalid value: \"api//v1/..\": must be an absolute path",
            "spec.rules[0].http.paths[0].path: Invalid value: \"api//v1/..\": must not contain '//'",
            "spec.rules[0].http.paths[0].path: Invalid value: \"api//v1/..\": cannot end with '/..'",
        ]
    );
    let mut ing = ingress();
    ing["spec"]["rules"][0]["http"]["paths"] = json!([]);
    assert_eq!(errors(&validate(&INGRESS, &ing)), vec!["spec.rules[0].http.paths: Required value"]);
}

/// validateIngressBackend: service name (DNS-1035), port name xor number.
#[test]
fn ingress_backend_rules() {
    let mut ing = ingress();
    path0(&mut ing)["backend"]["service"] = json!({"name": "1web", "port": {"name": "http", "number": 80}});
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec.rules[0].http.paths[0].backend.service.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.rules[0].http.paths[0].backend: Invalid value: \"\": cannot set both port name & port number",
        ]
    );
    path0(&mut ing)["backend"]["service"] = json!({"name": "", "port": {}});
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec.rules[0].http.paths[0].backend.service.name: Required value",
            "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
        ]
    );
    path0(&mut ing)["backend"] = json!({});
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec.rules[0].http.paths[0].backend: Invalid value: \"\": resource or service backend is required"
        ]
    );
    path0(&mut ing)["backend"] = json!({"service": {"name": "web", "port": {"number": 70000}}});
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec.rules[0].http.paths[0].backend.service.port.number: Invalid value: 70000: must be between 1 and 65535, inclusive"
        ]
    );
}

/// validateIngressRules (host: not an IP, wildcard form), validateIngressTLS, the
/// ingressClassName subdomain and, on create, the class annotation.
#[test]
fn ingress_hosts_tls_and_class() {
    let mut ing = ingress();
    ing["spec"]["rules"][0]["host"] = json!("10.0.0.1");
    ing["spec"]["tls"][0]["hosts"] = json!(["a.*.example.com"]);
    ing["spec"]["tls"][0]["secretName"] = json!("Web_TLS");
    ing["spec"]["ingressClassName"] = json!("Nginx");
    ing["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "traefik"});
    assert_eq!(
        errors(&validate(&INGRESS, &ing)),
        vec![
            "spec.rules[0].host: Invalid value: \"10.0.0.1\": must be a DNS name, not an IP address",
            "spec.tls[0].hosts[0]: Invalid value: \"a.*.example.com\": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.tls[0].secretName: Invalid value: \"Web_TLS\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "spec.ingressClassName: Invalid value: \"Nginx\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "annotations.kubernetes.io/ingress.class: Invalid value: \"traefik\": must match `ingressClassName` when both are specified",
        ]
    );
}

/// ValidateIngressUpdate: a stored invalid TLS secret name is tolerated (allowInvalidSecretName),
/// and the class annotation is checked on create only.
#[test]
fn ingress_update_keeps_legacy_secret_name() {
    let mut old = ingress();
    old["spec"]["tls"][0]["secretName"] = json!("Legacy_Name");
    let mut new = old.clone();
    new["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "traefik"});
    assert_eq!(errors(&validate_update(&INGRESS, &new, &old)), Vec::<String>::new());
}

fn network_policy(spec: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np"}, "spec": spec})
}

#[test]
fn deny_all_and_allow_rules_are_valid() {
    let deny_all = network_policy(json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}));
    assert_eq!(errors(&validate(&NETWORK_POLICY, &deny_all)), Vec::<String>::new());
    let allow = network_policy(json!({
        "podSelector": {"matchLabels": {"app": "db"}},
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {}},
                              {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                     "ports": [{"port": 5432}, {"protocol": "TCP", "port": 8000, "endPort": 9000}, {"port": "metrics"}]}],
        "egress": [{"to": [{"ipBlock": {"cidr": "2001:db8::/32"}}]}],
    }));
    assert_eq!(errors(&validate(&NETWORK_POLICY, &allow)), Vec::<String>::new());
}

/// ValidateNetworkPolicyPort: protocol enum (declaration order), endPort ≥ port, endPort
/// only with a numeric port.
#[test]
fn network_policy_ports() {
    let np = network_policy(json!({
        "podSelector": {},
        "ingress": [{"ports": [{"protocol": "ICMP", "port": 9000, "endPort": 8000},
                               {"port": "http", "endPort": 90}, {"endPort": 90}]}],
    }));
    assert_eq!(
        errors(&validate(&NETWORK_POLICY, &np)),
        vec![
            "spec.ingress[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"",
            "spec.ingress[0].ports[0].endPort: Invalid value: 8000: must be greater than or equal to `port`",
            "spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
            "spec.ingress[0].ports[2].endPort: Invalid value: 90: may not be specified when `port` is not specified",
        ]
    );
}

/// ValidateNetworkPolicyPeer and ValidateIPBlock.
#[test]
fn network_policy_peers_and_ip_blocks() {
    let np = network_policy(json!({
        "podSelector": {},
        "egress": [{"to": [{}, {"ipBlock": {"cidr": "10.0.0.0/16"}, "podSelector": {}},
                           {"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24", "10.0.0.0/16", "bad"]}},
                           {"ipBlock": {"cidr": "10.0.0.300/16"}}, {"ipBlock": {}}]}],
    }));
    assert_eq!(
        errors(&validate(&NETWORK_POLICY, &np)),
        vec![
            "spec.egress[0].to[0]: Required value: must specify a peer",
            "spec.egress[0].to[1]: Forbidden: may not specify both ipBlock and another peer",
            "spec.egress[0].to[2].ipBlock.except[0]: Invalid value: \"10.1.0.0/24\": must be a strict subset of `cidr`",
            "spec.egress[0].to[2].ipBlock.except[1]: Invalid value: \"10.0.0.0/16\": must be a strict subset of `cidr`",
            "spec.egress[0].to[2].ipBlock.except[2]: Invalid value: \"bad\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            "spec.egress[0].to[3].ipBlock.cidr: Invalid value: \"10.0.0.300/16\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            "spec.egress[0].to[4].ipBlock.cidr: Required value",
        ]
    );
}

/// ValidateNetworkPolicySpec: policyTypes (at most two, Ingress/Egress) and the pod selector.
#[test]
fn network_policy_types_and_selector() {
    let np = network_policy(json!({
        "podSelector": {"matchExpressions": [{"key": "app", "operator": "Has"}]},
        "policyTypes": ["Ingress", "egress"],
    }));
    assert_eq!(
        errors(&validate(&NETWORK_POLICY, &np)),
        vec![
            "spec.podSelector.matchExpressions[0].operator: Invalid value: \"Has\": not a valid selector operator",
            "spec.policyTypes[1]: Unsupported value: \"egress\": supported values: \"Ingress\", \"Egress\"",
        ]
    );
    let np = network_policy(json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"]}));
    assert_eq!(
        errors(&validate(&NETWORK_POLICY, &np)),
        vec![
            "spec.policyTypes: Invalid value: []networking.PolicyType{\"Ingress\", \"Egress\", \"Ingress\"}: may not specify more than two policyTypes"
        ]
    );
}
