//! Leader election against kubesim: acquisition, standby, failover, release and loss.

use std::time::Duration;

use ctop_controller::leader::{LeaderElector, LeaderError, Leadership, LeaseConfig};
use ctop_kubesim::{Config, KubeSim};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::{Instant, timeout};

const NS: &str = "default";
const LEASE: Duration = Duration::from_secs(1);
const RENEW: Duration = Duration::from_millis(600);
const RETRY: Duration = Duration::from_millis(200);

async fn start() -> (KubeSim, Client) {
    let sim = KubeSim::start(Config::default()).await.expect("kubesim starts");
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig()).expect("kubeconfig parses");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    (sim, Client::try_from(cfg).expect("client"))
}

fn config(name: &str, identity: &str) -> LeaseConfig {
    LeaseConfig {
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ..LeaseConfig::new(NS, name, identity)
    }
}

fn elect(client: &Client, name: &str, identity: &str) -> Leadership {
    LeaderElector::new(client.clone(), config(name, identity)).expect("valid config").run()
}

/// Wait until the flag reads `want`; returns how long it took.
async fn until(rx: &mut watch::Receiver<bool>, want: bool, within: Duration, what: &str) -> Duration {
    let t0 = Instant::now();
    timeout(within, rx.wait_for(|v| *v == want))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for: {what}"))
        .expect("elector alive");
    t0.elapsed()
}

async fn lease(client: &Client, name: &str) -> Lease {
    Api::<Lease>::namespaced(client.clone(), NS).get(name).await.expect("lease exists")
}

fn holder(l: &Lease) -> Option<String> {
    l.spec.as_ref().and_then(|s| s.holder_identity.clone())
}

fn transitions(l: &Lease) -> i32 {
    l.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(-1)
}

#[tokio::test]
async fn one_leads_and_the_other_stands_by() {
    let (_sim, client) = start().await;
    let a = elect(&client, "one", "a");
    let mut ra = a.subscribe();
    until(&mut ra, true, Duration::from_secs(3), "a leads").await;
    let b = elect(&client, "one", "b");
    // Several retry periods and more than a lease duration: b never leads.
    tokio::time::sleep(LEASE * 2).await;
    assert!(a.is_leader());
    assert!(!b.is_leader());
    let l = lease(&client, "one").await;
    assert_eq!(holder(&l).as_deref(), Some("a"));
    assert_eq!(transitions(&l), 0);
    let spec = l.spec.expect("spec");
    assert_eq!(spec.lease_duration_seconds, Some(1));
    let renew = spec.renew_time.expect("renewTime").0;
    let age = Timestamp::now().duration_since(renew);
    assert!(age.as_secs_f64() < 1.0, "renewed recently, age {age:?}");
    // The wire format is MicroTime: microseconds and a Z.
    let raw = serde_json::to_value(MicroTime(renew)).expect("serializes");
    let raw = raw.as_str().expect("string");
    assert!(raw.ends_with('Z') && raw.len() == "2024-01-01T00:00:00.000000Z".len(), "{raw}");
    drop(b);
    a.shutdown().await.expect("released");
}

#[tokio::test]
async fn standby_takes_over_within_a_lease_duration_after_a_crash() {
    let (_sim, client) = start().await;
    let a = elect(&client, "crash", "a");
    let mut ra = a.subscribe();
    until(&mut ra, true, Duration::from_secs(3), "a leads").await;
    let b = elect(&client, "crash", "b");
    let mut rb = b.subscribe();
    tokio::time::sleep(RETRY * 2).await;
    assert!(!b.is_leader());
    a.abort(); // dies without releasing
    let took = until(&mut rb, true, LEASE + RETRY * 2, "b takes over").await;
    assert!(took >= LEASE / 2, "b must wait for the lease to expire, took {took:?}");
    let l = lease(&client, "crash").await;
    assert_eq!(holder(&l).as_deref(), Some("b"));
    assert_eq!(transitions(&l), 1);
    b.shutdown().await.expect("released");
}

#[tokio::test]
async fn graceful_release_hands_over_at_once() {
    let (_sim, client) = start().await;
    let a = elect(&client, "release", "a");
    let mut ra = a.subscribe();
    until(&mut ra, true, Duration::from_secs(3), "a leads").await;
    let before = lease(&client, "release").await;
    let b = elect(&client, "release", "b");
    let mut rb = b.subscribe();
    tokio::time::sleep(RETRY * 2).await;
    assert!(!b.is_leader());
    let t0 = Instant::now();
    a.shutdown().await.expect("released");
    assert!(!*ra.borrow(), "a stepped down");
    until(&mut rb, true, LEASE, "b takes over").await;
    let took = t0.elapsed();
    // Released: b gets it on its next retry, not after the lease expires.
    assert!(took < RETRY * 3, "took {took:?}");
    let after = lease(&client, "release").await;
    assert_eq!(holder(&after).as_deref(), Some("b"));
    assert_eq!(transitions(&after), 1);
    let acquired = |l: &Lease| l.spec.as_ref().and_then(|s| s.acquire_time.clone()).expect("acquireTime");
    assert!(acquired(&after) > acquired(&before), "acquireTime is set on takeover");
    b.shutdown().await.expect("released");
}

#[tokio::test]
async fn a_leader_whose_lease_is_stolen_steps_down() {
    let (_sim, client) = start().await;
    let a = elect(&client, "stolen", "a");
    let mut ra = a.subscribe();
    until(&mut ra, true, Duration::from_secs(3), "a leads").await;
    let api = Api::<Lease>::namespaced(client.clone(), NS);
    let mut l = api.get("stolen").await.expect("lease");
    let spec = l.spec.as_mut().expect("spec");
    spec.holder_identity = Some("thief".into());
    spec.lease_duration_seconds = Some(60);
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    // A 409 from a's renewal racing us is fine: retry with a fresh read.
    loop {
        match api.replace("stolen", &PostParams::default(), &l).await {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.is_conflict() => {
                let fresh = api.get("stolen").await.expect("lease");
                l.metadata.resource_version = fresh.metadata.resource_version;
            }
            Err(e) => panic!("steal failed: {e}"),
        }
    }
    until(&mut ra, false, RENEW, "a steps down").await;
    // And does not take it back while the thief's lease is live.
    tokio::time::sleep(RETRY * 3).await;
    assert!(!a.is_leader());
    assert_eq!(holder(&api.get("stolen").await.expect("lease")).as_deref(), Some("thief"));
    // Not ours: shutdown leaves it alone.
    a.shutdown().await.expect("stops");
    assert_eq!(holder(&api.get("stolen").await.expect("lease")).as_deref(), Some("thief"));
}

#[tokio::test]
async fn a_leader_that_cannot_renew_steps_down_within_the_deadline() {
    let (sim, client) = start().await;
    let a = elect(&client, "faulty", "a");
    let mut ra = a.subscribe();
    until(&mut ra, true, Duration::from_secs(3), "a leads").await;
    // Every lease read hangs longer than the renew deadline.
    sim.faults().delay("get", "leases", Duration::from_secs(5));
    let took = until(&mut ra, false, RENEW + RETRY, "a steps down").await;
    assert!(took <= RENEW + Duration::from_millis(100), "took {took:?}");
    sim.faults().clear();
    // It recovers once the API answers again (the lease is still its own).
    until(&mut ra, true, Duration::from_secs(3), "a leads again").await;
    a.shutdown().await.expect("released");
}

#[tokio::test]
async fn rejects_unsafe_timing() {
    let (_sim, client) = start().await;
    let bad = LeaseConfig { renew_deadline: LEASE, ..config("x", "a") };
    assert!(matches!(LeaderElector::new(client.clone(), bad), Err(LeaderError::InvalidConfig(_))));
    let bad = LeaseConfig { retry_period: RENEW, ..config("x", "a") };
    assert!(matches!(LeaderElector::new(client.clone(), bad), Err(LeaderError::InvalidConfig(_))));
    let bad = LeaseConfig { identity: String::new(), ..config("x", "a") };
    assert!(matches!(LeaderElector::new(client, bad), Err(LeaderError::InvalidConfig(_))));
}
