//! RBAC declarations, checked by running each controller's `reconcile` once, without a
//! cluster, on each of its samples (`samples/*.yaml`), or on a bare object of its kind when
//! it has none: every object it applies or patches must be of a kind it declares (what the
//! controller refuses at run time with `ReconcileError::Undeclared`, in
//! `crates/controller/src/effects.rs`, because the generated RBAC would), and every kind it
//! reads with `getObserved` / `listObserved` must be watched (otherwise the read is always
//! empty and RBAC grants no `get`/`list`: see `crates/manifests/src/rbac.rs`).
//!
//! A run covers the branches its input takes; a branch that only a cluster's state reaches
//! (an observed child with some status) is not run here.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ctop_core::{ControllerSpec, KindRef, Observer, ReconcileOutcome};
use ctop_runtime::{Script, VmError};
use serde_json::{Value, json};

use super::frame::{Finding, Location, Severity, shown};

/// The kinds one call asked the cache for, by `getObserved` and `listObserved`.
#[derive(Default)]
struct Recorder {
    asked: Mutex<BTreeSet<(String, &'static str)>>,
}

impl Observer for Recorder {
    fn list(&self, kind: &str) -> Option<String> {
        if let Ok(mut asked) = self.asked.lock() {
            asked.insert((kind.to_owned(), "listObserved"));
        }
        Some("[]".to_owned())
    }

    fn get(&self, kind: &str, _namespace: Option<&str>, _name: &str) -> Option<Option<String>> {
        if let Ok(mut asked) = self.asked.lock() {
            asked.insert((kind.to_owned(), "getObserved"));
        }
        Some(None)
    }
}

fn key(k: &KindRef) -> String {
    format!("{}/{}", k.api_version, k.kind)
}

/// The objects of `c`'s kind in `dir/samples/*.yaml`, with the file each came from.
fn samples(dir: &Path, c: &ControllerSpec) -> Vec<(String, Value)> {
    let Ok(entries) = std::fs::read_dir(dir.join("samples")) else { return Vec::new() };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        let Ok(docs) = ctop_core::yaml::documents::<Value>(&text) else { continue };
        let name = file.file_name().map(|n| format!("samples/{}", n.to_string_lossy())).unwrap_or_default();
        for doc in docs {
            if doc["apiVersion"] == c.for_.api_version.as_str() && doc["kind"] == c.for_.kind.as_str() {
                out.push((name.clone(), doc));
            }
        }
    }
    out
}

/// Run each controller's reconcile on its samples and report undeclared kinds.
pub fn check(dir: &Path, script: &Script, values: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    for c in script.spec().controllers.iter().filter(|c| c.handlers.iter().any(|h| h == "reconcile")) {
        let mut inputs = samples(dir, c);
        let synthetic = inputs.is_empty();
        if synthetic {
            inputs.push((
                format!("a bare {} (no sample of it in samples/)", c.for_.kind),
                json!({
                    "apiVersion": c.for_.api_version,
                    "kind": c.for_.kind,
                    "metadata": {"name": "ctop-check", "namespace": "default", "uid": "00000000-0000-4000-8000-000000000000", "generation": 1},
                    "spec": {},
                }),
            ));
        }
        for (from, mut object) in inputs {
            if object["metadata"]["namespace"].is_null() {
                object["metadata"]["namespace"] = json!("default");
            }
            object["metadata"]["uid"] = json!("00000000-0000-4000-8000-000000000000");
            findings.extend(reconcile_once(dir, script, c, &from, &object, values, synthetic));
        }
    }
    findings
}

fn reconcile_once(
    dir: &Path,
    script: &Script,
    c: &ControllerSpec,
    from: &str,
    object: &Value,
    values: &Value,
    synthetic: bool,
) -> Vec<Finding> {
    let recorder = Arc::new(Recorder::default());
    let input = json!({"object": object, "env": {}, "values": values}).to_string();
    let out = script.dispatch_observed("reconcile", c.index, &input, recorder.clone());
    let outcome = match out.map(|v| ReconcileOutcome::from_output("reconcile", v)) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => {
            return vec![Finding::error(
                "reconcile",
                format!(
                    "operator {:?}: reconcile of {from} returned an output the controller refuses: {e}",
                    c.name
                ),
                None,
            )];
        }
        Err(e) => return vec![failed(dir, c, from, &e, synthetic)],
    };
    let mut findings = Vec::new();
    let declared = |k: &KindRef| c.manages.contains(k);
    let describe = |o: &Value| {
        let ns = o["metadata"]["namespace"].as_str().map(|n| format!("{n}/")).unwrap_or_default();
        format!("{} {ns}{}", o["kind"].as_str().unwrap_or("?"), o["metadata"]["name"].as_str().unwrap_or("?"))
    };
    let kind_of = |o: &Value| KindRef {
        api_version: o["apiVersion"].as_str().unwrap_or_default().to_owned(),
        kind: o["kind"].as_str().unwrap_or_default().to_owned(),
    };
    let mut reported = BTreeSet::new();
    for child in &outcome.children.objects {
        let k = kind_of(child);
        if !declared(&k) && reported.insert(("apply", key(&k))) {
            findings.push(Finding::error(
                "rbac",
                format!(
                    "operator {:?} applies {} (reconcile of {from}), but {} is not in its .manages(...): the controller refuses the write, and the generated RBAC would",
                    c.name,
                    describe(child),
                    key(&k)
                ),
                Some(format!("add .manages({}) to operator {:?}", k.kind, c.name)),
            ));
        }
    }
    for patch in &outcome.patches {
        let k = kind_of(patch);
        let granted = c.permissions.iter().any(|rule| {
            let any = |v: &[String], want: &str| v.iter().any(|x| x == "*" || x == want);
            any(&rule.api_groups, k.group()) && any(&rule.verbs, "patch") && !rule.resources.is_empty()
        });
        if !(declared(&k) || k == c.for_ || granted) && reported.insert(("patch", key(&k))) {
            findings.push(Finding::error(
                "rbac",
                format!(
                    "operator {:?} patches {} (reconcile of {from}), but {} is neither its kind, nor managed, nor granted patch by a .permission(...)",
                    c.name,
                    describe(patch),
                    key(&k)
                ),
                Some(format!(
                    "add .manages({}) or .permission({{ apiGroups: [{:?}], resources: [\"<plural>\"], verbs: [\"patch\"] }}) to operator {:?}",
                    k.kind,
                    k.group(),
                    c.name
                )),
            ));
        }
    }
    let watched: BTreeSet<String> = c
        .manages
        .iter()
        .chain(&c.reads)
        .chain(c.watches.iter().map(|w| &w.kind))
        .chain([&c.for_])
        .map(key)
        .collect();
    let asked = recorder.asked.lock().map(|a| a.clone()).unwrap_or_default();
    for (kind, how) in asked {
        if !watched.contains(&kind) && reported.insert((how, kind.clone())) {
            let short = kind.rsplit('/').next().unwrap_or(&kind).to_owned();
            findings.push(Finding::error(
                "rbac",
                format!(
                    "operator {:?} calls {how}({short}, ...) (reconcile of {from}), but {kind} is not in its .manages, .reads or .watches: nothing of it is cached, so the call always finds nothing, and the generated RBAC grants no read of it",
                    c.name
                ),
                Some(format!("add .reads({short}) to operator {:?} (or .manages({short}) if it creates them)", c.name)),
            ));
        }
    }
    findings
}

/// A reconcile that threw: an error on a sample (`ctop dev` applies it and would fail the
/// same way), a warning on a bare object (the script may rightly need a spec).
fn failed(dir: &Path, c: &ControllerSpec, from: &str, e: &VmError, synthetic: bool) -> Finding {
    let location = match e {
        VmError::Exception { file: Some(file), line: Some(line), column, .. } if dir.join(file).is_file() => {
            Some(Location {
                shown: shown(dir, file),
                path: Some(dir.join(file)),
                line: *line,
                column: column.unwrap_or(1),
            })
        }
        _ => None,
    };
    let (severity, help) = if synthetic {
        (
            Severity::Warning,
            format!(
                "add a sample {} to samples/ so that ctop check runs its reconcile on a real spec",
                c.for_.kind
            ),
        )
    } else {
        (Severity::Error, format!("fix reconcile for {from}; `ctop dev` applies the same sample"))
    };
    Finding {
        severity,
        location,
        code: "reconcile".into(),
        message: format!("operator {:?}: reconcile of {from} threw: {e}", c.name),
        help: Some(help),
    }
}
