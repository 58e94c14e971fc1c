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

const SCRIPT: &str = r#"
operator(widget).manages(ConfigMap).reconcile((cr) => {
  apply(ConfigMap({ metadata: { name: `${cr.metadata.name}-cm` }, data: { mode: cr.spec.mode } }));
  setStatus(cr, { phase: "Ready" });
});
"#;

/// Short Leases, so that a dead member's objects move in seconds.
const TIMING: LeaseTiming = LeaseTiming {
    lease_duration: Duration::from_secs(4),
    renew_deadline: Duration::from_secs(3),
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
            leader_elect: false,
            lease_namespace: "default".into(),
            name: OPERATOR.into(),
            identity: Some(name.into()),
            install_crds: crds,
            retry_limit: RetryLimit::default(),
            sharding: true,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("replica-{name}"))
            .enable_all()
            .build()
            .expect("a runtime");
        let who = name.to_owned();
        runtime.spawn(async move {
            let run = ctop_controller::run_with_lease(handlers, options, TIMING, std::future::pending());
            if let Err(e) = run.await {
                eprintln!("replica {who} stopped: {e}");
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
                let created = api.create(&PostParams::default(), &w).await;
                created.expect("a widget is created");
            }
        })
        .buffer_unordered(32)
        .collect::<()>()
        .await;
}

/// Members by the objects labelled for them: widgets, and their ConfigMaps.
async fn spread(
    widgets: &Api<DynamicObject>,
    cms: &Api<ConfigMap>,
) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let mut w = BTreeMap::new();
    for o in widgets.list(&ListParams::default()).await.expect("list widgets").items {
        let m = o.metadata.labels.as_ref().and_then(|l| l.get(SHARD_LABEL)).cloned().unwrap_or_default();
        *w.entry(m).or_default() += 1;
    }
    let mut c = BTreeMap::new();
    for o in cms.list(&ListParams::default().labels(SHARD_LABEL)).await.expect("list configmaps").items {
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

    if faults {
        // Failed writes of the kinds the members and the sharder write, slow ConfigMaps.
        sim.faults().fail("patch", "widgets", 500, 40);
        sim.faults().fail("patch", "configmaps", 503, 40);
        sim.faults().delay("patch", "configmaps", Duration::from_millis(20));
    }
    let started = Instant::now();
    create_widgets(&widgets, n).await;
    if faults {
        sim.faults().drop_watches();
    }
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

    // Kill m-2: its objects move to the others once its Lease expires.
    let victim = replicas.pop().expect("three replicas");
    let gone = victim.name.clone();
    let killed = Instant::now();
    victim.kill();
    if faults {
        sim.faults().drop_watches();
    }
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

    // Bring m-2 back: the sharder drains a share of the objects to it.
    let back = Instant::now();
    replicas.push(Replica::start(&sim, dir.path(), "m-2"));
    eventually(300, "every widget converged on three members again", || async {
        let (w, _) = spread(&widgets, &cms).await;
        (w.len() == 3 && converged(&widgets, &cms, n, &all).await).then_some(())
    })
    .await;
    eprintln!("m-2 back: rebalanced in {:.1}s", back.elapsed().as_secs_f64());
    let again = spread(&widgets, &cms).await;
    report("3 members again", &again, n);
    assert_balanced(&again.0, 3, n);
    assert_eq!(again.0, again.1, "children follow their owners");

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
