//! The workload controllers of a cluster, simulated the way KWOK simulates nodes and
//! kubelets: Deployments make ReplicaSets, ReplicaSets make Pods, a scheduler binds Pods to
//! simulated nodes and a kubelet reports them Running and Ready, Services get
//! EndpointSlices of their ready Pods, each namespace gets its `default`
//! ServiceAccount and `kube-root-ca.crt` ConfigMap, and aggregated ClusterRoles get the
//! rules they select (`rbac.rs`). Every write goes through [`Api`] as a
//! controller's would, so clients see the same objects and watch events as on a cluster.
//!
//! One task runs them all. [`Api`] hands it each committed change; the change becomes
//! work items (an object to look at again), deduplicated in a FIFO queue; a controller
//! reads the store, writes what differs, and its own writes come back as changes. A write
//! that loses a race (409) is retried shortly; delays (a Pod's start) are timers that put
//! the item back.

mod cronjobs;
mod daemonset;
mod deployment;
mod endpoints;
mod jobs;
mod kubelet;
mod namespaces;
mod nodes;
mod rbac;
mod replicaset;
mod stages;
mod statefulset;
mod system;

pub use stages::{Outcome as StageOutcome, PodStage};

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use parking_lot::Mutex;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api::{Api, BINDING, DeleteOpts, PatchKind, WriteOpts};
use crate::error::ApiError;
use crate::kinds::registry::ResourceType;
use crate::store::{Change, EventKind, ObjKey, Table};

/// How the simulated cluster runs workloads.
#[derive(Clone, Debug)]
pub struct WorkloadConfig {
    /// How many Ready nodes there are (`kubesim-node-1`, …); Pods are spread over them.
    pub nodes: usize,
    /// How long a scheduled Pod stays `Pending` before it is `Running` and Ready.
    pub pod_start: Duration,
    /// How long a Pod that does not restart its containers (a Job's) runs before it
    /// succeeds.
    pub job_duration: Duration,
    /// What happens to the Pods picked by label: failing, never ready, slower (the first
    /// stage that picks a Pod applies).
    pub stages: Vec<PodStage>,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            nodes: 1,
            pod_start: Duration::from_millis(500),
            job_duration: Duration::from_secs(1),
            stages: Vec::new(),
        }
    }
}

/// An object a controller looks at again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Work {
    Deployment(ObjKey),
    ReplicaSet(ObjKey),
    Job(ObjKey),
    CronJob(ObjKey),
    StatefulSet(ObjKey),
    DaemonSet(ObjKey),
    Pod(ObjKey),
    Service(ObjKey),
    Namespace(String),
    /// Every aggregated ClusterRole (one item: any ClusterRole change can change them all).
    ClusterRoles,
}

/// What a controller step asks for besides its writes.
pub(crate) enum Next {
    Done,
    /// Look again after this long (a Pod starting, a rollout waiting for availability).
    After(Duration),
    /// A write conflicted: look again shortly.
    Retry,
}

/// A type and one of its objects, alive.
pub(crate) type Live = (Arc<ResourceType>, Arc<Value>);

/// What a controller step sees: the API and the state the controllers keep between steps.
pub(crate) struct Cluster<'a> {
    pub api: Arc<Api>,
    pub config: &'a WorkloadConfig,
    /// The CA for `kube-root-ca.crt` (none without TLS).
    pub ca_pem: Option<&'a str>,
    /// When each scheduled Pod (by uid) started waiting to run.
    pub starting: &'a Mutex<HashMap<String, Instant>>,
    /// When the kubelet saw each deleted Pod (by uid) and began stopping its containers.
    pub stopping: &'a Mutex<HashMap<String, Instant>>,
    /// The next Pod IP's sequence number.
    pub next_ip: &'a AtomicU64,
    /// The next node the scheduler binds a Pod to.
    pub next_node: &'a AtomicU64,
    /// The stages set at run time (fault injection), ahead of the configured ones.
    pub faults: &'a crate::Faults,
}

/// Start the controllers on `api`: seed the nodes, the `kubernetes` Service and, with
/// `system_pods`, a kind cluster's system workloads (`system.rs`), and run until the API
/// is dropped.
pub(crate) async fn start(
    api: &Arc<Api>,
    config: WorkloadConfig,
    system_pods: bool,
    ca_pem: Option<String>,
    faults: Arc<crate::Faults>,
) -> Result<(), ApiError> {
    let (tx, rx) = mpsc::unbounded_channel();
    api.enable_workloads(tx, watches);
    let node_rt =
        api.registry.get("", "v1", "nodes").ok_or_else(|| ApiError::internal("kubesim serves no nodes"))?;
    for mut node in nodes::nodes(config.nodes, system_pods) {
        // The status goes through /status, as a kubelet writes it.
        let status = node.as_object_mut().and_then(|m| m.remove("status")).unwrap_or_default();
        let name = node["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        api.seed(node).await?;
        let body = json!({"status": status});
        api.patch(&node_rt, "", &name, Some("status"), PatchKind::Merge, &body, &opts("kubelet")).await?;
    }
    api.seed(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
    }))
    .await?;
    if system_pods {
        system::seed(api).await?;
    }
    // The namespaces that exist already (bootstrap) get their ServiceAccount and CA too.
    let initial: Vec<Work> = api
        .registry
        .get("", "v1", "namespaces")
        .map(|rt| api.store.snapshot(&rt.store, false).1)
        .unwrap_or_default()
        .keys()
        .map(|(_, name)| Work::Namespace(name.clone()))
        .chain([Work::ClusterRoles])
        .collect();
    tokio::spawn(run(Arc::downgrade(api), config, ca_pem, faults, rx, initial));
    Ok(())
}

async fn run(
    api: Weak<Api>,
    config: WorkloadConfig,
    ca_pem: Option<String>,
    faults: Arc<crate::Faults>,
    mut changes: mpsc::UnboundedReceiver<Arc<Change>>,
    initial: Vec<Work>,
) {
    let (later_tx, mut later) = mpsc::unbounded_channel::<Work>();
    let starting = Mutex::new(HashMap::new());
    let stopping = Mutex::new(HashMap::new());
    let next_ip = AtomicU64::new(0);
    let next_node = AtomicU64::new(0);
    let mut queue = Queue::default();
    for w in initial {
        queue.push(w);
    }
    loop {
        while let Some(work) = queue.pop() {
            let Some(api) = api.upgrade() else { return };
            while let Ok(change) = changes.try_recv() {
                route(&api, &change, &mut queue);
            }
            let cluster = Cluster {
                api,
                config: &config,
                ca_pem: ca_pem.as_deref(),
                starting: &starting,
                stopping: &stopping,
                next_ip: &next_ip,
                next_node: &next_node,
                faults: &faults,
            };
            let next = match step(&cluster, &work).await {
                Ok(next) => next,
                Err(e) if e.code == 409 => Next::Retry,
                Err(e) => {
                    tracing::warn!(error = %e, ?work, "a simulated controller could not act; it tries again in 2s");
                    Next::After(Duration::from_secs(2))
                }
            };
            let delay = match next {
                Next::Done => continue,
                Next::After(d) => d,
                Next::Retry => Duration::from_millis(20),
            };
            let tx = later_tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = tx.send(work);
            });
        }
        tokio::select! {
            change = changes.recv() => {
                let Some(change) = change else { return };
                let Some(api) = api.upgrade() else { return };
                route(&api, &change, &mut queue);
            }
            Some(work) = later.recv() => queue.push(work),
        }
    }
}

/// A FIFO of distinct work items.
#[derive(Default)]
struct Queue {
    order: VecDeque<Work>,
    queued: HashSet<Work>,
}

impl Queue {
    fn push(&mut self, w: Work) {
        if self.queued.insert(w.clone()) {
            self.order.push_back(w);
        }
    }

    fn pop(&mut self) -> Option<Work> {
        let w = self.order.pop_front()?;
        self.queued.remove(&w);
        Some(w)
    }
}

/// Whether the controllers look at changes of this kind at all (like informers, they watch
/// only the kinds they act on; a ConfigMap write does not even wake them).
fn watches(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
            | ("batch", "Job" | "CronJob")
            | ("", "Pod" | "Service" | "Namespace")
            | ("rbac.authorization.k8s.io", "ClusterRole")
    )
}

/// The work a committed change makes: the object itself, and its controller owner.
fn route(api: &Api, change: &Change, queue: &mut Queue) {
    let obj = &change.object;
    let kind = obj["kind"].as_str().unwrap_or_default();
    let group = ctop_core::group_of(obj["apiVersion"].as_str().unwrap_or_default());
    let key = key_of(obj);
    match (group, kind) {
        ("apps", "Deployment") => queue.push(Work::Deployment(key)),
        ("apps", "ReplicaSet") => {
            if let Some(owner) = controller_of(obj, "Deployment") {
                queue.push(Work::Deployment((key.0.clone(), owner)));
            }
            queue.push(Work::ReplicaSet(key));
        }
        ("batch", "Job") => {
            if let Some(owner) = controller_of(obj, "CronJob") {
                queue.push(Work::CronJob((key.0.clone(), owner)));
            }
            queue.push(Work::Job(key));
        }
        ("batch", "CronJob") => queue.push(Work::CronJob(key)),
        ("apps", "StatefulSet") => queue.push(Work::StatefulSet(key)),
        ("apps", "DaemonSet") => queue.push(Work::DaemonSet(key)),
        ("", "Pod") => {
            if let Some(owner) = controller_of(obj, "ReplicaSet") {
                queue.push(Work::ReplicaSet((key.0.clone(), owner)));
            }
            if let Some(owner) = controller_of(obj, "Job") {
                queue.push(Work::Job((key.0.clone(), owner)));
            }
            if let Some(owner) = controller_of(obj, "StatefulSet") {
                queue.push(Work::StatefulSet((key.0.clone(), owner)));
            }
            if let Some(owner) = controller_of(obj, "DaemonSet") {
                queue.push(Work::DaemonSet((key.0.clone(), owner)));
            }
            for svc in endpoints::services_selecting(api, obj, change.old.as_deref()) {
                queue.push(Work::Service(svc));
            }
            if change.kind != EventKind::Deleted {
                queue.push(Work::Pod(key));
            }
        }
        ("", "Service") if change.kind != EventKind::Deleted => queue.push(Work::Service(key)),
        ("", "Namespace") if change.kind == EventKind::Added => queue.push(Work::Namespace(key.1)),
        ("rbac.authorization.k8s.io", "ClusterRole") => queue.push(Work::ClusterRoles),
        _ => {}
    }
}

async fn step(cluster: &Cluster<'_>, work: &Work) -> Result<Next, ApiError> {
    match work {
        Work::Deployment(key) => deployment::sync(cluster, key).await,
        Work::ReplicaSet(key) => replicaset::sync(cluster, key).await,
        Work::Job(key) => jobs::sync(cluster, key).await,
        Work::CronJob(key) => cronjobs::sync(cluster, key).await,
        Work::StatefulSet(key) => statefulset::sync(cluster, key).await,
        Work::DaemonSet(key) => daemonset::sync(cluster, key).await,
        Work::Pod(key) => kubelet::sync(cluster, key).await,
        Work::Service(key) => endpoints::sync(cluster, key).await,
        Work::Namespace(name) => namespaces::sync(cluster, name).await,
        Work::ClusterRoles => rbac::sync(cluster).await,
    }
}

// Helpers the controllers share.

/// `(namespace, name)` of an object.
pub(crate) fn key_of(obj: &Value) -> ObjKey {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default().to_owned();
    (s("/metadata/namespace"), s("/metadata/name"))
}

/// The name of `obj`'s controller owner of `kind`.
pub(crate) fn controller_of(obj: &Value, kind: &str) -> Option<String> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true && r["kind"] == kind)
        .and_then(|r| r["name"].as_str())
        .map(str::to_owned)
}

/// Whether `obj` is controlled by the object with `uid`.
pub(crate) fn controlled_by(obj: &Value, uid: &str) -> bool {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["controller"] == true && r["uid"] == uid))
}

/// A controller owner reference to `owner`.
pub(crate) fn owner_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true,
    })
}

impl Cluster<'_> {
    /// The type of `group/version/plural`, which kubesim always serves.
    pub(crate) fn rt(&self, group: &str, version: &str, plural: &str) -> Result<Arc<ResourceType>, ApiError> {
        self.api
            .registry
            .get(group, version, plural)
            .ok_or_else(|| ApiError::internal(format!("kubesim serves no {plural}")))
    }

    /// The type `group/version/plural` and its object `key`, unless the object is gone or
    /// being deleted (then a controller has nothing to do).
    pub(crate) fn live(
        &self,
        (group, version, plural): (&str, &str, &str),
        key: &ObjKey,
    ) -> Result<Option<Live>, ApiError> {
        let rt = self.rt(group, version, plural)?;
        Ok(self.get(&rt, key).filter(|o| !crate::kinds::meta::deleting(o)).map(|o| (rt, o)))
    }

    /// One object, if it exists.
    pub(crate) fn get(&self, rt: &ResourceType, key: &ObjKey) -> Option<Arc<Value>> {
        self.api.store.get(&rt.store, key)
    }

    /// The objects of `rt` that the object with `uid` controls (from the store's owner
    /// index, not a scan), those being deleted included.
    pub(crate) fn controlled(&self, rt: &ResourceType, uid: &str) -> Vec<Arc<Value>> {
        self.api
            .store
            .dependents(uid)
            .into_iter()
            .filter(|(loc, obj)| loc.store == rt.store && controlled_by(obj, uid))
            .map(|(_, obj)| obj)
            .collect()
    }

    /// The objects of `rt` in namespace `ns`.
    pub(crate) fn in_namespace(&self, rt: &ResourceType, ns: &str) -> Vec<Arc<Value>> {
        let (_, table): (u64, Table) = self.api.store.snapshot(&rt.store, false);
        table
            .range((ns.to_owned(), String::new())..)
            .take_while(|(k, _)| k.0 == ns)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Create `body` as `manager`.
    pub(crate) async fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        body: Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        Ok(self.api.create(rt, ns, body, &opts(manager)).await?.object)
    }

    /// Merge-patch `body` into the object (its `/status` when `status`), as `manager`.
    pub(crate) async fn merge(
        &self,
        rt: &ResourceType,
        key: &ObjKey,
        status: bool,
        body: &Value,
        manager: &str,
    ) -> Result<Value, ApiError> {
        let sub = status.then_some("status");
        Ok(self.api.patch(rt, &key.0, &key.1, sub, PatchKind::Merge, body, &opts(manager)).await?.object)
    }

    /// Assign a Pod to `node`, as the scheduler's `pods/binding` does: `spec.nodeName` is
    /// set by the binding, which a Pod update may not change (ValidatePodUpdate).
    pub(crate) async fn bind(
        &self,
        rt: &ResourceType,
        key: &ObjKey,
        node: &str,
        manager: &str,
    ) -> Result<Value, ApiError> {
        let body = json!({"spec": {"nodeName": node}});
        Ok(self
            .api
            .patch(rt, &key.0, &key.1, Some(BINDING), PatchKind::Merge, &body, &opts(manager))
            .await?
            .object)
    }

    /// Delete the object with this uid at once (`gracePeriodSeconds: 0`), as the kubelet
    /// removes a Pod whose containers stopped (gone already is fine).
    pub(crate) async fn delete_now(
        &self,
        rt: &ResourceType,
        obj: &Value,
        node: &str,
    ) -> Result<(), ApiError> {
        let (ns, name) = key_of(obj);
        let opts = DeleteOpts {
            uid: obj.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_owned),
            grace_period: Some(0),
            user: crate::api::admission::UserInfo {
                username: format!("system:node:{node}"),
                uid: String::new(),
                groups: vec!["system:nodes".into(), "system:authenticated".into()],
            },
            ..DeleteOpts::default()
        };
        match self.api.delete(rt, &ns, &name, &opts).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 || (e.code == 409 && e.message.contains("Precondition failed: UID")) => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Delete the object with this uid (gone already is fine).
    pub(crate) async fn delete(&self, rt: &ResourceType, obj: &Value) -> Result<(), ApiError> {
        let (ns, name) = key_of(obj);
        let opts = DeleteOpts {
            uid: obj.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_owned),
            propagation: Some("Background".into()),
            ..DeleteOpts::default()
        };
        match self.api.delete(rt, &ns, &name, &opts).await {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Write options of a controller named `manager` (also its field manager).
fn opts(manager: &str) -> WriteOpts {
    WriteOpts {
        field_manager: Some(manager.to_owned()),
        user_agent: format!("{manager}/v1.33.0 (linux/amd64) kubernetes/kubesim"),
        user: crate::api::admission::UserInfo {
            username: format!("system:serviceaccount:kube-system:{manager}"),
            uid: String::new(),
            groups: vec!["system:serviceaccounts".into(), "system:authenticated".into()],
        },
        ..WriteOpts::default()
    }
}

/// A number of replicas from an `int` or a percentage of `total` (`round_up` as
/// Kubernetes' `GetScaledValueFromIntOrPercent`).
pub(crate) fn scaled(value: &Value, total: i64, round_up: bool, default_percent: i64) -> i64 {
    let percent = |p: i64| {
        let x = p * total;
        if round_up { (x + 99) / 100 } else { x / 100 }
    };
    match value {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => percent(p),
            None => s.parse().unwrap_or(0),
        },
        _ => percent(default_percent),
    }
}

/// `now` as the API writes timestamps.
pub(crate) fn now() -> String {
    crate::kinds::meta::now()
}

#[cfg(test)]
mod tests {
    use super::scaled;
    use serde_json::json;

    #[test]
    fn int_or_percent_rounds_like_kubernetes() {
        assert_eq!(scaled(&json!("25%"), 3, true, 25), 1);
        assert_eq!(scaled(&json!("25%"), 3, false, 25), 0);
        assert_eq!(scaled(&json!(2), 10, true, 25), 2);
        assert_eq!(scaled(&json!(null), 10, true, 25), 3);
        assert_eq!(scaled(&json!(null), 10, false, 25), 2);
    }
}
