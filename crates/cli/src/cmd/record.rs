//! `--record FILE` of `ctop run` and `ctop dev`: every handler call's inputs and outputs
//! written to a recording (`ctop-recording`) that `ctop replay` runs again.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use ctop_core::Handlers;
use ctop_recording::{RecordOptions, RecordWriter, Redaction};
use ctop_runtime::Script;
use serde_json::Value;

/// The recording flags every serving command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct RecordFlags {
    /// Record every handler call (the object, what it read, the clock, random values and
    /// fetch replies it got, and its outcome) to FILE, for `ctop replay` to run again
    /// against this script or the next version. Secrets' values are masked unless
    /// --record-secrets.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Size of one recording file; past it, FILE moves to FILE.1 (FILE.1 to FILE.2, …) and a
    /// new FILE starts.
    #[arg(long, default_value = "64Mi", requires = "record")]
    pub record_max_size: ctop_core::ByteSize,
    /// Older files kept besides FILE (FILE.1 … FILE.N); the oldest beyond are deleted.
    #[arg(long, default_value_t = 3, requires = "record")]
    pub record_keep: usize,
    /// Record Secrets' values (and randomString results) as they are instead of masking
    /// them; the file then holds credentials.
    #[arg(long, requires = "record")]
    pub record_secrets: bool,
}

impl RecordFlags {
    /// The recording's writer, when --record asks for one.
    pub fn writer(
        &self,
        operator: &str,
        env: &Value,
        values: &Value,
    ) -> anyhow::Result<Option<RecordWriter>> {
        let Some(path) = &self.record else { return Ok(None) };
        let options = RecordOptions {
            path: path.clone(),
            max_size: self.record_max_size,
            keep: self.record_keep,
            redaction: if self.record_secrets { Redaction::Clear } else { Redaction::Masked },
            operator: operator.to_owned(),
            ctop_version: env!("CARGO_PKG_VERSION").to_owned(),
            sdk_sha256: sdk_sha256(),
        };
        let writer = RecordWriter::create(options, env.clone(), values.clone())
            .with_context(|| format!("cannot record to {} (choose another --record path)", path.display()))?;
        tracing::info!(path = %path.display(), "recording every handler call; replay with ctop replay {}", path.display());
        Ok(Some(writer))
    }
}

/// The sha256 of the SDK built into this binary (all its modules): a replay by another ctop
/// says so.
pub fn sdk_sha256() -> String {
    ctop_runtime::sdk::sha256_hex()
}

/// `handlers` of `script`, recorded by `writer` when there is one.
pub fn wrap(
    handlers: Arc<dyn Handlers>,
    script: &Script,
    writer: Option<&RecordWriter>,
) -> Arc<dyn Handlers> {
    match writer {
        Some(w) => ctop_testing::replay::recorded(handlers, script, w.clone()),
        None => handlers,
    }
}

/// Flushes and closes the recording, saying where it is.
pub fn close(writer: Option<RecordWriter>) -> anyhow::Result<()> {
    let Some(writer) = writer else { return Ok(()) };
    let summary =
        writer.close().context("the recording could not be finished; its last calls may be missing")?;
    tracing::info!(
        calls = summary.calls,
        dropped = summary.dropped,
        bytes = summary.bytes,
        parts = summary.parts,
        "recording closed"
    );
    Ok(())
}
