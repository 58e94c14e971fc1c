//! The conformance runner: every case under `tests/fixtures/` (expressions and JSONPath
//! in `expressions.yaml`, pipelines as event traces in `pipeline/*.yaml`), ported from
//! Δ-controller's tests. A case marked `divergence:` states where this crate
//! deliberately differs; its expectation is this crate's result (DIVERGENCES.md).

use std::path::Path;

use ctop_declarative::{Delta, DeltaType, Expr, Pipeline};
use serde_json::Value;

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An object given by name (from the file's `objects`) or inline.
fn resolve(v: &Value, objects: &Value) -> Value {
    match v {
        Value::String(name) if objects.get(name).is_some() => objects[name].clone(),
        other => other.clone(),
    }
}

/// Equal, with floats equal to 1e-9.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            x.is_f64() == y.is_f64()
                && (x.as_f64().unwrap_or(f64::NAN) - y.as_f64().unwrap_or(f64::NAN)).abs() < 1e-9
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Checks one expression case; returns a failure message.
fn expression_case(case: &Value, objects: &Value) -> Result<(), String> {
    let object = case.get("object").map_or(Value::Null, |o| resolve(o, objects));
    let result = Expr::parse(&case["expr"], "expr").and_then(|e| match case.get("subject") {
        Some(s) => e.evaluate_with_subject(&object, s),
        None => e.evaluate(&object),
    });
    match (case.get("expect"), case.get("error"), case.get("check"), result) {
        (Some(want), _, _, Ok(got)) if same(want, &got) => Ok(()),
        (Some(want), _, _, got) => Err(format!("want {want}, got {got:?}")),
        (_, Some(want), _, Err(e)) => match want.as_str() {
            Some(part) if !e.to_string().contains(part) => {
                Err(format!("error {e:?} does not contain {part:?}"))
            }
            _ => Ok(()),
        },
        (_, Some(_), _, Ok(got)) => Err(format!("want an error, got {got}")),
        (_, _, Some(check), Ok(got)) => check_value(check, &got),
        (_, _, _, got) => Err(format!("the case says nothing to expect; got {got:?}")),
    }
}

/// The checks for results that vary: `rfc3339`, or `[min, max)` for an integer.
fn check_value(check: &Value, got: &Value) -> Result<(), String> {
    match (check, got) {
        (Value::String(s), Value::String(t)) if s == "rfc3339" => {
            chrono::DateTime::parse_from_rfc3339(t).map(|_| ()).map_err(|e| format!("{t:?}: {e}"))
        }
        (Value::Array(r), Value::Number(n)) if r.len() == 2 => {
            let (lo, hi, n) =
                (r[0].as_i64().unwrap_or(0), r[1].as_i64().unwrap_or(0), n.as_i64().unwrap_or(i64::MIN));
            if (lo..hi).contains(&n) { Ok(()) } else { Err(format!("{n} not in [{lo}, {hi})")) }
        }
        _ => Err(format!("{got} does not pass the check {check}")),
    }
}

fn delta_type(v: &Value) -> DeltaType {
    match v.as_str().unwrap_or("Upserted") {
        "Added" => DeltaType::Added,
        "Updated" => DeltaType::Updated,
        "Replaced" => DeltaType::Replaced,
        "Deleted" => DeltaType::Deleted,
        _ => DeltaType::Upserted,
    }
}

/// Builds a case's pipeline (`sources`, `pipeline`, `target`); `Ok(None)` when the case
/// expects it not to parse and it does not.
fn build(case: &Value) -> Result<Option<Pipeline>, String> {
    let sources: Vec<&str> =
        case["sources"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut p = match (Pipeline::new(&case["pipeline"], &sources), case.get("error")) {
        (Err(e), Some(want)) => {
            return match want.as_str() {
                Some(part) if !e.to_string().contains(part) => {
                    Err(format!("error {e:?} does not contain {part:?}"))
                }
                _ => Ok(None),
            };
        }
        (Err(e), None) => return Err(format!("pipeline: {e}")),
        (Ok(_), Some(_)) => return Err("want a pipeline error".to_string()),
        (Ok(p), None) => p,
    };
    if let Some(t) = case.get("target") {
        p = p.with_target(
            t["apiVersion"].as_str().unwrap_or_default(),
            t["kind"].as_str().unwrap_or_default(),
        );
    }
    Ok(Some(p))
}

/// A pipeline of a case, with where its outputs go: `feeds` names another pipeline of
/// the case and the source its outputs arrive as; without it, the outputs are the
/// trace's results.
struct Node {
    name: String,
    sources: Vec<String>,
    pipeline: Pipeline,
    feeds: Option<(String, String)>,
}

/// Delivers one event: to every pipeline that has the source (in the order the case
/// lists them), then each fed output onward, breadth first. Returns the results.
fn deliver(stages: &mut [Node], source: &str, delta: Delta) -> Result<Vec<Delta>, String> {
    let mut queue = std::collections::VecDeque::from([(None::<String>, source.to_string(), delta)]);
    let mut results = Vec::new();
    while let Some((to, source, delta)) = queue.pop_front() {
        for st in stages.iter_mut() {
            if to.as_ref().is_some_and(|t| *t != st.name) || !st.sources.contains(&source) {
                continue;
            }
            let out = st.pipeline.evaluate(&source, delta.clone()).map_err(|e| e.to_string())?;
            match &st.feeds {
                Some((p, s)) => queue.extend(out.into_iter().map(|d| (Some(p.clone()), s.clone(), d))),
                None => results.extend(out),
            }
        }
    }
    Ok(results)
}

/// Runs one pipeline trace (one pipeline, or the `pipelines` of a case that wires several
/// together); returns a failure message.
fn pipeline_case(case: &Value) -> Result<(), String> {
    let objects = case.get("objects").cloned().unwrap_or(Value::Null);
    let specs = match case.get("pipelines") {
        Some(list) => list.as_array().cloned().unwrap_or_default(),
        None => vec![case.clone()],
    };
    let mut stages = Vec::new();
    for spec in &specs {
        let Some(pipeline) = build(spec)? else { return Ok(()) };
        let feeds = spec.get("feeds").map(|f| {
            (
                f["pipeline"].as_str().unwrap_or_default().to_string(),
                f["source"].as_str().unwrap_or_default().to_string(),
            )
        });
        let sources = spec["sources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        let name = spec["name"].as_str().unwrap_or_default().to_string();
        stages.push(Node { name, sources, pipeline, feeds });
    }
    let first_source = stages.first().and_then(|s| s.sources.first().cloned()).unwrap_or_default();
    for (i, event) in case["events"].as_array().into_iter().flatten().enumerate() {
        let delta = Delta { kind: delta_type(&event["type"]), object: resolve(&event["object"], &objects) };
        let source = event["source"].as_str().unwrap_or(&first_source);
        let got = if stages.len() == 1 && case.get("pipelines").is_none() {
            // A single pipeline: an unknown source is its error to report.
            stages[0].pipeline.evaluate(source, delta).map_err(|e| e.to_string())
        } else {
            deliver(&mut stages, source, delta)
        };
        let at = format!("event {i}");
        match (got, event.get("error")) {
            (Err(e), Some(want)) => {
                if let Some(part) = want.as_str().filter(|p| !e.contains(p)) {
                    return Err(format!("{at}: error {e:?} does not contain {part:?}"));
                }
            }
            (Err(e), None) => return Err(format!("{at}: {e}")),
            (Ok(got), Some(_)) => return Err(format!("{at}: want an error, got {got:?}")),
            (Ok(got), None) => {
                let Some(want) = event.get("expect") else { continue };
                let want: Vec<(DeltaType, Value)> = want
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|d| (delta_type(&d["type"]), resolve(&d["object"], &objects)))
                    .collect();
                let matched = want.len() == got.len()
                    && want.iter().all(|(t, o)| got.iter().any(|d| d.kind == *t && same(&d.object, o)));
                if !matched {
                    return Err(format!("{at}: want {want:?}, got {got:?}"));
                }
            }
        }
    }
    if let (Some(want), [st]) = (case.get("view"), stages.as_slice()) {
        let got: Vec<Value> = st.pipeline.target_objects().cloned().collect();
        let want: Vec<Value> = want.as_array().into_iter().flatten().map(|o| resolve(o, &objects)).collect();
        if want.len() != got.len() || !want.iter().all(|w| got.iter().any(|g| same(w, g))) {
            return Err(format!("target view: want {want:?}, got {got:?}"));
        }
    }
    Ok(())
}

/// Runs every case of a file with `check`; panics listing the failures.
fn run(file: &Path, check: impl Fn(&Value, &Value) -> Result<(), String>) -> (usize, usize) {
    let doc = load(file);
    let objects = doc.get("objects").cloned().unwrap_or(Value::Null);
    let cases = doc["cases"].as_array().cloned().unwrap_or_default();
    let mut failures = Vec::new();
    let mut divergent = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("(unnamed)");
        if case.get("divergence").is_some() {
            divergent += 1;
        }
        if let Err(e) = check(case, &objects) {
            failures.push(format!("  {name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{}: {} of {} cases fail:\n{}",
        file.display(),
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    (cases.len(), divergent)
}

#[test]
fn expressions() {
    let (n, divergent) = run(&fixtures().join("expressions.yaml"), expression_case);
    eprintln!("expressions.yaml: {n} cases, {divergent} marked divergent");
    assert!(n > 0);
}

#[test]
fn pipelines() {
    let dir = fixtures().join("pipeline");
    let mut files: Vec<_> =
        std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    for file in files {
        let (n, divergent) = run(&file, |case, _| pipeline_case(case));
        eprintln!("{}: {n} cases, {divergent} marked divergent", file.display());
    }
}
