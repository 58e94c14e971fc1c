//! Deletes: preconditions, graceful deletion of Pods (`graceful.rs`), finalizers and
//! `deletionTimestamp`, propagation policies, and namespace finalization.

use serde_json::{Value, json};

use super::admit::Admit;
use super::graceful::{Grace, before_delete};
use super::{Api, DeleteOpts, Deleted, WriteOpts, Written, meta_mut, obj_key};
use crate::api::admission::Operation;
use crate::api::convert;
use crate::error::ApiError;
use crate::kinds::meta::{self, deleting, finalizers};
use crate::kinds::registry::ResourceType;
use crate::store::{CommitError, object_rv, uid_of};

impl Api {
    /// `DELETE`.
    pub async fn delete(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<Deleted, ApiError> {
        for _ in 0..16 {
            let stored = self.live(rt, ns, name).ok_or_else(|| ApiError::not_found(rt.gr(), name))?;
            // The deletion works on the object in the request's version, and stores it back
            // in the storage version while finalizers hold it.
            let current = self.current(rt, stored).await?;
            let live = &current.object;
            if let Some(uid) = &opts.uid {
                let have = uid_of(live).unwrap_or_default();
                if uid != have {
                    return Err(ApiError::conflict(
                        rt.gr(),
                        name,
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {have}"
                        ),
                    ));
                }
            }
            if let Some(rv) = &opts.resource_version {
                let have = object_rv(live).to_string();
                if *rv != have {
                    return Err(ApiError::conflict(
                        rt.gr(),
                        name,
                        &format!(
                            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {have}"
                        ),
                    ));
                }
            }
            let req = Admit {
                op: Operation::Delete,
                ns,
                name,
                sub: None,
                old: Some(live),
                dry_run: opts.dry_run,
                user: &opts.user,
            };
            let mut warnings = Vec::new();
            self.admit_mutate(rt, &req, None, &mut warnings).await?;
            self.admit_validate(rt, &req, None, &mut warnings).await?;
            let grace = before_delete(rt, live, opts.grace_period, crate::clock::timestamp());
            if grace == Grace::Pending {
                // A graceful deletion under way, not shortened: the object as it is (and no
                // finalizer changes from the request's propagation policy).
                return Ok(Deleted::Pending(convert::to_served(rt, live)));
            }
            let mut fins = finalizers(live);
            let policy_fin = match opts.propagation.as_deref() {
                Some("Foreground") => Some("foregroundDeletion"),
                Some("Orphan") => Some("orphan"),
                _ => None,
            };
            let is_ns = rt.group.is_empty() && rt.kind == "Namespace";
            let ns_pending = is_ns
                && live.pointer("/spec/finalizers").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
            if let Some(f) = policy_fin
                && !fins.iter().any(|x| x == f)
            {
                fins.push(f.to_owned());
            }
            let key = obj_key(rt, ns, name);
            if let Grace::Set { timestamp, seconds } = &grace {
                match self.delete_gracefully(rt, &current, opts, (timestamp, *seconds), fins).await? {
                    Some(deleted) => return Ok(deleted),
                    None => continue,
                }
            }
            if fins.is_empty() && !ns_pending {
                if opts.dry_run {
                    return Ok(Deleted::Gone(convert::to_served(rt, live)));
                }
                match self.store.remove(&rt.store, &key, object_rv(live), opts.attribution().as_ref()) {
                    Ok(change) => {
                        self.after_commit(rt, &change);
                        return Ok(Deleted::Gone(self.gone_answer(rt, &change.object).await?));
                    }
                    Err(CommitError::Missing) => return Err(ApiError::not_found(rt.gr(), name)),
                    Err(_) => continue,
                }
            }
            let mut new = (*live).clone();
            let meta = meta_mut(&mut new);
            meta.insert("finalizers".into(), json!(fins));
            if !deleting(live) {
                meta.insert("deletionTimestamp".into(), json!(meta::now()));
                meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                if rt.generation {
                    let g = meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
                    meta.insert("generation".into(), json!(g + 1));
                }
            }
            if is_ns {
                new["status"]["phase"] = json!("Terminating");
            }
            let new = self.to_storage(rt, new).await?;
            if new == *current.stored {
                return Ok(Deleted::Pending(convert::to_served(rt, live)));
            }
            if opts.dry_run {
                return Ok(Deleted::Pending(self.served(rt, &new).await?));
            }
            match self.store.update(&rt.store, &key, object_rv(live), new, opts.attribution().as_ref()) {
                Ok(change) => {
                    self.after_commit(rt, &change);
                    return Ok(Deleted::Pending(self.served(rt, &change.object).await?));
                }
                Err(CommitError::Missing) => return Err(ApiError::not_found(rt.gr(), name)),
                Err(_) => continue,
            }
        }
        Err(ApiError::stale(rt.gr(), name))
    }

    /// What a DELETE that removed `removed` answers: the object for the kinds whose storage
    /// returns it, else a `Success` Status naming it.
    async fn gone_answer(&self, rt: &ResourceType, removed: &Value) -> Result<Value, ApiError> {
        if returns_deleted_object(rt) {
            return Ok(self.served(rt, removed).await?);
        }
        let name = removed.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        let mut details = json!({"name": name, "kind": rt.plural, "uid": uid_of(removed)});
        if !rt.group.is_empty() {
            details["group"] = json!(rt.group);
        }
        Ok(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
        )
    }

    /// A graceful deletion (`updateForGracefulDeletionAndFinalizers`): the object is written
    /// with its deletion deadline and grace period (and the request's finalizers), and with
    /// a grace period of 0 and no finalizers then removed, so watchers see it MODIFIED, then
    /// DELETED. `None`: the object changed meanwhile, try again.
    async fn delete_gracefully(
        &self,
        rt: &ResourceType,
        current: &super::Current,
        opts: &DeleteOpts,
        (timestamp, seconds): (&str, i64),
        fins: Vec<String>,
    ) -> Result<Option<Deleted>, ApiError> {
        let live = &current.object;
        let (ns, name) = (
            live.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default(),
            live.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default(),
        );
        let mut new = live.clone();
        let meta = meta_mut(&mut new);
        meta.insert("deletionTimestamp".into(), json!(timestamp));
        meta.insert("deletionGracePeriodSeconds".into(), json!(seconds));
        if !fins.is_empty() {
            meta.insert("finalizers".into(), json!(fins));
        }
        let remove = seconds == 0 && fins.is_empty();
        let new = self.to_storage(rt, new).await?;
        if opts.dry_run {
            let answer = if remove {
                Deleted::Gone(self.gone_answer(rt, &new).await?)
            } else {
                Deleted::Pending(self.served(rt, &new).await?)
            };
            return Ok(Some(answer));
        }
        let key = obj_key(rt, ns, name);
        let by = opts.attribution();
        let change = match self.store.update(&rt.store, &key, object_rv(live), new, by.as_ref()) {
            Ok(change) => change,
            Err(CommitError::Missing) => return Err(ApiError::not_found(rt.gr(), name)),
            Err(_) => return Ok(None),
        };
        self.after_commit(rt, &change);
        if !remove {
            return Ok(Some(Deleted::Pending(self.served(rt, &change.object).await?)));
        }
        match self.store.remove(&rt.store, &key, object_rv(&change.object), by.as_ref()) {
            Ok(change) => {
                self.after_commit(rt, &change);
                Ok(Some(Deleted::Gone(self.gone_answer(rt, &change.object).await?)))
            }
            // Someone else removed it first (the race `ignoreNotFound` tolerates).
            Err(CommitError::Missing) => Ok(Some(Deleted::Gone(self.gone_answer(rt, &change.object).await?))),
            Err(_) => Ok(None),
        }
    }

    /// `PUT /api/v1/namespaces/{name}/finalize`: replace `spec.finalizers` (`opts` only
    /// attribute the write).
    pub fn finalize_namespace(
        &self,
        name: &str,
        body: &Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let rt = self.registry.get("", "v1", "namespaces").ok_or_else(ApiError::no_route)?;
        let live = self.live(&rt, "", name).ok_or_else(|| ApiError::not_found(rt.gr(), name))?;
        let mut new = (*live).clone();
        new["spec"]["finalizers"] = body.pointer("/spec/finalizers").cloned().unwrap_or_else(|| json!([]));
        let key = obj_key(&rt, "", name);
        let empty = new.pointer("/spec/finalizers").and_then(Value::as_array).is_none_or(Vec::is_empty);
        let by = opts.attribution();
        let change = if deleting(&new) && empty && finalizers(&new).is_empty() {
            self.store.remove(&rt.store, &key, object_rv(&live), by.as_ref())
        } else {
            self.store.update(&rt.store, &key, object_rv(&live), new, by.as_ref())
        }
        .map_err(|_| ApiError::stale(rt.gr(), name))?;
        self.after_commit(&rt, &change);
        Ok(Written { object: convert::to_served(&rt, &change.object), code: 200, warnings: Vec::new() })
    }
}

/// Whether `DELETE` answers with the deleted object rather than a `Status`: custom
/// resources and the built-in kinds whose storage says so (`ReturnDeletedObject` in
/// kube-apiserver's registry).
fn returns_deleted_object(rt: &ResourceType) -> bool {
    rt.crd.is_some()
        || matches!(
            (rt.group.as_str(), rt.kind.as_str()),
            (
                "",
                "Pod"
                    | "Service"
                    | "PersistentVolume"
                    | "PersistentVolumeClaim"
                    | "ServiceAccount"
                    | "ResourceQuota"
                    | "PodTemplate"
            ) | ("storage.k8s.io", "StorageClass" | "CSIDriver" | "CSINode" | "VolumeAttachment")
        )
}
