//! How a run is configured: [`RunOptions`], [`LeaseTiming`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::retry::RetryLimit;

/// How `ctop run` runs a script.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The kubeconfig file; `None` infers (in-cluster, `KUBECONFIG`, `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; `None` uses its current context.
    pub context: Option<String>,
    /// Watch only this namespace; `None` watches all.
    pub namespace: Option<String>,
    /// Reconciles running at once per controller.
    pub concurrency: u16,
    /// Where `/healthz`, `/readyz` and `/status` are served (port 0 picks one).
    pub health_addr: SocketAddr,
    /// Where `/metrics` is served (port 0 picks one).
    pub metrics_addr: SocketAddr,
    /// The registry the controllers show their objects in (`inspect`, served on the health
    /// port and by the operator's page); `None`: one of the run's own. A caller that serves
    /// the page itself passes one, which outlives the run (`ctop dev` keeps one page across
    /// restarts of the controllers).
    pub inspector: Option<crate::inspect::Inspector>,
    /// Health and metrics registries this run shares with others of the process, which
    /// their owner serves; `None`: the run's own, served on `health_addr` and
    /// `metrics_addr`. With them, `health_addr`, `metrics_addr` and `inspector` are unused
    /// (the shared health has its inspector), and a controller that stops stays in the
    /// shared health until the owner calls [`crate::health::Health::forget`].
    pub shared: Option<crate::health::Shared>,
    /// Elect a leader on a Lease; reconcile only while leading.
    pub leader_elect: bool,
    /// Namespace of the Lease.
    pub lease_namespace: String,
    /// Name of the Lease and the field manager / event reporter.
    pub name: String,
    /// Who this replica is, in the Lease and as the events' reporting instance; `None`:
    /// the pod name (`POD_NAME`), else host and process. Two runs in one process need
    /// their own.
    pub identity: Option<String>,
    /// CRDs to server-side apply (and wait for) before starting.
    pub install_crds: Vec<Value>,
    /// The global limit on retries of failed reconciles, shared by every controller.
    pub retry_limit: RetryLimit,
    /// Spread the primary objects over the replicas instead of electing one to do all the
    /// work (`ctop run --sharding`; see `shard`). Each replica holds a member Lease in
    /// `lease_namespace`; the one elected on the leader Lease assigns the objects.
    pub sharding: bool,
    /// Rewrite objects stored in older versions of the script's converting resources and
    /// drop those versions from their CRDs' `status.storedVersions` (`ctop run
    /// --migrate-storage`; see `migrate`), as the leader; `None`: never.
    pub migrate_storage: Option<crate::migrate::StorageMigration>,
    /// Reconciles kept per object in its history (`ctop run --history`; see `history`;
    /// [`crate::history::DEFAULT_KEPT`] by default); 0 keeps none and computes nothing of it.
    pub history: usize,
}

impl RunOptions {
    /// Running on this machine against the cluster of `kubeconfig`, as `name` (field
    /// manager, event reporter): two reconciles at once, no leader election, health and
    /// metrics on free loopback ports, the default retry limit and history.
    #[must_use]
    pub fn local(kubeconfig: PathBuf, name: &str) -> Self {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        Self {
            kubeconfig: Some(kubeconfig),
            context: None,
            namespace: None,
            concurrency: 2,
            health_addr: loopback,
            metrics_addr: loopback,
            inspector: None,
            shared: None,
            leader_elect: false,
            lease_namespace: "default".into(),
            name: name.into(),
            identity: None,
            install_crds: Vec::new(),
            retry_limit: RetryLimit::default(),
            sharding: false,
            migrate_storage: None,
            history: crate::history::DEFAULT_KEPT,
        }
    }
}

/// The timing of leader election on a Lease (and of a sharded member's Lease), with
/// controller-runtime's names and defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTiming {
    /// How long a standby waits after the leader's last renewal before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// Time between acquire and renew attempts.
    pub retry_period: Duration,
}

impl Default for LeaseTiming {
    /// 15 s / 10 s / 2 s, as controller-runtime.
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}
