//! Graceful deletion of Pods: the API server's `CheckGracefulDelete`
//! (`pkg/registry/core/pod/strategy.go`) and `BeforeDelete`
//! (`staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go`), the registry's update then
//! delete (`staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`,
//! `updateForGracefulDeletionAndFinalizers`), and the simulated kubelet that stops the
//! containers and removes the Pod.

mod common;

use std::time::Duration;

use common::{eventually, start_with};
use ctop_kubesim::{Config, WorkloadConfig};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

fn config(stages: &[&str]) -> Config {
    let workloads = WorkloadConfig {
        nodes: 1,
        pod_start: Duration::from_millis(30),
        stages: stages.iter().map(|s| s.parse().expect("stage")).collect(),
        ..WorkloadConfig::default()
    };
    Config { workloads: Some(workloads), system_pods: false, ..Config::default() }
}

fn pod(name: &str, app: &str, grace: Option<i64>) -> Pod {
    let mut spec =
        json!({"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]});
    if let Some(g) = grace {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"app": app}}, "spec": spec}))
        .expect("pod")
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn running(pods: &Api<Pod>, p: Pod) -> Pod {
    let name = p.name_any();
    pods.create(&PostParams::default(), &p).await.expect("create");
    eventually(10, &format!("{name} Ready"), || {
        let pods = pods.clone();
        let name = name.clone();
        async move { pods.get(&name).await.ok().filter(ready) }
    })
    .await
}

fn seconds_between(a: &str, b: &str) -> i64 {
    let (a, b): (jiff::Timestamp, jiff::Timestamp) = (a.parse().expect("time"), b.parse().expect("time"));
    (b - a).get_seconds()
}

/// A running Pod is marked, not removed: `deletionTimestamp` is now plus its
/// `terminationGracePeriodSeconds` (30 by default) and `deletionGracePeriodSeconds` that
/// period; the DELETE answers with it (200). It stays Ready while its containers stop, its
/// endpoint `serving` but not `ready` and `terminating` (`podToEndpoint`,
/// `pkg/controller/util/endpointslice`); then the kubelet reports it `Succeeded` (exit code 0)
/// and removes it, so a watch sees MODIFIED (marked), MODIFIED (terminated), MODIFIED
/// (grace period 0), DELETED.
#[tokio::test(flavor = "multi_thread")]
async fn a_running_pod_terminates_within_its_grace_period() {
    let (_sim, client) = start_with(config(&["app=web:stop=1500ms"])).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let services: Api<Service> = Api::default_namespaced(client.clone());
    let svc =
        json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    services.create(&PostParams::default(), &serde_json::from_value(svc).expect("svc")).await.expect("svc");
    let before = running(&pods, pod("web", "web", None)).await;
    let watch = pods
        .watch(&WatchParams::default().fields("metadata.name=web"), &before.resource_version().expect("rv"))
        .await
        .expect("watch");

    let answer = pods.delete("web", &DeleteParams::default()).await.expect("delete");
    let marked = answer.left().expect("the Pod, not a Status: it is not gone yet");
    let deadline = marked.metadata.deletion_timestamp.as_ref().expect("deletionTimestamp").0.to_string();
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(30));
    let now = jiff::Timestamp::now().to_string();
    assert!((29..=31).contains(&seconds_between(&now, &deadline)), "{now} → {deadline}");
    let listed = pods.get("web").await.expect("still there");
    assert!(ready(&listed), "Ready while its containers stop");

    let slices: Api<EndpointSlice> = Api::default_namespaced(client.clone());
    let slice = eventually(5, "a terminating endpoint", || {
        let slices = slices.clone();
        async move {
            let list = slices.list(&Default::default()).await.ok()?;
            let ep = list.items.into_iter().flat_map(|s| s.endpoints).next()?;
            (ep.conditions.as_ref()?.terminating == Some(true)).then_some(ep)
        }
    })
    .await;
    let c = slice.conditions.expect("conditions");
    assert_eq!((c.ready, c.serving, c.terminating), (Some(false), Some(true), Some(true)));

    let events: Vec<WatchEvent<Pod>> = tokio::time::timeout(
        Duration::from_secs(10),
        watch.take_while(|e| futures::future::ready(!matches!(e, Ok(WatchEvent::Deleted(_))))).try_collect(),
    )
    .await
    .expect("the Pod is removed")
    .expect("watch");
    let modified: Vec<&Pod> = events
        .iter()
        .filter_map(|e| match e {
            WatchEvent::Modified(p) => Some(p),
            _ => None,
        })
        .collect();
    let terminated =
        modified.iter().find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"));
    let terminated = terminated.expect("the kubelet reports the Pod terminal before removing it");
    let state = terminated.status.as_ref().and_then(|s| s.container_statuses.as_ref()).expect("statuses")[0]
        .state
        .clone()
        .and_then(|s| s.terminated)
        .expect("terminated");
    assert_eq!((state.exit_code, state.reason.as_deref()), (0, Some("Completed")));
    assert_eq!(modified.last().and_then(|p| p.metadata.deletion_grace_period_seconds), Some(0));
    assert!(pods.get_opt("web").await.expect("get").is_none());
}

/// The request's `gracePeriodSeconds` wins over the Pod's; containers that outlast it are
/// killed (exit code 137, `Failed`). A second DELETE may only shorten a pending deletion,
/// moving its deadline by as much (`BeforeDelete`); one that does not changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn the_grace_period_can_be_asked_for_and_shortened() {
    let (_sim, client) = start_with(config(&["app=slow:stop=1h"])).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    running(&pods, pod("slow", "slow", Some(120))).await;
    let first = pods.delete("slow", &DeleteParams::default()).await.expect("delete").left().expect("pod");
    assert_eq!(first.metadata.deletion_grace_period_seconds, Some(120));
    let again = pods.delete("slow", &DeleteParams::default()).await.expect("delete").left().expect("pod");
    assert_eq!(again.metadata.resource_version, first.metadata.resource_version, "nothing changes");
    let shorter = pods.delete("slow", &DeleteParams::default().grace_period(2)).await.expect("delete");
    let shorter = shorter.left().expect("pod");
    assert_eq!(shorter.metadata.deletion_grace_period_seconds, Some(2));
    let (t1, t2) = (
        first.metadata.deletion_timestamp.as_ref().expect("ts").0.to_string(),
        shorter.metadata.deletion_timestamp.as_ref().expect("ts").0.to_string(),
    );
    assert_eq!(seconds_between(&t2, &t1), 118, "{t1} → {t2}");
    let watch = pods
        .watch(&WatchParams::default().fields("metadata.name=slow"), &shorter.resource_version().expect("rv"))
        .await
        .expect("watch");
    let killed = tokio::time::timeout(
        Duration::from_secs(10),
        watch
            .try_filter_map(|e| async move {
                Ok(match e {
                    WatchEvent::Modified(p)
                        if p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed") =>
                    {
                        Some(p)
                    }
                    _ => None,
                })
            })
            .boxed()
            .try_next(),
    )
    .await
    .expect("killed at the end of the grace period")
    .expect("watch")
    .expect("an event");
    let state = killed.status.and_then(|s| s.container_statuses).expect("statuses")[0]
        .state
        .clone()
        .and_then(|s| s.terminated)
        .expect("terminated");
    assert_eq!((state.exit_code, state.reason.as_deref()), (137, Some("Error")));
}

/// A Pod on no node, or in a terminal phase, has nothing to stop: grace period 0
/// (`CheckGracefulDelete`), so the registry marks it and removes it at once, and the DELETE
/// answers with the removed Pod; so does `gracePeriodSeconds: 0` for a running one (`kubectl
/// delete --grace-period=0 --force`).
#[tokio::test(flavor = "multi_thread")]
async fn unscheduled_and_forced_deletions_are_immediate() {
    let (_sim, client) = start_with(Config::default()).await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(&PostParams::default(), &pod("idle", "idle", None)).await.expect("create");
    let created = pods.get("idle").await.expect("get");
    let watch = pods
        .watch(&WatchParams::default().fields("metadata.name=idle"), &created.resource_version().expect("rv"))
        .await
        .expect("watch");
    let gone = pods.delete("idle", &DeleteParams::default()).await.expect("delete").left().expect("the Pod");
    assert_eq!(gone.metadata.deletion_grace_period_seconds, Some(0));
    assert!(pods.get_opt("idle").await.expect("get").is_none());
    let events: Vec<WatchEvent<Pod>> = watch.take(2).try_collect().await.expect("watch");
    assert!(matches!(&events[..], [WatchEvent::Modified(_), WatchEvent::Deleted(_)]), "{events:?}");

    let (_sim, client) = start_with(config(&[])).await;
    let pods: Api<Pod> = Api::default_namespaced(client);
    running(&pods, pod("web", "web", None)).await;
    pods.delete("web", &DeleteParams::default().grace_period(0)).await.expect("delete");
    assert!(pods.get_opt("web").await.expect("get").is_none());
}
