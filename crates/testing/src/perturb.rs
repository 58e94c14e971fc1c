//! The oracles that act on the world, run after a test's last step: [`idempotence`],
//! [`failed_apply`] and [`deletion`] (see [`crate::oracles::Oracle`] for what each
//! promises). Each returns the violations it found and notes on what it could not
//! exercise; an `Err` is a failure of the harness itself (the API refused a test write).

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

use crate::format::ObjectRef;
use crate::golden::{Detail, normalize};
use crate::oracles::{Oracle, Violation, changed_paths};
use crate::settle::{Quiet, human, settle};
use crate::state::{Snapshot, describe, identity};
use crate::world::World;

/// The annotation a poke sets: a change of the object that no script reads.
pub const POKE: &str = "ctop.dev/test-poke";

/// What an oracle found.
#[derive(Debug, Default)]
pub struct Found {
    /// What does not hold.
    pub violations: Vec<Violation>,
    /// What could not be exercised, and why.
    pub notes: Vec<String>,
    /// The world did not become quiet (a violation says so): later oracles would only wait.
    pub busy: bool,
}

fn violation(oracle: Oracle, message: String) -> Violation {
    Violation { oracle, message }
}

/// How a test names the object `o`.
pub fn reference(o: &Value) -> ObjectRef {
    let (api_version, kind, ns, name) = identity(o);
    ObjectRef {
        api_version: Some(api_version.to_owned()),
        kind: kind.to_owned(),
        namespace: (!ns.is_empty()).then(|| ns.to_owned()),
        name: name.to_owned(),
    }
}

fn key(o: &Value) -> (String, String, String, String) {
    let (a, k, n, m) = identity(o);
    (a.to_owned(), k.to_owned(), n.to_owned(), m.to_owned())
}

fn rv(o: &Value) -> &str {
    o["metadata"]["resourceVersion"].as_str().unwrap_or_default()
}

fn uid(o: &Value) -> &str {
    o["metadata"]["uid"].as_str().unwrap_or_default()
}

/// The snapshot now and the primaries in it (owned).
pub async fn current(world: &World) -> Result<(Snapshot, Vec<Value>), String> {
    let snapshot = world.snapshot().await?;
    let handled: BTreeSet<_> = world.recording().last_by_object().into_keys().collect();
    let primaries =
        snapshot.primaries(world.spec(), &handled, &world.applied()).into_iter().cloned().collect::<Vec<_>>();
    Ok((snapshot, primaries))
}

/// Set the poke annotation of `o` to `n`; the object as written.
async fn poke(world: &World, o: &Value, n: u32) -> Result<Value, String> {
    world.patch(&reference(o), &json!({"metadata": {"annotations": {POKE: n.to_string()}}}), false).await
}

/// [`Oracle::Idempotence`]: poke every primary, let the operator run, and check that it
/// wrote nothing but the pokes.
pub async fn idempotence(world: &World, q: Quiet) -> Result<Found, String> {
    let mut found = Found::default();
    let (before, primaries) = current(world).await?;
    if primaries.is_empty() {
        found.notes.push("idempotence: no object to reconcile".into());
        return Ok(found);
    }
    let first_call = world.recording().started();
    let mut poked = BTreeMap::new();
    for p in &primaries {
        let written = poke(world, p, 1).await?;
        poked.insert(key(p), rv(&written).to_owned());
    }
    if let Err(e) = settle(world, q).await {
        found.violations.push(violation(Oracle::Idempotence, format!("after a change of nothing, {e}")));
        found.busy = true;
        return Ok(found);
    }
    let after = world.snapshot().await?;
    let calls = world.recording().since(first_call);
    for p in &primaries {
        let (api_version, kind, ns, name) = identity(p);
        let ran = calls.iter().any(|c| {
            c.handler == "reconcile"
                && c.object.as_ref().is_some_and(|o| {
                    o.api_version == api_version && o.kind == kind && o.namespace == ns && o.name == name
                })
        });
        if !ran {
            found.notes.push(format!(
                "idempotence: {} was not reconciled again after an annotation changed (a predicate?)",
                describe(p)
            ));
        }
    }
    let old: BTreeMap<_, _> = before.objects.iter().map(|o| (key(o), o)).collect();
    for o in &after.objects {
        let k = key(o);
        match old.get(&k) {
            None => found.violations.push(violation(
                Oracle::Idempotence,
                format!("a reconcile with nothing changed created {}", describe(o)),
            )),
            Some(b) if rv(b) != rv(o) && poked.get(&k).is_none_or(|r| r != rv(o)) => {
                let mut paths = changed_paths(&normalize(b, Detail::Full), &normalize(o, Detail::Full), 6);
                paths.retain(|p| !p.contains(POKE));
                let what = if paths.is_empty() {
                    "rewrote it unchanged".to_owned()
                } else {
                    format!("changed {}", paths.join(", "))
                };
                found.violations.push(violation(
                    Oracle::Idempotence,
                    format!("a reconcile with nothing changed wrote {}: {what}", describe(o)),
                ));
            }
            Some(_) => {}
        }
    }
    let new: BTreeSet<_> = after.objects.iter().map(key).collect();
    for o in &before.objects {
        if !new.contains(&key(o)) {
            found.violations.push(violation(
                Oracle::Idempotence,
                format!("a reconcile with nothing changed deleted {}", describe(o)),
            ));
        }
    }
    Ok(found)
}

/// A copy of `child` under another name, as the applier would have left it from an
/// earlier reconcile: the same labels and owner, no server-set fields.
fn stale_copy(child: &Value) -> Value {
    let mut copy = child.clone();
    if let Some(m) = copy.as_object_mut() {
        m.remove("status");
    }
    if let Some(meta) = copy["metadata"].as_object_mut() {
        for k in ["uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "finalizers"]
        {
            meta.remove(k);
        }
        let name = meta.get("name").and_then(Value::as_str).unwrap_or("child");
        let short: String = name.chars().take(50).collect();
        meta.insert("name".into(), Value::from(format!("{}-stale", short.trim_end_matches('-'))));
    }
    if let Some(spec) = copy["spec"].as_object_mut() {
        // Allocated by the API server for the original.
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                p.remove("nodePort");
            }
        }
    }
    copy
}

/// [`Oracle::FailedApplyPrunesNothing`], on the first primary with children: with every
/// server-side apply of one child's kind failing, delete that child (so the next reconcile
/// must apply it) and add a stale child (one a complete apply would prune); the reconcile
/// fails, and must prune nothing. Then the API recovers and the deleted child must come
/// back.
pub async fn failed_apply(world: &World, q: Quiet) -> Result<Found, String> {
    let mut found = Found::default();
    let (before, primaries) = current(world).await?;
    let target = primaries.iter().find_map(|p| {
        let mut children: Vec<&Value> = before
            .children_of(p)
            .into_iter()
            .filter(|c| !c["metadata"]["labels"][ctop_applier::applyset::PART_OF_LABEL].is_null())
            .collect();
        children.sort_by_key(|c| describe(c));
        children.first().map(|c| {
            (p.clone(), (*c).clone(), before.children_of(p).into_iter().cloned().collect::<Vec<_>>())
        })
    });
    let Some((parent, child, siblings)) = target else {
        found.notes.push("failed-apply-prunes-nothing: no primary has children to apply".into());
        return Ok(found);
    };
    let (api_version, kind, ..) = identity(&child);
    let plural = world.kind(Some(api_version), kind).await?.ar.plural;
    world.sim().faults().add(ctop_kubesim::FaultRule {
        verb: Some("apply".into()),
        resource: Some(plural.clone()),
        code: 500,
        count: 0,
        latency_ms: 0,
    });
    world.delete(&reference(&child)).await?;
    let stale = match world.create(&stale_copy(&child)).await {
        Ok(s) => Some(s),
        Err(e) => {
            found.notes.push(format!("failed-apply-prunes-nothing: no stale child could be made ({e})"));
            None
        }
    };
    let busy = settle(world, q).await.err();
    found.busy = busy.is_some();
    let during = world.snapshot().await?;
    let failing = format!("while every apply of {plural} failed (after {} was deleted)", describe(&child));
    if let Some(e) = &busy {
        found.violations.push(violation(Oracle::FailedApplyPrunesNothing, format!("{failing}, {e}")));
    }
    if let Some(s) = &stale
        && !during.objects.iter().any(|o| uid(o) == uid(s))
    {
        found.violations.push(violation(
            Oracle::FailedApplyPrunesNothing,
            format!("{} pruned {}, a stale child, {failing}", describe(&parent), describe(s)),
        ));
    }
    for s in siblings.iter().filter(|s| uid(s) != uid(&child)) {
        if !during.objects.iter().any(|o| uid(o) == uid(s)) {
            found.violations.push(violation(
                Oracle::FailedApplyPrunesNothing,
                format!("{} deleted its child {} {failing}", describe(&parent), describe(s)),
            ));
        }
    }
    world.clear_faults();
    if let Some(s) = &stale {
        // Gone already if the operator pruned it; that was reported above.
        let _ = world.delete(&reference(s)).await;
    }
    if let Some(p) = during.find(&reference(&parent)) {
        poke(world, p, 2).await?;
    }
    let recovered = settle(world, q).await;
    found.busy |= recovered.is_err();
    let after = world.snapshot().await?;
    if after.find(&reference(&child)).is_none() {
        let why = match &recovered {
            Err(e) => format!(": {e}"),
            Ok(_) => String::new(),
        };
        found.violations.push(violation(
            Oracle::FailedApplyPrunesNothing,
            format!(
                "{} did not apply {} again once the API recovered{why}",
                describe(&parent),
                describe(&child)
            ),
        ));
    }
    Ok(found)
}

/// [`Oracle::DeletionCleansUp`]: delete every primary and let the operator (and the
/// garbage collector) run, for up to `q.timeout` of virtual time; then none of them, none
/// of their children and none of the finalizers the operator adds may be left.
pub async fn deletion(world: &World, q: Quiet) -> Result<Found, String> {
    let mut found = Found::default();
    let (before, primaries) = current(world).await?;
    if primaries.is_empty() {
        found.notes.push("deletion-cleans-up: no object to delete".into());
        return Ok(found);
    }
    let children: Vec<Value> = primaries.iter().flat_map(|p| before.children_of(p)).cloned().collect();
    let mut finalizers = world.recording().finalizers_added();
    finalizers.extend(world.spec().controllers.iter().filter_map(|c| c.finalizer.clone()));
    for p in &primaries {
        if let Err(e) = world.delete(&reference(p)).await
            && !e.contains("not found")
        {
            return Err(format!("cannot delete {}: {e}", describe(p)));
        }
    }
    let start = tokio::time::Instant::now();
    let mut after;
    loop {
        let _ = settle(world, q).await;
        after = world.snapshot().await?;
        let left = primaries.iter().chain(&children).any(|o| after.objects.iter().any(|a| uid(a) == uid(o)));
        if !left || start.elapsed() >= q.timeout {
            break;
        }
        // Let requeues and backoffs of the finalizers run.
        tokio::time::sleep(q.quiet * 4).await;
    }
    let waited = human(start.elapsed());
    for p in &primaries {
        if let Some(a) = after.objects.iter().find(|a| uid(a) == uid(p)) {
            found.violations.push(violation(
                Oracle::DeletionCleansUp,
                format!(
                    "{} is still there {waited} after it was deleted (finalizers: {})",
                    describe(a),
                    a["metadata"]["finalizers"]
                ),
            ));
        }
    }
    for c in &children {
        if let Some(a) = after.objects.iter().find(|a| uid(a) == uid(c)) {
            found.violations.push(violation(
                Oracle::DeletionCleansUp,
                format!("{}, a child of a deleted object, is still there {waited} later", describe(a)),
            ));
        }
    }
    for o in &after.objects {
        let has: Vec<&str> = o["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|f| finalizers.contains(*f))
            .collect();
        if !has.is_empty() && !primaries.iter().any(|p| uid(p) == uid(o)) {
            found.violations.push(violation(
                Oracle::DeletionCleansUp,
                format!(
                    "{} still carries the operator's finalizer {} {waited} after the deletion",
                    describe(o),
                    has.join(", ")
                ),
            ));
        }
    }
    Ok(found)
}
