//! The examples under `examples/` as a user runs them: `ctop sim`, `ctop run <example>
//! --install-crds`, the example's samples applied with kubectl, and the behaviour its
//! README promises checked on the cluster with kubectl.

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::examples::{apply, eventually_is, example, run_example, run_example_with, stop};
use common::{Kubectl, Proc, start_sim};
use ctop_e2e::binary;

/// Write `yaml` to `dir/<file>` and apply it.
fn apply_yaml(k: &Kubectl, dir: &Path, file: &str, yaml: &str, expect: &str) {
    let path = dir.join(file);
    std::fs::write(&path, yaml).expect("write yaml");
    apply(k, &path, expect);
}

fn jsonpath(k: &Kubectl, kind: &str, name: &str, path: &str) -> String {
    k.ok(&["get", kind, name, "-o", &format!("jsonpath={path}")])
}

// ───────────────────────────── greeting ─────────────────────────────

#[test]
fn greeting_greets_families_and_holds_referenced_persons() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let run = run_example("greeting", &k);
    apply(&k, &example("greeting").join("samples"), "greeting");

    let family =
        |want: &str| eventually_is(&k, "greeting", "doe-family", "{.status.message}|{.status.people}", want);
    family(r#"Hello to the Doe family: Jane, John|["janed","johnd"]"#);
    eventually_is(
        &k,
        "greeting",
        "hello-world",
        "{.status.message}|{.status.observedGeneration}",
        "Hello, World|1",
    );
    // The finalizer is on exactly the Persons a Greeting wants: no family greets Max yet.
    for p in ["janed", "johnd"] {
        eventually_is(&k, "person", p, "{.metadata.finalizers}", r#"["greetings.example.com/in-use"]"#);
    }
    eventually_is(&k, "person", "maxm", "{.metadata.finalizers}", "");

    // A Person changing family moves between Greetings; sorting is by first name.
    apply_yaml(
        &k,
        dir.path(),
        "must.yaml",
        "apiVersion: greetings.example.com/v1\nkind: Greeting\nmetadata: {name: must, namespace: default}\nspec: {surname: Mustermann}\n",
        "must",
    );
    eventually_is(&k, "greeting", "must", "{.status.message}", "Hello to the Mustermann family: Max");
    eventually_is(&k, "person", "maxm", "{.metadata.finalizers}", r#"["greetings.example.com/in-use"]"#);
    k.ok(&[
        "patch",
        "person",
        "maxm",
        "--type=merge",
        "-p",
        r#"{"spec":{"surname":"Doe","firstName":"Adam"}}"#,
    ]);
    family(r#"Hello to the Doe family: Adam, Jane, John|["maxm","janed","johnd"]"#);
    eventually_is(
        &k,
        "greeting",
        "must",
        "{.status.message}|{.status.people}",
        "Hello to the Mustermann family: |[]",
    );

    // With the operator stopped, deleting a referenced Person only marks it: the finalizer
    // holds it while the Greeting still lists it.
    stop(run);
    k.ok(&["delete", "person", "janed", "--wait=false"]);
    // Soft-deleted and still there (`get` would fail once it is gone).
    k.eventually(&["get", "person", "janed", "-o", "jsonpath={.metadata.deletionTimestamp}"], |s| {
        !s.is_empty()
    });
    // Back up: janed drops out of the Greeting, then the finalizer goes and so does janed.
    let run = run_example("greeting", &k);
    family(r#"Hello to the Doe family: Adam, John|["maxm","johnd"]"#);
    k.eventually(&["get", "persons", "-o", "name"], |s| !s.contains("janed"));

    // An unreferenced Person goes at once; the family shrinks again.
    k.ok(&["delete", "person", "maxm"]);
    family(r#"Hello to the Doe family: John|["johnd"]"#);

    // Exactly one of name and surname: the reconcile reports both/none as invalid.
    apply_yaml(
        &k,
        dir.path(),
        "both.yaml",
        "apiVersion: greetings.example.com/v1\nkind: Greeting\nmetadata: {name: both, namespace: default}\nspec: {name: A, surname: Doe}\n",
        "both",
    );
    eventually_is(
        &k,
        "greeting",
        "both",
        r#"{.status.conditions[?(@.type=="Valid")].reason}|{.status.message}"#,
        "InvalidSpec|",
    );
    // Deleting the Greeting releases nobody's finalizer wrongly: johnd is still listed by
    // doe-family and stays; once doe-family is gone, johnd can be deleted.
    k.ok(&["delete", "greeting", "doe-family"]);
    k.ok(&["delete", "person", "johnd", "--timeout=30s"]);
    k.eventually(&["get", "persons", "-o", "name"], |s| s.trim().is_empty());
    stop(run);
}

// ───────────────────────────── myapp ─────────────────────────────

/// A tiny HTTP app registry: records `METHOD path` of each request and answers 200, or 500
/// for paths containing `broken`.
fn registry() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut length = 0usize;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let request: Vec<&str> = line.split_whitespace().take(2).collect();
            let request = request.join(" ");
            let code = if request.contains("broken") { "500 Internal Server Error" } else { "200 OK" };
            log.lock().expect("lock").push(request);
            let _ = write!(stream, "HTTP/1.1 {code}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (url, seen)
}

/// `reason/type/regarding` of every event, one a line.
fn events(k: &Kubectl) -> String {
    k.ok(&[
        "get",
        "events.events.k8s.io",
        "-o",
        "jsonpath={range .items[*]}{.reason}/{.type}/{.regarding.name}{\"\\n\"}{end}",
    ])
}

fn eventually_event(k: &Kubectl, line: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    loop {
        let all = events(k);
        if all.lines().any(|l| l == line) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no event {line}; events:\n{all}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn myapp_deploys_registers_reports_and_cleans_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let (url, seen) = registry();
    let values = dir.path().join("values.yaml");
    std::fs::write(&values, format!("registryUrl: {url}\n")).expect("write values");
    // The registry comes from the values, so the deployer allows it (`--egress`).
    let run = run_example_with("myapp", &k, &["--values", values.to_str().expect("utf-8"), "--egress", &url]);
    apply(&k, &example("myapp").join("samples"), "my-app");

    eventually_is(
        &k,
        "deployment",
        "my-app",
        "{.spec.replicas}/{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}",
        "3/MyApp/my-app",
    );
    eventually_is(&k, "myapp", "my-app", "{.status.phase}/{.status.registered}", "Pending/true");
    eventually_event(&k, "Registered/Normal/my-app");
    eventually_event(&k, "Created/Normal/my-app");
    assert!(seen.lock().expect("lock").contains(&"PUT /apps/default/my-app".to_owned()));

    k.ok(&[
        "patch",
        "deployment",
        "my-app",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3,"readyReplicas":3}}"#,
    ]);
    eventually_is(
        &k,
        "myapp",
        "my-app",
        r#"{.status.phase}/{.status.conditions[?(@.type=="Ready")].status}"#,
        "Running/True",
    );

    // A failing Deployment: a Warning event and phase Failed.
    k.ok(&[
        "patch",
        "deployment",
        "my-app",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"ReplicaFailure","status":"True","reason":"FailedCreate","message":"quota exceeded"}]}}"#,
    ]);
    eventually_is(&k, "myapp", "my-app", "{.status.phase}", "Failed");
    eventually_event(&k, "Failed/Warning/my-app");

    // A registry failure: a Warning event, phase Failed, no Deployment.
    apply_yaml(
        &k,
        dir.path(),
        "broken.yaml",
        "apiVersion: example.com/v1\nkind: MyApp\nmetadata: {name: broken, namespace: default}\nspec: {image: nginx}\n",
        "broken",
    );
    eventually_event(&k, "Failed/Warning/broken");
    eventually_is(&k, "myapp", "broken", "{.status.phase}/{.status.registered}", "Failed/false");
    assert!(
        !k.run(&["get", "deployment", "broken"]).status.success(),
        "nothing is deployed for an unregistered app"
    );

    // replicas < 1 is refused at admission (by the CRD's minimum; the .validate() handler
    // says the same once webhooks are served).
    let zero = dir.path().join("zero.yaml");
    std::fs::write(&zero, "apiVersion: example.com/v1\nkind: MyApp\nmetadata: {name: zero, namespace: default}\nspec: {image: nginx, replicas: 0}\n").expect("write");
    let out = k.run(&["apply", "-f", zero.to_str().expect("utf-8")]);
    assert!(!out.status.success(), "replicas: 0 is rejected");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("replicas"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The finalizer: deletion waits for the registry entry to be removed.
    eventually_is(&k, "myapp", "my-app", "{.metadata.finalizers}", r#"["example.com/my-finalizer"]"#);
    k.ok(&["delete", "myapp", "my-app", "--timeout=30s"]);
    assert!(seen.lock().expect("lock").contains(&"DELETE /apps/default/my-app".to_owned()));
    eventually_event(&k, "CleanedUp/Normal/my-app");
    k.eventually(&["get", "myapps", "-o", "name"], |s| !s.contains("my-app"));
    stop(run);
}

// ───────────────────────────── pod-annotator ─────────────────────────────

#[test]
fn pod_annotator_patches_selected_pods_only_and_deletes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    // Pods that exist before the operator starts, one outside its namespace.
    apply(&k, &example("pod-annotator").join("samples"), "web-1");
    k.ok(&["run", "web-elsewhere", "--image=nginx", "--labels=app=webserver", "-n", "default"]);
    let run = run_example("pod-annotator", &k);

    let annotation = "{.metadata.annotations.example\\.com/pod-labels}";
    let pod_annotation =
        |ns: &str, name: &str| k.ok(&["get", "pod", name, "-n", ns, "-o", &format!("jsonpath={annotation}")]);
    let eventually_annotated = |name: &str, want: &str| {
        k.eventually(
            &["get", "pod", name, "-n", "production", "-o", &format!("jsonpath={annotation}")],
            |s| s == want,
        )
    };
    eventually_annotated("web-1", "app=webserver,tier=front");

    // A label change is seen and summarized again; a removed annotation comes back.
    k.ok(&["label", "pod", "web-1", "-n", "production", "tier=back", "--overwrite"]);
    eventually_annotated("web-1", "app=webserver,tier=back");
    k.ok(&["annotate", "pod", "web-1", "-n", "production", "example.com/pod-labels-"]);
    eventually_annotated("web-1", "app=webserver,tier=back");
    // A Pod that starts matching the selector is picked up.
    k.ok(&["label", "pod", "db-1", "-n", "production", "app=webserver", "--overwrite"]);
    eventually_annotated("db-1", "app=webserver");
    k.ok(&["label", "pod", "db-1", "-n", "production", "app=database", "--overwrite"]);

    // Converged: no more writes to the annotated Pod, none at all to the others.
    let rv = |ns: &str, name: &str| {
        k.ok(&["get", "pod", name, "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}"])
    };
    std::thread::sleep(Duration::from_secs(1));
    let before = (rv("production", "web-1"), rv("production", "db-1"), rv("default", "web-elsewhere"));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(before, (rv("production", "web-1"), rv("production", "db-1"), rv("default", "web-elsewhere")));
    assert_eq!(pod_annotation("default", "web-elsewhere"), "", "outside the namespace: untouched");
    // Nothing deleted, nothing owned.
    let mut pods: Vec<String> = k
        .ok(&[
            "get",
            "pods",
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}:{.metadata.ownerReferences}{\"\\n\"}{end}",
        ])
        .lines()
        .map(str::to_owned)
        .collect();
    pods.sort();
    assert_eq!(pods, ["db-1:", "web-1:", "web-elsewhere:"]);
    stop(run);
}

// ───────────────────────────── myresource ─────────────────────────────

fn condition(k: &Kubectl, name: &str, kind: &str, want: &str) {
    eventually_is(
        k,
        "myresource",
        name,
        &format!(
            r#"{{.status.conditions[?(@.type=="{kind}")].status}}/{{.status.conditions[?(@.type=="{kind}")].reason}}"#
        ),
        want,
    );
}

#[test]
fn myresource_waits_for_its_dependency_and_reports_each_child() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let run = run_example("myresource", &k);
    apply(&k, &example("myresource").join("samples"), "blog");

    // The CRD's defaults and the children of the one without a dependency.
    assert_eq!(
        jsonpath(&k, "myresource", "database-ui", "{.spec.replicas}/{.spec.protocol}/{.spec.image}"),
        "1/https/nginx:1.27"
    );
    eventually_is(
        &k,
        "service",
        "database-ui",
        "{.spec.ports[0].name}/{.spec.ports[0].port}/{.spec.ports[0].targetPort}",
        "https/443/8080",
    );
    eventually_is(&k, "deployment", "database-ui", "{.metadata.ownerReferences[0].name}", "database-ui");
    condition(&k, "database-ui", "Service", "True/Ready");
    condition(&k, "database-ui", "Deployment", "False/Pending");
    condition(&k, "database-ui", "Ready", "False/Pending");
    condition(&k, "database-ui", "WaitingForDependency", "False/DependenciesReady");
    eventually_is(&k, "myresource", "database-ui", "{.status.url}", "https://db.home.example.com");

    // blog waits for database-ui and creates nothing meanwhile.
    condition(&k, "blog", "WaitingForDependency", "True/DependencyNotReady");
    condition(&k, "blog", "Ready", "False/WaitingForDependency");
    assert!(!k.run(&["get", "deployment", "blog"]).status.success(), "nothing is created while waiting");

    // database-ui becomes Ready: blog goes ahead.
    k.ok(&[
        "patch",
        "deployment",
        "database-ui",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":1,"readyReplicas":1}}"#,
    ]);
    condition(&k, "database-ui", "Ready", "True/Ready");
    condition(&k, "blog", "WaitingForDependency", "False/DependenciesReady");
    eventually_is(
        &k,
        "deployment",
        "blog",
        "{.spec.replicas}/{.spec.template.spec.containers[0].env[*].value}",
        "2/http://blog.home.example.com postgres.default.svc 5432 blog",
    );
    eventually_is(&k, "service", "blog", "{.spec.ports[0].name}/{.spec.ports[0].port}", "http/80");
    k.ok(&[
        "patch",
        "deployment",
        "blog",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"readyReplicas":2}}"#,
    ]);
    condition(&k, "blog", "Ready", "True/Ready");

    // The schema's ranges and enum are enforced by the API server.
    for bad in [r#"{"spec":{"port":70000}}"#, r#"{"spec":{"protocol":"ftp"}}"#, r#"{"spec":{"replicas":0}}"#]
    {
        let out = k.run(&["patch", "myresource", "blog", "--type=merge", "-p", bad]);
        assert!(!out.status.success(), "{bad} must be rejected");
    }

    // Converged: no writes while nothing changes.
    let rvs = || {
        [
            "myresource/blog",
            "myresource/database-ui",
            "deployment/blog",
            "service/blog",
            "deployment/database-ui",
        ]
        .map(|o| k.ok(&["get", o, "-o", "jsonpath={.metadata.resourceVersion}"]))
    };
    std::thread::sleep(Duration::from_secs(1));
    let before = rvs();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(before, rvs(), "nothing is written when nothing changed");

    // A spec change: applied, and the status says which generation it reflects.
    k.ok(&["patch", "myresource", "blog", "--type=merge", "-p", r#"{"spec":{"replicas":3}}"#]);
    eventually_is(&k, "deployment", "blog", "{.spec.replicas}", "3");
    eventually_is(&k, "myresource", "blog", "{.status.observedGeneration}", "2");
    condition(&k, "blog", "Deployment", "False/Pending");
    stop(run);
}

// ───────────────────────────── ctop dev ─────────────────────────────

/// `ctop dev examples/<name>` for each example: the embedded cluster, the samples applied
/// and reconciled, a clean exit on SIGTERM.
/// On a cluster that runs Pods, myresource's dependency chain and myapp's readiness
/// resolve by themselves: no status is written by hand.
#[test]
fn examples_that_wait_for_readiness_converge_on_a_cluster_that_runs_pods() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = common::start_cluster(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let run = run_example("myresource", &k);
    apply(&k, &example("myresource").join("samples"), "blog");
    for name in ["database-ui", "blog"] {
        condition(&k, name, "Ready", "True/Ready");
        condition(&k, name, "Deployment", "True/Ready");
    }
    condition(&k, "blog", "WaitingForDependency", "False/DependenciesReady");
    eventually_is(&k, "deployment", "blog", "{.status.availableReplicas}/{.spec.replicas}", "2/2");
    stop(run);

    let (url, seen) = registry();
    let values = dir.path().join("values.yaml");
    std::fs::write(&values, format!("registryUrl: {url}\n")).expect("write values");
    let run = run_example_with("myapp", &k, &["--values", values.to_str().expect("utf-8"), "--egress", &url]);
    apply(&k, &example("myapp").join("samples"), "my-app");
    eventually_is(&k, "myapp", "my-app", "{.status.phase}/{.status.registered}", "Running/true");
    eventually_is(&k, "deployment", "my-app", "{.status.readyReplicas}/{.spec.replicas}", "3/3");
    assert!(seen.lock().expect("lock").contains(&"PUT /apps/default/my-app".to_owned()));
    stop(run);
}

#[test]
fn dev_runs_each_example_with_its_samples() {
    // The embedded cluster runs Pods, so the examples that wait for readiness get there.
    let cases: [(&str, [&str; 4], &str); 7] = [
        (
            "greeting",
            ["greeting", "doe-family", "", "{.status.message}"],
            "Hello to the Doe family: Jane, John",
        ),
        ("myapp", ["myapp", "my-app", "", "{.status.phase}/{.status.registered}"], "Running/false"),
        (
            "myresource",
            ["myresource", "blog", "", r#"{.status.conditions[?(@.type=="Ready")].status}"#],
            "True",
        ),
        ("webapp", ["webapp", "shop", "", "{.status.phase}/{.status.ready}"], "Running/true"),
        (
            "pod-annotator",
            ["pod", "web-1", "production", "{.metadata.annotations.example\\.com/pod-labels}"],
            "app=webserver,tier=front",
        ),
        (
            "webpage",
            ["webpage", "hello", "", "{.status.areWeGood}/{.status.htmlConfigMap}"],
            "true/hello-html",
        ),
        ("service-per-pod", ["service", "nginx-2", "", "{.spec.selector.pod-name}"], "nginx-2"),
    ];
    for (name, [kind, object, ns, path], want) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kc");
        let log = dir.path().join("log");
        let mut dev = Proc(
            Command::new(binary::ctop())
                .arg("dev")
                .arg(example(name))
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).expect("log file"))
                .spawn()
                .expect("ctop dev starts"),
        );
        common::wait_for(&kubeconfig);
        let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
        let ns = if ns.is_empty() { "default" } else { ns };
        k.eventually(&["get", kind, object, "-n", ns, "-o", &format!("jsonpath={path}")], |s| s == want);
        assert!(
            Command::new("kill").args(["-TERM", &dev.0.id().to_string()]).status().expect("kill").success()
        );
        let status = dev.0.wait().expect("ctop dev exits");
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(status.success(), "ctop dev {name} exited with {status}:\n{text}");
    }
}

/// `ctop dev` serves the examples' `validate` handlers as admission webhooks of its
/// embedded cluster: kubectl sees the script's message.
#[test]
fn dev_enforces_the_examples_validate_handlers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kc");
    let _dev = Proc(
        Command::new(binary::ctop())
            .arg("dev")
            .arg(example("greeting"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop dev starts"),
    );
    common::wait_for(&kubeconfig);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "greeting", "doe-family", "-o", "jsonpath={.status.message}"], |s| !s.is_empty());
    let file = dir.path().join("both.yaml");
    std::fs::write(
        &file,
        "apiVersion: greetings.example.com/v1\nkind: Greeting\nmetadata: {name: both, namespace: default}\nspec: {name: A, surname: Doe}\n",
    )
    .expect("write");
    let out = k.run(&["apply", "-f", file.to_str().expect("utf-8")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a Greeting with both name and surname is refused");
    assert!(
        stderr.contains("denied the request")
            && stderr.contains("exactly one of spec.name and spec.surname must be set"),
        "{stderr}"
    );
    assert_eq!(k.ok(&["get", "greetings", "-o", "name"]).lines().filter(|l| l.ends_with("/both")).count(), 0);
}
