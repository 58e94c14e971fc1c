//! The wall clock kubesim writes into objects (`creationTimestamp`, conditions, Job and
//! CronJob times) and ages tables with: the system's, unless the thread that runs kubesim
//! set a virtual one with [`set_virtual`]. `ctop test` runs kubesim on a current-thread
//! Tokio runtime with a paused clock, and sets a fixed epoch plus Tokio's (virtual) time
//! since, so an `advance: 1h` moves these timestamps by an hour, and the same test writes
//! the same times every run. A thread-local rather than a field of the server: the
//! timestamps are written from deep inside the storage and workload code, and a test's
//! kubesim lives on the one thread of its runtime.

use std::cell::Cell;
use std::time::{Duration, SystemTime};

thread_local! {
    static VIRTUAL: Cell<Option<(SystemTime, tokio::time::Instant)>> = const { Cell::new(None) };
}

/// On this thread, from now on, the wall clock reads `epoch` plus the Tokio time elapsed
/// since this call (virtual on a paused runtime).
pub fn set_virtual(epoch: SystemTime) {
    VIRTUAL.with(|v| v.set(Some((epoch, tokio::time::Instant::now()))));
}

/// The wall-clock time now.
pub fn now() -> SystemTime {
    VIRTUAL.with(Cell::get).map_or_else(SystemTime::now, |(epoch, start)| epoch + start.elapsed())
}

/// [`now`] as a timestamp.
pub fn timestamp() -> jiff::Timestamp {
    let since = now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO);
    jiff::Timestamp::from_duration(jiff::SignedDuration::try_from(since).unwrap_or_default())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_virtual_clock_moves_with_tokio_time() {
        let epoch = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
        set_virtual(epoch);
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert_eq!(now(), epoch + Duration::from_secs(3600));
        assert_eq!(timestamp().to_string(), "2026-01-01T01:00:00Z");
    }
}
