//! The RBAC storage's escalation prevention (`pkg/registry/rbac/*/policybased/storage.go`):
//! a Role, ClusterRole, RoleBinding or ClusterRoleBinding is stored only if its writer
//! already holds what it grants, or may `escalate` / `bind` it. The rules themselves live in
//! `authz::escalation`; this is where a write meets them, after mutating admission and
//! before validation, as the real storage wraps the generic one.

use serde_json::Value;

use super::{Api, WriteOpts};
use crate::auth::authz::{self, EscalationError};
use crate::error::{ApiError, GroupResource};
use crate::kinds::registry::ResourceType;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

impl Api {
    /// Refuses a write of an RBAC object that escalates the writer's permissions (only when
    /// the server authorizes). `url_name` is the name in the request's URL: empty for a
    /// `POST`, the object's name for every other write.
    pub(super) fn rbac_escalation_permitted(
        &self,
        rt: &ResourceType,
        ns: &str,
        url_name: &str,
        old: Option<&Value>,
        new: &Value,
        opts: &WriteOpts,
    ) -> Result<(), ApiError> {
        let Some(user) = &opts.authz_user else { return Ok(()) };
        if rt.group != RBAC_GROUP {
            return Ok(());
        }
        let checked = match rt.plural.as_str() {
            "rolebindings" | "clusterrolebindings" => authz::check_binding(user, ns, new, old, self),
            "roles" | "clusterroles" => authz::check_role(user, ns, url_name, new, old, self),
            _ => return Ok(()),
        };
        checked.map_err(|e| match e {
            // The registry's Get of the role, returned as it is (rolebinding/policybased).
            EscalationError::RoleNotFound { resource, name } => {
                ApiError::not_found(GroupResource { group: RBAC_GROUP, resource }, &name)
            }
            // errors.NewForbidden(groupResource, obj.Name, err).
            e => {
                let name = new.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                let message = if name.is_empty() {
                    format!("{} is forbidden: {e}", rt.gr())
                } else {
                    format!("{} \"{name}\" is forbidden: {e}", rt.gr())
                };
                ApiError::forbidden(rt.gr(), name, message)
            }
        })
    }
}
