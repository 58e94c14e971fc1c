//! One Δ controller at run time, level-based with incremental catch-up: each call of
//! [`Runner::sync`] lists every source kind from the caches, compares it with the snapshot
//! it kept (object → `resourceVersion`), feeds the differences to the [`Pipeline`] as
//! [`Delta`]s and so keeps the target view current. A new process starts from empty
//! snapshots, so its first sync sees every object: what changed while it was down is caught
//! up, whatever events it missed.
//!
//! Costs per sync: O(objects of the source kinds) to compare (the caches' JSON is parsed),
//! plus the pipeline's work on what changed (see the crate's cost model).

use std::collections::{BTreeMap, VecDeque};

use ctop_core::Observer;
use serde_json::{Value, json};

use super::model::{Controller, Source, SourceType, Target};
use crate::pipeline::{Delta, DeltaType, Pipeline};

/// How many errors a controller's status keeps (`lastErrors`), as Δ-controller does.
pub(super) const KEPT_ERRORS: usize = 10;

/// The name of a OneShot source's trigger object, as Δ-controller names it.
const ONE_SHOT_NAME: &str = "one-shot-trigger";

/// An object's namespace and name.
pub(super) type Key = (String, String);

/// A running Δ controller: its pipeline, the snapshot of each source, its recent errors.
#[derive(Debug)]
pub(super) struct Runner {
    pub(super) name: String,
    pub(super) target: Target,
    /// The sources fed to the pipeline (Watcher and OneShot), in the pipeline's order.
    sources: Vec<Source>,
    pipeline: Pipeline,
    /// Per source: key → `resourceVersion` of what the pipeline has.
    snapshots: Vec<BTreeMap<Key, String>>,
    /// The last errors, newest last.
    pub(super) errors: VecDeque<String>,
    /// Whether the last sync failed somewhere.
    pub(super) failing: bool,
    /// Errors noted for the first time since [`Runner::take_new_errors`].
    new_errors: Vec<String>,
}

impl Runner {
    /// The runner of a controller that parsed; `Err` names the controller, stage and
    /// expression of a pipeline that does not.
    pub(super) fn new(c: &Controller) -> Result<Runner, String> {
        let target = c.target.clone().ok_or_else(|| format!("controller {:?}: no target", c.name))?;
        let sources: Vec<Source> =
            c.sources.iter().filter(|s| s.type_ != SourceType::Periodic).cloned().collect();
        let names: Vec<&str> = sources.iter().map(|s| s.kind.kind.as_str()).collect();
        let pipeline = Pipeline::new(&c.pipeline, &names)
            .map_err(|e| format!("controller {:?}: {e}", c.name))?
            .with_target(&target.kind.api_version, &target.kind.kind);
        Ok(Runner {
            name: c.name.clone(),
            target,
            snapshots: vec![BTreeMap::new(); sources.len()],
            sources,
            pipeline,
            errors: VecDeque::new(),
            failing: false,
            new_errors: Vec::new(),
        })
    }

    /// The target view as it stands.
    pub(super) fn view(&self) -> impl Iterator<Item = &Value> {
        self.pipeline.target_objects()
    }

    /// The kinds this runner reads from the caches.
    pub(super) fn watched(&self) -> impl Iterator<Item = &ctop_core::KindRef> {
        self.sources.iter().filter(|s| s.type_ == SourceType::Watcher).map(|s| &s.kind)
    }

    /// Notes an error: an error already kept moves to the end (newest) instead of being
    /// kept twice, and is logged only the first time.
    pub(super) fn error(&mut self, message: String) {
        self.failing = true;
        match self.errors.iter().position(|e| *e == message) {
            Some(i) => {
                self.errors.remove(i);
            }
            None => {
                tracing::warn!(controller = self.name, error = message, "declarative controller error");
                self.new_errors.push(message.clone());
            }
        }
        self.errors.push_back(message);
        while self.errors.len() > KEPT_ERRORS {
            self.errors.pop_front();
        }
    }

    /// The errors noted for the first time since the last call (each becomes an Event).
    pub(super) fn take_new_errors(&mut self) -> Vec<String> {
        std::mem::take(&mut self.new_errors)
    }

    /// Brings the view up to date with the caches. A failing event is noted and left out of
    /// the snapshot (the view stays as it was before it), so it is tried again next time.
    pub(super) fn sync(&mut self, observer: &dyn Observer, started: &str) {
        self.failing = false;
        for i in 0..self.sources.len() {
            let current = match self.current(i, observer, started) {
                Ok(c) => c,
                Err(e) => {
                    self.error(format!("controller {:?}: {e}", self.name));
                    continue;
                }
            };
            let mut deltas = Vec::new();
            for (key, (rv, obj)) in &current {
                match self.snapshots[i].get(key) {
                    Some(old) if old == rv => {}
                    Some(_) => deltas.push((key.clone(), Some(rv.clone()), DeltaType::Updated, obj.clone())),
                    None => deltas.push((key.clone(), Some(rv.clone()), DeltaType::Added, obj.clone())),
                }
            }
            for key in self.snapshots[i].keys().filter(|k| !current.contains_key(*k)) {
                let gone = json!({"metadata": {"namespace": key.0, "name": key.1}});
                deltas.push((key.clone(), None, DeltaType::Deleted, gone));
            }
            let source = self.sources[i].kind.kind.clone();
            for (key, rv, kind, object) in deltas {
                match self.pipeline.evaluate(&source, Delta { kind, object }) {
                    Ok(_) => match rv {
                        Some(rv) => {
                            self.snapshots[i].insert(key, rv);
                        }
                        None => {
                            self.snapshots[i].remove(&key);
                        }
                    },
                    Err(e) => self.error(format!("controller {:?}: {e}", self.name)),
                }
            }
        }
    }

    /// The objects source `i` holds now: key → (`resourceVersion`, object).
    fn current(
        &self,
        i: usize,
        observer: &dyn Observer,
        started: &str,
    ) -> Result<BTreeMap<Key, (String, Value)>, String> {
        let s = &self.sources[i];
        let mut out = BTreeMap::new();
        if s.type_ == SourceType::OneShot {
            let trigger = json!({
                "apiVersion": s.kind.api_version, "kind": s.kind.kind,
                "metadata": {"name": ONE_SHOT_NAME, "labels": {"dcontroller.io/last-triggered": started}},
            });
            out.insert((String::new(), ONE_SHOT_NAME.to_string()), (started.to_string(), trigger));
            return Ok(out);
        }
        let key = s.kind.key();
        let text = observer.list(&key).ok_or_else(|| {
            format!(
                "source {}: this ctop process does not watch {key} (it was started with another version of the \
                 Operator; restart it)",
                s.kind.kind
            )
        })?;
        let items: Vec<Value> = serde_json::from_str(&text)
            .map_err(|e| format!("source {}: the cache's list does not read: {e}", s.kind.kind))?;
        for obj in items {
            let meta = &obj["metadata"];
            let namespace = meta["namespace"].as_str().unwrap_or_default();
            if s.namespace.as_deref().is_some_and(|n| n != namespace) {
                continue;
            }
            if let Some((_, sel)) = &s.label_selector
                && !sel.matches(meta.get("labels"))
            {
                continue;
            }
            let Some(name) = meta["name"].as_str() else { continue };
            let rv = meta["resourceVersion"].as_str().map_or_else(|| obj.to_string(), str::to_owned);
            out.insert((namespace.to_string(), name.to_string()), (rv, obj));
        }
        Ok(out)
    }
}
