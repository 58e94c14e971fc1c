//! What every reconcile of one controller shares ([`Ctx`]).

use std::sync::Arc;

use ctop_applier::Applier;
use ctop_core::{ControllerSpec, Handlers};
use kube::Client;
use kube::api::ApiResource;
use kube::runtime::events::Recorder;
use tokio::sync::watch;

use crate::health::{Health, Metrics};
use crate::informer::Cached;
use crate::memory::Memory;
use crate::options::RunOptions;
use crate::retry::Bucket;

/// The handlers a run calls; a new value replaces them between reconciles (see
/// [`run_reloadable`](crate::run_reloadable)).
pub type HandlerSource = watch::Receiver<Arc<dyn Handlers>>;

/// The state of one running controller.
pub(crate) struct Ctx {
    pub(crate) spec: ControllerSpec,
    pub(crate) handlers: HandlerSource,
    pub(crate) retries: Arc<Bucket>,
    pub(crate) primary: ApiResource,
    /// `apiVersion/kind` of the primary kind.
    pub(crate) primary_kind: String,
    pub(crate) namespaced: bool,
    /// Whether the primary kind is one the operator defines (its CRD carries
    /// `status.conditions` and `observedGeneration`): only then does the controller write
    /// its own condition and the observed generation.
    pub(crate) owns_status: bool,
    pub(crate) caches: Arc<Vec<Cached>>,
    pub(crate) applier: Applier,
    pub(crate) recorder: Recorder,
    pub(crate) client: Client,
    pub(crate) options: RunOptions,
    pub(crate) health: Health,
    pub(crate) metrics: Metrics,
    pub(crate) leader: Option<watch::Receiver<bool>>,
    /// Everything remembered per primary object (see `memory`).
    pub(crate) memory: Memory,
    /// This replica's part in the ring of a sharded run (see `shard`).
    pub(crate) shard: Option<Arc<crate::shard::Shard>>,
}

impl Ctx {
    /// The cache of the primary kind.
    pub(crate) fn primaries(&self) -> &Cached {
        // The first cache is the primary kind's (see `run::start_controller`).
        &self.caches[0]
    }
}
