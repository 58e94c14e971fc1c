//! Running steps on a world: [`Runner::step`] carries one out and lets the world run;
//! after every step that settles, [`Runner::checkpoint`] checks the oracles, the script's
//! invariants and that nothing the fuzzer wrote was deleted behind its back; [`Runner::end`]
//! runs the oracles that act on the world. The first violation ends the run as a
//! [`Failure`], keyed by what failed so that a shrunk run can be told to fail the same way.

use ctop_core::kind_key;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

use super::step::{Action, Step, Then};
use crate::format::ObjectRef;
use crate::oracles::{Oracle, after_step, round_trips};
use crate::perturb;
use crate::record::CallObject;
use crate::settle::{Quiet, advance, pause, settle};
use crate::state::{controller_owner, describe, identity};
use crate::world::World;

/// After API faults, how long the operator is given to recover before the checks: longer
/// than the longest backoff (5 minutes), so that every failed reconcile was retried.
const RECOVERY: Duration = Duration::from_secs(330);

/// Why a run failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The step whose action or check failed (1-based; `0` before the first step): for the
    /// checks at the end ([`Failure::end`]), the last step.
    pub step: usize,
    /// Found by the checks after the last step ([`Runner::end`]), not by a step's own.
    pub end: bool,
    /// What failed, without the details: an oracle's name, `invariant NAME`, `not quiet`,
    /// `invalid object accepted`, `object lost`, `operator stopped`.
    pub key: String,
    /// What failed, in full.
    pub message: String,
}

impl Failure {
    /// When it was found: `after step 3`, `after step 3, in the checks at the end`, `before
    /// the first step`.
    #[must_use]
    pub fn when(&self) -> String {
        match (self.step, self.end) {
            (0, false) => "before the first step".to_owned(),
            (0, true) => "in the checks at the end, with no step run".to_owned(),
            (n, false) => format!("after step {n}"),
            (n, true) => format!("after step {n}, in the checks at the end"),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

/// What one step did, for its trace line.
#[derive(Clone, Debug, PartialEq)]
pub struct Done {
    /// What its action did (`ok`, `refused: ...`, `injected`); `None` when the action itself
    /// is what failed (an invalid object accepted).
    pub outcome: Option<String>,
    /// Its apply created the object: it did not exist before the step.
    pub created: bool,
    /// What failed: the action, or the check after it (a settle that never quiets, an
    /// oracle, an invariant).
    pub failure: Option<Failure>,
}

/// What the runs of a fuzz session counted.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Writes the API server accepted.
    pub accepted: u64,
    /// Writes it refused that were meant to be valid (CEL rules, the script's `validate`).
    pub refused: u64,
    /// Invalid objects, refused as they must be.
    pub invalid_refused: u64,
    /// Deletes of objects that were already gone.
    pub absent: u64,
    /// Faults injected (errors, latency, dropped watches).
    pub faults: u64,
    /// Operator restarts.
    pub restarts: u64,
    /// Checkpoints: the oracles and invariants checked on a quiet world.
    pub checkpoints: u64,
    /// Invariant evaluations (one per invariant per object per checkpoint).
    pub invariant_checks: u64,
}

/// One world and what the run did to it.
pub struct Runner {
    world: World,
    q: Quiet,
    /// Faults were injected (or the operator restarted) since the last checkpoint.
    faulted: bool,
    /// What the fuzzer wrote and did not delete: it must still exist.
    alive: BTreeSet<ObjectRef>,
    /// The oracles `tests/fuzz.yaml` leaves out.
    off: BTreeMap<Oracle, String>,
    /// The operator's children at the last checkpoint, sorted.
    children: Vec<ObjectRef>,
    /// The `(uid, resourceVersion)` of every object whose conversions were checked: an
    /// object unchanged since is not converted again.
    round_tripped: std::collections::HashSet<(String, String)>,
    /// Counts so far.
    pub counts: Counts,
}

fn is_not_found(e: &str) -> bool {
    e.contains("NotFound") || e.contains("not found")
}

fn first_line(e: &str) -> &str {
    e.lines().next().unwrap_or_default()
}

impl Runner {
    /// A runner on a started, settled world.
    pub fn new(world: World, q: Quiet, off: BTreeMap<Oracle, String>) -> Self {
        Self {
            world,
            q,
            faulted: false,
            alive: BTreeSet::new(),
            off,
            children: Vec::new(),
            round_tripped: std::collections::HashSet::new(),
            counts: Counts::default(),
        }
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Stop the world.
    pub async fn stop(self) {
        self.world.stop().await;
    }

    /// Carry out step `n` and let the world run as it says (checking it once quiet): what
    /// its action did, and what failed, the action or the check after it.
    pub async fn step(&mut self, n: usize, step: &Step) -> Done {
        let (outcome, created) = match self.act(n, &step.action).await {
            Ok(done) => done,
            Err(failure) => return Done { outcome: None, created: false, failure: Some(failure) },
        };
        let checked = match step.then {
            Then::Pause(d) => pause(&self.world, d, self.q).await.map_err(|e| Failure {
                step: n,
                end: false,
                key: "not quiet".into(),
                message: e.to_string(),
            }),
            Then::Settle => self.checkpoint(n).await,
        };
        Done { outcome: Some(outcome), created, failure: checked.err() }
    }

    /// The action's outcome, and whether an apply created its object.
    async fn act(&mut self, n: usize, action: &Action) -> Result<(String, bool), Failure> {
        let fail = |key: &str, message: String| Failure { step: n, end: false, key: key.to_owned(), message };
        let w = &self.world;
        let mut created = false;
        let outcome = match action {
            Action::Apply { target, object, .. } => {
                // Whether it is new is what the API server holds, not what the planner wrote:
                // an object the planner deleted may still be finishing its deletion, and a
                // shrunk run may no longer have the step that created it. A lookup that
                // fails says nothing; the object is not called new then.
                let current = w.get(target).await;
                let existed = !matches!(current, Ok(None));
                // An apply to an object being deleted (a Pod in its grace period) changes
                // it and does not stop its deletion, as on a cluster: it is not kept alive.
                let terminating =
                    matches!(&current, Ok(Some(o)) if o["metadata"]["deletionTimestamp"].is_string());
                match w.apply(object).await {
                    Ok(()) => {
                        self.counts.accepted += 1;
                        if !terminating {
                            self.alive.insert(target.clone());
                        }
                        created = !existed;
                        "ok".to_owned()
                    }
                    Err(e) => {
                        self.counts.refused += 1;
                        format!("refused: {}", first_line(&e))
                    }
                }
            }
            Action::Invalid { target, object, path, rule } => match w.apply(object).await {
                Ok(()) => {
                    return Err(fail(
                        "invalid object accepted",
                        format!(
                            "the API server accepted {target} with {path} invalid ({rule}); its schema must refuse it"
                        ),
                    ));
                }
                Err(e) => {
                    self.counts.invalid_refused += 1;
                    format!("refused as it must be: {}", first_line(&e))
                }
            },
            Action::Delete { target } | Action::DeleteChild { target } => {
                self.alive.retain(|r| !r.same_object(target));
                match w.delete(target).await {
                    Ok(()) => "ok".to_owned(),
                    Err(e) if is_not_found(&e) => {
                        self.counts.absent += 1;
                        "already gone".to_owned()
                    }
                    Err(e) => format!("refused: {}", first_line(&e)),
                }
            }
            Action::Meta { target, field, key, value } => {
                let body = json!({"metadata": {*field: {key.as_str(): value}}});
                patch_outcome(w.patch(target, &body, false).await)
            }
            Action::DriftChild { target, key, value } => {
                let body = json!({"metadata": {"labels": {key.as_str(): value}}});
                patch_outcome(w.patch(target, &body, false).await)
            }
            Action::Fault(rule) => {
                w.sim().faults().add(rule.clone());
                self.counts.faults += 1;
                self.faulted = true;
                "injected".to_owned()
            }
            Action::DropWatches => {
                w.sim().faults().drop_watches();
                self.counts.faults += 1;
                self.faulted = true;
                "dropped".to_owned()
            }
            Action::Restart => {
                self.world.restart().await;
                self.counts.restarts += 1;
                self.faulted = true;
                "restarted".to_owned()
            }
        };
        Ok((outcome, created))
    }

    /// Let the world settle and check it: the faults are cleared first (and the operator
    /// given `RECOVERY` if a reconcile failed), then the per-step oracles, the script's
    /// invariants, and that every object the fuzzer wrote and did not delete still exists.
    pub async fn checkpoint(&mut self, n: usize) -> Result<(), Failure> {
        let fail = |key: &str, message: String| Failure { step: n, end: false, key: key.to_owned(), message };
        settle(&self.world, self.q).await.map_err(|e| fail("not quiet", e.to_string()))?;
        if self.faulted {
            self.faulted = false;
            self.world.clear_faults();
            // A failed write after the handler returned (a status, a finalizer) is retried
            // on a backoff too, so the recovery cannot be told from the handler calls alone.
            advance(&self.world, RECOVERY, self.q)
                .await
                .map_err(|e| fail("not quiet", format!("after the faults were cleared, {e}")))?;
        }
        if let Some(why) = self.world.failed() {
            return Err(fail("operator stopped", why));
        }
        self.counts.checkpoints += 1;
        let snapshot = self.world.snapshot().await.map_err(|e| fail("harness", e))?;
        self.children = children_in(self.world.spec(), &snapshot.objects);
        let last_calls = self.world.recording().last_by_object();
        let handled = last_calls.keys().cloned().collect();
        let applied = self.world.applied();
        let primaries = snapshot.primaries(self.world.spec(), &handled, &applied);
        if let Some(v) = after_step(self.world.spec(), &snapshot, &primaries, &last_calls).into_iter().next()
        {
            return Err(fail(&format!("oracle {}", v.oracle), v.message));
        }
        if self.world.spec().converting().next().is_some()
            && !self.off.contains_key(&Oracle::ConversionRoundTrip)
            && let Some(script) = self.world.script().cloned()
        {
            let version = |o: &Value| {
                let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                (text(&o["metadata"]["uid"]), text(&o["metadata"]["resourceVersion"]))
            };
            let objects: Vec<Value> = snapshot
                .objects
                .iter()
                .filter(|o| !self.round_tripped.contains(&version(o)))
                .cloned()
                .collect();
            self.round_tripped.extend(objects.iter().map(version));
            let found = tokio::task::spawn_blocking(move || round_trips(&script, &objects))
                .await
                .map_err(|e| fail("harness", e.to_string()))?;
            if let Some(v) = found.into_iter().next() {
                return Err(fail(&format!("oracle {}", v.oracle), v.message));
            }
        }
        for r in &self.alive {
            if snapshot.find(r).is_none() && self.world.get(r).await.ok().flatten().is_none() {
                return Err(fail(
                    "object lost",
                    format!("{r} was written by the fuzzer and never deleted, but it is gone"),
                ));
            }
        }
        let failed: BTreeSet<CallObject> =
            last_calls.iter().filter(|(_, c)| c.failed().is_some()).map(|(o, _)| o.clone()).collect();
        let checked: Vec<&Value> =
            primaries.into_iter().filter(|p| !failed.contains(&call_object(p))).collect();
        self.invariants(n, &snapshot.objects, &checked).await
    }

    /// The script's invariants, on every primary object not being deleted whose last
    /// reconcile succeeded: an invariant says what a reconcile promises, and a failed one
    /// (reported on the object, which the errors-reported oracle checks) promised nothing.
    async fn invariants(&mut self, n: usize, objects: &[Value], primaries: &[&Value]) -> Result<(), Failure> {
        let spec = self.world.spec().clone();
        for c in spec.controllers.iter().filter(|c| !c.invariants.is_empty()) {
            let kinds: Vec<&ctop_core::KindRef> = std::iter::once(&c.for_)
                .chain(&c.manages)
                .chain(&c.reads)
                .chain(c.watches.iter().map(|w| &w.kind))
                .collect();
            let mut observed: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
            for k in &kinds {
                observed.entry(kind_key(&k.api_version, &k.kind)).or_default();
            }
            for o in objects {
                let (api_version, kind, ..) = identity(o);
                if let Some(list) = observed.get_mut(&kind_key(api_version, kind)) {
                    list.push(o);
                }
            }
            let observed = json!(observed);
            for p in primaries.iter().filter(|p| {
                let (api_version, kind, ..) = identity(p);
                api_version == c.for_.api_version
                    && kind == c.for_.kind
                    && p["metadata"]["deletionTimestamp"].is_null()
            }) {
                // Invariants are a script's (a Δ-controller Operator declares none).
                let Some(script) = self.world.script().cloned() else { break };
                let (object, obs, index) = ((*p).clone(), observed.clone(), c.index);
                let found = tokio::task::spawn_blocking(move || script.invariants(index, &object, &obs))
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|r| r);
                self.counts.invariant_checks += c.invariants.len() as u64;
                match found {
                    Ok(violations) => {
                        if let Some(v) = violations.into_iter().next() {
                            return Err(Failure {
                                step: n,
                                end: false,
                                key: format!("invariant {:?}", v.invariant),
                                message: format!("{}: {}", describe(p), v.message),
                            });
                        }
                    }
                    Err(e) => {
                        return Err(Failure {
                            step: n,
                            end: false,
                            key: "invariant".into(),
                            message: format!("the invariants of {} could not run: {e}", describe(p)),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// After the last step (`n`): a checkpoint, then the oracles that act on the world
    /// (idempotence, a failed apply prunes nothing, deletion cleans up). A failure is one of
    /// the checks at the end ([`Failure::end`]), after step `n`.
    pub async fn end(&mut self, n: usize) -> Result<(), Failure> {
        self.checkpoint(n).await.map_err(|f| Failure { end: true, ..f })?;
        let runs: [Oracle; 3] =
            [Oracle::Idempotence, Oracle::FailedApplyPrunesNothing, Oracle::DeletionCleansUp];
        for oracle in runs.into_iter().filter(|o| !self.off.contains_key(o)) {
            let found = match oracle {
                Oracle::Idempotence => perturb::idempotence(&self.world, self.q).await,
                Oracle::FailedApplyPrunesNothing => perturb::failed_apply(&self.world, self.q).await,
                _ => perturb::deletion(&self.world, self.q).await,
            };
            let fail = |key: String, message: String| Failure { step: n, end: true, key, message };
            match found {
                Ok(found) => {
                    if let Some(v) = found.violations.into_iter().next() {
                        return Err(fail(format!("oracle {}", v.oracle), v.message));
                    }
                }
                Err(e) => {
                    return Err(fail("harness".into(), format!("the {oracle} oracle could not run: {e}")));
                }
            }
        }
        Ok(())
    }

    /// The operator's children at the last checkpoint, sorted (what the planner may delete
    /// or change).
    pub fn children(&self) -> Vec<ObjectRef> {
        self.children.clone()
    }
}

/// The live objects of a kind some controller manages that have a controller owner, sorted.
fn children_in(spec: &ctop_core::OperatorSpec, objects: &[Value]) -> Vec<ObjectRef> {
    let managed = |o: &Value| {
        let (api_version, kind, ..) = identity(o);
        spec.controllers
            .iter()
            .any(|c| c.manages.iter().any(|m| m.api_version == api_version && m.kind == kind))
    };
    let mut out: Vec<ObjectRef> = objects
        .iter()
        .filter(|o| {
            controller_owner(o).is_some() && o["metadata"]["deletionTimestamp"].is_null() && managed(o)
        })
        .map(crate::perturb::reference)
        .collect();
    out.sort();
    out
}

/// How the recording names `o`.
fn call_object(o: &Value) -> CallObject {
    let (api_version, kind, namespace, name) = identity(o);
    CallObject {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

fn patch_outcome(r: Result<Value, String>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) if is_not_found(&e) => "absent".to_owned(),
        Err(e) => format!("refused: {}", first_line(&e)),
    }
}
