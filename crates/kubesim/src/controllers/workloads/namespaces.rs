//! What every namespace has: the `default` ServiceAccount (the service account
//! controller) and the `kube-root-ca.crt` ConfigMap with the cluster's CA (the root CA
//! publisher; only when kubesim serves TLS, as there is no CA otherwise).

use serde_json::json;

use super::{Cluster, Next};
use crate::error::ApiError;
use crate::kinds::meta::deleting;

pub(crate) async fn sync(cluster: &Cluster<'_>, ns: &str) -> Result<Next, ApiError> {
    let namespaces = cluster.rt("", "v1", "namespaces")?;
    match cluster.get(&namespaces, &(String::new(), ns.to_owned())) {
        Some(n) if !deleting(&n) => {}
        _ => return Ok(Next::Done),
    }
    let accounts = cluster.rt("", "v1", "serviceaccounts")?;
    if cluster.get(&accounts, &(ns.to_owned(), "default".to_owned())).is_none() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
        match cluster.create(&accounts, ns, sa, "service-account-controller").await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    let Some(ca) = cluster.ca_pem else { return Ok(Next::Done) };
    let config_maps = cluster.rt("", "v1", "configmaps")?;
    if cluster.get(&config_maps, &(ns.to_owned(), "kube-root-ca.crt".to_owned())).is_none() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": ns,
                "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
            "data": {"ca.crt": ca},
        });
        match cluster.create(&config_maps, ns, cm, "root-ca-cert-publisher").await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Next::Done)
}
