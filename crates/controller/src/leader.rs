//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`.
//!
//! [`LeaderElector::run`] starts a task that tries to acquire the Lease every
//! `retry_period` (creating it when absent, taking it over once
//! `renewTime + leaseDurationSeconds` has passed or its holder released it), renews it every
//! `retry_period` while leading (a `PUT` carrying the read `resourceVersion`, so a concurrent
//! writer makes it fail with 409 and the Lease is re-read), and steps down as soon as the
//! Lease is seen held by someone else or no renewal succeeded within `renew_deadline`.
//! Since `renew_deadline < lease_duration`, a leader stops before a standby may take over.
//!
//! Leadership is reported on a [`watch`] channel: consumers reconcile only while it reads
//! `true`. [`Leadership::shutdown`] steps down and releases the Lease (empty
//! `holderIdentity`, `leaseDurationSeconds: 1`) so a standby takes over at once; dropping
//! the [`Leadership`] (or [`Leadership::abort`]) stops without releasing, like a crash.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Where the Lease lives, who we are, and the timing of the election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This candidate's identity, written to `holderIdentity` (unique per replica).
    pub identity: String,
    /// How long a standby waits after the last renewal before taking over (default 15 s).
    /// Written to the Lease in whole seconds, rounded up.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal (default 10 s).
    pub renew_deadline: Duration,
    /// Time between acquire and renew attempts (default 2 s).
    pub retry_period: Duration,
    /// Labels the Lease carries, set at creation and on every renewal (a sharded
    /// operator's members are found by theirs; see `shard`).
    pub labels: BTreeMap<String, String>,
}

impl LeaseConfig {
    /// A config with the default timing (15 s / 10 s / 2 s).
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            labels: BTreeMap::new(),
        }
    }
}

/// What can go wrong in leader election.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    /// The config cannot give a safe election.
    #[error("invalid leader election config: {0}")]
    InvalidConfig(String),
    /// The API server refused or could not be reached.
    #[error("lease request failed")]
    Kube(#[from] kube::Error),
    /// A request did not finish in time.
    #[error("lease request timed out")]
    Timeout,
}

/// The result of one acquire-or-renew attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// We hold the Lease, freshly renewed.
    Held,
    /// Someone else holds a live Lease; it expires in `expires_in` unless renewed.
    HeldByOther {
        /// The current holder.
        holder: String,
        /// Time left until `renewTime + leaseDurationSeconds`.
        expires_in: Duration,
    },
    /// Someone else wrote the Lease between our read and write (409); re-read and retry.
    Conflict,
}

/// A candidate for leadership of one Lease.
#[derive(Clone)]
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaseConfig,
    duration_secs: i32,
    /// Annotations written with every renewal, read when it is written (a member's
    /// object count).
    annotations: Option<watch::Receiver<BTreeMap<String, String>>>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector").field("config", &self.config).finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// A candidate; checks `lease_duration > renew_deadline > retry_period > 0` and a
    /// non-empty identity.
    pub fn new(client: Client, config: LeaseConfig) -> Result<Self, LeaderError> {
        let invalid = |m: &str| Err(LeaderError::InvalidConfig(m.to_owned()));
        if config.identity.is_empty() {
            return invalid("identity must not be empty");
        }
        if config.name.is_empty() || config.namespace.is_empty() {
            return invalid("lease namespace and name must not be empty");
        }
        if config.retry_period.is_zero() {
            return invalid("retry_period must be positive");
        }
        if config.renew_deadline <= config.retry_period {
            return invalid("renew_deadline must be greater than retry_period");
        }
        if config.lease_duration <= config.renew_deadline {
            return invalid("lease_duration must be greater than renew_deadline");
        }
        let secs = config.lease_duration.as_secs() + u64::from(config.lease_duration.subsec_nanos() > 0);
        let duration_secs =
            i32::try_from(secs).map_err(|_| LeaderError::InvalidConfig("lease_duration too long".into()))?;
        let api = Api::namespaced(client, &config.namespace);
        Ok(Self { api, config, duration_secs, annotations: None })
    }

    /// Write the current value of `annotations` on the Lease with every renewal.
    #[must_use]
    pub fn with_annotations(mut self, annotations: watch::Receiver<BTreeMap<String, String>>) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// The labels and annotations this candidate keeps on the Lease, merged into `meta`.
    fn stamp(&self, meta: &mut ObjectMeta) {
        if !self.config.labels.is_empty() {
            let labels = meta.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(self.config.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if let Some(a) = &self.annotations {
            let current = a.borrow().clone();
            if !current.is_empty() {
                meta.annotations.get_or_insert_with(BTreeMap::new).extend(current);
            }
        }
    }

    /// The config this candidate runs with.
    pub fn config(&self) -> &LeaseConfig {
        &self.config
    }

    /// Start campaigning on the current tokio runtime.
    pub fn run(self) -> Leadership {
        let (tx, rx) = watch::channel(false);
        let (stop_tx, stop_rx) = oneshot::channel();
        let task = tokio::spawn(self.drive(tx, stop_rx));
        Leadership { is_leader: rx, stop: Some(stop_tx), task: Some(task) }
    }

    /// One attempt: create the Lease if absent, renew it if ours, take it over if expired
    /// or released, else report its holder.
    pub async fn try_acquire_or_renew(&self) -> Result<Attempt, LeaderError> {
        let id = &self.config.identity;
        let now = Timestamp::now();
        let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
            let mut metadata = ObjectMeta {
                name: Some(self.config.name.clone()),
                namespace: Some(self.config.namespace.clone()),
                ..ObjectMeta::default()
            };
            self.stamp(&mut metadata);
            let lease = Lease {
                metadata,
                spec: Some(LeaseSpec {
                    holder_identity: Some(id.clone()),
                    lease_duration_seconds: Some(self.duration_secs),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Attempt::Held),
                Err(kube::Error::Api(s)) if s.is_already_exists() || s.is_conflict() => Ok(Attempt::Conflict),
                Err(e) => Err(e.into()),
            };
        };
        let old = lease.spec.take().unwrap_or_default();
        let holder = old.holder_identity.as_deref().filter(|h| !h.is_empty());
        let ours = holder == Some(id.as_str());
        if let Some(holder) = holder.filter(|_| !ours) {
            let expires_in = remaining(&old, now, self.duration_secs);
            if !expires_in.is_zero() {
                return Ok(Attempt::HeldByOther { holder: holder.to_owned(), expires_in });
            }
        }
        let (acquire_time, transitions) = if ours {
            (old.acquire_time.clone().unwrap_or(MicroTime(now)), old.lease_transitions.unwrap_or(0))
        } else {
            (MicroTime(now), old.lease_transitions.unwrap_or(0).saturating_add(1))
        };
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(id.clone()),
            lease_duration_seconds: Some(self.duration_secs),
            acquire_time: Some(acquire_time),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..old
        });
        self.stamp(&mut lease.metadata);
        // `lease.metadata.resourceVersion` is the one we read: a concurrent write gives 409.
        match self.api.replace(&self.config.name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(Attempt::Held),
            Err(kube::Error::Api(s)) if s.is_conflict() || s.is_not_found() => Ok(Attempt::Conflict),
            Err(e) => Err(e.into()),
        }
    }

    /// Give the Lease up if we hold it: empty holder, `leaseDurationSeconds: 1`.
    pub async fn release(&self) -> Result<(), LeaderError> {
        for _ in 0..3 {
            let Some(mut lease) = self.api.get_opt(&self.config.name).await? else {
                return Ok(());
            };
            let Some(spec) = lease.spec.as_mut() else {
                return Ok(());
            };
            if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
                return Ok(());
            }
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            match self.api.replace(&self.config.name, &PostParams::default(), &lease).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.is_conflict() => continue,
                Err(kube::Error::Api(s)) if s.is_not_found() => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn drive(
        self,
        tx: watch::Sender<bool>,
        mut stop: oneshot::Receiver<()>,
    ) -> Result<(), LeaderError> {
        let cfg = &self.config;
        // Start of the last successful acquire or renew while leading.
        let mut renewed: Option<Instant> = None;
        let step_down = |tx: &watch::Sender<bool>, why: &str| {
            if set(tx, false) {
                tracing::warn!(lease = %cfg.name, identity = %cfg.identity, "stopped leading: {why}");
            }
        };
        loop {
            if renewed.is_some_and(|t| t.elapsed() >= cfg.renew_deadline) {
                step_down(&tx, "no renewal within the renew deadline");
                renewed = None;
            }
            let start = Instant::now();
            let limit = renewed.unwrap_or(start) + cfg.renew_deadline;
            let outcome = tokio::select! {
                r = &mut stop => return self.stop(&tx, renewed.is_some(), r.is_ok()).await,
                r = tokio::time::timeout_at(limit, self.try_acquire_or_renew()) => r.unwrap_or(Err(LeaderError::Timeout)),
            };
            let wait = match outcome {
                Ok(Attempt::Held) => {
                    renewed = Some(start);
                    // Subscribers hear of changes only: a renewal is not a new win.
                    if set(&tx, true) {
                        tracing::info!(lease = %cfg.name, identity = %cfg.identity, "started leading");
                    }
                    cfg.retry_period
                }
                Ok(Attempt::HeldByOther { holder, expires_in }) => {
                    if renewed.take().is_some() {
                        step_down(&tx, &format!("lease taken by {holder}"));
                    }
                    // Wake right after expiry rather than up to a retry period later.
                    cfg.retry_period.min(expires_in + Duration::from_millis(10))
                }
                Ok(Attempt::Conflict) => {
                    // Re-read soon: a leader must renew within its deadline.
                    if renewed.is_some() { Duration::from_millis(10) } else { cfg.retry_period }
                }
                Err(e) => {
                    tracing::warn!(lease = %cfg.name, identity = %cfg.identity, error = %ctop_core::Chain(&e), "lease attempt failed");
                    cfg.retry_period
                }
            };
            let wake = match renewed {
                Some(t) => (Instant::now() + wait).min(t + cfg.renew_deadline),
                None => Instant::now() + wait,
            };
            tokio::select! {
                r = &mut stop => return self.stop(&tx, renewed.is_some(), r.is_ok()).await,
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// Stop campaigning: step down first, then release if asked and we were leading.
    async fn stop(&self, tx: &watch::Sender<bool>, leading: bool, release: bool) -> Result<(), LeaderError> {
        set(tx, false);
        if !(leading && release) {
            return Ok(());
        }
        tracing::info!(lease = %self.config.name, identity = %self.config.identity, "releasing lease");
        tokio::time::timeout(self.config.renew_deadline, self.release())
            .await
            .unwrap_or(Err(LeaderError::Timeout))
    }
}

/// Set leadership to `leading`, telling subscribers only when it changes; whether it did.
fn set(tx: &watch::Sender<bool>, leading: bool) -> bool {
    tx.send_if_modified(|now| {
        let changed = *now != leading;
        *now = leading;
        changed
    })
}

/// Time left until `renewTime + leaseDurationSeconds`; zero when expired or unknown.
fn remaining(spec: &LeaseSpec, now: Timestamp, default_secs: i32) -> Duration {
    let Some(renew) = spec.renew_time.as_ref() else {
        return Duration::ZERO;
    };
    let secs = spec.lease_duration_seconds.unwrap_or(default_secs);
    let Ok(expiry) = renew.0.checked_add(SignedDuration::from_secs(i64::from(secs))) else {
        return Duration::ZERO;
    };
    Duration::try_from(now.duration_until(expiry)).unwrap_or(Duration::ZERO)
}

/// A running candidate: its leadership flag and the handle to stop it.
#[derive(Debug)]
pub struct Leadership {
    is_leader: watch::Receiver<bool>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), LeaderError>>>,
}

impl Leadership {
    /// Whether this candidate leads right now.
    pub fn is_leader(&self) -> bool {
        *self.is_leader.borrow()
    }

    /// A receiver of leadership changes (`true` while leading).
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.is_leader.clone()
    }

    /// Step down and release the Lease so a standby takes over at once; waits for it.
    pub async fn shutdown(mut self) -> Result<(), LeaderError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }

    /// Stop at once without releasing the Lease (as if the process died).
    pub fn abort(self) {
        drop(self);
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_time() {
        let now = Timestamp::now();
        let spec = |renew: Option<Timestamp>, secs| LeaseSpec {
            renew_time: renew.map(MicroTime),
            lease_duration_seconds: secs,
            ..LeaseSpec::default()
        };
        assert_eq!(remaining(&spec(None, Some(15)), now, 15), Duration::ZERO);
        let past = now - SignedDuration::from_secs(20);
        assert_eq!(remaining(&spec(Some(past), Some(15)), now, 15), Duration::ZERO);
        assert_eq!(remaining(&spec(Some(now), Some(15)), now, 15), Duration::from_secs(15));
        assert_eq!(remaining(&spec(Some(now), None), now, 3), Duration::from_secs(3));
    }

    #[test]
    fn micro_time_format() {
        let t: Timestamp = "2024-05-06T07:08:09.123456789Z".parse().expect("timestamp");
        let v = serde_json::to_value(MicroTime(t)).expect("serializes");
        assert_eq!(v, serde_json::json!("2024-05-06T07:08:09.123456Z"));
    }
}
