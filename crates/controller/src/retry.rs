//! Retries of failed reconciles: the per-object exponential backoff and the global bucket
//! every controller's retries go through (the later of the two wins), as controller-runtime's
//! default rate limiter.

use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The global bucket that failed reconciles are retried through, on top of the per-object
/// exponential backoff (the later of the two wins), as controller-runtime's default rate
/// limiter does: a burst of failures cannot turn into a storm of retries against the API.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryLimit {
    /// Retries per second once the burst is spent.
    pub qps: f64,
    /// Retries allowed at once.
    pub burst: u32,
}

impl Default for RetryLimit {
    /// 10 retries per second, bursts of 100 (controller-runtime's defaults).
    fn default() -> Self {
        Self { qps: 10.0, burst: 100 }
    }
}

/// A token bucket handing out the time at which each caller may go (tokens can be owed, so
/// every reservation is granted with the delay it must wait).
#[derive(Debug)]
pub(crate) struct Bucket {
    limit: RetryLimit,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    pub(crate) fn new(limit: RetryLimit) -> Self {
        Self { limit, state: Mutex::new((f64::from(limit.burst), Instant::now())) }
    }

    /// Take one token; how long the caller must wait for it.
    pub(crate) fn reserve(&self) -> Duration {
        if self.limit.qps.is_nan() || self.limit.qps <= 0.0 {
            return Duration::ZERO;
        }
        let mut st = self.state.lock();
        let now = Instant::now();
        let refill = now.duration_since(st.1).as_secs_f64() * self.limit.qps;
        st.0 = (st.0 + refill).min(f64::from(self.limit.burst.max(1)));
        st.1 = now;
        st.0 -= 1.0;
        if st.0 >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-st.0 / self.limit.qps) }
    }
}

/// The per-object delay before the `n`th retry: 1 s doubling to 5 min.
pub(crate) fn backoff(n: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << n.min(10))).min(Duration::from_secs(300))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_bucket_spends_its_burst_then_paces() {
        let b = Bucket::new(RetryLimit { qps: 10.0, burst: 3 });
        for _ in 0..3 {
            assert_eq!(b.reserve(), Duration::ZERO);
        }
        // Owed tokens queue up at 100 ms each.
        let fourth = b.reserve();
        let fifth = b.reserve();
        assert!(fourth > Duration::from_millis(50) && fourth <= Duration::from_millis(100), "{fourth:?}");
        assert!(fifth > fourth + Duration::from_millis(50), "{fifth:?} after {fourth:?}");
        let unlimited = Bucket::new(RetryLimit { qps: 0.0, burst: 0 });
        assert_eq!(unlimited.reserve(), Duration::ZERO);
    }

    #[test]
    fn backoff_doubles_from_one_second_to_five_minutes() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(30), Duration::from_secs(300));
    }
}
