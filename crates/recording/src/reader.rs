//! Reading a recording back: [`read`] joins a recording's parts oldest first, [`read_part`]
//! reads one file. Damage (a torn last block, a block whose checksum fails, a call that
//! refers to an object lost with such a block) is not an error: what can be read is
//! returned, with [`Recording::complete`] false and a note saying what was lost.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::block::{self, Block, Blocks, MAJOR, Start};
use crate::files::part_path;
use crate::lines::Line;
use crate::types::{CallRecord, Header, ScriptInfo};

/// A recording as read.
#[derive(Clone, Debug, PartialEq)]
pub struct Recording {
    /// The header of the oldest part read.
    pub header: Header,
    /// Every version of the script, by sha256.
    pub scripts: BTreeMap<String, ScriptInfo>,
    /// The scripts' Env as recorded.
    pub env: Value,
    /// The scripts' Values as recorded.
    pub values: Value,
    /// The calls, in the order they started (by `seq`).
    pub calls: Vec<CallRecord>,
    /// Calls the recorder could not write (`dropped` lines).
    pub dropped: u64,
    /// Nothing was dropped, damaged or cut short, and the last part ended with its `end`
    /// line. Parts removed by rotation do not count: they are noted.
    pub complete: bool,
    /// What a reader should know: damage, parts rotated away, parts of another recording.
    pub notes: Vec<String>,
}

/// Why a recording could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read the recording {}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It does not start with a recording's magic number.
    #[error("{} is not a ctop recording", path.display())]
    NotARecording {
        /// The file.
        path: PathBuf,
    },
    /// A major version this ctop does not read.
    #[error("{} is a recording of format {major}.{minor}; this ctop reads format {MAJOR}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// Its major version.
        major: u16,
        /// Its minor version.
        minor: u16,
    },
    /// Its first line is not a readable header (the first block is damaged).
    #[error("{} has no readable header", path.display())]
    NoHeader {
        /// The file.
        path: PathBuf,
    },
}

/// Read the recording `path`: its older parts (`FILE.N` … `FILE.1`) that belong to the
/// same recording, then `FILE`.
pub fn read(path: &Path) -> Result<Recording, ReadError> {
    let newest = read_part(path)?;
    let mut notes = Vec::new();
    let mut older = Vec::new();
    let mut complete = true;
    let mut expected = newest.header.part;
    for k in 1.. {
        if expected <= 1 {
            break;
        }
        expected -= 1;
        let p = part_path(path, k);
        if !p.exists() {
            notes.push(format!(
                "parts 1 to {expected} of the recording were removed by rotation; it starts at part {}",
                expected + 1
            ));
            break;
        }
        match read_part(&p) {
            Ok(r) if r.header.recording_id == newest.header.recording_id && r.header.part == expected => {
                older.push(r);
            }
            Ok(r) if r.header.recording_id == newest.header.recording_id => {
                notes.push(format!(
                    "{} is part {} where part {expected} was expected; not read",
                    p.display(),
                    r.header.part
                ));
                complete = false;
                break;
            }
            Ok(_) => {
                notes.push(format!("{} belongs to another recording; not read", p.display()));
                break;
            }
            Err(e) => {
                notes.push(format!("{}; older parts not read", ctop_core::Chain(&e)));
                complete = false;
                break;
            }
        }
    }
    // `older` is newest first: the last header taken is the oldest part's.
    let mut joined = newest;
    let mut older_notes = Vec::new();
    for part in older {
        joined.header = part.header;
        joined.scripts.extend(part.scripts);
        joined.calls.extend(part.calls);
        joined.dropped += part.dropped;
        joined.complete &= part.complete;
        older_notes.splice(0..0, part.notes);
    }
    joined.calls.sort_by_key(|c| c.seq);
    joined.complete &= complete;
    older_notes.append(&mut joined.notes);
    older_notes.extend(notes);
    joined.notes = older_notes;
    Ok(joined)
}

/// Read the one file `path` (a part is self-contained).
pub fn read_part(path: &Path) -> Result<Recording, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Open { path: path.to_path_buf(), source })?;
    match block::start(&bytes) {
        Start::NotARecording => return Err(ReadError::NotARecording { path: path.to_path_buf() }),
        Start::Version(major, minor) if major != MAJOR => {
            return Err(ReadError::Format { path: path.to_path_buf(), major, minor });
        }
        Start::Version(..) => {}
    }
    let mut part = PartReader::default();
    let name = path.display();
    for b in Blocks::new(&bytes) {
        match b {
            Block::Text(text) => {
                for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    part.line(line);
                    if part.header.is_none() {
                        return Err(ReadError::NoHeader { path: path.to_path_buf() });
                    }
                }
            }
            Block::Corrupt { offset, why } => {
                part.damaged(format!("{name}: the block at byte {offset} was skipped: {why}"));
            }
            Block::Torn { offset } => part.damaged(format!(
                "{name}: the last block (at byte {offset}) is incomplete and was ignored: the recording was cut short"
            )),
        }
    }
    let Some(header) = part.header else { return Err(ReadError::NoHeader { path: path.to_path_buf() }) };
    if let Some(first) = part.unreadable_first {
        part.notes.push(format!(
            "{name}: {} call(s) could not be read, the first because {first}",
            part.unreadable
        ));
    }
    if !part.ended {
        part.notes.push(format!(
            "{name} has no end line: the recording was still being written, or the process stopped"
        ));
    }
    if part.dropped > 0 {
        part.notes
            .push(format!("{name}: {} call(s) were not recorded (the writer was behind)", part.dropped));
    }
    let complete = part.ended && part.intact && part.unreadable == 0 && part.dropped == 0;
    Ok(Recording {
        header,
        scripts: part.scripts,
        env: part.env,
        values: part.values,
        calls: part.calls,
        dropped: part.dropped,
        complete,
        notes: part.notes,
    })
}

/// One file's lines as they are read.
struct PartReader {
    header: Option<Header>,
    scripts: BTreeMap<String, ScriptInfo>,
    env: Value,
    values: Value,
    objects: HashMap<u64, String>,
    calls: Vec<CallRecord>,
    dropped: u64,
    ended: bool,
    intact: bool,
    unreadable: usize,
    unreadable_first: Option<String>,
    notes: Vec<String>,
}

impl Default for PartReader {
    fn default() -> Self {
        Self {
            header: None,
            scripts: BTreeMap::new(),
            env: Value::Null,
            values: Value::Null,
            objects: HashMap::new(),
            calls: Vec::new(),
            dropped: 0,
            ended: false,
            intact: true,
            unreadable: 0,
            unreadable_first: None,
            notes: Vec::new(),
        }
    }
}

impl PartReader {
    fn damaged(&mut self, note: String) {
        self.intact = false;
        self.notes.push(note);
    }

    fn unreadable(&mut self, why: String) {
        self.unreadable += 1;
        self.unreadable_first.get_or_insert(why);
    }

    fn line(&mut self, line: &[u8]) {
        let line = match serde_json::from_slice::<Line>(line) {
            Ok(l) => l,
            Err(e) => {
                if self.header.is_some() {
                    self.damaged(format!("a line could not be read ({e}); skipped"));
                }
                return;
            }
        };
        match line {
            Line::Header(h) if self.header.is_none() => self.header = h.header(),
            Line::Header(_) => {}
            _ if self.header.is_none() => {}
            Line::Script(s) => match s.script() {
                Some(s) => {
                    self.scripts.insert(s.sha256.clone(), s);
                }
                None => self.damaged("a script line's bundle is not base64; skipped".to_owned()),
            },
            Line::Context(c) => {
                self.env = c.env;
                self.values = c.values;
            }
            Line::Object(o) => {
                self.objects.insert(o.id, o.json);
            }
            Line::Call(c) => match c.call(&self.objects) {
                Ok(call) => self.calls.push(call),
                Err(why) => self.unreadable(why),
            },
            Line::Dropped { calls } => self.dropped += calls,
            Line::End => self.ended = true,
            Line::Unknown => {}
        }
    }
}
