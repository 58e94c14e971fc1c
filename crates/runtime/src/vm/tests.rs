//! Tests of the vm: limits, errors and their positions, host functions, promise jobs.

use super::stack::{Frame, map_stack, parse_frame, pick_frame};
use super::*;
use crate::bundle::Module;
use serde_json::json;
use std::time::Instant;

/// A tiny stand-in for the real sdk: registers controllers and dispatches to them.
pub(crate) const SDK: &str = r#"
const specs = [];
globalThis.__ct_operator = { resources: [], controllers: [] };
export function operator(name, spec) {
  const index = specs.length;
  specs.push(spec);
  globalThis.__ct_operator.controllers.push({
index, name, for: spec.for, every: spec.every ?? null,
handlers: Object.keys(spec).filter((k) => typeof spec[k] === "function"),
  });
}
export const host = globalThis.__ct_host;
globalThis.__ct_dispatch = (handler, index, inputJson) => {
  const fn = specs[index]?.[handler];
  if (typeof fn !== "function") throw new TypeError(`no ${handler} on controller ${index}`);
  const out = fn(JSON.parse(inputJson));
  if (out instanceof Promise) return out.then((o) => JSON.stringify(o ?? null));
  return JSON.stringify(out ?? null);
};
"#;

const UTIL: &str = "export function greet(n) {\n  if (n === \"bad\") {\n    throw new Error(\"bad name: \" + n);\n  }\n  return \"hello \" + n;\n}\n";

fn bundle(entry_js: &str, extra: &[(&str, &str)]) -> Arc<Bundle> {
    let mut modules = std::collections::BTreeMap::new();
    let module = |js: &str| Module { js: js.to_owned(), source_map: None };
    modules.insert("operator.ct".to_owned(), module(entry_js));
    for (name, js) in extra {
        modules.insert((*name).to_owned(), module(js));
    }
    Arc::new(Bundle { entry: "operator.ct".to_owned(), modules })
}

/// An operator with one controller whose `reconcile` is `body` (with `input` in scope).
pub(crate) fn reconciler(prelude: &str, body: &str) -> Arc<Bundle> {
    let entry = format!(
        "import {{ operator, host }} from \"ctop\";\nimport {{ greet }} from \"lib/util.ts\";\n{prelude}\n\
         operator(\"web\", {{ for: {{ apiVersion: \"v1\", kind: \"Web\" }}, reconcile(input) {{ {body} }} }});\n"
    );
    bundle(&entry, &[("lib/util.ts", UTIL)])
}

fn vm(prelude: &str, body: &str) -> Vm {
    Vm::new(reconciler(prelude, body), SDK, Limits::default()).unwrap()
}

pub(crate) fn short(timeout_ms: u64) -> Limits {
    Limits { timeout: Duration::from_millis(timeout_ms), ..Limits::default() }
}

fn input(name: &str) -> String {
    json!({ "object": { "metadata": { "name": name } } }).to_string()
}

#[test]
fn registry_lists_what_the_top_level_registered() {
    let mut vm = vm("", "return null;");
    assert_eq!(
        vm.registry().unwrap(),
        json!({
            "resources": [],
            "controllers": [{
                "index": 0, "name": "web", "for": { "apiVersion": "v1", "kind": "Web" },
                "every": null, "handlers": ["reconcile"],
            }],
        })
    );
}

#[test]
fn registry_missing_or_not_json_is_bad_output() {
    let b = bundle("import \"ctop\"; delete globalThis.__ct_operator;", &[]);
    let err = Vm::new(b, SDK, Limits::default()).unwrap().registry().unwrap_err();
    assert!(matches!(err, VmError::BadOutput(ref m) if m.contains("registered nothing")));
    let b = bundle("import \"ctop\"; globalThis.__ct_operator = () => 1;", &[]);
    let err = Vm::new(b, SDK, Limits::default()).unwrap().registry().unwrap_err();
    assert!(matches!(err, VmError::BadOutput(_)), "{err}");
}

#[test]
fn dispatch_round_trips_json() {
    let mut vm = vm(
        "",
        "const o = input.object;
         return { applies: [{ kind: \"ConfigMap\", metadata: { name: o.metadata.name + \"-cm\" } }],
                  status: { greeting: greet(o.metadata.name), n: o.spec.n * 2 },
                  echo: o.spec };",
    );
    let spec = json!({ "n": 21, "text": "ünï ✓ \"quoted\"", "list": [1, null, true] });
    let inp = json!({ "object": { "metadata": { "name": "a" }, "spec": spec } });
    let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
    assert_eq!(
        out,
        json!({
            "applies": [{ "kind": "ConfigMap", "metadata": { "name": "a-cm" } }],
            "status": { "greeting": "hello a", "n": 42 },
            "echo": spec,
        })
    );
    // Unknown handlers and indexes are the sdk's exceptions, not crashes.
    let err = vm.dispatch("finalize", 0, "{}").unwrap_err();
    assert!(matches!(err, VmError::Exception { ref name, .. } if name == "TypeError"));
    assert!(vm.dispatch("reconcile", 7, "{}").is_err());
    assert!(!vm.is_broken());
}

#[test]
fn exception_has_message_file_and_line() {
    let mut vm = vm("", "return greet(input.object.metadata.name);");
    assert_eq!(vm.dispatch("reconcile", 0, &input("ok")).unwrap(), json!("hello ok"));
    let err = vm.dispatch("reconcile", 0, &input("bad")).unwrap_err();
    let VmError::Exception { ref name, ref message, ref stack, ref file, line, column, ref frame } = err
    else {
        panic!("expected an exception, got {err:?}");
    };
    assert_eq!(name, "Error");
    assert_eq!(message, "bad name: bad");
    assert_eq!(file.as_deref(), Some("lib/util.ts"));
    assert_eq!(line, Some(3));
    assert!(column.is_some_and(|c| c > 1), "{column:?}");
    assert!(stack.contains("at greet (lib/util.ts:3:"), "{stack}");
    assert!(stack.contains("(operator.ct:"), "{stack}");
    let frame = frame.as_ref().expect("a code frame").to_string();
    assert!(frame.starts_with(" --> lib/util.ts:3:") && frame.contains("3 | "), "{frame}");
    let text = err.to_string();
    assert!(text.starts_with("Error: bad name: bad (at lib/util.ts:3:"), "{text}");
}

#[test]
fn position_mapper_rewrites_positions() {
    let mapper: PositionMapper = Arc::new(|file: &str, line: u32, column: u32| {
        (file == "lib/util.ts").then_some((line + 100, column + 1))
    });
    let js_column = match vm("", "return greet(\"bad\");").dispatch("reconcile", 0, "{}") {
        Err(VmError::Exception { column, .. }) => column.unwrap(),
        other => panic!("{other:?}"),
    };
    let options = VmOptions { position_mapper: Some(mapper), ..VmOptions::default() };
    let b = reconciler("", "return greet(\"bad\");");
    let mut vm = Vm::with_options(b, SDK, options).unwrap();
    match vm.dispatch("reconcile", 0, "{}").unwrap_err() {
        VmError::Exception { file, line, column, stack, .. } => {
            assert_eq!(file.as_deref(), Some("lib/util.ts"));
            assert_eq!((line, column), (Some(103), Some(js_column + 1)));
            assert!(stack.contains(&format!("at greet (lib/util.ts:103:{})", js_column + 1)));
            // Frames the mapper does not know keep their JavaScript positions.
            assert!(stack.contains("(operator.ct:"), "{stack}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn thrown_non_errors_are_described() {
    let mut vm = vm("", "throw { code: 7 };");
    match vm.dispatch("reconcile", 0, "{}").unwrap_err() {
        VmError::Exception { name, message, .. } => {
            assert_eq!((name.as_str(), message.as_str()), ("Error", "{\"code\":7}"));
        }
        other => panic!("{other:?}"),
    }
    let mut vm = self::vm("", "throw \"plain\";");
    let err = vm.dispatch("reconcile", 0, "{}").unwrap_err();
    assert_eq!(err.to_string(), "Error: plain");
}

#[test]
fn load_failures_are_reported() {
    let bad_syntax = "export function greet(n) {\n  return n +;\n}\n";
    let b = bundle("import { greet } from \"lib/util.ts\"; import \"ctop\";", &[("lib/util.ts", bad_syntax)]);
    match Vm::new(b, SDK, Limits::default()).unwrap_err() {
        VmError::Exception { name, file, line, .. } => {
            assert_eq!(name, "SyntaxError");
            assert_eq!((file.as_deref(), line), (Some("lib/util.ts"), Some(2)));
        }
        other => panic!("{other:?}"),
    }
    let b = bundle("import \"ctop\"; import \"lib/missing.ts\";", &[]);
    let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
    assert!(
        matches!(err, VmError::Exception { ref message, .. } if message.contains("lib/missing.ts")),
        "{err:?}"
    );
    let b = bundle("import \"ctop\";\nthrow new RangeError(\"top\");", &[]);
    let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
    assert!(
        matches!(err, VmError::Exception { ref name, line: Some(2), .. } if name == "RangeError"),
        "{err:?}"
    );
    let b = bundle("export const x = 1;", &[]);
    let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
    assert!(matches!(err, VmError::Load { ref message } if message.contains("\"ctop\"")));
    let mut b = (*bundle("import \"ctop\";", &[])).clone();
    b.entry = "nope.ct".to_owned();
    let err = Vm::new(Arc::new(b), SDK, Limits::default()).unwrap_err();
    assert!(matches!(err, VmError::Load { ref message } if message.contains("nope.ct")));
    let b = bundle("import \"ctop\"; await new Promise(() => {});", &[]);
    let err = Vm::new(b, SDK, Limits::default()).unwrap_err();
    assert!(matches!(err, VmError::NeverSettled { .. }), "{err:?}");
}

#[test]
fn infinite_top_level_loop_times_out_at_load() {
    let b = bundle("import \"ctop\"; for (;;) {}", &[]);
    let started = Instant::now();
    let err = Vm::new(b, SDK, short(200)).unwrap_err();
    assert!(matches!(err, VmError::Timeout { after } if after == Duration::from_millis(200)));
    assert!(started.elapsed() < Duration::from_secs(3));
}

fn pool(prelude: &'static str, body: &'static str, limits: Limits) -> crate::pool::Pool {
    let b = reconciler(prelude, body);
    crate::pool::Pool::new(1, move || Vm::new(Arc::clone(&b), SDK, limits)).unwrap()
}

pub(crate) const COUNTER: &str = "let calls = 0;";
pub(crate) const SPIN_OR_COUNT: &str =
    "if (input.spin) { try { while (true) {} } catch (e) { return \"caught\"; } }
    if (input.bomb) { let a = []; for (;;) a.push(new Array(1e6).fill(1)); }
    if (input.huge) return \"x\".repeat(10000000);
    return calls++;";

#[test]
fn timeout_stops_an_endless_handler_and_the_pool_serves_the_next_call() {
    let pool = pool(COUNTER, SPIN_OR_COUNT, short(300));
    let call = |inp: serde_json::Value| pool.with(|vm| vm.dispatch("reconcile", 0, &inp.to_string()));
    assert_eq!(call(json!({})).unwrap(), json!(0));
    assert_eq!(call(json!({})).unwrap(), json!(1));
    let started = Instant::now();
    let err = call(json!({ "spin": true })).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, VmError::Timeout { .. }), "{err:?}");
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "{took:?}");
    assert!(err.to_string().contains("--reconcile-timeout"));
    // The broken Vm was replaced: module state starts over.
    assert_eq!(call(json!({})).unwrap(), json!(0));
}

#[test]
fn allocation_bomb_is_out_of_memory_and_the_pool_recovers() {
    let limits = Limits { memory: 32 * MIB, ..Limits::default() };
    let pool = pool(COUNTER, SPIN_OR_COUNT, limits);
    let call = |inp: serde_json::Value| pool.with(|vm| vm.dispatch("reconcile", 0, &inp.to_string()));
    assert_eq!(call(json!({})).unwrap(), json!(0));
    let err = call(json!({ "bomb": true })).unwrap_err();
    assert!(matches!(err, VmError::OutOfMemory { limit } if limit == 32 * MIB), "{err:?}");
    assert!(err.to_string().contains("limit 32Mi") && err.to_string().contains("--script-memory"));
    assert_eq!(call(json!({})).unwrap(), json!(0));
    assert_eq!(call(json!({})).unwrap(), json!(1));
}

#[test]
fn huge_output_is_rejected_before_copying() {
    let limits = Limits { max_output: 4 * MIB, ..Limits::default() };
    let mut vm = Vm::new(reconciler(COUNTER, SPIN_OR_COUNT), SDK, limits).unwrap();
    let err = vm.dispatch("reconcile", 0, "{\"huge\":true}").unwrap_err();
    assert!(
        matches!(err, VmError::OutputTooLarge { size: 10_000_002, limit } if limit == 4 * MIB),
        "{err:?}"
    );
    assert!(!vm.is_broken());
    assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!(0));
}

#[test]
fn deep_recursion_is_a_stack_overflow_exception() {
    let mut vm = vm(
        "function down(n) { return down(n + 1) + 1; }",
        "if (input.deep) return down(0); return \"fine\";",
    );
    match vm.dispatch("reconcile", 0, "{\"deep\":true}").unwrap_err() {
        VmError::Exception { name, message, .. } => {
            assert_eq!(name, "RangeError");
            assert!(message.contains("call stack"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!vm.is_broken());
    assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!("fine"));
}

#[test]
fn only_module_level_state_survives_between_calls() {
    let mut vm = vm(
        "let kept = 0;",
        "let local = 0; local++; kept++;
         const seen = input.object.seen ?? null; input.object.seen = \"mutated\";
         globalThis.onPurpose = (globalThis.onPurpose ?? 0) + 1;
         let stray = \"ok\"; try { leaked = 1; } catch (e) { stray = e.name; }
         return { local, kept, seen, onPurpose: globalThis.onPurpose, stray };",
    );
    let first = vm.dispatch("reconcile", 0, "{\"object\":{}}").unwrap();
    let second = vm.dispatch("reconcile", 0, "{\"object\":{}}").unwrap();
    let expect =
        |n: u32| json!({ "local": 1, "kept": n, "seen": null, "onPurpose": n, "stray": "ReferenceError" });
    assert_eq!(first, expect(1));
    assert_eq!(second, expect(2));
}

#[test]
fn queued_promise_jobs_run_before_the_call_returns() {
    let mut vm = vm("let ticks = 0;", "Promise.resolve().then(() => { ticks++; }); return ticks;");
    assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!(0));
    assert_eq!(vm.dispatch("reconcile", 0, "{}").unwrap(), json!(1));
}

#[test]
fn async_handlers_are_awaited() {
    let b = bundle(
        "import { operator } from \"ctop\";
         operator(\"a\", { async reconcile(input) { const v = await Promise.resolve(input.v); return { v: v + 1 }; },
                         async finalize() { await new Promise(() => {}); },
                         async validate() { await null; throw new Error(\"async boom\"); } });",
        &[],
    );
    let mut vm = Vm::new(b, SDK, Limits::default()).unwrap();
    assert_eq!(vm.dispatch("reconcile", 0, "{\"v\":1}").unwrap(), json!({ "v": 2 }));
    let err = vm.dispatch("finalize", 0, "{}").unwrap_err();
    assert!(matches!(err, VmError::NeverSettled { .. }), "{err:?}");
    let err = vm.dispatch("validate", 0, "{}").unwrap_err();
    assert!(matches!(err, VmError::Exception { ref message, .. } if message == "async boom"));
}

#[test]
fn non_json_output_is_bad_output() {
    let b = bundle("import \"ctop\";", &[]);
    for (sdk, what) in [
        ("globalThis.__ct_dispatch = () => 42;", "int"),
        ("globalThis.__ct_dispatch = () => \"{nope\";", "valid JSON"),
    ] {
        let sdk = format!("globalThis.__ct_operator = {{}};\n{sdk}");
        let mut vm = Vm::new(Arc::clone(&b), &sdk, Limits::default()).unwrap();
        let err = vm.dispatch("reconcile", 0, "{}").unwrap_err();
        assert!(matches!(err, VmError::BadOutput(ref m) if m.contains(what)), "{err:?}");
    }
}

#[test]
fn the_host_holds_exactly_the_listed_functions() {
    let mut vm = vm("", "return { names: Object.keys(host), frozen: Object.isFrozen(host) };");
    let out = vm.dispatch("reconcile", 0, "{}").unwrap();
    assert_eq!(out, json!({ "names": HOST_FUNCTIONS, "frozen": true }));
}

#[test]
fn random_string_has_the_length_and_alphabet() {
    let mut vm = vm(
        "",
        "const r = {}; for (const n of input.lengths) r[n] = host.randomString(n);
         const errors = []; for (const n of input.bad) { try { host.randomString(n); } catch (e) { errors.push(e.name); } }
         return { r, errors };",
    );
    let inp = json!({ "lengths": [0, 1, 32, 1000], "bad": [-1, 1.5, 2e6, "x"] });
    let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
    for n in [0usize, 1, 32, 1000] {
        let s = out["r"][n.to_string()].as_str().unwrap();
        assert_eq!(s.len(), n);
        assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()), "{s}");
    }
    assert_eq!(out["errors"], json!(["RangeError", "RangeError", "RangeError", "TypeError"]));
    let again = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
    assert_ne!(out["r"]["32"], again["r"]["32"]);
    // All 62 characters show up in a long sample, and nothing else.
    let long = random_sample(&mut vm);
    let distinct: std::collections::BTreeSet<char> = long.chars().collect();
    assert_eq!(distinct.len(), 62);
}

fn random_sample(vm: &mut Vm) -> String {
    let inp = json!({ "lengths": [100000], "bad": [] });
    let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
    out["r"]["100000"].as_str().unwrap().to_owned()
}

#[test]
fn now_and_fetch() {
    let mut vm = vm(
        "",
        "const reply = JSON.parse(host.fetch(\"ftp://x/y\", \"{}\"));
         return { now: host.now(), err: reply.error };",
    );
    let out = vm.dispatch("reconcile", 0, "{}").unwrap();
    assert!(out["err"].as_str().unwrap().contains("only http and https"), "{out}");
    let rust_now = Clock::default().now_ms();
    let js_now = out["now"].as_f64().unwrap();
    assert!((rust_now - js_now).abs() < 5_000.0, "{rust_now} vs {js_now}");
}

#[test]
fn now_reads_the_clock_it_is_given() {
    let clock = Arc::new(Clock::default());
    let options = VmOptions { clock: Arc::clone(&clock), ..VmOptions::default() };
    let mut vm = Vm::with_options(reconciler("", "return { now: host.now() };"), SDK, options).unwrap();
    let epoch = std::time::UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    clock.set(Arc::new(move || epoch));
    let out = vm.dispatch("reconcile", 0, "{}").unwrap();
    assert_eq!(out["now"].as_f64(), Some(1_767_225_600_000.0), "{out}");
}

const FETCH: &str = "const init = { method: input.method, headers: { \"x-a\": \"1\" }, body: input.body };
    const reply = JSON.parse(host.fetch(input.url, JSON.stringify(init)));
    return reply;";

/// A `Vm` whose fetch may reach the test servers on loopback.
fn loopback_vm(body: &str, limits: Limits) -> Vm {
    let rules = vec!["http://127.0.0.1:*".parse().unwrap()];
    let egress = Arc::new(parking_lot::RwLock::new(EgressPolicy { rules, own_ports: vec![] }));
    Vm::with_options(
        reconciler("", body),
        SDK,
        VmOptions { limits, egress, position_mapper: None, clock: Arc::default() },
    )
    .unwrap()
}

#[test]
fn fetch_from_a_script() {
    use crate::fetch::tests::{response, serve};
    let (base, seen) = serve(2, |req, _| {
        let body = format!("pong {}", String::from_utf8_lossy(&req.body));
        let status = if req.request_line().contains("/gone") { "404 Not Found" } else { "200 OK" };
        response(status, &[("x-b", "2")], &body)
    });
    let mut vm = loopback_vm(FETCH, Limits::default());
    let inp = json!({ "url": format!("{base}/hook"), "method": "POST", "body": "ping" });
    let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
    assert_eq!(out["status"], json!(200));
    assert_eq!(out["statusText"], json!("OK"));
    assert_eq!(out["body"], json!("pong ping"));
    assert_eq!(out["headers"]["x-b"], json!("2"));
    let req = seen.recv().unwrap();
    assert_eq!(req.request_line(), "POST /hook HTTP/1.1");
    assert_eq!(req.header("x-a"), Some("1"));
    let inp = json!({ "url": format!("{base}/gone"), "method": "GET" });
    let out = vm.dispatch("reconcile", 0, &inp.to_string()).unwrap();
    assert_eq!((&out["status"], &out["body"]), (&json!(404), &json!("pong ")));
    assert!(!vm.is_broken());
}

#[test]
fn fetch_stops_at_the_call_deadline() {
    let (base, _hold) = crate::fetch::tests::silent();
    let mut vm = loopback_vm(FETCH, short(400));
    let started = Instant::now();
    let err = vm.dispatch("reconcile", 0, &json!({ "url": base }).to_string()).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, VmError::Timeout { .. }), "{err:?}");
    assert!(took >= Duration::from_millis(400) && took < Duration::from_secs(3), "{took:?}");
    assert!(vm.is_broken());
}

/// (level, target, message, fields) of one event.
type Event = (tracing::Level, String, String, String);

/// Records events.
#[derive(Default, Clone)]
struct Capture(Arc<Mutex<Vec<Event>>>);

#[derive(Default)]
struct Fields {
    message: String,
    fields: String,
}

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "fields" => self.fields = format!("{value:?}"),
            _ => {}
        }
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        self.0.lock().push((*meta.level(), meta.target().to_owned(), fields.message, fields.fields));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn log_becomes_tracing_events() {
    let mut vm = vm(
        "",
        "host.log(\"debug\", \"d\", JSON.stringify({ a: 1 }));
         host.log(\"info\", \"i\");
         host.log(\"warn\", \"w\", null);
         host.log(\"error\", \"e\", \"{}\");
         host.log(\"loud\", \"x\".repeat(70000));
         return null;",
    );
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        vm.dispatch("reconcile", 0, "{}").unwrap();
    });
    let events = capture.0.lock();
    let short: Vec<_> =
        events.iter().take(4).map(|(l, t, m, f)| (*l, t.as_str(), m.as_str(), f.as_str())).collect();
    use tracing::Level;
    assert_eq!(
        short,
        [
            (Level::DEBUG, "ctop::script", "d", "{\"a\":1}"),
            (Level::INFO, "ctop::script", "i", ""),
            (Level::WARN, "ctop::script", "w", ""),
            (Level::ERROR, "ctop::script", "e", "{}"),
        ]
    );
    let (level, _, message, _) = &events[4];
    assert_eq!(*level, Level::INFO);
    assert!(message.len() < 70000 && message.ends_with('…'));
}

#[test]
fn vm_and_pool_can_cross_threads() {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<Vm>();
    sync::<crate::pool::Pool>();
}

#[test]
fn stack_frames_parse() {
    assert_eq!(
        parse_frame("    at greet (lib/util.ts:3:11)"),
        Some(Frame { function: Some("greet"), file: "lib/util.ts", line: 3, column: 11 })
    );
    assert_eq!(
        parse_frame("    at operator.ct:2:7"),
        Some(Frame { function: None, file: "operator.ct", line: 2, column: 7 })
    );
    assert_eq!(parse_frame("    at JSON.parse (native)"), None);
    assert_eq!(parse_frame("    at <anonymous> (missing)"), None);
    assert_eq!(parse_frame("garbage"), None);
    let b = bundle("", &[]);
    let stack = "    at f (ctop:1:2)\n    at g (operator.ct:5:6)\n";
    assert_eq!(pick_frame(stack, &b).map(|f| f.line), Some(5));
    assert_eq!(pick_frame("    at f (ctop:1:2)\n", &b).map(|f| f.file), Some("ctop"));
    let mapper: PositionMapper = Arc::new(|_: &str, l: u32, c: u32| Some((l * 10, c * 10)));
    assert_eq!(
        map_stack("    at f (ctop:1:2)\n    at x (native)\n", Some(&mapper)),
        "    at f (ctop:10:20)\n    at x (native)\n"
    );
}
