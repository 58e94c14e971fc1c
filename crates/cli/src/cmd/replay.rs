//! `ctop replay FILE`: run a recording's handler calls again, without a cluster, against the
//! recorded script (it must reproduce every output: the recording is complete) or another
//! version (`--script DIR`: what it would do differently, object by object). The engine is
//! `ctop_testing::replay`; this module reads the flags and prints.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use ctop_runtime::Framed;
use ctop_runtime::{Limits, Script, load_dir};
use ctop_testing::replay::{self, ExitCode, Target};

/// Arguments of `ctop replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The recording (`ctop run --record FILE` or `ctop dev --record FILE`); its older parts
    /// FILE.N … FILE.1 are read first.
    file: PathBuf,
    /// Replay against the script of this operator directory (the next version) instead of
    /// the recorded one.
    #[arg(long, value_name = "DIR")]
    script: Option<PathBuf>,
    /// The entry script of --script, relative to DIR.
    #[arg(long, default_value = "operator.ct", requires = "script")]
    entry: String,
    /// Read FILE only, not its older parts.
    #[arg(long)]
    only_this_part: bool,
    /// `text`, or `json` (the whole report, for CI).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    output: String,
    /// Exit 0 when outputs only differ (children, status), 2 still when a call fails anew:
    /// for a CI job that reviews an expected change.
    #[arg(long)]
    allow_differences: bool,
}

/// Replays and prints; the exit code says what was found (0 identical, 1 differences,
/// 2 new failures, 3 the recording did not reproduce or is incomplete).
pub async fn run(args: &ReplayArgs) -> anyhow::Result<u8> {
    let recording = if args.only_this_part {
        ctop_recording::read_part(&args.file)
    } else {
        ctop_recording::read(&args.file)
    }
    .with_context(|| {
        format!("cannot read the recording {} (is it a file ctop --record wrote?)", args.file.display())
    })?;
    let target = match &args.script {
        None => Target::Recorded,
        Some(dir) => {
            let bundle = load_dir(dir, &args.entry)
                .map_err(|e| anyhow::Error::new(Framed::new(e, dir)))
                .context("the script to replay against could not be loaded (fix the error that follows)")?;
            let script = Script::from_bundle(bundle, 1, Limits::default())
                .context("the script to replay against could not be loaded")?;
            Target::Script { script: Arc::new(script), label: dir.display().to_string() }
        }
    };
    let report = replay::replay(&recording, target).await.context("the recording cannot be replayed")?;
    let printed = if args.output == "json" {
        let mut json = serde_json::to_string_pretty(&report).context("cannot write the report as JSON")?;
        json.push('\n');
        json
    } else {
        report.text()
    };
    std::io::stdout().lock().write_all(printed.as_bytes()).context("cannot print the report")?;
    let exit = report.exit_code();
    Ok(if args.allow_differences && exit == ExitCode::Differences { 0 } else { exit.code() })
}
