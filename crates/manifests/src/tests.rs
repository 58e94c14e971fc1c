//! Tests of the whole document set; the modules test their own parts.

use ctop_core::OperatorSpec;
use serde_json::{Value, json};

use super::*;

fn spec() -> OperatorSpec {
    serde_json::from_value(json!({
        "resources": [{
            "apiVersion": "apps.example.com/v1", "group": "apps.example.com", "version": "v1",
            "kind": "WebApp", "plural": "webapps", "singular": "webapp", "scope": "Namespaced",
            "shortNames": ["wa"],
            "printerColumns": [{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}],
            "schema": {"type": "object", "required": ["spec"], "properties": {
                "spec": {"type": "object", "required": ["image"], "properties": {
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "default": 1},
                }},
                "status": {"type": "object", "properties": {"phase": {"type": "string", "enum": ["Pending", "Running"]}}},
            }},
            "statusSubresource": true,
        }],
        "controllers": [{
            "index": 0, "name": "webapp", "for": {"apiVersion": "apps.example.com/v1", "kind": "WebApp"},
            "manages": [{"apiVersion": "apps/v1", "kind": "Deployment"}, {"apiVersion": "v1", "kind": "Secret"}],
            "reads": [{"apiVersion": "v1", "kind": "ConfigMap"}],
            "watches": [], "permissions": [], "handlers": ["reconcile"],
        }],
    }))
    .unwrap()
}

fn bundle(byte: u8) -> ScriptBundle {
    ScriptBundle { gz: vec![0x1f, 0x8b, byte], sha256: format!("{byte:02x}").repeat(32) }
}

fn generate_default(options: &Options) -> Manifests {
    generate(&spec(), &bundle(1), options, &[]).unwrap()
}

fn find<'a>(m: &'a Manifests, kind: &str) -> &'a Value {
    m.documents.iter().find(|d| d["kind"] == kind).unwrap_or_else(|| panic!("no {kind}"))
}

fn kinds(m: &Manifests) -> Vec<&str> {
    m.documents.iter().map(|d| d["kind"].as_str().unwrap()).collect()
}

#[test]
fn documents_in_apply_order() {
    let m = generate_default(&Options::new("webapp-operator"));
    assert_eq!(
        kinds(&m),
        [
            "Namespace",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "ConfigMap",
            "Deployment"
        ]
    );
    let ns = find(&m, "Namespace");
    assert_eq!(ns["metadata"]["name"], "webapp-operator-system");
    assert_eq!(ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted");
    // The ControllerStatus CRD is shared by every operator: no namespace, no operator labels.
    assert_eq!(m.documents[2]["metadata"]["name"], "controllerstatuses.ctop.dev");
    for d in &m.documents[3..] {
        if d["kind"] != "ClusterRole" && d["kind"] != "ClusterRoleBinding" {
            assert_eq!(d["metadata"]["namespace"], "webapp-operator-system", "{}", d["kind"]);
        }
        assert_eq!(d["metadata"]["labels"]["app.kubernetes.io/name"], "webapp-operator");
    }
    assert!(m.notes.is_empty(), "{:?}", m.notes);
}

#[test]
fn the_cluster_role_writes_status_of_the_primary_kind_only() {
    let m = generate_default(&Options::new("op"));
    let role = m
        .documents
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "op-manager")
        .expect("the manager role");
    let rules = role["rules"].as_array().expect("rules");
    let verbs_of = |resource: &str| -> Vec<&Value> {
        rules
            .iter()
            .filter(|r| r["resources"].as_array().is_some_and(|rs| rs.iter().any(|x| x == resource)))
            .flat_map(|r| r["verbs"].as_array().into_iter().flatten())
            .collect()
    };
    assert_eq!(verbs_of("webapps/status"), [&json!("get"), &json!("patch"), &json!("update")]);
    assert!(!verbs_of("deployments").is_empty(), "the managed Deployment is granted");
    for managed in ["deployments/status", "secrets/status", "configmaps/status"] {
        assert!(verbs_of(managed).is_empty(), "{managed} granted: {rules:?}");
    }
}

#[test]
fn a_chosen_namespace_is_not_given_a_pod_security_label() {
    let mut o = Options::new("op");
    o.namespace = Some("operators".into());
    let m = generate_default(&o);
    let ns = find(&m, "Namespace");
    assert_eq!(ns["metadata"]["name"], "operators");
    assert!(ns["metadata"]["labels"].get("pod-security.kubernetes.io/enforce").is_none());
    assert_eq!(find(&m, "ClusterRoleBinding")["subjects"][0]["namespace"], "operators");
}

#[test]
fn config_map_carries_bundle_and_values() {
    let mut o = Options::new("op");
    o.values_yaml = "# greeting\ngreeting: hi\n".into();
    let m = generate_default(&o);
    let cm = find(&m, "ConfigMap");
    assert_eq!(cm["metadata"]["name"], "op-bundle");
    assert_eq!(cm["binaryData"]["bundle.js.gz"], "H4sB");
    assert_eq!(cm["data"]["values.yaml"], "# greeting\ngreeting: hi\n");
}

#[test]
fn deployment_runs_the_bundle_safely() {
    let m = generate_default(&Options::new("op"));
    let d = find(&m, "Deployment");
    let pod = &d["spec"]["template"];
    assert_eq!(
        d["spec"]["selector"]["matchLabels"],
        json!({"app.kubernetes.io/name": "op", "app.kubernetes.io/component": "operator"})
    );
    assert_eq!(pod["metadata"]["labels"]["app.kubernetes.io/component"], "operator");
    assert_eq!(pod["metadata"]["annotations"][BUNDLE_HASH_ANNOTATION], "01".repeat(32));
    assert_eq!(pod["spec"]["serviceAccountName"], "op");
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["image"], DEFAULT_IMAGE);
    assert_eq!(
        c["args"],
        json!([
            "run",
            "--bundle",
            "/etc/ctop/bundle.js.gz",
            "--values",
            "/etc/ctop/values.yaml",
            "--name",
            "op",
            "--log-format",
            "json"
        ])
    );
    assert_eq!(c["livenessProbe"]["httpGet"], json!({"path": "/healthz", "port": "health"}));
    assert_eq!(c["readinessProbe"]["httpGet"], json!({"path": "/readyz", "port": "health"}));
    assert_eq!(c["ports"][0]["containerPort"], 8080);
    assert_eq!(c["ports"][1], json!({"name": "health", "containerPort": 8081, "protocol": "TCP"}));
    assert_eq!(c["resources"]["requests"], json!({"cpu": "50m", "memory": "152Mi"}));
    assert_eq!(c["resources"]["limits"], json!({"cpu": "500m", "memory": "416Mi"}));
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(pod["spec"]["securityContext"]["runAsNonRoot"], true);
    assert_eq!(c["volumeMounts"][0], json!({"name": "bundle", "mountPath": "/etc/ctop", "readOnly": true}));
    assert_eq!(pod["spec"]["volumes"][0]["configMap"]["name"], "op-bundle");
}

#[test]
fn one_watched_namespace_is_passed_to_ctop_run_and_uses_roles() {
    let mut o = Options::new("op");
    o.watch = WatchScope::Namespace("apps".into());
    let m = generate_default(&o);
    assert_eq!(kinds(&m).iter().filter(|k| k.starts_with("Cluster")).count(), 0, "{:?}", kinds(&m));
    let roles: Vec<_> = m
        .documents
        .iter()
        .filter(|d| d["kind"] == "Role")
        .map(|d| d["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["apps", "op-system"]);
    let args = &find(&m, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"];
    assert!(args.to_string().contains(r#""--namespace","apps""#), "{args}");
}

#[test]
fn same_input_same_bytes() {
    let o = Options::new("op");
    let a = generate(&spec(), &bundle(1), &o, &[&PodDisruptionBudget, &NetworkPolicy])
        .unwrap()
        .to_yaml()
        .unwrap();
    let b = generate(&spec(), &bundle(1), &o, &[&PodDisruptionBudget, &NetworkPolicy])
        .unwrap()
        .to_yaml()
        .unwrap();
    assert_eq!(a, b);
    // The YAML reads back as the same documents, strings like "true" staying strings.
    // (The header comment before the first `---` is an empty document, which is skipped.)
    let docs: Vec<Value> = ctop_core::yaml::documents(&a).unwrap();
    let m = generate(&spec(), &bundle(1), &o, &[&PodDisruptionBudget, &NetworkPolicy]).unwrap();
    assert_eq!(docs, m.documents);
    assert!(a.contains("applyset.kubernetes.io/is-parent-type: \"true\""), "{a}");
}

/// Everything but the pod template's annotations and the ConfigMap's binary data.
fn without_bundle(m: &Manifests) -> Vec<Value> {
    let mut docs = m.documents.clone();
    for d in &mut docs {
        if d["kind"] == "Deployment" {
            d["spec"]["template"]["metadata"]["annotations"] = Value::Null;
        }
        if d["kind"] == "ConfigMap" {
            d["binaryData"] = Value::Null;
        }
    }
    docs
}

#[test]
fn bundle_hash_changes_with_the_bundle_only() {
    let o = Options::new("op");
    let one = generate(&spec(), &bundle(1), &o, &[]).unwrap();
    let again = generate(&spec(), &bundle(1), &o, &[]).unwrap();
    let two = generate(&spec(), &bundle(2), &o, &[]).unwrap();
    let hash = |m: &Manifests| {
        find(m, "Deployment")["spec"]["template"]["metadata"]["annotations"][BUNDLE_HASH_ANNOTATION].clone()
    };
    assert_eq!(hash(&one), hash(&again));
    assert_ne!(hash(&one), hash(&two));
    assert_eq!(without_bundle(&one), without_bundle(&two), "nothing else differs");

    // New values: their own annotation changes, the bundle's does not.
    let mut o2 = o.clone();
    o2.values_yaml = "replicas: 3\n".into();
    let values = generate(&spec(), &bundle(1), &o2, &[]).unwrap();
    assert_eq!(hash(&one), hash(&values));
    let vhash = |m: &Manifests| {
        find(m, "Deployment")["spec"]["template"]["metadata"]["annotations"][VALUES_HASH_ANNOTATION].clone()
    };
    assert_ne!(vhash(&one), vhash(&values));
    assert_eq!(vhash(&one), vhash(&again));
}

#[test]
fn pdb_and_network_policy_plugins() {
    let o = Options::new("op");
    let m = generate(&spec(), &bundle(1), &o, &[&PodDisruptionBudget, &NetworkPolicy]).unwrap();
    let pdb = find(&m, "PodDisruptionBudget");
    assert_eq!(pdb["apiVersion"], "policy/v1");
    assert_eq!(pdb["metadata"]["namespace"], "op-system");
    assert_eq!(pdb["spec"]["maxUnavailable"], 1, "one replica: never blocks a drain");
    assert_eq!(pdb["spec"]["selector"], find(&m, "Deployment")["spec"]["selector"]);
    let np = find(&m, "NetworkPolicy");
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(np["spec"]["podSelector"], find(&m, "Deployment")["spec"]["selector"]);
    assert_eq!(
        np["spec"]["ingress"],
        json!([{"ports": [{"port": 8080, "protocol": "TCP"}, {"port": 8081, "protocol": "TCP"}]}])
    );
    assert_eq!(np["spec"]["egress"].as_array().map(Vec::len), Some(2), "DNS and the API server only");

    let mut ha = o.clone();
    ha.replicas = 3;
    let m = generate(&spec(), &bundle(1), &ha, &[&PodDisruptionBudget]).unwrap();
    let pdb = find(&m, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["minAvailable"], 1);
    assert!(pdb["spec"].get("maxUnavailable").is_none());
    assert_eq!(find(&m, "Deployment")["spec"]["replicas"], 3);

    assert!(!kinds(&generate_default(&o)).contains(&"NetworkPolicy"), "plugins only when asked");
}

struct Tolerate;

impl Plugin for Tolerate {
    fn name(&self) -> &str {
        "tolerate"
    }
    fn apply(&self, ctx: &Context<'_>, docs: &mut Vec<Value>) -> Result<(), PluginError> {
        let d = ctx.find_mut(docs, "Deployment", ctx.name())?;
        d["spec"]["template"]["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
        Ok(())
    }
}

struct Broken;

impl Plugin for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn apply(&self, ctx: &Context<'_>, docs: &mut Vec<Value>) -> Result<(), PluginError> {
        ctx.find_mut(docs, "Service", "webhook").map(|_| ())
    }
}

#[test]
fn plugins_change_documents_and_their_errors_name_them() {
    let m = generate(&spec(), &bundle(1), &Options::new("op"), &[&Tolerate]).unwrap();
    assert_eq!(find(&m, "Deployment")["spec"]["template"]["spec"]["tolerations"][0]["operator"], "Exists");
    let err = generate(&spec(), &bundle(1), &Options::new("op"), &[&Broken]).unwrap_err();
    assert_eq!(
        ctop_core::Chain(&err).to_string(),
        "plugin broken failed: there is no Service named \"webhook\" to change"
    );
}

#[test]
fn refuses_what_cannot_deploy() {
    let o = Options::new("op");
    let empty = OperatorSpec { resources: spec().resources, controllers: vec![] };
    assert!(matches!(generate(&empty, &bundle(1), &o, &[]), Err(Error::NoController)));
    let bad_hash = ScriptBundle { gz: vec![], sha256: "xyz".into() };
    assert!(matches!(generate(&spec(), &bad_hash, &o, &[]), Err(Error::BadBundleHash(_))));
    let huge = ScriptBundle { gz: vec![0; 1024 * 1024], sha256: "00".repeat(32) };
    assert!(matches!(generate(&spec(), &huge, &o, &[]), Err(Error::TooLarge { .. })));
    let mut twice = spec();
    twice.resources.push(twice.resources[0].clone());
    assert!(matches!(generate(&twice, &bundle(1), &o, &[]), Err(Error::DuplicateCrd(_))));
}

#[test]
fn admission_handlers_get_a_service_configurations_and_ca_bundle_rbac() {
    assert!(!kinds(&generate_default(&Options::new("op"))).contains(&"ValidatingWebhookConfiguration"));
    let mut s = spec();
    s.controllers[0].handlers = vec!["reconcile".into(), "validate".into(), "mutate".into()];
    let mut options = Options::new("op");
    options.webhook_failure_policy = ctop_webhook::FailurePolicy::Ignore;
    let m = generate(&s, &bundle(1), &options, &[&crate::NetworkPolicy]).unwrap();
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    let k = kinds(&m);
    let deployment = k.iter().position(|k| *k == "Deployment").unwrap();
    let service = k.iter().position(|k| *k == "Service").unwrap();
    assert!(deployment < service);
    for kind in ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"] {
        let c = find(&m, kind);
        assert_eq!(c["metadata"]["name"], "op");
        let hook = &c["webhooks"][0];
        assert_eq!(hook["clientConfig"]["service"]["name"], "op-webhook");
        assert_eq!(hook["clientConfig"]["service"]["namespace"], "op-system");
        assert_eq!(hook["failurePolicy"], "Ignore");
        assert_eq!(hook["rules"][0]["resources"], json!(["webapps"]));
        assert!(hook["clientConfig"].get("caBundle").is_none(), "the operator patches the CA in");
    }
    assert_eq!(
        find(&m, "ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]["path"],
        "/validate/apps.example.com/v1/webapps"
    );
    let svc = find(&m, "Service");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "webhook");
    assert_eq!(svc["spec"]["selector"]["app.kubernetes.io/component"], "operator");
    let container = &find(&m, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    for flag in [
        "--webhook-port",
        "9443",
        "--webhook-configuration",
        "op-webhook.op-system.svc",
        "Ignore",
        "--tls-secret",
        "op-webhook-tls",
    ] {
        assert!(args.contains(&flag), "{args:?} lacks {flag}");
    }
    assert!(container["ports"].as_array().unwrap().iter().any(|p| p["name"] == "webhook"));
    let role = m
        .documents
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "op-webhook")
        .expect("the caBundle role");
    assert_eq!(role["rules"][0]["resourceNames"], json!(["op"]));
    assert_eq!(role["rules"][0]["verbs"], json!(["get", "update"]));
    let resources = json!(["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]);
    assert_eq!(role["rules"][0]["resources"], resources);
    let policy = find(&m, "NetworkPolicy");
    assert!(policy["spec"]["ingress"][0]["ports"].as_array().unwrap().iter().any(|p| p["port"] == 9443));

    // The replicas share one certificate through a Secret they may read, create and update.
    let secret_role = m
        .documents
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "op-webhook-tls")
        .expect("the shared certificate's role");
    assert_eq!(secret_role["metadata"]["namespace"], "op-system");
    assert_eq!(
        secret_role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["op-webhook-tls"], "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        ])
    );
    let binding = find(&m, "RoleBinding");
    assert!(
        m.documents.iter().any(|d| d["kind"] == "RoleBinding"
            && d["roleRef"]["name"] == "op-webhook-tls"
            && d["subjects"][0]["name"] == "op"),
        "{binding}"
    );
    options.replicas = 2;
    let m = generate(&s, &bundle(1), &options, &[]).unwrap();
    assert!(m.notes.is_empty(), "several replicas need no note any more: {:?}", m.notes);
}

#[test]
fn the_default_image_is_this_ctop_release() {
    assert_eq!(DEFAULT_IMAGE, format!("ghcr.io/cloudticon/ct-operator:{}", env!("CARGO_PKG_VERSION")));
    assert!(!DEFAULT_IMAGE.ends_with(":latest"));
    let m = generate_default(&Options::new("op"));
    assert_eq!(find(&m, "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"], DEFAULT_IMAGE);
}

fn egress_rules(urls: &[&str]) -> Vec<ctop_core::EgressRule> {
    urls.iter().map(|u| u.parse().unwrap()).collect()
}

#[test]
fn network_policy_egress_is_dns_the_api_server_and_every_fetch_destination() {
    let mut s = spec();
    s.controllers[0].egress = egress_rules(&["https://api.github.com", "http://10.1.2.3:9000/hook"]);
    let mut second = s.controllers[0].clone();
    second.index = 1;
    second.name = "second".into();
    second.egress =
        egress_rules(&["http://api.github.com:8080", "http://cache.infra.svc:6379", "http://[fd00::1]:*"]);
    s.controllers.push(second);
    let mut o = Options::new("op");
    // The deployer's: one repeats the script's, one is new.
    o.egress = egress_rules(&["http://10.1.2.3:9000", "https://*.hooks.example.com:8443"]);
    let m = generate(&s, &bundle(1), &o, &[&NetworkPolicy]).unwrap();
    let outside = json!([
        {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["100.100.100.200/32", "169.254.0.0/16"]}},
        {"ipBlock": {"cidr": "::/0", "except": ["fd00:ec2::254/128", "fe80::/10"]}},
    ]);
    let tcp = |port: u16| json!({"port": port, "protocol": "TCP"});
    assert_eq!(
        find(&m, "NetworkPolicy")["spec"]["egress"],
        json!([
            {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]},
            {"ports": [tcp(443), tcp(6443)]},
            {"to": outside, "ports": [tcp(8080), tcp(8443)]},
            {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "infra"}}}]},
            {"to": [{"ipBlock": {"cidr": "10.1.2.3/32"}}], "ports": [tcp(9000)]},
            {"to": [{"ipBlock": {"cidr": "fd00::1/128"}}]},
        ])
    );
}

fn args(m: &Manifests) -> Vec<String> {
    let c = &find(m, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect()
}

fn memory_of(m: &Manifests) -> (String, String) {
    let r = &find(m, "Deployment")["spec"]["template"]["spec"]["containers"][0]["resources"];
    (r["requests"]["memory"].as_str().unwrap().into(), r["limits"]["memory"].as_str().unwrap().into())
}

#[test]
fn memory_follows_the_pool_and_limits_the_pod_runs_with() {
    // Defaults: 64 + 4 × (64 + 16 + 8).
    let m = generate_default(&Options::new("op"));
    assert_eq!(memory_of(&m), ("152Mi".into(), "416Mi".into()));
    for flag in ["--concurrency", "--script-memory", "--max-output", "--egress", "--webhook-concurrency"] {
        assert!(!args(&m).iter().any(|a| a == flag), "a default is not repeated: {flag}");
    }

    let mut o = Options::new("op");
    o.concurrency = 2;
    o.script_memory = ctop_core::ByteSize::mib(128);
    o.max_output = ctop_core::ByteSize::mib(32);
    o.egress = egress_rules(&["https://hooks.example.com/v1", "http://10.0.0.9:*"]);
    let m = generate_default(&o);
    // 64 + 2 × (128 + 32 + 8)
    assert_eq!(memory_of(&m), ("232Mi".into(), "400Mi".into()));
    let a = args(&m);
    assert_eq!(a[5..7], ["--name", "op"], "the operator's own name: field manager, Leases, events");
    let tail: Vec<&str> = a[7..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "--concurrency",
            "2",
            "--script-memory",
            "128Mi",
            "--max-output",
            "32Mi",
            "--egress",
            "https://hooks.example.com/v1",
            "--egress",
            "http://10.0.0.9:*",
            "--log-format",
            "json"
        ]
    );
}

#[test]
fn webhooks_add_their_runtimes_to_the_memory() {
    let mut s = spec();
    s.controllers[0].handlers = vec!["reconcile".into(), "validate".into()];
    let mut o = Options::new("op");
    let m = generate(&s, &bundle(1), &o, &[]).unwrap();
    // 64 + (4 + 4) × 88
    assert_eq!(memory_of(&m), ("152Mi".into(), "768Mi".into()));
    assert!(!args(&m).iter().any(|a| a == "--webhook-concurrency"));

    o.webhook_concurrency = 1;
    let m = generate(&s, &bundle(1), &o, &[]).unwrap();
    assert_eq!(memory_of(&m), ("152Mi".into(), "504Mi".into()));
    let a = args(&m);
    let at = a.iter().position(|a| a == "--webhook-concurrency").expect("passed to ctop run");
    assert_eq!(a[at + 1], "1");
    assert!(a.iter().position(|a| a == "--webhook-port") < Some(at), "after the flag it requires: {a:?}");

    // Without handlers there is no webhook server, so neither its runtimes nor its flag.
    let m = generate_default(&o);
    assert_eq!(memory_of(&m), ("152Mi".into(), "416Mi".into()));
    assert!(!args(&m).iter().any(|a| a == "--webhook-concurrency"));
}

#[test]
fn explicit_memory_wins_over_the_formula() {
    let mut o = Options::new("op");
    o.concurrency = 16;
    o.resources.memory_request = Some(ctop_core::ByteSize::mib(100));
    o.resources.memory_limit = Some(ctop_core::ByteSize::mib(1024));
    let m = generate_default(&o);
    assert_eq!(memory_of(&m), ("100Mi".into(), "1Gi".into()));
    assert!(args(&m).windows(2).any(|w| w == ["--concurrency", "16"]), "the pool is still passed");
    o.resources.memory_request = Some(ctop_core::ByteSize::mib(2048));
    assert!(matches!(generate(&spec(), &bundle(1), &o, &[]), Err(Error::RequestAboveLimit { .. })));
    o.concurrency = 0;
    assert!(matches!(generate(&spec(), &bundle(1), &o, &[]), Err(Error::NoRuntimes { flag: "concurrency" })));
}

#[test]
fn a_validate_only_operator_may_touch_its_validating_configuration_only() {
    let mut s = spec();
    s.controllers[0].handlers = vec!["reconcile".into(), "validate".into()];
    let m = generate(&s, &bundle(1), &Options::new("op"), &[]).unwrap();
    assert!(!kinds(&m).contains(&"MutatingWebhookConfiguration"));
    let role = m
        .documents
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "op-webhook")
        .expect("the caBundle role");
    assert_eq!(role["rules"][0]["resources"], json!(["validatingwebhookconfigurations"]));
}

#[test]
fn the_config_map_limit_is_the_api_servers_1_mib_of_data() {
    // ValidateConfigMap sums the values of data and binaryData (decoded): exactly 1 MiB fits.
    assert!(check_config_map_size(CONFIG_MAP_LIMIT - 10, 10).is_ok());
    let err = check_config_map_size(CONFIG_MAP_LIMIT - 10, 11).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the bundle (1048566 bytes gzipped) and values (11 bytes) make 1048577 bytes of ConfigMap data, more \
         than the 1048576 bytes (1 MiB) the API server accepts (it would answer \"Too long: must have at most \
         1048576 bytes\"); make the script smaller: replace or drop the biggest packages that `ctop bundle` \
         lists, or move large data out of the script (fetch it, or read it from a ConfigMap with .reads())"
    );
    let o = Options { values_yaml: "a: 1\n".into(), ..Options::new("op") };
    let just_over = ScriptBundle { gz: vec![0; CONFIG_MAP_LIMIT - 4], sha256: "00".repeat(32) };
    assert!(
        matches!(generate(&spec(), &just_over, &o, &[]), Err(Error::TooLarge { bundle, values: 5 }) if bundle == CONFIG_MAP_LIMIT - 4)
    );
}

/// [`spec`] whose WebApp has a second version, v1beta1, in which objects are stored.
fn converting_spec() -> OperatorSpec {
    let mut s = spec();
    let hub = s.resources[0].all_versions().remove(0);
    let old = ctop_core::VersionSpec {
        name: "v1beta1".into(),
        storage: true,
        deprecated: Some(ctop_core::Deprecation { warning: None }),
        ..hub.clone()
    };
    s.resources[0].versions = vec![ctop_core::VersionSpec { storage: false, ..hub }, old];
    s
}

fn role<'a>(m: &'a Manifests, kind: &str, name: &str) -> Option<&'a Value> {
    m.documents.iter().find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
}

#[test]
fn a_one_version_resource_converts_nothing_and_has_no_webhook() {
    let m = generate_default(&Options::new("op"));
    let crd = m.documents.iter().find(|d| d["metadata"]["name"] == "webapps.apps.example.com").expect("crd");
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    for kind in ["Service", "ValidatingWebhookConfiguration"] {
        assert!(!kinds(&m).contains(&kind), "{kind}");
    }
    assert!(role(&m, "ClusterRole", "op-webhook").is_none());
    assert!(!args(&m).iter().any(|a| a == "--webhook-port"));
}

#[test]
fn a_converting_script_gets_the_webhook_server_and_the_crd_points_at_it() {
    let s = converting_spec();
    let m = generate(&s, &bundle(1), &Options::new("op"), &[&NetworkPolicy]).unwrap();
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    let crd = m.documents.iter().find(|d| d["metadata"]["name"] == "webapps.apps.example.com").expect("crd");
    assert_eq!(
        crd["spec"]["conversion"]["webhook"]["clientConfig"],
        json!({"service": {"namespace": "op-system", "name": "op-webhook", "path": ctop_webhook::CONVERSION_PATH, "port": 443}})
    );
    let names: Vec<_> =
        crd["spec"]["versions"].as_array().unwrap().iter().map(|v| v["name"].clone()).collect();
    assert_eq!(names, [json!("v1"), json!("v1beta1")]);

    // No admission handlers: no configurations, but the Service, port, flags and TLS Secret.
    let k = kinds(&m);
    assert!(!k.contains(&"ValidatingWebhookConfiguration") && !k.contains(&"MutatingWebhookConfiguration"));
    let svc = find(&m, "Service");
    assert_eq!(
        (&svc["metadata"]["name"], &svc["spec"]["ports"][0]["port"]),
        (&json!("op-webhook"), &json!(443))
    );
    let a = args(&m);
    for flag in
        ["--webhook-port", "9443", "--tls-secret", "op-webhook-tls", "--tls-host", "op-webhook.op-system.svc"]
    {
        assert!(a.iter().any(|x| x == flag), "{a:?} lacks {flag}");
    }
    let container = &find(&m, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    assert!(container["ports"].as_array().unwrap().iter().any(|p| p["name"] == "webhook"));
    assert!(role(&m, "Role", "op-webhook-tls").is_some(), "the shared certificate's Secret");
    // 64 + (4 + 4) × 88: conversions run on the webhook's runtimes.
    assert_eq!(memory_of(&m), ("152Mi".into(), "768Mi".into()));
    let policy = find(&m, "NetworkPolicy");
    assert!(policy["spec"]["ingress"][0]["ports"].as_array().unwrap().iter().any(|p| p["port"] == 9443));

    // The caBundle keeper may get and patch exactly the converting CRDs, nothing else.
    let webhook = role(&m, "ClusterRole", "op-webhook").expect("the caBundle role");
    assert_eq!(
        webhook["rules"],
        json!([{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                "resourceNames": ["webapps.apps.example.com"], "verbs": ["get", "patch"]}])
    );
    assert!(
        m.documents.iter().any(|d| d["kind"] == "ClusterRoleBinding" && d["roleRef"]["name"] == "op-webhook"),
        "bound"
    );
    // Not migrating: neither the flag nor the CRD status rule.
    assert!(!a.iter().any(|x| x == "--migrate-storage"));
    let manager = role(&m, "ClusterRole", "op-manager").expect("the manager role");
    assert!(!manager["rules"].to_string().contains("customresourcedefinitions"), "{}", manager["rules"]);
}

#[test]
fn admission_and_conversion_share_one_server_and_one_role() {
    let mut s = converting_spec();
    s.controllers[0].handlers = vec!["reconcile".into(), "validate".into()];
    let m = generate(&s, &bundle(1), &Options::new("op"), &[]).unwrap();
    assert_eq!(kinds(&m).iter().filter(|k| **k == "Service").count(), 1);
    assert_eq!(args(&m).iter().filter(|a| *a == "--webhook-port").count(), 1);
    let webhook = role(&m, "ClusterRole", "op-webhook").expect("the caBundle role");
    assert_eq!(
        webhook["rules"],
        json!([
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"],
             "resourceNames": ["op"], "verbs": ["get", "update"]},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
             "resourceNames": ["webapps.apps.example.com"], "verbs": ["get", "patch"]},
        ])
    );
}

#[test]
fn storage_migration_is_passed_to_ctop_run_and_granted_only_when_asked() {
    let options = Options { migrate_storage: true, ..Options::new("op") };
    let m = generate(&converting_spec(), &bundle(1), &options, &[]).unwrap();
    let a = args(&m);
    assert!(a.iter().any(|x| x == "--migrate-storage"), "{a:?}");
    let manager = role(&m, "ClusterRole", "op-manager").expect("the manager role");
    let crd_status: Vec<&Value> = manager["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["resources"] == json!(["customresourcedefinitions/status"]))
        .collect();
    assert_eq!(
        crd_status,
        [&json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions/status"],
                 "resourceNames": ["webapps.apps.example.com"], "verbs": ["get", "patch", "update"]})]
    );

    // Nothing converts: no flag, no grant, a note saying why.
    let m = generate(&spec(), &bundle(1), &options, &[]).unwrap();
    assert!(!args(&m).iter().any(|x| x == "--migrate-storage"));
    assert_eq!(without_bundle(&m), without_bundle(&generate_default(&Options::new("op"))));
    assert_eq!(m.notes.len(), 1);
    assert!(m.notes[0].contains("nothing to migrate"), "{:?}", m.notes);
}
