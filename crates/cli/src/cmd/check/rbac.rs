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
//! Every RoleBinding or ClusterRoleBinding a handler applies must be bindable by the
//! operator (`bind` on the role it names, from a `.permission(...)`), and every Role or
//! ClusterRole grant nothing the generated RBAC does not hold, or be escalatable: the API
//! server's escalation prevention refuses them otherwise, as kubesim does with `--authz`.
//!
//! A run covers the branches its input takes; a branch that only a cluster's state reaches
//! (an observed child with some status) is not run here.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ctop_core::{ControllerSpec, KindRef, Observer, PolicyRule, ReconcileOutcome};
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
    k.key()
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
    for child in &outcome.children.objects {
        if let Some(finding) =
            rbac_child(script, c, child, &outcome.children.objects, &origin, &describe(child))
            && reported.insert(("escalation", finding.message.clone()))
        {
            findings.push(finding);
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

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// A binding or role the handler applies that the API server would refuse to the
/// operator's generated RBAC (its escalation prevention, `pkg/registry/rbac/*/policybased`):
/// a RoleBinding or ClusterRoleBinding needs `bind` on the role it names, or every
/// permission of that role; a Role or ClusterRole `escalate` on itself or every permission
/// it grants. A role the same reconcile applies (among `siblings`) is known, so binding it
/// passes when the generated RBAC holds its rules; a role of the cluster (`admin`) is not,
/// so binding it needs `bind` from a `.permission(...)` (by name: the least privilege).
/// `escalate` is asked with the object's own name, which server-side apply puts in the URL.
fn rbac_child(
    script: &Script,
    c: &ControllerSpec,
    child: &Value,
    siblings: &[Value],
    origin: &str,
    described: &str,
) -> Option<Finding> {
    if child["apiVersion"] != "rbac.authorization.k8s.io/v1" {
        return None;
    }
    let name = child["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = child["metadata"]["namespace"].as_str();
    let declared = |resource: &str, verb: &str, name: &str| {
        let want = PolicyRule {
            api_groups: vec![RBAC_GROUP.to_owned()],
            resources: vec![resource.to_owned()],
            verbs: vec![verb.to_owned()],
            resource_names: vec![name.to_owned()],
        };
        ctop_manifests::rbac::uncovered(&c.permissions, &[want]).is_empty()
    };
    // What the generated RBAC grants where `child` lives (the default deployment: cluster-wide).
    let held = || {
        let perms =
            ctop_manifests::rbac::permissions(script.spec(), &ctop_manifests::Options::new("operator"));
        let mut held = perms.cluster.clone();
        if let Some(ns) = namespace {
            held.extend(perms.namespaces.get(ns).into_iter().flatten().cloned());
        }
        held
    };
    let rules_of = |role: &Value| -> Option<Vec<PolicyRule>> {
        let urls =
            role["rules"].as_array().is_some_and(|r| r.iter().any(|r| r.get("nonResourceURLs").is_some()));
        let aggregates = role.pointer("/aggregationRule/clusterRoleSelectors").is_some();
        // A rule of URLs or an aggregation the generated RBAC can never hold.
        (!urls && !aggregates).then(|| serde_json::from_value(role["rules"].clone()).unwrap_or_default())
    };
    let permission = |resource: &str, verb: &str, name: &str| {
        format!(
            ".permission({{ apiGroups: [{RBAC_GROUP:?}], resources: [{resource:?}], verbs: [{verb:?}], resourceNames: [{name:?}] }})"
        )
    };
    match child["kind"].as_str()? {
        "RoleBinding" | "ClusterRoleBinding" => {
            let role_kind = child["roleRef"]["kind"].as_str().unwrap_or_default();
            let role = child["roleRef"]["name"].as_str().unwrap_or_default();
            let resource = match role_kind {
                "ClusterRole" => "clusterroles",
                "Role" => "roles",
                _ => return None,
            };
            if declared(resource, "bind", role) {
                return None;
            }
            let sibling = siblings.iter().find(|s| {
                s["kind"] == role_kind
                    && s["metadata"]["name"] == role
                    && (role_kind == "ClusterRole"
                        || s["metadata"]["namespace"] == child["metadata"]["namespace"])
            });
            if let Some(rules) = sibling.and_then(rules_of)
                && ctop_manifests::rbac::uncovered(&held(), &rules).is_empty()
            {
                return None;
            }
            Some(Finding::error(
                "rbac",
                format!(
                    "operator {:?} applies {described} ({origin}), which binds {role_kind} {role:?}: the API server refuses it (\"is attempting to grant RBAC permissions not currently held\") unless the operator may bind that role, and no .permission(...) grants bind on it",
                    c.name
                ),
                Some(format!("add {} to operator {:?}", permission(resource, "bind", role), c.name)),
            ))
        }
        kind @ ("Role" | "ClusterRole") => {
            let resource = if kind == "Role" { "roles" } else { "clusterroles" };
            if declared(resource, "escalate", name) {
                return None;
            }
            let urls = child["rules"]
                .as_array()
                .is_some_and(|rules| rules.iter().any(|r| r.get("nonResourceURLs").is_some()));
            let aggregates = child.pointer("/aggregationRule/clusterRoleSelectors").is_some();
            let wanted: Vec<PolicyRule> = serde_json::from_value(child["rules"].clone()).unwrap_or_default();
            let missing = ctop_manifests::rbac::uncovered(&held(), &wanted);
            if missing.is_empty() && rules_of(child).is_some() {
                return None;
            }
            let mut lacking: Vec<String> = missing
                .iter()
                .map(|m| {
                    let group = m.api_groups.join("");
                    let resource = m.resources.join("");
                    let on = if group.is_empty() { resource } else { format!("{resource}.{group}") };
                    format!("{} {on}", m.verbs.join(""))
                })
                .collect();
            lacking.dedup();
            if urls {
                lacking.push("non-resource URLs".to_owned());
            }
            if aggregates {
                lacking.push("an aggregationRule (cluster-admin only)".to_owned());
            }
            let shown: Vec<&str> = lacking.iter().take(4).map(String::as_str).collect();
            let more = lacking.len().saturating_sub(shown.len());
            let lacks = format!(
                " ({}{})",
                shown.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() }
            );
            Some(Finding::error(
                "rbac",
                format!(
                    "operator {:?} applies {described} ({origin}), which grants permissions the generated RBAC does not hold{lacks}: the API server refuses it unless the operator may escalate it",
                    c.name
                ),
                Some(format!(
                    "add {} to operator {:?}, or declare the permissions it grants",
                    permission(resource, "escalate", name),
                    c.name
                )),
            ))
        }
        _ => None,
    }
}

/// A handler that threw:/// A handler that threw: an error on a sample (`ctop dev` applies it and would fail the
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
