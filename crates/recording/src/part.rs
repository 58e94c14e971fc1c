//! The file being written: its preamble (magic, header, scripts, context), the lines
//! waiting for the next block, and rotation to a new part before a block would cross the
//! size cap. Owned by the writer thread.

use std::fs::File;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::block;
use crate::files::{create_private, shift};
use crate::lines::{self, Objects};
use crate::types::{CallRecord, Header, ScriptInfo};
use crate::writer::{RecordError, RecordOptions, RecordSummary};

/// The most older parts kept, whatever the options say.
const MAX_KEEP: u32 = 10_000;

/// A line (or lines) waiting for the next block, kept as values: a rotation writes them
/// again against the new file's objects.
enum Item {
    /// `scripts[i]`.
    Script(usize),
    Call(Box<CallRecord>),
    Dropped(u64),
}

pub(crate) struct Part {
    path: PathBuf,
    /// The cap in bytes; 0 for none.
    max: u64,
    keep: u32,
    header: Header,
    env: Value,
    values: Value,
    scripts: Vec<ScriptInfo>,
    /// `None` after a write failed: later calls are dropped.
    file: Option<File>,
    size: u64,
    /// Nothing but the preamble is in the file yet.
    fresh: bool,
    objects: Objects,
    pending: Vec<Item>,
    text: Vec<u8>,
    /// The size of the `end` block, kept free under the cap.
    end_len: u64,
    calls: u64,
    dropped: u64,
    bytes: u64,
    error: Option<RecordError>,
}

fn len64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl Part {
    /// Shift an existing `FILE` away, create it anew and write its preamble.
    pub(crate) fn create(
        options: &RecordOptions,
        header: Header,
        env: Value,
        values: Value,
    ) -> Result<Self, RecordError> {
        let keep = u32::try_from(options.keep).unwrap_or(u32::MAX).min(MAX_KEEP);
        let path = options.path.clone();
        if path.exists() {
            shift(&path, keep)
                .map_err(|e| RecordError::Rotate { path: path.clone(), source: Arc::new(e) })?;
        }
        let mut end = Vec::new();
        lines::push_end(&mut end);
        let mut part = Self {
            path,
            max: options.max_size.as_u64(),
            keep,
            header,
            env,
            values,
            scripts: Vec::new(),
            file: None,
            size: 0,
            fresh: true,
            objects: Objects::default(),
            pending: Vec::new(),
            text: Vec::new(),
            end_len: len64(block::encode(&end).len()),
            calls: 0,
            dropped: 0,
            bytes: 0,
            error: None,
        };
        part.open()?;
        Ok(part)
    }

    /// Create `FILE` and write its preamble: magic, then a block with the header, every
    /// script so far and the context.
    fn open(&mut self) -> Result<(), RecordError> {
        let file = create_private(&self.path)
            .map_err(|e| RecordError::Create { path: self.path.clone(), source: Arc::new(e) })?;
        self.file = Some(file);
        self.size = 0;
        self.objects.clear();
        let mut text = Vec::new();
        lines::push_header(&mut text, &self.header);
        for s in &self.scripts {
            lines::push_script(&mut text, s);
        }
        lines::push_context(&mut text, &self.env, &self.values);
        let mut bytes = block::preamble().to_vec();
        bytes.extend(block::encode(&text));
        self.write(&bytes)?;
        if self.max != 0 && self.size + self.end_len > self.max {
            tracing::warn!(
                path = %self.path.display(),
                "the recording's size cap is smaller than its header and scripts: no call fits in a part"
            );
        }
        self.fresh = true;
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), RecordError> {
        let Some(file) = &mut self.file else { return Ok(()) };
        file.write_all(bytes)
            .map_err(|e| RecordError::Write { path: self.path.clone(), source: Arc::new(e) })?;
        self.size += len64(bytes.len());
        self.bytes += len64(bytes.len());
        Ok(())
    }

    /// How much text waits for the next block.
    pub(crate) fn pending_text(&self) -> usize {
        self.text.len()
    }

    /// A new version of the script: a `script` line now, and in the preamble of every
    /// later part.
    pub(crate) fn add_script(&mut self, script: ScriptInfo) {
        if self.scripts.iter().any(|s| s.sha256 == script.sha256) {
            return;
        }
        self.scripts.push(script);
        self.add(Item::Script(self.scripts.len() - 1));
    }

    /// A finished (redacted) call.
    pub(crate) fn add_call(&mut self, call: CallRecord) {
        if self.file.is_none() {
            self.dropped += 1;
            return;
        }
        self.add(Item::Call(Box::new(call)));
    }

    /// Calls that were not recorded.
    pub(crate) fn add_dropped(&mut self, calls: u64) {
        self.add(Item::Dropped(calls));
    }

    fn add(&mut self, item: Item) {
        encode(&item, &self.scripts, &mut self.objects, &mut self.text);
        self.pending.push(item);
    }

    /// Write what is pending as one block (or more, or in a new part).
    pub(crate) fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let items = std::mem::take(&mut self.pending);
        let text = std::mem::take(&mut self.text);
        if self.file.is_none() {
            self.dropped += count_calls(&items);
            return;
        }
        let (calls, written) = (count_calls(&items), self.calls);
        if let Err(e) = self.write_items(items, &text) {
            tracing::error!(error = &e as &dyn std::error::Error, "recording stopped");
            self.dropped += calls.saturating_sub(self.calls - written);
            self.file = None;
            self.error.get_or_insert(e);
        }
    }

    /// Write `items`, already encoded as `text` against the current objects.
    fn write_items(&mut self, mut items: Vec<Item>, text: &[u8]) -> Result<(), RecordError> {
        let block = block::encode(text);
        if self.max == 0 || self.size + len64(block.len()) + self.end_len <= self.max {
            self.write(&block)?;
            self.fresh = false;
            self.calls += count_calls(&items);
            return Ok(());
        }
        if !self.fresh {
            self.rotate()?;
            // The new preamble holds every script.
            items.retain(|i| !matches!(i, Item::Script(_)));
            let text = self.encode_all(&items);
            return self.write_items(items, &text);
        }
        // Too big even for a part of its own: smaller blocks, down to one call, which is
        // dropped (a script is written anyway: calls need it more than the cap).
        self.objects.clear();
        if items.len() > 1 {
            let second = items.split_off(items.len() / 2);
            for half in [items, second] {
                let text = self.encode_all(&half);
                self.write_items(half, &text)?;
            }
            return Ok(());
        }
        match items.pop() {
            Some(Item::Call(call)) => {
                tracing::warn!(
                    seq = call.seq,
                    "a call's record is bigger than a part of the recording; dropped"
                );
                self.dropped += 1;
                let dropped = vec![Item::Dropped(1)];
                let text = self.encode_all(&dropped);
                self.write_items(dropped, &text)
            }
            Some(item) => {
                let text = self.encode_all(std::slice::from_ref(&item));
                self.write(&block::encode(&text))?;
                self.fresh = false;
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn encode_all(&mut self, items: &[Item]) -> Vec<u8> {
        let mut text = Vec::new();
        for item in items {
            encode(item, &self.scripts, &mut self.objects, &mut text);
        }
        text
    }

    /// End this part and start the next: `FILE` becomes `FILE.1`, and so on.
    fn rotate(&mut self) -> Result<(), RecordError> {
        self.write_end()?;
        self.file = None;
        shift(&self.path, self.keep)
            .map_err(|e| RecordError::Rotate { path: self.path.clone(), source: Arc::new(e) })?;
        self.header.part += 1;
        self.open()
    }

    fn write_end(&mut self) -> Result<(), RecordError> {
        let mut end = Vec::new();
        lines::push_end(&mut end);
        self.write(&block::encode(&end))?;
        if let Some(file) = &self.file {
            file.sync_data()
                .map_err(|e| RecordError::Write { path: self.path.clone(), source: Arc::new(e) })?;
        }
        Ok(())
    }

    /// Write what is pending and the `end` line.
    pub(crate) fn finish(mut self) -> Result<RecordSummary, RecordError> {
        self.flush();
        if self.file.is_some()
            && let Err(e) = self.write_end()
        {
            self.error.get_or_insert(e);
        }
        match self.error {
            Some(e) => Err(e),
            None => Ok(RecordSummary {
                calls: self.calls,
                dropped: self.dropped,
                bytes: self.bytes,
                parts: self.header.part,
            }),
        }
    }
}

fn encode(item: &Item, scripts: &[ScriptInfo], objects: &mut Objects, out: &mut Vec<u8>) {
    match item {
        Item::Script(i) => {
            if let Some(s) = scripts.get(*i) {
                lines::push_script(out, s);
            }
        }
        Item::Call(call) => lines::push_call(out, call, objects),
        Item::Dropped(n) => lines::push_dropped(out, *n),
    }
}

fn count_calls(items: &[Item]) -> u64 {
    len64(items.iter().filter(|i| matches!(i, Item::Call(_))).count())
}
