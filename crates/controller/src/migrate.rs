//! Storage migration (`ctop run --migrate-storage`): after a resource's storage version
//! changed, every object still stored in an older version is rewritten in the new one, and
//! then the older versions leave the CRD's `status.storedVersions`, after which the script
//! may drop them (the API server refuses a CRD without a version that is still stored).
//!
//! One [`Migration`] per resource the script converts, run by the leader (or the only
//! replica), as kube-storage-version-migrator does it: list the objects in pages, and write
//! each one back unchanged (a PUT with its `resourceVersion`: the API server stores what it
//! writes in the storage version). A write answered 409 means the object was written since,
//! which does not mean it is stored in the storage version (a write that an API server
//! began before it saw the CRD's new storage version stores the old one), so the object is
//! read again and that is written back, up to [`CONFLICT_TRIES`] times; 404 means it is
//! gone. Writes are paced
//! ([`StorageMigration::rate`] per second). Progress is kept in the CRD's annotation
//! [`PROGRESS_ANNOTATION`] after each page (the list's continue token and the count), so a
//! new leader resumes where the last one stopped; when the token has expired (410), it starts
//! over, which is safe: a rewrite is idempotent, and the pass is only complete when one list
//! went from start to end. (No key of "the last object done" is kept instead: resuming by key
//! would have to know the server's list order, and a wrong guess would skip objects, which
//! then stay stored in a version about to be dropped.) When every object was rewritten, and
//! the storage version did not change meanwhile,
//! `status.storedVersions` becomes the storage version alone (a merge patch on the CRD's
//! status, conditional on its `resourceVersion`).
//!
//! What it is doing is [`MigrationStatus`]: on `/status` (`storageMigrations`) and in the
//! `ControllerStatus` of the controller of the resource (`status.storageMigration`).

use std::time::Duration;

use ctop_core::{ResourceSpec, Scope};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::watch;

use crate::error::api_error_text;
use crate::health::Health;

/// The CRD annotation that keeps a migration's progress across leaders.
pub const PROGRESS_ANNOTATION: &str = "ctop.dev/storage-migration";

/// Objects per list page (and per progress record).
const PAGE: u32 = 100;
/// How often a finished or waiting migration looks at the CRD again.
const RECHECK: Duration = Duration::from_secs(30);
/// How long a failed pass waits before the next.
const RETRY: Duration = Duration::from_secs(30);
/// Writes of one object answered 409 before it counts as failed (and the pass with it).
const CONFLICT_TRIES: u32 = 5;

/// The opt-in of a run to migrate storage (`ctop run --migrate-storage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageMigration {
    /// Objects rewritten per second at most.
    pub rate: u32,
}

impl Default for StorageMigration {
    fn default() -> Self {
        Self { rate: 50 }
    }
}

/// Where a resource's migration stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MigrationPhase {
    /// Nothing to do yet: the CRD is missing or does not store what the script declares.
    Waiting,
    /// Objects are being rewritten.
    Running,
    /// Every object is stored in the storage version, which `status.storedVersions` alone lists.
    Done,
    /// The last pass failed (`message` says why); it is tried again.
    Failed,
}

/// A resource's migration, as `/status` and the `ControllerStatus` show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationStatus {
    /// The CRD: `<plural>.<group>`.
    pub resource: String,
    /// Where it stands.
    pub phase: MigrationPhase,
    /// The storage version objects are rewritten in.
    pub to: String,
    /// The CRD's `status.storedVersions` when last read.
    pub stored_versions: Vec<String>,
    /// Objects rewritten so far in this migration (counted across leaders).
    pub migrated: u64,
    /// Why it waits or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The progress record in [`PROGRESS_ANNOTATION`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Progress {
    /// The storage version of the migration it belongs to.
    to: String,
    /// The continue token of the next page to do.
    #[serde(default, rename = "continue", skip_serializing_if = "Option::is_none")]
    next: Option<String>,
    /// Objects rewritten so far.
    #[serde(default)]
    migrated: u64,
}

/// Why a pass did not finish.
#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error("{0}")]
    Waiting(String),
    /// The API's answer is rendered once, in the message.
    #[error("{what}: {}", api_error_text(.error))]
    Api { what: String, error: kube::Error },
    #[error(
        "{count} object(s) could not be rewritten in {to}, so {from} stays in status.storedVersions; first: {first}"
    )]
    Objects { count: usize, to: String, from: String, first: String, stored: Vec<String>, migrated: u64 },
}

/// The migration of one resource.
pub(crate) struct Migration {
    pub(crate) client: Client,
    pub(crate) resource: ResourceSpec,
    pub(crate) health: Health,
    /// The operator's name (the field manager of its annotation).
    pub(crate) operator: String,
    pub(crate) options: StorageMigration,
    /// Leadership, when elected: only the leader migrates.
    pub(crate) leading: Option<watch::Receiver<bool>>,
}

impl Migration {
    fn crd_name(&self) -> String {
        format!("{}.{}", self.resource.plural, self.resource.group)
    }

    fn report(&self, phase: MigrationPhase, stored: &[String], migrated: u64, message: Option<String>) {
        self.health.set_migration(MigrationStatus {
            resource: self.crd_name(),
            phase,
            to: self.resource.storage_version().to_owned(),
            stored_versions: stored.to_vec(),
            migrated,
            message,
        });
    }

    /// Migrate whenever needed until `stop` reads `true`.
    pub(crate) async fn run(self, mut stop: watch::Receiver<bool>) {
        self.report(MigrationPhase::Waiting, &[], 0, Some("not started".into()));
        loop {
            if let Some(mut leading) = self.leading.clone() {
                tokio::select! {
                    r = leading.wait_for(|l| *l) => if r.is_err() { return },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
            let lost = async {
                match self.leading.clone() {
                    Some(mut l) => {
                        let _ = l.wait_for(|l| !*l).await;
                    }
                    None => std::future::pending().await,
                }
            };
            let pause = tokio::select! {
                r = self.pass() => match r {
                    Ok(()) => RECHECK,
                    Err(PassError::Waiting(message)) => {
                        self.report(MigrationPhase::Waiting, &[], 0, Some(message));
                        RECHECK
                    }
                    Err(e) => {
                        let message = e.to_string();
                        tracing::warn!(resource = self.crd_name(), error = message, "storage migration failed; trying again");
                        let (stored, migrated) = match e {
                            PassError::Objects { stored, migrated, .. } => (stored, migrated),
                            _ => self
                                .health
                                .migration(&self.crd_name())
                                .map(|m| (m.stored_versions, m.migrated))
                                .unwrap_or_default(),
                        };
                        self.report(MigrationPhase::Failed, &stored, migrated, Some(message));
                        RETRY
                    }
                },
                () = lost => continue,
                _ = stop.wait_for(|s| *s) => return,
            };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }

    /// One look at the CRD and, when older versions are still stored, one migration.
    async fn pass(&self) -> Result<(), PassError> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let name = self.crd_name();
        let api_err = |what: &str| {
            let what = what.to_owned();
            move |error| PassError::Api { what, error }
        };
        let Some(crd) = crds.get_opt(&name).await.map_err(api_err("cannot read the CRD"))? else {
            return Err(PassError::Waiting(format!("the CRD {name} is not installed")));
        };
        let storage = storage_version(&crd);
        let declared = self.resource.storage_version();
        if storage.as_deref() != Some(declared) {
            return Err(PassError::Waiting(format!(
                "the CRD {name} stores {}, the script declares {declared}: apply the CRD of this script (ctop manifests)",
                storage.as_deref().unwrap_or("no version")
            )));
        }
        let stored = stored_versions(&crd);
        let mut progress = progress(&crd)
            .filter(|p| p.to == declared)
            .unwrap_or_else(|| Progress { to: declared.to_owned(), ..Progress::default() });
        if stored.iter().all(|v| v == declared) {
            if crd.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(PROGRESS_ANNOTATION)) {
                self.record(&crds, None).await?;
            }
            self.report(MigrationPhase::Done, &stored, progress.migrated, None);
            return Ok(());
        }
        let old: Vec<&str> = stored.iter().map(String::as_str).filter(|v| *v != declared).collect();
        tracing::info!(resource = name, from = ?old, to = declared, resuming = progress.next.is_some(), "migrating storage");
        self.report(MigrationPhase::Running, &stored, progress.migrated, None);

        let api = self.objects();
        let mut pace = tokio::time::interval(Duration::from_secs(1) / self.options.rate.max(1));
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failures: Vec<String> = Vec::new();
        let mut token = progress.next.clone();
        if token.is_none() {
            progress.migrated = 0;
        }
        loop {
            let mut params = ListParams::default().limit(PAGE);
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            let page = match api.list(&params).await {
                Ok(page) => page,
                // The continue token expired: start over (rewrites are idempotent).
                Err(kube::Error::Api(s)) if s.code == 410 && token.is_some() => {
                    tracing::info!(
                        resource = name,
                        "the list's continue token expired; starting the migration over"
                    );
                    token = None;
                    progress.migrated = 0;
                    continue;
                }
                Err(error) => return Err(PassError::Api { what: format!("cannot list {name}"), error }),
            };
            for obj in &page.items {
                pace.tick().await;
                match self.rewrite(obj).await {
                    Ok(()) => progress.migrated += 1,
                    Err(e) => failures.push(format!("{}: {e}", key(obj))),
                }
            }
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
            progress.next = token.clone();
            self.record(&crds, Some(&progress)).await?;
            self.report(MigrationPhase::Running, &stored, progress.migrated, None);
        }
        if let Some(first) = failures.first() {
            // The next pass starts over, so that the failed objects are tried again.
            self.record(&crds, None).await?;
            return Err(PassError::Objects {
                count: failures.len(),
                to: declared.to_owned(),
                from: old.join(", "),
                first: first.clone(),
                stored: stored.clone(),
                migrated: progress.migrated,
            });
        }
        // Only now may the older versions go, and only if the storage version is the one
        // every object was just written in.
        let crd = crds.get(&name).await.map_err(api_err("cannot read the CRD"))?;
        if storage_version(&crd).as_deref() != Some(declared) {
            return Err(PassError::Waiting(format!(
                "the storage version of {name} changed during the migration"
            )));
        }
        let patch = json!({
            "metadata": {"resourceVersion": crd.metadata.resource_version},
            "status": {"storedVersions": [declared]},
        });
        crds.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(api_err("cannot update status.storedVersions"))?;
        self.record(&crds, None).await?;
        tracing::info!(resource = name, to = declared, migrated = progress.migrated, "storage migrated");
        self.report(MigrationPhase::Done, &[declared.to_owned()], progress.migrated, None);
        Ok(())
    }

    /// The resource in the hub version (always served), which objects are read and written in.
    fn hub(&self) -> ApiResource {
        let r = &self.resource;
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&r.group, &r.version, &r.kind), &r.plural)
    }

    /// The objects of the resource in every namespace.
    fn objects(&self) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &self.hub())
    }

    /// Write `obj` back unchanged: the API server stores it in the storage version. When it
    /// was written since it was listed (409), what it is now is read and written back
    /// instead, as kube-storage-version-migrator does: the other write may have been stored
    /// in the old version.
    async fn rewrite(&self, obj: &DynamicObject) -> Result<(), String> {
        let ar = self.hub();
        let name = obj.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match (&self.resource.scope, &obj.metadata.namespace) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        };
        let mut read_again = None;
        for _ in 0..CONFLICT_TRIES {
            let current = read_again.as_ref().unwrap_or(obj);
            match api.replace(&name, &PostParams::default(), current).await {
                Ok(_) => return Ok(()),
                // Gone: nothing is stored to migrate.
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => match api.get_opt(&name).await {
                    Ok(Some(now)) => read_again = Some(now),
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(api_error_text(&e)),
                },
                Err(e) => return Err(api_error_text(&e)),
            }
        }
        Err(format!(
            "it was written by someone else on each of {CONFLICT_TRIES} tries; it is tried again in the next pass"
        ))
    }

    /// Keep `progress` in the CRD's annotation (`None` removes it).
    async fn record(
        &self,
        crds: &Api<CustomResourceDefinition>,
        progress: Option<&Progress>,
    ) -> Result<(), PassError> {
        let value = match progress {
            Some(p) => json!(serde_json::to_string(p).unwrap_or_default()),
            None => serde_json::Value::Null,
        };
        let patch = json!({"metadata": {"annotations": {PROGRESS_ANNOTATION: value}}});
        let params = PatchParams { field_manager: Some(self.operator.clone()), ..PatchParams::default() };
        crds.patch(&self.crd_name(), &params, &Patch::Merge(&patch)).await.map_err(|error| {
            PassError::Api { what: "cannot record the migration's progress on the CRD".into(), error }
        })?;
        Ok(())
    }
}

/// `namespace/name` (or `name`).
fn key(obj: &DynamicObject) -> String {
    let name = obj.metadata.name.as_deref().unwrap_or_default();
    match obj.metadata.namespace.as_deref() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

fn storage_version(crd: &CustomResourceDefinition) -> Option<String> {
    crd.spec.versions.iter().find(|v| v.storage).map(|v| v.name.clone())
}

fn stored_versions(crd: &CustomResourceDefinition) -> Vec<String> {
    crd.status.as_ref().and_then(|s| s.stored_versions.clone()).unwrap_or_default()
}

fn progress(crd: &CustomResourceDefinition) -> Option<Progress> {
    let text = crd.metadata.annotations.as_ref()?.get(PROGRESS_ANNOTATION)?;
    match serde_json::from_str(text) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(annotation = PROGRESS_ANNOTATION, error = %e, "unreadable migration progress; starting over");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_back() {
        let p = Progress { to: "v2".into(), next: Some("token".into()), migrated: 7 };
        let text = serde_json::to_string(&p).expect("serializes");
        assert_eq!(text, r#"{"to":"v2","continue":"token","migrated":7}"#);
        assert_eq!(serde_json::from_str::<Progress>(&text).expect("reads"), p);
    }
}
