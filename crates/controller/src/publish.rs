//! Each controller's health as a cluster object: a `ControllerStatus`
//! (`ctop_core::controller_status`) per controller, named `<operator>-<controller>` in the
//! operator's namespace, with the `Ready` condition and the last errors (newest first) that
//! `/status` serves. Written by the leader (or the only replica), only when it changed.
//! Without the CRD installed, the run says once how to get it and keeps going.

use std::collections::HashMap;
use std::time::Duration;

use crate::shard::ShardingStatus;
use ctop_core::controller_status::{GROUP, KIND, OPERATOR_LABEL, PLURAL, VERSION};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::error::api_error_text;
use crate::health::{ControllerStatus, Health};

/// How often the health is compared with what was published (in memory; a write only when
/// it changed).
pub(crate) const EVERY: Duration = Duration::from_millis(500);

/// How long a run without the CRD waits before trying again (a changed status is tried
/// at once).
const RETRY_MISSING: Duration = Duration::from_secs(300);

/// Where and as whom the objects are written.
pub(crate) struct Publisher {
    pub(crate) client: Client,
    pub(crate) health: Health,
    /// The operator's name (the field manager too).
    pub(crate) operator: String,
    /// The operator's namespace.
    pub(crate) namespace: String,
    /// The controllers to publish.
    pub(crate) controllers: Vec<String>,
    /// Leadership, when elected: only the leader publishes.
    pub(crate) leading: Option<watch::Receiver<bool>>,
    /// The CRD (`<plural>.<group>`) of each controller's primary kind, whose storage
    /// migration its object shows.
    pub(crate) primaries: HashMap<String, String>,
}

impl Publisher {
    /// Publish until `stop` reads `true`.
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), PLURAL);
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), &self.namespace, &ar);
        let params = PatchParams::apply(&self.operator).force();
        let mut sent: HashMap<String, Value> = HashMap::new();
        let mut missing_said = false;
        // Without the CRD, a document counts as sent (no request per tick); everything is
        // tried again now and then, in case the CRD was installed since.
        let mut missing_since: Option<tokio::time::Instant> = None;
        let mut leading = self.leading.clone();
        loop {
            if missing_since.is_some_and(|t| t.elapsed() >= RETRY_MISSING) {
                missing_since = None;
                sent.clear();
            }
            let leads = leading.as_mut().is_none_or(|l| *l.borrow_and_update());
            for controller in self.controllers.iter().filter(|_| leads) {
                let Some(status) = self.health.status(controller) else { continue };
                let name = object_name(&self.operator, controller);
                let mut doc = document(
                    &self.operator,
                    &self.namespace,
                    &name,
                    &status,
                    self.health.sharding().as_ref(),
                );
                if let Some(m) = self.primaries.get(controller).and_then(|crd| self.health.migration(crd)) {
                    doc["status"]["storageMigration"] = json!(m);
                }
                if sent.get(&name) == Some(&doc) {
                    continue;
                }
                match api.patch(&name, &params, &Patch::Apply(&doc)).await {
                    Ok(_) => {
                        sent.insert(name, doc);
                    }
                    Err(kube::Error::Api(s)) if s.code == 404 => {
                        sent.insert(name, doc);
                        missing_since.get_or_insert_with(tokio::time::Instant::now);
                        if !missing_said {
                            missing_said = true;
                            tracing::info!(
                                "controller health is not published as ControllerStatus objects: their CRD \
                                 ({PLURAL}.{GROUP}) is not installed; apply the output of ctop manifests, or run with \
                                 --install-crds"
                            );
                        }
                    }
                    Err(e) => {
                        tracing::warn!(object = name, error = %api_error_text(&e), "cannot publish the controller's status");
                    }
                }
            }
            // A replica that wins the Lease publishes at once. One receiver for the whole
            // run, marked seen here: a fresh clone of it would report the same change again
            // on every turn, and the loop would spin.
            let won = async {
                match leading.as_mut() {
                    Some(l) => {
                        let _ = l.changed().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = tokio::time::sleep(EVERY) => {}
                () = won => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

/// `<operator>-<controller>`, made a valid object name.
fn object_name(operator: &str, controller: &str) -> String {
    let raw = format!("{operator}-{controller}").to_lowercase();
    let cleaned: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '-' })
        .collect();
    cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric()).chars().take(253).collect()
}

/// The server-side apply body of one controller's object.
fn document(
    operator: &str,
    namespace: &str,
    name: &str,
    status: &ControllerStatus,
    sharding: Option<&ShardingStatus>,
) -> Value {
    let mut doc = json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace, "labels": {OPERATOR_LABEL: operator}},
        "spec": {"operator": operator, "controller": status.name},
        "status": {
            "conditions": [status.ready_condition()],
            "lastErrors": status.last_errors.iter().rev().map(|e| e.display()).collect::<Vec<_>>(),
            "cachesSynced": status.caches_synced,
        }
    });
    if let Some(s) = sharding {
        // Without the renewal times, which change every few seconds: the Lease has them.
        let members: Vec<Value> = s
            .members
            .iter()
            .map(|m| {
                let mut v = json!({
                    "name": m.name, "lease": m.name, "holder": m.holder,
                    "leaseDurationSeconds": m.lease_duration_seconds, "live": m.live, "fenced": m.fenced,
                });
                if let Some(n) = m.objects {
                    v["objects"] = json!(n);
                }
                v
            })
            .collect();
        doc["status"]["sharding"] = json!({"ring": s.ring, "sharder": s.member, "members": members});
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_valid_object_names() {
        assert_eq!(object_name("ctop", "webapp"), "ctop-webapp");
        assert_eq!(object_name("op", "My_Controller!"), "op-my-controller");
    }
}
