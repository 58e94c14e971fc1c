//! `--rounds N`: one figure per implementation and size out of N interleaved runs.
//!
//! Two runs of the same build on the same idle machine differ by up to a third in CPU
//! seconds (bench/README.md), more than most changes being weighed. Running every
//! implementation N times in turn and keeping each figure's median gives a figure one
//! outlying run cannot move.

use serde_json::{Map, Value};

use crate::Run;

/// Every numeric figure of `runs` (one implementation at one size) is its median over the
/// runs that have it: the lower of the middle two for an even count, so that it is always
/// a value some run measured (and a count stays an integer). `converged` holds when every
/// run converged; `failure` is the first run's that failed. `None` for no runs.
pub fn median(runs: &[Run]) -> Option<Run> {
    let first = runs.first()?;
    let values: Vec<Map<String, Value>> = runs
        .iter()
        .filter_map(|r| match serde_json::to_value(r) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect();
    let mut out = values.first()?.clone();
    for (key, value) in &mut out {
        if !value.is_number() && !value.is_null() {
            continue;
        }
        let mut numbers: Vec<&Value> =
            values.iter().filter_map(|m| m.get(key)).filter(|v| v.is_number()).collect();
        numbers.sort_by(|a, b| a.as_f64().unwrap_or(0.0).total_cmp(&b.as_f64().unwrap_or(0.0)));
        if let Some(middle) = numbers.get(numbers.len().saturating_sub(1) / 2) {
            *value = (*middle).clone();
        }
    }
    let mut run: Run = serde_json::from_value(Value::Object(out)).ok()?;
    run.converged = runs.iter().all(|r| r.converged);
    run.failure = runs.iter().find_map(|r| r.failure.clone());
    run.rounds = runs.len();
    run.size = first.size;
    Some(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cpu: f64, requests: u64, script: Option<f64>, failure: Option<&str>) -> Run {
        Run {
            implementation: "ctop".into(),
            size: 1000,
            converged: failure.is_none(),
            failure: failure.map(str::to_owned),
            cpu_s: cpu,
            update_requests: requests,
            script_p50_us: script,
            ..Run::default()
        }
    }

    #[test]
    fn each_figure_is_the_median_of_the_runs_that_have_it() {
        let m = median(&[
            run(1.4, 2900, Some(250.0), None),
            run(1.1, 2910, None, None),
            run(1.2, 2890, Some(240.0), None),
        ])
        .expect("runs");
        assert_eq!(m.cpu_s, 1.2);
        assert_eq!(m.update_requests, 2900);
        // Two runs have it: the lower of the middle two.
        assert_eq!(m.script_p50_us, Some(240.0));
        assert!(m.converged);
        assert_eq!(m.rounds, 3);
        assert_eq!(m.implementation, "ctop");
    }

    #[test]
    fn one_failed_round_marks_the_figure() {
        let m = median(&[run(1.0, 1, None, None), run(2.0, 2, None, Some("update did not converge"))])
            .expect("runs");
        assert!(!m.converged);
        assert_eq!(m.failure.as_deref(), Some("update did not converge"));
        assert_eq!(m.cpu_s, 1.0);
        assert!(median(&[]).is_none());
    }
}
