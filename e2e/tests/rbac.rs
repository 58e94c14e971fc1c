//! The generated RBAC is enough and nothing more: the manifests of an example are applied
//! to kubesim with `--authz` (which also enforces OwnerReferencesPermissionEnforcement),
//! then `ctop run` runs as the generated Deployment would (its args, the bundle and values
//! from the generated ConfigMap, authenticated as the generated ServiceAccount) and
//! reconciles the sample with zero 403s. Then each rule of the generated (Cluster)Roles is
//! removed in turn, and the operator must fail. Two examples between them need every kind
//! of rule: webapp (children of three kinds, status) and myapp (events, a finalizer).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Kubectl, Proc, wait_for};
use ctop_e2e::binary;
use serde_json::Value;

/// The operator's stderr mentions a denied request.
fn denied(log: &str) -> bool {
    let lower = log.to_ascii_lowercase();
    // A 403 on its own, not digits of a timestamp or a port (`…45.634039Z`).
    let status_403 = log.match_indices("403").any(|(i, _)| {
        let before = log[..i].chars().next_back();
        let after = log[i + 3..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || c == '.') && !after.is_some_and(|c| c.is_ascii_digit())
    });
    lower.contains("forbidden") || status_403
}

#[test]
fn denied_spots_403s_and_not_timestamps() {
    assert!(denied(r#"{"error":"ApiError: deployments.apps is forbidden: User cannot list"}"#));
    assert!(denied(r#"{"status":403,"message":"no"}"#));
    assert!(denied("code: 403 (Forbidden)"));
    assert!(!denied(r#"{"timestamp":"2026-11-25T04:34:45.634039Z","addr":"0.0.0.0:4403"}"#));
}

/// `ctop run` exactly as the Deployment runs it, but with the ConfigMap's files in `files`,
/// the ServiceAccount's kubeconfig and free ports; its stderr goes to `log`.
/// The admission webhook port is `hook` (the Service `ctop sim` routes to it).
fn start_operator(
    args: &[String],
    files: &Path,
    kubeconfig: &Path,
    namespace: &str,
    log: &Path,
    hook: u16,
) -> Proc {
    let args: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, a)| match a.strip_prefix("/etc/ctop/") {
            Some(file) => files.join(file).to_str().expect("utf-8").to_owned(),
            None if i > 0 && args[i - 1] == "--webhook-port" => hook.to_string(),
            None => a.clone(),
        })
        .collect();
    Proc(
        Command::new(binary::ctop())
            .args(&args)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--health-port", "0", "--metrics-port", "0"])
            .env("POD_NAMESPACE", namespace)
            .env("POD_NAME", "operator-0")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).expect("create the log"))
            .spawn()
            .expect("ctop run starts"),
    )
}

/// The sample WebApp `shop` in `ns` is reconciled: its children exist, owned by it, and it
/// has a status.
fn webapp_reconciled(k: &Kubectl, ns: &str) -> bool {
    let children =
        [("deployment", "shop"), ("service", "shop"), ("secret", "shop-token")].iter().all(|(kind, name)| {
            let out =
                k.run(&["get", kind, name, "-n", ns, "-o", "jsonpath={.metadata.ownerReferences[0].kind}"]);
            out.status.success() && out.stdout == b"WebApp"
        });
    let out = k.run(&["get", "webapp", "shop", "-n", ns, "-o", "jsonpath={.status.phase}"]);
    children && out.status.success() && out.stdout == b"Pending"
}

/// The sample MyApp `my-app` in `ns` is reconciled: its Deployment exists, owned by it, it
/// carries its finalizer and a status, and its `Created` event was published.
fn myapp_reconciled(k: &Kubectl, ns: &str) -> bool {
    let get = |args: &[&str]| {
        let out = k.run(&[args, &["-n", ns]].concat());
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    };
    get(&["get", "deployment", "my-app", "-o", "jsonpath={.metadata.ownerReferences[0].kind}"]).as_deref()
        == Some("MyApp")
        && get(&["get", "myapp", "my-app", "-o", "jsonpath={.status.phase}/{.metadata.finalizers[0]}"])
            .as_deref()
            == Some("Pending/example.com/my-finalizer")
        && get(&["get", "events.events.k8s.io", "-o", "jsonpath={.items[*].reason}"])
            .is_some_and(|r| r.split(' ').any(|x| x == "Created"))
}

/// A role object to write back: its identity, labels and `rules`.
fn role_with(obj: &Value, rules: Vec<Value>) -> Value {
    let meta = &obj["metadata"];
    let mut metadata = serde_json::json!({ "name": meta["name"], "labels": meta["labels"] });
    if let Some(ns) = meta["namespace"].as_str() {
        metadata["namespace"] = ns.into();
    }
    serde_json::json!({ "apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": metadata, "rules": rules })
}

fn replace(k: &Kubectl, dir: &Path, obj: &Value) {
    let file = dir.join("role.json");
    std::fs::write(&file, obj.to_string()).expect("write the role");
    k.ok(&["replace", "-f", file.to_str().expect("utf-8")]);
}

#[test]
fn generated_rbac_is_sufficient_and_every_rule_is_needed_webapp() {
    // The webapp script emits no events, so the events rule is not exercised by it (myapp
    // shows it is needed). Any other rule that is not needed fails the test.
    prove(
        "webapp",
        webapp_reconciled,
        &[r#"{"apiGroups":["events.k8s.io"],"resources":["events"],"verbs":["create","patch"]}"#],
    );
}

#[test]
fn generated_rbac_is_sufficient_and_every_rule_is_needed_myapp() {
    prove("myapp", myapp_reconciled, &[]);
}

/// What [`deploy`] set up: the Deployment's `ctop run` arguments, its ConfigMap's files,
/// the operator's namespace, a kubeconfig of its ServiceAccount, and every object applied.
struct Deployed {
    args: Vec<String>,
    files: std::path::PathBuf,
    ns: String,
    sa_kc: std::path::PathBuf,
    objects: Vec<Value>,
}

/// `ctop manifests` of the operator in `example`, applied through `k` (an admin); the
/// Deployment's arguments and files written out under `dir` as the Pod would see them, and
/// a kubeconfig authenticated as the generated ServiceAccount.
fn deploy(k: &Kubectl, dir: &Path, example: &Path) -> Deployed {
    let manifests = dir.join("manifests.yaml");
    let out = Command::new(binary::ctop())
        .arg("manifests")
        .arg(example)
        .arg("-o")
        .arg(&manifests)
        .output()
        .expect("ctop manifests runs");
    assert!(out.status.success(), "ctop manifests: {}", String::from_utf8_lossy(&out.stderr));
    let applied: Value = serde_json::from_str(&k.ok(&[
        "apply",
        "--server-side",
        "-f",
        manifests.to_str().expect("utf-8"),
        "-o",
        "json",
    ]))
    .expect("kubectl prints JSON");
    let objects: Vec<Value> = match applied["kind"].as_str() {
        Some("List") => applied["items"].as_array().expect("items").clone(),
        _ => vec![applied],
    };
    let of_kind = |kind: &'static str| objects.iter().filter(move |o| o["kind"] == kind);
    let one = |kind: &'static str| {
        let mut it = of_kind(kind);
        let o = it.next().unwrap_or_else(|| panic!("the manifests have a {kind}")).clone();
        assert!(it.next().is_none(), "the manifests have one {kind}");
        o
    };

    // The Deployment: its args, its ServiceAccount and the ConfigMap it mounts at /etc/ctop.
    let deployment = one("Deployment");
    let ns = deployment["metadata"]["namespace"].as_str().expect("namespace").to_owned();
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string").to_owned())
        .collect();
    assert_eq!(args.first().map(String::as_str), Some("run"), "the Deployment runs `ctop run`: {args:?}");
    let mount = container["volumeMounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["mountPath"] == "/etc/ctop")
        .expect("the ConfigMap is mounted at /etc/ctop");
    let volume = pod["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("volume");
    let cm_name = volume["configMap"]["name"].as_str().expect("a ConfigMap volume");
    let cm = of_kind("ConfigMap").find(|c| c["metadata"]["name"] == cm_name).expect("the mounted ConfigMap");
    let files = dir.join("etc-ctop");
    std::fs::create_dir(&files).expect("mkdir");
    for (name, text) in cm["data"].as_object().into_iter().flatten() {
        std::fs::write(files.join(name), text.as_str().expect("string")).expect("write a data file");
    }
    for (name, b64) in cm["binaryData"].as_object().into_iter().flatten() {
        let encoded = files.join(format!("{name}.b64"));
        std::fs::write(&encoded, b64.as_str().expect("string")).expect("write");
        let out = Command::new("base64").arg("-d").arg(&encoded).output().expect("base64 runs");
        assert!(out.status.success(), "base64 -d {name}");
        std::fs::write(files.join(name), out.stdout).expect("write a binary file");
    }
    for arg in &args {
        if let Some(file) = arg.strip_prefix("/etc/ctop/") {
            assert!(files.join(file).exists(), "the ConfigMap carries {file}");
        }
    }

    // A kubeconfig authenticated as the generated ServiceAccount.
    let sa =
        deployment["spec"]["template"]["spec"]["serviceAccountName"].as_str().expect("serviceAccountName");
    let sa_obj = one("ServiceAccount");
    assert_eq!(
        (sa_obj["metadata"]["name"].as_str(), sa_obj["metadata"]["namespace"].as_str()),
        (Some(sa), Some(&*ns))
    );
    let token = k.ok(&["create", "token", sa, "-n", &ns]);
    let sa_kc = dir.join("sa-kc");
    std::fs::copy(&k.kubeconfig, &sa_kc).expect("copy the kubeconfig");
    let sak = Kubectl { kubeconfig: sa_kc.clone(), cache: dir.join("sa-cache") };
    sak.ok(&["config", "set-credentials", "operator-sa", "--token", token.trim()]);
    sak.ok(&["config", "set-context", "--current", "--user", "operator-sa"]);
    let who = sak.ok(&["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
    assert_eq!(who, format!("system:serviceaccount:{ns}:{sa}"));
    Deployed { args, files, ns, sa_kc, objects }
}

/// Apply `example`'s manifests, run it with them, then drop each rule in turn. `unproven`
/// lists rules (as JSON) this example is allowed not to need. Each case's outcome is
/// printed (seen with `--no-capture`).
#[allow(clippy::print_stderr)]
fn prove(example: &str, reconciled: fn(&Kubectl, &str) -> bool, unproven: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let admin = dir.path().join("kc");
    let hook = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let _sim = Proc(
        Command::new(binary::ctop())
            // A bare API server: the samples stay `Pending`, which is what `reconciled` reads.
            .args(["sim", "--authz", "--no-workloads", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&admin)
            .arg("--webhook-service")
            .arg(format!("{example}-system/{example}-webhook=127.0.0.1:{hook}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop sim starts"),
    );
    wait_for(&admin);
    let k = Kubectl { kubeconfig: admin.clone(), cache: dir.path().join("cache") };

    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(example);
    let Deployed { args, files, ns, sa_kc, objects } = deploy(&k, dir.path(), &example);
    let of_kind = |kind: &'static str| objects.iter().filter(move |o| o["kind"] == kind);

    // Every rule is sufficient: zero 403s and the sample is reconciled.
    let sample = example.join("samples");
    let sample = sample.to_str().expect("utf-8");
    let log = dir.path().join("run.log");
    let mut run = start_operator(&args, &files, &sa_kc, &ns, &log, hook);
    k.ok(&["create", "namespace", "full"]);
    let deadline = Instant::now() + Duration::from_secs(40);
    // With admission handlers the sample can be written only once the operator serves them.
    let mut applied = false;
    while !applied || !reconciled(&k, "full") {
        applied = applied || k.run(&["apply", "-n", "full", "-f", sample]).status.success();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(!denied(&text), "the operator was denied with the generated RBAC:\n{text}");
        assert!(run.0.try_wait().expect("wait").is_none(), "ctop run exited:\n{text}");
        assert!(Instant::now() < deadline, "the sample was never reconciled:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!denied(&text), "the operator was denied with the generated RBAC:\n{text}");
    drop(run);

    // Every rule is needed: without it the operator is denied or never finishes.
    let tls_secret = args.iter().position(|a| a == "--tls-secret").and_then(|i| args.get(i + 1)).cloned();
    let roles: Vec<Value> = of_kind("ClusterRole").chain(of_kind("Role")).cloned().collect();
    assert!(!roles.is_empty());
    let mut unneeded = Vec::new();
    let mut case = 0;
    for role in &roles {
        let rules = role["rules"].as_array().expect("rules").clone();
        for i in 0..rules.len() {
            case += 1;
            let mut fewer = rules.clone();
            let removed = fewer.remove(i);
            replace(&k, dir.path(), &role_with(role, fewer));
            let lease_ns = ["-n", &ns];
            k.ok(&[&["delete", "lease", "--all", "--ignore-not-found"][..], &lease_ns[..]].concat());
            // Each case starts without the shared webhook certificate, so the first replica
            // must create it (and proves the create rule).
            if let Some(secret) = &tls_secret {
                k.ok(&["delete", "secret", secret, "-n", &ns, "--ignore-not-found"]);
            }
            let ns_case = format!("case{case}");
            k.ok(&["create", "namespace", &ns_case]);
            let log = dir.path().join(format!("{ns_case}.log"));
            let mut run = start_operator(&args, &files, &sa_kc, &ns, &log, hook);
            let deadline = Instant::now() + Duration::from_secs(12);
            let mut applied = false;
            let failed = loop {
                applied = applied || k.run(&["apply", "-n", &ns_case, "-f", sample]).status.success();
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                if denied(&text) || run.0.try_wait().expect("wait").is_some() {
                    break true;
                }
                if applied && reconciled(&k, &ns_case) {
                    // Give late requests (status, events) a moment to be denied.
                    std::thread::sleep(Duration::from_secs(1));
                    break denied(&std::fs::read_to_string(&log).unwrap_or_default());
                }
                if Instant::now() >= deadline {
                    break true;
                }
                std::thread::sleep(Duration::from_millis(200));
            };
            drop(run);
            let why =
                if denied(&std::fs::read_to_string(&log).unwrap_or_default()) { "denied" } else { "no 403" };
            eprintln!(
                "{} without {removed}: {} ({why})",
                role["kind"],
                if failed { "fails" } else { "still works" }
            );
            if !failed {
                unneeded.push(format!("{} {}: {removed}", role["kind"], role["metadata"]["name"]));
            }
            replace(&k, dir.path(), &role_with(role, rules.clone()));
        }
    }
    let unexpected: Vec<&String> =
        unneeded.iter().filter(|r| !unproven.iter().any(|u| r.ends_with(&format!(": {u}")))).collect();
    assert!(unexpected.is_empty(), "rules not shown to be needed: {unexpected:#?}");
    let total: usize = roles.iter().map(|r| r["rules"].as_array().map_or(0, Vec::len)).sum();
    assert!(case == total && total > 0, "every generated rule was tried: {case} of {total}");
}

/// A `Team` operator whose reconcile binds the `admin` ClusterRole to the team's users,
/// with `PERMISSION` replaced by what it declares.
const TEAM_SCRIPT: &str = r#"
import { resource, z, operator, apply, setStatus, Result, RoleBinding } from "ctop";

const team = resource("test.example.com/v1", "Team", {
  scope: "Namespaced",
  spec: { admins: z.array(z.string()) },
  status: { bound: z.boolean() },
});

operator(team)
  .manages(RoleBinding)PERMISSION
  .reconcile((cr) => {
    apply(RoleBinding({
      metadata: { name: `${cr.metadata.name}-admins` },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "admin" },
      subjects: cr.spec.admins.map((name) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "User", name })),
    }));
    setStatus(cr, { bound: true });
    return Result.ok();
  });
"#;

const BIND_ADMIN: &str = r#"
  .permission({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles"], verbs: ["bind"], resourceNames: ["admin"] })"#;

/// The generated RBAC of an operator that binds `admin` lets its ServiceAccount create that
/// RoleBinding on `ctop sim --authz` once the script declares `bind` on `admin` (what `ctop
/// check` asks for); without it kubesim refuses the binding in the API server's words.
#[test]
fn a_declared_bind_lets_the_operator_bind_admin_and_without_it_the_server_refuses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let admin = dir.path().join("kc");
    let _sim = Proc(
        Command::new(binary::ctop())
            .args(["sim", "--authz", "--no-workloads", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&admin)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop sim starts"),
    );
    wait_for(&admin);
    let k = Kubectl { kubeconfig: admin.clone(), cache: dir.path().join("cache") };
    let hook = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    k.ok(&["create", "namespace", "team"]);

    for (case, permission) in [("without", ""), ("with", BIND_ADMIN)] {
        let case_dir = dir.path().join(case);
        let op = case_dir.join("op");
        std::fs::create_dir_all(&op).expect("mkdir");
        std::fs::write(op.join("operator.ct"), TEAM_SCRIPT.replace("PERMISSION", permission)).expect("write");
        let Deployed { args, files, ns, sa_kc, .. } = deploy(&k, &case_dir, &op);
        let log = case_dir.join("run.log");
        let mut run = start_operator(&args, &files, &sa_kc, &ns, &log, hook);
        let name = format!("t-{case}");
        let cr = case_dir.join("team.yaml");
        std::fs::write(
            &cr,
            format!("apiVersion: test.example.com/v1\nkind: Team\nmetadata:\n  name: {name}\nspec:\n  admins: [alice]\n"),
        )
        .expect("write the Team");
        k.ok(&["apply", "-n", "team", "-f", cr.to_str().expect("utf-8")]);
        let binding = format!("{name}-admins");
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(run.0.try_wait().expect("wait").is_none(), "ctop run exited:\n{text}");
            if permission.is_empty() {
                // The API server's words, as the operator reports the failed apply.
                let refused = format!(
                    "rolebindings.rbac.authorization.k8s.io \\\"{binding}\\\" is forbidden: user \\\"system:serviceaccount:{ns}:op\\\" (groups=[\\\"system:serviceaccounts\\\" \\\"system:serviceaccounts:{ns}\\\" \\\"system:authenticated\\\"]) is attempting to grant RBAC permissions not currently held"
                );
                let plain = refused.replace("\\\"", "\"");
                if text.contains(&refused) || text.contains(&plain) {
                    break;
                }
            } else {
                let out =
                    k.run(&["get", "rolebinding", &binding, "-n", "team", "-o", "jsonpath={.roleRef.name}"]);
                if out.status.success() && String::from_utf8_lossy(&out.stdout) == "admin" {
                    assert!(!denied(&text), "the operator was denied with the generated RBAC:\n{text}");
                    break;
                }
            }
            assert!(Instant::now() < deadline, "{case}: never got there:\n{text}");
            std::thread::sleep(Duration::from_millis(200));
        }
        if permission.is_empty() {
            let out = k.run(&["get", "rolebinding", &binding, "-n", "team"]);
            assert!(!out.status.success(), "the binding was refused, so it does not exist");
        }
        drop(run);
    }
}
