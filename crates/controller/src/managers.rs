//! Moving field ownership from the field manager every operator had before operators got
//! names of their own (`ctop`) to this operator's name, once, at start.
//!
//! Server-side apply removes a field a manager stops applying only when no other manager
//! owns it. An operator upgraded from the old name would apply under its new name while
//! the old name's entries stayed on every object it had written: the fields it stops
//! applying would never be removed, and two operators that both ran as `ctop` would keep
//! pruning each other's fields. As client-go's `csaupgrade` does for client-side apply,
//! each entry of the former manager is merged into this operator's entry of the same
//! operation and subresource (or renamed to it), in one JSON patch of `managedFields`
//! guarded by the object's resourceVersion. The caches tell which objects carry the former
//! manager (`Object::has_former_manager`); only those are read and written.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::ObjectMeta;
use serde_json::{Map, Value, json};

use crate::cluster::api_for;
use crate::context::Ctx;
use crate::error::api_error_text;
use crate::informer::Cached;
use crate::object::{FORMER_MANAGER, Object};

/// `entries` with every entry of manager `from` merged into `to`'s entry of the same
/// operation and subresource (or renamed to `to` when it has none); `None` when `from`
/// has no entry.
pub(crate) fn migrate(
    entries: &[ManagedFieldsEntry],
    from: &str,
    to: &str,
) -> Option<Vec<ManagedFieldsEntry>> {
    if !entries.iter().any(|e| e.manager.as_deref() == Some(from)) {
        return None;
    }
    let same_slot = |a: &ManagedFieldsEntry, b: &ManagedFieldsEntry| {
        a.operation == b.operation
            && a.subresource.as_deref().unwrap_or("") == b.subresource.as_deref().unwrap_or("")
    };
    let mut out: Vec<ManagedFieldsEntry> =
        entries.iter().filter(|e| e.manager.as_deref() != Some(from)).cloned().collect();
    for old in entries.iter().filter(|e| e.manager.as_deref() == Some(from)) {
        match out.iter_mut().find(|e| e.manager.as_deref() == Some(to) && same_slot(e, old)) {
            Some(mine) => {
                let mut fields = mine.fields_v1.take().map_or(Value::Object(Map::new()), |f| f.0);
                if let Some(theirs) = &old.fields_v1 {
                    union(&mut fields, &theirs.0);
                }
                mine.fields_v1 = Some(FieldsV1(fields));
            }
            None => {
                let mut renamed = old.clone();
                renamed.manager = Some(to.to_owned());
                out.push(renamed);
            }
        }
    }
    Some(out)
}

/// Add the field set `from` (a `FieldsV1` tree: maps whose leaves are `{}`) into `into`.
fn union(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(k) {
                    Some(mine) => union(mine, v),
                    None => {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (into, from) => *into = from.clone(),
    }
}

/// Move the former manager's fields to this operator's name on every cached object that
/// carries it (see the module docs). Failures are logged: the next start tries again.
pub(crate) async fn take_over_former(ctx: &Ctx) {
    let me = ctx.options.name.as_str();
    if me == FORMER_MANAGER {
        return;
    }
    let mut moved = 0usize;
    for cache in ctx.caches.iter() {
        for o in cache.store.state().iter().filter(|o| o.has_former_manager()) {
            match take_over(ctx, cache, o, me).await {
                Ok(true) => moved += 1,
                Ok(false) => {}
                Err(e) => tracing::warn!(
                    controller = ctx.spec.name,
                    object = format!("{} {}", cache.ar.kind, crate::object::object_key(o)),
                    error = %api_error_text(&e),
                    "cannot move the fields of the former field manager ctop; tried again at the next start"
                ),
            }
        }
    }
    if moved > 0 {
        tracing::info!(
            controller = ctx.spec.name,
            objects = moved,
            manager = me,
            "moved the fields of the former field manager ctop to this operator's name"
        );
    }
}

/// Move `o`'s fields of the former manager to `me`; `false` when there was nothing to move.
async fn take_over(ctx: &Ctx, cache: &Cached, o: &Object, me: &str) -> Result<bool, kube::Error> {
    let api: Api<DynamicObject> =
        api_for(&ctx.client, &cache.ar, cache.namespaced, o.namespace().filter(|_| cache.namespaced));
    let params = PatchParams { field_manager: Some(me.to_owned()), ..PatchParams::default() };
    // Twice at most: a write between the read and the patch fails its test once.
    for _ in 0..2 {
        let Some(live) = api.get_opt(o.name()).await? else { return Ok(false) };
        let ObjectMeta { managed_fields, resource_version, uid, .. } = live.metadata;
        if uid.as_deref() != o.uid() {
            return Ok(false);
        }
        let Some(entries) = migrate(&managed_fields.unwrap_or_default(), FORMER_MANAGER, me) else {
            return Ok(false);
        };
        let patch = json!([
            {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
            {"op": "replace", "path": "/metadata/managedFields", "value": entries},
        ]);
        let patch: json_patch::Patch = serde_json::from_value(patch).map_err(kube::Error::SerdeError)?;
        match api.patch(o.name(), &params, &Patch::<()>::Json(patch)).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 422 => {}
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(manager: &str, operation: &str, subresource: Option<&str>, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: subresource.map(str::to_owned),
            api_version: Some("v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            time: None,
        }
    }

    #[test]
    fn the_former_managers_entries_merge_into_or_become_this_operators() {
        let entries = vec![
            entry("ctop", "Apply", None, json!({"f:data": {"f:a": {}, "f:b": {}}})),
            entry("webapp", "Apply", None, json!({"f:data": {"f:a": {}, "f:c": {}}})),
            entry("ctop", "Update", Some("status"), json!({"f:status": {"f:phase": {}}})),
            entry("kubectl", "Update", None, json!({"f:metadata": {"f:labels": {"f:x": {}}}})),
        ];
        let out = migrate(&entries, "ctop", "webapp").expect("something to move");
        assert!(out.iter().all(|e| e.manager.as_deref() != Some("ctop")), "nothing is left to ctop");
        let apply = out.iter().find(|e| e.operation.as_deref() == Some("Apply")).expect("apply entry");
        assert_eq!(apply.manager.as_deref(), Some("webapp"));
        assert_eq!(
            apply.fields_v1.as_ref().map(|f| &f.0),
            Some(&json!({"f:data": {"f:a": {}, "f:b": {}, "f:c": {}}})),
            "the union of both"
        );
        let status = out.iter().find(|e| e.subresource.as_deref() == Some("status")).expect("status entry");
        assert_eq!(status.manager.as_deref(), Some("webapp"), "renamed: the operator had none of its own");
        assert_eq!(out.len(), 3, "kubectl's entry is untouched");
        assert_eq!(migrate(&out, "ctop", "webapp"), None, "nothing more to move");
    }
}
