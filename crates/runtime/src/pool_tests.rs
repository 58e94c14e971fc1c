//! Tests of [`Pool`](super::Pool): lending, rebuilding, deadlines and the inline first attempt.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::json;

use super::*;
use crate::vm::tests::{COUNTER, SDK, SPIN_OR_COUNT, reconciler, short};
use crate::vm::{Limits, Observer, VmOptions};

#[test]
fn pool_serves_threads_and_survives_panics() {
    let b = reconciler(COUNTER, "return input.n * 2;");
    let pool = Arc::new(Pool::new(2, move || Vm::new(Arc::clone(&b), SDK, Limits::default())).unwrap());
    assert_eq!(pool.size(), 2);
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                for i in 0..25 {
                    let n = t * 100 + i;
                    let out =
                        pool.with(|vm| vm.dispatch("reconcile", 0, &json!({ "n": n }).to_string())).unwrap();
                    assert_eq!(out, json!(n * 2));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: Result<(), VmError> = pool.with(|_| panic!("worker bug"));
    }));
    assert!(caught.is_err());
    // Both slots still work (the panicked one is rebuilt on demand).
    let a = pool.checkout().unwrap();
    let mut b = pool.checkout().unwrap();
    assert_eq!(b.dispatch("reconcile", 0, "{\"n\":4}").unwrap(), json!(8));
    pool.checkin(a);
    pool.checkin(b);
}

#[test]
fn pool_builds_one_vm_at_start_and_the_others_when_calls_overlap() {
    let builds = Arc::new(AtomicUsize::new(0));
    let b = reconciler(COUNTER, "return input.n;");
    let counted = Arc::clone(&builds);
    let pool = Pool::new(3, move || {
        counted.fetch_add(1, Ordering::SeqCst);
        Vm::new(Arc::clone(&b), SDK, Limits::default())
    })
    .unwrap();
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    // Calls one after the other share the first.
    for _ in 0..3 {
        let vm = pool.checkout().unwrap();
        pool.checkin(vm);
    }
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    // Three at once build the other two, and no more.
    let held: Vec<_> = (0..3).map(|_| pool.checkout().unwrap()).collect();
    assert_eq!(builds.load(Ordering::SeqCst), 3);
    for vm in held {
        pool.checkin(vm);
    }
    let again: Vec<_> = (0..3).map(|_| pool.checkout().unwrap()).collect();
    assert_eq!(builds.load(Ordering::SeqCst), 3);
    for vm in again {
        pool.checkin(vm);
    }
}

#[test]
fn pool_retries_a_failed_rebuild_on_next_checkout() {
    let builds = Arc::new(AtomicUsize::new(0));
    let b = reconciler(COUNTER, SPIN_OR_COUNT);
    let counted = Arc::clone(&builds);
    let pool = Pool::new(1, move || {
        if counted.fetch_add(1, Ordering::SeqCst) == 1 {
            return Err(VmError::Engine("flaky".to_owned()));
        }
        Vm::new(Arc::clone(&b), SDK, short(100))
    })
    .unwrap();
    let err = pool.with(|vm| vm.dispatch("reconcile", 0, "{\"spin\":true}"));
    assert!(matches!(err, Err(VmError::Timeout { .. })));
    // The rebuild after the timeout failed; the next checkout builds again.
    assert_eq!(builds.load(Ordering::SeqCst), 2);
    let out = pool.with(|vm| vm.dispatch("reconcile", 0, "{}")).unwrap();
    assert_eq!(out, json!(0));
    assert_eq!(builds.load(Ordering::SeqCst), 3);
}

/// An observer whose lookups block until released: a host call the deadline cannot stop.
struct Stuck(Arc<(parking_lot::Mutex<bool>, Condvar)>);

impl Observer for Stuck {
    fn list(&self, _kind: &str) -> Option<String> {
        let (released, cv) = &*self.0;
        let mut released = released.lock();
        while !*released {
            cv.wait(&mut released);
        }
        Some("[]".to_owned())
    }
    fn get(&self, _kind: &str, _namespace: Option<&str>, _name: &str) -> Option<Option<String>> {
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_stuck_past_its_deadline_is_abandoned_and_its_slot_serves_at_once() {
    let b = reconciler(COUNTER, "if (input.stuck) host.observed('list', 'v1/Secret'); return calls++;");
    let builds = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&builds);
    let pool = Arc::new(
        Pool::new(1, move || {
            counted.fetch_add(1, Ordering::SeqCst);
            Vm::new(Arc::clone(&b), SDK, short(100))
        })
        .unwrap(),
    );
    let gate = Arc::new((parking_lot::Mutex::new(false), Condvar::new()));
    let stuck: Arc<dyn Observer> = Arc::new(Stuck(Arc::clone(&gate)));
    let started = Instant::now();
    let err = pool
        .run(Duration::from_millis(200), false, move |vm| {
            vm.dispatch_observed("reconcile", 0, "{\"stuck\":true}", Arc::clone(&stuck))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, VmError::Timeout { after } if after == Duration::from_millis(100)), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2), "answered at deadline + grace");
    // The only slot is free again while the abandoned call is still blocked: a fresh `Vm`
    // (its module state starts over) serves the next call.
    let next =
        pool.run(Duration::from_millis(200), false, |vm| vm.dispatch("reconcile", 0, "{}")).await.unwrap();
    assert_eq!(next, json!(0));
    assert_eq!(builds.load(Ordering::SeqCst), 2);
    // Released, the abandoned call ends and its `Vm` is dropped, not returned: the pool
    // still holds one.
    *gate.0.lock() = true;
    gate.1.notify_all();
    let again =
        pool.run(Duration::from_millis(200), false, |vm| vm.dispatch("reconcile", 0, "{}")).await.unwrap();
    assert_eq!(again, json!(1));
    let state = pool.state.lock();
    assert!(state.idle.len() + state.empty <= 1, "{pool:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_a_free_vm_does_not_count_against_the_deadline() {
    let b = reconciler(COUNTER, SPIN_OR_COUNT);
    let pool = Arc::new(Pool::new(1, move || Vm::new(Arc::clone(&b), SDK, short(300))).unwrap());
    // Three calls queue for the one Vm, each taking most of its 300 ms deadline; none is
    // abandoned for the time it waited.
    let slow = "input.n; const t = Date.now(); while (Date.now() - t < 200) {} return calls++;";
    let b2 = reconciler(COUNTER, slow);
    let pool2 = Arc::new(Pool::new(1, move || Vm::new(Arc::clone(&b2), SDK, short(300))).unwrap());
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let pool = Arc::clone(&pool2);
            tokio::spawn(async move {
                pool.run(Duration::from_millis(50), false, |vm| vm.dispatch("reconcile", 0, "{}")).await
            })
        })
        .collect();
    let mut results = Vec::new();
    for c in calls {
        results.push(c.await.unwrap().unwrap());
    }
    results.sort_by_key(|v| v.as_i64());
    assert_eq!(results, vec![json!(0), json!(1), json!(2)]);
    let ok =
        pool.run(Duration::from_millis(50), false, |vm| vm.dispatch("reconcile", 0, "{}")).await.unwrap();
    assert_eq!(ok, json!(0));
}

/// Counts the attempts of a call (each starts with `runtime`); answers from memory.
#[derive(Default)]
struct Attempts(AtomicUsize);

impl Observer for Attempts {
    fn list(&self, _kind: &str) -> Option<String> {
        Some("[]".to_owned())
    }
    fn get(&self, _kind: &str, _namespace: Option<&str>, _name: &str) -> Option<Option<String>> {
        None
    }
    fn runtime(&self, _serial: u64, _call: u64) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn answers_from_memory(&self) -> bool {
        true
    }
}

/// `input.slow` spins for 1.5 s; otherwise the number of calls this `Vm` served.
const SLOW_OR_COUNT: &str =
    "if (input.slow) { const t = Date.now(); while (Date.now() - t < 1500) {} } return calls++;";

/// A budget no quick call overruns, even in a debug build on a loaded machine: these tests
/// are about where a call runs, not about how fast.
const ROOMY: Duration = Duration::from_millis(500);

fn counted_pool(budget: Duration, options: VmOptions) -> (Arc<Pool>, Arc<AtomicUsize>) {
    let b = reconciler(COUNTER, SLOW_OR_COUNT);
    let builds = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&builds);
    let mut pool = Pool::new(1, move || {
        counted.fetch_add(1, Ordering::SeqCst);
        Vm::with_options(Arc::clone(&b), SDK, options.clone())
    })
    .expect("the first Vm builds");
    pool.inline_budget = Some(budget);
    (Arc::new(pool), builds)
}

/// Runs `input` through `pool`, answering the output and where it ran (`Inline` exactly
/// when it ran on this thread).
async fn call(
    pool: &Arc<Pool>,
    input: &'static str,
    observer: Arc<Attempts>,
) -> (serde_json::Value, CallPath) {
    let here = std::thread::current().id();
    let (result, path) = pool
        .run_path(Duration::from_millis(200), true, move |vm| {
            let out =
                vm.dispatch_observed("reconcile", 0, input, Arc::clone(&observer) as Arc<dyn Observer>)?;
            Ok((out, std::thread::current().id()))
        })
        .await;
    let (out, there) = result.expect("the call succeeds");
    assert_eq!(there == here, path == CallPath::Inline, "ran {path:?}");
    (out, path)
}

fn five_seconds() -> VmOptions {
    VmOptions { limits: short(5_000), ..VmOptions::default() }
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_that_may_run_inline_runs_on_the_calling_thread_and_keeps_its_vm() {
    let (pool, builds) = counted_pool(ROOMY, five_seconds());
    let attempts = Arc::new(Attempts::default());
    assert_eq!(call(&pool, "{}", Arc::clone(&attempts)).await, (json!(0), CallPath::Inline));
    assert_eq!(call(&pool, "{}", Arc::clone(&attempts)).await, (json!(1), CallPath::Inline));
    assert_eq!(attempts.0.load(Ordering::SeqCst), 2);
    assert_eq!(builds.load(Ordering::SeqCst), 1);
    // Not allowed inline (an observer that may block): the blocking pool, same `Vm`.
    let out = pool.run(Duration::from_millis(200), false, |vm| {
        Ok((vm.dispatch("reconcile", 0, "{}")?, std::thread::current().id()))
    });
    let (out, thread) = out.await.expect("the call succeeds");
    assert_eq!(out, json!(2));
    assert_ne!(thread, std::thread::current().id());
    // The blocking thread gave the `Vm` back before it answered: the next call finds it idle.
    assert_eq!(call(&pool, "{}", attempts).await, (json!(3), CallPath::Inline));
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_over_its_inline_budget_starts_over_on_the_blocking_pool_and_pauses_inline() {
    let (pool, builds) = counted_pool(ROOMY, five_seconds());
    let attempts = Arc::new(Attempts::default());
    assert_eq!(call(&pool, "{}", Arc::clone(&attempts)).await, (json!(0), CallPath::Inline));
    // Stopped inline after its budget, then run whole on a fresh `Vm` (its count starts over).
    let slow = Arc::new(Attempts::default());
    assert_eq!(call(&pool, "{\"slow\":true}", Arc::clone(&slow)).await, (json!(0), CallPath::Restarted));
    assert_eq!(slow.0.load(Ordering::SeqCst), 2, "the observer saw both attempts start");
    assert_eq!(builds.load(Ordering::SeqCst), 2);
    // Inline is paused: the next calls go to the blocking pool, on the same fresh `Vm`.
    assert_eq!(call(&pool, "{}", Arc::clone(&attempts)).await, (json!(1), CallPath::Blocking));
    assert_eq!(builds.load(Ordering::SeqCst), 2);
    // Once the pause is over, calls run inline again.
    pool.inline_paused_until.store(0, Ordering::Relaxed);
    assert_eq!(call(&pool, "{}", attempts).await, (json!(2), CallPath::Inline));
}

#[tokio::test(flavor = "current_thread")]
async fn a_script_that_may_fetch_never_runs_inline() {
    let rule = "https://example.com".parse().expect("a valid egress rule");
    let egress = Arc::new(parking_lot::RwLock::new(crate::egress::EgressPolicy {
        rules: vec![rule],
        own_ports: vec![],
    }));
    let options = VmOptions { egress, ..five_seconds() };
    let (pool, _) = counted_pool(ROOMY, options);
    let attempts = Arc::new(Attempts::default());
    assert_eq!(call(&pool, "{}", Arc::clone(&attempts)).await, (json!(0), CallPath::Blocking));
    assert_eq!(call(&pool, "{}", attempts).await, (json!(1), CallPath::Blocking));
}
