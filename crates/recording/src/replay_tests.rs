use ctop_core::{Answer, Observer, Source};

use super::*;
use crate::types::{CallResult, HandlerKind};

const CM_A: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}"#;
const CM_B: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}"#;
const SECRET: &str = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns"}}"#;

fn record(tape: Vec<TapeEntry>) -> CallRecord {
    CallRecord {
        seq: 1,
        at: "2026-01-01T00:00:00.000Z".into(),
        at_ms: 1_767_225_600_000,
        handler: HandlerKind::Reconcile,
        controller: 0,
        controller_name: "c".into(),
        script: "sha".into(),
        object: None,
        tape,
        result: CallResult::Outcome(serde_json::Value::Null),
        took_ms: 0.0,
        runtime: None,
    }
}

fn get(kind: &str, name: &str, answer: Option<Option<&str>>) -> TapeEntry {
    TapeEntry::Get {
        kind: kind.into(),
        namespace: Some("ns".into()),
        name: name.into(),
        answer: answer.map(|a| a.map(str::to_owned)),
    }
}

fn supply(source: &str, detail: Option<&str>, answer: Answer) -> TapeEntry {
    TapeEntry::Supply { source: source.into(), detail: detail.map(str::to_owned), init: None, answer }
}

fn tape() -> Vec<TapeEntry> {
    vec![
        TapeEntry::List { kind: "v1/ConfigMap".into(), answer: Some(format!("[{CM_A},{CM_B}]")) },
        get("v1/Secret", "s", Some(Some(SECRET))),
        get("v1/Secret", "gone", Some(None)),
        supply("date", None, Answer::Number(1.5)),
        supply("randomString", Some("8"), Answer::Text("abcdefgh".into())),
        supply("mathRandom", None, Answer::Number(0.1 + 0.2)),
    ]
}

fn never() -> Answer {
    panic!("asked live")
}

#[test]
fn strict_serves_the_tape_in_order() {
    let r = ReplayObserver::new(&record(tape()), ReplayMode::Strict);
    assert_eq!(r.list("v1/ConfigMap"), Some(format!("[{CM_A},{CM_B}]")));
    assert_eq!(r.get("v1/Secret", Some("ns"), "s"), Some(Some(SECRET.into())));
    assert_eq!(r.get("v1/Secret", Some("ns"), "gone"), Some(None));
    assert_eq!(r.supply(Source::Date, &mut never), Answer::Number(1.5));
    assert_eq!(r.supply(Source::RandomString { len: 8 }, &mut never), Answer::Text("abcdefgh".into()));
    assert_eq!(r.supply(Source::MathRandom, &mut never), Answer::Number(0.1 + 0.2));
    r.finish();
    assert_eq!(r.divergence(), None);
    assert!(r.blind_reads().is_empty());
}

#[test]
fn strict_reports_another_read_and_still_answers_it() {
    let r = ReplayObserver::new(&record(tape()), ReplayMode::Strict);
    assert_eq!(r.list("v1/ConfigMap"), Some(format!("[{CM_A},{CM_B}]")));
    // The recording read the Secret next: answered from the list instead.
    assert_eq!(r.get("v1/ConfigMap", Some("ns"), "b"), Some(Some(CM_B.into())));
    assert_eq!(
        r.divergence().as_deref(),
        Some("get v1/ConfigMap ns/b, where the recording has get v1/Secret ns/s next (read 2 of 6)")
    );
    // Later requests are answered by key; the first divergence stays.
    assert_eq!(r.get("v1/Secret", Some("ns"), "s"), Some(Some(SECRET.into())));
    r.finish();
    assert!(r.divergence().is_some_and(|d| d.starts_with("get v1/ConfigMap ns/b")));
}

#[test]
fn strict_reports_unread_entries() {
    let r = ReplayObserver::new(&record(tape()), ReplayMode::Strict);
    assert_eq!(r.list("v1/ConfigMap"), Some(format!("[{CM_A},{CM_B}]")));
    assert_eq!(r.divergence(), None);
    r.finish();
    assert_eq!(
        r.divergence().as_deref(),
        Some("the call ended after 1 of 6 recorded reads; the next was get v1/Secret ns/s")
    );
}

#[test]
fn strict_reports_a_read_past_the_end() {
    let r = ReplayObserver::new(&record(vec![]), ReplayMode::Strict);
    assert_eq!(r.supply(Source::Now, &mut never), Answer::Number(1_767_225_600_000.0));
    assert_eq!(r.divergence().as_deref(), Some("now, where the recording has no more reads (it has 0)"));
}

#[test]
fn keyed_answers_a_get_from_a_list() {
    let r = ReplayObserver::new(&record(tape()), ReplayMode::Keyed);
    assert_eq!(r.get("v1/ConfigMap", Some("ns"), "b"), Some(Some(CM_B.into())));
    assert_eq!(r.get("v1/ConfigMap", Some("ns"), "zzz"), Some(None), "not in the list: missing");
    assert_eq!(r.get("v1/ConfigMap", Some("other"), "a"), Some(None), "the namespace counts");
    assert_eq!(r.get("v1/Secret", Some("ns"), "gone"), Some(None));
    assert!(r.blind_reads().is_empty());
    // The Secret kind was observed but this one was never read: missing, and blind.
    assert_eq!(r.get("v1/Secret", Some("ns"), "other"), Some(None));
    // A kind never read: not observed, and blind.
    assert_eq!(r.get("v1/Service", Some("ns"), "x"), None);
    assert_eq!(r.list("v1/Secret"), Some(format!("[{SECRET}]")), "what was read by name");
    assert_eq!(
        r.blind_reads(),
        [
            "get v1/Secret ns/other: not in the recording",
            "get v1/Service ns/x: not in the recording",
            "list v1/Secret: the recording holds only the objects read by name",
        ]
    );
    r.finish();
    assert_eq!(r.divergence(), None, "keyed mode never diverges");
}

#[test]
fn keyed_supplies_values_of_the_same_source_in_order() {
    let r = ReplayObserver::new(
        &record(vec![
            supply("date", None, Answer::Number(1.0)),
            supply("now", None, Answer::Number(5.0)),
            supply("date", None, Answer::Number(2.0)),
            supply("fetch", Some("https://a"), Answer::Text("A".into())),
        ]),
        ReplayMode::Keyed,
    );
    assert_eq!(r.supply(Source::Date, &mut never), Answer::Number(1.0));
    assert_eq!(r.supply(Source::Date, &mut never), Answer::Number(2.0));
    assert_eq!(r.supply(Source::Date, &mut never), Answer::Number(2.0), "the last again");
    assert_eq!(r.supply(Source::Now, &mut never), Answer::Number(5.0));
    assert_eq!(r.supply(Source::PerformanceTimeOrigin, &mut never), Answer::Number(1_767_225_600_000.0));
    assert_eq!(
        r.supply(Source::Fetch { url: "https://a", init: "{}" }, &mut never),
        Answer::Text("A".into())
    );
    assert!(r.blind_reads().is_empty());
    let mut live = || Answer::Text("live".into());
    assert_eq!(
        r.supply(Source::Fetch { url: "https://b", init: "{}" }, &mut live),
        Answer::Text("live".into())
    );
    assert_eq!(r.blind_reads(), ["fetch https://b: not in the recording, asked live"]);
}
