//! The ClusterRole aggregation controller (kube-controller-manager's
//! `clusterrole-aggregation-controller`): an aggregated ClusterRole's `rules` are written as
//! the union of the rules of the ClusterRoles its `aggregationRule` selects, so `kubectl get
//! clusterrole view -o yaml` shows them. Authorization resolves the union itself as well
//! (`authz.rs`), so a bare API server without this controller decides the same.

use serde_json::{Value, json};

use super::{Cluster, Next};
use crate::error::ApiError;

const MANAGER: &str = "clusterrole-aggregation-controller";

/// Brings every aggregated ClusterRole's `rules` up to date.
pub(crate) async fn sync(cluster: &Cluster<'_>) -> Result<Next, ApiError> {
    let rt = cluster.rt("rbac.authorization.k8s.io", "v1", "clusterroles")?;
    let roles: Vec<Value> = cluster.in_namespace(&rt, "").iter().map(|r| (**r).clone()).collect();
    for role in &roles {
        let Some(rules) = crate::auth::authz::aggregated_rule_values(role, &roles) else { continue };
        let current = role.get("rules").cloned().unwrap_or_else(|| json!([]));
        if current == json!(rules) {
            continue;
        }
        let name = role.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        match cluster
            .merge(&rt, &(String::new(), name.to_owned()), false, &json!({"rules": rules}), MANAGER)
            .await
        {
            Ok(_) => {}
            // Deleted meanwhile: nothing to aggregate into.
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Next::Done)
}
