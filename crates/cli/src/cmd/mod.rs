//! One module per subcommand.

pub mod bundle;
pub mod check;
pub mod declarative;
pub mod dev;
pub mod fuzz;
pub mod init;
pub mod manifests;
pub mod record;
pub mod replay;
pub mod run;
pub mod shadow;
pub mod sim;
pub mod test;
pub mod trace;
pub mod webhook;

/// The limits of the script runtimes that every serving command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ScriptFlags {
    /// Memory one script runtime may allocate (there is one per concurrent call); a call
    /// past it fails with an out-of-memory error and its runtime is replaced.
    #[arg(long, default_value = "64Mi")]
    pub script_memory: ctop_core::ByteSize,
    /// Memory the output of one call may take once copied out of the script (children,
    /// status, events); the heap of an object is 10–25× its JSON.
    #[arg(long, default_value = "16Mi")]
    pub max_output: ctop_core::ByteSize,
    /// Most children (apply and patch) one reconcile may return.
    #[arg(long, default_value_t = 10_000)]
    pub max_children: usize,
    /// Another destination the script's fetch may reach, on top of its .egress(...): a URL
    /// prefix like https://api.example.com or http://svc.ns.svc:8080/v1 (repeatable).
    #[arg(long = "egress", value_name = "URL")]
    pub egress: Vec<ctop_core::EgressRule>,
}

impl ScriptFlags {
    /// The runtime limits with these flags and a per-call `deadline`.
    pub fn limits(&self, deadline: std::time::Duration) -> ctop_runtime::Limits {
        ctop_runtime::Limits {
            memory: self.script_memory.as_usize(),
            timeout: deadline,
            max_output: self.max_output.as_usize(),
            max_children: self.max_children,
            ..ctop_runtime::Limits::default()
        }
    }
}

/// How an embedded kubesim runs workloads (`ctop sim`, and `ctop dev` without --context).
#[derive(Debug, Clone, clap::Args)]
pub struct WorkloadFlags {
    /// Serve a bare API server: no nodes, no Pods for Deployments and ReplicaSets, no
    /// Service IPs or EndpointSlices (for tests that want only the API).
    #[arg(long)]
    pub no_workloads: bool,
    /// Simulated nodes that Pods are scheduled on.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub nodes: u16,
    /// How long a scheduled Pod stays Pending before it runs and is Ready.
    #[arg(long, default_value = "500ms")]
    pub pod_start: ctop_core::Duration,
    /// How long a Job's Pod runs before it succeeds.
    #[arg(long, default_value = "1s")]
    pub job_duration: ctop_core::Duration,
    /// What happens to the Pods a label selector picks, as SELECTOR:ACTION[;ACTION]: fail,
    /// never-ready, start=DURATION, complete=DURATION (e.g. app=flaky:fail,
    /// tier=db:start=5s); repeatable, the first match applies.
    #[arg(long = "pod-stage", value_name = "SELECTOR:ACTION")]
    pub pod_stages: Vec<ctop_kubesim::PodStage>,
}

impl WorkloadFlags {
    /// The kubesim setting these flags ask for.
    pub fn config(&self) -> Option<ctop_kubesim::WorkloadConfig> {
        (!self.no_workloads).then(|| ctop_kubesim::WorkloadConfig {
            nodes: usize::from(self.nodes),
            pod_start: self.pod_start.into(),
            job_duration: self.job_duration.into(),
            stages: self.pod_stages.clone(),
        })
    }
}

/// Resolves on Ctrl-C or SIGTERM: when a serving command should stop.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// The operator's own name, which names its field manager, Leases, event reporter and
/// shard ring (two operators in one cluster must not share one): `name` when given, else
/// the operator directory's name, else the script's first resource's plural, else its first
/// controller's name. `ctop manifests` names the deployed operator the same way and passes
/// it to `ctop run --name`.
pub fn operator_name(
    name: Option<&str>,
    dir: &std::path::Path,
    spec: &ctop_core::OperatorSpec,
) -> anyhow::Result<String> {
    use anyhow::Context as _;
    if let Some(name) = name {
        return Ok(name.to_owned());
    }
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.file_name()
        .and_then(|n| ctop_manifests::name_from(&n.to_string_lossy()))
        .or_else(|| spec.resources.first().and_then(|r| ctop_manifests::name_from(&r.plural)))
        .or_else(|| spec.controllers.first().and_then(|c| ctop_manifests::name_from(&c.name)))
        .context("cannot derive the operator's name from its directory or its script; pass --name")
}

/// The values file's text: `values`, or `DIR/values.yaml` when it exists, else empty.
pub fn values_text(dir: &std::path::Path, values: Option<&std::path::Path>) -> anyhow::Result<String> {
    use anyhow::Context as _;
    let (path, required) = match values {
        Some(p) => (p.to_path_buf(), true),
        None => (dir.join("values.yaml"), false),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read the values file {}", path.display())),
    }
}

/// The code frame an error (or one of its causes) carries: where a script failed to load or
/// threw, with the source line, to print under the error. Load errors carry one once
/// wrapped in [`ctop_runtime::Framed`].
pub fn code_frame(error: &(dyn std::error::Error + 'static)) -> Option<ctop_core::CodeFrame> {
    ctop_runtime::frame_in(error, None)
}
