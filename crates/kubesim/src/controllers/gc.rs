//! The controllers kube-controller-manager would run, as one in-process task: the
//! garbage collector (background, foreground and orphan propagation over owner
//! references), namespace termination, and the cleanup of a deleted CRD's objects.
//!
//! It receives the [`Work`] each change [`crate::api::Api`] commits gives it (worked out by
//! `cleanup::work_for`) and acts through the same API, so its writes are ordinary watch
//! events with their own resourceVersions. The API never calls it. Work that a logged
//! change gave (an overlay's request writes, [`crate::store::RequestWrite`]) makes writes
//! that are logged too, as that change's consequences.
//!
//! An owner counts as gone when no object has its uid; in an overlay, only when an object
//! with that uid was deleted here ([`crate::store::Store::counts_as_gone`]): the overlay
//! holds only what a mirror copied of a live cluster, so an unknown owner may well exist.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api::{Api, DeleteOpts, PatchKind, WriteOpts};
use crate::controllers::cleanup::{Task, Work, name_ns};
use crate::kinds::meta::{deleting, finalizers};
use crate::kinds::registry::{ResourceType, StoreKey};
use crate::store::{ObjKey, WriteCause, object_rv, uid_of};

const GC_MANAGER: &str = "kube-controller-manager";

/// What the log records a write as: `None` when the work's cause was not logged.
type LogAs = Option<WriteCause>;

fn system_opts(log_as: LogAs) -> WriteOpts {
    WriteOpts {
        field_manager: Some(GC_MANAGER.into()),
        user_agent: GC_MANAGER.into(),
        user: gc_user(),
        log_as,
        ..WriteOpts::default()
    }
}

/// The identity the collector's writes carry in admission requests.
fn gc_user() -> crate::api::admission::UserInfo {
    crate::api::admission::UserInfo {
        username: "system:serviceaccount:kube-system:generic-garbage-collector".into(),
        uid: String::new(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            "system:authenticated".into(),
        ],
    }
}

/// Run the collector until the API is dropped or stops sending work.
pub async fn run(api: std::sync::Weak<Api>, mut work: mpsc::UnboundedReceiver<Task>) {
    let (retry_tx, mut retry_rx) = mpsc::unbounded_channel::<Task>();
    loop {
        let next = tokio::select! {
            w = work.recv() => match w {
                Some(w) => w,
                None => break,
            },
            Some(w) = retry_rx.recv() => w,
        };
        let Some(api) = api.upgrade() else { break };
        if !step(&api, &next).await {
            // Someone else wrote first; look again shortly.
            let retry = retry_tx.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let _ = retry.send(next);
            });
        }
    }
}

/// The type to act on `obj` through: the version it is stored in when that is served (so
/// that the collector's writes need no conversion webhook), else one of its kind.
fn type_of(api: &Api, store: &str, obj: &Value) -> Option<Arc<ResourceType>> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let types = api.registry.by_store(store);
    types
        .iter()
        .find(|t| t.kind == kind && t.gv == api_version)
        .or_else(|| types.iter().find(|t| t.kind == kind))
        .or_else(|| types.first())
        .cloned()
}

/// Do one piece of work; `false` when it should be retried.
async fn step(api: &Api, task: &Task) -> bool {
    // Its writes are logged when the change that gave the work was.
    let gc = task.because.map(|because| WriteCause::GarbageCollector { because });
    match &task.work {
        Work::OwnerGone(uid) => {
            for (loc, _) in api.store.dependents(uid) {
                if !check_dependent(api, &loc.store, &loc.key, gc).await {
                    return false;
                }
            }
            true
        }
        Work::Dependent(store, key) => check_dependent(api, store, key, gc).await,
        Work::Owner(uid) => finish_owner(api, uid, gc).await,
        Work::Namespace(ns) => {
            let log_as = task.because.map(|because| WriteCause::NamespaceCleanup { because });
            cleanup_namespace(api, ns, log_as).await
        }
        Work::CrdCleanup(name) => {
            cleanup_crd(api, name, task.because.map(|because| WriteCause::CrdCleanup { because })).await
        }
    }
}

async fn delete_obj(api: &Api, rt: &ResourceType, obj: &Value, policy: &str, log_as: LogAs) -> bool {
    let (ns, name) = name_ns(obj);
    let opts = DeleteOpts {
        propagation: Some(policy.into()),
        uid: uid_of(obj).map(str::to_owned),
        user: gc_user(),
        log_as,
        ..DeleteOpts::default()
    };
    match api.delete(rt, &ns, &name, &opts).await {
        Ok(_) => true,
        Err(e) if e.code == 404 => true,
        Err(e) if e.code == 409 && e.message.contains("Precondition failed: UID") => true,
        Err(e) => {
            tracing::debug!(error = %e, name, "garbage collector delete will be retried");
            false
        }
    }
}

/// Merge-patch `metadata` fields with a resourceVersion precondition.
async fn patch_meta(api: &Api, rt: &ResourceType, obj: &Value, meta: Value, log_as: LogAs) -> bool {
    let (ns, name) = name_ns(obj);
    let mut meta = meta;
    meta["resourceVersion"] = json!(object_rv(obj).to_string());
    let body = json!({"metadata": meta});
    match api.patch(rt, &ns, &name, None, PatchKind::Merge, &body, &system_opts(log_as)).await {
        Ok(_) => true,
        Err(e) if e.code == 404 => true,
        Err(e) => {
            tracing::debug!(error = %e, name, "garbage collector patch will be retried");
            false
        }
    }
}

async fn check_dependent(api: &Api, store: &StoreKey, key: &ObjKey, log_as: LogAs) -> bool {
    let Some(obj) = api.store.get(store, key) else { return true };
    let Some(rt) = type_of(api, store, &obj) else { return true };
    let refs: Vec<Value> =
        obj.pointer("/metadata/ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
    if refs.is_empty() {
        return true;
    }
    let mut alive = Vec::new();
    let mut foreground_owner = false;
    // The latest logged deletion of an owner that is gone: what the writes below are
    // logged as caused by (whatever change made the collector look).
    let mut gone_because = None;
    for r in &refs {
        let uid = r["uid"].as_str().unwrap_or_default();
        if let Some((_, owner)) = api.store.by_uid(uid) {
            if deleting(&owner) && finalizers(&owner).iter().any(|f| f == "foregroundDeletion") {
                foreground_owner = true;
            }
            alive.push(r.clone());
        } else if api.store.counts_as_gone(uid) {
            gone_because = gone_because.max(api.store.deletion_seq(uid));
        } else {
            // An overlay's owner that was never here: the live cluster may have it.
            alive.push(r.clone());
        }
    }
    let for_gone = gone_because.map(|because| WriteCause::GarbageCollector { because }).or(log_as);
    if alive.is_empty() {
        if deleting(&obj) {
            return true;
        }
        return delete_obj(api, &rt, &obj, "Background", for_gone).await;
    }
    if alive.len() != refs.len()
        && !patch_meta(api, &rt, &obj, json!({"ownerReferences": alive}), for_gone).await
    {
        return false;
    }
    if foreground_owner {
        for r in &refs {
            if let Some(uid) = r["uid"].as_str()
                && !finish_owner(api, uid, log_as).await
            {
                return false;
            }
        }
    }
    true
}

async fn finish_owner(api: &Api, uid: &str, log_as: LogAs) -> bool {
    let Some((loc, owner)) = api.store.by_uid(uid) else { return true };
    if !deleting(&owner) {
        return true;
    }
    let Some(rt) = type_of(api, &loc.store, &owner) else { return true };
    let fins = finalizers(&owner);
    let dependents = api.store.dependents(uid);
    if fins.iter().any(|f| f == "orphan") {
        for (dloc, dep) in &dependents {
            let Some(drt) = type_of(api, &dloc.store, dep) else { continue };
            let refs: Vec<Value> = dep
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| r["uid"].as_str() != Some(uid))
                .cloned()
                .collect();
            let refs = if refs.is_empty() { Value::Null } else { Value::Array(refs) };
            if !patch_meta(api, &drt, dep, json!({"ownerReferences": refs}), log_as).await {
                return false;
            }
        }
        let rest: Vec<&String> = fins.iter().filter(|f| *f != "orphan").collect();
        return patch_meta(api, &rt, &owner, json!({"finalizers": rest}), log_as).await;
    }
    if fins.iter().any(|f| f == "foregroundDeletion") {
        let mut blocking = false;
        for (dloc, dep) in &dependents {
            let blocks =
                dep.pointer("/metadata/ownerReferences").and_then(Value::as_array).into_iter().flatten().any(
                    |r| r["uid"].as_str() == Some(uid) && r["blockOwnerDeletion"].as_bool() == Some(true),
                );
            blocking |= blocks;
            if !deleting(dep) {
                let Some(drt) = type_of(api, &dloc.store, dep) else { continue };
                if !delete_obj(api, &drt, dep, "Foreground", log_as).await {
                    return false;
                }
            }
        }
        if !blocking {
            // Refetch: deleting dependents may have changed nothing on the owner, but a
            // stale resourceVersion is retried anyway.
            let Some((_, owner)) = api.store.by_uid(uid) else { return true };
            let rest: Vec<String> =
                finalizers(&owner).into_iter().filter(|f| f != "foregroundDeletion").collect();
            return patch_meta(api, &rt, &owner, json!({"finalizers": rest}), log_as).await;
        }
    }
    true
}

async fn cleanup_namespace(api: &Api, ns: &str, log_as: LogAs) -> bool {
    let Some(rt) = api.registry.get("", "v1", "namespaces") else { return true };
    let Some(nsobj) = api.store.get(&rt.store, &(String::new(), ns.to_owned())) else { return true };
    if !deleting(&nsobj) {
        return true;
    }
    let contents = api.store.in_namespace(ns);
    for (loc, obj) in &contents {
        if deleting(obj) {
            continue;
        }
        let Some(ort) = type_of(api, &loc.store, obj) else { continue };
        if !delete_obj(api, &ort, obj, "Background", log_as).await {
            return false;
        }
    }
    if !api.store.in_namespace(ns).is_empty() {
        return true;
    }
    let spec_fins: Vec<Value> = nsobj
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|f| f.as_str() != Some("kubernetes"))
        .cloned()
        .collect();
    match api.finalize_namespace(ns, &json!({"spec": {"finalizers": spec_fins}}), &system_opts(log_as)) {
        Ok(_) => true,
        Err(e) => e.code == 404,
    }
}

async fn cleanup_crd(api: &Api, crd_name: &str, log_as: LogAs) -> bool {
    let Some(crt) = api.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") else {
        return true;
    };
    let Some(crd) = api.store.get(&crt.store, &(String::new(), crd_name.to_owned())) else { return true };
    if !deleting(&crd) {
        return true;
    }
    let types: Vec<Arc<ResourceType>> = api
        .registry
        .all()
        .into_iter()
        .filter(|t| t.crd.as_ref().is_some_and(|c| c.crd_name == crd_name))
        .collect();
    let mut remaining = 0;
    if let Some(store) = types.first().map(|t| t.store.clone()) {
        let (_, table) = api.store.snapshot(&store, false);
        remaining = table.len();
        for obj in table.values() {
            let Some(rt) = type_of(api, &store, obj) else { continue };
            if !deleting(obj) && !delete_obj(api, &rt, obj, "Background", log_as).await {
                return false;
            }
        }
    }
    if remaining > 0 {
        return true;
    }
    let rest: Vec<String> =
        finalizers(&crd).into_iter().filter(|f| f != "customresourcecleanup.apiextensions.k8s.io").collect();
    patch_meta(api, &crt, &crd, json!({"finalizers": rest}), log_as).await
}
