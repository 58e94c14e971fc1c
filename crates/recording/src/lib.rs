//! `ctop-recording`: recordings of an operator's handler calls, for "upgrade without fear"
//! (`ctop run --record FILE`, `ctop replay FILE`).
//!
//! Where to start:
//!
//! - **Recording.** [`RecordWriter::create`] starts a file (`.ctrec`) with a header and the
//!   scripts' Env and Values; [`Recorder`] wraps any [`ctop_core::Handlers`] and sends each
//!   finished call to it: the object handed to the handler, every `getObserved` /
//!   `listObserved` answer and every nondeterministic value (clock, randomness, `fetch`,
//!   through [`ctop_core::Observer::supply`]) in call order (the *tape*), and the outcome's
//!   output JSON or the failure. The writer runs on its own thread behind a bounded
//!   channel; a call it cannot take in time is counted as dropped, never waited for.
//!   [`RecordWriter::close`] finishes the file. Parts rotate at a size cap.
//! - **Reading.** [`read`] gives a [`Recording`]: header, scripts (bundles), context, the
//!   [`CallRecord`]s, and whether anything was lost ([`Recording::complete`],
//!   [`Recording::notes`]).
//! - **Replaying.** [`ReplayObserver`] serves a recorded call's tape back to the handlers:
//!   strictly in order (the same script must read the same things: anything else is a
//!   divergence) or by key (another version of the script).
//!
//! The file format, redaction included, is described in `FORMAT.md` beside this crate:
//! magic and version, LZ4 blocks of JSON lines with a checksum each (`block.rs`), the line
//! types (`lines.rs`), the writer and its rotation (`writer.rs`, `part.rs`, `files.rs`),
//! the reader (`reader.rs`) and the masking of secrets (`redact.rs`, on the writer thread).

mod block;
mod files;
mod json;
mod lines;
mod part;
mod reader;
mod recorder;
mod redact;
mod replay;
mod types;
mod writer;

pub use reader::{ReadError, Recording, read, read_part};
pub use recorder::{Recorder, TapeObserver};
pub use replay::{ReplayMode, ReplayObserver};
pub use types::{CallRecord, CallResult, HandlerKind, Header, Redaction, RuntimeCall, ScriptInfo, TapeEntry};
pub use writer::{RecordError, RecordOptions, RecordSummary, RecordWriter};

#[cfg(test)]
mod tests;
