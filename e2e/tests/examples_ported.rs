//! The operators ported from other frameworks' tutorials (`examples/webpage`,
//! `examples/service-per-pod`, `examples/cronjob`), run as a user runs them: `ctop sim` with
//! workloads, `ctop run <example> --install-crds`, the samples applied with kubectl, and what
//! each README promises checked with kubectl.

mod common;

use common::examples::{apply, eventually_is, example, run_example, run_example_with, stop};
use common::{Kubectl, free_port, start_cluster, start_cluster_with_webhook};

/// The names of `kind` objects, sorted, one per line.
fn names(k: &Kubectl, kind: &str, selector: &str) -> String {
    let out = k.ok(&[
        "get",
        kind,
        "-l",
        selector,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
    ]);
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    lines.join(",")
}

// ───────────────────────────── webpage ─────────────────────────────

#[test]
fn webpage_serves_the_page_rolls_on_edit_and_keeps_the_last_good_page_on_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_cluster(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let run = run_example("webpage", &k);
    apply(&k, &example("webpage").join("samples"), "hello");

    eventually_is(&k, "webpage", "hello", "{.status.areWeGood}/{.status.htmlConfigMap}", "true/hello-html");
    assert!(
        k.ok(&["get", "configmap", "hello-html", "-o", "jsonpath={.data.index\\.html}"])
            .contains("Hello World!")
    );
    eventually_is(&k, "deployment", "hello", "{.status.availableReplicas}", "1");
    assert_eq!(k.ok(&["get", "service", "hello", "-o", "jsonpath={.spec.type}"]), "NodePort");
    assert_eq!(
        k.ok(&["get", "ingress", "hello", "-o", "jsonpath={.spec.rules[0].host}"]),
        "hello.default.example.com"
    );
    let hash = |k: &Kubectl| {
        k.ok(&[
            "get",
            "deployment",
            "hello",
            "-o",
            "jsonpath={.spec.template.metadata.annotations.sample\\.javaoperatorsdk/html-fnv1a}",
        ])
    };
    let first = hash(&k);
    assert_eq!(first.len(), 8, "{first}");

    // A new page: the ConfigMap follows and the Pod template changes, so the Pods roll.
    k.ok(&[
        "patch",
        "webpage",
        "hello",
        "--type=merge",
        "-p",
        r#"{"spec":{"html":"<p>second</p>","exposed":false}}"#,
    ]);
    eventually_is(&k, "configmap", "hello-html", "{.data.index\\.html}", "<p>second</p>");
    k.eventually(&["get", "deployment", "hello", "-o", "jsonpath={.metadata.generation}"], |s| s == "2");
    assert_ne!(hash(&k), first);
    // Not exposed any more: the Ingress is pruned.
    k.eventually(&["get", "ingress", "-o", "name"], |s| s.trim().is_empty());

    // The sample's simulated error: reported in the status, the last good page kept.
    k.ok(&["patch", "webpage", "hello", "--type=merge", "-p", r#"{"spec":{"html":"an error page"}}"#]);
    eventually_is(
        &k,
        "webpage",
        "hello",
        "{.status.areWeGood}/{.status.errorMessage}",
        "false/Error: Simulating error",
    );
    assert_eq!(
        k.ok(&["get", "configmap", "hello-html", "-o", "jsonpath={.data.index\\.html}"]),
        "<p>second</p>"
    );
    // Fixed again: the error message goes away.
    k.ok(&["patch", "webpage", "hello", "--type=merge", "-p", r#"{"spec":{"html":"<p>third</p>"}}"#]);
    eventually_is(&k, "webpage", "hello", "{.status.areWeGood}/{.status.errorMessage}", "true/");
    stop(run);
}

// ───────────────────────────── service-per-pod ─────────────────────────────

#[test]
fn service_per_pod_decorates_statefulsets_and_follows_their_scale() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_cluster(dir.path());
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let run = run_example("service-per-pod", &k);
    apply(&k, &example("service-per-pod").join("samples"), "nginx");

    let sel = "service-per-pod/statefulset=nginx";
    k.eventually(&["get", "services", "-l", sel, "-o", "name"], |s| s.lines().count() == 3);
    assert_eq!(names(&k, "services", sel), "nginx-0,nginx-1,nginx-2");
    assert_eq!(
        k.ok(&[
            "get",
            "service",
            "nginx-1",
            "-o",
            "jsonpath={.spec.selector.pod-name}/{.spec.ports[0].port}:{.spec.ports[0].targetPort}"
        ]),
        "nginx-1/80:8080"
    );
    // The second decorator labels each Pod with its own name, which the Services select.
    for i in 0..3 {
        eventually_is(&k, "pod", &format!("nginx-{i}"), "{.metadata.labels.pod-name}", &format!("nginx-{i}"));
    }
    assert_eq!(
        k.ok(&["get", "pod", "nginx-0", "-o", "jsonpath={.metadata.ownerReferences[0].kind}"]),
        "StatefulSet"
    );

    // Scaled down: the Service of the Pod that went away is pruned.
    k.ok(&["scale", "statefulset", "nginx", "--replicas=2"]);
    k.eventually(&["get", "services", "-l", sel, "-o", "name"], |s| s.lines().count() == 2);
    assert_eq!(names(&k, "services", sel), "nginx-0,nginx-1");
    // The annotation removed: the decorator wants nothing, its Services go; the Pods stay.
    k.ok(&["annotate", "statefulset", "nginx", "service-per-pod-label-"]);
    k.eventually(&["get", "services", "-l", sel, "-o", "name"], |s| s.trim().is_empty());
    assert_eq!(names(&k, "pods", "app=nginx"), "nginx-0,nginx-1");
    stop(run);
}

// ───────────────────────────── cronjob ─────────────────────────────

/// The CronTab of the tests: every two seconds (cron-parser's seconds field), Jobs that
/// finish after a second, one successful Job kept.
const CRONTAB: &str = r#"apiVersion: batch.tutorial.kubebuilder.io/v1
kind: CronTab
metadata:
  name: often
spec:
  schedule: "*/2 * * * * *"
  successfulJobsHistoryLimit: 1
  jobTemplate:
    metadata:
      labels: {crontab: often}
    spec:
      template:
        spec:
          containers: [{name: hello, image: busybox}]
          restartPolicy: OnFailure
"#;

#[test]
fn cronjob_runs_jobs_on_schedule_keeps_its_history_and_suspends() {
    let node_modules = example("cronjob").join("node_modules/cron-parser");
    assert!(
        node_modules.is_dir(),
        "the cronjob example imports npm packages: run `npm ci --prefix examples/cronjob` (scripts/test.sh does)"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    // CronTab has two versions: the API server converts through the operator's webhook
    // Service, which the sim reaches on the port `ctop run` serves it on.
    let port = free_port();
    let (_sim, kubeconfig) = start_cluster_with_webhook(dir.path(), "default/cronjob-webhook", port);
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    let run = run_example_with("cronjob", &k, &["--webhook-port", &port.to_string()]);
    let path = dir.path().join("often.yaml");
    std::fs::write(&path, CRONTAB).expect("write");
    apply(&k, &path, "often");

    // Jobs appear, named after their scheduled time and annotated with it.
    let jobs = |k: &Kubectl| names(k, "jobs", "crontab=often");
    k.eventually(&["get", "jobs", "-l", "crontab=often", "-o", "name"], |s| !s.trim().is_empty());
    let first = jobs(&k).split(',').next().expect("a job").to_owned();
    let unix: i64 = first.strip_prefix("often-").and_then(|t| t.parse().ok()).expect("often-<unix time>");
    assert_eq!(unix % 2, 0, "scheduled on an even second: {first}");
    let scheduled = k.ok(&[
        "get",
        "job",
        &first,
        "-o",
        "jsonpath={.metadata.annotations.batch\\.tutorial\\.kubebuilder\\.io/scheduled-at}",
    ]);
    // An RFC 3339 time of the same second (toISOString: `YYYY-MM-DDTHH:MM:SS.000Z`).
    let second: Option<i64> = scheduled.get(17..19).and_then(|s| s.parse().ok());
    assert!(scheduled.ends_with(".000Z") && second == Some(unix % 60), "{scheduled} for {unix}");
    assert_eq!(
        k.ok(&["get", "job", &first, "-o", "jsonpath={.metadata.ownerReferences[0].kind}"]),
        "CronTab"
    );
    k.eventually(&["get", "crontab", "often", "-o", "jsonpath={.status.lastScheduleTime}"], |s| {
        !s.is_empty()
    });

    // History: once later Jobs complete, the first is deleted and one successful Job is kept.
    let each_job = |fields: &str| format!("jsonpath={{range .items[*]}}{fields}{{\"\\n\"}}{{end}}");
    let succeeded = each_job("{.metadata.name}={.status.succeeded}");
    k.eventually(&["get", "jobs", "-l", "crontab=often", "-o", &succeeded], |s| {
        !s.contains(&format!("{first}=")) && s.lines().filter(|l| l.ends_with("=1")).count() == 1
    });

    // Suspended: no new Job; the existing ones stay.
    k.ok(&["patch", "crontab", "often", "--type=merge", "-p", r#"{"spec":{"suspend":true}}"#]);
    let active = each_job("{.status.active}");
    k.eventually(&["get", "jobs", "-l", "crontab=often", "-o", &active], |s| {
        s.lines().all(|l| l.is_empty() || l == "0")
    });
    let last = k.ok(&["get", "crontab", "often", "-o", "jsonpath={.status.lastScheduleTime}"]);
    // Two schedule periods with nothing new (an absence: there is no event to wait for).
    std::thread::sleep(std::time::Duration::from_secs(5));
    assert_eq!(k.ok(&["get", "crontab", "often", "-o", "jsonpath={.status.lastScheduleTime}"]), last);
    assert!(!jobs(&k).is_empty(), "a suspended CronTab keeps its Jobs");
    stop(run);
}
