//! Golden tests of whole operator scripts, in the style of deno_core's `testing/integration`.
//!
//! Every case is a directory `tests/golden/<case>/`:
//!
//! - `operator.ct` and any files it imports: the script, loaded with [`Script::from_dir`];
//! - `limits.yaml` (optional): the [`Limits`] the case runs under instead of the defaults,
//!   `{timeout: "2s", memory: <bytes>, maxOutput: <bytes>, maxChildren: <n>}` (any subset);
//! - `spec.json`: the [`OperatorSpec`] the script declares, compared exactly (as JSON, and as
//!   an `OperatorSpec` after a serde round trip);
//! - `calls/<n>-<handler>.yaml` (zero or more, run in the order of `n`): one handler call each,
//!   `{handler, controller, input, expected}`, where `handler` is `reconcile`, `finalize`,
//!   `validate`, `mutate`, `onStart` or `map:<i>` (`map-<i>` in the file name), `input` is
//!   the dispatch input (`{object, oldObject?, observed, env, values}`) and `expected` the
//!   exact output JSON. A call that must fail has `error: "<the error's message>"` instead.
//!   `expected`/`error` is the last key of the file, so that blessing can rewrite it alone.
//!
//! On a mismatch the runner prints a line diff. With `CTOP_BLESS=1` it rewrites `spec.json`
//! and the `expected`/`error` of each call instead (refused when `CI` is set): review the
//! `git diff` afterwards. Scripts that draw random strings must be given inputs that make
//! their output deterministic (e.g. the Secret holding the generated value is observed).
//!
//! Some cases copy a file of the repository (`plan`: the SDK's WebApp example, `scaffold`: what
//! `ctop init` writes); the runner checks the copy is still identical (and blessing refreshes
//! it), so the case cannot drift from its source.
//!
//! Add a case: create its directory and list it in `golden!` below (a test checks that every
//! directory is listed); `CTOP_BLESS=1 cargo test -p ctop-runtime --test golden` writes the
//! expectations for review.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ctop_core::OperatorSpec;
use ctop_runtime::{Limits, Script};
use serde::Deserialize;
use serde_json::Value;

/// One `#[test]` per case directory (underscores in the name stand for hyphens).
macro_rules! golden {
    ($($case:ident),* $(,)?) => {
        const CASES: &[&str] = &[$(stringify!($case)),*];
        $(
            #[test]
            fn $case() {
                run_case(&stringify!($case).replace('_', "-"));
            }
        )*
    };
}

golden!(plan, scaffold, every_function, imports, validation, hostile, kubebuilder_cronjob);

/// A case's `limits.yaml`: the limits that differ from [`Limits::default`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaseLimits {
    timeout: Option<ctop_core::Duration>,
    memory: Option<usize>,
    max_output: Option<usize>,
    max_children: Option<usize>,
}

fn case_limits(dir: &Path) -> Limits {
    let Ok(text) = std::fs::read_to_string(dir.join("limits.yaml")) else {
        return Limits::default();
    };
    let case: CaseLimits = ctop_core::yaml::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not a limits file: {e}", dir.join("limits.yaml").display()));
    let d = Limits::default();
    Limits {
        timeout: case.timeout.map_or(d.timeout, Into::into),
        memory: case.memory.unwrap_or(d.memory),
        max_output: case.max_output.unwrap_or(d.max_output),
        max_children: case.max_children.unwrap_or(d.max_children),
        ..d
    }
}

/// Files a case copies from elsewhere in the repository: `(case, file, current source)`.
fn copied_files() -> Vec<(&'static str, &'static str, String)> {
    let scaffold = ctop_runtime::scaffold::files("App", "apps.example.com")
        .into_iter()
        .find(|(name, _)| name == "operator.ct")
        .map(|(_, text)| text)
        .expect("the scaffold has an operator.ct");
    vec![
        ("plan", "operator.ct", include_str!("../sdk/examples/webapp.ts").to_owned()),
        ("scaffold", "operator.ct", scaffold),
    ]
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("golden")
}

fn blessing() -> bool {
    let bless = std::env::var("CTOP_BLESS").is_ok_and(|v| v == "1");
    assert!(
        !(bless && std::env::var_os("CI").is_some()),
        "CTOP_BLESS=1 is refused in CI: golden files are blessed locally and reviewed"
    );
    bless
}

#[test]
fn every_case_directory_is_listed() {
    let mut dirs: Vec<String> = std::fs::read_dir(golden_dir())
        .expect("tests/golden exists")
        .map(|e| e.expect("readable directory entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let mut listed: Vec<String> = CASES.iter().map(|c| c.replace('_', "-")).collect();
    listed.sort();
    assert_eq!(dirs, listed, "every directory of tests/golden must be listed in golden!(...) and vice versa");
}

/// A call file: `expected` or `error` (exactly one, unless blessing).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    handler: String,
    controller: u32,
    input: Value,
    #[serde(default)]
    expected: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

/// What a call produced.
#[derive(Debug, PartialEq)]
enum Outcome {
    Output(Value),
    Error(String),
}

impl Outcome {
    /// The outcome as the YAML text of a call file's last key.
    fn to_yaml(&self) -> String {
        let mut map = BTreeMap::new();
        let key = match self {
            Outcome::Output(v) => {
                map.insert("expected", v.clone());
                "expected"
            }
            Outcome::Error(e) => {
                map.insert("error", Value::String(e.clone()));
                "error"
            }
        };
        let text = ctop_core::yaml::to_string(&map).expect("JSON values serialize as YAML");
        debug_assert!(text.starts_with(key));
        text
    }
}

fn run_case(case: &str) {
    let dir = golden_dir().join(case);
    let bless = blessing();
    let mut failures: Vec<String> = Vec::new();

    for (c, file, source) in copied_files() {
        if c != case {
            continue;
        }
        let path = dir.join(file);
        let copy = std::fs::read_to_string(&path).unwrap_or_default();
        if copy != source {
            if bless {
                write(&path, &source);
            } else {
                let d = diff_as(&copy, &source, "the copy", "its source");
                failures.push(format!("{file} is not a verbatim copy of its source:\n{d}"));
            }
        }
    }

    let script = match Script::from_dir(&dir, "operator.ct", 1, case_limits(&dir)) {
        Ok(s) => s,
        Err(e) => panic!("case {case}: the script does not load: {e}"),
    };

    // The spec: exactly the JSON in spec.json, and equal after a serde round trip.
    let actual = serde_json::to_value(script.spec()).expect("an OperatorSpec serializes");
    let spec_path = dir.join("spec.json");
    let expected_text = std::fs::read_to_string(&spec_path).unwrap_or_default();
    let expected: Option<Value> = serde_json::from_str(&expected_text).ok();
    let round_trip: Option<OperatorSpec> = expected.clone().and_then(|v| serde_json::from_value(v).ok());
    if expected.as_ref() != Some(&actual) || round_trip.as_ref() != Some(script.spec()) {
        if bless {
            write(&spec_path, &(pretty_json(&actual) + "\n"));
        } else if expected.is_none() {
            failures.push(format!(
                "spec.json is missing or not JSON; the script declares:\n{}",
                pretty_json(&actual)
            ));
        } else if round_trip.is_none() {
            failures.push("spec.json does not deserialize into an OperatorSpec".to_owned());
        } else {
            let e = expected.as_ref().map(pretty_json).unwrap_or_default();
            failures.push(format!(
                "spec.json differs from what the script declares:\n{}",
                diff(&e, &pretty_json(&actual))
            ));
        }
    }

    for (path, text) in call_files(&dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let call: Call = ctop_core::yaml::from_str(&text)
            .unwrap_or_else(|e| panic!("case {case}: calls/{name} is not a call file: {e}"));
        let stem = name.strip_suffix(".yaml").unwrap();
        let (_, handler_in_name) = stem.split_once('-').unwrap();
        assert_eq!(
            handler_in_name,
            call.handler.replace(':', "-"),
            "case {case}: calls/{name} is named after another handler than `handler: {}`",
            call.handler
        );
        let keys: Vec<&str> =
            call.input.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        assert!(
            ["observed", "env", "values"].iter().all(|k| keys.contains(k))
                && keys.iter().all(|k| ["object", "oldObject", "observed", "env", "values"].contains(k)),
            "case {case}: calls/{name}: input is {{object, oldObject?, observed, env, values}}, got the keys {keys:?}"
        );
        let want = match (call.expected, call.error) {
            (Some(v), None) => Some(Outcome::Output(v)),
            (None, Some(e)) => Some(Outcome::Error(e)),
            (None, None) => None,
            (Some(_), Some(_)) => panic!("case {case}: calls/{name} has both expected and error"),
        };
        let got = match script.dispatch(&call.handler, call.controller, &call.input.to_string()) {
            Ok(v) => Outcome::Output(v),
            Err(e) => Outcome::Error(e.to_string()),
        };
        if want.as_ref() == Some(&got) {
            continue;
        }
        if bless {
            write(&path, &rewrite_outcome(&text, &got, &name));
        } else if let Some(want) = want {
            failures.push(format!(
                "calls/{name}: the output differs:\n{}",
                diff(&want.to_yaml(), &got.to_yaml())
            ));
        } else {
            failures
                .push(format!("calls/{name} has no expected (or error); the call gave:\n{}", got.to_yaml()));
        }
    }

    if !failures.is_empty() {
        let mut report = format!("golden case `{case}` failed ({} mismatches):\n", failures.len());
        for f in &failures {
            let _ = writeln!(report, "\n── {f}");
        }
        report.push_str("\nIf the new output is right, run with CTOP_BLESS=1 and review the diff.\n");
        eprintln!("{report}");
        panic!("golden case `{case}` failed; see the diff above");
    }
}

/// `calls/*.yaml` of a case, ordered by the number in front of their names.
fn call_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir.join("calls")) else {
        return Vec::new();
    };
    let mut files: Vec<(u32, PathBuf)> = entries
        .map(|e| e.expect("readable directory entry").path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let n = name
                .strip_suffix(".yaml")
                .and_then(|s| s.split_once('-'))
                .and_then(|(n, _)| n.parse().ok())
                .unwrap_or_else(|| panic!("{}: call files are named <n>-<handler>.yaml", p.display()));
            (n, p)
        })
        .collect();
    files.sort();
    for pair in files.windows(2) {
        assert_ne!(pair[0].0, pair[1].0, "{}: two call files have number {}", dir.display(), pair[0].0);
    }
    files
        .into_iter()
        .map(|(_, p)| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect()
}

/// The call file with its last key (`expected:`/`error:`, or nothing yet) replaced by `got`,
/// keeping everything before it (comments and the input as written).
fn rewrite_outcome(text: &str, got: &Outcome, name: &str) -> String {
    let mut kept = String::new();
    for line in text.split_inclusive('\n') {
        if line.starts_with("expected:") || line.starts_with("error:") {
            break;
        }
        kept.push_str(line);
    }
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    let new = kept + &got.to_yaml();
    // Only the outcome may change: keys after `expected:` would have been dropped.
    let before: Value = ctop_core::yaml::from_str(text).expect("parsed before");
    let after: Value = ctop_core::yaml::from_str(&new).expect("blessed call files parse");
    for key in ["handler", "controller", "input"] {
        assert_eq!(
            before.get(key),
            after.get(key),
            "calls/{name}: keep `expected:` the last key so it can be blessed"
        );
    }
    new
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot bless {}: {e}", path.display()));
    eprintln!("blessed {}", path.display());
}

fn pretty_json(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("JSON serializes")
}

/// A line diff of `expected` → `actual` with three lines of context.
fn diff(expected: &str, actual: &str) -> String {
    diff_as(expected, actual, "expected", "actual")
}

/// A line diff of `expected` (`-`, called `old`) → `actual` (`+`, called `new`).
fn diff_as(expected: &str, actual: &str, old: &str, new: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    // Longest common subsequence table, from the ends.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    const CONTEXT: usize = 3;
    let changed: Vec<usize> =
        ops.iter().enumerate().filter(|(_, (c, _))| *c != ' ').map(|(k, _)| k).collect();
    let mut out = format!("  (- {old}, + {new})\n");
    let mut shown_until = 0;
    for &k in &changed {
        let from = k.saturating_sub(CONTEXT).max(shown_until);
        if from > shown_until {
            out.push_str("  ...\n");
        }
        let to = (k + CONTEXT + 1).min(ops.len());
        for (c, line) in &ops[from..to] {
            let _ = writeln!(out, "{c} {line}");
        }
        shown_until = shown_until.max(to);
    }
    if shown_until < ops.len() {
        out.push_str("  ...\n");
    }
    out
}
