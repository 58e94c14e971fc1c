//! The crate end to end: a [`Recorder`] around a fake [`Handlers`], a file, [`read`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use base64::Engine as _;
use ctop_core::{
    Answer, ByteSize, ControllerSpec, FailureKind, FinalizeOutcome, HandlerCall, HandlerError, HandlerFuture,
    Handlers, MapOutcome, MapRequest, Observer, OperatorSpec, ReconcileOutcome, Source, StartOutcome,
};
use serde_json::{Value, json};

use crate::block::{Block, Blocks};
use crate::writer::Tuning;
use crate::*;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

type Body = dyn Fn(&dyn Observer) -> Result<ReconcileOutcome, HandlerError> + Send + Sync;

/// Handlers whose reconcile runs `body` against the call's observer; finalize fails.
struct Fake {
    spec: OperatorSpec,
    body: Box<Body>,
}

impl Fake {
    fn new(
        body: impl Fn(&dyn Observer) -> Result<ReconcileOutcome, HandlerError> + Send + Sync + 'static,
    ) -> Self {
        let spec = OperatorSpec {
            resources: Vec::new(),
            controllers: vec![ControllerSpec {
                index: 0,
                name: "webapp".into(),
                ..ControllerSpec::default()
            }],
        };
        Self { spec, body: Box::new(body) }
    }
}

impl Handlers for Fake {
    fn spec(&self) -> &OperatorSpec {
        &self.spec
    }
    fn reconcile(&self, call: HandlerCall) -> HandlerFuture<ReconcileOutcome> {
        let out = (self.body)(call.observer.as_ref());
        Box::pin(std::future::ready(out))
    }
    fn finalize(&self, _call: HandlerCall) -> HandlerFuture<FinalizeOutcome> {
        let mut e = HandlerError::new(FailureKind::Exception, "broken on purpose");
        e.frame = ctop_core::CodeFrame::new("operator.ct", "x\nthrow new Error()", 2, 1);
        Box::pin(std::future::ready(Err(e)))
    }
    fn on_start(&self, _call: HandlerCall) -> HandlerFuture<StartOutcome> {
        Box::pin(std::future::ready(Ok(StartOutcome::default())))
    }
    fn map(&self, _watch: usize, _call: HandlerCall) -> HandlerFuture<MapOutcome> {
        let requests = vec![MapRequest { name: "a".into(), namespace: Some("default".into()) }];
        Box::pin(std::future::ready(Ok(MapOutcome { requests })))
    }
}

/// The caches: a fixed answer per kind; supply answers live.
struct Cache;

const CM: &str = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","namespace":"default","resourceVersion":"4"},"data":{"a":"1"}}"#;
const APP: &str = r#"{"apiVersion":"demo/v1","kind":"WebApp","metadata":{"name":"a","namespace":"default","resourceVersion":"9"}}"#;

fn token_secret() -> String {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tok", "namespace": "default"},
           "data": {"token": B64.encode(TOKEN)}})
    .to_string()
}
const TOKEN: &str = "Zq8XtK2mPw4RvN7bLc9YhJ3sDf6GaE1u";

impl Observer for Cache {
    fn list(&self, kind: &str) -> Option<String> {
        (kind == "v1/ConfigMap").then(|| format!("[{CM}]"))
    }
    fn get(&self, kind: &str, _namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        match kind {
            "v1/ConfigMap" => Some((name == "cm").then(|| CM.to_owned())),
            "v1/Secret" => Some(Some(token_secret())),
            _ => None,
        }
    }
}

fn poll<T>(mut f: HandlerFuture<T>) -> Result<T, HandlerError> {
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(r) => r,
        Poll::Pending => panic!("the fake handlers are ready at once"),
    }
}

fn call(object: Option<&str>) -> HandlerCall {
    HandlerCall { controller: 0, object: object.map(str::to_owned), observer: Arc::new(Cache) }
}

fn options(path: &Path) -> RecordOptions {
    RecordOptions {
        path: path.to_path_buf(),
        operator: "webapp".into(),
        ctop_version: "0.1.0".into(),
        sdk_sha256: "sdk".into(),
        ..RecordOptions::default()
    }
}

fn script() -> ScriptInfo {
    ScriptInfo { sha256: "sha-1".into(), entry: "operator.ct".into(), bundle_gz: vec![0x1f, 0x8b, 0, 1, 2] }
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("r.ctrec");
    (dir, path)
}

/// Every Source once, the reads, and an outcome.
fn busy(o: &dyn Observer) -> Result<ReconcileOutcome, HandlerError> {
    o.nondeterministic("now");
    let _ = o.list("v1/ConfigMap");
    let _ = o.list("v1/Pod");
    let _ = o.get("v1/ConfigMap", Some("default"), "cm");
    let _ = o.get("v1/ConfigMap", Some("default"), "missing");
    let _ = o.get("v1/Service", Some("default"), "svc");
    for (source, answer) in [
        (Source::Now, Answer::Number(1_767_225_600_123.0)),
        (Source::RandomString { len: 5 }, Answer::Text("x7k2p".into())),
        (
            Source::Fetch { url: "https://x.example", init: r#"{"method":"GET"}"# },
            Answer::Text("{\"status\":200}".into()),
        ),
        (Source::MathRandom, Answer::Number(0.1 + 0.2)),
        (Source::Date, Answer::Number(1_767_225_600_124.0)),
        (Source::PerformanceNow, Answer::Number(12.345_678_901_234_567)),
        (Source::PerformanceTimeOrigin, Answer::Number(1_767_225_600_000.5)),
    ] {
        let got = o.supply(source, &mut || answer.clone());
        assert_eq!(got, answer);
    }
    let mut out = ReconcileOutcome::default();
    out.children
        .objects
        .push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x7k2p"}}));
    out.status = json!({"phase": "Ready"}).as_object().cloned();
    Ok(out)
}

#[test]
fn a_recorded_call_reads_back_equal() {
    let (_dir, path) = tmp();
    let env = json!({"A": "1"});
    let values = json!({"replicas": 2});
    let writer = RecordWriter::create(
        RecordOptions { redaction: Redaction::Clear, ..options(&path) },
        env.clone(),
        values.clone(),
    )
    .expect("create");
    let recorder = Recorder::new(Arc::new(Fake::new(busy)), script(), writer.clone());
    let outcome = poll(recorder.reconcile(call(Some(APP)))).expect("reconcile");
    let failure = poll(recorder.finalize(call(Some(APP)))).map(|_| ()).expect_err("finalize fails");
    let mapped = poll(recorder.map(2, call(Some(CM)))).expect("map");
    poll(recorder.on_start(call(None))).expect("onStart");
    let summary = writer.close().expect("close");
    assert_eq!((summary.calls, summary.dropped, summary.parts), (4, 0, 1));
    assert_eq!(writer.close().expect("close again"), summary, "idempotent");

    let r = read(&path).expect("read");
    assert!(r.complete, "{:?}", r.notes);
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!((r.env, r.values), (env, values));
    assert_eq!(r.scripts.get("sha-1"), Some(&script()));
    assert_eq!(r.header.operator, "webapp");
    assert_eq!(r.header.redaction, Redaction::Clear);
    assert_eq!(r.header.part, 1);
    assert_eq!(r.calls.iter().map(|c| c.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(
        r.calls.iter().map(|c| c.handler).collect::<Vec<_>>(),
        [HandlerKind::Reconcile, HandlerKind::Finalize, HandlerKind::Map(2), HandlerKind::OnStart]
    );

    // The tape, as a live call would replay it.
    let expected = TapeObserver::new(Arc::new(Cache));
    let again = busy(&expected).expect("the same calls");
    assert_eq!(again, outcome);
    let c = &r.calls[0];
    assert_eq!(c.tape, expected.take());
    assert_eq!(c.result, CallResult::Outcome(outcome.to_output()));
    assert_eq!((c.controller, c.controller_name.as_str(), c.script.as_str()), (0, "webapp", "sha-1"));
    assert_eq!(c.object.as_deref(), Some(APP));
    assert!(c.at.ends_with('Z') && c.at.len() == 24, "{}", c.at);
    assert_eq!(chrono::DateTime::parse_from_rfc3339(&c.at).map(|t| t.timestamp_millis()).ok(), Some(c.at_ms));
    let floats: Vec<u64> = c
        .tape
        .iter()
        .filter_map(|e| match e {
            TapeEntry::Supply { answer: Answer::Number(x), .. } => Some(x.to_bits()),
            _ => None,
        })
        .collect();
    let wanted =
        [1_767_225_600_123.0, 0.1 + 0.2, 1_767_225_600_124.0, 12.345_678_901_234_567, 1_767_225_600_000.5];
    assert_eq!(floats, wanted.map(f64::to_bits), "every number bit for bit");

    assert_eq!(
        r.calls[1].result,
        CallResult::Failure { kind: FailureKind::Exception, message: failure.message, frame: failure.frame }
    );
    assert_eq!(r.calls[2].result, CallResult::Outcome(mapped.to_output()));
    assert_eq!(r.calls[2].object.as_deref(), Some(CM));
    assert_eq!(r.calls[3].object, None);
}

/// The text of every block of `path`, decompressed.
fn text_of(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    let mut out = String::new();
    for b in Blocks::new(&bytes) {
        if let Block::Text(t) = b {
            out.push_str(&String::from_utf8(t).expect("UTF-8"));
        }
    }
    out
}

/// Webapp's token: drawn by randomString, written into a Secret's stringData and a
/// ConfigMap, read back as the Secret's data.
fn webapp(o: &dyn Observer) -> Result<ReconcileOutcome, HandlerError> {
    let Answer::Text(token) = o.supply(Source::RandomString { len: 32 }, &mut || Answer::Text(TOKEN.into()))
    else {
        panic!("text")
    };
    let _ = o.get("v1/Secret", Some("default"), "tok");
    let mut out = ReconcileOutcome::default();
    out.children.objects.push(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tok"},
                                     "stringData": {"token": token}}));
    out.children.objects.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                                     "data": {"copy": token}}));
    Ok(out)
}

fn record_webapp(path: &Path, redaction: Redaction) -> Recording {
    let writer = RecordWriter::create(RecordOptions { redaction, ..options(path) }, json!({}), json!({}))
        .expect("create");
    let recorder = Recorder::new(Arc::new(Fake::new(webapp)), script(), writer.clone());
    poll(recorder.reconcile(call(Some(APP)))).expect("reconcile");
    poll(recorder.reconcile(call(Some(APP)))).expect("reconcile");
    drop(recorder);
    drop(writer); // the last clone: finishes the file
    read(path).expect("read")
}

#[test]
fn secrets_are_masked_in_the_file() {
    let (_dir, path) = tmp();
    let r = record_webapp(&path, Redaction::Masked);
    assert!(r.complete, "{:?}", r.notes);
    assert_eq!(r.header.redaction, Redaction::Masked);
    let text = text_of(&path);
    for original in [TOKEN, &B64.encode(TOKEN)] {
        assert!(!text.contains(original), "{original} is in the file");
    }
    let mask = match &r.calls[0].tape[0] {
        TapeEntry::Supply { answer: Answer::Text(t), .. } => t.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(mask.len(), TOKEN.len());
    for c in &r.calls {
        assert!(matches!(&c.tape[0], TapeEntry::Supply { answer: Answer::Text(t), .. } if *t == mask));
        let TapeEntry::Get { answer: Some(Some(secret)), .. } = &c.tape[1] else { panic!("a get") };
        let secret: Value = serde_json::from_str(secret).expect("JSON");
        let data = secret["data"]["token"].as_str().unwrap_or_default();
        assert_eq!(B64.decode(data).ok(), Some(mask.clone().into_bytes()), "valid base64 of the same mask");
        let CallResult::Outcome(out) = &c.result else { panic!("an outcome") };
        assert_eq!(out["applies"][0]["stringData"]["token"], json!(mask));
        assert_eq!(out["applies"][1]["data"]["copy"], json!(mask));
    }
}

#[test]
fn clear_recordings_keep_secrets() {
    let (_dir, path) = tmp();
    let r = record_webapp(&path, Redaction::Clear);
    assert!(text_of(&path).contains(TOKEN));
    let CallResult::Outcome(out) = &r.calls[0].result else { panic!("an outcome") };
    assert_eq!(out["applies"][1]["data"]["copy"], json!(TOKEN));
}

#[test]
fn a_torn_tail_is_ignored() {
    let (_dir, path) = tmp();
    let whole = record_webapp(&path, Redaction::Clear);
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() - 3]).expect("write");
    let r = read(&path).expect("read");
    assert!(!r.complete);
    assert_eq!(r.calls, whole.calls, "only the end line was in the torn block");
    assert!(r.notes.iter().any(|n| n.contains("incomplete and was ignored")), "{:?}", r.notes);
}

#[test]
fn a_corrupt_block_is_reported() {
    let (_dir, path) = tmp();
    record_webapp(&path, Redaction::Clear);
    let mut bytes = std::fs::read(&path).expect("read");
    // The preamble block, then the calls' block: damage the latter.
    let n = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
    let second = 12 + 4 + n(12) + 8;
    bytes[second + 10] ^= 0x55;
    std::fs::write(&path, &bytes).expect("write");
    let r = read(&path).expect("read");
    assert!(!r.complete);
    assert!(r.calls.is_empty());
    assert!(r.notes.iter().any(|x| x.contains("checksum does not match")), "{:?}", r.notes);
    std::fs::write(&path, b"CTOPREC\0\x02\0\0\0").expect("write");
    assert!(matches!(read(&path), Err(ReadError::Format { major: 2, .. })));
    std::fs::write(&path, b"hello").expect("write");
    assert!(matches!(read(&path), Err(ReadError::NotARecording { .. })));
}

#[test]
fn rotation_keeps_parts_under_the_cap_and_read_joins_them() {
    let (_dir, path) = tmp();
    let cap = 4096;
    let tuning = Tuning { block_text: 512, ..Tuning::default() };
    let opts = RecordOptions {
        max_size: ByteSize::bytes(cap),
        keep: 2,
        redaction: Redaction::Clear,
        ..options(&path)
    };
    let writer = RecordWriter::create_tuned(opts, json!({}), json!({}), tuning).expect("create");
    // Objects that do not compress away: a different rv and payload per call.
    let recorder = Recorder::new(
        Arc::new(Fake::new(|o| {
            let _ = o.supply(Source::MathRandom, &mut || Answer::Number(rand::random()));
            Ok(ReconcileOutcome::default())
        })),
        script(),
        writer.clone(),
    );
    for i in 0..300 {
        let noise: String = (0..40).map(|_| char::from(b'a' + rand::random::<u8>() % 26)).collect();
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": i.to_string()}, "data": {"n": noise}});
        poll(recorder.reconcile(call(Some(&object.to_string())))).expect("reconcile");
    }
    let summary = writer.close().expect("close");
    assert_eq!(summary.calls + summary.dropped, 300);
    assert_eq!(summary.dropped, 0);
    assert!(summary.parts > 3, "{summary:?}");
    let files: Vec<PathBuf> =
        (0..5).map(|k| crate::files::part_path(&path, k)).filter(|p| p.exists()).collect();
    assert_eq!(files.len(), 3, "FILE and keep = 2 older parts: {files:?}");
    for f in &files {
        let len = std::fs::metadata(f).map(|m| m.len()).unwrap_or(u64::MAX);
        assert!(len <= cap, "{} is {len} bytes", f.display());
        assert!(read_part(f).expect("a part reads alone").complete);
    }
    let r = read(&path).expect("read");
    assert!(r.complete, "{:?}", r.notes);
    assert_eq!(r.header.part, summary.parts - 2, "the oldest part kept");
    assert!(r.notes.iter().any(|n| n.contains("removed by rotation")), "{:?}", r.notes);
    let seqs: Vec<u64> = r.calls.iter().map(|c| c.seq).collect();
    assert!(!seqs.is_empty());
    assert_eq!(seqs.last(), Some(&300));
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "contiguous: {seqs:?}");
    assert_eq!(r.scripts.len(), 1, "every part repeats the script");
}

#[test]
fn calls_are_dropped_when_the_writer_is_behind() {
    let (_dir, path) = tmp();
    let (go, hold) = std::sync::mpsc::channel();
    let tuning = Tuning { capacity: 2, hold: Some(hold), ..Tuning::default() };
    let opts = RecordOptions { redaction: Redaction::Clear, ..options(&path) };
    let writer = RecordWriter::create_tuned(opts, json!({}), json!({}), tuning).expect("create");
    // The script takes one place in the channel, the first call the other.
    let recorder =
        Recorder::new(Arc::new(Fake::new(|_| Ok(ReconcileOutcome::default()))), script(), writer.clone());
    for _ in 0..5 {
        poll(recorder.reconcile(call(Some(APP)))).expect("reconcile");
    }
    go.send(()).expect("release the writer");
    let summary = writer.close().expect("close");
    assert_eq!((summary.calls, summary.dropped), (1, 4));
    let r = read(&path).expect("read");
    assert_eq!((r.calls.len(), r.dropped, r.complete), (1, 4, false));
    assert_eq!(r.calls[0].seq, 1);
    assert!(r.notes.iter().any(|n| n.contains("4 call(s) were not recorded")), "{:?}", r.notes);
}

#[test]
fn blocks_are_flushed_after_a_while() {
    let (_dir, path) = tmp();
    let tuning = Tuning { flush_after: Duration::from_millis(20), ..Tuning::default() };
    let writer = RecordWriter::create_tuned(options(&path), json!({}), json!({}), tuning).expect("create");
    let recorder =
        Recorder::new(Arc::new(Fake::new(|_| Ok(ReconcileOutcome::default()))), script(), writer.clone());
    poll(recorder.reconcile(call(Some(APP)))).expect("reconcile");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let r = loop {
        let r = read(&path).expect("read while writing");
        if !r.calls.is_empty() || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(r.calls.len(), 1);
    assert!(!r.complete, "no end line yet");
    writer.close().expect("close");
    assert!(read(&path).expect("read").complete);
}

#[test]
fn a_new_recording_moves_the_old_one_aside() {
    let (_dir, path) = tmp();
    record_webapp(&path, Redaction::Clear);
    let r = record_webapp(&path, Redaction::Clear);
    assert!(crate::files::part_path(&path, 1).exists());
    assert!(r.complete, "{:?}", r.notes);
    assert_eq!(r.calls.len(), 2, "only the new recording");
    assert_eq!(r.calls[0].seq, 1);
}
