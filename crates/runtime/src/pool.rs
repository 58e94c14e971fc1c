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
//!
//! # The inline first attempt
//! Handing a call to the blocking pool and its result back costs two thread switches, more
//! than a small script call itself (about 80 µs for the webapp example). So when the caller
//! says the call waits on nothing outside the process (`may_inline`: its observer answers
//! from memory), the script can reach nowhere (no egress rule, so `fetch` refuses before any
//! I/O) and a `Vm` is idle, [`Pool::run`] first runs the call on the async worker that awaits
//! it, stopped after [`INLINE_BUDGET`] instead of the deadline. A call that ends in time
//! (almost all do) is done. One that overruns is stopped, its `Vm` is dropped (its module
//! state may be half-updated) and the call runs again from the start on the blocking pool
//! with its whole deadline; the observer sees [`Observer::runtime`](crate::vm::Observer::runtime)
//! again and forgets the first attempt. What the stopped attempt logged stays logged. After an
//! overrun, calls skip the inline attempt for [`INLINE_PAUSE`], so a script whose calls are
//! long pays for at most one stopped attempt per pause.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ctop_core::CallPath;
use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use crate::vm::{Vm, VmError};

/// How long the inline first attempt of [`Pool::run`] may hold the async worker before it is
/// stopped and the call runs again on the blocking pool (see the module docs).
pub const INLINE_BUDGET: Duration = Duration::from_millis(2);

/// How long calls skip the inline attempt after one overran its budget.
pub const INLINE_PAUSE: Duration = Duration::from_secs(30);

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
    /// The inline attempt's budget; `None` turns it off.
    inline_budget: Option<Duration>,
    /// When the pool was made: the origin of `inline_paused_until`.
    base: Instant,
    /// Nanoseconds after `base` before which calls skip the inline attempt.
    inline_paused_until: AtomicU64,
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
            inline_budget: Some(INLINE_BUDGET),
            base: Instant::now(),
            inline_paused_until: AtomicU64::new(0),
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
    ///
    /// With `may_inline` (`f` waits on nothing outside the process), `f` may first run on
    /// the calling thread under [`INLINE_BUDGET`], and run again on the blocking pool if it
    /// overruns (see the module docs): `f` must be safe to start over.
    pub async fn run<R, F>(self: &Arc<Self>, grace: Duration, may_inline: bool, f: F) -> Result<R, VmError>
    where
        R: Send + 'static,
        F: Fn(&mut Vm) -> Result<R, VmError> + Send + 'static,
    {
        self.run_path(grace, may_inline, f).await.0
    }

    /// [`Pool::run`], also saying where the call ran.
    pub async fn run_path<R, F>(
        self: &Arc<Self>,
        grace: Duration,
        may_inline: bool,
        f: F,
    ) -> (Result<R, VmError>, CallPath)
    where
        R: Send + 'static,
        F: Fn(&mut Vm) -> Result<R, VmError> + Send + 'static,
    {
        let path = match may_inline.then(|| self.run_inline(&f)) {
            Some(Inline::Done(result)) => return (result, CallPath::Inline),
            Some(Inline::Overran) => CallPath::Restarted,
            Some(Inline::Skipped) | None => CallPath::Blocking,
        };
        (self.run_blocking(grace, f).await, path)
    }

    /// The call on the blocking pool, bounded by the deadline plus `grace`.
    async fn run_blocking<R, F>(self: &Arc<Self>, grace: Duration, f: F) -> Result<R, VmError>
    where
        R: Send + 'static,
        F: Fn(&mut Vm) -> Result<R, VmError> + Send + 'static,
    {
        let (done_tx, done_rx) = oneshot::channel::<Result<R, VmError>>();
        let state = Arc::new(Mutex::new(CallState::Waiting));
        let pool = Arc::clone(self);
        let shared = Arc::clone(&state);
        // The script's log lines belong to the caller's span on either path.
        let span = tracing::Span::current();
        let thread = tokio::task::spawn_blocking(move || {
            let _span = span.enter();
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
            if abandoned {
                let _ = done_tx.send(result);
                drop(vm);
            } else if vm.is_broken() {
                // The result goes out before the broken `Vm` is rebuilt on check-in.
                let _ = done_tx.send(result);
                pool.checkin(vm);
            } else {
                // Back in the pool before the caller wakes: its next call (often at once,
                // the next reconcile) then finds it idle and can run inline.
                pool.checkin(vm);
                let _ = done_tx.send(result);
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

    /// The inline first attempt of [`Pool::run`]; when it did not run (paused, no idle `Vm`,
    /// the script may fetch) or overran its budget, the call goes to the blocking pool.
    fn run_inline<R>(&self, f: &impl Fn(&mut Vm) -> Result<R, VmError>) -> Inline<R> {
        let Some(budget) = self.inline_budget else {
            return Inline::Skipped;
        };
        if self.now_nanos() < self.inline_paused_until.load(Ordering::Relaxed) {
            return Inline::Skipped;
        }
        let Some(mut vm) = self.state.lock().idle.pop() else {
            return Inline::Skipped;
        };
        if vm.may_fetch() || vm.limits().timeout <= budget {
            self.checkin(vm);
            return Inline::Skipped;
        }
        let mut lease = Lease { pool: self, armed: true };
        vm.set_budget(Some(budget));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut vm)));
        vm.set_budget(None);
        let result = match result {
            Ok(result) => result,
            // The `Vm` may be mid-call: dropped, and its slot (the lease) freed.
            Err(_) => return Inline::Done(Err(VmError::Engine("a script call panicked".to_owned()))),
        };
        lease.armed = false;
        if vm.over_budget() {
            let until =
                self.now_nanos().saturating_add(u64::try_from(INLINE_PAUSE.as_nanos()).unwrap_or(u64::MAX));
            self.inline_paused_until.store(until, Ordering::Relaxed);
            tracing::debug!(budget = ?budget, pause = ?INLINE_PAUSE, "a script call overran its inline budget; it runs again on the blocking pool");
            drop(vm);
            self.free_slot();
            return Inline::Overran;
        }
        if vm.is_broken() {
            // Rebuilt by the next checkout, on a blocking thread, not here on the worker.
            drop(vm);
            self.free_slot();
        } else {
            self.checkin(vm);
        }
        Inline::Done(result)
    }

    fn now_nanos(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
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

/// What the inline first attempt of [`Pool::run`] came to.
enum Inline<R> {
    /// It ran within its budget: the call's result.
    Done(Result<R, VmError>),
    /// It did not run.
    Skipped,
    /// It ran past its budget and was stopped.
    Overran,
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
#[path = "pool_tests.rs"]
mod tests;
