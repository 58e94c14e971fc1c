//! Sharded replicas (`RunOptions::sharding`) against one kubesim: objects spread over the
//! members, move when a member dies or joins, and are never reconciled by two members at
//! once. Each replica runs on a Tokio runtime of its own, so killing one (shutting its
//! runtime down without releasing anything) stops every task of it, as a process kill
//! would.
//!
//! "Never at once" is checked over the whole run by a tracing layer ([`Exclusive`]) that
//! sees every `reconcile` span open and close with its object and member: a span opening
//! while another member's span of the same object is open is a violation.

// The spread and the move times are what this test reports, on stderr.
#![allow(clippy::print_stderr)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{GROUP, PRELUDE, client, eventually, widget_resource};
use ctop_controller::{LeaseTiming, RetryLimit, RunOptions};
use ctop_kubesim::{Config, KubeSim};
use ctop_runtime::{Limits, Script, ScriptHandlers};
use futures::StreamExt as _;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;

const OPERATOR: &str = "fleet";
const SHARD_LABEL: &str = "shard.ctop.dev/fleet";

/// Each widget owns a ConfigMap holding a token drawn once and read back from the cache
/// (as the webapp example keeps its Secret): a member that took a widget over without its
/// ConfigMap in its cache would draw a new one.
const SCRIPT: &str = r#"
import { randomString } from "ctop";
operator(widget).manages(ConfigMap).reconcile((cr) => {
  const name = `${cr.metadata.name}-cm`;
  const token = getObserved(ConfigMap, name)?.data?.token ?? randomString(12);
  apply(ConfigMap({ metadata: { name }, data: { mode: cr.spec.mode, token } }));
  setStatus(cr, { phase: "Ready" });
});
"#;

/// Short Leases, so that a dead member's objects move in seconds.
const TIMING: LeaseTiming = LeaseTiming {
    lease_duration: Duration::from_secs(5),
    renew_deadline: Duration::from_secs(4),
    retry_period: Duration::from_millis(500),
};

// ---------------------------------------------------------------------------------------
// The exclusivity checker
// ---------------------------------------------------------------------------------------

#[derive(Default)]
struct Tracker {
    /// Open reconcile spans: object → (member, span).
    inside: HashMap<String, Vec<(String, u64)>>,
    /// Spans seen: id → object, member once recorded.
    spans: HashMap<u64, (String, Option<String>)>,
    /// Reconciles per member.
    reconciles: BTreeMap<String, usize>,
    violations: Vec<String>,
}

impl Tracker {
    fn enter(&mut self, id: u64, object: String, member: String) {
        let open = self.inside.entry(object.clone()).or_default();
        if let Some((other, _)) = open.iter().find(|(m, _)| *m != member) {
            self.violations.push(format!("{object} reconciled by {member} while {other} was on it"));
        }
        open.push((member.clone(), id));
        *self.reconciles.entry(member.clone()).or_default() += 1;
        self.spans.insert(id, (object, Some(member)));
    }

    fn leave(&mut self, id: u64) {
        if let Some((object, Some(_))) = self.spans.remove(&id)
            && let Some(open) = self.inside.get_mut(&object)
        {
            open.retain(|(_, s)| *s != id);
            if open.is_empty() {
                self.inside.remove(&object);
            }
        }
    }
}

#[derive(Clone, Default)]
struct Exclusive(Arc<Mutex<Tracker>>);

#[derive(Default)]
struct Fields {
    object: Option<String>,
    member: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "object" => self.object = Some(value.to_owned()),
            "member" => self.member = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        self.record_str(field, text.trim_matches('"'));
    }
}

impl<S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>> Layer<S> for Exclusive {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        if attrs.metadata().name() != "reconcile" {
            return;
        }
        let mut f = Fields::default();
        attrs.record(&mut f);
        let Some(object) = f.object else { return };
        let mut t = self.0.lock();
        match f.member {
            Some(member) => t.enter(id.into_u64(), object, member),
            None => {
                t.spans.insert(id.into_u64(), (object, None));
            }
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut f = Fields::default();
        values.record(&mut f);
        let Some(member) = f.member else { return };
        let mut t = self.0.lock();
        if let Some((object, None)) = t.spans.get(&id.into_u64()).cloned() {
            t.enter(id.into_u64(), object, member);
        }
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.0.lock().leave(id.into_u64());
    }
}

fn exclusive() -> Exclusive {
    static TRACKER: std::sync::OnceLock<Exclusive> = std::sync::OnceLock::new();
    TRACKER
        .get_or_init(|| {
            let layer = Exclusive::default();
            let log = tracing_subscriber::fmt::layer()
                .with_test_writer()
                .with_filter(tracing_subscriber::EnvFilter::new("ctop_controller=warn"));
            tracing_subscriber::registry().with(layer.clone()).with(log).init();
            layer
        })
        .clone()
}

// ---------------------------------------------------------------------------------------
// Replicas
// ---------------------------------------------------------------------------------------

/// One sharded replica on a runtime of its own.
struct Replica {
    name: String,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Replica {
    fn start(sim: &KubeSim, dir: &std::path::Path, name: &str) -> Self {
        let kubeconfig = dir.join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let script = Script::from_dir(dir, "operator.ct", 2, Limits::default()).expect("the script loads");
        let handlers = Arc::new(ScriptHandlers::new(Arc::new(script), &json!({}), &json!({})));
        let crds = ctop_manifests::operator_crds(ctop_core::Handlers::spec(handlers.as_ref())).expect("crds");
        let loopback = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0));
        let options = RunOptions {
            kubeconfig: Some(kubeconfig),
            context: None,
            namespace: None,
            concurrency: 4,
            health_addr: loopback,
            metrics_addr: loopback,
            inspector: None,
            shared: None,
            leader_elect: false,
            lease_namespace: "default".into(),
            name: OPERATOR.into(),
            identity: Some(name.into()),
            install_crds: crds,
            retry_limit: RetryLimit::default(),
            sharding: true,
            migrate_storage: None,
            history: ctop_controller::history::DEFAULT_KEPT,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("replica-{name}"))
            .enable_all()
            .build()
            .expect("a runtime");
        let who = name.to_owned();
        // A member that lost its Lease (starved under load) stops; restarted, as a pod
        // would be, it rejoins.
        runtime.spawn(async move {
            loop {
                let run = ctop_controller::run_with_lease(
                    handlers.clone(),
                    options.clone(),
                    TIMING,
                    std::future::pending(),
                );
                match run.await {
                    Err(e @ ctop_controller::RunError::LostMembership(_)) => {
                        eprintln!("replica {who}: {e}; restarting")
                    }
                    Err(e) => panic!("replica {who} failed: {e}"),
                    Ok(()) => return,
                }
            }
        });
        Self { name: name.into(), runtime: Some(runtime) }
    }

    /// Stop every task of the replica at once, releasing nothing.
    fn kill(mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The script's directory.
fn script_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("operator.ct"), format!("{PRELUDE}\n{SCRIPT}")).expect("write script");
    dir
}

async fn create_widgets(api: &Api<DynamicObject>, n: usize) {
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let mut w = DynamicObject::new(&format!("w-{i:05}"), &widget_resource()).within("default");
                w.data = json!({"spec": {"mode": format!("m{}", i % 7)}});
                // Injected faults fail some creates: try again (an earlier try may have
                // landed).
                for attempt in 0.. {
                    match api.create(&PostParams::default(), &w).await {
                        Ok(_) => break,
                        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => break,
                        // The injected faults are counted: a retry at once uses them up.
                        Err(e) if attempt < 50 => {
                            let _ = e;
                            tokio::task::yield_now().await;
                        }
                        Err(e) => panic!("cannot create a widget: {e}"),
                    }
                }
            }
        })
        .buffer_unordered(32)
        .collect::<()>()
        .await;
}

/// `call`'s answer, asked again while the injected faults refuse it.
async fn retry<T, F, Fut>(mut call: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut tries = 0;
    loop {
        match call().await {
            Ok(v) => return v,
            // The injected faults are counted: a retry at once uses them up.
            Err(e) if tries < 100 => {
                let _ = e;
                tries += 1;
                tokio::task::yield_now().await;
            }
            Err(e) => panic!("the API keeps failing: {e}"),
        }
    }
}

/// Members by the objects labelled for them: widgets, and their ConfigMaps.
async fn spread(
    widgets: &Api<DynamicObject>,
    cms: &Api<ConfigMap>,
) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let mut w = BTreeMap::new();
    let all = ListParams::default();
    let labelled = ListParams::default().labels(SHARD_LABEL);
    for o in retry(|| widgets.list(&all)).await.items {
        let m = o.metadata.labels.as_ref().and_then(|l| l.get(SHARD_LABEL)).cloned().unwrap_or_default();
        *w.entry(m).or_default() += 1;
    }
    let mut c = BTreeMap::new();
    for o in retry(|| cms.list(&labelled)).await.items {
        let m = o.metadata.labels.as_ref().and_then(|l| l.get(SHARD_LABEL)).cloned().unwrap_or_default();
        *c.entry(m).or_default() += 1;
    }
    (w, c)
}

/// Whether every widget is Ready, its ConfigMap exists, and both carry the same member
/// among `members`.
async fn converged(widgets: &Api<DynamicObject>, cms: &Api<ConfigMap>, n: usize, members: &[&str]) -> bool {
    let Ok(ws) = widgets.list(&ListParams::default()).await else { return false };
    let Ok(cs) = cms.list(&ListParams::default().labels(SHARD_LABEL)).await else { return false };
    let child: HashMap<String, String> = cs
        .items
        .iter()
        .filter_map(|c| {
            Some((c.metadata.name.clone()?, c.metadata.labels.as_ref()?.get(SHARD_LABEL)?.clone()))
        })
        .collect();
    if std::env::var("SHARDING_DEBUG").is_ok() {
        let mut why: BTreeMap<&str, usize> = BTreeMap::new();
        for w in &ws.items {
            let member = w.metadata.labels.as_ref().and_then(|l| l.get(SHARD_LABEL));
            let name = w.metadata.name.clone().unwrap_or_default();
            let k = if member.is_none() {
                "unassigned"
            } else if w.metadata.labels.as_ref().is_some_and(|l| l.contains_key("drain.ctop.dev/fleet")) {
                "draining"
            } else if w.data["status"]["phase"] != "Ready" {
                "not ready"
            } else if child.get(&format!("{name}-cm")) != member {
                "child elsewhere"
            } else {
                "ok"
            };
            *why.entry(k).or_default() += 1;
        }
        eprintln!("{} widgets: {why:?}", ws.items.len());
    }
    ws.items.len() == n
        && ws.items.iter().all(|w| {
            let member = w.metadata.labels.as_ref().and_then(|l| l.get(SHARD_LABEL));
            let drain = w.metadata.labels.as_ref().is_some_and(|l| l.contains_key("drain.ctop.dev/fleet"));
            let ready = w.data["status"]["phase"] == "Ready";
            let name = w.metadata.name.clone().unwrap_or_default();
            member
                .is_some_and(|m| members.contains(&m.as_str()) && child.get(&format!("{name}-cm")) == Some(m))
                && !drain
                && ready
        })
}

/// The ConfigMaps whose token differs between `before` and `after` (at most ten named).
fn changed_tokens(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<String> {
    let mut changed: Vec<String> =
        before.iter().filter(|(k, v)| after.get(*k) != Some(*v)).map(|(k, _)| k.clone()).collect();
    changed.extend(after.keys().filter(|k| !before.contains_key(*k)).cloned());
    changed.truncate(10);
    changed
}

/// Each ConfigMap's token, by name.
async fn tokens(cms: &Api<ConfigMap>) -> BTreeMap<String, String> {
    let labelled = ListParams::default().labels(SHARD_LABEL);
    let list = retry(|| cms.list(&labelled)).await;
    list.items.into_iter().filter_map(|c| Some((c.metadata.name?, c.data?.get("token")?.clone()))).collect()
}

fn report(what: &str, (w, c): &(BTreeMap<String, usize>, BTreeMap<String, usize>), n: usize) {
    let share = |m: &BTreeMap<String, usize>| -> String {
        m.iter()
            .map(|(k, v)| format!("{k}={v} ({:.1}%)", 100.0 * *v as f64 / n as f64))
            .collect::<Vec<_>>()
            .join(", ")
    };
    eprintln!("{what}: widgets {}; configmaps {}", share(w), share(c));
}

fn assert_balanced(counts: &BTreeMap<String, usize>, members: usize, n: usize) {
    assert_eq!(counts.len(), members, "every member holds objects: {counts:?}");
    let fair = n as f64 / members as f64;
    for (m, c) in counts {
        let ratio = *c as f64 / fair;
        assert!((0.6..=1.4).contains(&ratio), "{m} holds {c} of {n} objects ({ratio:.2} of a fair share)");
    }
}

async fn run_scenario(n: usize, faults: bool) {
    let checker = exclusive();
    let sim = Arc::new(KubeSim::start(Config::default()).await.expect("kubesim starts"));
    let dir = script_dir();
    let client = client(&sim).await;
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widget_resource());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let mut replicas: Vec<Replica> =
        ["m-0", "m-1", "m-2"].iter().map(|m| Replica::start(&sim, dir.path(), m)).collect();
    // The CRD is installed by the replicas.
    eventually(60, "the Widget CRD", || async { widgets.list(&ListParams::default()).await.ok() }).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    eventually(30, "three member Leases", || async {
        let l = leases.list(&ListParams::default().labels("shard.ctop.dev/ring=fleet")).await.ok()?;
        (l.items.len() == 3).then_some(())
    })
    .await;

    // The fuzzer's kinds of faults, drawn from a seed all through the run, one every 40
    // writes the API server commits: failed requests (500, 503, 429, 409) on the verbs and
    // kinds the members and the sharder use, latency, and dropped watches.
    let chaos = faults.then(|| {
        sim.faults().delay("patch", "configmaps", Duration::from_millis(20));
        let mut writes = sim.changes();
        let sim = sim.clone();
        tokio::spawn(async move {
            let mut seed: u64 = 20_261_126;
            let mut last = *writes.borrow_and_update();
            let mut next = move |n: u64| {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (seed >> 33) % n
            };
            loop {
                if writes.wait_for(|rv| *rv >= last + 40).await.is_err() {
                    return;
                }
                last = *writes.borrow_and_update();
                let verb = ["patch", "get", "list", "create", "update", "watch"][next(6) as usize];
                let resource = ["widgets", "configmaps", "leases"][next(3) as usize];
                let code = [500, 503, 429, 409][next(4) as usize];
                // A Lease write fails a few times at most: a member that misses its renew
                // deadline leaves the ring, which the kill below tests on its own.
                let count = if resource == "leases" { 1 } else { 1 + next(15) as u32 };
                sim.faults().fail(verb, resource, code, count);
                if next(30) == 0 {
                    sim.faults().drop_watches();
                }
            }
        })
    });
    let started = Instant::now();
    create_widgets(&widgets, n).await;
    let all = ["m-0", "m-1", "m-2"];
    eventually(600, "every widget converged on three members", || async {
        converged(&widgets, &cms, n, &all).await.then_some(())
    })
    .await;
    eprintln!("{n} widgets converged on 3 members in {:.1}s", started.elapsed().as_secs_f64());
    let three = spread(&widgets, &cms).await;
    report("3 members", &three, n);
    assert_balanced(&three.0, 3, n);
    assert_eq!(three.0, three.1, "each member holds the children of its own objects");

    // The sharder publishes the ring on the ControllerStatus objects.
    let statuses: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("ctop.dev", "v1alpha1", "ControllerStatus"),
            "controllerstatuses",
        ),
    );
    let ring = eventually(60, "the ring on the ControllerStatus", || async {
        let list = statuses.list(&ListParams::default()).await.ok()?;
        let ring = list.items.first()?.data["status"]["sharding"].clone();
        if std::env::var("SHARDING_DEBUG").is_ok() {
            eprintln!("ring: {ring}");
        }
        let members = ring["members"].as_array()?;
        let held: u64 = members.iter().filter_map(|m| m["objects"].as_u64()).sum();
        (members.len() == 3 && members.iter().all(|m| m["live"] == true) && held == n as u64).then_some(ring)
    })
    .await;
    assert_eq!(ring["ring"], OPERATOR);

    let drawn = tokens(&cms).await;
    assert_eq!(drawn.len(), n, "every ConfigMap has its token");

    // Kill m-2: its objects move to the others once its Lease expires.
    let victim = replicas.pop().expect("three replicas");
    let gone = victim.name.clone();
    let killed = Instant::now();
    victim.kill();
    let moved = eventually(120, "m-2's objects moved", || async {
        let (w, _) = spread(&widgets, &cms).await;
        (!w.contains_key(&gone)).then(|| killed.elapsed())
    })
    .await;
    eprintln!(
        "m-2 killed: its objects moved in {:.1}s (lease duration {:?})",
        moved.as_secs_f64(),
        TIMING.lease_duration
    );
    eventually(300, "every widget converged on two members", || async {
        converged(&widgets, &cms, n, &all[..2]).await.then_some(())
    })
    .await;
    let two = spread(&widgets, &cms).await;
    report("2 members", &two, n);
    assert_balanced(&two.0, 2, n);
    let changed = changed_tokens(&drawn, &tokens(&cms).await);
    assert!(changed.is_empty(), "the members that took m-2's widgets over drew new tokens: {changed:?}");

    // Bring m-2 back: the sharder drains a share of the objects to it.
    let back = Instant::now();
    replicas.push(Replica::start(&sim, dir.path(), "m-2"));
    eventually(300, "every widget converged on three members again", || async {
        let (w, _) = spread(&widgets, &cms).await;
        if std::env::var("SHARDING_DEBUG").is_ok() {
            let everything = ListParams::default();
            let l = retry(|| leases.list(&everything)).await;
            let holders: Vec<String> = l
                .items
                .iter()
                .map(|l| {
                    format!(
                        "{:?}={:?}",
                        l.metadata.name,
                        l.spec.as_ref().and_then(|s| s.holder_identity.clone())
                    )
                })
                .collect();
            eprintln!("spread {w:?}; leases {holders:?}");
        }
        (w.len() == 3 && converged(&widgets, &cms, n, &all).await).then_some(())
    })
    .await;
    eprintln!("m-2 back: rebalanced in {:.1}s", back.elapsed().as_secs_f64());
    let again = spread(&widgets, &cms).await;
    report("3 members again", &again, n);
    assert_balanced(&again.0, 3, n);
    assert_eq!(again.0, again.1, "children follow their owners");
    let changed = changed_tokens(&drawn, &tokens(&cms).await);
    assert!(changed.is_empty(), "handed back, widgets drew new tokens: {changed:?}");

    if let Some(chaos) = chaos {
        chaos.abort();
    }
    let t = checker.0.lock();
    eprintln!("reconciles per member: {:?}", t.reconciles);
    assert!(
        t.violations.is_empty(),
        "objects reconciled by two members at once: {:?}",
        &t.violations[..t.violations.len().min(10)]
    );
    drop(t);
    drop(replicas);
    sim.shutdown();
    let _ = GROUP;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_share_the_objects_and_hand_them_over() {
    run_scenario(3000, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_object_is_reconciled_twice_at_once_under_faults() {
    run_scenario(300, true).await;
}
