//! When an implementation has finished with a wave: after the driver's watches saw every CR
//! and child gone, the implementation has still to receive those deletions on its own
//! watches and drop them from its caches, queue and per-object state. Nothing it exposes
//! says "I have seen the deletion of X" for every implementation alike, so the driver waits
//! for the process to go quiet ([`settle`]): its reconcile count unchanged, its work queue
//! empty and no reconcile running (where its `/metrics` has them: ctop's `workqueue_depth`
//! and `controller_runtime_active_workers`), and its CPU time still for a whole window.
//!
//! A process that is handling watch events or reconciles uses CPU; one that used at most
//! [`Quiet::max_cpu`] in a window of [`Quiet::window`] has nothing left queued. The window
//! is a measured condition, not a sleep: it restarts whenever the process does anything,
//! and a process that never goes quiet is reported as such after [`Quiet::timeout`].

use std::time::{Duration, Instant};

use ctop_bench::procs::{metric, proc_usage, scrape};

/// What counts as quiet.
#[derive(Debug, Clone, Copy)]
pub struct Quiet {
    /// How long the process must stay quiet.
    pub window: Duration,
    /// CPU seconds it may use in the window: `/proc/<pid>/stat` counts in 10 ms ticks, and
    /// answering the driver's scrapes costs a little.
    pub max_cpu: f64,
    /// How often the process is looked at.
    pub every: Duration,
    /// How long to wait for quiet at most.
    pub timeout: Duration,
}

/// How a wait for quiet ended.
#[derive(Debug, Clone, Copy)]
pub struct Settled {
    /// From the start of the wait to the end of the quiet window (or the timeout).
    pub after: Duration,
    /// The process went quiet (false: the timeout passed first).
    pub quiet: bool,
}

/// One look at the process.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    cpu_s: f64,
    reconciles: f64,
    busy: bool,
}

async fn sample(pid: u32, port: u16) -> Sample {
    let (cpu_s, _, _) = proc_usage(pid);
    let text = scrape(port).await.unwrap_or_default();
    Sample {
        cpu_s,
        reconciles: metric(&text, "controller_runtime_reconcile_total"),
        busy: metric(&text, "workqueue_depth") > 0.0
            || metric(&text, "controller_runtime_active_workers") > 0.0,
    }
}

/// Whether `now` continues the quiet window that began at `start`.
fn still_quiet(start: &Sample, now: &Sample, max_cpu: f64) -> bool {
    // The epsilon: CPU seconds are tick counts / 100 in floating point.
    !now.busy && now.reconciles == start.reconciles && now.cpu_s - start.cpu_s <= max_cpu + 1e-9
}

/// Wait until the process `pid` (its `/metrics` on `port`) is quiet for `q.window`.
pub async fn settle(pid: u32, port: u16, q: Quiet) -> Settled {
    let t0 = Instant::now();
    let mut start = sample(pid, port).await;
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(q.every).await;
        let now = sample(pid, port).await;
        if !still_quiet(&start, &now, q.max_cpu) {
            (start, since) = (now, Instant::now());
        } else if since.elapsed() >= q.window {
            return Settled { after: t0.elapsed(), quiet: true };
        }
        if t0.elapsed() >= q.timeout {
            return Settled { after: t0.elapsed(), quiet: false };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_reconcile_queued_work_or_cpu_breaks_the_quiet() {
        let start = Sample { cpu_s: 1.00, reconciles: 7.0, busy: false };
        assert!(still_quiet(&start, &Sample { cpu_s: 1.02, ..start }, 0.02));
        assert!(!still_quiet(&start, &Sample { cpu_s: 1.03, ..start }, 0.02));
        assert!(!still_quiet(&start, &Sample { reconciles: 8.0, ..start }, 0.02));
        assert!(!still_quiet(&start, &Sample { busy: true, ..start }, 0.02));
    }
}
