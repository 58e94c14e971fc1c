//! Letting the operator run until it is quiet: [`settle`] and [`advance`]; or only for a
//! while: [`pause`].
//!
//! The world runs on a paused Tokio clock (`start_paused`): time moves only when every task
//! is waiting, and then jumps to the next timer, so a `Result.requeue("1h")` or a 5-minute
//! backoff passes in the time it takes to run what is due. A script call runs on the
//! blocking pool, which holds the clock still until it returns (Tokio does not advance a
//! paused clock while a `spawn_blocking` task runs), and kubesim answers over loopback in
//! the same process, so a request in flight keeps its task busy rather than idle.
//!
//! Quiet means: for [`Quiet::quiet`] of virtual time, no object changed (kubesim's
//! resourceVersion stood still) and no handler call started or was running. Timers due
//! later (a resync, a requeue, a backoff) are left for an `advance`. A world that is not
//! quiet within [`Quiet::timeout`] of virtual time (or a minute of real time) yields
//! [`NotQuiet`], which names what kept going.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use crate::record::Call;
use crate::state::{describe, identity};
use crate::world::World;

/// How long a step waits.
#[derive(Clone, Copy, Debug)]
pub struct Quiet {
    /// How long nothing may happen for the world to count as quiet.
    pub quiet: Duration,
    /// Virtual time to give up after.
    pub timeout: Duration,
    /// Handler calls a settle may see before it gives up ([`MAX_CALLS`] for a test).
    pub max_calls: usize,
}

/// Real time a settle may take, whatever the virtual time.
const WALL_LIMIT: Duration = Duration::from_secs(60);

/// Handler calls a settle may see before it gives up: an operator that keeps itself busy
/// (a reconcile that triggers the next at once) never lets virtual time move.
pub const MAX_CALLS: usize = 5000;

/// Handler calls without virtual time moving at all that make a world busy for good: it
/// never once waited for anything.
const SPIN_CALLS: usize = 200;

/// How long after an instant a settle looks at it (the clock's resolution).
const SETTLED: Duration = Duration::from_millis(1);

/// How often the watchdog looks, in real time.
const WATCH: Duration = Duration::from_millis(100);

/// What a settle saw.
#[derive(Clone, Debug, Default)]
pub struct Settled {
    /// Virtual time it took (the quiet period included).
    pub took: Duration,
}

/// Which limit a wait reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// The virtual time given (`timeout:`).
    Timeout,
    /// A minute of real time.
    Wall,
    /// [`MAX_CALLS`] handler calls.
    Calls,
}

/// The world did not become quiet.
#[derive(Clone, Debug)]
pub struct NotQuiet {
    /// Virtual time waited.
    pub waited: Duration,
    /// What ended it.
    pub budget: Budget,
    /// Handler calls during the wait.
    pub total_calls: usize,
    /// Handler calls per object over the second half of the wait, with the last result.
    pub calls: Vec<(String, usize, String)>,
    /// Objects that changed over one more quiet period, with how.
    pub changing: Vec<String>,
}

impl fmt::Display for NotQuiet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.budget {
            Budget::Timeout => {
                write!(f, "the operator was not quiet after {} of virtual time", human(self.waited))?
            }
            Budget::Wall => write!(
                f,
                "the operator was not quiet after a minute of real time ({} virtual)",
                human(self.waited)
            )?,
            Budget::Calls => write!(
                f,
                "the operator keeps itself busy: {} handler calls in {} of virtual time",
                self.total_calls,
                human(self.waited)
            )?,
        }
        if self.calls.is_empty() && self.changing.is_empty() {
            return write!(f, "; nothing it did was seen (a call that never returns?)");
        }
        for (what, n, last) in &self.calls {
            write!(f, "\n  {what}: {n} handler calls in the last half of the wait, the last one {last}")?;
        }
        for c in &self.changing {
            write!(f, "\n  kept changing: {c}")?;
        }
        Ok(())
    }
}

/// `90s` as `1m30s`, `1.5s` as `1.5s`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let frac = (ms % 1000) / 100;
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || frac > 0 {
        if frac > 0 && h == 0 && m == 0 {
            out.push_str(&format!("{s}.{frac}s"));
        } else {
            out.push_str(&format!("{s}s"));
        }
    }
    out
}

/// Wakes a settle every [`WATCH`] of real time, so that a world too busy to let virtual
/// time move is still noticed; stops when dropped.
struct Watchdog {
    notify: Arc<Notify>,
    stop: Arc<AtomicBool>,
}

impl Watchdog {
    fn start() -> Self {
        let notify = Arc::new(Notify::new());
        let stop = Arc::new(AtomicBool::new(false));
        let (n, s) = (notify.clone(), stop.clone());
        // A thread, not a task: the runtime's timers are virtual.
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                std::thread::sleep(WATCH);
                n.notify_one();
            }
        });
        Self { notify, stop }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Why a wait must end early, if it must: the real-time limit, or too many calls.
fn over_budget(
    world: &World,
    wall: std::time::Instant,
    first_call: usize,
    waited: Duration,
    max_calls: usize,
) -> Option<Budget> {
    let calls = world.recording().started().saturating_sub(first_call);
    if wall.elapsed() > WALL_LIMIT {
        Some(Budget::Wall)
    } else if calls > max_calls || (calls > SPIN_CALLS && waited < Duration::from_millis(10)) {
        Some(Budget::Calls)
    } else {
        None
    }
}

/// Let the world run until it is quiet (see the module docs).
///
/// The world is looked at every `tick` (a tenth of the quiet period, at most 100 ms), and
/// each look at instant `s` is taken at `s + 1ms`: the clock moves past `s` only once
/// everything due at `s` has run, so the look sees all of it whatever order same-instant
/// timers fire in, and it counts only what happened up to `s` (the recording has the time
/// of every write and call). The same world thus settles at the same instant every run.
pub async fn settle(world: &World, q: Quiet) -> Result<Settled, NotQuiet> {
    let tick = (q.quiet / 10).clamp(Duration::from_millis(1), Duration::from_millis(100));
    let recording = world.recording();
    let origin = recording.origin();
    let start = recording.now();
    let wall = std::time::Instant::now();
    let first_call = recording.started();
    let watchdog = Watchdog::start();
    let mut look = start;
    loop {
        let at = look + tick;
        tokio::select! {
            () = tokio::time::sleep_until(origin + at + SETTLED) => {
                look = at;
                let last = recording.last_activity(look).map_or(start, |t| t.max(start));
                if recording.running_at(look) == 0 && look.saturating_sub(last) >= q.quiet {
                    return Ok(Settled { took: recording.now() - start });
                }
            }
            () = watchdog.notify.notified() => {}
        }
        let waited = look - start;
        let budget = over_budget(world, wall, first_call, waited, q.max_calls)
            .or_else(|| (waited >= q.timeout).then_some(Budget::Timeout));
        if let Some(budget) = budget {
            drop(watchdog);
            return Err(not_quiet(world, q, recording.now() - start, budget, first_call).await);
        }
    }
}

/// Let `d` of virtual time pass (every timer due meanwhile fires, in order), then settle.
pub async fn advance(world: &World, d: Duration, q: Quiet) -> Result<Settled, NotQuiet> {
    let start = tokio::time::Instant::now();
    // Calls are counted per settle; over an advance, each period may run every object.
    pass(world, d, q, false).await?;
    let settled = settle(world, q).await?;
    Ok(Settled { took: start.elapsed().max(settled.took) })
}

/// Let only `d` of virtual time pass, without waiting for quiet: the next action lands
/// while the operator is working. A world so busy that the time never passes (more than
/// [`Quiet::max_calls`] handler calls meanwhile, or a minute of real time) is [`NotQuiet`].
pub async fn pause(world: &World, d: Duration, q: Quiet) -> Result<(), NotQuiet> {
    pass(world, d, q, true).await
}

async fn pass(world: &World, d: Duration, q: Quiet, count_calls: bool) -> Result<(), NotQuiet> {
    let start = tokio::time::Instant::now();
    let wall = std::time::Instant::now();
    let first_call = world.recording().started();
    let watchdog = Watchdog::start();
    let until = start + d;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(until) => return Ok(()),
            () = watchdog.notify.notified() => {}
        }
        let waited = start.elapsed();
        let budget = if count_calls {
            over_budget(world, wall, first_call, waited, q.max_calls)
        } else {
            (wall.elapsed() > WALL_LIMIT).then_some(Budget::Wall)
        };
        if let Some(budget) = budget {
            drop(watchdog);
            return Err(not_quiet(world, q, waited, budget, first_call).await);
        }
    }
}

/// What kept the world busy: the handler calls of the second half of the wait, and the
/// objects that change over one more quiet period.
async fn not_quiet(world: &World, q: Quiet, waited: Duration, budget: Budget, first_call: usize) -> NotQuiet {
    let all = world.recording().since(first_call);
    let calls: &[Call] = all.get(all.len() / 2..).unwrap_or_default();
    let mut by_object: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for c in calls {
        let what = match &c.object {
            Some(o) => format!("{} ({})", o, c.handler),
            None => c.handler.to_owned(),
        };
        let entry = by_object.entry(what).or_default();
        entry.0 += 1;
        entry.1 = c.ended.to_string();
    }
    let mut changing = Vec::new();
    if budget == Budget::Timeout
        && let Ok(before) = world.snapshot().await
    {
        tokio::time::sleep(q.quiet).await;
        if let Ok(after) = world.snapshot().await {
            let rv = |o: &serde_json::Value| {
                o["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned()
            };
            let index = |objects: &[serde_json::Value]| {
                objects
                    .iter()
                    .map(|o| {
                        (identity(o).0.to_owned() + identity(o).1 + identity(o).2 + identity(o).3, o.clone())
                    })
                    .collect::<BTreeMap<_, _>>()
            };
            let (b, a) = (index(&before.objects), index(&after.objects));
            for (k, o) in &a {
                match b.get(k) {
                    None => changing.push(format!("{} (created)", describe(o))),
                    Some(old) if rv(old) != rv(o) => changing.push(format!("{} (updated)", describe(o))),
                    _ => {}
                }
            }
            for (k, o) in &b {
                if !a.contains_key(k) {
                    changing.push(format!("{} (deleted)", describe(o)));
                }
            }
        }
    }
    NotQuiet {
        waited,
        budget,
        total_calls: all.len(),
        calls: by_object.into_iter().map(|(k, (n, last))| (k, n, last)).collect(),
        changing,
    }
}

#[cfg(test)]
mod tests {
    use super::human;
    use std::time::Duration;

    #[test]
    fn durations_read_like_the_format() {
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
        assert_eq!(human(Duration::from_secs(3600)), "1h");
    }
}
