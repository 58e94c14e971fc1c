//! The clock a script's `now()` reads ([`Clock`]): the system's, or one a test sets.

use std::sync::Arc;

/// A source of the wall-clock time, in place of the system's.
pub type ClockFn = Arc<dyn Fn() -> std::time::SystemTime + Send + Sync>;

/// The clock the SDK's `now()` reads: the system's, unless a test set another
/// ([`crate::Script::set_clock`]: `ctop test` runs scripts on its virtual clock).
/// `Date.now()` and `new Date()` read the system's clock whatever is set here.
#[derive(Default)]
pub struct Clock(parking_lot::RwLock<Option<ClockFn>>);

impl Clock {
    /// Read `f` from now on.
    pub fn set(&self, f: ClockFn) {
        *self.0.write() = Some(f);
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> f64 {
        let now = self.0.read().as_ref().map_or_else(std::time::SystemTime::now, |f| f());
        now.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_millis() as f64)
    }
}
