//! [`Pool`]: `n` [`Vm`]s of one script, one per worker.
//!
//! [`Pool::with`] lends a `Vm` to a blocking caller (tests, tools, the loader); [`Pool::run`] is
//! what servers use: it waits for a free `Vm` without holding a thread of the async runtime,
//! runs the call on the blocking pool, and bounds it. A `Vm` stops its own script at its
//! deadline, but not a host function that blocks (a stuck cache read, a request the kernel
//! holds): when a call outlives its deadline by the grace, [`Pool::run`] answers
//! [`VmError::Timeout`] at once, frees the slot (the next caller gets a fresh `Vm`), and the
//! overrunning `Vm` is dropped, never returned, whenever its call ends. Waiting for a free
//! `Vm` is not the script's time and does not count against its deadline.
//!
//! Broken `Vm`s (a call hit the deadline or the memory limit) are replaced before anyone else
//! gets them; a failed rebuild leaves the slot empty and the next checkout builds again.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use crate::vm::{Vm, VmError};

/// Builds a fresh [`Vm`] for a [`Pool`] slot.
pub type VmFactory = Arc<dyn Fn() -> Result<Vm, VmError> + Send + Sync>;

/// `n` [`Vm`]s, one per worker. [`Pool::with`] and [`Pool::run`] lend one out; broken ones
/// (a call hit the deadline or the memory limit) are replaced with fresh ones before they are
/// lent again.
pub struct Pool {
    factory: VmFactory,
    size: usize,
    /// The first `Vm`'s deadline: how long [`Pool::run`] first waits before it looks.
    timeout: Duration,
    state: Mutex<PoolState>,
    returned: Condvar,
}

struct PoolState {
    idle: Vec<Vm>,
    /// Slots without a `Vm` (its rebuild failed, or it was abandoned); the next checkout
    /// builds one.
    empty: usize,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("Pool")
            .field("size", &self.size)
            .field("idle", &state.idle.len())
            .field("empty", &state.empty)
            .finish_non_exhaustive()
    }
}

/// Where a call of [`Pool::run`] stands, shared by the caller and the blocking thread: the
/// first to see the other's mark decides what happens to the `Vm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallState {
    /// Waiting for a free `Vm`: not the script's time.
    Waiting,
    /// `f` runs since `at`, on a `Vm` whose deadline is `deadline`.
    Running { at: Instant, deadline: Duration },
    /// The caller gave up on it; the thread drops the `Vm` instead of returning it.
    Abandoned,
    /// The call ended (its result is sent); the caller can no longer abandon it.
    Finished,
}

impl Pool {
    /// `n` (at least 1) slots. One `Vm` is built now, so load errors surface at start; the
    /// others when calls first overlap, so an operator whose calls rarely overlap never pays
    /// for them (each holds the script's module graph, about 0.6 MB for the webapp example).
    pub fn new<F>(n: usize, factory: F) -> Result<Self, VmError>
    where
        F: Fn() -> Result<Vm, VmError> + Send + Sync + 'static,
    {
        let size = n.max(1);
        let first = factory()?;
        Ok(Pool {
            factory: Arc::new(factory),
            size,
            timeout: first.limits().timeout,
            state: Mutex::new(PoolState { idle: vec![first], empty: size - 1 }),
            returned: Condvar::new(),
        })
    }

    /// Number of slots.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs `f` on a free `Vm` (blocking until one is free) and returns it to the pool.
    pub fn with<R>(&self, f: impl FnOnce(&mut Vm) -> Result<R, VmError>) -> Result<R, VmError> {
        let mut vm = self.checkout()?;
        // If `f` panics, `vm` is dropped while unwinding; this frees its slot.
        let mut lease = Lease { pool: self, armed: true };
        let result = f(&mut vm);
        lease.armed = false;
        self.checkin(vm);
        result
    }

    /// Runs `f` on a free `Vm` on the blocking thread pool, from async code. The wait for a
    /// free `Vm` is not bounded; once `f` started, it has the `Vm`'s deadline plus `grace`
    /// before this answers [`VmError::Timeout`] and abandons it (see the module docs).
    pub async fn run<R, F>(self: &Arc<Self>, grace: Duration, f: F) -> Result<R, VmError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Vm) -> Result<R, VmError> + Send + 'static,
    {
        let (done_tx, done_rx) = oneshot::channel::<Result<R, VmError>>();
        let state = Arc::new(Mutex::new(CallState::Waiting));
        let pool = Arc::clone(self);
        let shared = Arc::clone(&state);
        let thread = tokio::task::spawn_blocking(move || {
            let mut vm = match pool.checkout() {
                Ok(vm) => vm,
                Err(error) => {
                    let _ = done_tx.send(Err(error));
                    return;
                }
            };
            // The start is marked, not sent: the caller reads it only when its timer fires,
            // so a call that ends in time wakes the caller once, with its result.
            *shared.lock() = CallState::Running { at: Instant::now(), deadline: vm.limits().timeout };
            let mut lease = Lease { pool: &pool, armed: true };
            let result = f(&mut vm);
            lease.armed = false;
            let abandoned =
                std::mem::replace(&mut *shared.lock(), CallState::Finished) == CallState::Abandoned;
            // The result goes out before a broken `Vm` is rebuilt on check-in.
            let _ = done_tx.send(result);
            if abandoned {
                drop(vm);
            } else {
                pool.checkin(vm);
            }
        });
        let joined = async {
            match done_rx.await {
                Ok(result) => result,
                // The thread ended without a result: `f` panicked.
                Err(_) => match thread.await {
                    Err(e) if e.is_panic() => Err(VmError::Engine(format!("a script call panicked: {e}"))),
                    _ => Err(VmError::Engine("a script call ended without a result".to_owned())),
                },
            }
        };
        tokio::pin!(joined);
        // One timer, re-armed while the call waits for a `Vm` or still has time left.
        let mut wait = self.timeout.saturating_add(grace);
        loop {
            if let Ok(result) = tokio::time::timeout(wait, &mut joined).await {
                return result;
            }
            // What the timer found: still waiting for a `Vm`, time left, ended, or overrun.
            let overrun = {
                let mut state = state.lock();
                match *state {
                    CallState::Waiting => {
                        wait = self.timeout.saturating_add(grace);
                        None
                    }
                    CallState::Running { at, deadline } => {
                        let left = deadline.saturating_add(grace).saturating_sub(at.elapsed());
                        if left.is_zero() {
                            *state = CallState::Abandoned;
                            Some(Some(deadline))
                        } else {
                            wait = left;
                            None
                        }
                    }
                    CallState::Finished | CallState::Abandoned => Some(None),
                }
            };
            let deadline = match overrun {
                None => continue,
                Some(None) => return joined.await,
                Some(Some(deadline)) => deadline,
            };
            tracing::warn!(
                deadline = ?deadline,
                grace = ?grace,
                "a script call is still running past its deadline (blocked in a host call); \
                 its runtime is abandoned and replaced"
            );
            self.free_slot();
            return Err(VmError::Timeout { after: deadline });
        }
    }

    /// Takes a free `Vm`, blocking until one is free; give it back with [`Pool::checkin`].
    /// Fails only when the slot's `Vm` has to be built and the factory fails.
    pub fn checkout(&self) -> Result<Vm, VmError> {
        let mut state = self.state.lock();
        loop {
            if let Some(vm) = state.idle.pop() {
                return Ok(vm);
            }
            if state.empty > 0 {
                state.empty -= 1;
                drop(state);
                return (self.factory)().inspect_err(|_| self.free_slot());
            }
            self.returned.wait(&mut state);
        }
    }

    /// Returns a `Vm` taken with [`Pool::checkout`]; a broken one is replaced first.
    pub fn checkin(&self, vm: Vm) {
        let vm = if vm.is_broken() {
            drop(vm);
            match (self.factory)() {
                Ok(fresh) => fresh,
                Err(error) => {
                    tracing::warn!(%error, "rebuilding a script runtime failed; retrying on next use");
                    return self.free_slot();
                }
            }
        } else {
            vm
        };
        let mut state = self.state.lock();
        if state.idle.len() + state.empty < self.size {
            state.idle.push(vm);
        }
        drop(state);
        self.returned.notify_one();
    }

    fn free_slot(&self) {
        let mut state = self.state.lock();
        if state.idle.len() + state.empty < self.size {
            state.empty += 1;
        }
        drop(state);
        self.returned.notify_one();
    }
}

/// Frees a slot if a call unwinds.
struct Lease<'a> {
    pool: &'a Pool,
    armed: bool,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.pool.free_slot();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use serde_json::json;

    use super::*;
    use crate::vm::tests::{COUNTER, SDK, SPIN_OR_COUNT, reconciler, short};
    use crate::vm::{Limits, Observer};

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
                        let out = pool
                            .with(|vm| vm.dispatch("reconcile", 0, &json!({ "n": n }).to_string()))
                            .unwrap();
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
            .run(Duration::from_millis(200), move |vm| {
                vm.dispatch_observed("reconcile", 0, "{\"stuck\":true}", stuck)
            })
            .await
            .unwrap_err();
        assert!(matches!(err, VmError::Timeout { after } if after == Duration::from_millis(100)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2), "answered at deadline + grace");
        // The only slot is free again while the abandoned call is still blocked: a fresh `Vm`
        // (its module state starts over) serves the next call.
        let next =
            pool.run(Duration::from_millis(200), |vm| vm.dispatch("reconcile", 0, "{}")).await.unwrap();
        assert_eq!(next, json!(0));
        assert_eq!(builds.load(Ordering::SeqCst), 2);
        // Released, the abandoned call ends and its `Vm` is dropped, not returned: the pool
        // still holds one.
        *gate.0.lock() = true;
        gate.1.notify_all();
        let again =
            pool.run(Duration::from_millis(200), |vm| vm.dispatch("reconcile", 0, "{}")).await.unwrap();
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
                    pool.run(Duration::from_millis(50), |vm| vm.dispatch("reconcile", 0, "{}")).await
                })
            })
            .collect();
        let mut results = Vec::new();
        for c in calls {
            results.push(c.await.unwrap().unwrap());
        }
        results.sort_by_key(|v| v.as_i64());
        assert_eq!(results, vec![json!(0), json!(1), json!(2)]);
        let ok = pool.run(Duration::from_millis(50), |vm| vm.dispatch("reconcile", 0, "{}")).await.unwrap();
        assert_eq!(ok, json!(0));
    }
}
