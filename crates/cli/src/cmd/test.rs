//! `ctop test`: run an operator's own tests (`DIR/tests/*.yaml`) against an in-process
//! kubesim and the operator's controllers on a virtual clock. The format, the runner, the
//! golden files and the oracles are `ctop_testing`'s; this module finds the files, prints
//! the results and sets the exit code: 0 when every test passed, 1 when one failed, 2 when
//! a test file is invalid or there is nothing to run.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ctop_testing::report::{Totals, junit, render, summary};
use ctop_testing::{GoldenMode, Operator, TestFile, TestReport, run_test, test_files};

/// Arguments of `ctop test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Operator directories, each with its tests in tests/*.yaml.
    #[arg(default_value = ".")]
    pub(super) dirs: Vec<PathBuf>,
    /// The entry script, relative to each DIR.
    #[arg(long, default_value = "operator.ct")]
    pub(super) entry: String,
    /// Write each test's golden file (tests/NAME.golden.yaml) from this run instead of
    /// comparing with it; review the diff before committing it.
    #[arg(long)]
    pub(super) update: bool,
    /// Run only the tests whose name or file name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub(super) filter: Option<String>,
    /// Also write the results as JUnit XML to this file.
    #[arg(long, value_name = "FILE")]
    pub(super) junit: Option<PathBuf>,
    /// Print the notes of passing tests too (oracles turned off or not exercised).
    #[arg(long, short)]
    pub(super) verbose: bool,
    /// Fuzz the operator instead of running its tests: random writes of its objects, with
    /// the oracles and the script's invariants checked whenever it is quiet.
    #[arg(long)]
    pub(super) fuzz: bool,
    /// The fuzzer's seed (default: drawn from the clock, and printed); the same seed
    /// replays the same steps.
    #[arg(long, requires = "fuzz")]
    pub(super) seed: Option<u64>,
    /// How many steps the fuzzer takes.
    #[arg(long, default_value_t = 200, requires = "fuzz")]
    pub(super) steps: u64,
    /// Inject API faults (errors, latency, dropped watches) and crash the operator once.
    #[arg(long, requires = "fuzz")]
    pub(super) faults: bool,
    /// Write the fuzzer's full trace (one line per step) to this file.
    #[arg(long, value_name = "FILE", requires = "fuzz")]
    pub(super) trace: Option<PathBuf>,
    /// Report a failing fuzz run as found, without shrinking it.
    #[arg(long, requires = "fuzz")]
    pub(super) no_shrink: bool,
}

/// Exit code for an invalid test file or nothing to run.
const USAGE: u8 = 2;

/// How a test file is shown: relative to the current directory when it is under it.
fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd).unwrap_or(path).display().to_string()
}

/// Run the tests and print the results; the exit code says how it went.
pub fn run(args: &TestArgs) -> ExitCode {
    if args.fuzz {
        return super::fuzz::run(args);
    }
    let started = std::time::Instant::now();
    let mut errors = Vec::new();
    let mut suites: Vec<(Operator, Vec<TestFile>)> = Vec::new();
    for given in &args.dirs {
        // An Operator YAML is tested with the tests beside it: `op.yaml` and `tests/*.yaml`.
        let (dir, entry) = match super::declarative::operator_at(given) {
            Ok(Some(_)) => {
                let parent = given.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                let name = given.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                (parent.to_path_buf(), name)
            }
            Ok(None) => (given.clone(), args.entry.clone()),
            Err(e) => {
                errors.push(format!("{e:#}"));
                continue;
            }
        };
        let dir = &dir;
        if !dir.join(&entry).is_file() {
            errors.push(format!(
                "{}: no {} here; ctop test runs the tests of an operator directory (or of an Operator YAML)",
                dir.display(),
                entry
            ));
            continue;
        }
        let files = match test_files(dir) {
            Ok(f) => f,
            Err(e) => {
                errors.push(format!("{}: cannot list the tests: {e}", dir.join("tests").display()));
                continue;
            }
        };
        let mut tests = Vec::new();
        for f in files {
            match TestFile::read(&f, dir) {
                Ok(t) => tests.push(t),
                Err(e) => errors.push(ctop_core::Chain(&e).to_string()),
            }
        }
        if let Some(filter) = &args.filter {
            tests.retain(|t| {
                t.name.contains(filter.as_str()) || t.path.to_string_lossy().contains(filter.as_str())
            });
        }
        suites.push((Operator { dir: dir.clone(), entry }, tests));
    }
    let mut out = std::io::stdout().lock();
    if !errors.is_empty() {
        for e in &errors {
            let _ = writeln!(out, "error: {e}");
        }
        let _ = writeln!(
            out,
            "ctop test: {} invalid test file(s) or director(ies); nothing was run",
            errors.len()
        );
        return ExitCode::from(USAGE);
    }
    if suites.iter().all(|(_, t)| t.is_empty()) {
        let why = match &args.filter {
            Some(f) => format!("no test matches --filter {f:?}"),
            None => "no tests found: write one in DIR/tests/NAME.yaml (ctop init scaffolds one)".into(),
        };
        let _ = writeln!(out, "ctop test: {why}");
        return ExitCode::from(USAGE);
    }
    let mode = if args.update { GoldenMode::Update } else { GoldenMode::Compare };
    let mut reports: Vec<(String, TestReport)> = Vec::new();
    for (op, tests) in &suites {
        for t in tests {
            let report = run_test(op, t, mode);
            let _ = out.write_all(render(&report, &shown(&t.path), args.verbose).as_bytes());
            let _ = out.flush();
            reports.push((shown(&op.dir), report));
        }
    }
    let all: Vec<TestReport> = reports.iter().map(|(_, r)| r.clone()).collect();
    let totals = Totals::of(&all);
    let _ = writeln!(out, "{}", summary(totals, started.elapsed()));
    if let Some(path) = &args.junit {
        let pairs: Vec<(String, &TestReport)> = reports.iter().map(|(s, r)| (s.clone(), r)).collect();
        let written = junit(&pairs).map_err(|e| e.to_string()).and_then(|xml| {
            std::fs::write(path, xml).map_err(|e| format!("cannot write {}: {e}", path.display()))
        });
        if let Err(e) = written {
            let _ = writeln!(out, "error: the JUnit report: {e}");
            return ExitCode::from(USAGE);
        }
    }
    if totals.failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
