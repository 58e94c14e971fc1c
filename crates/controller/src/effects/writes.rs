//! Writes of objects the operator does not own: server-side applies without an owner
//! (`onStart`), merge patches (`patch()`) and server-side applies under a field manager of
//! their own (a declarative `Operator`'s `Patcher` targets).

use ctop_core::ForeignApply;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::Value;

use super::declared::target_of;
use crate::cluster::api_for;
use crate::context::Ctx;
use crate::error::ReconcileError;
use crate::object::Object;

/// Server-side apply `obj` with the operator's field manager and no owner reference.
pub(crate) async fn apply_unowned(ctx: &Ctx, obj: &Value) -> Result<(), ReconcileError> {
    let t = target_of(ctx, "apply", obj, None).await?;
    let api: Api<DynamicObject> = api_for(&ctx.client, &t.ar, t.namespaced, t.namespace.as_deref());
    api.patch(&t.name, &PatchParams::apply(&ctx.options.name).force(), &Patch::Apply(obj))
        .await
        .map_err(|source| ReconcileError::Api { what: format!("apply {}", t.describe()), error: source })?;
    Ok(())
}

/// Merge-patch each of `patches` into its live object (not owned: no owner reference,
/// never pruned). Namespaced objects without a namespace get the owner's.
pub(crate) async fn apply_patches(
    ctx: &Ctx,
    owner: Option<&Object>,
    patches: &[Value],
) -> Result<(), ReconcileError> {
    for p in patches {
        let t = target_of(ctx, "patch", p, owner).await?;
        let api: Api<DynamicObject> = api_for(&ctx.client, &t.ar, t.namespaced, t.namespace.as_deref());
        let mut body = p.clone();
        if let Some(o) = body.as_object_mut() {
            o.remove("apiVersion");
            o.remove("kind");
        }
        api.patch(&t.name, &PatchParams::default(), &Patch::Merge(&body)).await.map_err(|source| {
            ReconcileError::Api { what: format!("patch {}", t.describe()), error: source }
        })?;
    }
    Ok(())
}

/// Server-side apply each of `applies` under its own field manager, forced, with no owner
/// reference: the server drops what the manager applied before and leaves out now.
/// Namespaced objects without a namespace get the owner's.
pub(crate) async fn apply_foreign(
    ctx: &Ctx,
    owner: Option<&Object>,
    applies: &[ForeignApply],
) -> Result<(), ReconcileError> {
    for a in applies {
        let t = target_of(ctx, "apply", &a.object, owner).await?;
        let api: Api<DynamicObject> = api_for(&ctx.client, &t.ar, t.namespaced, t.namespace.as_deref());
        api.patch(&t.name, &PatchParams::apply(&a.manager).force(), &Patch::Apply(&a.object)).await.map_err(
            |source| ReconcileError::Api {
                what: format!("apply {} as {}", t.describe(), a.manager),
                error: source,
            },
        )?;
    }
    Ok(())
}
