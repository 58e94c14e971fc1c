//! The check that every object an outcome writes is of a kind the operator declares (the
//! generated RBAC grants the same), and the resolution of each object's kind and scope.

use ctop_core::KindRef;
use kube::api::ApiResource;
use serde_json::{Value, json};

use crate::cluster::kind_key;
use crate::context::Ctx;
use crate::error::{ReconcileError, RunError};
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

/// The kind (resolved through the caches, else the applier's discovery cache), scope, name and
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
    let key = ctop_core::kind_key(api_version, kind);
    let known = ctx.caches.iter().find(|c| c.key == key).map(|c| (c.ar.clone(), c.namespaced));
    let (ar, namespaced) = match known {
        Some(k) => k,
        None => ctx.applier.resolve(api_version, kind).await.map_err(|source| {
            ReconcileError::Run(RunError::Kube { what: format!("{key} is not served"), error: source })
        })?,
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
    foreign: &[ctop_core::ForeignApply],
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
    for p in patches.iter().chain(foreign.iter().map(|a| &a.object)) {
        let t = target_of(ctx, "patch", p, owner).await?;
        check_declared(ctx, Write::Patch, &t)?;
    }
    Ok(())
}
