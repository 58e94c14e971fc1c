//! Writing an object's finalizers with a JSON patch that cannot conflict with the other
//! writes of the object (its deletion, its status, a label): it tests the object's uid and
//! the list it changes, not the object's resourceVersion. Only a concurrent change of the
//! finalizers themselves fails the test; the list is then read again and the change made
//! on what is there (as kube-runtime's finalizer helper and controller-runtime's
//! retry-on-conflict do).

use ctop_core::FinalizerChanges;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use super::events::describe;
use crate::cluster::api_for;
use crate::context::Ctx;
use crate::error::ReconcileError;
use crate::object::Object;

/// The finalizer the controller holds on a primary that has children in other namespaces
/// (tied by label, see `ctop_applier::applyset::OWNER_ANNOTATION`), which the garbage
/// collector cannot delete with it: `children.ctop.dev/<operator>`. On the primary's
/// deletion the controller prunes them (see `finalize`), then removes it.
pub(crate) fn children_finalizer(ctx: &Ctx) -> String {
    format!("children.ctop.dev/{}", ctx.options.name)
}

/// A change of an object's finalizers: names to add (unless it is being deleted, when the
/// API server refuses new ones) and names to remove.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Change<'a> {
    pub(crate) add: &'a [String],
    pub(crate) remove: &'a [String],
}

impl Change<'_> {
    /// `current` after the change; `None` when it changes nothing.
    fn apply(&self, current: &[String], deleting: bool) -> Option<Vec<String>> {
        let mut next: Vec<String> = current.iter().filter(|f| !self.remove.contains(f)).cloned().collect();
        if !deleting {
            for f in self.add {
                if !next.contains(f) {
                    next.push(f.clone());
                }
            }
        }
        (next != current).then_some(next)
    }
}

/// The JSON patch that turns `current` into `next` on the object `uid`, or fails.
fn json_patch(
    uid: Option<&str>,
    current: &[String],
    next: &[String],
) -> Result<json_patch::Patch, ReconcileError> {
    serde_json::from_value(patch(uid, current, next))
        .map_err(|e| ReconcileError::BadObject { action: "update finalizers", reason: e.to_string() })
}

/// The operations of [`json_patch`], as JSON.
fn patch(uid: Option<&str>, current: &[String], next: &[String]) -> Value {
    let mut ops = Vec::with_capacity(3);
    if let Some(uid) = uid {
        ops.push(json!({"op": "test", "path": "/metadata/uid", "value": uid}));
    }
    // An empty list is omitted from the object: a test against null passes on a missing
    // path (the API server's json-patch, and kubesim, do so).
    let current = if current.is_empty() { Value::Null } else { json!(current) };
    ops.push(json!({"op": "test", "path": "/metadata/finalizers", "value": current}));
    ops.push(json!({"op": "add", "path": "/metadata/finalizers", "value": next}));
    Value::Array(ops)
}

/// Make `change` to the finalizers of `owner` (a primary object as cached). When another
/// writer changed the finalizers since the cache saw them, the live list is read and the
/// change made on it once more; an object gone (or replaced under its name) is left alone.
pub(crate) async fn change_finalizers(
    ctx: &Ctx,
    owner: &Object,
    change: Change<'_>,
) -> Result<(), ReconcileError> {
    let Some(next) = change.apply(owner.finalizers(), owner.is_deleting()) else { return Ok(()) };
    let api: Api<DynamicObject> = api_for(&ctx.client, &ctx.primary, ctx.namespaced, owner.namespace());
    let failed = |error| ReconcileError::Api {
        what: format!("update the finalizers of {}", describe(ctx, owner)),
        error,
    };
    let params = PatchParams { field_manager: Some(ctx.options.name.clone()), ..PatchParams::default() };
    let body = json_patch(owner.uid(), owner.finalizers(), &next)?;
    match api.patch(owner.name(), &params, &Patch::<()>::Json(body)).await {
        Ok(_) => return Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        // The test failed: the list (or the object) changed since the cache saw it.
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 422 => {}
        Err(e) => return Err(failed(e)),
    }
    let live = match api.get_opt(owner.name()).await {
        Ok(Some(live)) => live,
        Ok(None) => return Ok(()),
        Err(e) => return Err(failed(e)),
    };
    if live.metadata.uid.as_deref() != owner.uid() {
        return Ok(());
    }
    let current = live.metadata.finalizers.unwrap_or_default();
    let Some(next) = change.apply(&current, live.metadata.deletion_timestamp.is_some()) else {
        return Ok(());
    };
    let body = json_patch(owner.uid(), &current, &next)?;
    match api.patch(owner.name(), &params, &Patch::<()>::Json(body)).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(failed(e)),
    }
}

/// Write the finalizers the handler added and removed (`addFinalizer` / `removeFinalizer`
/// on the object being handled).
pub(crate) async fn update_finalizers(
    ctx: &Ctx,
    owner: &Object,
    changes: &FinalizerChanges,
) -> Result<(), ReconcileError> {
    change_finalizers(ctx, owner, Change { add: &changes.add, remove: &changes.remove }).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_change_adds_and_removes_but_adds_nothing_to_an_object_being_deleted() {
        let (add, remove) = (names(&["a", "c"]), names(&["b"]));
        let change = Change { add: &add, remove: &remove };
        assert_eq!(change.apply(&names(&["a", "b"]), false), Some(names(&["a", "c"])));
        assert_eq!(change.apply(&names(&["a", "b"]), true), Some(names(&["a"])));
        assert_eq!(change.apply(&names(&["a", "c"]), false), None, "nothing to change");
    }

    #[test]
    fn the_patch_tests_the_uid_and_the_list_it_replaces() {
        assert_eq!(
            patch(Some("u"), &[], &names(&["f"])),
            json!([
                {"op": "test", "path": "/metadata/uid", "value": "u"},
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["f"]},
            ])
        );
        assert_eq!(patch(None, &names(&["f", "g"]), &names(&["g"]))[0]["value"], json!(["f", "g"]));
    }
}
