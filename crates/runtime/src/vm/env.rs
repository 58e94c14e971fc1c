//! What one call into JavaScript makes of what comes back: errors classified ([`Env::error`]:
//! a timeout, out of memory, or the script's exception with its stack and code frame), the
//! promise rejections no handler took ([`Tracker`]), promise jobs run ([`Env::drain`]), and the
//! output copied or parsed within [`super::Limits::max_output`].

use std::sync::Arc;

use parking_lot::Mutex;
use rquickjs::{Coerced, Ctx, Exception, Runtime, Type, Value};

use super::deadline::Deadline;
use super::stack::{at_call_site, map_stack, pick_frame};
use super::{DISPATCH_GLOBAL, SnapshotSlot, VmError, VmOptions};
use crate::bundle::Bundle;
use crate::diagnostic::{CodeFrame, frame_in_bundle};

/// The first promise rejection of the call in progress that no handler took (yet).
#[derive(Default)]
pub(super) struct Rejections {
    /// Rejected promises without a handler; a handler attached later takes one off.
    pub(super) unhandled: usize,
    /// The error of the first of them.
    pub(super) first: Option<VmError>,
}

impl Rejections {
    pub(super) fn clear(&mut self) {
        self.unhandled = 0;
        self.first = None;
    }

    /// The error to fail the call with, when a rejection is still unhandled.
    pub(super) fn take(&mut self) -> Option<VmError> {
        let error = self.first.take().filter(|_| self.unhandled > 0);
        self.clear();
        error
    }
}

pub(super) type RejectionSlot = Arc<Mutex<Rejections>>;

/// The runtime's promise rejection tracker: what it needs to classify a rejection reason.
pub(super) struct Tracker {
    pub(super) rejections: RejectionSlot,
    pub(super) deadline: Arc<Deadline>,
    pub(super) options: VmOptions,
    pub(super) bundle: Arc<Bundle>,
}

impl Tracker {
    pub(super) fn track<'js>(&self, ctx: &Ctx<'js>, reason: Value<'js>, handled: bool) {
        let mut rejections = self.rejections.lock();
        if handled {
            rejections.unhandled = rejections.unhandled.saturating_sub(1);
            if rejections.unhandled == 0 {
                rejections.first = None;
            }
            return;
        }
        rejections.unhandled += 1;
        if rejections.first.is_none() {
            let env = Env { deadline: &self.deadline, options: &self.options, bundle: &self.bundle };
            let error = if self.deadline.fired() { env.timeout() } else { env.exception(ctx, reason) };
            rejections.first = Some(match error {
                VmError::Exception { name, message, stack, file, line, column, frame } => {
                    VmError::Exception {
                        name,
                        message: format!("{message} (a promise rejected with no handler)"),
                        stack,
                        file,
                        line,
                        column,
                        frame,
                    }
                }
                other => other,
            });
        }
    }
}

/// What error classification and output handling need, borrowed from the [`Vm`].
pub(super) struct Env<'a> {
    pub(super) deadline: &'a Deadline,
    pub(super) options: &'a VmOptions,
    pub(super) bundle: &'a Bundle,
}

impl Env<'_> {
    pub(super) fn timeout(&self) -> VmError {
        VmError::Timeout { after: self.options.limits.timeout }
    }

    pub(super) fn oom(&self) -> VmError {
        VmError::OutOfMemory { limit: self.options.limits.memory }
    }

    /// Classifies an rquickjs error, taking the pending exception off the context.
    pub(super) fn error(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> VmError {
        let thrown = error.is_exception().then(|| ctx.catch());
        if self.deadline.fired() {
            return self.timeout();
        }
        match (error, thrown) {
            (_, Some(value)) => self.exception(ctx, value),
            (rquickjs::Error::Allocation, None) => self.oom(),
            (e, None) => VmError::Engine(e.to_string()),
        }
    }

    pub(super) fn exception<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> VmError {
        // QuickJS throws nothing at all, or `null`, when it cannot even allocate the error
        // object (`JS_ThrowError2`). A script that throws `null` itself is reported the same
        // way: the two cannot be told apart.
        if matches!(value.type_of(), Type::Uninitialized | Type::Null) {
            return self.oom();
        }
        let Some(error) = value.as_object().and_then(|o| Exception::from_object(o.clone())) else {
            return VmError::Exception {
                name: "Error".to_owned(),
                message: describe(ctx, &value),
                stack: String::new(),
                file: None,
                line: None,
                column: None,
                frame: None,
            };
        };
        let name = error
            .get::<_, Option<Coerced<String>>>("name")
            .ok()
            .flatten()
            .map_or_else(|| "Error".to_owned(), |n| n.0);
        let message = error.message().unwrap_or_default();
        if name == "InternalError" && message == "out of memory" {
            return self.oom();
        }
        let stack = at_call_site(&error.stack().unwrap_or_default(), self.bundle);
        let stack = map_stack(&stack, self.options.position_mapper.as_ref());
        let frame = pick_frame(&stack, self.bundle);
        let code = frame.as_ref().and_then(|f| self.code_frame(f.file, f.line, f.column)).map(Box::new);
        VmError::Exception {
            name,
            message,
            file: frame.as_ref().map(|f| f.file.to_owned()),
            line: frame.as_ref().map(|f| f.line),
            column: frame.as_ref().map(|f| f.column),
            stack,
            frame: code,
        }
    }

    /// The code frame at a position of the stack: in the original source when positions
    /// were mapped through the source maps, else in the module's JavaScript.
    pub(super) fn code_frame(&self, file: &str, line: u32, column: u32) -> Option<CodeFrame> {
        if self.options.position_mapper.is_some() {
            frame_in_bundle(self.bundle, file, line, column)
        } else {
            CodeFrame::new(file, &self.bundle.modules.get(file)?.js, line, column)
        }
    }

    /// The value of a promise once the jobs ran: its result, its rejection as an error, or
    /// [`VmError::NeverSettled`].
    pub(super) fn settled<'js>(
        &self,
        ctx: &Ctx<'js>,
        value: Value<'js>,
        what: &str,
    ) -> Result<Value<'js>, VmError> {
        let Some(promise) = value.as_promise() else {
            return Ok(value);
        };
        match promise.result::<Value<'_>>() {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(self.error(ctx, e)),
            None => Err(VmError::NeverSettled { what: what.to_owned() }),
        }
    }

    /// Runs every queued promise job, outside the context so that a job's failure is seen;
    /// fails on the first job that throws, or once the deadline has passed.
    pub(super) fn drain(&self, runtime: &Runtime) -> Result<(), VmError> {
        loop {
            match runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(job) => {
                    return Err(job.0.with(|ctx| {
                        let thrown = ctx.catch();
                        if self.deadline.fired() { self.timeout() } else { self.exception(&ctx, thrown) }
                    }));
                }
            }
            if self.deadline.expired() {
                return Err(self.timeout());
            }
        }
        if self.deadline.fired() {
            return Err(self.timeout());
        }
        Ok(())
    }

    /// The output object of a dispatch that snapshotted its children through
    /// `__ct_host.snap`: copied from the runtime, with the snapshot indices in `applies` and
    /// `patches` replaced by the snapshots.
    pub(super) fn copy_output<'js>(
        &self,
        ctx: &Ctx<'js>,
        value: &Value<'js>,
        snapshots: &SnapshotSlot,
    ) -> Result<serde_json::Value, VmError> {
        let mut snapshots = snapshots.lock();
        let mut output = snapshots.copy(ctx, value).map_err(|e| self.error(ctx, e))?;
        if !output.is_object() {
            return Err(VmError::BadOutput(format!(
                "{DISPATCH_GLOBAL} returned {}, not an object or a JSON string",
                value.type_name()
            )));
        }
        for list in ["applies", "patches"] {
            let Some(items) = output.get_mut(list).and_then(serde_json::Value::as_array_mut) else {
                continue;
            };
            for item in items.iter_mut() {
                let taken =
                    item.as_u64().and_then(|i| usize::try_from(i).ok()).and_then(|i| snapshots.take(i));
                *item = taken.ok_or_else(|| {
                    VmError::BadOutput(format!("{list} holds {item}, which is not a snapshot of this call"))
                })?;
            }
        }
        Ok(output)
    }

    /// Checks that `value` is a JSON string within [`Limits::max_output`] and parses it.
    pub(super) fn parse_output<'js>(
        &self,
        ctx: &Ctx<'js>,
        value: Value<'js>,
    ) -> Result<serde_json::Value, VmError> {
        let Some(text) = value.as_string() else {
            return Err(VmError::BadOutput(format!(
                "{DISPATCH_GLOBAL} returned {}, not a JSON string",
                value.type_name()
            )));
        };
        // The UTF-8 copy lives in the runtime's memory, so its size is bounded by the limit
        // before anything is copied to the Rust heap.
        let text = text.clone().to_cstring().map_err(|e| self.error(ctx, e))?;
        let limit = self.options.limits.max_output;
        let size = text.as_str().len();
        if size > limit {
            return Err(VmError::OutputTooLarge { size, limit });
        }
        serde_json::from_str(text.as_str())
            .map_err(|e| VmError::BadOutput(format!("output is not valid JSON: {e}")))
    }
}

/// A thrown non-error value as text.
pub(super) fn describe<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    if let Some(s) = value.as_string() {
        return s.to_string().unwrap_or_default();
    }
    match ctx.json_stringify(value.clone()) {
        Ok(Some(json)) => json.to_string().unwrap_or_default(),
        _ => format!("a thrown {}", value.type_name()),
    }
}
