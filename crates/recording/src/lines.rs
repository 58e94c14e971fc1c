//! The JSON lines inside the blocks (FORMAT.md, "Lines"): one type per `"t"`, written from
//! borrowed values by the writer (`…Out`) and read into owned ones by the reader.

use std::collections::HashMap;

use base64::Engine as _;
use ctop_core::{Answer, CodeFrame};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use xxhash_rust::xxh64::xxh64;

use crate::json::{Ident, Num, join_array, split_array};
use crate::types::{
    CallRecord, CallResult, HandlerKind, Header, Redaction, RuntimeCall, ScriptInfo, TapeEntry,
};
use crate::types::{failure_kind, failure_name};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

// ───────────────────────── writing ─────────────────────────

#[derive(Serialize)]
#[serde(tag = "t", rename_all = "camelCase")]
enum Out<'a> {
    Header(HeaderLine),
    Script(ScriptOut<'a>),
    Context(ContextOut<'a>),
    Object(ObjectOut<'a>),
    Call(CallOut<'a>),
    Dropped { calls: u64 },
    End,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScriptOut<'a> {
    sha256: &'a str,
    entry: &'a str,
    bundle_gz: String,
}

#[derive(Serialize)]
struct ContextOut<'a> {
    env: &'a Value,
    values: &'a Value,
}

#[derive(Serialize)]
struct ObjectOut<'a> {
    id: u64,
    kind: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ns: Option<&'a str>,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rv: Option<&'a str>,
    json: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallOut<'a> {
    seq: u64,
    at: &'a str,
    at_ms: i64,
    handler: String,
    controller: ControllerRef,
    script: &'a str,
    object: Option<u64>,
    tape: Vec<TapeOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<FailureOut<'a>>,
    took_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<RuntimeCall>,
}

#[derive(Serialize, Deserialize)]
struct ControllerRef {
    index: u32,
    name: String,
}

#[derive(Serialize)]
struct FailureOut<'a> {
    kind: &'static str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    frame: Option<&'a CodeFrame>,
}

#[derive(Serialize)]
#[serde(tag = "op", rename_all = "camelCase")]
enum TapeOut<'a> {
    List {
        kind: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        items: Option<Vec<u64>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<&'a str>,
        #[serde(skip_serializing_if = "is_false")]
        unobserved: bool,
    },
    Get {
        kind: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        ns: Option<&'a str>,
        name: &'a str,
        #[serde(skip_serializing_if = "is_unobserved")]
        found: Option<Option<u64>>,
        #[serde(skip_serializing_if = "is_false")]
        unobserved: bool,
    },
    Supply {
        source: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        init: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        n: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        bits: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<&'a str>,
    },
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(b: &bool) -> bool {
    !b
}

#[allow(clippy::ref_option)] // serde's skip_serializing_if passes a reference
fn is_unobserved(found: &Option<Option<u64>>) -> bool {
    found.is_none()
}

/// Append `line` and a newline to `out`.
fn push(out: &mut Vec<u8>, line: &Out<'_>) {
    // Serializing these types cannot fail: every map key is a string.
    if serde_json::to_writer(&mut *out, line).is_ok() {
        out.push(b'\n');
    }
}

/// The header line of a part.
pub(crate) fn push_header(out: &mut Vec<u8>, header: &Header) {
    push(out, &Out::Header(HeaderLine::from(header)));
}

/// A script line.
pub(crate) fn push_script(out: &mut Vec<u8>, script: &ScriptInfo) {
    let line =
        ScriptOut { sha256: &script.sha256, entry: &script.entry, bundle_gz: B64.encode(&script.bundle_gz) };
    push(out, &Out::Script(line));
}

/// The context line.
pub(crate) fn push_context(out: &mut Vec<u8>, env: &Value, values: &Value) {
    push(out, &Out::Context(ContextOut { env, values }));
}

/// A `dropped` line.
pub(crate) fn push_dropped(out: &mut Vec<u8>, calls: u64) {
    push(out, &Out::Dropped { calls });
}

/// The `end` line.
pub(crate) fn push_end(out: &mut Vec<u8>) {
    push(out, &Out::End);
}

/// The objects written to the current file so far, each once: (identity, hash of the
/// text) → id. A file starts with none (every part is self-contained).
#[derive(Default)]
pub(crate) struct Objects {
    ids: HashMap<(Ident, u64), u64>,
    next: u64,
}

impl Objects {
    /// Forget every object (a new file).
    pub(crate) fn clear(&mut self) {
        self.ids.clear();
    }

    /// The id of the object `text`, writing its `object` line first when it is new.
    fn intern(&mut self, text: &str, out: &mut Vec<u8>) -> u64 {
        let ident = Ident::of(text);
        let key = (ident, xxh64(text.as_bytes(), 0));
        if let Some(id) = self.ids.get(&key) {
            return *id;
        }
        self.next += 1;
        let id = self.next;
        let (ident, _) = &key;
        let line = ObjectOut {
            id,
            kind: &ident.kind,
            ns: ident.namespace.as_deref(),
            name: &ident.name,
            rv: ident.rv.as_deref(),
            json: text,
        };
        push(out, &Out::Object(line));
        self.ids.insert(key, id);
        id
    }
}

/// Append the lines of `call` (its new objects, then the call) to `out`.
pub(crate) fn push_call(out: &mut Vec<u8>, call: &CallRecord, objects: &mut Objects) {
    let object = call.object.as_deref().map(|t| objects.intern(t, out));
    let tape = call.tape.iter().map(|e| tape_out(e, objects, out)).collect();
    let (outcome, failure) = match &call.result {
        CallResult::Outcome(v) => (Some(v), None),
        CallResult::Failure { kind, message, frame } => {
            (None, Some(FailureOut { kind: failure_name(*kind), message, frame: frame.as_ref() }))
        }
    };
    let line = CallOut {
        seq: call.seq,
        at: &call.at,
        at_ms: call.at_ms,
        handler: call.handler.to_string(),
        controller: ControllerRef { index: call.controller, name: call.controller_name.clone() },
        script: &call.script,
        object,
        tape,
        outcome,
        failure,
        took_ms: call.took_ms,
        runtime: call.runtime,
    };
    push(out, &Out::Call(line));
}

fn tape_out<'a>(entry: &'a TapeEntry, objects: &mut Objects, out: &mut Vec<u8>) -> TapeOut<'a> {
    match entry {
        TapeEntry::List { kind, answer: None } => {
            TapeOut::List { kind, items: None, text: None, unobserved: true }
        }
        TapeEntry::List { kind, answer: Some(text) } => match split_array(text) {
            Some(items) => TapeOut::List {
                kind,
                items: Some(items.into_iter().map(|t| objects.intern(t, out)).collect()),
                text: None,
                unobserved: false,
            },
            None => TapeOut::List { kind, items: None, text: Some(text), unobserved: false },
        },
        TapeEntry::Get { kind, namespace, name, answer } => TapeOut::Get {
            kind,
            ns: namespace.as_deref(),
            name,
            found: answer.as_ref().map(|a| a.as_deref().map(|t| objects.intern(t, out))),
            unobserved: answer.is_none(),
        },
        TapeEntry::Supply { source, detail, init, answer } => {
            let (n, bits, text) = match answer {
                Answer::Number(x) => match Num::of(*x) {
                    Num::Int(n) => (Some(n), None, None),
                    Num::Bits(b) => (None, Some(format!("{b:016x}")), None),
                },
                Answer::Text(t) => (None, None, Some(t.as_str())),
            };
            TapeOut::Supply { source, detail: detail.as_deref(), init: init.as_deref(), n, bits, text }
        }
    }
}

// ───────────────────────── reading ─────────────────────────

/// One line as read.
#[derive(Deserialize)]
#[serde(tag = "t", rename_all = "camelCase")]
pub(crate) enum Line {
    Header(HeaderLine),
    Script(ScriptLine),
    Context(ContextLine),
    Object(ObjectLine),
    Call(Box<CallLine>),
    Dropped {
        calls: u64,
    },
    End,
    /// A line type of a newer minor version: skipped.
    #[serde(other)]
    Unknown,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HeaderLine {
    format: [u16; 2],
    ctop: String,
    sdk_sha256: String,
    recording_id: String,
    part: u32,
    started: String,
    operator: String,
    redaction: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tz: Option<String>,
}

impl From<&Header> for HeaderLine {
    fn from(h: &Header) -> Self {
        Self {
            format: [h.format.0, h.format.1],
            ctop: h.ctop.clone(),
            sdk_sha256: h.sdk_sha256.clone(),
            recording_id: h.recording_id.clone(),
            part: h.part,
            started: h.started.clone(),
            operator: h.operator.clone(),
            redaction: h.redaction.name().to_owned(),
            tz: h.tz.clone(),
        }
    }
}

impl HeaderLine {
    /// The header; `None` when its redaction is neither `masked` nor `clear`.
    pub(crate) fn header(self) -> Option<Header> {
        let redaction = match self.redaction.as_str() {
            "masked" => Redaction::Masked,
            "clear" => Redaction::Clear,
            _ => return None,
        };
        Some(Header {
            format: (self.format[0], self.format[1]),
            ctop: self.ctop,
            sdk_sha256: self.sdk_sha256,
            recording_id: self.recording_id,
            part: self.part,
            started: self.started,
            operator: self.operator,
            redaction,
            tz: self.tz,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScriptLine {
    sha256: String,
    entry: String,
    bundle_gz: String,
}

impl ScriptLine {
    /// The script; `None` when its bundle is not base64.
    pub(crate) fn script(self) -> Option<ScriptInfo> {
        let bundle_gz = B64.decode(self.bundle_gz.as_bytes()).ok()?;
        Some(ScriptInfo { sha256: self.sha256, entry: self.entry, bundle_gz })
    }
}

#[derive(Deserialize)]
pub(crate) struct ContextLine {
    #[serde(default)]
    pub(crate) env: Value,
    #[serde(default)]
    pub(crate) values: Value,
}

#[derive(Deserialize)]
pub(crate) struct ObjectLine {
    pub(crate) id: u64,
    pub(crate) json: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallLine {
    seq: u64,
    at: String,
    at_ms: i64,
    handler: String,
    controller: ControllerRef,
    script: String,
    #[serde(default)]
    object: Option<u64>,
    #[serde(default)]
    tape: Vec<TapeLine>,
    #[serde(default)]
    outcome: Option<Value>,
    #[serde(default)]
    failure: Option<FailureLine>,
    #[serde(default)]
    took_ms: f64,
    #[serde(default)]
    runtime: Option<RuntimeCall>,
}

#[derive(Deserialize)]
struct FailureLine {
    kind: String,
    message: String,
    #[serde(default)]
    frame: Option<CodeFrame>,
}

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
enum TapeLine {
    List {
        kind: String,
        #[serde(default)]
        items: Option<Vec<u64>>,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        unobserved: bool,
    },
    Get {
        kind: String,
        #[serde(default)]
        ns: Option<String>,
        name: String,
        #[serde(default)]
        found: Option<u64>,
        #[serde(default)]
        unobserved: bool,
    },
    Supply {
        source: String,
        #[serde(default)]
        detail: Option<String>,
        #[serde(default)]
        init: Option<String>,
        #[serde(default)]
        n: Option<i64>,
        #[serde(default)]
        bits: Option<String>,
        #[serde(default)]
        text: Option<String>,
    },
    #[serde(other)]
    Unknown,
}

impl CallLine {
    /// The call, its objects looked up in `objects` (id → JSON text); the reason when it
    /// cannot be read back.
    pub(crate) fn call(self, objects: &HashMap<u64, String>) -> Result<CallRecord, String> {
        let seq = self.seq;
        let object_text = |id: u64| {
            objects
                .get(&id)
                .cloned()
                .ok_or_else(|| format!("call {seq} refers to object {id}, which is missing"))
        };
        let handler = HandlerKind::parse(&self.handler)
            .ok_or_else(|| format!("call {seq} names an unknown handler {:?}", self.handler))?;
        let object = self.object.map(object_text).transpose()?;
        let mut tape = Vec::with_capacity(self.tape.len());
        for entry in self.tape {
            tape.push(match entry {
                TapeLine::List { kind, items, text, unobserved } => {
                    let answer = match (unobserved, items, text) {
                        (true, _, _) => None,
                        (false, Some(ids), _) => Some(join_array(
                            &ids.into_iter().map(object_text).collect::<Result<Vec<_>, _>>()?,
                        )),
                        (false, None, Some(text)) => Some(text),
                        (false, None, None) => Some("[]".to_owned()),
                    };
                    TapeEntry::List { kind, answer }
                }
                TapeLine::Get { kind, ns, name, found, unobserved } => {
                    let answer = if unobserved { None } else { Some(found.map(object_text).transpose()?) };
                    TapeEntry::Get { kind, namespace: ns, name, answer }
                }
                TapeLine::Supply { source, detail, init, n, bits, text } => {
                    let answer = match (n, bits, text) {
                        (Some(n), _, _) => Answer::Number(Num::Int(n).value()),
                        (None, Some(bits), _) => {
                            let b = u64::from_str_radix(&bits, 16)
                                .map_err(|_| format!("call {seq}: {bits:?} is not the hex of a number"))?;
                            Answer::Number(Num::Bits(b).value())
                        }
                        (None, None, Some(t)) => Answer::Text(t),
                        (None, None, None) => return Err(format!("call {seq}: a {source} value is missing")),
                    };
                    TapeEntry::Supply { source, detail, init, answer }
                }
                TapeLine::Unknown => {
                    return Err(format!("call {seq} read something this ctop does not know"));
                }
            });
        }
        let result = match (self.outcome, self.failure) {
            (Some(v), _) => CallResult::Outcome(v),
            (None, Some(f)) => CallResult::Failure {
                kind: failure_kind(&f.kind)
                    .ok_or_else(|| format!("call {seq} failed in an unknown way {:?}", f.kind))?,
                message: f.message,
                frame: f.frame,
            },
            (None, None) => return Err(format!("call {seq} has neither an outcome nor a failure")),
        };
        Ok(CallRecord {
            seq,
            at: self.at,
            at_ms: self.at_ms,
            handler,
            controller: self.controller.index,
            controller_name: self.controller.name,
            script: self.script,
            object,
            tape,
            result,
            took_ms: self.took_ms,
            runtime: self.runtime,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_minor_versions_read() {
        let line = |s: &str| serde_json::from_str::<Line>(s).map_err(|e| e.to_string());
        assert!(matches!(line(r#"{"t":"end","calls":3}"#), Ok(Line::End)));
        assert!(matches!(line(r#"{"t":"someday","x":[1]}"#), Ok(Line::Unknown)));
        assert!(matches!(line(r#"{"t":"dropped","calls":2,"why":"full"}"#), Ok(Line::Dropped { calls: 2 })));
        let call = line(
            r#"{"t":"call","seq":4,"at":"x","atMs":1,"handler":"map:1","controller":{"index":0,"name":"c","new":1},
                "script":"s","object":null,"tape":[{"op":"supply","source":"now","n":5,"new":true}],
                "outcome":{"requests":[]},"tookMs":1.5,"runtime":{"serial":1,"call":2},"someday":{"x":1}}"#,
        );
        let Ok(Line::Call(call)) = call else { panic!("{call:?}", call = call.err()) };
        let call = call.call(&HashMap::new()).expect("readable");
        assert_eq!(call.handler, HandlerKind::Map(1));
        assert_eq!(call.runtime, Some(RuntimeCall { serial: 1, call: 2 }));
        assert_eq!(
            call.tape,
            [TapeEntry::Supply {
                source: "now".into(),
                detail: None,
                init: None,
                answer: Answer::Number(5.0)
            }]
        );
    }

    #[test]
    fn a_call_with_a_missing_object_is_unreadable() {
        let Ok(Line::Call(call)) = serde_json::from_str::<Line>(
            r#"{"t":"call","seq":4,"at":"x","atMs":1,"handler":"reconcile","controller":{"index":0,"name":"c"},
                "script":"s","object":7,"tape":[],"outcome":{}}"#,
        ) else {
            panic!("a call line")
        };
        assert_eq!(
            call.call(&HashMap::new()).err().as_deref(),
            Some("call 4 refers to object 7, which is missing")
        );
    }
}
