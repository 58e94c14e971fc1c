//! [`RecordWriter`]: the handle that calls are sent to, and the OS thread that redacts,
//! encodes, compresses and writes them (rotation is in `part.rs`).
//!
//! A call is handed over with `try_send` on a bounded channel: when the writer falls
//! behind, the call is counted as dropped (a `dropped` line) instead of slowing a reconcile.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ctop_core::{ByteSize, MapOutcome, ReconcileOutcome};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;

use crate::block::{MAJOR, MINOR};
use crate::part::Part;
use crate::redact::Masker;
use crate::types::{CallRecord, CallResult, Header, Redaction, ScriptInfo};

/// How to record.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// The file (`FILE`; older parts are `FILE.1` … `FILE.keep`).
    pub path: PathBuf,
    /// The most one part may hold (0: no limit); default 64 MiB.
    pub max_size: ByteSize,
    /// How many older parts to keep besides `FILE`; default 3. Disk use stays at most
    /// (keep + 1) × `max_size`.
    pub keep: usize,
    /// Whether secrets are masked; default masked.
    pub redaction: Redaction,
    /// The operator's name (the header's `operator`).
    pub operator: String,
    /// The version of ctop recording.
    pub ctop_version: String,
    /// sha256 of the SDK embedded in it.
    pub sdk_sha256: String,
}

impl Default for RecordOptions {
    fn default() -> Self {
        Self {
            path: PathBuf::new(),
            max_size: ByteSize::mib(64),
            keep: 3,
            redaction: Redaction::Masked,
            operator: String::new(),
            ctop_version: String::new(),
            sdk_sha256: String::new(),
        }
    }
}

/// What a finished recording holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordSummary {
    /// Calls written.
    pub calls: u64,
    /// Calls not written: the writer was behind, or a call alone was bigger than a part.
    pub dropped: u64,
    /// Bytes written, over every part (rotated away or not).
    pub bytes: u64,
    /// Parts written (the last one's number).
    pub parts: u32,
}

/// Why a recording could not be written. The cause is [`std::error::Error::source`];
/// clones share it (a closed writer answers every `close` alike).
#[derive(Clone, Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be created.
    #[error("cannot create the recording {}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Writing to the file failed; calls after that were dropped.
    #[error("cannot write the recording {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// Moving the parts to start a new one failed; calls after that were dropped.
    #[error("cannot rotate the recording {}", path.display())]
    Rotate {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The writer thread could not be started.
    #[error("cannot start the recording's writer thread")]
    Thread {
        /// Why.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// The writer thread panicked: the file ends without its `end` line.
    #[error("the recording's writer thread stopped unexpectedly")]
    Panicked,
}

/// A call's outcome, turned into its output JSON on the writer thread.
pub(crate) enum Produced {
    /// `reconcile`, `finalize`, `onStart`.
    Reconcile(Box<ReconcileOutcome>),
    /// A mapper.
    Map(MapOutcome),
}

/// A finished call on its way to the writer; `produced`, when set, replaces
/// `call.result`.
pub(crate) struct Finished {
    pub(crate) call: CallRecord,
    pub(crate) produced: Option<Produced>,
}

enum Msg {
    Script(ScriptInfo),
    Call(Box<Finished>),
}

/// Knobs the tests turn.
pub(crate) struct Tuning {
    /// The channel's size.
    pub(crate) capacity: usize,
    /// Flush a block this long after its first line.
    pub(crate) flush_after: Duration,
    /// Flush a block once its text is this long.
    pub(crate) block_text: usize,
    /// The thread waits for this before it reads the channel.
    pub(crate) hold: Option<Receiver<()>>,
}

impl Default for Tuning {
    fn default() -> Self {
        Self { capacity: 4096, flush_after: Duration::from_secs(1), block_text: 64 << 10, hold: None }
    }
}

/// The sending side of a recording, shared by every [`crate::Recorder`] of one process
/// (`ctop dev` makes one per reload). Cloning is cheap; the file is finished by
/// [`RecordWriter::close`], or when the last clone is dropped.
#[derive(Clone)]
pub struct RecordWriter {
    shared: Arc<Shared>,
}

struct Shared {
    tx: RwLock<Option<SyncSender<Msg>>>,
    thread: Mutex<Option<JoinHandle<Result<RecordSummary, RecordError>>>>,
    closed: Mutex<Option<Result<RecordSummary, RecordError>>>,
    dropped: Arc<AtomicU64>,
    seq: AtomicU64,
    scripts: Mutex<HashSet<String>>,
}

impl RecordWriter {
    /// Start a recording at `options.path`: its header and context (`env`, `values`) are
    /// written before this returns, then a thread writes the calls. An existing `FILE`
    /// is shifted to `FILE.1` as at a rotation, so the previous recording survives.
    pub fn create(options: RecordOptions, env: Value, values: Value) -> Result<Self, RecordError> {
        Self::create_tuned(options, env, values, Tuning::default())
    }

    pub(crate) fn create_tuned(
        options: RecordOptions,
        env: Value,
        values: Value,
        tuning: Tuning,
    ) -> Result<Self, RecordError> {
        let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let id: [u8; 16] = rand::random();
        let header = Header {
            format: (MAJOR, MINOR),
            ctop: options.ctop_version.clone(),
            sdk_sha256: options.sdk_sha256.clone(),
            recording_id: id.iter().map(|b| format!("{b:02x}")).collect(),
            part: 1,
            started,
            operator: options.operator.clone(),
            redaction: options.redaction,
            tz: std::env::var("TZ").ok(),
        };
        let masker = (options.redaction == Redaction::Masked).then(Masker::new);
        let part = Part::create(&options, header, env, values)?;
        let dropped = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::sync_channel(tuning.capacity);
        let thread = Thread { part, masker, rx, dropped: dropped.clone(), written_dropped: 0, tuning };
        let handle = std::thread::Builder::new()
            .name("ctop-recording".into())
            .spawn(move || thread.run())
            .map_err(|e| RecordError::Thread { source: Arc::new(e) })?;
        Ok(Self {
            shared: Arc::new(Shared {
                tx: RwLock::new(Some(tx)),
                thread: Mutex::new(Some(handle)),
                closed: Mutex::new(None),
                dropped,
                seq: AtomicU64::new(0),
                scripts: Mutex::new(HashSet::new()),
            }),
        })
    }

    /// Finish the recording: write what is pending and the `end` line, and wait for the
    /// thread. Later calls are not recorded; calling it again gives the same answer.
    pub fn close(&self) -> Result<RecordSummary, RecordError> {
        self.shared.close()
    }

    /// The next call's number.
    pub(crate) fn next_seq(&self) -> u64 {
        self.shared.seq.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Write `script` once (a `script` line, repeated at the top of every later part).
    /// Waits when the channel is full: scripts are sent when a [`crate::Recorder`] is made,
    /// not during calls.
    pub(crate) fn add_script(&self, script: ScriptInfo) {
        if !self.shared.scripts.lock().insert(script.sha256.clone()) {
            return;
        }
        if let Some(tx) = self.shared.tx.read().as_ref() {
            // A send fails only once the thread is gone; close reports why.
            let _ = tx.send(Msg::Script(script));
        }
    }

    /// Hand a finished call to the writer without waiting; counted as dropped when the
    /// writer is behind.
    pub(crate) fn submit(&self, call: Finished) {
        let tx = self.shared.tx.read();
        let Some(tx) = tx.as_ref() else {
            tracing::debug!(seq = call.call.seq, "a call finished after the recording was closed");
            return;
        };
        match tx.try_send(Msg::Call(Box::new(call))) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Shared {
    fn close(&self) -> Result<RecordSummary, RecordError> {
        let mut closed = self.closed.lock();
        if let Some(done) = &*closed {
            return done.clone();
        }
        drop(self.tx.write().take());
        let done = match self.thread.lock().take() {
            Some(handle) => handle.join().unwrap_or(Err(RecordError::Panicked)),
            None => Err(RecordError::Panicked),
        };
        *closed = Some(done.clone());
        done
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!(error = &e as &dyn std::error::Error, "the recording did not finish cleanly");
        }
    }
}

/// The writer thread's state.
struct Thread {
    part: Part,
    masker: Option<Masker>,
    rx: Receiver<Msg>,
    /// Calls the senders dropped, and how many of them `dropped` lines already say.
    dropped: Arc<AtomicU64>,
    written_dropped: u64,
    tuning: Tuning,
}

impl Thread {
    fn run(mut self) -> Result<RecordSummary, RecordError> {
        if let Some(hold) = self.tuning.hold.take() {
            let _ = hold.recv();
        }
        let mut deadline: Option<Instant> = None;
        loop {
            let msg = match deadline {
                None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                Some(d) => self.rx.recv_timeout(d.saturating_duration_since(Instant::now())),
            };
            match msg {
                Ok(Msg::Script(script)) => self.part.add_script(script),
                Ok(Msg::Call(finished)) => self.part.add_call(self.prepare(*finished)),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            let now = Instant::now();
            if self.part.pending_text() == 0 {
                deadline = None;
            } else if deadline.is_some_and(|d| now >= d) || self.part.pending_text() >= self.tuning.block_text
            {
                self.flush();
                deadline = None;
            } else if deadline.is_none() {
                deadline = Some(now + self.tuning.flush_after);
            }
        }
        self.flush();
        let mut summary = self.part.finish()?;
        summary.dropped += self.dropped.load(Ordering::Relaxed);
        Ok(summary)
    }

    /// The call's output JSON, then its redaction.
    fn prepare(&self, finished: Finished) -> CallRecord {
        let Finished { mut call, produced } = finished;
        match produced {
            Some(Produced::Reconcile(o)) => call.result = CallResult::Outcome(o.to_output()),
            Some(Produced::Map(o)) => call.result = CallResult::Outcome(o.to_output()),
            None => {}
        }
        if let Some(masker) = &self.masker {
            crate::redact::redact(&mut call, masker);
        }
        call
    }

    /// Say how many calls the senders dropped since the last block, then write the block.
    fn flush(&mut self) {
        let dropped = self.dropped.load(Ordering::Relaxed);
        if dropped > self.written_dropped {
            self.part.add_dropped(dropped - self.written_dropped);
            self.written_dropped = dropped;
        }
        self.part.flush();
    }
}
