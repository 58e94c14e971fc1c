//! # ctop: Kubernetes operators written as one TypeScript script
//!
//! The binary is a thin composition of the library crates; each subcommand lives in its
//! own module under `cmd/`. Start with [`Cli`] for the command surface.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod telemetry;

/// jemalloc rather than glibc's malloc: an operator allocates and frees many small objects
/// across threads (JSON text, children, HTTP bodies), where glibc spent about a fifth of its
/// CPU in `_int_malloc`, `malloc_consolidate` and `_int_free` (perf). In ctop-bench at 1,000
/// CRs jemalloc took 15–20 % less CPU for 2–12 % more RSS; mimalloc took 30 % less CPU but
/// twice the RSS (bench/README.md). QuickJS keeps using the C library's `malloc`.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// ctop runs Kubernetes operators written as one TypeScript script.
#[derive(Debug, Parser)]
#[command(name = "ctop", version, about, propagate_version = true)]
pub struct Cli {
    /// Log format: `text` for people, `json` for machines.
    #[arg(long, global = true, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Export a trace of each reconcile to this OpenTelemetry collector (OTLP/HTTP, e.g.
    /// http://otel-collector:4318).
    #[arg(long, global = true, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write one self-contained, deterministic bundle.js.gz of an operator directory.
    Bundle(cmd::bundle::BundleArgs),
    /// Check an operator without a cluster: types (tsc), manifests, names and RBAC.
    Check(cmd::check::CheckArgs),
    /// Develop an operator: kubesim, CRDs, samples, the operator, reload on save.
    Dev(cmd::dev::DevArgs),
    /// Create a working operator in a new directory.
    Init(cmd::init::InitArgs),
    /// Print the manifests that deploy an operator: CRDs, RBAC, the bundle's ConfigMap, the Deployment.
    Manifests(cmd::manifests::ManifestsArgs),
    /// Run an operator script against a cluster until interrupted.
    Run(Box<cmd::run::RunArgs>),
    /// Run a recording's handler calls again against the script, or its next version.
    Replay(cmd::replay::ReplayArgs),
    /// Run kubesim, the embedded Kubernetes API server, until interrupted.
    Sim(cmd::sim::SimArgs),
    /// Why an object is (not) Ready: its children's tree and health, last reconciles, events.
    Trace(cmd::trace::TraceArgs),
    /// Run an operator's tests (DIR/tests/*.yaml) on an in-process kubesim with a virtual clock.
    Test(cmd::test::TestArgs),
    /// (Re)write the typings of an operator: ctop.d.ts and its own resources' interfaces.
    Types(cmd::init::TypesArgs),
    /// Admission webhooks: serve the script's validate/mutate handlers over HTTPS.
    Webhook(cmd::webhook::WebhookArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `ctop run --dev` logs text whatever --log-format says.
    let format = match &cli.command {
        Command::Run(args) if args.dev => "text",
        _ => cli.log_format.as_str(),
    };
    // A test run logs only errors unless CTOP_LOG says otherwise: failure paths are what
    // its tests exercise, and their warnings (and the client's log of each 500 an injected
    // fault answers) are expected.
    let default_filter = if matches!(cli.command, Command::Test(_)) {
        "error,kube_client::client::builder=off"
    } else {
        "info"
    };
    let _telemetry = telemetry::init(format, cli.otlp_endpoint.as_deref(), default_filter);
    // Each test runs on a runtime of its own (a paused clock), so not inside this one.
    if let Command::Test(args) = &cli.command {
        return cmd::test::run(args);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime; check thread and file limits (ulimit -n)");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Bundle(args) => cmd::bundle::run(&args).map(|()| 0),
            Command::Check(args) => cmd::check::run(&args).map(|()| 0),
            Command::Dev(args) => cmd::dev::run(args).await.map(|()| 0),
            Command::Init(args) => cmd::init::init(&args).map(|()| 0),
            Command::Manifests(args) => cmd::manifests::run(&args).map(|()| 0),
            Command::Replay(args) => cmd::replay::run(&args).await,
            Command::Run(args) => cmd::run::run(*args).await.map(|()| 0),
            Command::Sim(args) => cmd::sim::run(args).await.map(|()| 0),
            Command::Test(_) => Ok(0),
            Command::Trace(args) => cmd::trace::run(&args).await.map(|()| 0),
            Command::Types(args) => cmd::init::types(&args).map(|()| 0),
            Command::Webhook(args) => cmd::webhook::run(args).await.map(|()| 0),
        }
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            match cmd::code_frame(e.as_ref()) {
                Some(frame) => tracing::error!("{e:#}\n{frame}"),
                None => tracing::error!("{e:#}"),
            }
            ExitCode::FAILURE
        }
    }
}
