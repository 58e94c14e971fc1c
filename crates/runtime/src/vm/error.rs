//! [`VmError`]: why a call into the script failed, in words that say what to change.

use std::time::Duration;

use crate::diagnostic::CodeFrame;

const MIB: usize = 1024 * 1024;

/// Why a call into the script failed.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The script threw (or the engine threw for it, e.g. a stack overflow or a bad import).
    #[error("{name}: {message}{}", at(.file, .line, .column))]
    Exception {
        /// The error's `name` (`Error`, `TypeError`, …); `Error` for thrown non-errors.
        name: String,
        /// The error's `message`, or the thrown value as text.
        message: String,
        /// The stack trace, positions mapped through the bundle's source maps; may be empty.
        stack: String,
        /// Module of the innermost script frame (a bundle module if any frame is one).
        file: Option<String>,
        /// 1-based line in `file`.
        line: Option<u32>,
        /// 1-based column in `file`: where QuickJS recorded the failing operation, which can be
        /// later on the line than the `throw` keyword (e.g. the last operand of `new Error(..)`).
        column: Option<u32>,
        /// The source line at `file:line:column` with a caret, for terminals (not part of the
        /// message, which stays on one line for Events and conditions).
        frame: Option<Box<CodeFrame>>,
    },
    /// The call ran past its deadline and was stopped.
    #[error(
        "the script ran longer than its {after:?} deadline and was stopped; make the handler \
         do less per call, or raise the deadline (--reconcile-timeout; --webhook-handler-timeout \
         for validate and mutate)"
    )]
    Timeout {
        /// The deadline that was exceeded.
        after: Duration,
    },
    /// The runtime hit its memory limit.
    #[error(
        "the script ran out of memory (limit {}); keep less data alive in the script, or raise \
         --script-memory",
        bytes(*.limit)
    )]
    OutOfMemory {
        /// The memory limit in bytes.
        limit: usize,
    },
    /// The handler's output takes more memory than [`Limits::max_output`](super::Limits::max_output).
    #[error(
        "the handler's output takes more than its {} memory budget (children included); \
         return fewer or smaller objects, or raise --max-output",
        bytes(*.limit)
    )]
    OutputTooLarge {
        /// Heap bytes counted when the budget ran out.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The handler applied or patched more children than [`Limits::max_children`](super::Limits::max_children).
    #[error(
        "the handler returned more than {limit} children (apply and patch) in one call; split \
         the work across objects, or raise --max-children"
    )]
    TooManyChildren {
        /// The limit.
        limit: usize,
    },
    /// The script's output was not what the runtime protocol expects (not a JSON string, or
    /// not valid JSON).
    #[error("bad output from the script: {0}")]
    BadOutput(String),
    /// A promise the runtime waited for never settled (there is no event loop).
    #[error(
        "{what} returned a promise that never settled; only promises that resolve without \
         timers or I/O can be awaited"
    )]
    NeverSettled {
        /// What returned the promise.
        what: String,
    },
    /// The bundle could not be set up: the entry module is missing, or the script never
    /// installed `__ct_dispatch` (it did not import `"ctop"`).
    #[error("cannot load the script: {message}")]
    Load {
        /// What is wrong.
        message: String,
    },
    /// QuickJS failed in a way the script did not cause (e.g. creating the runtime).
    #[error("script engine error: {0}")]
    Engine(String),
}

/// `n` bytes as the flags take them: `64Mi` when a whole number of MiB, else `1000 bytes`.
fn bytes(n: usize) -> String {
    if n >= MIB && n.is_multiple_of(MIB) { format!("{}Mi", n / MIB) } else { format!("{n} bytes") }
}

fn at(file: &Option<String>, line: &Option<u32>, column: &Option<u32>) -> String {
    match (file, line, column) {
        (Some(f), Some(l), Some(c)) => format!(" (at {f}:{l}:{c})"),
        (Some(f), Some(l), None) => format!(" (at {f}:{l})"),
        (Some(f), None, _) => format!(" (in {f})"),
        _ => String::new(),
    }
}

impl VmError {
    /// Whether the `Vm` that returned this error may be broken and must be replaced.
    pub fn breaks_runtime(&self) -> bool {
        matches!(self, VmError::Timeout { .. } | VmError::OutOfMemory { .. })
    }
}
