//! The harness every kubectl test uses: a kubesim with a kubeconfig and a discovery cache
//! in a temporary directory ([`Env`]), one kubectl run ([`Out`]), a kubectl left running
//! in the background ([`Background`]), and the objects several tests install.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ctop_kubesim::{Config, KubeSim};
use serde_json::Value;

/// What one `kubectl` run printed.
#[derive(Debug)]
pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Out {
    pub(crate) fn ok(&self) -> bool {
        self.code == 0
    }
}

/// A running kubesim with a kubeconfig and a discovery cache in a temporary directory.
pub(crate) struct Env {
    pub(crate) sim: KubeSim,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) kubeconfig: PathBuf,
}

pub(crate) fn kubectl_bin() -> String {
    std::env::var("KUBESIM_KUBECTL").unwrap_or_else(|_| "kubectl".to_owned())
}

impl Env {
    pub(crate) async fn start() -> Self {
        Self::start_with(Config::default()).await
    }

    pub(crate) async fn start_with(config: Config) -> Self {
        let sim = KubeSim::start(config).await.expect("kubesim starts");
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("write kubeconfig");
        Self { sim, dir, kubeconfig }
    }

    /// Write a kubeconfig for this server with `token` and return its path.
    /// Write the admin kubeconfig with `token` instead of the admin token and return its
    /// path (authorization must be on); an empty token means no credentials.
    pub(crate) fn kubeconfig_with_token(&self, name: &str, token: &str) -> PathBuf {
        let admin = self.sim.admin_token();
        let path = self.dir.path().join(name);
        let replacement = if token.is_empty() { "\"\"".to_owned() } else { token.to_owned() };
        std::fs::write(&path, self.sim.kubeconfig().replace(admin, &replacement)).expect("write kubeconfig");
        path
    }

    pub(crate) fn command(&self, kubeconfig: &Path, args: &[&str]) -> Command {
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
    pub(crate) fn run_as(&self, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Out {
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

    pub(crate) fn run(&self, args: &[&str]) -> Out {
        self.run_as(&self.kubeconfig, args, None)
    }

    pub(crate) fn run_stdin(&self, args: &[&str], stdin: &str) -> Out {
        self.run_as(&self.kubeconfig, args, Some(stdin))
    }

    /// Run and require success; returns stdout.
    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.ok(), "kubectl {args:?} failed ({}): {}", out.code, out.stderr);
        out.stdout
    }

    /// Run and require failure; returns stderr.
    pub(crate) fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.ok(), "kubectl {args:?} should fail but printed: {}", out.stdout);
        out.stderr
    }

    /// `kubectl apply -f -` (plus `extra` flags) with `yaml`; requires success.
    pub(crate) fn apply(&self, yaml: &str, extra: &[&str]) -> Out {
        let mut args = vec!["apply", "-f", "-"];
        args.extend_from_slice(extra);
        let out = self.run_stdin(&args, yaml);
        assert!(out.ok(), "kubectl apply {extra:?} failed ({}): {}", out.code, out.stderr);
        out
    }

    /// `kubectl get ARGS -o json`, parsed.
    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend_from_slice(&["-o", "json"]);
        let stdout = self.ok(&all);
        serde_json::from_str(&stdout).expect("kubectl printed JSON")
    }

    /// `kubectl get ARGS -o json` of one object, or `None` when it is not found.
    pub(crate) fn get(&self, args: &[&str]) -> Option<Value> {
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
    pub(crate) fn names(&self, args: &[&str]) -> Vec<String> {
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
    pub(crate) async fn wait_gone(&self, args: &[&str]) {
        wait_until(&format!("{args:?} is gone"), || self.get(args).is_none()).await;
    }
}

/// Poll `cond` every 50 ms for up to 5 s.
pub(crate) async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A background `kubectl` whose stdout is collected while it runs.
pub(crate) struct Background {
    pub(crate) child: Child,
    pub(crate) stdout: Arc<Mutex<String>>,
}

impl Background {
    pub(crate) fn spawn(env: &Env, args: &[&str]) -> Self {
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

    pub(crate) fn output(&self) -> String {
        self.stdout.lock().expect("lock").clone()
    }

    /// Wait until some line satisfies `pred`.
    pub(crate) async fn wait_line(&self, what: &str, pred: impl Fn(&[&str]) -> bool) {
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

/// A CRD `widgets.example.com` with a schema, printer columns and a status subresource.
pub(crate) const WIDGET_CRD: &str = r#"
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

pub(crate) fn widget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

/// Apply the Widget CRD and wait until it is established.
pub(crate) fn install_widgets(env: &Env) {
    env.apply(WIDGET_CRD, &[]);
    let out = env.ok(&["wait", "--for=condition=established", "crd/widgets.example.com", "--timeout=10s"]);
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met"),
        "{out}"
    );
}

pub(crate) const DEPLOYMENT: &str = r#"
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

pub(crate) fn containers(deploy: &Value) -> &Vec<Value> {
    deploy["spec"]["template"]["spec"]["containers"].as_array().expect("containers")
}

pub(crate) fn container<'a>(deploy: &'a Value, name: &str) -> &'a Value {
    containers(deploy)
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("container {name} in {deploy}"))
}
