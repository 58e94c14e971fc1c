//! The tree of an object's children, and theirs, each with its health: what `ctop trace`
//! prints and the operator's page draws.
//!
//! [`build`] reads the cluster only (a running operator is not needed): the children of a
//! ctop object are the members of its ApplySet (the kinds its
//! `applyset.kubernetes.io/contains-group-kinds` annotation names, listed by their
//! `applyset.kubernetes.io/part-of` label, in its namespace and the additional ones);
//! below them, the objects the built-in controllers make (a Deployment's ReplicaSets, their
//! Pods, a Job's Pods, a CronJob's Jobs), found by their owner references.

use std::collections::HashMap;

use ctop_applier::applyset::{
    ADDITIONAL_NAMESPACES_ANNOTATION, CONTAINS_GROUP_KINDS_ANNOTATION, GroupKind, ID_LABEL, PART_OF_LABEL,
};
use ctop_health::Health;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::{Scope, oneshot};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Levels below the root that are read.
const DEPTH: usize = 4;

/// Children listed per object; the rest are counted.
const MAX_CHILDREN: usize = 50;

/// One object of the tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// Its apiVersion.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// Its health (kstatus' rules).
    pub health: Health,
    /// Its children, by kind then name.
    #[serde(default)]
    pub children: Vec<Node>,
    /// Children beyond those listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_children: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Node {
    /// A node for `o` (any object), without children.
    #[must_use]
    pub fn of(o: &Value) -> Self {
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Node {
            api_version: text(&o["apiVersion"]),
            kind: text(&o["kind"]),
            namespace: o["metadata"]["namespace"].as_str().map(str::to_owned),
            name: text(&o["metadata"]["name"]),
            health: ctop_health::health(o),
            children: Vec::new(),
            more_children: 0,
        }
    }

    /// The first node below this one (depth first, in order) that is not healthy, and its
    /// parent chain's kinds: where to look first.
    #[must_use]
    pub fn first_unhealthy(&self) -> Option<&Node> {
        self.children.iter().find_map(|c| if c.health.is_current() { c.first_unhealthy() } else { Some(c) })
    }
}

/// The kinds the built-in controllers create under an object of `group`/`kind`, as
/// (group, version, kind, plural).
fn made_by(group: &str, kind: &str) -> &'static [(&'static str, &'static str, &'static str, &'static str)] {
    match (group, kind) {
        ("apps", "Deployment") => &[("apps", "v1", "ReplicaSet", "replicasets")],
        ("apps", "ReplicaSet" | "StatefulSet" | "DaemonSet") | ("batch", "Job") => {
            &[("", "v1", "Pod", "pods")]
        }
        ("batch", "CronJob") => &[("batch", "v1", "Job", "jobs")],
        _ => &[],
    }
}

/// Errors of [`build`].
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// A list of children failed.
    #[error("cannot list {what}")]
    List {
        /// What was listed.
        what: String,
        /// The API's answer.
        #[source]
        source: kube::Error,
    },
}

impl TreeError {
    /// What failed, in kubectl's words (the API server's message, not the client's dump).
    #[must_use]
    pub fn explain(&self) -> String {
        match self {
            TreeError::List { what, source } => {
                format!("cannot list {what}: {}", crate::error::api_error_text(source))
            }
        }
    }
}

/// The tree below `root` (an object as the API server returns it), read from the cluster,
/// and the lists that failed (each once): a refused list (say, Pods the operator may not
/// list) leaves those children out, not the rest. A kind that cannot be resolved (its CRD
/// gone) is left out, not an error.
pub async fn build(client: &Client, root: &Value) -> (Node, Vec<TreeError>) {
    let mut walk = Walk::default();
    let mut node = Node::of(root);
    fill(client, &mut walk, root, &mut node, DEPTH).await;
    (node, walk.problems)
}

/// What one build keeps between the objects it visits.
#[derive(Default)]
struct Walk {
    kinds: Kinds,
    problems: Vec<TreeError>,
}

impl Walk {
    /// The objects `list` finds, or none, the failure kept (once per kind and namespace).
    async fn list(
        &mut self,
        client: &Client,
        ar: &ApiResource,
        ns: Option<&str>,
        selector: Option<&str>,
    ) -> Vec<Value> {
        match list(client, ar, ns, selector).await {
            Ok(found) => found,
            Err(e) => {
                if !self.problems.iter().any(|p| p.to_string() == e.to_string()) {
                    self.problems.push(e);
                }
                Vec::new()
            }
        }
    }
}

/// Kinds resolved during one build, by group and kind.
#[derive(Default)]
struct Kinds(HashMap<(String, String), Option<(ApiResource, bool)>>);

impl Kinds {
    async fn resolve(&mut self, client: &Client, gk: &GroupKind) -> Option<(ApiResource, bool)> {
        let key = (gk.group.clone(), gk.kind.clone());
        if let Some(found) = self.0.get(&key) {
            return found.clone();
        }
        let found = match oneshot::group(client, &gk.group).await {
            Ok(group) => {
                group.recommended_kind(&gk.kind).map(|(ar, caps)| (ar, caps.scope == Scope::Namespaced))
            }
            Err(e) => {
                tracing::debug!(group = gk.group, error = %e, "cannot discover a child kind");
                None
            }
        };
        self.0.insert(key, found.clone());
        found
    }
}

fn fill<'a>(
    client: &'a Client,
    walk: &'a mut Walk,
    o: &'a Value,
    node: &'a mut Node,
    depth: usize,
) -> futures::future::BoxFuture<'a, ()> {
    Box::pin(async move {
        if depth == 0 {
            return;
        }
        let mut found: Vec<Value> = Vec::new();
        let meta = &o["metadata"];
        let namespace = meta["namespace"].as_str();
        // The ApplySet's members: a ctop object's children.
        if let Some(id) = meta["labels"][ID_LABEL].as_str() {
            let mut namespaces: Vec<Option<&str>> = vec![namespace];
            if let Some(more) = meta["annotations"][ADDITIONAL_NAMESPACES_ANNOTATION].as_str() {
                namespaces.extend(more.split(',').map(str::trim).filter(|n| !n.is_empty()).map(Some));
            }
            let listed = meta["annotations"][CONTAINS_GROUP_KINDS_ANNOTATION].as_str().unwrap_or_default();
            let selector = format!("{PART_OF_LABEL}={id}");
            for gk in listed.split(',').filter_map(GroupKind::parse) {
                let Some((ar, namespaced)) = walk.kinds.resolve(client, &gk).await else { continue };
                for ns in if namespaced { namespaces.clone() } else { vec![None] } {
                    found.extend(walk.list(client, &ar, ns, Some(&selector)).await);
                }
            }
        }
        // What the built-in controllers made under it.
        let group = ctop_core::group_of(&node.api_version);
        let uid = meta["uid"].as_str().unwrap_or_default();
        for (g, v, k, plural) in made_by(group, &node.kind) {
            let api_version = if g.is_empty() { (*v).to_owned() } else { format!("{g}/{v}") };
            let ar = ApiResource {
                group: (*g).to_owned(),
                version: (*v).to_owned(),
                api_version,
                kind: (*k).to_owned(),
                plural: (*plural).to_owned(),
            };
            let owned = walk.list(client, &ar, namespace, None).await.into_iter().filter(|c| {
                c["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|refs| refs.iter().any(|r| r["uid"].as_str() == Some(uid)))
            });
            found.extend(owned);
        }
        found.sort_by(|a, b| {
            (a["kind"].as_str(), a["metadata"]["name"].as_str())
                .cmp(&(b["kind"].as_str(), b["metadata"]["name"].as_str()))
        });
        node.more_children = found.len().saturating_sub(MAX_CHILDREN);
        found.truncate(MAX_CHILDREN);
        for child in &found {
            let mut n = Node::of(child);
            fill(client, walk, child, &mut n, depth - 1).await;
            node.children.push(n);
        }
    })
}

/// The objects of `ar` in `namespace` (all of them for a cluster-scoped kind), with their
/// apiVersion and kind set.
async fn list(
    client: &Client,
    ar: &ApiResource,
    namespace: Option<&str>,
    selector: Option<&str>,
) -> Result<Vec<Value>, TreeError> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let mut params = ListParams::default();
    if let Some(s) = selector {
        params = params.labels(s);
    }
    let listed = api.list(&params).await.map_err(|source| TreeError::List {
        what: format!("{} in {}", ar.plural, namespace.unwrap_or("the cluster")),
        source,
    })?;
    Ok(listed
        .items
        .into_iter()
        .filter_map(|o| {
            let mut v = serde_json::to_value(o).ok()?;
            v["apiVersion"] = Value::String(ar.api_version.clone());
            v["kind"] = Value::String(ar.kind.clone());
            Some(v)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_first_unhealthy_node_is_found_depth_first() {
        let ok = |kind: &str, name: &str| {
            Node::of(&json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name}}))
        };
        let mut root = ok("WebApp", "shop");
        let mut deploy = Node::of(&json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "shop", "generation": 1},
            "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}
        }));
        deploy.children.push(ok("ReplicaSet", "shop-1"));
        root.children.push(ok("ConfigMap", "shop"));
        root.children.push(deploy);
        let blocker = root.first_unhealthy().expect("a blocker");
        assert_eq!((blocker.kind.as_str(), blocker.name.as_str()), ("Deployment", "shop"));
        assert!(ok("Service", "s").first_unhealthy().is_none());
    }
}
