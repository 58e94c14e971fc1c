//! Every call whose outcome its inputs do not determine is reported to the call's
//! `Observer::nondeterministic`, in real QuickJS with the embedded SDK: the host functions
//! (`now`, `randomString`, `fetch`), the built-ins that read the clock or randomness
//! (`Math.random`, `Date`, `performance`), once per kind per call; a handler built from its
//! inputs reports nothing; the hooked built-ins behave as in a bare QuickJS context, and a
//! script cannot reach the originals past the hooks. Each value they give comes from
//! `Observer::supply`: a recorder sees the live values, a replayer's values are what the
//! script gets, and a replayer's answer of the wrong kind is a `TypeError`.

use std::sync::{Arc, Mutex};

use ctop_runtime::{Answer, Limits, Observer, Script, Source};
use serde_json::{Value, json};

/// What a replaying [`Recorder`] supplies for a source.
type Replay = Box<dyn Fn(Source<'_>) -> Answer + Send + Sync>;

/// An observer over fixed objects that records what the call reported and each value
/// supplied (with its source, as `{:?}`): the live one, or `replay`'s when set.
#[derive(Default)]
struct Recorder {
    objects: Vec<Value>,
    reported: Mutex<Vec<&'static str>>,
    replay: Option<Replay>,
    supplied: Mutex<Vec<(String, Answer)>>,
}

impl Recorder {
    /// A recorder that supplies `replay`'s values instead of the live ones.
    fn replaying(replay: impl Fn(Source<'_>) -> Answer + Send + Sync + 'static) -> Self {
        Recorder { replay: Some(Box::new(replay)), ..Recorder::default() }
    }

    fn supplied(&self) -> Vec<(String, Answer)> {
        self.supplied.lock().expect("lock").clone()
    }

    fn reported(&self) -> Vec<&'static str> {
        self.reported.lock().expect("lock").clone()
    }
}

impl Observer for Recorder {
    fn list(&self, kind: &str) -> Option<String> {
        let of_kind: Vec<&Value> = self
            .objects
            .iter()
            .filter(|o| {
                format!("{}/{}", o["apiVersion"].as_str().unwrap_or(""), o["kind"].as_str().unwrap_or(""))
                    == kind
            })
            .collect();
        Some(json!(of_kind).to_string())
    }

    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        let list: Vec<Value> = serde_json::from_str(&self.list(kind)?).ok()?;
        Some(
            list.iter()
                .find(|o| o["metadata"]["name"] == name && o["metadata"]["namespace"].as_str() == namespace)
                .map(Value::to_string),
        )
    }

    fn nondeterministic(&self, what: &'static str) {
        self.reported.lock().expect("lock").push(what);
    }

    fn supply(&self, source: Source<'_>, live: &mut dyn FnMut() -> Answer) -> Answer {
        let answer = match &self.replay {
            Some(replay) => replay(source),
            None => live(),
        };
        self.supplied.lock().expect("lock").push((format!("{source:?}"), answer.clone()));
        answer
    }
}

/// An operator whose reconcile runs `body` (with `cr` in scope) and puts what it returns in
/// the status as `out`; `prelude` is module-level code.
fn operator(prelude: &str, body: &str) -> Script {
    let source = format!(
        r#"import {{ resource, operator, setStatus, cron, stringData, getObserved, listObserved, apply, now,
  randomString, fetch, Result, Secret, ConfigMap }} from "ctop";
const app = resource("apps.example.com/v1", "App", {{}});
{prelude}
operator(app).manages(ConfigMap).reads(Secret).reconcile((cr) => {{
  const out = (() => {{ {body} }})();
  setStatus(cr, {{ out }});
  return Result.ok();
}});
"#
    );
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("operator.ct"), source).expect("write");
    Script::from_dir(dir.path(), "operator.ct", 1, Limits::default()).expect("the script loads")
}

fn input(spec: Value) -> String {
    json!({"object": {"apiVersion": "apps.example.com/v1", "kind": "App",
        "metadata": {"name": "a", "namespace": "prod", "uid": "u-1", "generation": 1}, "spec": spec},
        "env": {}, "values": {}})
    .to_string()
}

/// Runs a reconcile with a fresh [`Recorder`] over `objects`: the status' `out` and what was
/// reported.
fn reconcile(script: &Script, spec: Value, objects: Vec<Value>) -> (Value, Vec<&'static str>) {
    let recorder = Arc::new(Recorder { objects, ..Recorder::default() });
    let out = observed(script, spec, &recorder);
    (out, recorder.reported())
}

/// Runs a reconcile observed by `recorder`: the status' `out`.
fn observed(script: &Script, spec: Value, recorder: &Arc<Recorder>) -> Value {
    let out = script.dispatch_observed("reconcile", 0, &input(spec), recorder.clone()).expect("reconcile");
    out["status"]["out"].clone()
}

/// The [`Source`] (its `name()`) a reported `what` supplies its values as.
fn source_of(what: &str) -> &'static str {
    match what {
        "now()" => "now",
        "randomString()" => "randomString",
        "fetch()" => "fetch",
        "Math.random()" => "mathRandom",
        "Date" => "date",
        "performance.now()" => "performanceNow",
        "performance.timeOrigin" => "performanceTimeOrigin",
        other => panic!("unknown kind {other}"),
    }
}

/// Each snippet and the one name it must report.
const CASES: &[(&str, &str)] = &[
    ("return now() > 0;", "now()"),
    ("return randomString(8).length;", "randomString()"),
    // No egress is declared: the request fails, and is reported all the same.
    (r#"try { fetch("http://127.0.0.1:9/"); return "fetched"; } catch (e) { return e.name; }"#, "fetch()"),
    (r#"return cron("*/5 * * * *").next() instanceof Date;"#, "now()"),
    ("return Math.random() < 1;", "Math.random()"),
    ("return Date.now() > 0;", "Date"),
    ("return new Date().getTime() > 0;", "Date"),
    ("return typeof Date();", "Date"),
    ("return typeof Date(0);", "Date"),
    ("return Reflect.construct(Date, []).getTime() > 0;", "Date"),
    ("return new (class Later extends Date {})().getTime() > 0;", "Date"),
    ("return Date.now.call(null) > 0;", "Date"),
    ("return performance.now() >= 0;", "performance.now()"),
    ("return performance.timeOrigin > 0;", "performance.timeOrigin"),
    // Promise jobs are part of the call.
    ("Promise.resolve().then(() => Math.random()); return true;", "Math.random()"),
];

#[test]
fn each_nondeterministic_call_reports_its_name() {
    let switch: String =
        CASES.iter().enumerate().map(|(i, (snippet, _))| format!("  case {i}: {{ {snippet} }}\n")).collect();
    // The top level reads the clock too: at load there is no observer, and nothing fails.
    let script = operator("const loadedAt = Date.now();", &format!("switch (cr.spec.case) {{\n{switch}}}"));
    for (i, (snippet, what)) in CASES.iter().enumerate() {
        let recorder = Arc::new(Recorder::default());
        let out = observed(&script, json!({"case": i}), &recorder);
        assert_eq!(recorder.reported(), [*what], "{snippet}");
        assert_ne!(out, json!(false), "{snippet} ran: {out}");
        // Each value came through `supply`, as the source of the kind reported.
        let supplied = recorder.supplied();
        let name = source_of(what);
        assert_eq!(supplied.len(), 1, "{snippet}: {supplied:?}");
        assert!(supplied[0].0.to_lowercase().starts_with(&name.to_lowercase()), "{snippet}: {supplied:?}");
    }
}

#[test]
fn a_kind_is_reported_once_per_call_and_again_in_the_next() {
    let script = operator(
        "",
        "let sum = 0; for (let i = 0; i < 100000; i++) sum += Date.now() + Math.random() + performance.now(); \
         return randomString(4).length + now() * 0 + (new Date() > 0);",
    );
    for _ in 0..2 {
        let (out, reported) = reconcile(&script, json!({}), Vec::new());
        assert_eq!(out, json!(5));
        assert_eq!(reported, ["Date", "Math.random()", "performance.now()", "randomString()", "now()"]);
    }
    // A call without an observer (Script::dispatch) has nobody to tell, and works.
    let out = script.dispatch("reconcile", 0, &input(json!({}))).expect("reconcile");
    assert_eq!(out["status"]["out"], json!(5));
}

#[test]
fn a_handler_built_from_its_inputs_reports_nothing() {
    let script = operator(
        "class Stamp extends Date { day() { return this.toISOString().slice(0, 10); } }",
        r#"const secret = getObserved(Secret, "creds", "prod");
           const at = new Date("2020-01-01T00:00:00Z");
           const schedule = cron("0 * * * *");
           apply(ConfigMap({ metadata: { name: cr.metadata.name },
             data: { user: stringData(secret).user, at: at.toISOString(), n: String(listObserved(Secret).length) } }));
           return {
             at: at.getTime(),
             epoch: new Date(0).toISOString(),
             copy: new Date(at).getTime(),
             local: new Date(2020, 0, 1) instanceof Date,
             utc: Date.UTC(2020, 0, 2),
             parsed: Date.parse("2020-01-03T00:00:00Z"),
             invalid: String(new Date(undefined)),
             stamp: new Stamp(86400000).day(),
             next: schedule.next("2020-01-01T00:30:00Z").toISOString(),
             between: schedule.between("2020-01-01T00:00:00Z", "2020-01-01T03:00:00Z").length,
             json: JSON.parse(JSON.stringify({ a: [1, 2] })),
             base64: atob(btoa("ctop")),
             sorted: [3, 1, 2].sort(),
           };"#,
    );
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "prod"},
                        "data": {"user": "YWxpY2U="}});
    let recorder = Arc::new(Recorder { objects: vec![secret], ..Recorder::default() });
    let out = observed(&script, json!({}), &recorder);
    assert_eq!(recorder.reported(), Vec::<&str>::new(), "{out}");
    // `new Date(x)` with an argument reads no clock: nothing is supplied.
    assert_eq!(recorder.supplied(), Vec::new(), "{out}");
    assert_eq!(
        out,
        json!({"at": 1577836800000_u64, "epoch": "1970-01-01T00:00:00.000Z", "copy": 1577836800000_u64,
               "local": true, "utc": 1577923200000_u64, "parsed": 1578009600000_u64, "invalid": "Invalid Date",
               "stamp": "1970-01-02", "next": "2020-01-01T01:00:00.000Z", "between": 3,
               "json": {"a": [1, 2]}, "base64": "ctop", "sorted": [1, 2, 3]})
    );
}

/// Everything a script can observe of the hooked built-ins, as JSON.
const PROBE: &str = r#"(() => {
  const desc = (o, k) => {
    const d = Object.getOwnPropertyDescriptor(o, k);
    return d && { writable: d.writable, enumerable: d.enumerable, configurable: d.configurable,
                  value: "value" in d ? typeof d.value : "accessor" };
  };
  const fn = (f) => ({ name: f.name, length: f.length, text: Function.prototype.toString.call(f),
                       type: typeof f, proto: Object.getPrototypeOf(f) === Function.prototype,
                       own: Object.getOwnPropertyNames(f).sort() });
  const error = (f) => { try { f(); return "no error"; } catch (e) { return `${e.name}: ${e.message}`; } };
  class Later extends Date { year() { return this.getUTCFullYear(); } }
  const later = new Later(0);
  return {
    Date: fn(Date), now: fn(Date.now), UTC: fn(Date.UTC), parse: fn(Date.parse),
    random: fn(Math.random), performanceNow: fn(performance.now),
    descriptors: {
      Date: desc(globalThis, "Date"), now: desc(Date, "now"), prototype: desc(Date, "prototype"),
      constructor: desc(Date.prototype, "constructor"), random: desc(Math, "random"),
      performance: desc(globalThis, "performance"), performanceNow: desc(performance, "now"),
    },
    timeOrigin: desc(performance, "timeOrigin"),
    performanceKeys: Object.keys(performance),
    performanceProto: Object.getPrototypeOf(performance) === Object.prototype,
    constructorIsDate: Date.prototype.constructor === Date && new Date(0).constructor === Date,
    prototypeOfDates: Object.getPrototypeOf(new Date(0)) === Date.prototype,
    instance: [new Date(0) instanceof Date, {} instanceof Date, Object.prototype.toString.call(new Date(0))],
    subclass: [later instanceof Later, later instanceof Date, later.year(), Object.getPrototypeOf(Later) === Date,
               later.constructor === Later, Later.UTC(1970, 0, 2)],
    values: [Date.UTC(2020, 0, 1), Date.parse("2020-01-01T00:00:00Z"), new Date(86400000).toISOString(),
             new Date(2020, 1, 3, 4, 5, 6, 7).getTime(), new Date("2020-01-01").getTime(), typeof Date(),
             typeof new Date(), typeof Math.random(), typeof performance.now(), typeof performance.timeOrigin],
    errors: [error(() => new Date(Symbol())), error(() => Date.prototype.getTime.call({})),
             error(() => new Date.now()), error(() => new Math.random())],
    globals: Object.getOwnPropertyNames(globalThis).filter((k) => !k.startsWith("__ct_")).sort(),
    absent: [typeof globalThis.crypto, typeof globalThis.setTimeout, typeof globalThis.process],
  };
})()"#;

#[test]
fn hooked_builtins_look_like_the_originals() {
    let runtime = rquickjs::Runtime::new().expect("runtime");
    let context = rquickjs::Context::full(&runtime).expect("context");
    let bare: Value = context.with(|ctx| {
        let json: String =
            ctx.eval(format!("JSON.stringify({PROBE})")).expect("the probe runs in bare QuickJS");
        serde_json::from_str(&json).expect("json")
    });
    let script = operator("", &format!("return {PROBE};"));
    let (mut hooked, reported) = reconcile(&script, json!({}), Vec::new());
    // What the probe calls on purpose.
    assert_eq!(reported, ["Date", "Math.random()", "performance.now()", "performance.timeOrigin"]);
    let mut expected = bare;
    // The one difference: QuickJS's read-only `timeOrigin` is a getter now.
    let take = |probe: &mut Value, key: &str| probe.as_object_mut().and_then(|p| p.remove(key));
    assert_eq!(
        take(&mut expected, "timeOrigin"),
        Some(json!({"writable": false, "enumerable": true, "configurable": false, "value": "number"}))
    );
    assert_eq!(
        take(&mut hooked, "timeOrigin"),
        Some(json!({"enumerable": true, "configurable": false, "value": "accessor"}))
    );
    // No standard global is lost (the SDK adds its kind handles and `console`).
    let (ours, bare) = (take(&mut hooked, "globals"), take(&mut expected, "globals"));
    let ours: Vec<&Value> = ours.iter().flat_map(|g| g.as_array()).flatten().collect();
    let bare: Vec<&Value> = bare.iter().flat_map(|g| g.as_array()).flatten().collect();
    assert!(bare.len() > 50 && bare.iter().all(|g| ours.contains(g)), "{ours:?} holds {bare:?}");
    assert_eq!(hooked, expected);
}

#[test]
fn a_script_cannot_get_past_the_hooks() {
    // The top level keeps the hooked functions; then calls replace and delete them.
    let script = operator(
        "const random = Math.random; const OldDate = Date;",
        r#"switch (cr.spec.step) {
             case "assign": Math.random = () => 4; return Math.random();
             case "saved": return random() < 1;
             case "delete": delete Date.now; return typeof Date.now;
             case "newDate": return new Date().getTime() > 0;
             case "replace": globalThis.Date = function Date() { return "mine"; }; return Date();
             case "old": return [new OldDate(0).constructor === OldDate, typeof OldDate()];
           }"#,
    );
    let steps = [
        // Assigning is allowed (as in any engine) and reports nothing: the script's own
        // function is deterministic.
        ("assign", json!(4), vec![]),
        // The hooked original still reports.
        ("saved", json!(true), vec!["Math.random()"]),
        ("delete", json!("undefined"), vec![]),
        ("newDate", json!(true), vec!["Date"]),
        ("replace", json!("mine"), vec![]),
        ("old", json!([true, "string"]), vec!["Date"]),
    ];
    for (step, out, what) in steps {
        assert_eq!(reconcile(&script, json!({"step": step}), Vec::new()), (out, what), "{step}");
    }
}

#[test]
fn an_error_thrown_through_a_hook_names_the_scripts_line() {
    let script = operator("", "return new Date(Symbol());");
    let recorder: Arc<dyn Observer> = Arc::new(Recorder::default());
    let error = script.dispatch_observed("reconcile", 0, &input(json!({})), recorder).expect_err("throws");
    match error {
        ctop_runtime::VmError::Exception { name, message, file, line, stack, .. } => {
            assert_eq!((name.as_str(), message.as_str()), ("TypeError", "cannot convert symbol to number"));
            assert_eq!((file.as_deref(), line), (Some("operator.ct"), Some(6)));
            // The trap leaves no frame of its own.
            assert!(stack.starts_with("    at Date (native)\n    at <anonymous> (operator.ct:6:"), "{stack}");
        }
        other => panic!("{other:?}"),
    }
}

/// The time a replaying [`Recorder`] supplies for `now()`.
const NOW: u64 = 1_600_000_000_000;
/// The time it supplies for `Date` (with milliseconds, which `Date()`'s text drops).
const DATE: u64 = 1_500_000_000_123;

/// Fixed values for every source: `fetch` answers 200 with a body naming the request.
fn fixed(source: Source<'_>) -> Answer {
    match source {
        Source::Now => Answer::Number(NOW as f64),
        Source::Date => Answer::Number(DATE as f64),
        Source::MathRandom => Answer::Number(0.25),
        Source::PerformanceNow => Answer::Number(42.5),
        Source::PerformanceTimeOrigin => Answer::Number(1234.5),
        Source::RandomString { len } => Answer::Text("r".repeat(len)),
        Source::Fetch { url, init } => Answer::Text(
            json!({"status": 200, "statusText": "OK", "headers": {"x-replayed": "yes"},
                   "body": json!({"url": url, "init": init}).to_string(), "url": url})
            .to_string(),
        ),
    }
}

/// `new Date(ms).toString()` in a bare QuickJS context (in the host's time zone).
fn date_text(ms: f64) -> String {
    let runtime = rquickjs::Runtime::new().expect("runtime");
    let context = rquickjs::Context::full(&runtime).expect("context");
    context.with(|ctx| ctx.eval(format!("new Date({ms}).toString()")).expect("a date's text"))
}

/// A reconcile reading every source once (and `Date` four ways), returning what it got.
const EVERY_SOURCE: &str = r#"
  const res = fetch("http://127.0.0.1:9/refused", { method: "post", body: "hi" });
  class Later extends Date { year() { return this.getUTCFullYear(); } }
  const later = new Later();
  return {
    now: now(), dateNow: Date.now(), newDate: new Date().getTime(), dateString: Date(),
    random: Math.random(), perfNow: performance.now(), origin: performance.timeOrigin,
    token: randomString(8),
    fetched: { status: res.status, ok: res.ok, header: res.headers.get("X-Replayed"), body: res.json() },
    later: [later instanceof Later, later instanceof Date, later.getTime(), later.year()],
    epoch: new Date(0).getTime(),
  };"#;

#[test]
fn supplied_values_are_what_the_script_gets() {
    let script = operator("", EVERY_SOURCE);
    let recorder = Arc::new(Recorder::replaying(fixed));
    let out = observed(&script, json!({}), &recorder);
    // The string `Date()` returns is a date's at the supplied time.
    let date_string = date_text(DATE as f64);
    // Nothing listens on port 9 and no egress is declared: the reply is the replayer's, no
    // request was sent.
    let init = r#"{"method":"POST","headers":{},"body":"hi"}"#;
    assert_eq!(
        out,
        json!({
            "now": NOW, "dateNow": DATE, "newDate": DATE, "dateString": date_string,
            "random": 0.25, "perfNow": 42.5, "origin": 1234.5, "token": "rrrrrrrr",
            "fetched": {"status": 200, "ok": true, "header": "yes",
                        "body": {"url": "http://127.0.0.1:9/refused", "init": init}},
            "later": [true, true, DATE, 2017], "epoch": 0,
        })
    );
    // `report` is told once per kind, before each kind's first value.
    assert_eq!(
        recorder.reported(),
        [
            "fetch()",
            "Date",
            "now()",
            "Math.random()",
            "performance.now()",
            "performance.timeOrigin",
            "randomString()"
        ]
    );
    // One value per use; `new Date(0)` reads no clock.
    let sources: Vec<String> = recorder.supplied().into_iter().map(|(source, _)| source).collect();
    assert_eq!(
        sources,
        [
            format!("Fetch {{ url: \"http://127.0.0.1:9/refused\", init: {init:?} }}"),
            "Date".to_owned(),
            "Now".to_owned(),
            "Date".to_owned(),
            "Date".to_owned(),
            "Date".to_owned(),
            "MathRandom".to_owned(),
            "PerformanceNow".to_owned(),
            "PerformanceTimeOrigin".to_owned(),
            "RandomString { len: 8 }".to_owned(),
        ]
    );
}

/// `a` and `b` are the same number, give or take the last digit JSON text may round.
fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() <= b.abs() * 1e-15)
}

#[test]
fn a_recorder_sees_each_live_value_with_its_source() {
    let script = operator(
        "",
        r#"let fetched;
           try { fetch("http://127.0.0.1:9/", { method: "put" }); } catch (e) { fetched = e.message; }
           return [randomString(8), now(), Date.now(), new Date().getTime(), Math.random(),
                   performance.now(), performance.timeOrigin, fetched, typeof Date()];"#,
    );
    let recorder = Arc::new(Recorder::default());
    let out = observed(&script, json!({}), &recorder);
    let out = out.as_array().cloned().unwrap_or_default();
    let supplied = recorder.supplied();
    let sources: Vec<&str> = supplied.iter().map(|(source, _)| source.as_str()).collect();
    let init = r#"{"method":"PUT","headers":{}}"#;
    assert_eq!(
        sources,
        [
            format!("Fetch {{ url: \"http://127.0.0.1:9/\", init: {init:?} }}").as_str(),
            "RandomString { len: 8 }",
            "Now",
            "Date",
            "Date",
            "MathRandom",
            "PerformanceNow",
            "PerformanceTimeOrigin",
            "Date",
        ]
    );
    // No egress is declared: the live reply is the refusal the script got.
    let Answer::Text(reply) = &supplied[0].1 else { panic!("fetch gave {:?}", supplied[0].1) };
    let reply: Value = serde_json::from_str(reply).expect("the reply is JSON");
    let error = reply["error"].as_str().expect("an error");
    assert_eq!(out[7], json!(format!("fetch http://127.0.0.1:9/: {error}")));
    // Each value the recorder saw is what the script got.
    let Answer::Text(token) = &supplied[1].1 else { panic!("randomString gave {:?}", supplied[1].1) };
    assert_eq!((token.len(), &out[0]), (8, &json!(token)));
    for i in 1..7 {
        let Answer::Number(n) = supplied[i + 1].1 else { panic!("{:?}", supplied[i + 1]) };
        assert!(close(&out[i], n), "{}: {} is {n}", sources[i + 1], out[i]);
    }
    assert_eq!(out[8], json!("string"));
    assert_eq!(
        recorder.reported(),
        [
            "fetch()",
            "randomString()",
            "now()",
            "Date",
            "Math.random()",
            "performance.now()",
            "performance.timeOrigin"
        ]
    );
}

#[test]
fn a_replayed_answer_of_the_wrong_kind_is_a_type_error() {
    let script = operator(
        "",
        r#"switch (cr.spec.call) {
             case "now": return now();
             case "Date.now": return Date.now();
             case "new Date": return new Date().getTime();
             case "Date": return Date();
             case "Math.random": return Math.random();
             case "performance.now": return performance.now();
             case "performance.timeOrigin": return performance.timeOrigin;
             case "randomString": return randomString(8);
             case "fetch": return fetch("http://127.0.0.1:9/").status;
             case "caught": try { return Math.random(); } catch (e) { return `${e.name}: ${e.message}`; }
           }"#,
    );
    let cases = [
        ("now", "replay supplied a text for now()"),
        ("Date.now", "replay supplied a text for Date"),
        ("new Date", "replay supplied a text for Date"),
        ("Date", "replay supplied a text for Date"),
        ("Math.random", "replay supplied a text for Math.random()"),
        ("performance.now", "replay supplied a text for performance.now()"),
        ("performance.timeOrigin", "replay supplied a text for performance.timeOrigin"),
        ("randomString", "replay supplied a number for randomString()"),
        ("fetch", "replay supplied a number for fetch()"),
    ];
    // Every answer is of the other kind.
    let wrong = |source: Source<'_>| match fixed(source) {
        Answer::Number(_) => Answer::Text("1".to_owned()),
        Answer::Text(_) => Answer::Number(1.0),
    };
    for (call, message) in cases {
        let recorder: Arc<dyn Observer> = Arc::new(Recorder::replaying(wrong));
        let error = script
            .dispatch_observed("reconcile", 0, &input(json!({"call": call})), recorder)
            .expect_err("a divergence fails the call");
        match error {
            ctop_runtime::VmError::Exception { name, message: got, .. } => {
                assert_eq!((name.as_str(), got.as_str()), ("TypeError", message), "{call}");
            }
            other => panic!("{call}: {other:?}"),
        }
    }
    // The script sees the error as it would any other.
    let recorder = Arc::new(Recorder::replaying(wrong));
    let out = observed(&script, json!({"call": "caught"}), &recorder);
    assert_eq!(out, json!("TypeError: replay supplied a text for Math.random()"));
}

#[test]
fn date_uses_the_originals_whatever_the_script_replaced() {
    // `Date()` formats with the original `toString` and both read the original clock (the
    // live value behind the supplied one), not what the script put in their place.
    let script = operator(
        "",
        r#"Date.prototype.toString = () => "mine"; Date.now = () => 7;
           return [Date(), new Date().getTime(), Date.now(), String(new Date(0)), typeof Date(0)];"#,
    );
    let recorder = Arc::new(Recorder::replaying(fixed));
    let out = observed(&script, json!({}), &recorder);
    assert_eq!(out, json!([date_text(DATE as f64), DATE, 7, "mine", "string"]));
    let sources: Vec<String> = recorder.supplied().into_iter().map(|(source, _)| source).collect();
    assert_eq!(sources, ["Date", "Date", "Date"]);
    assert_eq!(recorder.reported(), ["Date"]);
    // With the live clock, `Date()` is the text of a date at the time the recorder saw.
    let script = operator("", "return Date();");
    let recorder = Arc::new(Recorder::default());
    let out = observed(&script, json!({}), &recorder);
    let supplied = recorder.supplied();
    let [(source, Answer::Number(ms))] = supplied.as_slice() else { panic!("{supplied:?}") };
    assert_eq!(source, "Date");
    assert_eq!(out, json!(date_text(*ms)));
}
