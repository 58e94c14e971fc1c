//! `ctop-mutate`: the convergence fuzzer from the command line. Runs the `ctop` binary on
//! an in-process kubesim, mutates an example's objects at random with concurrent writers
//! (optionally under injected faults and with an operator restart), and checks that the
//! operator converges to the example's invariants. See `ctop_e2e::mutate`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ctop_e2e::binary;
use ctop_e2e::mutate::{self, Example};

/// Fuzz an example operator with random concurrent edits and check that it converges.
#[derive(Debug, Parser)]
#[command(name = "ctop-mutate")]
struct Args {
    /// Which example (all of them when not given).
    #[arg(long)]
    example: Option<Example>,
    /// Operations per example.
    #[arg(long, default_value_t = 200)]
    steps: u64,
    /// The seed [default: from the clock; printed either way].
    #[arg(long)]
    seed: Option<u64>,
    /// Concurrent writers.
    #[arg(long, default_value_t = 4)]
    writers: u64,
    /// Inject kubesim faults: errors, latency, dropped watches.
    #[arg(long)]
    faults: bool,
    /// Kill the operator half-way and start a new one.
    #[arg(long)]
    restart: bool,
    /// The ctop binary [default: `ctop` beside this program, e.g. `target/debug/ctop`].
    #[arg(long, env = "CTOP_BIN")]
    ctop: Option<PathBuf>,
    /// The directory of the examples.
    #[arg(long, default_value = "examples")]
    examples_dir: PathBuf,
    /// Seconds to wait for convergence after the last operation.
    #[arg(long, default_value_t = 120)]
    converge_timeout: u64,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CTOP_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,kube_client::client::builder=off")
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let ctop = match args.ctop.map_or_else(binary::locate, Ok) {
        Ok(path) => path,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "ctop-mutate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    let examples = args.example.map_or_else(|| Example::ALL.to_vec(), |e| vec![e]);
    let mut out = std::io::stdout();
    let mut failed = false;
    for example in examples {
        let config = mutate::Config {
            example,
            seed,
            steps: args.steps,
            writers: args.writers,
            faults: args.faults,
            restart: args.restart,
            ctop: ctop.clone(),
            examples_dir: args.examples_dir.clone(),
            converge_timeout: Duration::from_secs(args.converge_timeout),
        };
        let _ = writeln!(out, "{example}: running `{}`", config.command());
        match mutate::run(config).await {
            Ok(report) => {
                let _ = writeln!(out, "PASS {report}");
            }
            Err(e) => {
                failed = true;
                let _ = writeln!(out, "FAIL {example} (seed {seed}): {e}");
                let mut source = std::error::Error::source(&e);
                while let Some(s) = source {
                    let _ = writeln!(out, "  caused by: {s}");
                    source = s.source();
                }
            }
        }
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
