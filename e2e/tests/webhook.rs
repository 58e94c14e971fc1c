//! Admission webhooks end to end: `ctop sim`, the real `ctop` binary serving the script's
//! `validate`/`mutate` handlers (`ctop run --webhook-port`, `ctop dev`), and `kubectl`.
//! The script is `tests/webhook-operator/operator.ct`.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{Kubectl, Proc, start_sim, wait_for};
use ctop_e2e::binary;

fn operator_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/webhook-operator")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn widget(name: &str, color: &str, size: Option<u32>) -> String {
    let size = size.map(|s| format!(", size: {s}")).unwrap_or_default();
    format!(
        "apiVersion: demo.ctop.dev/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: default}}\n\
         spec: {{color: {color}{size}}}\n"
    )
}

/// Webhook configurations called `widgets` pointing at `https://127.0.0.1:<port>`, without
/// a caBundle: the operator patches its self-issued CA in.
fn configurations(port: u16, timeout_seconds: u32) -> String {
    let hook = |handler: &str| {
        format!(
            "webhooks:\n- name: {handler}.widgets.demo.ctop.dev\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  \
             failurePolicy: Fail\n  timeoutSeconds: {timeout_seconds}\n  \
             clientConfig: {{url: \"https://127.0.0.1:{port}/{handler}/demo.ctop.dev/v1/widgets\"}}\n  \
             rules: [{{apiGroups: [demo.ctop.dev], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [widgets]}}]\n"
        )
    };
    format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {{name: widgets}}\n{}---\n\
         apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {{name: widgets}}\n{}",
        hook("validate"),
        hook("mutate")
    )
}

fn apply(k: &Kubectl, dir: &Path, yaml: &str) -> Output {
    let file = dir.join("apply.yaml");
    std::fs::write(&file, yaml).expect("write yaml");
    k.run(&["apply", "-f", file.to_str().expect("utf-8")])
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn run_enforces_validate_and_mutate_and_honours_the_failure_policy() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: dir.path().join("cache") };
    let port = free_port();
    let out = apply(&k, dir.path(), &configurations(port, 5));
    assert!(out.status.success(), "{}", stderr(&out));

    let values = dir.path().join("values.yaml");
    std::fs::write(&values, "team: platform\n").expect("values");
    let run = Proc(
        Command::new(binary::ctop())
            .arg("run")
            .arg(operator_dir())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--values")
            .arg(&values)
            .args(["--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"])
            .args(["--webhook-port", &port.to_string(), "--webhook-configuration", "widgets"])
            .args(["--webhook-timeout", "2s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    );
    // The operator patches its CA into both configurations.
    for kind in ["validatingwebhookconfiguration", "mutatingwebhookconfiguration"] {
        k.eventually(&["get", kind, "widgets", "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}"], |s| {
            !s.is_empty()
        });
    }
    k.eventually(&["get", "crd", "widgets.demo.ctop.dev", "-o", "name"], |s| !s.is_empty());

    // An invalid object is denied with the script's message, as the API server words it.
    let mut denied = apply(&k, dir.path(), &widget("red", "red", None));
    for _ in 0..100 {
        if !stderr(&denied).contains("the server doesn't have a resource type")
            && !stderr(&denied).contains("no matches for kind")
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        denied = apply(&k, dir.path(), &widget("red", "red", None));
    }
    assert!(!denied.status.success());
    assert!(
        stderr(&denied)
            .contains(r#"admission webhook "validate.widgets.demo.ctop.dev" denied the request: red widgets are not allowed"#),
        "{}",
        stderr(&denied)
    );

    // A valid one is stored with the mutation (a label from the values) and the defaults.
    let created = apply(&k, dir.path(), &widget("blue", "blue", Some(20)));
    assert!(created.status.success(), "{}", stderr(&created));
    assert!(stderr(&created).contains("size 20 is large"), "warnings reach kubectl: {}", stderr(&created));
    assert_eq!(
        k.ok(&["get", "widget", "blue", "-o", r"jsonpath={.metadata.labels.demo\.ctop\.dev/team}"]),
        "platform"
    );
    let small = apply(&k, dir.path(), &widget("green", "green", None));
    assert!(small.status.success(), "{}", stderr(&small));
    assert_eq!(k.ok(&["get", "widget", "green", "-o", "jsonpath={.spec.size}"]), "3");

    // The update rule compares with oldObject.
    let changed = k.run(&["patch", "widget", "blue", "--type=merge", "-p", r#"{"spec":{"color":"green"}}"#]);
    assert!(!changed.status.success());
    assert!(stderr(&changed).contains("color is immutable (was blue)"), "{}", stderr(&changed));
    let resized = k.run(&["patch", "widget", "blue", "--type=merge", "-p", r#"{"spec":{"size":4}}"#]);
    assert!(resized.status.success(), "{}", stderr(&resized));

    // A throwing or late handler answers per the server's failure policy (Fail: denied),
    // and the server keeps serving.
    let threw = apply(&k, dir.path(), &widget("t", "throw", None));
    assert!(stderr(&threw).contains("the validate handler blew up"), "{}", stderr(&threw));
    let slow = apply(&k, dir.path(), &widget("s", "slow", None));
    // The handler's own deadline (half of --webhook-timeout here) stops it first.
    assert!(stderr(&slow).contains("ran longer than its 1s deadline"), "{}", stderr(&slow));
    let after = apply(&k, dir.path(), &widget("after", "yellow", None));
    assert!(after.status.success(), "{}", stderr(&after));

    // A dead webhook with failurePolicy Fail blocks writes; with Ignore it does not.
    drop(run);
    let blocked = apply(&k, dir.path(), &widget("orange", "orange", None));
    assert!(!blocked.status.success());
    assert!(stderr(&blocked).contains("failed calling webhook"), "{}", stderr(&blocked));
    for kind in ["validatingwebhookconfiguration", "mutatingwebhookconfiguration"] {
        k.ok(&[
            "patch",
            kind,
            "widgets",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]"#,
        ]);
    }
    let ignored = apply(&k, dir.path(), &widget("orange", "orange", None));
    assert!(ignored.status.success(), "{}", stderr(&ignored));
    assert_eq!(
        k.ok(&["get", "widget", "orange", "-o", "jsonpath={.metadata.labels}"]),
        "",
        "no mutation ran"
    );
}

#[test]
fn dev_wires_the_handlers_into_its_embedded_cluster() {
    let dir = tempfile::tempdir().expect("temp dir");
    let work = dir.path().join("op");
    std::fs::create_dir(&work).expect("dir");
    std::fs::copy(operator_dir().join("operator.ct"), work.join("operator.ct")).expect("copy the script");
    let kubeconfig = dir.path().join("kc");
    let _dev = Proc(
        Command::new(binary::ctop())
            .arg("dev")
            .arg(&work)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop dev starts"),
    );
    wait_for(&kubeconfig);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "validatingwebhookconfiguration", "ctop-dev", "-o", "name"], |s| !s.is_empty());
    k.eventually(&["get", "crd", "widgets.demo.ctop.dev", "-o", "name"], |s| !s.is_empty());
    let mut denied = apply(&k, dir.path(), &widget("red", "red", None));
    for _ in 0..100 {
        if stderr(&denied).contains("denied the request") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        denied = apply(&k, dir.path(), &widget("red", "red", None));
    }
    assert!(stderr(&denied).contains("red widgets are not allowed"), "{}", stderr(&denied));
    let created = apply(&k, dir.path(), &widget("blue", "blue", None));
    assert!(created.status.success(), "{}", stderr(&created));
    assert_eq!(
        k.ok(&["get", "widget", "blue", "-o", r"jsonpath={.metadata.labels.demo\.ctop\.dev/team}"]),
        "core"
    );

    // Saving a changed script swaps the handlers without a restart: red is now allowed.
    let script = std::fs::read_to_string(work.join("operator.ct")).expect("read the script");
    std::fs::write(
        work.join("operator.ct"),
        script.replace("return \"red widgets are not allowed\";", "return true;"),
    )
    .expect("save");
    let mut allowed = apply(&k, dir.path(), &widget("red", "red", None));
    for _ in 0..150 {
        if allowed.status.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        allowed = apply(&k, dir.path(), &widget("red", "red", None));
    }
    assert!(allowed.status.success(), "the reloaded script still denies: {}", stderr(&allowed));
}

/// The deploy path: `ctop manifests` applied to kubesim with `--authz`, `ctop run` started
/// with the Deployment's args as the generated ServiceAccount. The operator issues its
/// certificate and patches its CA into the generated configurations (so their RBAC is
/// enough), and once the Service reference is pointed at loopback (there is no cluster
/// network here), kubectl sees the handlers enforced.
#[test]
fn manifests_deploy_path_patches_the_ca_with_the_generated_rbac() {
    let dir = tempfile::tempdir().expect("temp dir");
    let admin = dir.path().join("kc");
    let _sim = Proc(
        Command::new(binary::ctop())
            .args(["sim", "--authz", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&admin)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop sim starts"),
    );
    wait_for(&admin);
    let k = Kubectl { kubeconfig: admin.clone(), cache: dir.path().join("cache") };
    let manifests = dir.path().join("manifests.yaml");
    let out = Command::new(binary::ctop())
        .arg("manifests")
        .arg(operator_dir())
        .args(["--name", "widgets"])
        .arg("-o")
        .arg(&manifests)
        .output()
        .expect("ctop manifests runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let applied: serde_json::Value = serde_json::from_str(&k.ok(&[
        "apply",
        "--server-side",
        "-f",
        manifests.to_str().expect("utf-8"),
        "-o",
        "json",
    ]))
    .expect("JSON");
    let items = applied["items"].as_array().expect("a List").clone();
    let find =
        |kind: &str| items.iter().find(|o| o["kind"] == kind).unwrap_or_else(|| panic!("no {kind}")).clone();
    for kind in ["Service", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"] {
        find(kind);
    }

    // `ctop run` as the Deployment runs it: its args, the ConfigMap's bundle, the SA's token.
    let deployment = find("Deployment");
    let ns = deployment["metadata"]["namespace"].as_str().expect("namespace").to_owned();
    let bundle_b64 = find("ConfigMap")["binaryData"]["bundle.js.gz"].as_str().expect("bundle").to_owned();
    let encoded = dir.path().join("bundle.b64");
    std::fs::write(&encoded, bundle_b64).expect("write");
    let decoded = Command::new("base64").arg("-d").arg(&encoded).output().expect("base64");
    let bundle = dir.path().join("bundle.js.gz");
    std::fs::write(&bundle, decoded.stdout).expect("write the bundle");
    std::fs::write(dir.path().join("values.yaml"), "{}\n").expect("values");
    let port = free_port();
    let args: Vec<String> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| match a.as_str().expect("string") {
            "/etc/ctop/bundle.js.gz" => bundle.to_str().expect("utf-8").to_owned(),
            "/etc/ctop/values.yaml" => dir.path().join("values.yaml").to_str().expect("utf-8").to_owned(),
            "9443" => port.to_string(),
            other => other.to_owned(),
        })
        .collect();
    assert!(args.iter().any(|a| a == "--webhook-port"), "{args:?}");
    let token = k.ok(&["create", "token", "widgets", "-n", &ns]);
    let sa_kc = dir.path().join("sa-kc");
    std::fs::copy(&admin, &sa_kc).expect("copy the kubeconfig");
    let sak = Kubectl { kubeconfig: sa_kc.clone(), cache: dir.path().join("sa-cache") };
    sak.ok(&["config", "set-credentials", "operator-sa", "--token", token.trim()]);
    sak.ok(&["config", "set-context", "--current", "--user", "operator-sa"]);
    // One replica as the Deployment's pod `pod` runs it, logging to `log`.
    let replica = |args: &[String], pod: &str, log: &Path| {
        Proc(
            Command::new(binary::ctop())
                .args(args)
                .arg("--kubeconfig")
                .arg(&sa_kc)
                .args(["--health-port", "0", "--metrics-port", "0"])
                .env("POD_NAMESPACE", &ns)
                .env("POD_NAME", pod)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(log).expect("log"))
                .spawn()
                .expect("ctop run starts"),
        )
    };
    let log = dir.path().join("run.log");
    let _run = replica(&args, "operator-0", &log);
    for kind in ["validatingwebhookconfiguration", "mutatingwebhookconfiguration"] {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
        loop {
            let ca = k.ok(&["get", kind, "widgets", "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}"]);
            if !ca.is_empty() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the operator never set the caBundle of {kind}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        let url = format!("https://127.0.0.1:{port}");
        let path = k.ok(&["get", kind, "widgets", "-o", "jsonpath={.webhooks[0].clientConfig.service.path}"]);
        k.ok(&[
            "patch",
            kind,
            "widgets",
            "--type=json",
            "-p",
            &format!(
                r#"[{{"op":"remove","path":"/webhooks/0/clientConfig/service"}},{{"op":"add","path":"/webhooks/0/clientConfig/url","value":"{url}{path}"}}]"#
            ),
        ]);
    }
    let denied = apply(&k, dir.path(), &widget("red", "red", None));
    assert!(stderr(&denied).contains("red widgets are not allowed"), "{}", stderr(&denied));
    let created = apply(&k, dir.path(), &widget("blue", "blue", None));
    assert!(created.status.success(), "{}", stderr(&created));
    assert_eq!(
        k.ok(&["get", "widget", "blue", "-o", r"jsonpath={.metadata.labels.demo\.ctop\.dev/team}"]),
        "core"
    );
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.to_ascii_lowercase().contains("forbidden"), "the operator was denied:\n{text}");

    // A second replica serves the same certificate, read from the Secret the first one
    // stored, so the caBundle both keep setting is one CA.
    let port2 = free_port();
    let args2: Vec<String> =
        args.iter().map(|a| if *a == port.to_string() { port2.to_string() } else { a.clone() }).collect();
    let log2 = dir.path().join("run2.log");
    let _run2 = replica(&args2, "operator-1", &log2);
    let served = |port: u16| {
        let out = Command::new("openssl")
            .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
            .stdin(Stdio::null())
            .output()
            .expect("openssl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let begin = text.find("-----BEGIN CERTIFICATE-----")?;
        let end = text[begin..].find("-----END CERTIFICATE-----")? + begin;
        Some(text[begin..end].to_owned())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let second = loop {
        if let Some(cert) = served(port2) {
            break cert;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the second replica never served:\n{}",
            std::fs::read_to_string(&log2).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(served(port).as_deref(), Some(second.as_str()), "both replicas serve one certificate");
    let secret =
        args.iter().position(|a| a == "--tls-secret").and_then(|i| args.get(i + 1)).expect("--tls-secret");
    let stored_ca = k.ok(&["get", "secret", secret, "-n", &ns, "-o", r"jsonpath={.data.ca\.crt}"]);
    let bundle = k.ok(&[
        "get",
        "validatingwebhookconfiguration",
        "widgets",
        "-o",
        "jsonpath={.webhooks[0].clientConfig.caBundle}",
    ]);
    assert_eq!(bundle, stored_ca, "the caBundle is the shared CA");
    let text = std::fs::read_to_string(&log2).unwrap_or_default();
    assert!(text.contains("using the shared webhook certificate"), "{text}");
}

/// `ctop webhook serve` on its own, with certificate files as cert-manager mounts them
/// (made here with openssl: a CA and a leaf for 127.0.0.1), called by kubesim through a
/// configuration whose caBundle is that CA.
#[test]
fn webhook_serve_uses_mounted_certificate_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(d).output().expect("openssl runs");
        assert!(out.status.success(), "openssl {args:?}: {}", stderr(&out));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &["-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=test-ca"],
        ]
        .concat(),
    );
    openssl(
        &[&["req"][..], &ec, &["-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=webhook"]].concat(),
    );
    std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
        .expect("ext");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "tls.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "tls.crt",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
    ]);

    let (_sim, kubeconfig) = start_sim(d);
    let k = Kubectl { kubeconfig, cache: d.join("cache") };
    let port = free_port();
    let _serve = Proc(
        Command::new(binary::ctop())
            .args(["webhook", "serve"])
            .arg(operator_dir())
            .args(["--port", &port.to_string(), "--address", "127.0.0.1"])
            .arg("--tls-cert")
            .arg(d.join("tls.crt"))
            .arg("--tls-key")
            .arg(d.join("tls.key"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop webhook serve starts"),
    );
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.demo.ctop.dev}\n\
        spec:\n  group: demo.ctop.dev\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  \
        scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    \
        schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n";
    let out = apply(&k, d, crd);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = Command::new("base64").args(["-w0"]).arg(d.join("ca.crt")).output().expect("base64");
    let ca_b64 = String::from_utf8(out.stdout).expect("utf-8");
    assert!(!ca_b64.is_empty());
    let configs = configurations(port, 5)
        .replace("clientConfig: {url:", &format!("clientConfig: {{caBundle: \"{ca_b64}\", url:"));
    let out = apply(&k, d, &configs);
    assert!(out.status.success(), "{}", stderr(&out));

    let mut denied = apply(&k, d, &widget("red", "red", None));
    for _ in 0..100 {
        if stderr(&denied).contains("denied the request") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        denied = apply(&k, d, &widget("red", "red", None));
    }
    assert!(stderr(&denied).contains("red widgets are not allowed"), "{}", stderr(&denied));
    let created = apply(&k, d, &widget("blue", "blue", None));
    assert!(created.status.success(), "{}", stderr(&created));
    assert_eq!(
        k.ok(&["get", "widget", "blue", "-o", r"jsonpath={.metadata.labels.demo\.ctop\.dev/team}"]),
        "core"
    );
    assert_eq!(
        k.ok(&["get", "widget", "blue", "-o", "jsonpath={.spec.size}"]),
        "3",
        "mutate wrote the default"
    );
}
