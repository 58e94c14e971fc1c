//! [`OperatorHandlers`]: an `Operator` served to ctop's controller as [`Handlers`].
//!
//! A reconcile of the Operator object brings every Δ controller's view up to date
//! ([`super::runner`]) and answers with the Updater targets as children, the Patcher
//! targets as foreign applies ([`super::outputs`]) and the status ([`super::status`]).
//! Any event on a source kind maps to the Operator object; `onStart` applies the Operator
//! document itself, so that running a file creates (or updates) its object.
//!
//! The runners live here, built from the Operator object as the cluster has it and rebuilt
//! when its uid or its `spec` changes: one Operator's state, dropped with it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use ctop_core::{
    Condition, ConditionStatus, EventRecord, EventType, FailureKind, FinalizeOutcome, ForeignApply,
    HandlerCall, HandlerError, HandlerFuture, Handlers, MapOutcome, MapRequest, ObjectReference,
    OperatorSpec, PruneMode, ReconcileOutcome, StartOutcome,
};
use serde_json::{Map, Value};

use super::error::OperatorError;
use super::model::{Operator, TargetType};
use super::outputs::{key_of, patcher_applies, updater_children};
use super::runner::{Key, Runner};
use super::spec::operator_spec;
use super::status::{self, ControllerStatus};

/// An `Operator` as [`Handlers`] for `ctop_controller::run`.
pub struct OperatorHandlers {
    operator: Operator,
    spec: OperatorSpec,
    state: Arc<Mutex<Option<State>>>,
}

/// The runners of the Operator object the cluster has.
struct State {
    uid: String,
    spec: Value,
    /// Started at (the OneShot triggers' label).
    started: String,
    /// Whether the controllers that cannot run were told as Events.
    announced: bool,
    slots: Vec<Slot>,
}

/// The children a controller that cannot run would make.
#[derive(Clone)]
enum Makes {
    /// None: its target is a Patcher.
    Nothing,
    /// Its Updater target's.
    Kind(ctop_core::KindRef),
    /// Its target does not read.
    Unknown,
}

/// One Δ controller: running, or why it cannot.
enum Slot {
    Running(Box<Runner>),
    Broken {
        name: String,
        message: String,
        /// What children it would make.
        makes: Makes,
    },
}

impl OperatorHandlers {
    /// The handlers of `operator`.
    pub fn new(operator: Operator) -> Result<OperatorHandlers, OperatorError> {
        let spec = operator_spec(&operator)?;
        Ok(OperatorHandlers { operator, spec, state: Arc::new(Mutex::new(None)) })
    }

    /// The handlers of `operator` as the cluster has it (a manager of Operator objects,
    /// `ctop run --operators`): the object is not applied at start (`onStart` is not
    /// declared), so its fields stay its author's alone, and no `create` permission is asked.
    pub fn of_cluster(operator: Operator) -> Result<OperatorHandlers, OperatorError> {
        let mut handlers = OperatorHandlers::new(operator)?;
        for c in &mut handlers.spec.controllers {
            c.handlers.retain(|h| h != "onStart");
            c.permissions.retain(|p| !(p.resources == ["operators"] && p.verbs == ["create"]));
        }
        Ok(handlers)
    }

    /// The Operator they serve.
    pub fn operator(&self) -> &Operator {
        &self.operator
    }
}

fn invalid(message: String) -> HandlerError {
    HandlerError::new(FailureKind::Invalid, message)
}

impl Handlers for OperatorHandlers {
    fn spec(&self) -> &OperatorSpec {
        &self.spec
    }

    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        let state = Arc::clone(&self.state);
        let spec = self.spec.clone();
        // Listing the sources and running the pipelines is CPU work in proportion to the
        // caches: off the async threads, as a script's call is, so the controller's other
        // tasks (watches, probes, other objects) go on meanwhile.
        Box::pin(async move {
            let work = tokio::task::spawn_blocking(move || {
                let object: Value = serde_json::from_str(call.object.as_deref().unwrap_or("null"))
                    .map_err(|e| invalid(format!("the Operator object does not read: {e}")))?;
                let mut guard =
                    state.lock().map_err(|_| invalid("the Operator's state was poisoned".into()))?;
                Ok(reconcile(&mut guard, &spec, &object, call.observer.as_ref()))
            });
            match work.await {
                Ok(result) => result,
                Err(e) => Err(HandlerError::new(
                    FailureKind::Crash,
                    format!("the Operator's reconcile panicked: {e}"),
                )),
            }
        })
    }

    fn finalize(&self, _: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        Box::pin(async { Err(invalid("an Operator has no finalize handler".into())) })
    }

    fn on_start(&self, _: HandlerCall) -> HandlerFuture<StartOutcome> {
        let mut object = self.operator.object.clone();
        if let Some(map) = object.as_object_mut() {
            map.remove("status");
        }
        let manager = self.operator.name.clone();
        Box::pin(async move {
            Ok(StartOutcome { foreign_applies: vec![ForeignApply { manager, object }], ..Default::default() })
        })
    }

    fn map(&self, _: usize, _: HandlerCall) -> HandlerFuture<MapOutcome> {
        let name = self.operator.name.clone();
        Box::pin(async move { Ok(MapOutcome { requests: vec![MapRequest { name, namespace: None }] }) })
    }
}

/// One reconcile of the Operator object.
fn reconcile(
    state: &mut Option<State>,
    spec: &OperatorSpec,
    object: &Value,
    observer: &dyn ctop_core::Observer,
) -> ReconcileOutcome {
    let uid = object["metadata"]["uid"].as_str().unwrap_or_default().to_string();
    let op_spec = object.get("spec").cloned().unwrap_or(Value::Null);
    if state.as_ref().is_none_or(|s| s.uid != uid || s.spec != op_spec) {
        observer.nondeterministic("clock");
        *state = Some(build(object, spec, uid.clone(), op_spec, now()));
    }
    let Some(state) = state.as_mut() else { return ReconcileOutcome::default() };
    let operator = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let mut out = ReconcileOutcome::default();
    let mut statuses = Vec::new();
    // Updater children by kind: what the running controllers give now.
    let mut given: BTreeMap<ctop_core::KindRef, BTreeSet<Key>> = BTreeMap::new();
    // Kinds whose former children stay (a controller of that kind cannot tell what it would
    // give); `None` in it: a broken controller of an unknown kind, so every child stays.
    let mut kept: Vec<Option<ctop_core::KindRef>> = Vec::new();
    for slot in &mut state.slots {
        let runner = match slot {
            Slot::Broken { name, message, makes } => {
                if !state.announced {
                    out.events.push(warning("InvalidController", message));
                }
                match makes {
                    Makes::Nothing => {}
                    Makes::Kind(k) => kept.push(Some(k.clone())),
                    Makes::Unknown => kept.push(None),
                }
                statuses.push(ControllerStatus {
                    name: name.clone(),
                    ready: ConditionStatus::False,
                    message: message.clone(),
                    errors: vec![message.clone()],
                });
                continue;
            }
            Slot::Running(runner) => runner,
        };
        runner.sync(observer, &state.started);
        let kind = runner.target.kind.clone();
        match runner.target.type_ {
            TargetType::Updater => {
                let (children, refused) = updater_children(runner.view(), &kind, &uid, observer);
                for e in refused {
                    runner.error(format!("controller {:?}: {e}", runner.name));
                }
                given.entry(kind.clone()).or_default().extend(children.iter().map(key_of));
                out.children.objects.extend(children);
            }
            TargetType::Patcher => {
                let manager = format!("{operator}-{}", runner.name);
                match patcher_applies(runner.view(), &kind, &manager, observer) {
                    Ok(applies) => out.foreign_applies.extend(applies),
                    Err(e) => runner.error(format!("controller {:?}: {e}", runner.name)),
                }
            }
        }
        out.events.extend(runner.take_new_errors().iter().map(|e| warning("ControllerFailed", e)));
        if runner.failing && runner.target.type_ == TargetType::Updater {
            kept.push(Some(kind.clone()));
        }
        let (ready, message) = match (runner.failing, runner.errors.back()) {
            (true, Some(e)) => (ConditionStatus::Unknown, e.clone()),
            _ => (ConditionStatus::True, String::new()),
        };
        statuses.push(ControllerStatus {
            name: runner.name.clone(),
            ready,
            message,
            errors: runner.errors.iter().cloned().collect(),
        });
    }
    state.announced = true;
    // A controller that cannot run, or failed on some object, may have made children its
    // view lacks now (after a restart, a failing object's output is not in it): keep the
    // children of its kind, and delete only those of other kinds that the running
    // controllers no longer give.
    if !kept.is_empty() {
        out.children.prune = PruneMode::Keep;
        out.children.deletes = stale_children(&kept, &given, &uid, observer);
    }
    let mut clock = || {
        observer.nondeterministic("clock");
        now()
    };
    let controllers = status::controllers(&statuses, &object["status"], &mut clock);
    let mut status = Map::new();
    status.insert("controllers".into(), controllers);
    out.status = Some(status);
    let not_ready: Vec<&str> =
        statuses.iter().filter(|s| s.ready != ConditionStatus::True).map(|s| s.name.as_str()).collect();
    out.conditions.push(if not_ready.is_empty() {
        Condition {
            type_: "Ready".into(),
            status: ConditionStatus::True,
            reason: "Ready".into(),
            message: format!("{} controllers ready", statuses.len()),
        }
    } else {
        Condition {
            type_: "Ready".into(),
            status: ConditionStatus::False,
            reason: "NotReady".into(),
            message: format!("controllers not ready: {} (see status.controllers)", not_ready.join(", ")),
        }
    });
    out
}

/// The runners of an Operator object. A controller whose kinds this process does not
/// watch (the object was changed after it started) cannot run until it restarts.
fn build(object: &Value, spec: &OperatorSpec, uid: String, op_spec: Value, started: String) -> State {
    let slots = match Operator::from_value(object.clone()) {
        Err(e) => vec![Slot::Broken { name: "operator".into(), message: e.to_string(), makes: Makes::Unknown }],
        Ok(op) => op
            .controllers
            .iter()
            .map(|c| {
                let makes = match &c.target {
                    Some(t) if t.type_ == TargetType::Patcher => Makes::Nothing,
                    Some(t) => Makes::Kind(t.kind.clone()),
                    None => Makes::Unknown,
                };
                let broken = |message: String| Slot::Broken { name: c.name.clone(), message, makes: makes.clone() };
                if let Some(message) = &c.broken {
                    return broken(message.clone());
                }
                let runner = match Runner::new(c) {
                    Ok(r) => r,
                    Err(message) => return broken(message),
                };
                let declared = spec.controllers.first();
                let watched = |k: &ctop_core::KindRef| {
                    declared.is_some_and(|d| d.reads.contains(k) || d.manages.contains(k))
                };
                if let Some(k) = runner.watched().chain(std::iter::once(&runner.target.kind)).find(|k| !watched(k)) {
                    return broken(format!(
                        "controller {:?}: {} is not declared by this ctop process (the Operator changed since it \
                         started; restart it)",
                        c.name,
                        k.key()
                    ));
                }
                Slot::Running(Box::new(runner))
            })
            .collect(),
    };
    State { uid, spec: op_spec, started, slots, announced: false }
}

/// The children of the Operator (`uid`) of the kinds in `given` that the running
/// controllers no longer give, but for the `kept` kinds (with a `None` among them: none).
fn stale_children(
    kept: &[Option<ctop_core::KindRef>],
    given: &BTreeMap<ctop_core::KindRef, BTreeSet<Key>>,
    uid: &str,
    observer: &dyn ctop_core::Observer,
) -> Vec<ObjectReference> {
    if kept.iter().any(Option::is_none) {
        return Vec::new();
    }
    let kept: Vec<&ctop_core::KindRef> = kept.iter().flatten().collect();
    let mut out = Vec::new();
    for (kind, keys) in given.iter().filter(|(k, _)| !kept.contains(k)) {
        let Some(Ok(live)) = observer.list(&kind.key()).map(|t| serde_json::from_str::<Vec<Value>>(&t))
        else {
            continue;
        };
        for obj in &live {
            let owned = obj["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|l| l.iter().any(|o| o["uid"].as_str() == Some(uid)));
            let key = key_of(obj);
            if owned && !keys.contains(&key) {
                out.push(ObjectReference {
                    api_version: Some(kind.api_version.clone()),
                    kind: Some(kind.kind.clone()),
                    name: Some(key.1),
                    namespace: Some(key.0).filter(|n| !n.is_empty()),
                    uid: None,
                });
            }
        }
    }
    out
}

/// A Warning Event about the Operator.
fn warning(reason: &str, message: &str) -> EventRecord {
    EventRecord { type_: EventType::Warning, reason: reason.into(), message: message.into(), regarding: None }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
