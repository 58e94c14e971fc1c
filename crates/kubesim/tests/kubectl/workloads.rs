//! The simulated cluster through kubectl: scale, rollout status, restart and history of
//! Deployments, StatefulSets and DaemonSets, Jobs that complete, failing Pods and CronJobs,
//! and the columns `kubectl get` prints for them (the API server's printer columns), checked
//! against what kubectl prints for a real cluster with [`assert_table`].

use std::time::Duration;

use ctop_kubesim::Config;
use serde_json::Value;

use super::*;

/// Whether `s` is an age as the API server prints one (`duration.HumanDuration`: `5s`,
/// `2m30s`, `3h1m`, `30h`, `3d4h`, `400d`, `2y70d`).
fn is_age(s: &str) -> bool {
    let mut rest = s;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let unit = rest[digits..].chars().next();
        if digits == 0 || !matches!(unit, Some('s' | 'm' | 'h' | 'd' | 'y')) {
            return false;
        }
        rest = &rest[digits + 1..];
        parts += 1;
    }
    parts > 0
}

/// Whether the printed cell `got` is the `want`ed one: `~` in `want` stands for an age.
fn cell_matches(want: &str, got: &str) -> bool {
    match want.split_once('~') {
        None => want == got,
        Some((pre, post)) => {
            got.len() >= pre.len() + post.len()
                && got.starts_with(pre)
                && got.ends_with(post)
                && is_age(&got[pre.len()..got.len() - post.len()])
        }
    }
}

/// Asserts each line of `kubectl get` output against a line of `want`, word by word (the
/// padding between columns follows the widest cell); `~` in a word stands for an age.
fn assert_table(out: &str, want: &[&str]) {
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), want.len(), "lines of\n{out}");
    for (g, w) in got.iter().zip(want) {
        let (gw, ww): (Vec<&str>, Vec<&str>) =
            (g.split_whitespace().collect(), w.split_whitespace().collect());
        assert!(
            gw.len() == ww.len() && ww.iter().zip(&gw).all(|(w, g)| cell_matches(w, g)),
            "line {g:?} is not {w:?} in\n{out}"
        );
    }
}

#[test]
fn ages_and_wildcards() {
    for age in ["0s", "59s", "2m30s", "3h", "3d4h", "2y70d"] {
        assert!(is_age(age), "{age}");
    }
    for not in ["", "s", "5", "5x", "-1s", "<none>"] {
        assert!(!is_age(not), "{not}");
    }
    assert!(cell_matches("(~", "(2s") && cell_matches("~", "10m") && !cell_matches("~", "x"));
    assert_table("A  B\nx  1 (5s ago)\n", &["A B", "x 1 (~ ago)"]);
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
    assert_table(
        &env.ok(&["get", "deployment", "web", "-o", "wide"]),
        &[
            "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR",
            "web 3/3 3 3 ~ web nginx:2 app=web",
        ],
    );
    // The old ReplicaSet is scaled to zero, the new one runs the three Pods.
    let images = env.ok(&[
        "get",
        "rs",
        "-l",
        "app=web",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.spec.template.spec.containers[0].image} {end}",
    ]);
    let of = |image: &str| {
        let suffix = format!("={image}");
        images.split_whitespace().find_map(|i| i.strip_suffix(&suffix)).map(str::to_owned)
    };
    let (Some(old), Some(new)) = (of("nginx:1"), of("nginx:2")) else { panic!("two ReplicaSets: {images}") };
    // The rollout is done once the Deployment counts the new Pods; the old ReplicaSet
    // reports its last Pod gone a moment later.
    let replicas = ["get", "rs", &old, "-o", "jsonpath={.status.replicas}"];
    wait_until("the old ReplicaSet has no Pods", || matches!(env.ok(&replicas).as_str(), "" | "0")).await;
    let mut rows = [format!("{old} 0 0 0 ~"), format!("{new} 3 3 3 ~")];
    rows.sort();
    assert_table(
        &env.ok(&["get", "rs", "-l", "app=web"]),
        &["NAME DESIRED CURRENT READY AGE", &rows[0], &rows[1]],
    );
    assert_table(
        &env.ok(&["get", "nodes"]),
        // The first node runs the control plane's mirror Pods and has its role label
        // (`Config::system_pods`), as a kind cluster's node does.
        &["NAME STATUS ROLES AGE VERSION", "kubesim-node-1 Ready control-plane ~ v1.33.0"],
    );
    assert_table(
        &env.ok(&["get", "nodes", "-o", "wide"]),
        &[
            "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME",
            "kubesim-node-1 Ready control-plane ~ v1.33.0 10.0.0.2 <none> kubesim <unknown> kubesim://1.0.0",
        ],
    );
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
    assert_table(
        &env.ok(&["get", "job", "once"]),
        &["NAME STATUS COMPLETIONS DURATION AGE", "once Complete 1/1 ~ ~"],
    );
    // The API server gave the Job a selector of its own uid.
    let uid = env.ok(&["get", "job", "once", "-o", "jsonpath={.metadata.uid}"]);
    assert_table(
        &env.ok(&["get", "job", "once", "-o", "wide"]),
        &[
            "NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR",
            &format!("once Complete 1/1 ~ ~ once busybox batch.kubernetes.io/controller-uid={uid}"),
        ],
    );
    let pod = env.ok(&["get", "pods", "-l", "job-name=once", "-o", "jsonpath={.items[0].metadata.name}"]);
    assert_table(
        &env.ok(&["get", "pods", "-l", "job-name=once"]),
        &["NAME READY STATUS RESTARTS AGE", &format!("{pod} 0/1 Completed 0 ~")],
    );
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
    assert_table(&env.ok(&["get", "statefulset", "db"]), &["NAME READY AGE", "db 3/3 ~"]);
    assert_table(
        &env.ok(&["get", "statefulset", "db", "-o", "wide"]),
        &["NAME READY AGE CONTAINERS IMAGES", "db 3/3 ~ db postgres:17"],
    );
    let volumes = env.ok(&["get", "pvc", "-o", "jsonpath={.items[*].spec.volumeName}"]);
    let volumes: Vec<&str> = volumes.split(' ').collect();
    assert!(volumes.iter().all(|v| v.starts_with("pvc-")), "{volumes:?}");
    let claims: Vec<String> =
        (0..3).map(|i| format!("data-db-{i} Bound {} 1Gi RWO <unset> ~", volumes[i])).collect();
    let mut want = vec!["NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE"];
    want.extend(claims.iter().map(String::as_str));
    assert_table(&env.ok(&["get", "pvc"]), &want);

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
    assert_table(
        &env.ok(&["get", "daemonset", "agent", "-o", "wide"]),
        &[
            "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE CONTAINERS IMAGES SELECTOR",
            "agent 3 3 3 3 3 <none> ~ agent agent:2 app=agent",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_a_stage_fails_show_their_containers_error_and_hold_the_rollout_back() {
    let workloads = ctop_kubesim::WorkloadConfig {
        pod_start: Duration::from_millis(50),
        stages: vec!["app=flaky:fail".parse().expect("a stage")],
        ..Default::default()
    };
    let env = Env::start_with(Config { workloads: Some(workloads), ..Config::default() }).await;
    // A Pod that does not restart fails for good: STATUS is its container's terminated reason.
    env.ok(&["run", "once", "--image=busybox", "--labels=app=flaky", "--restart=Never"]);
    let out = env.ok(&["wait", "--for=jsonpath={.status.phase}=Failed", "pod/once", "--timeout=20s"]);
    assert!(out.contains("pod/once condition met"), "{out}");
    assert_table(&env.ok(&["get", "pod", "once"]), &["NAME READY STATUS RESTARTS AGE", "once 0/1 Error 0 ~"]);
    let placed = env.ok(&["get", "pod", "once", "-o", "jsonpath={.status.podIP} {.spec.nodeName}"]);
    assert_table(
        &env.ok(&["get", "pod", "once", "-o", "wide"]),
        &[
            "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES",
            &format!("once 0/1 Error 0 ~ {placed} <none> <none>"),
        ],
    );

    // A Deployment's Pods restart and never become ready: the rollout does not complete.
    let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: crashy, namespace: default}\n\
        spec:\n  replicas: 1\n  selector: {matchLabels: {app: flaky}}\n  template:\n    metadata: {labels: {app: flaky}}\n    \
        spec: {containers: [{name: c, image: busybox}]}\n";
    assert!(env.apply(d, &[]).ok());
    let out = env.run(&["rollout", "status", "deployment/crashy", "--timeout=2s"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, "error: timed out waiting for the condition\n");
    let crashing = "{.status.containerStatuses[0].state.waiting.reason}=CrashLoopBackOff";
    let out = env.ok(&[
        "wait",
        &format!("--for=jsonpath={crashing}"),
        "pod",
        "-l",
        "app=flaky,pod-template-hash",
        "--timeout=20s",
    ]);
    assert!(out.contains("condition met"), "{out}");
    let pod = env.ok(&[
        "get",
        "pods",
        "-l",
        "app=flaky,pod-template-hash",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    assert_table(
        &env.ok(&["get", "pods", "-l", "app=flaky"]),
        &[
            "NAME READY STATUS RESTARTS AGE",
            &format!("{pod} 0/1 CrashLoopBackOff 1 (~ ago) ~"),
            "once 0/1 Error 0 ~",
        ],
    );
    assert_table(
        &env.ok(&["get", "deployment", "crashy", "-o", "wide"]),
        &[
            "NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR",
            "crashy 0/1 1 0 ~ c busybox app=flaky",
        ],
    );
    let rs = env.ok(&["get", "rs", "-l", "app=flaky", "-o", "jsonpath={.items[0].metadata.name}"]);
    assert_table(
        &env.ok(&["get", "rs", "-l", "app=flaky", "-o", "wide"]),
        &[
            "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR",
            &format!(
                "{rs} 1 1 0 ~ c busybox app=flaky,pod-template-hash={}",
                rs.trim_start_matches("crashy-")
            ),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cronjob_runs_the_schedule_it_missed() {
    let workloads = ctop_kubesim::WorkloadConfig {
        pod_start: Duration::from_millis(50),
        job_duration: Duration::from_millis(100),
        ..Default::default()
    };
    let env = Env::start_with(Config { workloads: Some(workloads), ..Config::default() }).await;
    env.ok(&["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 * * * *"]);
    let header = "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE";
    assert_table(
        &env.ok(&["get", "cronjob", "nightly"]),
        &[header, "nightly 0 * * * * <none> False 0 <none> ~"],
    );
    // As if its last run was two hours ago: the latest missed hour runs now.
    let two_hours_ago = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    env.ok(&[
        "patch",
        "cronjob",
        "nightly",
        "--subresource=status",
        "--type=merge",
        "-p",
        &format!(r#"{{"status":{{"lastScheduleTime":"{two_hours_ago}"}}}}"#),
    ]);
    let out =
        env.ok(&["wait", "--for=jsonpath={.status.lastSuccessfulTime}", "cronjob/nightly", "--timeout=20s"]);
    assert!(out.contains("cronjob.batch/nightly condition met"), "{out}");
    // The Job is named after the scheduled time, in minutes since the epoch.
    let scheduled: jiff::Timestamp = env
        .ok(&["get", "cronjob", "nightly", "-o", "jsonpath={.status.lastScheduleTime}"])
        .parse()
        .expect("a schedule time");
    let job = format!("nightly-{}", scheduled.as_second() / 60);
    assert_table(
        &env.ok(&["get", "jobs"]),
        &["NAME STATUS COMPLETIONS DURATION AGE", &format!("{job} Complete 1/1 ~ ~")],
    );
    assert_table(&env.ok(&["get", "cronjob", "nightly"]), &[header, "nightly 0 * * * * <none> False 0 ~ ~"]);
    assert_table(
        &env.ok(&["get", "cronjob", "nightly", "-o", "wide"]),
        &[
            &format!("{header} CONTAINERS IMAGES SELECTOR"),
            "nightly 0 * * * * <none> False 0 ~ ~ nightly busybox <none>",
        ],
    );
    let pod = env.ok(&[
        "get",
        "pods",
        "-l",
        &format!("job-name={job}"),
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    assert_table(
        &env.ok(&["get", "pods", "-l", &format!("job-name={job}")]),
        &["NAME READY STATUS RESTARTS AGE", &format!("{pod} 0/1 Completed 0 ~")],
    );
}
