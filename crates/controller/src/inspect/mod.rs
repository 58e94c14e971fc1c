//! What a running operator shows about its objects: each primary's health and `Ready`, its
//! reconcile history (see `history`), the tree of its children with their health, and its
//! events. `ctop trace` and the operator's web page read it; so can `curl`.
//!
//! Start with [`Inspector`]: one per run (it lives in [`Health`](crate::health::Health)),
//! where every controller registers when it starts. [`router`] serves it as JSON under
//! `/api/` (see [`api`] for the routes), with a stream of changes as server-sent events, for
//! the operator's page; the health port serves the part that needs no request to the API
//! server ([`api::history_router`]). [`tree::build`] reads an object's tree from the cluster alone, which
//! `ctop trace` falls back to when no operator answers.

pub mod api;
pub mod tree;

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use ctop_health::Health;
use kube::api::{Api, ListParams};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::broadcast;

pub use api::router;

use crate::context::Ctx;
use crate::history::{Ended, Reconcile};
use crate::object::split_key;

/// Changes buffered per subscriber of [`Inspector::subscribe`] (a slow one skips some and
/// reads the state again).
const CHANGES: usize = 1024;

/// Events listed per object.
const MAX_EVENTS: usize = 20;

/// The registry of a run's controllers, for what they show (see the module docs). Cheap to
/// clone; a stopped controller drops out by itself.
#[derive(Clone)]
pub struct Inspector {
    inner: Arc<Inner>,
}

struct Inner {
    controllers: Mutex<BTreeMap<String, Weak<Ctx>>>,
    changes: broadcast::Sender<Changed>,
}

impl Default for Inspector {
    fn default() -> Self {
        Self {
            inner: Arc::new(Inner { controllers: Mutex::default(), changes: broadcast::channel(CHANGES).0 }),
        }
    }
}

impl std::fmt::Debug for Inspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inspector").field("controllers", &self.inner.controllers.lock().len()).finish()
    }
}

/// An object whose history grew (a reconcile ended), on [`Inspector::subscribe`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    /// The controller.
    pub controller: String,
    /// The object's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

/// Where one controller's memory reports its objects' changes (see `Memory::with_history`).
#[derive(Clone)]
pub(crate) struct ChangeTx {
    controller: Arc<str>,
    namespaced: bool,
    tx: broadcast::Sender<Changed>,
}

impl ChangeTx {
    /// Tell the subscribers that the object at `key` changed.
    pub(crate) fn send(&self, key: &str) {
        if self.tx.receiver_count() == 0 {
            return;
        }
        let (namespace, name) = split_key(key, self.namespaced);
        let _ = self.tx.send(Changed {
            controller: self.controller.to_string(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
        });
    }
}

/// The objects of every controller, for the overview (`GET /api/objects`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    /// One entry per controller, by name.
    pub controllers: Vec<ControllerObjects>,
}

/// One controller and its primary objects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerObjects {
    /// The controller's name.
    pub name: String,
    /// The primary kind's apiVersion.
    pub api_version: String,
    /// The primary kind.
    pub kind: String,
    /// Whether the kind is namespaced.
    pub namespaced: bool,
    /// Reconciles kept per object (0: no history).
    pub history: usize,
    /// Its objects, by namespace and name.
    pub objects: Vec<Summary>,
}

/// A condition as the summaries show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionSummary {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Its reason.
    #[serde(default)]
    pub reason: String,
    /// Its message.
    #[serde(default)]
    pub message: String,
}

/// One primary object at a glance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its generation.
    #[serde(default)]
    pub generation: Option<i64>,
    /// The generation its status reports on.
    #[serde(default)]
    pub observed_generation: Option<i64>,
    /// Its health: kstatus' rules (its `Ready` condition and `observedGeneration`), but
    /// `Failed` with the `Reconciled` condition's reason while its reconciles fail.
    pub health: Health,
    /// Its `Ready` condition.
    #[serde(default)]
    pub ready: Option<ConditionSummary>,
    /// Its `Reconciled` condition.
    #[serde(default)]
    pub reconciled: Option<ConditionSummary>,
    /// It is being deleted.
    #[serde(default)]
    pub deleting: bool,
    /// Its last reconcile: when it started (RFC 3339).
    #[serde(default)]
    pub last_reconcile: Option<String>,
    /// How its last reconcile ended.
    #[serde(default)]
    pub last_ended: Option<Ended>,
}

impl Summary {
    /// The summary of `o` (the object as JSON), with its last reconcile.
    fn of(o: &Value, last: Option<&Reconcile>) -> Self {
        let condition = |t: &str| {
            o["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == t).map(|c| ConditionSummary {
                status: c["status"].as_str().unwrap_or("Unknown").to_owned(),
                reason: c["reason"].as_str().unwrap_or_default().to_owned(),
                message: c["message"].as_str().unwrap_or_default().to_owned(),
            })
        };
        let reconciled = condition(crate::effects::RECONCILED);
        // kstatus reads a custom resource's Ready only; the operator knows more: an object
        // whose reconciles fail is failing, whatever its children say.
        let health = match &reconciled {
            Some(c) if c.status == "False" && o["metadata"]["deletionTimestamp"].is_null() => {
                ctop_health::Health {
                    status: ctop_health::Status::Failed,
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                }
            }
            _ => ctop_health::health(o),
        };
        Summary {
            namespace: o["metadata"]["namespace"].as_str().map(str::to_owned),
            name: o["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
            generation: o["metadata"]["generation"].as_i64(),
            observed_generation: o["status"]["observedGeneration"].as_i64(),
            health,
            ready: condition("Ready"),
            reconciled,
            deleting: !o["metadata"]["deletionTimestamp"].is_null(),
            last_reconcile: last.map(|r| r.started.clone()),
            last_ended: last.map(|r| r.ended.clone()),
        }
    }
}

/// One object in full (`GET /api/object`): its summary, history, tree and events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Detail {
    /// The controller.
    pub controller: String,
    /// The primary kind's apiVersion.
    pub api_version: String,
    /// The primary kind.
    pub kind: String,
    /// The object at a glance.
    pub summary: Summary,
    /// Its last reconciles, oldest first.
    pub history: Vec<Reconcile>,
    /// Reconciles skipped (nothing they would read had changed).
    pub skipped: u64,
    /// The object, its children and theirs, with their health.
    pub tree: tree::Node,
    /// Its recent events, newest first.
    pub events: Vec<EventSummary>,
    /// What could not be read (the tree or the events), in kubectl's words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One event of an object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSummary {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
    /// How many times it happened.
    pub count: u32,
    /// When it happened last (RFC 3339), when known.
    #[serde(default)]
    pub last_seen: Option<String>,
}

impl Inspector {
    /// Register a started controller (a restarted one replaces the former).
    pub(crate) fn register(&self, ctx: &Arc<Ctx>) {
        let mut controllers = self.inner.controllers.lock();
        controllers.retain(|_, c| c.strong_count() > 0);
        controllers.insert(ctx.spec.name.clone(), Arc::downgrade(ctx));
    }

    /// Where the memory of the controller `name` (of a `namespaced` kind or not) reports
    /// its objects' changes.
    pub(crate) fn changes(&self, name: &str, namespaced: bool) -> ChangeTx {
        ChangeTx { controller: name.into(), namespaced, tx: self.inner.changes.clone() }
    }

    /// A stream of the objects whose history grows from now on.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Changed> {
        self.inner.changes.subscribe()
    }

    fn controller(&self, name: &str) -> Option<Arc<Ctx>> {
        self.inner.controllers.lock().get(name).and_then(Weak::upgrade)
    }

    fn running(&self) -> Vec<Arc<Ctx>> {
        self.inner.controllers.lock().values().filter_map(Weak::upgrade).collect()
    }

    /// Every controller's objects at a glance, from its cache.
    #[must_use]
    pub fn overview(&self) -> Overview {
        let controllers = self
            .running()
            .into_iter()
            .map(|ctx| {
                let last = ctx.memory.last_records();
                let mut objects: Vec<Summary> = ctx
                    .primaries()
                    .store
                    .state()
                    .iter()
                    .filter_map(|o| {
                        let json: Value = serde_json::from_str(&o.to_json(&ctx.primary)).ok()?;
                        Some(Summary::of(&json, last.get(&crate::object::object_key(o))))
                    })
                    .collect();
                objects.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
                ControllerObjects {
                    name: ctx.spec.name.clone(),
                    api_version: ctx.primary.api_version.clone(),
                    kind: ctx.primary.kind.clone(),
                    namespaced: ctx.namespaced,
                    history: ctx.options.history,
                    objects,
                }
            })
            .collect();
        Overview { controllers }
    }

    /// The history of the object `namespace`/`name` of the controller `controller`: its
    /// records, oldest first, and the reconciles skipped. `None` when there is no such
    /// controller or it remembers no such object.
    #[must_use]
    pub fn history(
        &self,
        controller: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<(Vec<Reconcile>, u64)> {
        let ctx = self.controller(controller)?;
        let key = format!("{}/{name}", namespace.filter(|_| ctx.namespaced).unwrap_or_default());
        ctx.primaries().store.get(namespace.filter(|_| ctx.namespaced), name)?;
        Some(ctx.memory.history(&key).unwrap_or_default())
    }

    /// The object `namespace`/`name` of the controller `controller` in full: `None` when
    /// there is no such controller or its cache has no such object.
    pub async fn detail(&self, controller: &str, namespace: Option<&str>, name: &str) -> Option<Detail> {
        let ctx = self.controller(controller)?;
        let namespace = namespace.filter(|_| ctx.namespaced);
        let cached = ctx.primaries().store.get(namespace, name)?;
        let json: Value = serde_json::from_str(&cached.to_json(&ctx.primary)).ok()?;
        let key = crate::object::object_key(&cached);
        let (history, skipped) = ctx.memory.history(&key).unwrap_or_default();
        let (tree, refused) = tree::build(&ctx.client, &json).await;
        let mut problems: Vec<String> = refused.iter().map(tree::TreeError::explain).collect();
        let events = match events(&ctx.client, &json).await {
            Ok(events) => events,
            Err(e) => {
                problems.push(format!("cannot list the events: {}", crate::error::api_error_text(&e)));
                Vec::new()
            }
        };
        Some(Detail {
            controller: controller.to_owned(),
            api_version: ctx.primary.api_version.clone(),
            kind: ctx.primary.kind.clone(),
            summary: Summary::of(&json, history.last()),
            history,
            skipped,
            tree,
            events,
            problems,
        })
    }
}

/// The recent events of `o`, newest first.
pub async fn events(client: &kube::Client, o: &Value) -> Result<Vec<EventSummary>, kube::Error> {
    let Some(uid) = o["metadata"]["uid"].as_str() else { return Ok(Vec::new()) };
    let api: Api<k8s_openapi::api::core::v1::Event> = match o["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let listed = api.list(&ListParams::default().fields(&format!("involvedObject.uid={uid}"))).await?;
    let mut events: Vec<EventSummary> = listed
        .items
        .into_iter()
        .map(|e| {
            let last_seen = e
                .series
                .as_ref()
                .and_then(|s| s.last_observed_time.as_ref().and_then(as_text))
                .or_else(|| e.last_timestamp.as_ref().and_then(as_text))
                .or_else(|| e.event_time.as_ref().and_then(as_text));
            EventSummary {
                type_: e.type_.unwrap_or_default(),
                reason: e.reason.unwrap_or_default(),
                message: e.message.unwrap_or_default(),
                count: e.series.as_ref().and_then(|s| s.count).or(e.count).map_or(1, |c| c.max(1) as u32),
                last_seen,
            }
        })
        .collect();
    events.sort_by(|a, b| b.last_seen.cmp(&a.last_seen));
    events.truncate(MAX_EVENTS);
    Ok(events)
}

/// A time as its JSON text (RFC 3339).
fn as_text<T: Serialize>(t: &T) -> Option<String> {
    serde_json::to_value(t).ok()?.as_str().map(str::to_owned)
}
