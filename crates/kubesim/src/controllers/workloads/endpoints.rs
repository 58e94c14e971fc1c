//! The EndpointSlice controller: each Service with a selector gets slices
//! (`<service>-xxxxx`, labelled with its name and managed by
//! `endpointslice-controller.k8s.io`) listing the Pods it selects that have an IP, with
//! their readiness, node and target reference, and the ports the Service's target ports
//! resolve to (one slice per distinct port set, as named ports can differ per Pod).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Cluster, Next, controlled_by, key_of, owner_ref};
use crate::api::Api;
use crate::error::ApiError;
use crate::kinds::meta::deleting;
use crate::store::ObjKey;

const MANAGER: &str = "endpointslice-controller";
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

/// The Services in `pod`'s namespace that select it now or selected it before (`old`).
pub(crate) fn services_selecting(api: &Api, pod: &Value, old: Option<&Value>) -> Vec<ObjKey> {
    let Some(services) = api.registry.get("", "v1", "services") else { return Vec::new() };
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let (_, table) = api.store.snapshot(&services.store, false);
    table
        .range((ns.to_owned(), String::new())..)
        .take_while(|(k, _)| k.0 == ns)
        .filter(|(_, svc)| selects(svc, pod) || old.is_some_and(|o| selects(svc, o)))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Whether the Service's selector (non-empty) matches the Pod's labels.
fn selects(svc: &Value, pod: &Value) -> bool {
    let Some(selector) = svc["spec"]["selector"].as_object().filter(|s| !s.is_empty()) else { return false };
    selector.iter().all(|(k, v)| pod["metadata"]["labels"].get(k) == Some(v))
}

pub(crate) async fn sync(cluster: &Cluster<'_>, key: &ObjKey) -> Result<Next, ApiError> {
    let services = cluster.rt("", "v1", "services")?;
    let Some(svc) = cluster.get(&services, key) else { return Ok(Next::Done) };
    let has_selector = svc["spec"]["selector"].as_object().is_some_and(|s| !s.is_empty());
    if deleting(&svc) || !has_selector || svc["spec"]["type"] == "ExternalName" {
        return Ok(Next::Done);
    }
    let pods_rt = cluster.rt("", "v1", "pods")?;
    let slices_rt = cluster.rt("discovery.k8s.io", "v1", "endpointslices")?;
    // `ShouldPodBeInEndpoints(pod, includeTerminating: true)`: terminating Pods stay (as
    // not ready, `terminating`) until they reach a terminal phase.
    let pods: Vec<Arc<Value>> = cluster
        .in_namespace(&pods_rt, &key.0)
        .into_iter()
        .filter(|p| selects(&svc, p))
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .filter(|p| p["status"]["podIP"].as_str().is_some_and(|ip| !ip.is_empty()))
        .collect();
    // Endpoints grouped by the ports they resolve to.
    let mut groups: BTreeMap<String, (Value, Vec<Value>)> = BTreeMap::new();
    for pod in &pods {
        let ports = ports_for(&svc, pod);
        let entry = groups.entry(ports.to_string()).or_insert_with(|| (ports, Vec::new()));
        entry.1.push(endpoint(pod));
    }
    if groups.is_empty() {
        // A Service without endpoints still has one (empty) slice.
        groups.insert(String::new(), (json!([]), Vec::new()));
    }
    let uid = svc["metadata"]["uid"].as_str().unwrap_or_default();
    let mut existing: Vec<Arc<Value>> = cluster
        .in_namespace(&slices_rt, &key.0)
        .into_iter()
        .filter(|s| {
            controlled_by(s, uid)
                && s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == MANAGED_BY
        })
        .collect();
    for (ports, endpoints) in groups.into_values() {
        let found =
            existing.iter().position(|s| s["ports"] == ports || (s["ports"].is_null() && ports == json!([])));
        match found.map(|i| existing.remove(i)) {
            Some(slice) => {
                if slice["endpoints"] != Value::Array(endpoints.clone()) {
                    let patch = json!({"endpoints": endpoints});
                    cluster.merge(&slices_rt, &key_of(&slice), false, &patch, MANAGER).await?;
                }
            }
            None => {
                let slice = json!({
                    "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {
                        "generateName": format!("{}-", key.1), "namespace": key.0,
                        "labels": {"kubernetes.io/service-name": key.1, "endpointslice.kubernetes.io/managed-by": MANAGED_BY},
                        "ownerReferences": [owner_ref(&svc)],
                    },
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                    "ports": ports,
                });
                cluster.create(&slices_rt, &key.0, slice, MANAGER).await?;
            }
        }
    }
    for stale in existing {
        cluster.delete(&slices_rt, &stale).await?;
    }
    Ok(Next::Done)
}

/// The Service's ports with each `targetPort` resolved against the Pod's container ports.
fn ports_for(svc: &Value, pod: &Value) -> Value {
    let container_ports: Vec<&Value> = pod["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .collect();
    let ports: Vec<Value> = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let port = match &p["targetPort"] {
                Value::String(name) => {
                    container_ports.iter().find(|c| c["name"] == name.as_str())?["containerPort"].clone()
                }
                Value::Null => p["port"].clone(),
                n => n.clone(),
            };
            let mut out = json!({"port": port, "protocol": p["protocol"].as_str().unwrap_or("TCP")});
            out["name"] = p.get("name").cloned().unwrap_or_else(|| json!(""));
            if let Some(app) = p.get("appProtocol") {
                out["appProtocol"] = app.clone();
            }
            Some(out)
        })
        .collect();
    Value::Array(ports)
}

/// The endpoint of `pod` (`podToEndpoint`, `pkg/controller/util/endpointslice`): `serving`
/// while the Pod is Ready, `ready` only if it is not terminating too.
fn endpoint(pod: &Value) -> Value {
    let serving = super::replicaset::ready_since(pod).is_some();
    let terminating = deleting(pod);
    json!({
        "addresses": [pod["status"]["podIP"]],
        "conditions": {"ready": serving && !terminating, "serving": serving, "terminating": terminating},
        "nodeName": pod["spec"]["nodeName"],
        "targetRef": {
            "kind": "Pod", "namespace": pod["metadata"]["namespace"],
            "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"],
        },
    })
}
