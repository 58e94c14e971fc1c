//! How results read: [`render`] writes one test's result for a terminal, [`summary`] the
//! one line a CI log ends with, and [`junit`] the JUnit XML CI systems display.

use std::fmt::Write as _;
use std::time::Duration;

use crate::runner::{GoldenOutcome, TestReport};
use crate::settle::human;

/// One test's result: a line, then each failure (indented), then the notes when it failed
/// or `verbose`.
pub fn render(r: &TestReport, shown_file: &str, verbose: bool) -> String {
    let mut out = String::new();
    let status = if r.passed() { "PASS" } else { "FAIL" };
    let golden = match &r.golden {
        GoldenOutcome::Written(p) => {
            format!(", golden written to {}", p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default())
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "{status} {shown_file} ({}): {}/{} steps, {} ms, {} virtual{golden}",
        r.name,
        r.steps.1,
        r.steps.0,
        r.wall.as_millis(),
        human(r.virtual_time)
    );
    for f in &r.failures {
        let place = match (&f.step, f.line) {
            (Some((n, name)), Some(line)) => format!("step {n} \"{name}\" ({shown_file}:{line}): "),
            (Some((n, name)), None) => format!("step {n} \"{name}\": "),
            (None, Some(line)) => format!("{shown_file}:{line}: "),
            (None, None) => String::new(),
        };
        let message = f.message.replace('\n', "\n    ");
        let _ = writeln!(out, "  - {place}{message}");
    }
    if verbose || !r.passed() {
        for n in &r.notes {
            let _ = writeln!(out, "  note: {n}");
        }
    }
    out
}

/// Counts over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Tests that passed.
    pub passed: usize,
    /// Tests that failed.
    pub failed: usize,
    /// Golden files written.
    pub written: usize,
}

impl Totals {
    /// The totals of `reports`.
    pub fn of(reports: &[TestReport]) -> Self {
        let mut t = Totals::default();
        for r in reports {
            if r.passed() {
                t.passed += 1;
            } else {
                t.failed += 1;
            }
            if matches!(r.golden, GoldenOutcome::Written(_)) {
                t.written += 1;
            }
        }
        t
    }
}

/// `ctop test: 5 passed, 1 failed (2 golden files written) in 1.23s`.
pub fn summary(t: Totals, wall: Duration) -> String {
    let written =
        if t.written > 0 { format!(" ({} golden file(s) written)", t.written) } else { String::new() };
    format!("ctop test: {} passed, {} failed{written} in {:.2}s", t.passed, t.failed, wall.as_secs_f64())
}

/// The JUnit XML of `reports`, one suite per operator directory (`suites` names each
/// report's directory).
pub fn junit(reports: &[(String, &TestReport)]) -> Result<String, quick_junit::SerializeError> {
    let mut report = quick_junit::Report::new("ctop test");
    let mut suites: Vec<quick_junit::TestSuite> = Vec::new();
    for (suite_name, r) in reports {
        let idx = match suites.iter().position(|s| s.name.as_str() == suite_name) {
            Some(i) => i,
            None => {
                suites.push(quick_junit::TestSuite::new(suite_name.clone()));
                suites.len() - 1
            }
        };
        let status = if r.passed() {
            quick_junit::TestCaseStatus::success()
        } else {
            let mut s = quick_junit::TestCaseStatus::non_success(quick_junit::NonSuccessKind::Failure);
            let text = render(r, &r.file.display().to_string(), true);
            s.set_message(
                r.failures
                    .first()
                    .map(|f| f.message.lines().next().unwrap_or_default().to_owned())
                    .unwrap_or_default(),
            );
            s.set_description(text);
            s
        };
        let mut case = quick_junit::TestCase::new(r.name.clone(), status);
        case.set_classname(r.file.display().to_string());
        case.set_time(r.wall);
        suites[idx].add_test_case(case);
    }
    report.add_test_suites(suites);
    report.to_string()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::runner::Failure;

    fn report(failures: Vec<Failure>) -> TestReport {
        TestReport {
            name: "basic".into(),
            file: PathBuf::from("op/tests/basic.yaml"),
            steps: (2, 2),
            wall: Duration::from_millis(120),
            virtual_time: Duration::from_secs(3),
            failures,
            notes: vec!["oracle idempotence is off: writes a timestamp".into()],
            golden: GoldenOutcome::Matched,
        }
    }

    #[test]
    fn a_failure_names_step_and_line() {
        let r = report(vec![Failure {
            step: Some((2, "scale".into())),
            line: Some(14),
            message: "Deployment default/shop does not match:\n  spec.replicas: expected 3, got 2".into(),
        }]);
        let text = render(&r, "tests/basic.yaml", false);
        assert_eq!(
            text,
            "FAIL tests/basic.yaml (basic): 2/2 steps, 120 ms, 3s virtual\n  \
             - step 2 \"scale\" (tests/basic.yaml:14): Deployment default/shop does not match:\n      spec.replicas: expected 3, got 2\n  \
             note: oracle idempotence is off: writes a timestamp\n"
        );
        assert_eq!(render(&report(vec![]), "t.yaml", false).lines().count(), 1);
    }

    #[test]
    fn the_summary_and_junit_count_the_tests() {
        let ok = report(vec![]);
        let bad = report(vec![Failure { step: None, line: None, message: "golden differs".into() }]);
        let t = Totals::of(&[ok.clone(), bad.clone()]);
        assert_eq!(summary(t, Duration::from_millis(1234)), "ctop test: 1 passed, 1 failed in 1.23s");
        let xml = junit(&[("op".into(), &ok), ("op".into(), &bad)]).expect("xml");
        assert!(
            xml.contains("<testsuite name=\"op\" tests=\"2\" skipped=\"0\" errors=\"0\" failures=\"1\""),
            "{xml}"
        );
        assert!(xml.contains("<failure message=\"golden differs\""), "{xml}");
    }
}
