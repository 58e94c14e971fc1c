//! One Operator's controller: parsed, its view CRDs installed, run by
//! [`ctop_controller::run_with_lease`] in a task of its own until its stop signal; an error
//! on the way goes to the Operator's status ([`crate::status`]). A controller that failed
//! (a source kind not served yet, say) is tried again after a backoff ([`RETRY_FIRST`],
//! doubling up to [`RETRY_MAX`]); an Operator that does not read waits for a new spec.

use std::sync::Arc;

use ctop_controller::{LeaseTiming, RunOptions};
use ctop_declarative::{Operator, OperatorHandlers};
use kube::Api;
use kube::api::DynamicObject;
use serde_json::Value;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::status::{self, Reason};

/// The first wait before a failed controller is started again.
pub(crate) const RETRY_FIRST: Duration = Duration::from_secs(5);
/// The longest wait between two starts of a failing controller.
pub(crate) const RETRY_MAX: Duration = Duration::from_secs(300);

/// A running (or failed) controller of one Operator object.
pub(crate) struct One {
    /// The object's uid: a new object of the same name is another Operator.
    pub(crate) uid: String,
    /// The `metadata.generation` it was started for.
    pub(crate) generation: Option<i64>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl One {
    /// Start the controller of `object` (an Operator as the cluster has it), with the
    /// manager's `template` options.
    pub(crate) fn start(
        api: Api<DynamicObject>,
        object: &DynamicObject,
        template: &RunOptions,
        timing: LeaseTiming,
    ) -> One {
        let name = object.metadata.name.clone().unwrap_or_default();
        let uid = object.metadata.uid.clone().unwrap_or_default();
        let generation = object.metadata.generation;
        let value = serde_json::to_value(object).unwrap_or(Value::Null);
        let (stop, stopped) = watch::channel(false);
        let template = template.clone();
        let task = tokio::spawn(async move {
            let mut delay = RETRY_FIRST;
            loop {
                tracing::info!(operator = name, generation, "starting the Operator's controller");
                let (reason, message) =
                    match run(value.clone(), template.clone(), timing, stopped.clone()).await {
                        Ok(()) => return,
                        Err(e) => e,
                    };
                status::report(&api, &name, generation, reason, &message).await;
                if reason == Reason::InvalidOperator {
                    return;
                }
                tracing::info!(operator = name, retry_in = ?delay, "the Operator's controller will be started again");
                let mut stopped = stopped.clone();
                tokio::select! {
                    _ = stopped.wait_for(|s| *s) => return,
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(RETRY_MAX);
            }
        });
        One { uid, generation, stop, task }
    }

    /// Stop the controller and wait until it has stopped.
    pub(crate) async fn stop(self) {
        self.stop.send_replace(true);
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "an Operator's controller task panicked");
        }
    }
}

/// Run the controller of the Operator `object` until `stopped`.
async fn run(
    object: Value,
    template: RunOptions,
    timing: LeaseTiming,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), (Reason, String)> {
    let invalid = |e: ctop_declarative::OperatorError| (Reason::InvalidOperator, e.to_string());
    let op = Operator::from_value(without_server_fields(object)).map_err(invalid)?;
    for c in op.controllers.iter().filter_map(|c| c.broken.as_deref()) {
        tracing::warn!(operator = op.name, error = c, "this controller cannot run; the others will");
    }
    let name = op.name.clone();
    let handlers = OperatorHandlers::of_cluster(op).map_err(invalid)?;
    let spec = ctop_core::Handlers::spec(&handlers);
    // The view CRDs; the Operator CRD is the manager's.
    let views = spec.resources.iter().filter(|r| r.group != "dcontroller.io");
    let install_crds = views
        .map(|r| ctop_manifests::crd(r, &serde_json::Map::new()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (Reason::InvalidOperator, format!("its view CRDs cannot be written: {e}")))?;
    let shared = template.shared.clone();
    let options = RunOptions { name: name.clone(), install_crds, ..template };
    let shutdown = async move {
        let _ = stopped.wait_for(|s| *s).await;
    };
    let result = ctop_controller::run_with_lease(Arc::new(handlers), options, timing, shutdown).await;
    // A stopped or failed controller no longer counts in the process's /readyz.
    if let Some(shared) = shared {
        shared.health.forget(&name);
    }
    match result {
        Ok(()) => {
            tracing::info!(operator = name, "the Operator's controller stopped");
            Ok(())
        }
        Err(e) => Err((Reason::ControllerFailed, ctop_core::Chain(&e).to_string())),
    }
}

/// The Operator as its author wrote it: the fields the server keeps dropped.
fn without_server_fields(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    object
}
