//! Shrinking a failing run: [`shrink`] removes steps while the run still fails the same
//! way, by delta debugging (Zeller and Hildebrandt's ddmin: try without each of n chunks,
//! keep any removal that still fails, refine the chunks when none does), then tries each
//! remaining step alone. Written by hand: the crates that shrink (proptest, quickcheck)
//! shrink values they generated themselves, not a list of steps replayed against a world.

use std::time::{Duration, Instant};

/// How much shrinking may cost.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Replays at most.
    pub runs: usize,
    /// Real time at most.
    pub wall: Duration,
}

/// What shrinking did.
#[derive(Clone, Debug)]
pub struct Shrunk<T> {
    /// The smallest failing list found.
    pub items: Vec<T>,
    /// Replays run.
    pub runs: usize,
    /// Whether it stopped at the budget rather than at a minimum (no single step can be
    /// removed).
    pub exhausted: bool,
}

/// The smallest sub-list of `items` (in order) for which `fails` holds, within `budget`;
/// `fails(items)` is assumed.
pub fn shrink<T: Clone>(items: Vec<T>, budget: Budget, mut fails: impl FnMut(&[T]) -> bool) -> Shrunk<T> {
    let started = Instant::now();
    let mut runs = 0;
    let over = |runs: usize| runs >= budget.runs || started.elapsed() >= budget.wall;
    let mut current = items;
    let mut chunks = 2usize;
    // ddmin over chunks.
    while current.len() >= 2 {
        let size = current.len().div_ceil(chunks);
        let mut removed = false;
        let mut start = 0;
        while start < current.len() {
            if over(runs) {
                return Shrunk { items: current, runs, exhausted: true };
            }
            let end = (start + size).min(current.len());
            let candidate: Vec<T> = current[..start].iter().chain(&current[end..]).cloned().collect();
            runs += 1;
            if !candidate.is_empty() && fails(&candidate) {
                current = candidate;
                removed = true;
                // The same start now names the next chunk.
            } else {
                start = end;
            }
        }
        if removed {
            chunks = chunks.saturating_sub(1).max(2);
        } else if size <= 1 {
            break;
        } else {
            chunks = (chunks * 2).min(current.len());
        }
    }
    Shrunk { items: current, runs, exhausted: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> Budget {
        Budget { runs: 10_000, wall: Duration::from_secs(60) }
    }

    #[test]
    fn finds_the_two_steps_that_matter() {
        let items: Vec<u32> = (0..100).collect();
        let shrunk = shrink(items, budget(), |xs| xs.contains(&17) && xs.contains(&73));
        assert_eq!(shrunk.items, vec![17, 73]);
        assert!(!shrunk.exhausted);
    }

    #[test]
    fn keeps_the_order_a_failure_needs() {
        // Fails when a 5 comes somewhere after a 3.
        let items = vec![5, 1, 3, 2, 5, 4];
        let shrunk = shrink(items, budget(), |xs| {
            xs.iter().position(|x| *x == 3).is_some_and(|i| xs[i..].contains(&5))
        });
        assert_eq!(shrunk.items, vec![3, 5]);
    }

    #[test]
    fn stops_at_the_budget() {
        let items: Vec<u32> = (0..100).collect();
        let shrunk = shrink(items, Budget { runs: 3, wall: Duration::from_secs(60) }, |xs| xs.contains(&50));
        assert!(shrunk.exhausted);
        assert_eq!(shrunk.runs, 3);
    }
}
