//! # ctop-test-support: what ctop's tests share
//!
//! A dev-dependency of the crates whose tests run against kubesim: [`eventually`] waits on
//! a condition (never a fixed sleep), [`client`] is a kube client of a kubeconfig's text.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often [`eventually`] asks again.
const POLL: Duration = Duration::from_millis(20);

/// Polls `f` until it returns `Some`, and returns that; panics naming `what` after `secs`
/// seconds.
///
/// # Panics
///
/// When `f` has not returned `Some` within `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// A client of the cluster the kubeconfig `yaml` names (its current context).
///
/// # Panics
///
/// When the kubeconfig does not parse or names no usable cluster.
pub async fn client(yaml: &str) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(yaml).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
        .await
        .expect("the kubeconfig loads");
    kube::Client::try_from(config).expect("a client")
}
