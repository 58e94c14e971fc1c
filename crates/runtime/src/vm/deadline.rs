//! The deadline of the call in progress, shared with the runtime's interrupt handler (which
//! stops the script once it has passed) and with `fetch` (which bounds a request by what is
//! left of it).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The per-call deadline shared with the interrupt handler.
pub(super) struct Deadline {
    base: Instant,
    /// Nanoseconds after `base`, or [`Deadline::DISARMED`].
    at: AtomicU64,
    fired: AtomicBool,
}

impl Deadline {
    const DISARMED: u64 = u64::MAX;

    pub(super) fn new() -> Self {
        Deadline { base: Instant::now(), at: AtomicU64::new(Self::DISARMED), fired: AtomicBool::new(false) }
    }

    pub(super) fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(Self::DISARMED - 1)
    }

    pub(super) fn arm(&self, after: Duration) {
        let after = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
        self.fired.store(false, Ordering::Relaxed);
        let at = self.now().saturating_add(after).min(Self::DISARMED - 1);
        self.at.store(at, Ordering::Relaxed);
    }

    pub(super) fn disarm(&self) {
        self.at.store(Self::DISARMED, Ordering::Relaxed);
    }

    /// Time left before the deadline; `None` when disarmed.
    pub(super) fn remaining(&self) -> Option<Duration> {
        let at = self.at.load(Ordering::Relaxed);
        (at != Self::DISARMED).then(|| Duration::from_nanos(at.saturating_sub(self.now())))
    }

    /// Called by the interrupt handler: true (stop the script) once the deadline has passed.
    pub(super) fn expired(&self) -> bool {
        let at = self.at.load(Ordering::Relaxed);
        if at != Self::DISARMED && self.now() >= at {
            self.fired.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    pub(super) fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed)
    }
}
