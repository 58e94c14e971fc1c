//! The cluster connection: the client, discovery of kinds, CRD installation.

use std::path::PathBuf;
use std::time::Duration;

use ctop_core::KindRef;
use kube::Client;
use kube::api::{Api, ApiResource, GroupVersionKind, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::Scope;
use serde_json::Value;

use crate::error::RunError;

/// A client of the cluster `kubeconfig` (or in-cluster, `$KUBECONFIG`, `~/.kube/config`)
/// names, in `context` (or its current one).
///
/// # Errors
///
/// The kubeconfig cannot be read or names no usable cluster.
pub async fn client(kubeconfig: Option<&PathBuf>, context: Option<&String>) -> Result<Client, RunError> {
    let mut config = kube_config(kubeconfig, context).await?;
    // A server reached over plain HTTP (`kubectl proxy`, `ctop sim --plain-http`) has no
    // certificate to check, but kube builds its TLS settings all the same, and without a CA
    // in the kubeconfig they load and parse every root certificate of the system (~6 ms and
    // a few hundred KB kept for the run). An empty set of roots is what such a client needs.
    if config.cluster_url.scheme_str() == Some("http") && config.root_cert.is_none() {
        config.root_cert = Some(Vec::new());
    }
    Client::try_from(config)
        .map_err(|source| RunError::Kube { what: "cannot build the client".into(), error: source })
}

/// The client configuration of [`client`] (its `cluster_url` names the server).
///
/// # Errors
///
/// The kubeconfig cannot be read or names no usable cluster.
pub async fn kube_config(
    kubeconfig: Option<&PathBuf>,
    context: Option<&String>,
) -> Result<kube::Config, RunError> {
    let options = KubeConfigOptions { context: context.cloned(), ..KubeConfigOptions::default() };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .map_err(|e| RunError::Config(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .map_err(|e| RunError::Config(e.to_string()))?
        }
        None if context.is_some() => {
            kube::Config::from_kubeconfig(&options).await.map_err(|e| RunError::Config(e.to_string()))?
        }
        None => kube::Config::infer().await.map_err(|e| RunError::Config(e.to_string()))?,
    };
    Ok(config)
}

/// Server-side apply `crds` (as `manager`) and wait until each is Established (30 s at
/// most), with kube's `await_condition`.
pub async fn install_crds(client: &Client, crds: &[Value], manager: &str) -> Result<(), RunError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::runtime::wait::{await_condition, conditions};
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        drop_conversion_webhook(&api, &name, crd).await?;
        api.patch(&name, &PatchParams::apply(manager).force(), &Patch::Apply(crd)).await.map_err(
            |source| RunError::Kube { what: format!("cannot apply the CRD {name}"), error: source },
        )?;
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        match tokio::time::timeout(Duration::from_secs(30), established).await {
            Ok(Ok(_)) => tracing::info!(crd = name, "CRD installed"),
            Ok(Err(e)) => return Err(RunError::Start(format!("cannot watch the CRD {name}: {e}"))),
            Err(_) => {
                return Err(RunError::Start(format!(
                    "the CRD {name} did not become Established within 30s; check the API server's log"
                )));
            }
        }
    }
    Ok(())
}

/// A CRD that converted through a webhook and now has one version: its conversion webhook
/// goes first. The apply alone cannot remove it: the `caBundle` in it belongs to whoever
/// set it (the operator's keeper, cert-manager), so it would stay, and the API server
/// refuses a webhook beside `strategy: None`.
async fn drop_conversion_webhook(
    api: &Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>,
    name: &str,
    crd: &Value,
) -> Result<(), RunError> {
    if crd.pointer("/spec/conversion/strategy").and_then(Value::as_str) == Some("Webhook") {
        return Ok(());
    }
    let live = api
        .get_opt(name)
        .await
        .map_err(|source| RunError::Kube { what: format!("cannot read the CRD {name}"), error: source })?;
    let converts = live.and_then(|l| l.spec.conversion).is_some_and(|c| c.strategy == "Webhook");
    if !converts {
        return Ok(());
    }
    tracing::info!(crd = name, "the CRD has one version now: its conversion webhook goes");
    let patch = serde_json::json!({"spec": {"conversion": {"strategy": "None", "webhook": null}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(|source| {
        RunError::Kube { what: format!("cannot drop the conversion webhook of {name}"), error: source }
    })?;
    Ok(())
}

pub(crate) fn kind_key(k: &KindRef) -> String {
    k.key()
}

pub(crate) async fn resolve(client: &Client, k: &KindRef) -> Result<(ApiResource, bool), RunError> {
    let gvk = GroupVersionKind::gvk(k.group(), k.version(), &k.kind);
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|source| RunError::Kube { what: format!("{} is not served", kind_key(k)), error: source })?;
    Ok((ar, caps.scope == Scope::Namespaced))
}

pub(crate) fn api_for<K>(client: &Client, ar: &ApiResource, namespaced: bool, ns: Option<&str>) -> Api<K>
where
    K: kube::Resource<DynamicType = ApiResource, Scope = kube::core::DynamicResourceScope>,
{
    match (namespaced, ns) {
        (true, Some(ns)) => Api::namespaced_with(client.clone(), ns, ar),
        _ => Api::all_with(client.clone(), ar),
    }
}
