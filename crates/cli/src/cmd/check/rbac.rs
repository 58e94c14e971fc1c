//! RBAC declarations, checked by running each controller's handlers once, without a
//! cluster ([`check`]): `reconcile` and `finalize` on each of its samples (`samples/*.yaml`,
//! as [`super::samples`] stores them), or on a bare object of its kind when it has none,
//! and `onStart`. Every object a handler applies or patches must be of a kind its
//! controller declares (what the controller refuses at run time with
//! `ReconcileError::Undeclared`, in `crates/controller/src/effects.rs`, because the
//! generated RBAC would), and every kind it reads with `getObserved` / `listObserved` must
//! be watched (otherwise the read is always empty and RBAC grants no `get`/`list`: see
//! `crates/manifests/src/rbac.rs`). The cache a handler reads here is empty.
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
use super::samples::Sample;

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

/// Run each controller's handlers (`reconcile` and `finalize` on each sample, `onStart`
/// once) and report undeclared kinds.
pub fn check(dir: &Path, script: &Script, samples: &[Sample], values: &Value) -> Vec<Finding> {
    let mut findings = Vec::new();
    for c in &script.spec().controllers {
        let has = |h: &str| c.handlers.iter().any(|x| x == h);
        let of_kind: Vec<&Sample> = samples
            .iter()
            .filter(|s| {
                s.object["apiVersion"] == c.for_.api_version.as_str()
                    && s.object["kind"] == c.for_.kind.as_str()
            })
            .collect();
        let synthetic = of_kind.is_empty();
        let mut inputs: Vec<(String, Value)> =
            of_kind.iter().filter(|s| !s.refused).map(|s| (s.file.clone(), s.object.clone())).collect();
        if synthetic {
            let mut bare = json!({
                "apiVersion": c.for_.api_version,
                "kind": c.for_.kind,
                "metadata": {"name": "ctop-check", "generation": 1},
                "spec": {},
            });
            // Its schema's defaults, as the API server would fill them in.
            if let Some(r) = script
                .spec()
                .resources
                .iter()
                .find(|r| r.api_version == c.for_.api_version && r.kind == c.for_.kind)
            {
                ctop_schema::apply_defaults(&mut bare, &r.schema);
            }
            inputs.push((format!("a bare {} (no sample of it in samples/)", c.for_.kind), bare));
        }
        let cluster_scoped = script.spec().resources.iter().any(|r| {
            r.api_version == c.for_.api_version
                && r.kind == c.for_.kind
                && r.scope == ctop_core::Scope::Cluster
        });
        for (from, mut object) in inputs {
            if cluster_scoped {
                if let Some(meta) = object["metadata"].as_object_mut() {
                    meta.remove("namespace");
                }
            } else if object["metadata"]["namespace"].is_null() {
                object["metadata"]["namespace"] = json!("default");
            }
            // What the API server sets on every stored object, which handlers may read.
            object["metadata"]["uid"] = json!("00000000-0000-4000-8000-000000000000");
            object["metadata"]["resourceVersion"] = json!("1");
            object["metadata"]["generation"] = json!(1);
            object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
            if has("reconcile") {
                findings.extend(call_once(
                    dir,
                    script,
                    c,
                    "reconcile",
                    &from,
                    Some(&object),
                    values,
                    synthetic,
                ));
            }
            if has("finalize") {
                // As the controller calls it: the object being deleted, its finalizer still on.
                object["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
                object["metadata"]["finalizers"] = json!([c.finalizer.clone().unwrap_or_default()]);
                findings.extend(call_once(
                    dir,
                    script,
                    c,
                    "finalize",
                    &from,
                    Some(&object),
                    values,
                    synthetic,
                ));
            }
        }
        if has("onStart") {
            findings.extend(call_once(dir, script, c, "onStart", "", None, values, false));
        }
    }
    findings
}

/// One handler call of controller `c` on `object` (`from` says where it came from).
#[allow(clippy::too_many_arguments)] // one call's inputs, passed through from check()
fn call_once(
    dir: &Path,
    script: &Script,
    c: &ControllerSpec,
    handler: &'static str,
    from: &str,
    object: Option<&Value>,
    values: &Value,
    synthetic: bool,
) -> Vec<Finding> {
    let origin = if from.is_empty() { handler.to_owned() } else { format!("{handler} of {from}") };
    let recorder = Arc::new(Recorder::default());
    let input = match object {
        Some(o) => json!({"object": o, "env": {}, "values": values}),
        None => json!({"env": {}, "values": values}),
    };
    let out = script.dispatch_observed(handler, c.index, &input.to_string(), recorder.clone());
    let outcome = match out.map(|v| ReconcileOutcome::from_output(handler, v)) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => {
            return vec![Finding::error(
                handler,
                format!("operator {:?}: {origin} returned an output the controller refuses: {e}", c.name),
                None,
            )];
        }
        Err(e) => return vec![failed(dir, c, &origin, &e, synthetic)],
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
                    "operator {:?} applies {} ({origin}), but {} is not in its .manages(...): the controller refuses the write, and the generated RBAC would",
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
        let resource = ctop_manifests::rbac::resource_of(script.spec(), &k);
        let name = patch["metadata"]["name"].as_str().unwrap_or_default();
        let granted = c.permissions.iter().any(|rule| {
            let any = |v: &[String], want: &str| v.iter().any(|x| x == "*" || x == want);
            any(&rule.api_groups, k.group())
                && any(&rule.verbs, "patch")
                && any(&rule.resources, &resource)
                && (rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name))
        });
        if !(declared(&k) || k == c.for_ || granted) && reported.insert(("patch", key(&k))) {
            findings.push(Finding::error(
                "rbac",
                format!(
                    "operator {:?} patches {} ({origin}), but {} is neither its kind, nor managed, nor granted patch by a .permission(...)",
                    c.name,
                    describe(patch),
                    key(&k)
                ),
                Some(format!(
                    "add .manages({}) or .permission({{ apiGroups: [{:?}], resources: [{resource:?}], verbs: [\"patch\"] }}) to operator {:?}",
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
                    "operator {:?} calls {how}({short}, ...) ({origin}), but {kind} is not in its .manages, .reads or .watches: nothing of it is cached, so the call always finds nothing, and the generated RBAC grants no read of it",
                    c.name
                ),
                Some(format!("add .reads({short}) to operator {:?} (or .manages({short}) if it creates them)", c.name)),
            ));
        }
    }
    findings
}

/// A handler that threw: an error on a sample (`ctop dev` applies it and would fail the
/// same way), a warning on a bare object (the script may rightly need a spec).
fn failed(dir: &Path, c: &ControllerSpec, origin: &str, e: &VmError, synthetic: bool) -> Finding {
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
                "add a sample {} to samples/ so that ctop check runs its handlers on a real spec",
                c.for_.kind
            ),
        )
    } else {
        (Severity::Error, format!("fix {origin}; `ctop dev` applies the same sample"))
    };
    Finding {
        severity,
        location,
        code: origin.split(' ').next().unwrap_or(origin).into(),
        message: format!("operator {:?}: {origin} threw: {e}", c.name),
        help: Some(help),
    }
}
