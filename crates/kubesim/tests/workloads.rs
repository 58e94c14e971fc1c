//! kubesim running workloads, through a real kube client (and `kubectl rollout status`):
//! a Deployment becomes ReplicaSets and Pods that run and turn Ready on a simulated node,
//! rolls out a new template within its surge and unavailability, scales, and reports the
//! status and conditions of the real controller; a Service gets a cluster IP and
//! EndpointSlices that follow its ready Pods; a new namespace gets its ServiceAccount and
//! CA ConfigMap.

mod common;

use std::time::Duration;

use common::{eventually, start_with};
use ctop_kubesim::{Config, WorkloadConfig};
use std::str::FromStr as _;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt as _};
use serde_json::json;

fn config() -> Config {
    Config {
        workloads: Some(WorkloadConfig {
            nodes: 2,
            pod_start: Duration::from_millis(50),
            ..WorkloadConfig::default()
        }),
        ..Config::default()
    }
}

fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image, "ports": [{"name": "http", "containerPort": 8080}]}]},
            },
        },
    }))
    .expect("a Deployment")
}

/// The Deployment once its rollout is complete at `replicas` with `image`.
async fn rolled_out(deployments: &Api<Deployment>, name: &str, replicas: i32, image: &str) -> Deployment {
    eventually(20, &format!("{name} rolled out at {replicas} x {image}"), || async {
        let d = deployments.get(name).await.ok()?;
        let s = d.status.clone()?;
        let spec_image = d.spec.as_ref()?.template.spec.as_ref()?.containers[0].image.clone();
        let done = s.observed_generation == d.metadata.generation
            && s.replicas == Some(replicas)
            && s.updated_replicas == Some(replicas)
            && s.available_replicas == Some(replicas)
            && s.unavailable_replicas.is_none()
            && spec_image.as_deref() == Some(image);
        done.then_some(d)
    })
    .await
}

/// The Deployment's `deployment.kubernetes.io/revision`.
fn revision(d: &Deployment) -> Option<&str> {
    d.metadata.annotations.as_ref()?.get("deployment.kubernetes.io/revision").map(String::as_str)
}

async fn pods_of(client: &Client, app: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.list(&ListParams::default().labels(&format!("app={app}"))).await.expect("list pods").items
}

#[tokio::test]
async fn a_deployment_runs_rolls_out_and_scales_like_on_a_cluster() {
    let (_sim, client) = start_with(config()).await;
    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = nodes.list(&ListParams::default()).await.expect("nodes").items;
    assert_eq!(nodes.len(), 2);
    let ready = nodes[0]
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    assert_eq!(ready.map(|c| c.status.as_str()), Some("True"));

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments.create(&PostParams::default(), &deployment("web", 2, "nginx:1")).await.expect("created");
    let d = rolled_out(&deployments, "web", 2, "nginx:1").await;
    let status = d.status.clone().expect("status");
    assert_eq!(status.ready_replicas, Some(2));
    let conditions = status.conditions.expect("conditions");
    let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["Available", "Progressing"]);
    assert_eq!(conditions[0].reason.as_deref(), Some("MinimumReplicasAvailable"));
    assert_eq!(conditions[0].message.as_deref(), Some("Deployment has minimum availability."));
    assert_eq!(conditions[1].reason.as_deref(), Some("NewReplicaSetAvailable"));
    assert_eq!(revision(&d), Some("1"));

    // One ReplicaSet, `<deployment>-<hash>`, selecting and labelling by the hash.
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let rs = sets.list(&ListParams::default().labels("app=web")).await.expect("list").items;
    assert_eq!(rs.len(), 1);
    let hash = rs[0].labels().get("pod-template-hash").cloned().expect("the hash label");
    assert_eq!(rs[0].name_any(), format!("web-{hash}"));
    let message = conditions[1].message.clone().unwrap_or_default();
    assert_eq!(message, format!("ReplicaSet \"web-{hash}\" has successfully progressed."));
    let owner = &rs[0].owner_references()[0];
    assert_eq!((owner.kind.as_str(), owner.controller), ("Deployment", Some(true)));

    // Its Pods run on the nodes with IPs from the nodes' Pod CIDRs.
    let pods = pods_of(&client, "web").await;
    assert_eq!(pods.len(), 2);
    for p in &pods {
        assert!(p.name_any().starts_with(&format!("web-{hash}-")), "{}", p.name_any());
        let spec = p.spec.as_ref().expect("spec");
        assert!(spec.node_name.as_deref().is_some_and(|n| n.starts_with("kubesim-node-")));
        let s = p.status.as_ref().expect("status");
        assert_eq!(s.phase.as_deref(), Some("Running"));
        assert!(s.pod_ip.as_deref().is_some_and(|ip| ip.starts_with("10.244.")), "{:?}", s.pod_ip);
        let cs = &s.container_statuses.as_ref().expect("container statuses")[0];
        assert!(cs.ready && cs.state.as_ref().and_then(|st| st.running.as_ref()).is_some());
    }
    let mut spread: Vec<&str> = pods.iter().filter_map(|p| p.spec.as_ref()?.node_name.as_deref()).collect();
    spread.sort_unstable();
    spread.dedup();
    assert_eq!(spread.len(), 2, "one Pod per node");

    // A new image: a second ReplicaSet takes over, the first is scaled to zero.
    let patch =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}});
    deployments.patch("web", &PatchParams::default(), &Patch::Strategic(&patch)).await.expect("patched");
    let d = rolled_out(&deployments, "web", 2, "nginx:2").await;
    assert_eq!(revision(&d), Some("2"));
    let rs = eventually(20, "the old ReplicaSet at zero", || async {
        let rs = sets.list(&ListParams::default().labels("app=web")).await.ok()?.items;
        let old = rs.iter().find(|r| r.labels().get("pod-template-hash") == Some(&hash))?;
        (old.spec.as_ref()?.replicas == Some(0) && old.status.as_ref()?.replicas == 0).then_some(rs)
    })
    .await;
    assert_eq!(rs.len(), 2);
    let pods = eventually(20, "only new Pods", || async {
        let pods = pods_of(&client, "web").await;
        (pods.len() == 2 && pods.iter().all(|p| !p.name_any().contains(&hash))).then_some(pods)
    })
    .await;
    assert!(
        pods.iter()
            .all(|p| p.spec.as_ref().is_some_and(|s| s.containers[0].image.as_deref() == Some("nginx:2")))
    );

    // Scaled through /scale.
    let scale = json!({"spec": {"replicas": 3}});
    deployments.patch_scale("web", &PatchParams::default(), &Patch::Merge(&scale)).await.expect("scaled");
    rolled_out(&deployments, "web", 3, "nginx:2").await;
    assert_eq!(pods_of(&client, "web").await.len(), 3);
}

#[tokio::test]
async fn services_get_an_ip_and_endpoint_slices_of_their_ready_pods() {
    let (_sim, client) = start_with(config()).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let kubernetes = services.get("kubernetes").await.expect("the kubernetes Service");
    assert_eq!(kubernetes.spec.and_then(|s| s.cluster_ip).as_deref(), Some("10.96.0.1"));
    let svc: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
        "spec": {"selector": {"app": "api"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]},
    }))
    .expect("a Service");
    let svc = services.create(&PostParams::default(), &svc).await.expect("created");
    let ip = svc.spec.as_ref().and_then(|s| s.cluster_ip.clone()).expect("a cluster IP");
    assert!(ip.starts_with("10.96.") && ip != "10.96.0.1", "{ip}");
    // Created by server-side apply (as operators create their children): an IP too.
    let applied = services
        .patch(
            "applied",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "applied"},
                "spec": {"selector": {"app": "api"}, "ports": [{"port": 80}]}})),
        )
        .await
        .expect("applied");
    let applied_ip = applied.spec.and_then(|s| s.cluster_ip).expect("a cluster IP for an applied Service");
    assert!(applied_ip.starts_with("10.96.") && applied_ip != ip, "{applied_ip}");

    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let by_service = ListParams::default().labels("kubernetes.io/service-name=api");
    let empty = eventually(20, "an empty slice", || async {
        slices.list(&by_service).await.ok()?.items.into_iter().next()
    })
    .await;
    assert!(empty.endpoints.is_empty());
    assert_eq!(
        empty.labels().get("endpointslice.kubernetes.io/managed-by").map(String::as_str),
        Some("endpointslice-controller.k8s.io")
    );

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments.create(&PostParams::default(), &deployment("api", 3, "api:1")).await.expect("created");
    rolled_out(&deployments, "api", 3, "api:1").await;
    let slice = eventually(20, "three ready endpoints", || async {
        let slice = slices.list(&by_service).await.ok()?.items.into_iter().next()?;
        let ready = slice
            .endpoints
            .iter()
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .count();
        (ready == 3).then_some(slice)
    })
    .await;
    let ports = slice.ports.expect("ports");
    assert_eq!(
        (ports[0].name.as_deref(), ports[0].port),
        (Some("web"), Some(8080)),
        "the named target port resolved"
    );
    let pod_ips: Vec<String> =
        pods_of(&client, "api").await.iter().filter_map(|p| p.status.as_ref()?.pod_ip.clone()).collect();
    for e in &slice.endpoints {
        assert!(pod_ips.contains(&e.addresses[0]));
        assert_eq!(e.target_ref.as_ref().and_then(|r| r.kind.as_deref()), Some("Pod"));
    }

    // Scaled down: the slice follows.
    deployments
        .patch_scale("api", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 1}})))
        .await
        .expect("scaled");
    eventually(20, "one endpoint", || async {
        let slice = slices.list(&by_service).await.ok()?.items.into_iter().next()?;
        (slice.endpoints.len() == 1).then_some(())
    })
    .await;

    // An address in use cannot be taken again.
    let clash: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "clash"},
        "spec": {"clusterIP": ip, "ports": [{"port": 80}]},
    }))
    .expect("a Service");
    let e = common::api_err(services.create(&PostParams::default(), &clash).await);
    assert_eq!(e.code, 422);
    assert!(
        e.message.ends_with(&format!("failed to allocate IP {ip}: provided IP is already allocated")),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn every_namespace_gets_its_service_account_and_ca() {
    let (sim, client) = start_with(config()).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("ns");
    namespaces.create(&PostParams::default(), &ns).await.expect("created");
    for namespace in ["default", "kube-system", "team"] {
        let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
        eventually(20, &format!("the default ServiceAccount of {namespace}"), || async {
            accounts.get_opt("default").await.ok().flatten()
        })
        .await;
        let maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let ca = eventually(20, &format!("kube-root-ca.crt in {namespace}"), || async {
            maps.get_opt("kube-root-ca.crt").await.ok().flatten()
        })
        .await;
        let pem = ca.data.and_then(|d| d.get("ca.crt").cloned()).unwrap_or_default();
        assert_eq!(Some(pem.as_str()), sim.ca_pem());
    }
}

#[tokio::test]
async fn a_bare_api_server_runs_nothing() {
    let (_sim, client) = common::start().await;
    let nodes: Api<Node> = Api::all(client.clone());
    assert!(nodes.list(&ListParams::default()).await.expect("nodes").items.is_empty());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments.create(&PostParams::default(), &deployment("idle", 1, "x")).await.expect("created");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}))
            .expect("svc");
    let svc = services.create(&PostParams::default(), &svc).await.expect("created");
    assert!(svc.spec.and_then(|s| s.cluster_ip).is_none());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    assert!(sets.list(&ListParams::default()).await.expect("list").items.is_empty());
}

fn staged(stages: &[&str]) -> Config {
    let stages = stages.iter().map(|s| s.parse().expect("a stage")).collect();
    Config {
        workloads: Some(WorkloadConfig {
            nodes: 1,
            pod_start: Duration::from_millis(50),
            job_duration: Duration::from_millis(100),
            stages,
        }),
        ..Config::default()
    }
}

fn job(name: &str, completions: i32, backoff_limit: i32) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "completions": completions, "parallelism": 1, "backoffLimit": backoff_limit,
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox"}]}},
        },
    }))
    .expect("a Job")
}

fn condition_of(job: &Job, type_: &str) -> Option<(String, String)> {
    let c = job.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default()))
}

#[tokio::test]
async fn jobs_complete_and_fail_past_their_backoff_limit() {
    let (_sim, client) = start_with(staged(&["app=broken:fail"])).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(&PostParams::default(), &job("batch", 2, 6)).await.expect("created");
    let done = eventually(20, "the Job completes", || async {
        let j = jobs.get("batch").await.ok()?;
        (condition_of(&j, "Complete")? == ("True".into(), "CompletionsReached".into())).then_some(j)
    })
    .await;
    let status = done.status.clone().expect("status");
    assert_eq!((status.succeeded, status.active), (Some(2), None));
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    assert_eq!(condition_of(&done, "SuccessCriteriaMet").map(|c| c.0).as_deref(), Some("True"));
    let pods = pods_of(&client, "batch").await;
    assert_eq!(pods.len(), 2);
    for p in &pods {
        assert_eq!(p.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Succeeded"));
        assert_eq!(p.labels().get("batch.kubernetes.io/job-name").map(String::as_str), Some("batch"));
    }

    jobs.create(&PostParams::default(), &job("broken", 1, 1)).await.expect("created");
    let failed = eventually(20, "the Job fails", || async {
        let j = jobs.get("broken").await.ok()?;
        (condition_of(&j, "Failed")? == ("True".into(), "BackoffLimitExceeded".into())).then_some(j)
    })
    .await;
    assert_eq!(
        failed.status.and_then(|s| s.failed),
        Some(2),
        "backoffLimit 1: the second failure fails the Job"
    );
}

#[tokio::test]
async fn stages_hold_pods_unready_or_crashing_and_the_deployment_says_so() {
    let (_sim, client) = start_with(staged(&["app=stuck:never-ready", "app=crashy:fail"])).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    for name in ["stuck", "crashy"] {
        deployments.create(&PostParams::default(), &deployment(name, 1, "x:1")).await.expect("created");
    }
    for name in ["stuck", "crashy"] {
        let d = eventually(20, &format!("{name} is running but unavailable"), || async {
            let d = deployments.get(name).await.ok()?;
            let s = d.status.as_ref()?;
            (s.replicas == Some(1) && s.unavailable_replicas == Some(1)).then_some(d)
        })
        .await;
        let s = d.status.expect("status");
        assert_eq!(s.available_replicas, None);
        let available =
            s.conditions.unwrap_or_default().into_iter().find(|c| c.type_ == "Available").expect("Available");
        assert_eq!(
            (available.status.as_str(), available.reason.as_deref()),
            ("False", Some("MinimumReplicasUnavailable"))
        );
    }
    let crashy = eventually(20, "the crashing Pod", || async {
        let p = pods_of(&client, "crashy").await.into_iter().next()?;
        let cs = p.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
        cs.state.as_ref()?.waiting.clone()
    })
    .await;
    assert_eq!(crashy.reason.as_deref(), Some("CrashLoopBackOff"));
    let stuck = pods_of(&client, "stuck").await.into_iter().next().expect("a Pod");
    let ready = stuck
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!((ready.status.as_str(), ready.reason.as_deref()), ("False", Some("ContainersNotReady")));
}

#[tokio::test]
async fn a_cronjob_runs_the_job_it_missed_and_records_it() {
    let (_sim, client) = start_with(staged(&[])).await;
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let cj: CronJob = serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "work", "image": "busybox"}]}}}}},
    }))
    .expect("a CronJob");
    cronjobs.create(&PostParams::default(), &cj).await.expect("created");
    // As if the last run was two hours ago: the latest missed hour runs now.
    let two_hours_ago = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = json!({"status": {"lastScheduleTime": two_hours_ago}});
    cronjobs.patch_status("nightly", &PatchParams::default(), &Patch::Merge(&status)).await.expect("status");
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job = eventually(20, "the missed Job", || async {
        jobs.list(&ListParams::default()).await.ok()?.items.into_iter().next()
    })
    .await;
    let scheduled =
        job.annotations().get("batch.kubernetes.io/cronjob-scheduled-timestamp").cloned().expect("scheduled");
    assert!(scheduled.ends_with(":00:00Z"), "on the hour: {scheduled}");
    let minutes = jiff::Timestamp::from_str(&scheduled).expect("a time").as_second() / 60;
    assert_eq!(job.name_any(), format!("nightly-{minutes}"));
    let cj = eventually(20, "the run recorded", || async {
        let cj = cronjobs.get("nightly").await.ok()?;
        let s = cj.status.clone()?;
        (s.last_successful_time.is_some() && s.active.is_none_or(|a| a.is_empty())).then_some(cj)
    })
    .await;
    let last = cj.status.and_then(|s| s.last_schedule_time).expect("lastScheduleTime");
    assert_eq!(last.0.to_string(), jiff::Timestamp::from_str(&scheduled).expect("a time").to_string());
}

#[tokio::test]
async fn stages_set_at_run_time_through_the_fault_api() {
    let (sim, client) = start_with(staged(&[])).await;
    // Over HTTP, as a test in another language would.
    let put = http::Request::put("/kubesim/faults/pod-stages")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&json!(["app=late:never-ready"])).expect("json"))
        .expect("request");
    client.request_text(put).await.expect("stages set");
    assert_eq!(sim.faults().pod_stages().len(), 1);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments.create(&PostParams::default(), &deployment("late", 1, "x:1")).await.expect("created");
    let pod = eventually(20, "the Pod runs unready", || async {
        let p = pods_of(&client, "late").await.into_iter().next()?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running")).then_some(p)
    })
    .await;
    let ready =
        pod.status.and_then(|s| s.conditions).unwrap_or_default().into_iter().find(|c| c.type_ == "Ready");
    assert_eq!(ready.map(|c| c.status).as_deref(), Some("False"));
    // Cleared: new Pods are ready again.
    sim.faults().clear();
    deployments.create(&PostParams::default(), &deployment("again", 1, "x:1")).await.expect("created");
    rolled_out(&deployments, "again", 1, "x:1").await;
}

#[tokio::test]
async fn pods_the_api_refuses_show_as_replica_failure() {
    let (_sim, client) = start_with(staged(&[])).await;
    // A validating webhook for Pods that nobody serves and that fails closed: the API
    // refuses every Pod (as a cluster whose policy webhook is down does), not the
    // ReplicaSet.
    let cert = ctop_kubesim::ServingCert::issue(&["127.0.0.1".to_owned()]).expect("a certificate");
    let ca = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &cert.ca_pem);
    let hooks: Api<kube::api::DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingWebhookConfiguration",
            ),
            "validatingwebhookconfigurations",
        ),
    );
    let config = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "pods-down"},
        "webhooks": [{
            "name": "pods-down.example.com",
            "clientConfig": {"url": "https://127.0.0.1:1/validate", "caBundle": ca},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 1,
        }],
    }))
    .expect("a webhook configuration");
    hooks.create(&PostParams::default(), &config).await.expect("the webhook is installed");
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let rs: ReplicaSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bad"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bad"}},
            "template": {"metadata": {"labels": {"app": "bad"}},
                "spec": {"containers": [{"name": "c", "image": "x:1"}]}}},
    }))
    .expect("a ReplicaSet");
    sets.create(&PostParams::default(), &rs).await.expect("created");
    let failure = eventually(20, "the ReplicaFailure condition", || async {
        let rs = sets.get("bad").await.ok()?;
        rs.status?.conditions?.into_iter().find(|c| c.type_ == "ReplicaFailure")
    })
    .await;
    assert_eq!((failure.status.as_str(), failure.reason.as_deref()), ("True", Some("FailedCreate")));
    let message = failure.message.unwrap_or_default();
    assert!(message.contains("failed calling webhook \"pods-down.example.com\""), "{message}");
}

#[tokio::test]
async fn an_invalid_pod_template_is_refused_with_the_servers_field_path() {
    let (_sim, client) = start_with(staged(&[])).await;
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let rs: ReplicaSet = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bad"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bad"}},
            "template": {"metadata": {"labels": {"app": "bad"}},
                "spec": {"containers": [{"image": "x:1"}]}}},
    }))
    .expect("a ReplicaSet");
    // pkg/apis/core/validation: validateContainers → field.Required(path.Child("name"), "").
    let status = match sets.create(&PostParams::default(), &rs).await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected a 422, got {other:?}"),
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let causes = status.details.map(|d| d.causes).unwrap_or_default();
    assert!(
        causes
            .iter()
            .any(|c| c.field == "spec.template.spec.containers[0].name" && c.message == "Required value"),
        "{causes:?}"
    );
}
