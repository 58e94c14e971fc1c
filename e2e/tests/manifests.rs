//! `ctop manifests` as a user runs it: the real binary on a scaffolded operator, its output
//! piped into the real kubectl against kubesim (`ctop sim`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ctop_e2e::binary;

fn ctop(args: &[&str]) -> Output {
    Command::new(binary::ctop()).args(args).output().expect("ctop runs")
}

fn ok(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "{what} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ctop sim` on a free port, stopped when dropped.
struct Sim {
    child: Child,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Sim {
    fn start(dir: &Path) -> Self {
        let kubeconfig = dir.join("kc");
        let child = Command::new(binary::ctop())
            .args(["sim", "--addr", "127.0.0.1:0", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop sim starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !kubeconfig.exists() {
            assert!(Instant::now() < deadline, "ctop sim did not write its kubeconfig");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self { child, kubeconfig, cache: dir.join("cache") }
    }

    fn kubectl(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
        child.wait_with_output().expect("kubectl exits")
    }

    fn get(&self, args: &[&str]) -> String {
        ok(&self.kubectl(&[&["get"], args].concat(), ""), "kubectl get")
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scaffolded operator named `hello` (kind Greeter), in `dir/hello`.
fn scaffold(dir: &Path) -> PathBuf {
    let op = dir.join("hello");
    let op_s = op.to_str().expect("utf-8");
    ok(&ctop(&["init", op_s, "--kind", "Greeter", "--group", "demo.example.com"]), "ctop init");
    op
}

fn manifests(op: &Path, extra: &[&str]) -> String {
    ok(&ctop(&[&["manifests", op.to_str().expect("utf-8")], extra].concat()), "ctop manifests")
}

const POD_ANNOTATIONS: &str = "{.spec.template.metadata.annotations.ctop\\.dev/bundle-sha256}";

#[test]
fn manifests_are_deterministic_and_name_everything_after_the_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let op = scaffold(dir.path());
    let a = manifests(&op, &["--pdb", "--network-policy"]);
    let b = manifests(&op, &["--pdb", "--network-policy"]);
    assert_eq!(a, b, "same input, same bytes");
    let file = dir.path().join("out.yaml");
    manifests(&op, &["--pdb", "--network-policy", "-o", file.to_str().expect("utf-8")]);
    assert_eq!(std::fs::read_to_string(&file).expect("written"), a);
    for needle in [
        "kind: Namespace\nmetadata:\n  labels:",
        "name: hello-system",
        "name: greeters.demo.example.com",
        "applyset.kubernetes.io/is-parent-type: \"true\"",
        "kind: ClusterRole\n",
        "kind: PodDisruptionBudget",
        "kind: NetworkPolicy",
        concat!("image: ghcr.io/cloudticon/ct-operator:", env!("CARGO_PKG_VERSION"), "\n"),
        "bundle.js.gz: H4sI",
        "memory: 416Mi",
        "- Egress\n",
    ] {
        assert!(a.contains(needle), "{needle:?} in:\n{a}");
    }

    let custom = manifests(&op, &["--name", "greeter", "--namespace", "ops", "--image", "example.com/op:1"]);
    assert!(custom.contains("name: greeter-manager") && custom.contains("namespace: ops"), "{custom}");
    assert!(custom.contains("image: example.com/op:1"));
    let bad = ctop(&["manifests", op.to_str().expect("utf-8"), "--name", "Not_A_Label"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("must be a DNS label"));
}

#[test]
fn kubectl_installs_the_manifests_and_the_crd_validates_and_defaults() {
    let dir = tempfile::tempdir().expect("temp dir");
    let op = scaffold(dir.path());
    let sim = Sim::start(dir.path());
    let yaml = manifests(&op, &["--pdb", "--network-policy"]);

    // A server-side dry run accepts every document and stores nothing. (The namespace must
    // exist for the namespaced documents, as on a real API server.)
    ok(&sim.kubectl(&["create", "namespace", "hello-system"], ""), "create namespace");
    let dry = sim.kubectl(&["apply", "--server-side", "--dry-run=server", "-f", "-"], &yaml);
    let out = ok(&dry, "kubectl apply --dry-run=server");
    assert!(out.contains("customresourcedefinition.apiextensions.k8s.io/greeters.demo.example.com serverside-applied (server dry run)"), "{out}");
    assert!(out.contains("deployment.apps/hello serverside-applied (server dry run)"), "{out}");
    assert_eq!(sim.get(&["crd", "-o", "name"]).trim(), "", "a dry run stores nothing");

    // Namespace-scoped variant: Roles in the watched namespace dry-run too.
    ok(&sim.kubectl(&["create", "namespace", "apps"], ""), "create namespace");
    let scoped = manifests(&op, &["--watch-namespace", "apps"]);
    assert!(scoped.contains("kind: Role\n") && !scoped.contains("kind: ClusterRoleBinding"), "{scoped}");
    ok(&sim.kubectl(&["apply", "--server-side", "--dry-run=server", "-f", "-"], &scoped), "scoped dry run");

    // Fetch destinations of every kind and a sized pool: the NetworkPolicy's egress and the
    // Deployment's flags dry-run too.
    let egress = manifests(
        &op,
        &[
            "--network-policy",
            "--egress",
            "https://hooks.example.com/v1",
            "--egress",
            "http://*.example.org:*",
            "--egress",
            "http://10.0.0.7:9000",
            "--egress",
            "http://[fd00::7]:8080",
            "--egress",
            "http://cache.infra.svc:6379",
            "--concurrency",
            "2",
            "--script-memory",
            "128Mi",
        ],
    );
    for needle in [
        "- --egress\n        - https://hooks.example.com/v1\n",
        "- --concurrency\n        - \"2\"\n",
        "memory: 368Mi", // 64 + 2 × (128 + 16 + 8)
        "cidr: 10.0.0.7/32",
        "cidr: fd00::7/128",
        "kubernetes.io/metadata.name: infra",
        "- 169.254.0.0/16",
    ] {
        assert!(egress.contains(needle), "{needle:?} in:\n{egress}");
    }
    let out = ok(
        &sim.kubectl(&["apply", "--server-side", "--dry-run=server", "-f", "-"], &egress),
        "egress dry run",
    );
    assert!(
        out.contains("networkpolicy.networking.k8s.io/hello serverside-applied (server dry run)"),
        "{out}"
    );
    let bad = ctop(&["manifests", op.to_str().expect("utf-8"), "--egress", "ftp://x.io"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("the scheme must be http or https"));

    // For real.
    ok(&sim.kubectl(&["apply", "--server-side", "-f", "-"], &yaml), "kubectl apply");
    ok(
        &sim.kubectl(
            &["wait", "--for", "condition=Established", "crd/greeters.demo.example.com", "--timeout=20s"],
            "",
        ),
        "CRD established",
    );
    let deploy = ["deployment", "hello", "-n", "hello-system", "-o"];
    assert_eq!(sim.get(&[&deploy[..], &["jsonpath={.metadata.generation}"]].concat()), "1");

    // The CRD's schema: an invalid sample is refused with 422, a sparse one is defaulted.
    let invalid = "apiVersion: demo.example.com/v1\nkind: Greeter\nmetadata:\n  name: bad\n  namespace: default\nspec:\n  replicas: 0\n";
    let refused = sim.kubectl(&["apply", "--server-side", "-v=6", "-f", "-"], invalid);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("422"), "the API server answers 422: {stderr}");
    assert!(stderr.contains("spec.image: Required value"), "{stderr}");
    assert!(stderr.contains("spec.replicas: Invalid value: 0"), "{stderr}");
    let sparse = "apiVersion: demo.example.com/v1\nkind: Greeter\nmetadata:\n  name: sparse\n  namespace: default\nspec:\n  image: nginx\n";
    ok(&sim.kubectl(&["apply", "--server-side", "-f", "-"], sparse), "sparse sample");
    assert_eq!(
        sim.get(&["greeter", "sparse", "-n", "default", "-o", "jsonpath={.spec.replicas},{.spec.port}"]),
        "1,8080"
    );
    let sample = std::fs::read_to_string(op.join("samples/greeter.yaml")).expect("sample");
    ok(&sim.kubectl(&["apply", "--server-side", "-n", "default", "-f", "-"], &sample), "scaffold sample");

    // Re-applying unchanged manifests leaves the pod template alone; a changed script rolls it.
    let hash = sim.get(&[&deploy[..], &[&format!("jsonpath={POD_ANNOTATIONS}")]].concat());
    assert_eq!(hash.len(), 64, "{hash}");
    ok(
        &sim.kubectl(&["apply", "--server-side", "-f", "-"], &manifests(&op, &["--pdb", "--network-policy"])),
        "re-apply",
    );
    assert_eq!(sim.get(&[&deploy[..], &["jsonpath={.metadata.generation}"]].concat()), "1", "nothing rolled");

    let script = std::fs::read_to_string(op.join("operator.ct")).expect("script");
    let changed = script
        .replace(r#""app.kubernetes.io/managed-by": "ctop""#, r#""app.kubernetes.io/managed-by": "hello""#);
    assert_ne!(script, changed);
    std::fs::write(op.join("operator.ct"), changed).expect("write");
    ok(
        &sim.kubectl(&["apply", "--server-side", "-f", "-"], &manifests(&op, &["--pdb", "--network-policy"])),
        "apply new script",
    );
    assert_eq!(sim.get(&[&deploy[..], &["jsonpath={.metadata.generation}"]].concat()), "2", "the pods roll");
    let new_hash = sim.get(&[&deploy[..], &[&format!("jsonpath={POD_ANNOTATIONS}")]].concat());
    assert_ne!(hash, new_hash);
}

/// Every example's manifests (plugins on) pass a server-side dry run: each document is
/// accepted by kubesim, none is stored. (pod-annotator declares no CRD: it works on Pods.)
#[test]
fn every_examples_manifests_pass_a_server_side_dry_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = Sim::start(dir.path());
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut names: Vec<String> = std::fs::read_dir(&examples)
        .expect("examples/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("operator.ct").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 8, "the eight examples: {names:?}");
    for name in &names {
        let yaml = manifests(&examples.join(name), &["--pdb", "--network-policy"]);
        let kinds: Vec<&str> = yaml.lines().filter_map(|l| l.strip_prefix("kind: ")).collect();
        assert!(kinds.contains(&"Deployment") && kinds.contains(&"ConfigMap"), "{name}: {kinds:?}");
        ok(&sim.kubectl(&["create", "namespace", &format!("{name}-system")], ""), "create namespace");
        let out = ok(&sim.kubectl(&["apply", "--server-side", "--dry-run=server", "-f", "-"], &yaml), name);
        let accepted = out.lines().filter(|l| l.ends_with("serverside-applied (server dry run)")).count();
        assert_eq!(accepted, kinds.len(), "{name}: every document accepted:\n{out}");
    }
    assert_eq!(sim.get(&["crd", "-o", "name"]).trim(), "", "a dry run stores nothing");
}

/// Names and values that YAML 1.1 readers (kubectl's, Go's yaml.v2) take for booleans,
/// numbers or null, as a spec's field names and as an enum.
const YAML_11_WORDS: &str = r#"import { resource, z, operator, Result } from "ctop";
const sw = resource("words.example.com/v1", "Switch", {
  scope: "Namespaced",
  spec: {
    on: z.string().optional(), off: z.string().optional(), y: z.string().optional(), n: z.string().optional(),
    no: z.string().optional(), yes: z.string().optional(),
    state: z.enum(["on", "off", "yes", "no", "y", "n", "true", "null", "~", "0x1f", "1e3", "0o17", "12:30"]),
  },
  status: {},
});
operator(sw).reconcile(() => Result.ok());
"#;

/// Whether `got` holds everything of `want` unchanged (the server may add fields).
fn contains(got: &serde_json::Value, want: &serde_json::Value, at: &str, diffs: &mut Vec<String>) {
    use serde_json::Value;
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, v) in w {
                match g.get(k) {
                    Some(gv) => contains(gv, v, &format!("{at}.{k}"), diffs),
                    None => {
                        diffs.push(format!("{at}.{k}: missing (YAML 1.1 read the key as something else?)"))
                    }
                }
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                contains(gv, wv, &format!("{at}[{i}]"), diffs);
            }
        }
        (g, w) if g == w => {}
        (g, w) => diffs.push(format!("{at}: meant {w}, kubectl sent {g}")),
    }
}

/// What `ctop manifests` writes reaches the API server as it was meant: kubectl reads YAML
/// the 1.1 way (`on`, `no`, `y` are booleans there), so every document of every example, and
/// of a script made of such words, goes through `kubectl apply --dry-run=server -o json` and
/// is compared with the documents themselves.
#[test]
fn generated_yaml_means_the_same_to_kubectl() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = Sim::start(dir.path());
    let words = dir.path().join("words");
    std::fs::create_dir_all(&words).expect("mkdir");
    std::fs::write(words.join("operator.ct"), YAML_11_WORDS).expect("write");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut ops: Vec<PathBuf> = std::fs::read_dir(&examples)
        .expect("examples/")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("operator.ct").is_file())
        .collect();
    ops.sort();
    ops.push(words);
    for op in &ops {
        let name = op.file_name().and_then(|n| n.to_str()).expect("a directory name");
        let yaml = manifests(op, &["--pdb", "--network-policy", "--namespace", name]);
        let meant: Vec<serde_json::Value> = yaml
            .split("\n---\n")
            .skip(1)
            .map(|d| serde_yaml_ng::from_str(d).expect("the output is YAML"))
            .collect();
        ok(&sim.kubectl(&["create", "namespace", name], ""), "create namespace");
        let out = ok(
            &sim.kubectl(&["apply", "--server-side", "--dry-run=server", "-o", "json", "-f", "-"], &yaml),
            name,
        );
        let got: serde_json::Value = serde_json::from_str(&out).expect("kubectl prints JSON");
        let items = got["items"].as_array().cloned().unwrap_or_else(|| vec![got.clone()]);
        assert_eq!(items.len(), meant.len(), "{name}: every document comes back");
        let mut diffs = Vec::new();
        for (g, w) in items.iter().zip(&meant) {
            contains(g, w, &format!("{name} {}", w["kind"].as_str().unwrap_or("?")), &mut diffs);
        }
        assert!(diffs.is_empty(), "kubectl read the YAML differently:\n{}", diffs.join("\n"));
    }
}

/// `ctop manifests --argocd-health` merges into the argocd-cm an Argo CD install already
/// has, as the README applies it: the health check arrives as ctop wrote it (kubectl reads
/// the script's YAML block the same), and Argo CD's own settings and labels stay.
#[test]
fn argocd_health_checks_merge_into_an_existing_argocd_cm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = Sim::start(dir.path());
    ok(&sim.kubectl(&["create", "namespace", "argocd"], ""), "create namespace");
    let existing = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\n  labels:\n    \
                    app.kubernetes.io/name: argocd-cm\n    app.kubernetes.io/part-of: argocd\ndata:\n  \
                    url: https://argocd.example.com\n";
    ok(&sim.kubectl(&["create", "-f", "-"], existing), "create argocd-cm");

    let webapp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp");
    let yaml = manifests(&webapp, &["--argocd-health"]);
    let meant: serde_json::Value = serde_yaml_ng::from_str(&yaml).expect("the output is YAML");
    let key = "resource.customizations.health.apps.example.com_WebApp";
    let script = meant["data"][key].as_str().expect("the WebApp check");
    assert!(script.starts_with("-- Argo CD health") && script.ends_with("return hs\n"), "{script}");
    let apply = ["apply", "--server-side", "--field-manager=ctop-argocd-health", "-f", "-"];
    for _ in 0..2 {
        ok(&sim.kubectl(&apply, &yaml), "kubectl apply the patch");
        let got: serde_json::Value =
            serde_json::from_str(&sim.get(&["configmap", "argocd-cm", "-n", "argocd", "-o", "json"]))
                .expect("kubectl prints JSON");
        assert_eq!(got["data"][key].as_str(), Some(script), "the script as written");
        assert_eq!(got["data"]["url"], "https://argocd.example.com", "Argo CD's settings stay");
        assert_eq!(got["metadata"]["labels"], meant["metadata"]["labels"]);
    }
}
