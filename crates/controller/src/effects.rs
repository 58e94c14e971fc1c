//! Carrying out an outcome's parts other than the children: merge patches of unowned
//! objects, objects `onStart` applies, finalizer changes, events, and the check that every
//! object written is of a kind the operator declares.

use ctop_core::{EventRecord, EventType, FinalizerChanges, KindRef};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy,
};
use kube::runtime::events::{Event, EventType as KubeEventType};
use serde_json::{Value, json};

use crate::cluster::{api_for, kind_key, resolve};
use crate::context::Ctx;
use crate::error::ReconcileError;
use crate::object::Object;

/// An object a handler returned, resolved: its kind, scope, name and namespace.
pub(crate) struct Target {
    pub(crate) ar: ApiResource,
    pub(crate) namespaced: bool,
    pub(crate) name: String,
    pub(crate) namespace: Option<String>,
}

impl Target {
    /// `Kind namespace/name`, as messages name objects.
    pub(crate) fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) if self.namespaced => format!("{} {ns}/{}", self.ar.kind, self.name),
            _ => format!("{} {}", self.ar.kind, self.name),
        }
    }
}

/// The kind (resolved through the caches, else discovery, remembered), scope, name and
/// namespace of an object a handler returned. A namespaced object without a namespace
/// gets the owner's, else the run's namespace, else `default`.
pub(crate) async fn target_of(
    ctx: &Ctx,
    action: &'static str,
    obj: &Value,
    owner: Option<&Object>,
) -> Result<Target, ReconcileError> {
    let (Some(api_version), Some(kind), Some(name)) =
        (obj["apiVersion"].as_str(), obj["kind"].as_str(), obj["metadata"]["name"].as_str())
    else {
        return Err(ReconcileError::BadObject {
            action,
            reason: "each object needs apiVersion, kind and metadata.name".into(),
        });
    };
    let key = format!("{api_version}/{kind}");
    let known = ctx
        .caches
        .iter()
        .find(|c| c.key == key)
        .map(|c| (c.ar.clone(), c.namespaced))
        .or_else(|| ctx.kinds.lock().get(&key).cloned());
    let (ar, namespaced) = match known {
        Some(k) => k,
        None => {
            let k = KindRef { api_version: api_version.into(), kind: kind.into() };
            let resolved = resolve(&ctx.client, &k).await?;
            ctx.kinds.lock().insert(key, resolved.clone());
            resolved
        }
    };
    let namespace = obj["metadata"]["namespace"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| owner.and_then(Object::namespace).map(str::to_owned))
        .or_else(|| ctx.options.namespace.clone())
        .or_else(|| namespaced.then(|| "default".to_owned()));
    Ok(Target { ar, namespaced, name: name.to_owned(), namespace })
}

/// What a controller may write, from its declarations (the generated RBAC grants the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    /// Apply as a child (or, from `onStart`, without an owner): `.manages()`.
    Apply,
    /// Merge-patch an object the operator does not own.
    Patch,
}

/// Refuse an object of a kind the controller does not declare for `write`: children must
/// be of a `.manages()` kind; a patch target of the primary or a managed kind, or of one a
/// `.permission()` grants `patch` on. In `ctop dev` (cluster-admin) such a write would work
/// and in a cluster it would be refused by the generated RBAC; it is refused in both.
pub(crate) fn check_declared(ctx: &Ctx, write: Write, target: &Target) -> Result<(), ReconcileError> {
    let spec = &ctx.spec;
    let is = |k: &KindRef| k.api_version == target.ar.api_version && k.kind == target.ar.kind;
    let managed = spec.manages.iter().any(is);
    let allowed = match write {
        Write::Apply => managed,
        Write::Patch => {
            managed
                || is(&spec.for_)
                || spec.permissions.iter().any(|rule| {
                    let any = |v: &[String], want: &str| v.iter().any(|x| x == "*" || x == want);
                    any(&rule.api_groups, &target.ar.group)
                        && any(&rule.resources, &target.ar.plural)
                        && any(&rule.verbs, "patch")
                        && (rule.resource_names.is_empty() || rule.resource_names.contains(&target.name))
                })
        }
    };
    if allowed {
        return Ok(());
    }
    let kind =
        kind_key(&KindRef { api_version: target.ar.api_version.clone(), kind: target.ar.kind.clone() });
    Err(ReconcileError::Undeclared {
        action: match write {
            Write::Apply => "apply",
            Write::Patch => "patch",
        },
        object: target.describe(),
        kind,
        controller: spec.name.clone(),
        fix: match write {
            Write::Apply => format!(".manages({})", target.ar.kind),
            Write::Patch => format!(
                ".manages({}) or .permission({{ apiGroups: [{:?}], resources: [{:?}], verbs: [\"patch\"] }})",
                target.ar.kind, target.ar.group, target.ar.plural
            ),
        },
    })
}

/// Check every child and patch target of an outcome before anything is written.
pub(crate) async fn check_outcome(
    ctx: &Ctx,
    owner: Option<&Object>,
    children: &[Value],
    patches: &[Value],
    deletes: &[ctop_core::ObjectReference],
) -> Result<(), ReconcileError> {
    for r in deletes {
        let obj = json!({"apiVersion": r.api_version, "kind": r.kind, "metadata": {"name": r.name, "namespace": r.namespace}});
        let t = target_of(ctx, "remove", &obj, owner).await?;
        check_declared(ctx, Write::Apply, &t)?;
    }
    for c in children {
        let t = target_of(ctx, "apply", c, owner).await?;
        check_declared(ctx, Write::Apply, &t)?;
    }
    for p in patches {
        let t = target_of(ctx, "patch", p, owner).await?;
        check_declared(ctx, Write::Patch, &t)?;
    }
    Ok(())
}

/// Delete the children `deletes` names (`remove()`): each only when the cache holds it as a
/// child controlled by `owner`, with uid and resourceVersion preconditions; anything else
/// (not a child of this object, gone, changed meanwhile) is left alone.
pub(crate) async fn delete_children(
    ctx: &Ctx,
    owner: &Object,
    deletes: &[ctop_core::ObjectReference],
) -> Result<(), ReconcileError> {
    let Some(owner_uid) = owner.uid() else { return Ok(()) };
    for r in deletes {
        let obj = json!({
            "apiVersion": r.api_version, "kind": r.kind,
            "metadata": {"name": r.name, "namespace": r.namespace},
        });
        let t = target_of(ctx, "remove", &obj, Some(owner)).await?;
        let key = format!("{}/{}", t.ar.api_version, t.ar.kind);
        let cached = ctx
            .caches
            .iter()
            .find(|c| c.key == key)
            .and_then(|c| c.store.get(t.namespace.as_deref().filter(|_| c.namespaced), &t.name));
        let Some(child) = cached else { continue };
        let ours = child.owner_references().iter().any(|o| o.controller == Some(true) && o.uid == owner_uid);
        if !ours {
            tracing::info!(
                controller = ctx.spec.name,
                object = t.describe(),
                "remove: not a child of this object; left alone"
            );
            continue;
        }
        if child.is_deleting() {
            continue;
        }
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: Some(Preconditions {
                uid: child.uid().map(str::to_owned),
                resource_version: child.resource_version().map(str::to_owned),
            }),
            ..DeleteParams::default()
        };
        let api: Api<DynamicObject> = api_for(&ctx.client, &t.ar, t.namespaced, t.namespace.as_deref());
        match api.delete(&t.name, &params).await {
            Ok(_) => ctx.metrics.prunes(&ctx.spec.name, 1),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(source) => {
                return Err(ReconcileError::Api { what: format!("delete {}", t.describe()), source });
            }
        }
    }
    Ok(())
}

/// Server-side apply `obj` with the operator's field manager and no owner reference.
pub(crate) async fn apply_unowned(ctx: &Ctx, obj: &Value) -> Result<(), ReconcileError> {
    let t = target_of(ctx, "apply", obj, None).await?;
    let api: Api<DynamicObject> = api_for(&ctx.client, &t.ar, t.namespaced, t.namespace.as_deref());
    api.patch(&t.name, &PatchParams::apply(&ctx.options.name).force(), &Patch::Apply(obj))
        .await
        .map_err(|source| ReconcileError::Api { what: format!("apply {}", t.describe()), source })?;
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
        api.patch(&t.name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .map_err(|source| ReconcileError::Api { what: format!("patch {}", t.describe()), source })?;
    }
    Ok(())
}

/// Set the finalizers of `owner` to `finalizers` (guarded by its resourceVersion).
pub(crate) async fn patch_finalizers(
    ctx: &Ctx,
    owner: &Object,
    finalizers: Vec<String>,
) -> Result<(), ReconcileError> {
    let api: Api<DynamicObject> = api_for(&ctx.client, &ctx.primary, ctx.namespaced, owner.namespace());
    let patch = json!({"metadata": {"finalizers": finalizers, "resourceVersion": owner.resource_version()}});
    api.patch(owner.name(), &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(|source| {
        ReconcileError::Api { what: format!("update the finalizers of {}", describe(ctx, owner)), source }
    })?;
    Ok(())
}

/// Write the finalizers the handler added and removed (`addFinalizer` / `removeFinalizer`
/// on the object being handled), and drop `done` (the controller's own, after `finalize`).
pub(crate) async fn update_finalizers(
    ctx: &Ctx,
    owner: &Object,
    changes: &FinalizerChanges,
    done: Option<&str>,
) -> Result<(), ReconcileError> {
    let current = owner.finalizers().to_vec();
    let mut next: Vec<String> =
        current.iter().filter(|f| !changes.remove.contains(f) && Some(f.as_str()) != done).cloned().collect();
    for f in &changes.add {
        // Nothing new is added to an object on its way out (the API server refuses it).
        if !next.contains(f) && !owner.is_deleting() {
            next.push(f.clone());
        }
    }
    if next != current {
        patch_finalizers(ctx, owner, next).await?;
    }
    Ok(())
}

/// Publish `events`: about the object each names in `regarding`, else about `owner`
/// (events of `onStart` without `regarding` are logged instead).
pub(crate) async fn publish_events(ctx: &Ctx, owner: Option<&Object>, events: &[EventRecord]) {
    let own: Option<ObjectReference> = owner.map(|o| o.reference(&ctx.primary));
    for e in events {
        let reference = match (&e.regarding, &own) {
            (Some(r), _) => ObjectReference {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: r.name.clone(),
                namespace: r.namespace.clone(),
                uid: r.uid.clone(),
                ..ObjectReference::default()
            },
            (None, Some(own)) => own.clone(),
            (None, None) => {
                tracing::info!(
                    controller = ctx.spec.name,
                    reason = e.reason,
                    message = e.message,
                    "event without an object"
                );
                continue;
            }
        };
        let event = Event {
            type_: match e.type_ {
                EventType::Normal => KubeEventType::Normal,
                EventType::Warning => KubeEventType::Warning,
            },
            reason: e.reason.clone(),
            note: Some(event_note(&e.message)).filter(|n| !n.is_empty()),
            action: "Reconcile".into(),
            secondary: None,
        };
        if let Err(err) = ctx.recorder.publish(&event, &reference).await {
            tracing::warn!(error = %crate::error::api_error_text(&err), "cannot publish an event");
        }
    }
}

/// An event's note: at most 1 kB, as the API server allows.
pub(crate) fn event_note(text: &str) -> String {
    const MAX: usize = 1024;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut cut = text[..text.floor_char_boundary(MAX - 3)].to_owned();
    cut.push('…');
    cut
}

/// `Kind namespace/name` of a primary object.
pub(crate) fn describe(ctx: &Ctx, o: &Object) -> String {
    match o.namespace() {
        Some(ns) => format!("{} {ns}/{}", ctx.primary.kind, o.name()),
        None => format!("{} {}", ctx.primary.kind, o.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_notes_are_cut_at_one_kilobyte() {
        assert_eq!(event_note("short"), "short");
        let long = "é".repeat(1000);
        let cut = event_note(&long);
        assert!(cut.len() <= 1024 && cut.ends_with('…'), "{}", cut.len());
    }
}
