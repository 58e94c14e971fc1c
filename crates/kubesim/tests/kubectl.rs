//! kubesim against the real `kubectl` binary: every test starts its own server, writes a
//! kubeconfig into a temporary directory and runs `kubectl` (`KUBESIM_KUBECTL` overrides
//! the binary) with a per-test discovery cache, then checks the objects on the server.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ctop_kubesim::{Config, KubeSim};
use serde_json::{Value, json};

/// What one `kubectl` run printed.
#[derive(Debug)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn ok(&self) -> bool {
        self.code == 0
    }
}

/// A running kubesim with a kubeconfig and a discovery cache in a temporary directory.
struct Env {
    sim: KubeSim,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

fn kubectl_bin() -> String {
    std::env::var("KUBESIM_KUBECTL").unwrap_or_else(|_| "kubectl".to_owned())
}

impl Env {
    async fn start() -> Self {
        Self::start_with(Config::default()).await
    }

    async fn start_with(config: Config) -> Self {
        let sim = KubeSim::start(config).await.expect("kubesim starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("write kubeconfig");
        Self { sim, dir, kubeconfig }
    }

    /// Write a kubeconfig for this server with `token` and return its path.
    /// Write the admin kubeconfig with `token` instead of the admin token and return its
    /// path (authorization must be on); an empty token means no credentials.
    fn kubeconfig_with_token(&self, name: &str, token: &str) -> PathBuf {
        let admin = self.sim.admin_token();
        let path = self.dir.path().join(name);
        let replacement = if token.is_empty() { "\"\"".to_owned() } else { token.to_owned() };
        std::fs::write(&path, self.sim.kubeconfig().replace(admin, &replacement)).expect("write kubeconfig");
        path
    }

    fn command(&self, kubeconfig: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl_bin());
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .env_remove("KUBECONFIG");
        cmd
    }

    /// Run kubectl as `kubeconfig`'s user with `stdin` piped in. The transcript goes to
    /// stderr, which the test harness shows for failing tests.
    #[allow(clippy::print_stderr)]
    fn run_as(&self, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Out {
        let mut cmd = self.command(kubeconfig, args);
        cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // kubectl blocks this thread; let the runtime move its other work elsewhere.
        let out = tokio::task::block_in_place(|| {
            let mut child = cmd.spawn().expect("kubectl runs (is it installed?)");
            if let Some(input) = stdin {
                let mut pipe = child.stdin.take().expect("stdin");
                pipe.write_all(input.as_bytes()).expect("write stdin");
            }
            child.wait_with_output().expect("kubectl finishes")
        });
        let out = Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        eprintln!("$ kubectl {}\n-> {}\n{}{}", args.join(" "), out.code, out.stdout, out.stderr);
        out
    }

    fn run(&self, args: &[&str]) -> Out {
        self.run_as(&self.kubeconfig, args, None)
    }

    fn run_stdin(&self, args: &[&str], stdin: &str) -> Out {
        self.run_as(&self.kubeconfig, args, Some(stdin))
    }

    /// Run and require success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.ok(), "kubectl {args:?} failed ({}): {}", out.code, out.stderr);
        out.stdout
    }

    /// Run and require failure; returns stderr.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.ok(), "kubectl {args:?} should fail but printed: {}", out.stdout);
        out.stderr
    }

    /// `kubectl apply -f -` (plus `extra` flags) with `yaml`; requires success.
    fn apply(&self, yaml: &str, extra: &[&str]) -> Out {
        let mut args = vec!["apply", "-f", "-"];
        args.extend_from_slice(extra);
        let out = self.run_stdin(&args, yaml);
        assert!(out.ok(), "kubectl apply {extra:?} failed ({}): {}", out.code, out.stderr);
        out
    }

    /// `kubectl get ARGS -o json`, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-o", "json"]);
        let stdout = self.ok(&all);
        serde_json::from_str(&stdout).expect("kubectl printed JSON")
    }

    /// `kubectl get ARGS -o json` of one object, or `None` when it is not found.
    fn get(&self, args: &[&str]) -> Option<Value> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["-o", "json"]);
        let out = self.run(&all);
        if out.ok() {
            return Some(serde_json::from_str(&out.stdout).expect("kubectl printed JSON"));
        }
        assert!(out.stderr.contains("NotFound"), "kubectl get {args:?}: {}", out.stderr);
        None
    }

    /// Names of `kubectl get ARGS -o json` (a list), sorted.
    fn names(&self, args: &[&str]) -> Vec<String> {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        let list = self.json(&all);
        let mut names: Vec<String> = list["items"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|o| o["metadata"]["name"].as_str().expect("name").to_owned())
            .collect();
        names.sort();
        names
    }

    /// Poll `get ARGS` until the object is gone.
    async fn wait_gone(&self, args: &[&str]) {
        wait_until(&format!("{args:?} is gone"), || self.get(args).is_none()).await;
    }
}

/// Poll `cond` every 50 ms for up to 5 s.
async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A background `kubectl` whose stdout is collected while it runs.
struct Background {
    child: Child,
    stdout: Arc<Mutex<String>>,
}

impl Background {
    fn spawn(env: &Env, args: &[&str]) -> Self {
        let mut child = env
            .command(&env.kubeconfig, args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kubectl runs");
        let stdout = Arc::new(Mutex::new(String::new()));
        let pipe = child.stdout.take().expect("stdout");
        let sink = stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().expect("lock");
                s.push_str(&line);
                s.push('\n');
            }
        });
        Self { child, stdout }
    }

    fn output(&self) -> String {
        self.stdout.lock().expect("lock").clone()
    }

    /// Wait until some line satisfies `pred`.
    async fn wait_line(&self, what: &str, pred: impl Fn(&[&str]) -> bool) {
        wait_until(what, || self.output().lines().any(|l| pred(&l.split_whitespace().collect::<Vec<_>>())))
            .await;
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn data(obj: &Value) -> &Value {
    &obj["data"]
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["annotations"][key].as_str()
}

fn manager_names(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_owned(),
                        e["operation"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every managedFields entry carries the time its manager last changed something.
fn assert_entries_have_time(obj: &Value) {
    for e in obj["metadata"]["managedFields"].as_array().expect("managedFields") {
        assert!(e["time"].is_string(), "managedFields entry without time: {e}");
    }
}

/// A CRD `widgets.example.com` with a schema, printer columns and a status subresource.
const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
    shortNames: [wd]
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    - name: Color
      type: string
      jsonPath: .spec.color
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size:
                type: integer
                minimum: 1
                maximum: 10
              color:
                type: string
                enum: [red, blue]
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

fn widget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

/// Apply the Widget CRD and wait until it is established.
fn install_widgets(env: &Env) {
    env.apply(WIDGET_CRD, &[]);
    let out = env.ok(&["wait", "--for=condition=established", "crd/widgets.example.com", "--timeout=10s"]);
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met"),
        "{out}"
    );
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.0
        env:
        - {name: A, value: "1"}
        - {name: B, value: "2"}
      - name: sidecar
        image: busybox:1.0
"#;

fn containers(deploy: &Value) -> &Vec<Value> {
    deploy["spec"]["template"]["spec"]["containers"].as_array().expect("containers")
}

fn container<'a>(deploy: &'a Value, name: &str) -> &'a Value {
    containers(deploy)
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("container {name} in {deploy}"))
}

// ---------------------------------------------------------------------------------------
// apply

#[tokio::test(flavor = "multi_thread")]
async fn apply_client_side_create_update_and_prune_fields() {
    let env = Env::start().await;
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {keep: k, drop: d}\ndata:\n  one: \"1\"\n  two: \"2\"\n";
    let out = env.apply(v1, &[]);
    assert!(out.stdout.contains("configmap/app created"), "{}", out.stdout);
    let cm = env.get(&["configmap", "app"]).expect("created");
    assert_eq!(data(&cm), &json!({"one": "1", "two": "2"}));
    let last: Value = serde_json::from_str(
        annotation(&cm, "kubectl.kubernetes.io/last-applied-configuration").expect("annotation"),
    )
    .expect("last-applied is JSON");
    assert_eq!(last["data"], json!({"one": "1", "two": "2"}));

    // Out-of-band change that apply must keep (not in last-applied).
    env.ok(&["label", "configmap", "app", "manual=yes"]);

    let v2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels: {keep: k}\ndata:\n  one: \"10\"\n";
    let out = env.apply(v2, &[]);
    assert!(out.stdout.contains("configmap/app configured"), "{}", out.stdout);
    let cm = env.get(&["configmap", "app"]).expect("still there");
    assert_eq!(data(&cm), &json!({"one": "10"}), "changed field lands, removed field is pruned");
    assert_eq!(cm["metadata"]["labels"], json!({"keep": "k", "manual": "yes"}));
    let last: Value =
        serde_json::from_str(annotation(&cm, "kubectl.kubernetes.io/last-applied-configuration").unwrap())
            .expect("last-applied is JSON");
    assert_eq!(last["data"], json!({"one": "10"}));

    // Re-applying the same manifest changes nothing.
    let rv = cm["metadata"]["resourceVersion"].clone();
    let out = env.apply(v2, &[]);
    assert!(out.stdout.contains("configmap/app unchanged"), "{}", out.stdout);
    assert_eq!(env.get(&["configmap", "app"]).unwrap()["metadata"]["resourceVersion"], rv);
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_client_side_deployment_merges_containers_by_name() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    // Another writer adds args to the sidecar; apply must keep them (containers merge by name).
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","args":["sleep","3600"]}]}}}}"#,
    ]);

    let changed =
        DEPLOYMENT.replace("nginx:1.0", "nginx:2.0").replace("        - {name: B, value: \"2\"}\n", "");
    let out = env.apply(&changed, &[]);
    assert!(out.stdout.contains("deployment.apps/web configured"), "{}", out.stdout);
    let d = env.get(&["deployment", "web"]).expect("deployment");
    assert_eq!(containers(&d).len(), 2, "{d}");
    assert_eq!(containers(&d)[0]["name"], "app", "order kept");
    let app = container(&d, "app");
    assert_eq!(app["image"], "nginx:2.0");
    assert_eq!(app["env"], json!([{"name": "A", "value": "1"}]), "env entry B removed via last-applied");
    let sidecar = container(&d, "sidecar");
    assert_eq!(sidecar["image"], "busybox:1.0");
    assert_eq!(sidecar["args"], json!(["sleep", "3600"]), "field set by another writer survives");
    assert_eq!(d["metadata"]["generation"], json!(3));
}

const SSA_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  owned: \"1\"\n";

#[tokio::test(flavor = "multi_thread")]
async fn apply_server_side_records_kubectl_as_manager() {
    let env = Env::start().await;
    let out = env.apply(SSA_CM, &["--server-side"]);
    assert!(out.stdout.contains("configmap/ssa serverside-applied"), "{}", out.stdout);
    let cm = env.get(&["configmap", "ssa", "--show-managed-fields"]).expect("created");
    assert_eq!(data(&cm), &json!({"owned": "1"}));
    assert_eq!(manager_names(&cm), vec![("kubectl".to_owned(), "Apply".to_owned())], "{cm}");
    let entry = &cm["metadata"]["managedFields"][0];
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["fieldsV1"]["f:data"], json!({"f:owned": {}}), "{entry}");
    assert!(entry["time"].is_string(), "every managedFields entry has a time: {entry}");
    assert!(
        annotation(&cm, "kubectl.kubernetes.io/last-applied-configuration").is_none(),
        "SSA sets no last-applied"
    );

    // Default output hides managedFields.
    let plain = env.get(&["configmap", "ssa"]).unwrap();
    assert!(plain["metadata"].get("managedFields").is_none(), "{plain}");

    // Dropping a field from the applied config removes it.
    let out = env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  other: \"2\"\n",
        &["--server-side"],
    );
    assert!(out.ok());
    assert_eq!(data(&env.get(&["configmap", "ssa"]).unwrap()), &json!({"other": "2"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_server_side_conflict_and_force() {
    let env = Env::start().await;
    env.apply(SSA_CM, &["--server-side"]);
    let changed = SSA_CM.replace("\"1\"", "\"2\"");
    let out = env.run_stdin(&["apply", "--server-side", "--field-manager", "other", "-f", "-"], &changed);
    assert!(!out.ok(), "conflicting apply must fail");
    assert!(
        out.stderr.contains(r#"error: Apply failed with 1 conflict: conflict with "kubectl": .data.owned"#),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--force-conflicts"), "kubectl explains the resolution: {}", out.stderr);
    assert_eq!(data(&env.get(&["configmap", "ssa"]).unwrap()), &json!({"owned": "1"}), "nothing changed");

    // Same value: no conflict, shared ownership.
    env.apply(SSA_CM, &["--server-side", "--field-manager", "other"]);

    env.apply(&changed, &["--server-side", "--field-manager", "other", "--force-conflicts"]);
    let cm = env.get(&["configmap", "ssa", "--show-managed-fields"]).unwrap();
    assert_eq!(data(&cm), &json!({"owned": "2"}));
    assert_entries_have_time(&cm);
    let entries = cm["metadata"]["managedFields"].as_array().expect("managedFields");
    let other = entries.iter().find(|e| e["manager"] == "other").expect("other manages");
    assert_eq!(other["fieldsV1"]["f:data"], json!({"f:owned": {}}));
    // kubectl lost the field; its entry is gone since it owns nothing else but metadata-less data.
    for e in entries.iter().filter(|e| e["manager"] == "kubectl") {
        assert!(e["fieldsV1"]["f:data"].get("f:owned").is_none(), "kubectl no longer owns .data.owned: {e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_server_side_deployment_shared_between_managers() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &["--server-side"]);
    // A second manager applies only its own container: containers are a map keyed by name.
    let injector = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: proxy\n        image: envoy:1\n";
    env.apply(injector, &["--server-side", "--field-manager", "injector"]);
    let d = env.get(&["deployment", "web"]).unwrap();
    let names: Vec<&str> = containers(&d).iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["app", "sidecar", "proxy"], "{d}");
    assert_eq!(
        container(&d, "app")["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );

    // The first manager drops the sidecar and env B: only its own fields go.
    let trimmed = DEPLOYMENT
        .replace("        - {name: B, value: \"2\"}\n", "")
        .replace("      - name: sidecar\n        image: busybox:1.0\n", "");
    env.apply(&trimmed, &["--server-side"]);
    let d = env.get(&["deployment", "web"]).unwrap();
    let names: Vec<&str> = containers(&d).iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["app", "proxy"], "{d}");
    assert_eq!(container(&d, "app")["env"], json!([{"name": "A", "value": "1"}]));

    // kubectl scale takes .spec.replicas through the scale subresource; applying a
    // different value conflicts with it.
    env.ok(&["scale", "deployment", "web", "--replicas=3"]);
    let d = env.get(&["deployment", "web", "--show-managed-fields"]).unwrap();
    let scaler = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["operation"] == "Update")
        .unwrap_or_else(|| panic!("an Update entry from kubectl scale: {d}"));
    assert_eq!(scaler["manager"], "kubectl");
    assert_eq!(scaler["apiVersion"], "apps/v1");
    assert_eq!(scaler["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(scaler["subresource"], "scale", "{scaler}");
    let out = env.run_stdin(&["apply", "--server-side", "-f", "-"], &trimmed);
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"error: Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas"#),
        "{}",
        out.stderr
    );
    assert_eq!(env.get(&["deployment", "web"]).unwrap()["spec"]["replicas"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn apply_migrates_client_side_to_server_side() {
    let env = Env::start().await;
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mig\ndata:\n  a: \"1\"\n  b: \"2\"\n";
    env.apply(v1, &[]);
    let cm = env.get(&["configmap", "mig", "--show-managed-fields"]).unwrap();
    assert_eq!(
        manager_names(&cm),
        vec![("kubectl-client-side-apply".to_owned(), "Update".to_owned())],
        "{cm}"
    );

    // Server-side apply of the same manifest without field b: kubectl migrates the
    // client-side manager to `kubectl`, so b is removed instead of left orphaned.
    let v2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mig\ndata:\n  a: \"1\"\n";
    let out = env.apply(v2, &["--server-side"]);
    assert!(out.stdout.contains("configmap/mig serverside-applied"), "{}", out.stdout);
    let cm = env.get(&["configmap", "mig", "--show-managed-fields"]).unwrap();
    assert_eq!(data(&cm), &json!({"a": "1"}), "b removed after migration: {cm}");
    let managers = manager_names(&cm);
    assert!(managers.contains(&("kubectl".to_owned(), "Apply".to_owned())), "{managers:?}");
    assert!(
        !managers.iter().any(|(m, _)| m == "kubectl-client-side-apply"),
        "client-side manager migrated: {managers:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn create_replace_and_conflicts() {
    let env = Env::start().await;
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cr\ndata: {a: \"1\"}\n";
    let out = env.run_stdin(&["create", "-f", "-"], cm);
    assert!(out.stdout.contains("configmap/cr created"), "{}", out.stderr);
    let out = env.run_stdin(&["create", "-f", "-"], cm);
    assert!(
        out.stderr.contains(r#"Error from server (AlreadyExists): error when creating "STDIN": configmaps "cr" already exists"#),
        "{}",
        out.stderr
    );
    let live = env.get(&["configmap", "cr"]).unwrap();
    let rv = live["metadata"]["resourceVersion"].as_str().unwrap().to_owned();

    // replace with the current resourceVersion works and bumps it.
    let mut next = live.clone();
    next["data"]["a"] = json!("2");
    let out = env.run_stdin(&["replace", "-f", "-"], &next.to_string());
    assert!(out.stdout.contains("configmap/cr replaced"), "{}", out.stderr);
    let live = env.get(&["configmap", "cr"]).unwrap();
    assert_eq!(data(&live), &json!({"a": "2"}));
    assert_ne!(live["metadata"]["resourceVersion"].as_str().unwrap(), rv);

    // replace with the stale one is a conflict.
    next["data"]["a"] = json!("3");
    let out = env.run_stdin(&["replace", "-f", "-"], &next.to_string());
    assert!(
        out.stderr.contains(r#"Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps "cr": the object has been modified; please apply your changes to the latest version and try again"#),
        "{}",
        out.stderr
    );
    assert_eq!(data(&env.get(&["configmap", "cr"]).unwrap()), &json!({"a": "2"}));

    let err = env.fails(&["get", "configmap", "nope"]);
    assert!(err.contains(r#"Error from server (NotFound): configmaps "nope" not found"#), "{err}");
    let err = env.fails(&["delete", "configmap", "nope"]);
    assert!(err.contains(r#"Error from server (NotFound): configmaps "nope" not found"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn server_dry_run_and_diff() {
    let env = Env::start().await;
    let v1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\ndata: {a: \"1\"}\n";
    let out = env.apply(v1, &["--dry-run=server"]);
    assert!(out.stdout.contains("configmap/dry created (server dry run)"), "{}", out.stdout);
    assert!(env.get(&["configmap", "dry"]).is_none(), "dry run stores nothing");

    env.apply(v1, &[]);
    // kubectl diff: exit 0 when nothing changes, 1 with a diff of the change.
    let out = env.run_stdin(&["diff", "-f", "-"], v1);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let out = env.run_stdin(&["diff", "-f", "-"], &v1.replace("\"1\"", "\"2\""));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.lines().any(|l| l.trim_start_matches('-').trim() == "a: \"1\""), "{}", out.stdout);
    assert!(out.stdout.lines().any(|l| l.trim_start_matches('+').trim() == "a: \"2\""), "{}", out.stdout);
    assert!(
        !out.stdout.contains("resourceVersion"),
        "diff hides server-set fields that did not change: {}",
        out.stdout
    );
    assert_eq!(data(&env.get(&["configmap", "dry"]).unwrap()), &json!({"a": "1"}), "diff changes nothing");

    let out = env.apply(&v1.replace("\"1\"", "\"3\""), &["--server-side", "--dry-run=server"]);
    assert!(out.stdout.contains("configmap/dry serverside-applied (server dry run)"), "{}", out.stdout);
    assert_eq!(data(&env.get(&["configmap", "dry"]).unwrap()), &json!({"a": "1"}));
}

// ---------------------------------------------------------------------------------------
// CRDs

#[tokio::test(flavor = "multi_thread")]
async fn crd_established_and_printer_columns() {
    let env = Env::start().await;
    install_widgets(&env);
    let crd = env.get(&["crd", "widgets.example.com"]).expect("crd");
    let conds = crd["status"]["conditions"].as_array().expect("conditions");
    assert!(conds.iter().any(|c| c["type"] == "Established" && c["status"] == "True"), "{crd}");
    assert!(conds.iter().any(|c| c["type"] == "NamesAccepted" && c["status"] == "True"), "{crd}");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");

    env.apply(&widget("small", "  size: 2\n  color: red\n"), &[]);
    env.apply(&widget("big", "  size: 9\n"), &[]);
    assert_eq!(env.names(&["widgets"]), ["big", "small"]);
    assert_eq!(env.names(&["wd"]), ["big", "small"], "short name");
    assert_eq!(env.names(&["widget.example.com"]), ["big", "small"], "resource.group");

    let table = env.ok(&["get", "widgets"]);
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "SIZE", "COLOR", "AGE"], "{table}");
    assert_eq!(&lines[1][..2], ["big", "9"], "{table}");
    assert_eq!(lines[1].len(), 3, "empty color is blank: {table}");
    assert_eq!(&lines[2][..3], ["small", "2", "red"], "{table}");
    assert!(lines[2][3].ends_with('s'), "age like 0s: {table}");

    let wide = env.ok(&["get", "widget", "small", "--no-headers"]);
    assert!(wide.split_whitespace().collect::<Vec<_>>().starts_with(&["small", "2", "red"]), "{wide}");

    // The CRD's resource shows up in discovery.
    let resources = env.ok(&["api-resources", "--api-group=example.com"]);
    let row = resources.lines().find(|l| l.starts_with("widgets")).expect("widgets row");
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["widgets", "wd", "example.com/v1", "true", "Widget"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_schema_violation_is_422_naming_the_field() {
    let env = Env::start().await;
    install_widgets(&env);
    let out = env.run_stdin(&["apply", "-f", "-"], &widget("bad", "  size: twenty\n"));
    assert!(!out.ok());
    assert!(out.stderr.contains(r#"The Widget "bad" is invalid: "#), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#
        ),
        "{}",
        out.stderr
    );

    let out = env.run_stdin(&["apply", "-f", "-"], &widget("bad", "  size: 20\n  color: green\n"));
    assert!(!out.ok());
    assert!(out.stderr.contains(r#"The Widget "bad" is invalid: "#), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(r#"spec.color: Unsupported value: "green": supported values: "red", "blue""#),
        "{}",
        out.stderr
    );

    let out = env.run_stdin(&["apply", "-f", "-"], &widget("bad", "  color: red\n"));
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"The Widget "bad" is invalid: spec.size: Required value"#),
        "{}",
        out.stderr
    );

    assert!(env.get(&["widget", "bad"]).is_none(), "nothing stored");

    // An update that breaks the schema is rejected too, and the object is unchanged.
    env.apply(&widget("good", "  size: 3\n"), &[]);
    let out = env.run(&["patch", "widget", "good", "--type", "merge", "-p", r#"{"spec":{"size":0}}"#]);
    assert!(!out.ok());
    assert!(out.stderr.contains(r#"The Widget "good" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"#), "{}", out.stderr);
    assert_eq!(env.get(&["widget", "good"]).unwrap()["spec"]["size"], 3);
}

/// A CRD of Gadgets whose `spec` carries `x-kubernetes-validations`; `{rules}` is the
/// YAML list of rules, indented for the `spec` schema.
fn gadget_crd(spec_extra: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {{kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
{spec_extra}
"#
    )
}

fn gadget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\nspec: {spec}\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_with_a_bad_default_or_an_uncompilable_rule_is_refused() {
    let env = Env::start().await;
    // A default that does not validate against its own schema: the default is validated
    // by kube-openapi with an empty root name (apiserver/schema/defaulting/validation.go),
    // hence " in body".
    let crd = gadget_crd(
        "            properties:\n              size: {type: integer, minimum: 1, default: 0}\n              mode: {type: string, enum: [a, b], default: c}",
    );
    let err = env.run_stdin(&["apply", "-f", "-"], &crd).stderr;
    assert!(
        err.contains(
            r#"The CustomResourceDefinition "gadgets.example.com" is invalid: 
* spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[mode].default: Unsupported value: "c": supported values: "a", "b"
* spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: 0:  in body should be greater than or equal to 1"#
        ),
        "{err}"
    );
    // A rule that does not parse: the field and value as ValidateCustomResourceDefinitionOpenAPISchema
    // reports them (apis/apiextensions/validation/validation.go) and cel-go's issue text
    // after "compilation failed: " (apiserver/schema/cel/compilation.go).
    let crd = gadget_crd("            x-kubernetes-validations:\n            - rule: self.size >");
    let err = env.run_stdin(&["apply", "-f", "-"], &crd).stderr;
    assert!(
        err.contains(
            "The CustomResourceDefinition \"gadgets.example.com\" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: \
             Invalid value: apiextensions.ValidationRule{Rule:\"self.size >\", Message:\"\", MessageExpression:\"\", \
             Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: \
             compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.size >\n | ...........^"
        ),
        "{err}"
    );
    assert!(env.get(&["crd", "gadgets.example.com"]).is_none(), "nothing stored");
}

#[tokio::test(flavor = "multi_thread")]
async fn cel_rules_run_on_create_and_update() {
    let env = Env::start().await;
    let crd = gadget_crd(
        r#"            x-kubernetes-validations:
            - rule: self.min <= self.max
              messageExpression: "'min ' + string(self.min) + ' is above max ' + string(self.max)"
              fieldPath: .min
            - rule: self.mode == oldSelf.mode
              message: mode is immutable
              reason: FieldValueForbidden
            properties:
              min: {type: integer}
              max: {type: integer, x-kubernetes-validations: [{rule: self <= 100}]}
              mode: {type: string}"#,
    );
    env.apply(&crd, &[]);
    env.ok(&["wait", "--for=condition=established", "crd/gadgets.example.com", "--timeout=10s"]);

    // Messages as cel/validation.go words them: the rule's field (or fieldPath) with
    // Invalid value: "<schema type>" and the messageExpression, message, or
    // "failed rule: <rule>"; the reason picks the cause type. A node's own rules run
    // before those of its fields.
    let err = env.run_stdin(&["apply", "-f", "-"], &gadget("g", "{min: 500, max: 300, mode: a}")).stderr;
    assert!(
        err.contains(
            r#"The Gadget "g" is invalid: 
* spec.min: Invalid value: "object": min 500 is above max 300
* spec.max: Invalid value: "integer": failed rule: self <= 100"#
        ),
        "{err}"
    );
    // A schema error (here a type error) blocks the rules (registry/customresource/strategy.go).
    let err = env.run_stdin(&["apply", "-f", "-"], &gadget("g", "{min: x, max: 1, mode: a}")).stderr;
    assert!(
        err.contains(
            r#"* <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
        ),
        "{err}"
    );
    assert!(env.get(&["gadget", "g"]).is_none(), "nothing stored");

    // The transition rule does not run on create, and runs on update.
    env.apply(&gadget("g", "{min: 1, max: 3, mode: a}"), &[]);
    let err = env.fails(&["patch", "gadget", "g", "--type", "merge", "-p", r#"{"spec":{"mode":"b"}}"#]);
    assert!(err.contains(r#"The Gadget "g" is invalid: spec: Forbidden: mode is immutable"#), "{err}");
    let err = env.fails(&["patch", "gadget", "g", "--type", "merge", "-p", r#"{"spec":{"min":4}}"#]);
    assert!(
        err.contains(r#"The Gadget "g" is invalid: spec.min: Invalid value: "object": min 4 is above max 3"#),
        "{err}"
    );
    env.ok(&["patch", "gadget", "g", "--type", "merge", "-p", r#"{"spec":{"max":9}}"#]);
    assert_eq!(env.get(&["gadget", "g"]).unwrap()["spec"]["max"], 9);
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_unknown_fields_warn_or_fail() {
    let env = Env::start().await;
    install_widgets(&env);
    let out = env.apply(&widget("w1", "  size: 1\n  bogus: x\n"), &["--validate=warn"]);
    assert!(out.stderr.contains(r#"Warning: unknown field "spec.bogus""#), "{}", out.stderr);
    let w = env.get(&["widget", "w1"]).expect("created with warning");
    assert_eq!(w["spec"], json!({"size": 1}), "unknown field pruned");

    let out = env.apply(&widget("w2", "  size: 1\n  bogus: x\n"), &["--validate=false"]);
    assert!(!out.stderr.contains("Warning"), "Ignore: silent: {}", out.stderr);
    assert_eq!(env.get(&["widget", "w2"]).unwrap()["spec"], json!({"size": 1}));

    // kubectl's default is --validate=strict.
    for validate in ["--validate=strict", "--validate=true"] {
        let out = env
            .run_stdin(&["apply", validate, "-f", "-"], &widget("w", "  size: 1\n  bogus: x\n  more: z\n"));
        assert!(!out.ok(), "{validate}");
        assert!(
            out.stderr.contains(
                r#"Error from server (BadRequest): error when creating "STDIN": Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus", unknown field "spec.more""#
            ),
            "{validate}: {}",
            out.stderr
        );
        assert!(env.get(&["widget", "w"]).is_none());
    }
}

// ---------------------------------------------------------------------------------------
// get

#[tokio::test(flavor = "multi_thread")]
async fn get_watch_prints_added_modified_deleted() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w1\n  labels: {app: w}\ndata: {k: a}\n",
        &[],
    );
    let watch =
        Background::spawn(&env, &["get", "configmaps", "-l", "app=w", "--watch", "--output-watch-events"]);
    watch.wait_line("initial ADDED w1", |l| l.starts_with(&["ADDED", "w1"])).await;

    env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w2\n  labels: {app: w}\ndata: {k: a, j: b}\n",
        &[],
    );
    watch.wait_line("ADDED w2", |l| l.starts_with(&["ADDED", "w2", "2"])).await;
    env.ok(&["patch", "configmap", "w1", "--type", "merge", "-p", r#"{"data":{"k2":"b","k3":"c"}}"#]);
    watch.wait_line("MODIFIED w1", |l| l.starts_with(&["MODIFIED", "w1", "3"])).await;
    env.ok(&["delete", "configmap", "w2"]);
    watch.wait_line("DELETED w2", |l| l.starts_with(&["DELETED", "w2"])).await;
    // An object outside the selector is not shown.
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata: {k: a}\n", &[]);
    env.ok(&["label", "configmap", "w1", "seen=yes"]);
    watch.wait_line("MODIFIED w1 again", |l| l.starts_with(&["MODIFIED", "w1"]) && l.len() >= 4).await;
    let out = watch.output();
    assert!(
        out.lines().next().unwrap_or_default().split_whitespace().eq(["EVENT", "NAME", "DATA", "AGE"]),
        "{out}"
    );
    assert!(!out.contains("other"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_label_selectors() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: sel\n", &[]);
    let cms =
        [("a", "{env: prod, tier: web}"), ("b", "{env: dev, tier: web}"), ("c", "{env: test}"), ("d", "{}")];
    for (name, labels) in cms {
        env.apply(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: sel\n  labels: {labels}\n"), &[]);
    }
    let sel = |s: &str| env.names(&["configmaps", "-n", "sel", "-l", s]);
    assert_eq!(sel("env=prod"), ["a"]);
    assert_eq!(sel("env==prod"), ["a"]);
    assert_eq!(sel("env!=prod"), ["b", "c", "d"], "!= includes objects without the label");
    assert_eq!(sel("env in (prod,dev)"), ["a", "b"]);
    assert_eq!(sel("env notin (prod,dev)"), ["c", "d"]);
    assert_eq!(sel("tier"), ["a", "b"]);
    assert_eq!(sel("!tier"), ["c", "d"]);
    assert_eq!(sel("tier=web,env!=dev"), ["a"]);
    assert!(sel("env=none").is_empty());
    let out = env.ok(&["get", "configmaps", "-n", "sel", "-l", "env=none"]);
    assert!(out.is_empty());
    let out = env.run(&["get", "configmaps", "-n", "sel", "-l", "env=none"]);
    assert!(out.stderr.contains("No resources found in sel namespace."), "{}", out.stderr);
    // A malformed selector is rejected by kubectl or the server, never ignored.
    let out = env.run(&["get", "configmaps", "-n", "sel", "-l", "env in prod"]);
    assert!(!out.ok(), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn get_field_selectors() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n", &[]);
    for (name, ns) in [("x", "default"), ("z", "default"), ("x", "other")] {
        env.apply(
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n"),
            &[],
        );
    }
    assert_eq!(env.names(&["configmaps", "--field-selector", "metadata.name=x"]), ["x"]);
    assert_eq!(env.names(&["configmaps", "--field-selector", "metadata.name!=x"]), ["z"]);
    let all = env.json(&["get", "configmaps", "-A", "--field-selector", "metadata.name=x"]);
    let mut nss: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["namespace"].as_str().unwrap())
        .collect();
    nss.sort_unstable();
    assert_eq!(nss, ["default", "other"]);
    assert_eq!(env.names(&["configmaps", "-A", "--field-selector", "metadata.namespace=other"]), ["x"]);
    // Unsupported fields get the real error.
    let err = env.fails(&["get", "configmaps", "--field-selector", "data.k=v"]);
    assert!(err.contains(r#"field label not supported: data.k"#), "{err}");
}

// ---------------------------------------------------------------------------------------
// patch

#[tokio::test(flavor = "multi_thread")]
async fn patch_merge() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata: {a: \"1\", b: \"2\"}\n", &[]);
    let out = env.ok(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"a":"10","b":null,"c":"3"}}"#,
    ]);
    assert!(out.contains("configmap/p patched"), "{out}");
    assert_eq!(data(&env.get(&["configmap", "p"]).unwrap()), &json!({"a": "10", "c": "3"}));
    let out = env.ok(&["patch", "configmap", "p", "--type", "merge", "-p", r#"{"data":{"a":"10"}}"#]);
    assert!(out.contains("configmap/p patched (no change)"), "{out}");
    let err = env.fails(&["patch", "configmap", "missing", "--type", "merge", "-p", "{}"]);
    assert!(err.contains(r#"Error from server (NotFound): configmaps "missing" not found"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_json_and_failing_test_op() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata: {a: \"1\"}\n", &[]);
    env.ok(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/a","value":"1"},{"op":"replace","path":"/data/a","value":"2"},{"op":"add","path":"/data/b","value":"3"},{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]"#,
    ]);
    let cm = env.get(&["configmap", "p"]).unwrap();
    assert_eq!(data(&cm), &json!({"a": "2", "b": "3"}));
    assert_eq!(cm["metadata"]["labels"], json!({"x": "y"}));

    let rv = cm["metadata"]["resourceVersion"].clone();
    let err = env.fails(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/data/b","value":"4"},{"op":"test","path":"/data/a","value":"1"}]"#,
    ]);
    let cm = env.get(&["configmap", "p"]).unwrap();
    assert_eq!(data(&cm), &json!({"a": "2", "b": "3"}), "a failed patch changes nothing");
    assert_eq!(cm["metadata"]["resourceVersion"], rv);
    // The real server answers 422 with only the generic message (and empty details).
    assert_eq!(
        err.trim_end(),
        "The request is invalid: the server rejected our request due to an error in our request"
    );

    let err = env.fails(&[
        "patch",
        "configmap",
        "p",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/data/nope"}]"#,
    ]);
    assert!(err.contains("The request is invalid"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_strategic_deployment() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    // Default type is strategic: containers merge by name, env merges by name.
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:3.0","env":[{"name":"C","value":"3"}]}]}}}}"#,
    ]);
    let d = env.get(&["deployment", "web"]).unwrap();
    assert_eq!(containers(&d).len(), 2, "sidecar kept: {d}");
    let app = container(&d, "app");
    assert_eq!(app["image"], "nginx:3.0");
    let env_names: Vec<&str> =
        app["env"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(env_names, ["C", "A", "B"], "patch items first, then the rest (SMP order)");

    // $patch: delete removes one container by name.
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}}}}"#,
    ]);
    let d = env.get(&["deployment", "web"]).unwrap();
    assert_eq!(containers(&d).iter().map(|c| c["name"].as_str().unwrap()).collect::<Vec<_>>(), ["app"]);

    // A merge patch replaces the list instead.
    env.ok(&[
        "patch",
        "deployment",
        "web",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"only","image":"x"}]}}}}"#,
    ]);
    let d = env.get(&["deployment", "web"]).unwrap();
    // The list is replaced; the API server defaults the new container as any other.
    assert_eq!(
        containers(&d),
        &vec![json!({"name": "only", "image": "x", "imagePullPolicy": "Always", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})]
    );

    // Strategic merge patch is not supported for custom resources: 415.
    install_widgets(&env);
    env.apply(&widget("w", "  size: 1\n"), &[]);
    let err = env.fails(&["patch", "widget", "w", "-p", r#"{"spec":{"size":2}}"#]);
    assert_eq!(
        err.trim_end(),
        "error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: the body of the \
         request was in an unknown format - accepted media types include: application/json-patch+json, \
         application/merge-patch+json, application/apply-patch+yaml"
    );
}

// ---------------------------------------------------------------------------------------
// delete

#[tokio::test(flavor = "multi_thread")]
async fn delete_with_finalizer_waits_for_removal() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\n  finalizers: [example.com/hold]\n",
        &[],
    );
    let out = env.ok(&["delete", "configmap", "f", "--wait=false"]);
    assert!(out.contains(r#"configmap "f" deleted"#), "{out}");
    let cm = env.get(&["configmap", "f"]).expect("held by its finalizer");
    assert!(cm["metadata"]["deletionTimestamp"].is_string(), "{cm}");
    assert_eq!(cm["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(cm["metadata"]["finalizers"], json!(["example.com/hold"]));

    // Deleting again is fine and changes nothing.
    env.ok(&["delete", "configmap", "f", "--wait=false"]);
    // Adding a new finalizer while deleting is refused? No: only removal matters here.
    env.ok(&[
        "patch",
        "configmap",
        "f",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    env.wait_gone(&["configmap", "f"]).await;
}

const OWNER: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n";

/// Create `owner` and a `child` ConfigMap owned by it; returns the owner's uid.
fn owner_and_child(env: &Env, child_finalizer: bool) -> String {
    env.apply(OWNER, &[]);
    let uid =
        env.get(&["configmap", "owner"]).expect("owner")["metadata"]["uid"].as_str().expect("uid").to_owned();
    let finalizers = if child_finalizer { "  finalizers: [example.com/hold]\n" } else { "" };
    env.apply(
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n{finalizers}  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: owner\n    uid: {uid}\n    blockOwnerDeletion: true\n"
        ),
        &[],
    );
    uid
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_cascade_background() {
    let env = Env::start().await;
    owner_and_child(&env, false);
    let out = env.ok(&["delete", "configmap", "owner", "--cascade=background"]);
    assert!(out.contains(r#"configmap "owner" deleted"#), "{out}");
    assert!(env.get(&["configmap", "owner"]).is_none(), "owner goes at once");
    env.wait_gone(&["configmap", "child"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_cascade_foreground() {
    let env = Env::start().await;
    owner_and_child(&env, true);
    env.ok(&["delete", "configmap", "owner", "--cascade=foreground", "--wait=false"]);
    let owner = env.get(&["configmap", "owner"]).expect("owner waits for its child");
    assert!(owner["metadata"]["deletionTimestamp"].is_string(), "{owner}");
    assert_eq!(owner["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    wait_until("child is being deleted", || {
        env.get(&["configmap", "child"]).is_some_and(|c| c["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    assert!(env.get(&["configmap", "owner"]).is_some(), "owner stays while the blocking child exists");

    env.ok(&["patch", "configmap", "child", "--type", "merge", "-p", r#"{"metadata":{"finalizers":null}}"#]);
    env.wait_gone(&["configmap", "child"]).await;
    env.wait_gone(&["configmap", "owner"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_cascade_orphan() {
    let env = Env::start().await;
    owner_and_child(&env, false);
    env.ok(&["delete", "configmap", "owner", "--cascade=orphan"]);
    env.wait_gone(&["configmap", "owner"]).await;
    wait_until("child loses its owner reference", || {
        env.get(&["configmap", "child"]).expect("orphan kept")["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(env.get(&["configmap", "child"]).is_some(), "orphan stays");
}

// ---------------------------------------------------------------------------------------
// namespaces

#[tokio::test(flavor = "multi_thread")]
async fn namespace_deletion_terminates_then_goes() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: doomed\n", &[]);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n  namespace: doomed\n", &[]);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: doomed\n  finalizers: [example.com/hold]\n", &[]);
    let out = env.ok(&["delete", "namespace", "doomed", "--wait=false"]);
    assert!(out.contains(r#"namespace "doomed" deleted"#), "{out}");

    let ns = env.get(&["namespace", "doomed"]).expect("terminating");
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    assert!(ns["metadata"]["deletionTimestamp"].is_string());
    let table = env.ok(&["get", "namespace", "doomed", "--no-headers"]);
    assert_eq!(table.split_whitespace().nth(1), Some("Terminating"), "{table}");
    env.wait_gone(&["configmap", "plain", "-n", "doomed"]).await;
    wait_until("held is being deleted", || {
        env.get(&["configmap", "held", "-n", "doomed"])
            .is_some_and(|c| c["metadata"]["deletionTimestamp"].is_string())
    })
    .await;

    let out = env.run_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late\n  namespace: doomed\n",
    );
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"Error from server (Forbidden): error when creating "STDIN": configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated"#),
        "{}",
        out.stderr
    );

    env.ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "doomed",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    env.wait_gone(&["namespace", "doomed"]).await;
}

// ---------------------------------------------------------------------------------------
// smaller commands

#[tokio::test(flavor = "multi_thread")]
async fn label_and_annotate() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\n  labels: {a: \"1\"}\n", &[]);
    let out = env.ok(&["label", "configmap", "l", "b=2", "c=3"]);
    assert!(out.contains("configmap/l labeled"), "{out}");
    let err = env.fails(&["label", "configmap", "l", "a=9"]);
    assert!(err.contains("'a' already has a value (1), and --overwrite is false"), "{err}");
    env.ok(&["label", "configmap", "l", "a=9", "--overwrite"]);
    env.ok(&["label", "configmap", "l", "c-"]);
    assert_eq!(env.get(&["configmap", "l"]).unwrap()["metadata"]["labels"], json!({"a": "9", "b": "2"}));

    let out = env.ok(&["annotate", "configmap", "l", "note=hello world"]);
    assert!(out.contains("configmap/l annotated"), "{out}");
    env.ok(&["annotate", "configmap", "l", "other=x"]);
    env.ok(&["annotate", "configmap", "l", "other-"]);
    let cm = env.get(&["configmap", "l"]).unwrap();
    assert_eq!(annotation(&cm, "note"), Some("hello world"));
    assert_eq!(annotation(&cm, "other"), None);

    // Label many objects by selector.
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n  labels: {a: \"9\"}\n", &[]);
    env.ok(&["label", "configmaps", "-l", "a=9", "batch=yes"]);
    assert_eq!(env.names(&["configmaps", "-l", "batch=yes"]), ["l", "m"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn scale_deployment() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    let out = env.ok(&["scale", "deployment", "web", "--replicas=3"]);
    assert!(out.contains("deployment.apps/web scaled"), "{out}");
    let d = env.get(&["deployment", "web"]).unwrap();
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(d["metadata"]["generation"], 2);
    // Precondition on the current size.
    let err = env.fails(&["scale", "deployment", "web", "--current-replicas=1", "--replicas=5"]);
    assert!(err.contains("Expected replicas to be 1, was 3"), "{err}");
    assert_eq!(env.get(&["deployment", "web"]).unwrap()["spec"]["replicas"], 3);
    // The scale subresource.
    let scale: Value = serde_json::from_str(&env.ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    ]))
    .unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=web");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_events() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: web.1\ninvolvedObject:\n  apiVersion: apps/v1\n  kind: Deployment\n  name: web\n  namespace: default\nreason: ScalingReplicaSet\nmessage: Scaled up replica set web-1 to 1\ntype: Normal\nsource:\n  component: deployment-controller\ncount: 1\nfirstTimestamp: \"2026-01-01T00:00:00Z\"\nlastTimestamp: \"2026-01-01T00:00:00Z\"\n",
        &[],
    );
    // The events.k8s.io view of the same object.
    let ev = env.json(&["get", "events.v1.events.k8s.io", "web.1"]);
    assert_eq!(ev["reason"], "ScalingReplicaSet");
    assert_eq!(ev["regarding"]["name"], "web");
    assert_eq!(ev["note"], "Scaled up replica set web-1 to 1");
    // Field selectors on events.
    assert_eq!(env.names(&["events", "--field-selector", "involvedObject.name=web"]), ["web.1"]);
    assert!(env.names(&["events", "--field-selector", "involvedObject.name=nope"]).is_empty());
    // `kubectl events` prints client-side.
    let out = env.ok(&["events", "--for", "deployment/web"]);
    assert!(out.lines().next().unwrap_or_default().starts_with("LAST SEEN"), "{out}");
    assert!(out.contains("Scaled up replica set web-1 to 1"), "{out}");
    // `kubectl get events` shows the server's table.
    let table = env.ok(&["get", "events"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{table}"
    );
    assert!(lines[1].contains("Normal"), "{table}");
    assert!(lines[1].contains("ScalingReplicaSet"), "{table}");
    assert!(lines[1].contains("deployment/web"), "{table}");
    assert!(lines[1].contains("Scaled up replica set web-1 to 1"), "{table}");
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_api_resources_versions_and_version() {
    let env = Env::start().await;
    let resources = env.ok(&["api-resources"]);
    let row = |name: &str, api_version: &str| {
        resources
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|c| c[0] == name && c.contains(&api_version))
            .unwrap_or_else(|| panic!("{name} {api_version} in\n{resources}"))
    };
    assert_eq!(row("deployments", "apps/v1"), ["deployments", "deploy", "apps/v1", "true", "Deployment"]);
    assert_eq!(row("namespaces", "v1"), ["namespaces", "ns", "v1", "false", "Namespace"]);
    assert_eq!(row("configmaps", "v1"), ["configmaps", "cm", "v1", "true", "ConfigMap"]);
    let namespaced = env.ok(&["api-resources", "--namespaced=false", "-o", "name"]);
    assert!(namespaced.lines().any(|l| l == "namespaces"), "{namespaced}");
    assert!(!namespaced.lines().any(|l| l == "configmaps"), "{namespaced}");
    let verbs = env.ok(&["api-resources", "-o", "wide", "--api-group=apps"]);
    let deploy = verbs.lines().find(|l| l.starts_with("deployments")).expect("deployments");
    assert!(deploy.contains("create,delete,deletecollection,get,list,patch,update,watch"), "{verbs}");

    let versions = env.ok(&["api-versions"]);
    let versions: Vec<&str> = versions.lines().collect();
    for gv in
        ["v1", "apps/v1", "apiextensions.k8s.io/v1", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1"]
    {
        assert!(versions.contains(&gv), "{gv} in {versions:?}");
    }

    let version: Value = serde_json::from_str(&env.ok(&["version", "-o", "json"])).unwrap();
    assert_eq!(version["serverVersion"]["major"], ctop_kubesim::KUBERNETES_VERSION.0);
    assert_eq!(version["serverVersion"]["minor"], ctop_kubesim::KUBERNETES_VERSION.1);
    assert!(version["serverVersion"]["gitVersion"].as_str().unwrap().starts_with("v1."), "{version}");
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_crd() {
    let env = Env::start().await;
    install_widgets(&env);
    let out = env.ok(&["explain", "widgets.spec"]);
    assert!(out.contains("KIND:       Widget"), "{out}");
    assert!(out.contains("FIELD: spec <Object>"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["size", "<integer>", "-required-"])), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["color", "<string>"])), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_builtin() {
    let env = Env::start().await;
    let out = env.ok(&["explain", "deployment.spec.replicas"]);
    assert!(out.contains("KIND:       Deployment"), "{out}");
    assert!(out.contains("FIELD: replicas <integer>"), "{out}");

    // A nested object, through a reference to another schema.
    let out = env.ok(&["explain", "deployment.spec.template"]);
    assert!(out.starts_with("GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n"), "{out}");
    assert!(out.contains("FIELD: template <PodTemplateSpec>"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["spec", "<PodSpec>"])), "{out}");

    // A list of objects, and a field of its items.
    let out = env.ok(&["explain", "pod.spec.containers"]);
    assert!(out.contains("FIELD: containers <[]Container>"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["name", "<string>", "-required-"])), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["env", "<[]EnvVar>"])), "{out}");
    let out = env.ok(&["explain", "deployment.spec.template.spec.containers.env.value"]);
    assert!(out.contains("FIELD: value <string>"), "{out}");
    let out = env.fails(&["explain", "deployment.spec.replica"]);
    assert_eq!(out, "error: field \"replica\" does not exist\n");
}

/// A Deployment with `field: value` added under `spec`, or in its container with
/// `container: true`.
fn deployment_with(field: &str, container: bool) -> String {
    let (anchor, indent) =
        if container { ("        image: nginx:1.0\n", "        ") } else { ("  replicas: 1\n", "  ") };
    DEPLOYMENT.replacen(anchor, &format!("{anchor}{indent}{field}\n"), 1)
}

#[tokio::test(flavor = "multi_thread")]
async fn builtin_wrong_types_are_refused_by_the_decoder() {
    let env = Env::start().await;
    let cases = [
        (
            deployment_with("imagePullPolicy: 5", true),
            "json: cannot unmarshal number into Go struct field Container.spec.template.spec.containers.imagePullPolicy of type v1.PullPolicy",
        ),
        (
            DEPLOYMENT.replace("        env:\n        - {name: A, value: \"1\"}", "        env:\n        - {name: A, value: true}"),
            "json: cannot unmarshal bool into Go struct field EnvVar.spec.template.spec.containers.env.value of type string",
        ),
        (
            DEPLOYMENT.replace("  replicas: 1\n", "  replicas: \"3\"\n"),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            deployment_with("paused: \"no\"", false),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool",
        ),
        (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: oops}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: oops}\n".to_owned(),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
        ),
    ];
    for (yaml, error) in cases {
        let out = env.run_stdin(&["create", "-f", "-"], &yaml);
        assert_eq!(
            out.stderr,
            format!(
                "Error from server (BadRequest): error when creating \"STDIN\": Deployment in version \"v1\" cannot be handled as a Deployment: {error}\n"
            )
        );
    }
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {key: not-base64}\n";
    let out = env.run_stdin(&["create", "-f", "-"], secret);
    assert_eq!(
        out.stderr,
        "Error from server (BadRequest): error when creating \"STDIN\": Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3\n"
    );
    assert!(env.get(&["deployments"]).is_none_or(|l| l["items"].as_array().is_some_and(Vec::is_empty)));

    // Patches of a stored object: the 422 for the field `patch`, which kubectl words as
    // an invalid request.
    env.apply(DEPLOYMENT, &[]);
    let out = env.run(&["patch", "deployment", "web", "-p", r#"{"spec":{"replicas":1.5}}"#]);
    assert_eq!(
        out.stderr,
        "The request is invalid: patch: Invalid value: \"map[spec:map[replicas:1.5]]\": cannot convert float64 to int32\n"
    );
    let out = env.run(&["patch", "deployment", "web", "--type=merge", "-p", r#"{"spec":{"paused":"no"}}"#]);
    assert!(
        out.stderr.starts_with(
            "The request is invalid: patch: Invalid value: \"{\\\"apiVersion\\\":\\\"apps/v1\\\","
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.ends_with(
            "\": json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool\n"
        ),
        "{}",
        out.stderr
    );

    // Server-side apply: structured-merge-diff's words, whatever the validation mode.
    let out = env.run_stdin(
        &["apply", "--server-side", "--validate=false", "-f", "-"],
        &deployment_with("paused: \"no\"", false),
    );
    assert_eq!(
        out.stderr,
        "Error from server: failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.paused: expected boolean, got &{no}\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn builtin_unknown_fields_follow_field_validation() {
    let env = Env::start().await;
    let with_replica = deployment_with("replica: 2", false);

    // Strict (kubectl's default): refused by the decoder.
    let out = env.run_stdin(&["create", "-f", "-"], &with_replica);
    assert_eq!(
        out.stderr,
        "Error from server (BadRequest): error when creating \"STDIN\": Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.replica\"\n"
    );
    let in_container = deployment_with("foo: bar", true);
    let out = env.run_stdin(&["create", "-f", "-"], &in_container);
    assert!(
        out.stderr
            .ends_with("strict decoding error: unknown field \"spec.template.spec.containers[0].foo\"\n"),
        "{}",
        out.stderr
    );

    // Warn: kubectl shows the server's warning; the field is not stored.
    let out = env.run_stdin(&["create", "--validate=warn", "-f", "-"], &with_replica);
    assert!(out.ok(), "{}", out.stderr);
    assert_eq!(out.stderr, "Warning: unknown field \"spec.replica\"\n");
    let d = env.get(&["deployment", "web"]).expect("created");
    assert!(d["spec"].get("replica").is_none(), "{d}");

    // Ignore: nothing said, nothing stored.
    let out = env.run_stdin(&["replace", "--validate=false", "-f", "-"], &in_container);
    assert!(out.ok(), "{}", out.stderr);
    assert_eq!(out.stderr, "");
    let d = env.get(&["deployment", "web"]).expect("replaced");
    assert!(container(&d, "app").get("foo").is_none(), "{d}");

    // Client-side apply of the stored object sends a strategic merge patch: the
    // converter's strict error, for the field `patch` with the patch as Go prints it.
    env.ok(&["annotate", "deployment", "web", "note=x"]);
    let out = env.run(&["patch", "deployment", "web", "--type=strategic", "-p", r#"{"spec":{"replica":2}}"#]);
    assert!(out.ok(), "the default is Warn: {}", out.stderr);
    assert_eq!(out.stderr, "Warning: unknown field \"spec.replica\"\n");
    let out = env.run_stdin(&["apply", "-f", "-"], &with_replica);
    // (After kubectl's warning that the object was not created by `kubectl apply`.)
    let error = out.stderr.split_once("\nThe request").map(|(_, e)| e).unwrap_or_default();
    assert!(
        error.starts_with(" is invalid: patch: Invalid value: \"map[metadata:map[annotations:map[kubectl.kubernetes.io/last-applied-configuration:"),
        "{}",
        out.stderr
    );
    assert!(
        error.ends_with(" spec:map[replica:2]]\": strict decoding error: unknown field \"spec.replica\"\n"),
        "{}",
        out.stderr
    );

    // Server-side apply refuses undeclared fields in every mode.
    let out = env.run_stdin(&["apply", "--server-side", "--validate=false", "-f", "-"], &with_replica);
    assert_eq!(
        out.stderr,
        "Error from server: failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.replica: field not declared in schema\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_status_subresource_and_generation() {
    let env = Env::start().await;
    install_widgets(&env);
    env.apply(&widget("w", "  size: 1\n"), &[]);
    let w = env.get(&["widget", "w"]).unwrap();
    assert_eq!(w["metadata"]["generation"], 1);

    // Status only changes through the subresource, and does not bump generation.
    env.ok(&[
        "patch",
        "widget",
        "w",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true},"spec":{"size":2}}"#,
    ]);
    let w = env.get(&["widget", "w"]).unwrap();
    assert_eq!(w["spec"]["size"], 2);
    assert!(
        w.get("status").is_none_or(|s| s.get("ready").is_none()),
        "status ignored on the main resource: {w}"
    );
    assert_eq!(w["metadata"]["generation"], 2);
    let out = env.ok(&[
        "patch",
        "widget",
        "w",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true},"spec":{"size":5}}"#,
    ]);
    assert!(out.contains("widget.example.com/w patched"), "{out}");
    let w = env.get(&["widget", "w"]).unwrap();
    assert_eq!(w["status"]["ready"], true);
    assert_eq!(w["spec"]["size"], 2, "spec ignored on the status subresource");
    assert_eq!(w["metadata"]["generation"], 2);
    let status = env.json(&["get", "widget", "w", "--subresource=status"]);
    assert_eq!(status["status"]["ready"], true);
    // The status write is recorded as its own managedFields entry.
    let w = env.get(&["widget", "w", "--show-managed-fields"]).unwrap();
    let entries = w["metadata"]["managedFields"].as_array().expect("managedFields");
    let status_entry =
        entries.iter().find(|e| e["fieldsV1"].get("f:status").is_some()).expect("status entry");
    assert_eq!(status_entry["manager"], "kubectl-patch", "{w}");
    assert_eq!(status_entry["subresource"], "status", "{status_entry}");
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_delete_removes_custom_resources() {
    let env = Env::start().await;
    install_widgets(&env);
    env.apply(&widget("w", "  size: 1\n"), &[]);
    let out = env.ok(&["delete", "crd", "widgets.example.com"]);
    assert!(
        out.contains(r#"customresourcedefinition.apiextensions.k8s.io "widgets.example.com" deleted"#),
        "{out}"
    );
    env.wait_gone(&["crd", "widgets.example.com"]).await;
    let groups = env.ok(&["get", "--raw", "/apis"]);
    assert!(!groups.contains("example.com"), "{groups}");
    let err = env.fails(&["get", "widgets"]);
    assert!(err.contains("the server could not find the requested resource"), "{err}");
    // Recreated, it starts empty.
    install_widgets(&env);
    assert!(env.names(&["widgets"]).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn get_output_formats() {
    let env = Env::start().await;
    for (name, n) in [("b", "2"), ("a", "3"), ("c", "1")] {
        env.apply(
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{rank: \"{n}\"}}\ndata: {{k: v{n}}}\n"),
            &[],
        );
    }
    assert_eq!(env.ok(&["get", "configmaps", "-o", "name"]), "configmap/a\nconfigmap/b\nconfigmap/c\n");
    assert_eq!(env.ok(&["get", "configmaps", "-o", "jsonpath={.items[*].data.k}"]), "v3 v2 v1");
    let sorted = env.ok(&["get", "configmaps", "--sort-by", ".metadata.labels.rank", "-o", "name"]);
    assert_eq!(sorted, "configmap/c\nconfigmap/b\nconfigmap/a\n");
    let columns = env.ok(&["get", "configmaps", "-L", "rank", "--no-headers"]);
    let rows: Vec<Vec<&str>> = columns.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0][0], "a");
    assert_eq!(rows[0].last(), Some(&"3"), "{columns}");
    let custom = env.ok(&["get", "configmaps", "-o", "custom-columns=NAME:.metadata.name,K:.data.k"]);
    assert_eq!(custom.lines().nth(1).unwrap().split_whitespace().collect::<Vec<_>>(), ["a", "v3"]);

    // Paging: kubectl follows `continue` for JSON and tables.
    for i in 0..5 {
        env.apply(&format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: page-{i}\n"), &[]);
    }
    assert_eq!(env.names(&["configmaps", "--chunk-size=2"]).len(), 8);
    let table = env.ok(&["get", "configmaps", "--chunk-size=3", "--no-headers"]);
    assert_eq!(table.lines().count(), 8, "{table}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_builtin_tables() {
    let env = Env::start().await;
    env.apply(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - {name: a, image: x}\n  - {name: b, image: z}\n",
        &[],
    );
    let pods = env.ok(&["get", "pods"]);
    let header: Vec<&str> = pods.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"], "{pods}");
    let row: Vec<&str> = pods.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["p", "0/2", "Pending", "0"], "{pods}");

    // Deployment, wide.
    env.apply(DEPLOYMENT, &[]);
    let wide = env.ok(&["get", "deployment", "web", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    );
    let row: Vec<&str> = wide.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["web", "0/1", "0", "0"]);
    assert_eq!(row[5..], ["app,sidecar", "nginx:1.0,busybox:1.0", "app=web"], "{wide}");
}

#[tokio::test(flavor = "multi_thread")]
async fn get_all_uses_categories() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-in-all\n", &[]);
    let out = env.ok(&["get", "all", "-o", "name"]);
    assert!(out.lines().any(|l| l == "deployment.apps/web"), "{out}");
    assert!(!out.contains("configmap"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn create_with_generate_name() {
    let env = Env::start().await;
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: gen-\n";
    let first = env.run_stdin(&["create", "-f", "-", "-o", "name"], cm);
    let second = env.run_stdin(&["create", "-f", "-", "-o", "name"], cm);
    assert!(first.ok() && second.ok(), "{}{}", first.stderr, second.stderr);
    let (a, b) = (first.stdout.trim(), second.stdout.trim());
    assert!(a.starts_with("configmap/gen-") && a.len() == "configmap/gen-".len() + 5, "{a}");
    assert_ne!(a, b);
    assert_eq!(env.names(&["configmaps"]).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_for_delete_and_jsonpath() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  finalizers: [example.com/hold]\ndata: {a: \"1\"}\n", &[]);
    let waiter =
        Background::spawn(&env, &["wait", "--for=jsonpath={.data.a}=2", "configmap/w", "--timeout=10s"]);
    env.ok(&["patch", "configmap", "w", "--type", "merge", "-p", r#"{"data":{"a":"2"}}"#]);
    waiter.wait_line("jsonpath condition met", |l| l == ["configmap/w", "condition", "met"]).await;

    env.ok(&["delete", "configmap", "w", "--wait=false"]);
    let waiter = Background::spawn(&env, &["wait", "--for=delete", "configmap/w", "--timeout=10s"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(waiter.output().is_empty(), "still held by the finalizer: {}", waiter.output());
    env.ok(&[
        "patch",
        "configmap",
        "w",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    waiter.wait_line("deleted", |l| l == ["configmap/w", "condition", "met"]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_by_selector_and_all() {
    let env = Env::start().await;
    for (name, team) in [("a", "t1"), ("b", "t1"), ("c", "t2")] {
        env.apply(
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{team: {team}}}\n"
            ),
            &[],
        );
    }
    let out = env.ok(&["delete", "configmaps", "-l", "team=t1"]);
    assert!(out.contains(r#"configmap "a" deleted"#) && out.contains(r#"configmap "b" deleted"#), "{out}");
    assert_eq!(env.names(&["configmaps"]), ["c"]);
    env.ok(&["delete", "configmaps", "--all"]);
    assert!(env.names(&["configmaps"]).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn edit_with_editor() {
    let env = Env::start().await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\ndata:\n  a: before\n", &[]);
    let mut cmd = env.command(&env.kubeconfig, &["edit", "configmap", "e"]);
    cmd.env("KUBE_EDITOR", "sed -i s/before/after/");
    let out = tokio::task::block_in_place(|| cmd.output()).expect("kubectl edit runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("configmap/e edited"));
    assert_eq!(data(&env.get(&["configmap", "e"]).unwrap()), &json!({"a": "after"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn set_image_and_rollout_restart() {
    let env = Env::start().await;
    env.apply(DEPLOYMENT, &[]);
    let out = env.ok(&["set", "image", "deployment/web", "app=nginx:9.9"]);
    assert!(out.contains("deployment.apps/web image updated"), "{out}");
    let d = env.get(&["deployment", "web"]).unwrap();
    assert_eq!(container(&d, "app")["image"], "nginx:9.9");
    assert_eq!(container(&d, "sidecar")["image"], "busybox:1.0");
    let out = env.ok(&["rollout", "restart", "deployment/web"]);
    assert!(out.contains("deployment.apps/web restarted"), "{out}");
    let d = env.get(&["deployment", "web"]).unwrap();
    assert!(
        d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].is_string(),
        "{d}"
    );
    assert_eq!(d["metadata"]["generation"], 3);
}

// ---------------------------------------------------------------------------------------
// RBAC

/// Get a token for `default/bot` through the TokenRequest API.
fn service_account_token(env: &Env) -> String {
    env.apply("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: bot\n", &[]);
    // `kubectl create token` sends a protobuf TokenRequest.
    let token = env.ok(&["create", "token", "bot"]).trim().to_owned();
    assert!(token.starts_with("kubesim-sa."), "{token}");
    token
}

const ROLE: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: cm-reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bot-reads-cms
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: cm-reader
subjects:
- kind: ServiceAccount
  name: bot
  namespace: default
"#;

const AUTHZ_TLS: &str = "kubectl authenticates with the kubeconfig token over https";

#[tokio::test(flavor = "multi_thread")]
async fn token_request_through_create_raw() {
    let env = Env::start().await;
    let token = service_account_token(&env);
    assert!(!token.is_empty());
    let body = env.dir.path().join("tokenrequest.json");
    std::fs::write(&body, r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#)
        .expect("write body");
    let err = env.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/serviceaccounts/nope/token",
        "-f",
        body.to_str().expect("UTF-8 path"),
    ]);
    assert!(err.contains(r#"serviceaccounts "nope" not found"#), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn authz_admin_kubeconfig_works() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    let out = env.run(&["get", "namespaces", "-o", "json"]);
    assert!(out.ok(), "{AUTHZ_TLS}: {}", out.stderr);
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", &[]);
    assert_eq!(env.names(&["configmaps"]), ["c"]);
    // Without credentials: 403 for the anonymous user, 401 for a bad token.
    let anonymous = env.kubeconfig_with_token("anonymous.kubeconfig", "");
    let out = env.run_as(&anonymous, &["get", "configmaps"], None);
    assert!(!out.ok());
    let bad = env.kubeconfig_with_token("bad.kubeconfig", "nope");
    let out = env.run_as(&bad, &["get", "configmaps"], None);
    assert!(
        out.stderr.contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn authz_service_account_needs_role_binding() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", &[]);
    let token = service_account_token(&env);
    let bot = env.kubeconfig_with_token("bot.kubeconfig", &token);
    let out = env.run_as(&bot, &["get", "configmaps"], None);
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:default:bot" cannot list resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );
    let out = env.run_as(&bot, &["get", "configmap", "c"], None);
    assert!(
        out.stderr.contains(r#"Error from server (Forbidden): configmaps "c" is forbidden: User "system:serviceaccount:default:bot" cannot get resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );

    env.apply(ROLE, &[]);
    let out = env.run_as(&bot, &["get", "configmaps", "-o", "json"], None);
    assert!(out.ok(), "{}", out.stderr);
    let list: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "c");

    // Still no write access, and nothing in other namespaces.
    let out = env.run_as(&bot, &["delete", "configmap", "c"], None);
    assert!(
        out.stderr.contains(r#"configmaps "c" is forbidden: User "system:serviceaccount:default:bot" cannot delete resource "configmaps" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );
    let out = env.run_as(&bot, &["get", "configmaps", "-n", "kube-system"], None);
    assert!(
        out.stderr
            .contains(r#"cannot list resource "configmaps" in API group "" in the namespace "kube-system""#),
        "{}",
        out.stderr
    );
    assert!(env.get(&["configmap", "c"]).is_some());
}

/// A Role for `bot` over ConfigMaps with `verbs`, and the binding.
fn cm_role(verbs: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: cm-writer}}\nrules:\n\
         - apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [{verbs}]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: bot-writes-cms}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-writer}}\n\
         subjects: [{{kind: ServiceAccount, name: bot, namespace: default}}]\n"
    )
}

/// OwnerReferencesPermissionEnforcement: `blockOwnerDeletion` needs `update` on the owner's
/// `finalizers`; changing the references of an existing object needs `delete` on it.
#[tokio::test(flavor = "multi_thread")]
async fn authz_owner_references_permission_enforcement() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\n", &[]);
    let uid =
        env.get(&["configmap", "owner"]).expect("owner")["metadata"]["uid"].as_str().expect("uid").to_owned();
    let token = service_account_token(&env);
    let bot = env.kubeconfig_with_token("bot.kubeconfig", &token);
    env.apply(&cm_role("get, list, create, update, patch"), &[]);
    let child = |name: &str, block: bool| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - \
             {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}, blockOwnerDeletion: {block}}}\n"
        )
    };
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&child("blocked", true)));
    assert!(
        out.stderr.contains(r#"configmaps "blocked" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: User "system:serviceaccount:default:bot" cannot update resource "configmaps/finalizers" in API group "" in the namespace "default""#),
        "{}",
        out.stderr
    );
    // Without blockOwnerDeletion a creator may set references.
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&child("plain", false)));
    assert!(out.ok(), "{}", out.stderr);
    // Changing them later needs delete on the object.
    let out = env.run_as(
        &bot,
        &[
            "patch",
            "configmap",
            "plain",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/ownerReferences"}]"#,
        ],
        None,
    );
    assert!(
        out.stderr.contains(
            r#"configmaps "plain" is forbidden: cannot set an ownerRef on a resource you can't delete"#
        ),
        "{}",
        out.stderr
    );
    // Granted both, both work.
    env.apply(&cm_role("get, list, create, update, patch, delete"), &[]);
    env.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: cm-finalizers}\nrules:\n\
         - apiGroups: [\"\"]\n  resources: [configmaps/finalizers]\n  verbs: [update]\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: bot-cm-finalizers}\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-finalizers}\n\
         subjects: [{kind: ServiceAccount, name: bot, namespace: default}]\n",
        &[],
    );
    let out = env.run_as(&bot, &["create", "-f", "-"], Some(&child("blocked", true)));
    assert!(out.ok(), "{}", out.stderr);
    let out = env.run_as(
        &bot,
        &[
            "patch",
            "configmap",
            "plain",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/ownerReferences"}]"#,
        ],
        None,
    );
    assert!(out.ok(), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn authz_auth_can_i() {
    let env = Env::start_with(Config { authz: true, ..Config::default() }).await;
    let token = service_account_token(&env);
    let bot = env.kubeconfig_with_token("bot.kubeconfig", &token);
    let out = env.run_as(&bot, &["auth", "can-i", "list", "configmaps"], None);
    assert_eq!(out.stdout.trim(), "no", "{}", out.stderr);
    env.apply(ROLE, &[]);
    let out = env.run_as(&bot, &["auth", "can-i", "list", "configmaps"], None);
    assert_eq!(out.stdout.trim(), "yes", "{}", out.stderr);
    let out = env.run_as(&bot, &["auth", "can-i", "delete", "configmaps"], None);
    assert_eq!(out.stdout.trim(), "no", "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_status_scale_and_pods_of_a_running_deployment() {
    let workloads =
        ctop_kubesim::WorkloadConfig { nodes: 1, pod_start: Duration::from_millis(50), ..Default::default() };
    let env = Env::start_with(Config { workloads: Some(workloads), ..Config::default() }).await;
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: default}\n\
        spec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    \
        spec: {containers: [{name: web, image: nginx:1}]}\n";
    assert!(env.apply(deployment, &[]).ok());
    let out = env.ok(&["rollout", "status", "deployment/web", "--timeout=20s"]);
    assert!(out.contains("deployment \"web\" successfully rolled out"), "{out}");
    env.ok(&["scale", "deployment/web", "--replicas=3"]);
    let out = env.ok(&["rollout", "status", "deployment/web", "--timeout=20s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let pods = env.ok(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={range .items[*]}{.status.phase}/{.spec.nodeName} {end}",
    ]);
    assert_eq!(pods.trim(), "Running/kubesim-node-1 Running/kubesim-node-1 Running/kubesim-node-1", "{pods}");
    env.ok(&["set", "image", "deployment/web", "web=nginx:2"]);
    let out = env.ok(&["rollout", "status", "deployment/web", "--timeout=20s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let history = env.ok(&["rollout", "history", "deployment/web"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");
    let nodes = env.ok(&[
        "get",
        "nodes",
        "-o",
        "jsonpath={.items[0].status.conditions[?(@.type==\"Ready\")].status}",
    ]);
    assert_eq!(nodes, "True");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_a_job_to_complete() {
    let workloads = ctop_kubesim::WorkloadConfig {
        pod_start: Duration::from_millis(50),
        job_duration: Duration::from_millis(100),
        ..Default::default()
    };
    let env = Env::start_with(Config { workloads: Some(workloads), ..Config::default() }).await;
    env.ok(&["create", "job", "once", "--image=busybox"]);
    let out = env.ok(&["wait", "--for=condition=complete", "job/once", "--timeout=20s"]);
    assert!(out.contains("job.batch/once condition met"), "{out}");
    let pods = env.ok(&["get", "pods", "-l", "job-name=once", "-o", "jsonpath={.items[*].status.phase}"]);
    assert_eq!(pods, "Succeeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulsets_and_daemonsets_roll_out() {
    let workloads =
        ctop_kubesim::WorkloadConfig { nodes: 3, pod_start: Duration::from_millis(30), ..Default::default() };
    let env = Env::start_with(Config { workloads: Some(workloads), ..Config::default() }).await;
    let sts = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: default}\n\
        spec:\n  replicas: 3\n  serviceName: db\n  selector: {matchLabels: {app: db}}\n  template:\n    \
        metadata: {labels: {app: db}}\n    spec: {containers: [{name: db, image: postgres:16}]}\n  \
        volumeClaimTemplates:\n  - metadata: {name: data}\n    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n";
    assert!(env.apply(sts, &[]).ok());
    let out = env.ok(&["rollout", "status", "statefulset/db", "--timeout=20s"]);
    // The defaulted `partition: 0` makes kubectl report a partitioned rollout, as on a cluster.
    assert!(out.contains("partitioned roll out complete: 3 new pods have been updated"), "{out}");
    let pods = env.ok(&[
        "get",
        "pods",
        "-l",
        "app=db",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}/{.spec.hostname} {end}",
    ]);
    assert_eq!(pods.trim(), "db-0/db-0 db-1/db-1 db-2/db-2");
    let claims =
        env.ok(&["get", "pvc", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}"]);
    assert_eq!(claims.trim(), "data-db-0=Bound data-db-1=Bound data-db-2=Bound");
    env.ok(&["set", "image", "statefulset/db", "db=postgres:17"]);
    let out = env.ok(&["rollout", "status", "statefulset/db", "--timeout=20s"]);
    assert!(out.contains("partitioned roll out complete: 3 new pods have been updated"), "{out}");
    let images =
        env.ok(&["get", "pods", "-l", "app=db", "-o", "jsonpath={.items[*].spec.containers[0].image}"]);
    assert_eq!(images, "postgres:17 postgres:17 postgres:17");

    let ds = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: default}\n\
        spec:\n  selector: {matchLabels: {app: agent}}\n  template:\n    metadata: {labels: {app: agent}}\n    \
        spec: {containers: [{name: agent, image: agent:1}]}\n";
    assert!(env.apply(ds, &[]).ok());
    let out = env.ok(&["rollout", "status", "daemonset/agent", "--timeout=20s"]);
    assert!(out.contains("daemon set \"agent\" successfully rolled out"), "{out}");
    let nodes = env.ok(&["get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].spec.nodeName}"]);
    let mut nodes: Vec<&str> = nodes.split(' ').collect();
    nodes.sort_unstable();
    assert_eq!(nodes, ["kubesim-node-1", "kubesim-node-2", "kubesim-node-3"]);
    env.ok(&["set", "image", "daemonset/agent", "agent=agent:2"]);
    let out = env.ok(&["rollout", "status", "daemonset/agent", "--timeout=20s"]);
    assert!(out.contains("successfully rolled out"), "{out}");
    let images =
        env.ok(&["get", "pods", "-l", "app=agent", "-o", "jsonpath={.items[*].spec.containers[0].image}"]);
    assert_eq!(images, "agent:2 agent:2 agent:2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_whose_schema_has_the_wrong_types_is_refused_as_the_decoder_words_it() {
    let env = Env::start().await;
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.x.io}\n\
        spec:\n  group: x.io\n  scope: Namespaced\n  names: {kind: Thing, plural: things, singular: thing}\n  \
        versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        \
        type: object\n        required: [false]\n";
    let out = env.run_stdin(&["apply", "-f", "-"], crd);
    assert!(!out.ok());
    assert!(
        out.stderr.contains(
            "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: json: cannot \
             unmarshal bool into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.required of type string"
        ),
        "{}",
        out.stderr
    );
    assert!(!env.run(&["get", "crd", "things.x.io"]).ok(), "nothing was stored");
}
