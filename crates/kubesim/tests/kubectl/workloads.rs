//! The simulated cluster through kubectl: scale, rollout status, restart and history of
//! Deployments, StatefulSets and DaemonSets, Jobs that complete, failing Pods and CronJobs.

use std::time::Duration;

use ctop_kubesim::Config;
use serde_json::Value;

use super::*;

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
