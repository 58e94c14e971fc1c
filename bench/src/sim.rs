//! A fresh kubesim per run and the WebApp workload on it. Start at [`start`]: it runs
//! `ctop sim --plain-http --no-workloads` as a child process and returns a client that
//! names itself [`DRIVER_AGENT`]; [`install_webapp_crd`] installs the CRD that
//! `ctop manifests` prints for the example, [`webapp`] is one CR of the workload and
//! [`create_all`] creates them all at once.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

use crate::procs::{Proc, spawn};
use crate::seen::wait_for;

/// The driver's `User-Agent`, so that kubesim's `/kubesim/stats` can leave its requests out.
pub const DRIVER_AGENT: &str = "ctop-bench-driver";
/// The namespace of the CRs, their children and the Leases.
pub const NAMESPACE: &str = "default";
/// The image the CRs are created with.
pub const IMAGE_1: &str = "nginx:1.27";
/// The image of the update burst.
pub const IMAGE_2: &str = "nginx:1.28";

/// A running kubesim.
pub struct Sim {
    /// The `ctop sim` process.
    pub proc: Proc,
    /// The kubeconfig it wrote.
    pub kubeconfig: PathBuf,
    /// A client of it, as [`DRIVER_AGENT`].
    pub client: Client,
}

/// Start `ctop sim --plain-http --no-workloads` (plain HTTP, which every implementation
/// speaks; no simulated Pods, so the figures stay comparable with earlier runs) with a
/// watch history sized for `size` CRs, writing its kubeconfig and log into `dir`; on the
/// CPUs `cpus` names (`taskset -c`) when given.
pub async fn start(ctop: &Path, dir: &Path, size: usize, cpus: Option<&str>) -> anyhow::Result<Sim> {
    let kubeconfig = dir.join("kubeconfig");
    let history = (size * 20).max(10_000).to_string();
    let mut cmd = Command::new(ctop);
    cmd.args(["sim", "--plain-http", "--no-workloads", "--addr", "127.0.0.1:0", "--watch-history", &history])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("CTOP_LOG", "warn");
    let mut cmd = match cpus {
        Some(cpus) => crate::procs::pinned(&cmd, cpus),
        None => cmd,
    };
    let proc = spawn(&mut cmd, &dir.join("sim.log"))?;
    if !wait_for(Duration::from_secs(20), || kubeconfig.exists()).await {
        bail!("kubesim did not write its kubeconfig (see {})", dir.join("sim.log").display());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let client = client_for(&kubeconfig).await?;
    Ok(Sim { proc, kubeconfig, client })
}

/// A client from `kubeconfig` whose requests carry [`DRIVER_AGENT`].
pub async fn client_for(kubeconfig: &Path) -> anyhow::Result<Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?;
    config.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(DRIVER_AGENT)));
    Ok(Client::try_from(config)?)
}

/// The bench copy of the example in `dir`: identical but for the `every(...)` period.
pub fn example_copy(example: &Path, dir: &Path, every: &str) -> anyhow::Result<PathBuf> {
    let target = dir.join(format!("webapp-{every}"));
    std::fs::create_dir_all(&target)?;
    let script = std::fs::read_to_string(example.join("operator.ct"))
        .with_context(|| format!("cannot read {}", example.display()))?;
    if !script.contains(".every(\"5m\")") {
        bail!("{} no longer has .every(\"5m\"); update the bench", example.display());
    }
    std::fs::write(
        target.join("operator.ct"),
        script.replace(".every(\"5m\")", &format!(".every({every:?})")),
    )?;
    Ok(target)
}

/// Install the CRD that `ctop manifests` prints for the operator in `example`, wait until
/// it is Established, and return the API of its WebApps in [`NAMESPACE`].
pub async fn install_webapp_crd(
    ctop: &Path,
    example: &Path,
    client: &Client,
) -> anyhow::Result<Api<DynamicObject>> {
    install_crd(ctop, example, client, "webapps.apps.example.com").await?;
    Ok(Api::namespaced_with(client.clone(), NAMESPACE, &webapp_resource()))
}

/// Create the CRD (named `name`) that `ctop manifests` prints for the operator at
/// `operator` and wait until it is Established.
pub async fn install_crd(ctop: &Path, operator: &Path, client: &Client, name: &str) -> anyhow::Result<()> {
    let out = Command::new(ctop).arg("manifests").arg(operator).env("CTOP_LOG", "error").output()?;
    if !out.status.success() {
        bail!("ctop manifests failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let crd = serde_saphyr::from_slice_multiple::<Value>(&out.stdout)
        .context("ctop manifests printed YAML that does not read back")?
        .into_iter()
        .find(|v| v["kind"] == "CustomResourceDefinition")
        .context("ctop manifests printed no CRD")?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &serde_json::from_value(crd)?).await?;
    let established = kube::runtime::wait::await_condition(
        crds,
        name,
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(20), established).await??;
    Ok(())
}

/// The WebApp kind.
#[must_use]
pub fn webapp_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("apps.example.com", "v1", "WebApp");
    ApiResource::from_gvk_with_plural(&gvk, "webapps")
}

/// One WebApp of the workload: two replicas of `image` on port 80.
#[must_use]
pub fn webapp(name: &str, image: &str) -> DynamicObject {
    let mut o = DynamicObject::new(name, &webapp_resource()).within(NAMESPACE);
    o.data = json!({"spec": {"image": image, "replicas": 2, "port": 80}});
    o
}

/// Create a WebApp of [`IMAGE_1`] for each of `names` at once (32 requests in flight);
/// each name with the time its create response arrived.
pub async fn create_all(
    webapps: &Api<DynamicObject>,
    names: &[String],
) -> Result<Vec<(String, Instant)>, kube::Error> {
    futures::stream::iter(names.iter().cloned())
        .map(|name| {
            let api = webapps.clone();
            async move {
                api.create(&PostParams::default(), &webapp(&name, IMAGE_1)).await?;
                Ok::<_, kube::Error>((name, Instant::now()))
            }
        })
        .buffer_unordered(32)
        .try_collect()
        .await
}
