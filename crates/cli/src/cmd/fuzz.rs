//! `ctop test --fuzz`: the fuzzer of `ctop_testing::fuzz` on each operator directory,
//! with a summary line per directory; a failure prints the seed, the failure, the shrunk
//! trace and the command that repeats it. Exit codes as `ctop test`'s: 0 passed, 1 a
//! failure found, 2 nothing could run.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use ctop_testing::Operator;
use ctop_testing::fuzz::{FuzzConfig, FuzzReport, fuzz, shrink};

use super::test::TestArgs;

/// How long shrinking a failure may take.
const SHRINK: shrink::Budget = shrink::Budget { runs: 400, wall: Duration::from_secs(180) };

/// A seed from the clock, when none is given.
fn clock_seed() -> u64 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    u64::try_from(nanos % u128::from(u64::MAX)).unwrap_or(0)
}

/// The command that repeats `report`'s run. The same `--steps`: the number of steps decides
/// when the crash comes, so fewer steps would be another run.
fn repeat(args: &TestArgs, dir: &str, report: &FuzzReport) -> String {
    let c = &report.config;
    format!(
        "ctop test {dir} --fuzz --seed {} --steps {}{}{}",
        c.seed,
        c.steps,
        if c.faults { " --faults" } else { "" },
        if args.entry == "operator.ct" { String::new() } else { format!(" --entry {}", args.entry) }
    )
}

fn summary(report: &FuzzReport) -> String {
    let c = &report.counts;
    let per_sec = report.steps_run as f64 / report.wall.as_secs_f64().max(1e-9);
    format!(
        "{} steps: {} writes accepted, {} refused, {} invalid objects refused, {} deletes of objects already gone, \
         {} faults, {} restarts, {} checkpoints, {} invariant checks; {:.1}s ({per_sec:.0} steps/s), {} virtual",
        report.steps_run,
        c.accepted,
        c.refused,
        c.invalid_refused,
        c.absent,
        c.faults,
        c.restarts,
        c.checkpoints,
        c.invariant_checks,
        report.wall.as_secs_f64(),
        ctop_testing::human(report.virtual_time)
    )
}

/// Fuzz every directory of `args`.
pub fn run(args: &TestArgs) -> ExitCode {
    let seed = args.seed.unwrap_or_else(clock_seed);
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    for dir in &args.dirs {
        let shown = dir.display().to_string();
        if !dir.join(&args.entry).is_file() {
            let _ = writeln!(
                out,
                "error: {shown}: no {} here; ctop test --fuzz fuzzes an operator directory",
                args.entry
            );
            return ExitCode::from(2);
        }
        let config = FuzzConfig {
            seed,
            steps: args.steps,
            faults: args.faults,
            shrink: (!args.no_shrink).then_some(SHRINK),
        };
        let op = Operator { dir: dir.clone(), entry: args.entry.clone() };
        let report = match fuzz(&op, &config) {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(out, "error: fuzz {shown}: {e}");
                return ExitCode::from(2);
            }
        };
        if let Some(path) = &args.trace {
            let mut text = report.trace.join("\n");
            text.push('\n');
            if let Err(e) = std::fs::write(path, text) {
                let _ = writeln!(out, "error: cannot write the trace to {}: {e}", path.display());
                return ExitCode::from(2);
            }
        }
        let faults = if args.faults { ", faults on" } else { "" };
        match &report.failure {
            None => {
                let _ = writeln!(out, "ok     fuzz {shown} (seed {seed}{faults}): {}", summary(&report));
            }
            Some(f) => {
                failed = true;
                let _ = writeln!(out, "FAILED fuzz {shown} (seed {seed}{faults}) {}: {f}", f.when());
                match &report.shrunk {
                    Some(s) if !s.trace.is_empty() => {
                        let budget = if s.exhausted { ", shrinking budget reached" } else { "" };
                        let _ = writeln!(
                            out,
                            "  shrunk to {} steps ({} replays, {:.1}s{budget}):",
                            s.trace.len().saturating_sub(1),
                            s.runs,
                            s.wall.as_secs_f64()
                        );
                        for l in &s.trace {
                            let _ = writeln!(out, "    {l}");
                        }
                    }
                    Some(_) => {
                        let _ = writeln!(
                            out,
                            "  the failure did not show again when replayed; the run's last steps:"
                        );
                        for l in report.trace.iter().rev().take(20).rev() {
                            let _ = writeln!(out, "    {l}");
                        }
                    }
                    None => {
                        for l in report.trace.iter().rev().take(20).rev() {
                            let _ = writeln!(out, "    {l}");
                        }
                    }
                }
                let _ = writeln!(out, "  {}", summary(&report));
                let _ = writeln!(out, "  repeat with: {}", repeat(args, &shown, &report));
            }
        }
        for n in &report.notes {
            let _ = writeln!(out, "  note: {n}");
        }
        let _ = out.flush();
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
