//! The sharder: the replica elected on the operator's leader Lease assigns the ring's
//! objects while it leads ([`run_sharder`]).
//!
//! - **New objects**: one watch per primary kind selects the objects *without* the shard
//!   label (`!shard.ctop.dev/<operator>`), so it holds only those waiting; each is labelled
//!   with its member on the ring, in a merge patch guarded by its resourceVersion.
//! - **Membership changes** (and every [`RESYNC`](super::RESYNC)): members whose Lease
//!   expired or was released are fenced first (their Lease taken over for twice its
//!   duration, so a restarted member waits until its objects moved); then the assigned
//!   objects are listed, page by page, and each one on the wrong member is either
//!   **drained** (its member is live: `drain.ctop.dev/<operator>: <new member>`, which the
//!   member acknowledges, see `drain`) or **moved** (its member is fenced or has no Lease:
//!   relabelled at once).
//!
//! Why not a mutating webhook, as the reference design assigns new objects: it would put
//! TLS, a webhook configuration and a failure policy in front of every create of the
//! operator's kinds, for an assignment that this watch makes one write later (measured in
//! `docs/sharding.md`). The watch is what keeps the sharder small: it never caches the
//! assigned objects.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions,
};
use kube::runtime::{WatchStreamExt as _, watcher};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use super::pages::Pages;
use super::{FENCE_HOLDER, MemberSet, RESYNC, Shard};
use crate::cluster::api_for;
use crate::error::api_error_text;
use crate::ring::{Ring, object_key};

/// Label patches in flight at once during a rebalance or a burst of new objects.
const CONCURRENT_WRITES: usize = 32;

/// One controller's primary kind, in the scope its controller watches.
#[derive(Clone, Debug)]
pub(crate) struct Primary {
    pub(crate) ar: ApiResource,
    pub(crate) namespaced: bool,
    /// `None`: every namespace.
    pub(crate) namespace: Option<String>,
    /// The script's own label selector of the kind, if any.
    pub(crate) selector: Option<String>,
    /// The kinds its controller manages, whose objects carry their owner's member.
    pub(crate) children: Vec<Child>,
}

/// A managed kind, in the scope its controller watches.
#[derive(Clone, Debug)]
pub(crate) struct Child {
    pub(crate) ar: ApiResource,
    pub(crate) namespaced: bool,
    pub(crate) namespace: Option<String>,
}

/// What the sharder needs besides the members.
#[derive(Clone, Debug)]
pub(crate) struct SharderConfig {
    pub(crate) operator: String,
    pub(crate) lease_namespace: String,
}

/// Assign and rebalance `primaries` among `shard`'s members whenever `leading` reads
/// true, until `stop`.
pub(crate) async fn run_sharder(
    client: Client,
    shard: Arc<Shard>,
    primaries: Vec<Primary>,
    config: SharderConfig,
    mut leading: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let sharder = Arc::new(Sharder { client, shard, config, ring: Mutex::default() });
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            r = leading.wait_for(|l| *l) => if r.is_err() { return },
        }
        let ring_name = sharder.config.operator.clone();
        sharder.shard.metrics.set_sharder(&ring_name, true);
        tracing::info!(ring = ring_name, "assigning the ring's objects");
        let work = futures::future::join(
            futures::future::join_all(primaries.iter().map(|p| sharder.clone().assign_new(p.clone()))),
            sharder.clone().rebalance(primaries.clone()),
        );
        tokio::select! {
            _ = stop.wait_for(|s| *s) => {
                sharder.shard.metrics.set_sharder(&ring_name, false);
                return;
            }
            _ = leading.wait_for(|l| !*l) => {}
            _ = work => {}
        }
        sharder.shard.metrics.set_sharder(&ring_name, false);
        tracing::info!(ring = ring_name, "stopped assigning the ring's objects");
    }
}

struct Sharder {
    client: Client,
    shard: Arc<Shard>,
    config: SharderConfig,
    /// The ring of the last live set, rebuilt when it changes.
    ring: Mutex<Option<(Vec<String>, Arc<Ring>)>>,
}

/// What a rebalance does to one object.
#[derive(Debug, PartialEq, Eq)]
enum Action {
    /// Ask its live member to hand it over to this one.
    Drain(String),
    /// Relabel it for this one at once (its member is gone).
    Move(String),
    /// Drop a drain label left from an earlier ring.
    Undrain,
}

/// What to do with an object labelled `current` (draining to `drain`) whose member on the
/// ring is `desired`; `movable` says whether a member that is not live is safely gone.
fn action(
    current: &str,
    drain: Option<&str>,
    desired: &str,
    set: &MemberSet,
    movable: impl Fn(&str) -> bool,
) -> Option<Action> {
    if current == desired {
        return drain.is_some().then_some(Action::Undrain);
    }
    if set.is_live(current) {
        return (drain != Some(desired)).then(|| Action::Drain(desired.to_owned()));
    }
    movable(current).then(|| Action::Move(desired.to_owned()))
}

impl Sharder {
    fn ring(&self) -> Arc<Ring> {
        let live = self.shard.members.borrow().live.clone();
        let mut cached = self.ring.lock();
        match cached.as_ref() {
            Some((members, ring)) if *members == live => ring.clone(),
            _ => {
                let ring = Arc::new(Ring::new(live.clone()));
                *cached = Some((live, ring.clone()));
                ring
            }
        }
    }

    fn params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(format!("{}-sharder", self.config.operator)),
            ..PatchParams::default()
        }
    }

    /// Merge-patch `o`'s labels, guarded by the resourceVersion it was read at.
    async fn relabel(
        &self,
        p: &Primary,
        o: &DynamicObject,
        labels: Map<String, Value>,
    ) -> Result<(), kube::Error> {
        let name = o.metadata.name.as_deref().unwrap_or_default();
        let api: Api<DynamicObject> =
            api_for(&self.client, &p.ar, p.namespaced, o.metadata.namespace.as_deref());
        let patch = json!({"metadata": {"resourceVersion": o.metadata.resource_version, "labels": labels}});
        api.patch(name, &self.params(), &Patch::Merge(patch)).await.map(|_| ())
    }

    fn key(p: &Primary, o: &DynamicObject) -> String {
        object_key(
            &p.ar.group,
            &p.ar.kind,
            o.metadata.namespace.as_deref(),
            o.metadata.name.as_deref().unwrap_or_default(),
        )
    }

    /// Label every object of `p` that has no member yet.
    async fn assign_new(self: Arc<Self>, p: Primary) {
        let shard_label = self.shard.labels.shard.clone();
        let selector = match p.selector.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(s) => format!("{s},!{shard_label}"),
            None => format!("!{shard_label}"),
        };
        let api: Api<DynamicObject> = api_for(&self.client, &p.ar, p.namespaced, p.namespace.as_deref());
        let events = watcher(api, watcher::Config::default().labels(&selector)).default_backoff();
        // Objects not assigned yet (the ring was empty), tried again when members change.
        let waiting: Arc<Mutex<HashMap<String, DynamicObject>>> = Arc::default();
        let mut members = self.shard.members.clone();
        let assign = |o: DynamicObject| {
            let (this, p, waiting, shard_label) =
                (self.clone(), p.clone(), waiting.clone(), shard_label.clone());
            async move {
                let key = Self::key(&p, &o);
                let owner = this.ring().owner(&key).map(str::to_owned);
                let Some(owner) = owner else {
                    waiting.lock().insert(key, o);
                    return;
                };
                waiting.lock().remove(&key);
                let mut labels = Map::new();
                labels.insert(shard_label, Value::String(owner.clone()));
                match this.relabel(&p, &o, labels).await {
                    Ok(()) => {
                        this.shard.metrics.assigned(&this.config.operator);
                        tracing::debug!(object = key, member = owner, "assigned");
                    }
                    Err(kube::Error::Api(s)) if s.is_not_found() => {}
                    // Changed meanwhile (or refused for a reason that may pass): read again
                    // and retry.
                    Err(e) => {
                        tracing::warn!(object = key, error = %api_error_text(&e), "cannot assign the object; trying again");
                        waiting.lock().insert(key, o);
                    }
                }
            }
        };
        let objects = events
            .filter_map(|e| {
                std::future::ready(match e {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => Some(o),
                    Ok(_) => None,
                    Err(e) => {
                        tracing::warn!(error = %e, "watch of unassigned objects failed; retrying");
                        None
                    }
                })
            })
            .map(assign)
            .buffer_unordered(CONCURRENT_WRITES);
        let mut objects = std::pin::pin!(objects);
        // Objects left waiting (no member yet, or a failed write) are tried again when the
        // members change, and at least every second.
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                next = objects.next() => if next.is_none() { return },
                r = members.changed() => if r.is_err() { return },
                _ = tick.tick() => {}
            }
            let retry: Vec<DynamicObject> = waiting.lock().drain().map(|(_, o)| o).collect();
            if !retry.is_empty() {
                let fresh = |o: DynamicObject| {
                    let (this, p, shard_label) = (self.clone(), p.clone(), shard_label.clone());
                    async move {
                        let name = o.metadata.name.clone().unwrap_or_default();
                        let api: Api<DynamicObject> =
                            api_for(&this.client, &p.ar, p.namespaced, o.metadata.namespace.as_deref());
                        match api.get_opt(&name).await {
                            Ok(Some(now)) => {
                                let labelled = now
                                    .metadata
                                    .labels
                                    .as_ref()
                                    .is_some_and(|l| l.contains_key(&shard_label));
                                (!labelled).then_some(now)
                            }
                            Ok(None) => None,
                            // Unreadable now: try with what was seen.
                            Err(_) => Some(o),
                        }
                    }
                };
                futures::stream::iter(retry)
                    .map(fresh)
                    .buffer_unordered(CONCURRENT_WRITES)
                    .filter_map(std::future::ready)
                    .map(assign)
                    .buffer_unordered(CONCURRENT_WRITES)
                    .collect::<()>()
                    .await;
            }
        }
    }

    /// Rebalance at once, then whenever a member joins or leaves (once the changes pause
    /// for 200 ms), and every [`RESYNC`].
    async fn rebalance(self: Arc<Self>, primaries: Vec<Primary>) {
        let mut members = self.shard.members.clone();
        let shape = |set: &MemberSet| -> Vec<(String, String, bool, bool)> {
            set.all.iter().map(|m| (m.name.clone(), m.holder.clone(), m.live, m.fenced)).collect()
        };
        let mut backoff = Duration::from_millis(500);
        loop {
            let before = shape(&members.borrow_and_update());
            // A pass cut short (a failed list or write) is tried again soon, not at the
            // next change: nothing else would move the objects it left.
            let deadline = if self.pass(&primaries).await {
                backoff = Duration::from_millis(500);
                tokio::time::Instant::now() + RESYNC
            } else {
                let at = tokio::time::Instant::now() + backoff;
                backoff = (backoff * 2).min(Duration::from_secs(30));
                at
            };
            loop {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => break,
                    r = members.changed() => {
                        if r.is_err() {
                            return;
                        }
                        if shape(&members.borrow()) == before {
                            continue;
                        }
                        // Let a burst of changes (a rollout) settle into one pass.
                        loop {
                            tokio::select! {
                                () = tokio::time::sleep(Duration::from_millis(200)) => break,
                                r = members.changed() => if r.is_err() { return },
                            }
                        }
                        break;
                    }
                }
            }
        }
    }

    /// Fence the members that left, forget the fenced ones whose hold ran out, then put
    /// every assigned object on its member: first the children of the members that are
    /// gone (so that the new member finds them in its cache), then the primary objects.
    /// Whether every step succeeded.
    async fn pass(&self, primaries: &[Primary]) -> bool {
        let mut complete = true;
        let set = self.shard.members.borrow().clone();
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.config.lease_namespace);
        let mut fenced: Vec<String> = set.all.iter().filter(|m| m.fenced).map(|m| m.name.clone()).collect();
        for m in set.all.iter().filter(|m| !m.live && !m.fenced) {
            if m.holder == FENCE_HOLDER {
                // Our hold ran out and the member did not come back: its Lease goes.
                match leases.get_opt(&m.name).await {
                    Ok(Some(l))
                        if l.spec.as_ref().and_then(|s| s.holder_identity.as_deref())
                            == Some(FENCE_HOLDER) =>
                    {
                        let dp = DeleteParams {
                            preconditions: Some(Preconditions {
                                resource_version: l.metadata.resource_version.clone(),
                                uid: None,
                            }),
                            ..DeleteParams::default()
                        };
                        if let Err(e) = leases.delete(&m.name, &dp).await {
                            tracing::debug!(member = m.name, error = %api_error_text(&e), "cannot delete a fenced Lease");
                        }
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!(member = m.name, error = %api_error_text(&e), "cannot read a fenced Lease")
                    }
                }
                fenced.push(m.name.clone());
                continue;
            }
            match fence(&leases, &m.name, m.resource_version.as_deref()).await {
                Ok(true) => {
                    tracing::info!(member = m.name, "member left; moving its objects");
                    fenced.push(m.name.clone());
                }
                Ok(false) => {}
                Err(e) => {
                    complete = false;
                    tracing::warn!(member = m.name, error = %api_error_text(&e), "cannot fence a member that left");
                }
            }
        }
        let ring = self.ring();
        if ring.members().is_empty() {
            return complete;
        }
        let movable = |m: &str| set.get(m).is_none() || fenced.iter().any(|f| f == m);
        // Members whose objects stay where they are: live, or gone but not fenced yet.
        let staying: Vec<&str> = set.all.iter().map(|m| m.name.as_str()).filter(|m| !movable(m)).collect();
        let mut kinds: Vec<&Child> = Vec::new();
        for c in primaries.iter().flat_map(|p| &p.children) {
            if !kinds.iter().any(|k| k.ar.api_version == c.ar.api_version && k.ar.kind == c.ar.kind) {
                kinds.push(c);
            }
        }
        let mut children_moved = true;
        for c in kinds {
            if let Err(e) = self.move_children(c, &ring, &staying).await {
                children_moved = false;
                tracing::warn!(kind = c.ar.kind, error = %api_error_text(&e), "cannot move the children of members that left; trying again");
            }
        }
        complete &= children_moved;
        // An object moves only once its children did: its new member must find them.
        let movable = |m: &str| children_moved && movable(m);
        for p in primaries {
            if let Err(e) = self.pass_kind(p, &ring, &set, &movable).await {
                complete = false;
                tracing::warn!(kind = p.ar.kind, error = %api_error_text(&e), "cannot put the assigned objects on their members; trying again");
            }
        }
        complete
    }

    /// Relabel the children of kind `c` whose member is not one of `staying` for the member
    /// their controller owner goes to on `ring`.
    async fn move_children(&self, c: &Child, ring: &Ring, staying: &[&str]) -> Result<(), kube::Error> {
        let key = &self.shard.labels.shard;
        let selector = if staying.is_empty() {
            key.clone()
        } else {
            format!("{key},{key} notin ({})", staying.join(","))
        };
        let api: Api<DynamicObject> = api_for(&self.client, &c.ar, c.namespaced, c.namespace.as_deref());
        let mut pages = Pages::new(&api, &selector);
        while let Some(items) = pages.next().await? {
            let todo: Vec<(DynamicObject, String)> = items
                .into_iter()
                .filter_map(|o| {
                    let owner =
                        o.metadata.owner_references.as_ref()?.iter().find(|r| r.controller == Some(true))?;
                    let group = ctop_core::group_of(&owner.api_version);
                    let ns = o.metadata.namespace.as_deref().filter(|_| c.namespaced);
                    let to = ring.owner(&object_key(group, &owner.kind, ns, &owner.name))?.to_owned();
                    Some((o, to))
                })
                .collect();
            futures::stream::iter(todo)
                .map(|(o, to)| async move {
                    let name = o.metadata.name.as_deref().unwrap_or_default();
                    let api: Api<DynamicObject> =
                        api_for(&self.client, &c.ar, c.namespaced, o.metadata.namespace.as_deref());
                    let patch = json!({"metadata": {"labels": {key.clone(): to}}});
                    match api.patch(name, &self.params(), &Patch::Merge(patch)).await {
                        Ok(_) => Ok(()),
                        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
                        Err(e) => Err(e),
                    }
                })
                .buffer_unordered(CONCURRENT_WRITES)
                .try_collect::<()>()
                .await?;
        }
        Ok(())
    }

    async fn pass_kind(
        &self,
        p: &Primary,
        ring: &Ring,
        set: &MemberSet,
        movable: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<(), kube::Error> {
        let labels = &self.shard.labels;
        let selector = match p.selector.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(s) => format!("{s},{}", labels.shard),
            None => labels.shard.clone(),
        };
        let api: Api<DynamicObject> = api_for(&self.client, &p.ar, p.namespaced, p.namespace.as_deref());
        let mut pages = Pages::new(&api, &selector);
        while let Some(items) = pages.next().await? {
            let todo: Vec<(DynamicObject, Action)> = items
                .into_iter()
                .filter_map(|o| {
                    let current = o.metadata.labels.as_ref()?.get(&labels.shard)?.clone();
                    let drain = o.metadata.labels.as_ref().and_then(|l| l.get(&labels.drain)).cloned();
                    let desired = ring.owner(&Self::key(p, &o))?.to_owned();
                    action(&current, drain.as_deref(), &desired, set, movable).map(|a| (o, a))
                })
                .collect();
            futures::stream::iter(todo)
                .map(|(o, a)| self.act(p, o, a))
                .buffer_unordered(CONCURRENT_WRITES)
                .try_collect::<()>()
                .await?;
        }
        Ok(())
    }

    async fn act(&self, p: &Primary, o: DynamicObject, a: Action) -> Result<(), kube::Error> {
        let labels = &self.shard.labels;
        let ring = &self.config.operator;
        let mut patch = Map::new();
        match &a {
            Action::Drain(to) => {
                patch.insert(labels.drain.clone(), Value::String(to.clone()));
            }
            Action::Move(to) => {
                patch.insert(labels.shard.clone(), Value::String(to.clone()));
                patch.insert(labels.drain.clone(), Value::Null);
            }
            Action::Undrain => {
                patch.insert(labels.drain.clone(), Value::Null);
            }
        }
        match self.relabel(p, &o, patch).await {
            Ok(()) => {
                match a {
                    Action::Drain(_) => self.shard.metrics.drained(ring),
                    Action::Move(_) => self.shard.metrics.moved(ring),
                    Action::Undrain => {}
                }
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            // Changed since the list (a conflict) or refused: the pass is tried again.
            Err(e) => Err(e),
        }
    }
}

/// Take over the Lease of `member`, which this replica saw expire or be released at
/// resourceVersion `seen`, for twice its duration; `false` when it is no longer at that
/// version (the member renewed since, even if this replica's watch of the Leases has not
/// shown it yet: it is alive).
async fn fence(leases: &Api<Lease>, member: &str, seen: Option<&str>) -> Result<bool, kube::Error> {
    let Some(mut lease) = leases.get_opt(member).await? else {
        return Ok(true);
    };
    if lease.metadata.resource_version.as_deref() != seen {
        return Ok(false);
    }
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(false);
    };
    let secs = spec.lease_duration_seconds.unwrap_or(15).max(1);
    let now = MicroTime(Timestamp::now());
    spec.holder_identity = Some(FENCE_HOLDER.to_owned());
    spec.lease_duration_seconds = Some(secs.saturating_mul(2));
    spec.acquire_time = Some(now.clone());
    spec.renew_time = Some(now);
    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0).saturating_add(1));
    match leases.replace(member, &PostParams::default(), &lease).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_conflict() => Ok(false),
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(true),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::MemberInfo;

    fn set(live: &[&str], others: &[&str]) -> MemberSet {
        let info = |n: &&str, live: bool| MemberInfo {
            name: (*n).to_owned(),
            holder: if live { (*n).to_owned() } else { String::new() },
            objects: None,
            renew_time: None,
            lease_duration_seconds: 15,
            live,
            fenced: false,
            resource_version: None,
        };
        MemberSet {
            live: live.iter().map(|s| (*s).to_owned()).collect(),
            all: live.iter().map(|n| info(n, true)).chain(others.iter().map(|n| info(n, false))).collect(),
        }
    }

    #[test]
    fn objects_of_live_members_drain_and_of_gone_ones_move() {
        let s = set(&["a", "b"], &["c"]);
        let never = |_: &str| false;
        let always = |_: &str| true;
        assert_eq!(action("a", None, "a", &s, never), None);
        assert_eq!(action("a", Some("b"), "a", &s, never), Some(Action::Undrain), "a stale drain is dropped");
        assert_eq!(action("a", None, "b", &s, never), Some(Action::Drain("b".into())));
        assert_eq!(action("a", Some("b"), "b", &s, never), None, "already draining there");
        assert_eq!(action("a", Some("c"), "b", &s, never), Some(Action::Drain("b".into())), "redirected");
        assert_eq!(action("c", None, "b", &s, never), None, "not fenced yet: wait");
        assert_eq!(action("c", Some("a"), "b", &s, always), Some(Action::Move("b".into())));
    }
}
