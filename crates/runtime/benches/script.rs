//! Script runtime benchmark: bundle build, VM cold start and one warm reconcile of the SDK's
//! WebApp, ctop against the bare QuickJS engine, printed as one Markdown table.
//!
//! `cargo bench -p ctop-runtime --bench script` (add `-- --quick` for a short run). Plain
//! `std::time::Instant` timing: every measurement is warmed up first, and the two reconcile
//! variants are interleaved call by call so both see the same machine load.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctop_runtime::sdk::{SDK_JS, SDK_MODULES};
use ctop_runtime::{Bundle, Limits, Observer, Script, Vm, load_dir};
use rquickjs::{Context, Function, Runtime};
use serde_json::{Value, json};

/// The WebApp example (`sdk/examples/webapp.ts`), unchanged.
const PLAN: &str = include_str!("../sdk/examples/webapp.ts");

/// The WebApp example with the "build desired resources" part written out: the same three
/// children and status as [`BARE_JS`], through `apply()` and `setStatus`.
const OPERATOR: &str = r#"import { resource, z, operator, apply, setStatus, getObserved, randomString, Result, Deployment, Service, Secret } from "https://github.com/cloudticon/k8s@master";

const webApp = resource("apps.example.com/v1", "WebApp", {
  scope: "Namespaced",
  spec: { image: z.string(), replicas: z.number().default(1) },
  status: { ready: z.boolean(), phase: z.enum(["Pending", "Running", "Failed"]) }
});

operator(webApp).every("5m").manages(Deployment, Service, Secret).reconcile((cr) => {
  const name = cr.metadata.name;
  const labels = { "app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "ctop" };
  const tokenSecret = getObserved(Secret, `${name}-token`);
  const token = tokenSecret?.data?.token ?? randomString(32);
  apply(Deployment({
    metadata: { name, labels },
    spec: {
      replicas: cr.spec.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "web", image: cr.spec.image, ports: [{ containerPort: 8080, name: "http" }],
          env: [{ name: "TOKEN", valueFrom: { secretKeyRef: { name: `${name}-token`, key: "token" } } }] }] },
      },
    },
  }));
  apply(Service({ metadata: { name, labels }, spec: { selector: labels, ports: [{ name: "http", port: 80, targetPort: "http" }] } }));
  apply(Secret({ metadata: { name: `${name}-token`, labels }, type: "Opaque", data: { token } }));
  setStatus(cr, { ready: true, phase: "Running" });
  return Result.ok();
});
"#;

/// The bare-engine baseline: CR JSON in, the same three children and status out as JSON.
const BARE_JS: &str = r#"
const TOKEN = "c2VjcmV0LXRva2VuLTAxMjM0NTY3ODlhYmNkZWY=";
globalThis.reconcile = function (crJson) {
  const cr = JSON.parse(crJson);
  const name = cr.metadata.name, namespace = cr.metadata.namespace;
  const labels = { "app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "ctop" };
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace, labels },
    spec: {
      replicas: cr.spec.replicas ?? 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "web", image: cr.spec.image, ports: [{ containerPort: 8080, name: "http" }],
          env: [{ name: "TOKEN", valueFrom: { secretKeyRef: { name: `${name}-token`, key: "token" } } }] }] },
      },
    } };
  const service = { apiVersion: "v1", kind: "Service", metadata: { name, namespace, labels },
    spec: { selector: labels, ports: [{ name: "http", port: 80, targetPort: "http" }] } };
  const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: `${name}-token`, namespace, labels },
    type: "Opaque", data: { token: TOKEN } };
  return JSON.stringify({ applies: [deployment, service, secret], status: { ready: true, phase: "Running" } });
};
"#;

fn webapp_cr() -> Value {
    json!({
        "apiVersion": "apps.example.com/v1", "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "prod", "uid": "5b1c6a52-1f0e-4c8e-9d57-0d3c2f1a7e11",
                     "generation": 3, "resourceVersion": "48213",
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"image": "nginx:1.27", "replicas": 2}
    })
}

/// The token Secret the reconcile reads.
fn token_secret() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "shop-token", "namespace": "prod", "uid": "0e5f2b7a-8c3d-4f61-a2b9-7d4e1c0f9a35",
                     "resourceVersion": "48190", "labels": {"app.kubernetes.io/name": "shop"}},
        "type": "Opaque", "data": {"token": "c2VjcmV0LXRva2VuLTAxMjM0NTY3ODlhYmNkZWY="}
    })
}

/// The dispatch input of a steady-state reconcile with the caches inline: the CR plus the
/// token Secret it reads.
fn dispatch_input() -> Value {
    json!({ "object": webapp_cr(), "observed": { "v1/Secret": [token_secret()] }, "env": {}, "values": {} })
}

/// Serves the token Secret as the controller's cache view does: looked up by key and
/// serialized when the script asks.
struct OneSecret(Value);

impl Observer for OneSecret {
    fn list(&self, kind: &str) -> Option<String> {
        (kind == "v1/Secret").then(|| json!([self.0]).to_string())
    }
    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        (kind == "v1/Secret").then(|| {
            (self.0["metadata"]["name"] == name && self.0["metadata"]["namespace"].as_str() == namespace)
                .then(|| self.0.to_string())
        })
    }
}

struct Stats {
    n: usize,
    median: Duration,
    p99: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let n = samples.len();
        Stats { n, median: samples[n / 2], p99: samples[(n * 99 / 100).min(n - 1)] }
    }
}

fn time<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let started = Instant::now();
    let out = f();
    (started.elapsed(), out)
}

/// Runs `f` `warmup` times, then `n` timed times (`f`'s result is dropped outside the timing).
fn bench<T>(warmup: usize, n: usize, mut f: impl FnMut() -> T) -> Stats {
    for _ in 0..warmup {
        black_box(f());
    }
    let samples = (0..n)
        .map(|_| {
            let (took, out) = time(&mut f);
            drop(black_box(out));
            took
        })
        .collect();
    Stats::of(samples)
}

fn bare_engine() -> (Runtime, Context) {
    let runtime = Runtime::new().unwrap();
    let context = Context::full(&runtime).unwrap();
    (runtime, context)
}

/// One call of the bare baseline: `&str` in, Rust `String` out.
fn bare_reconcile(context: &Context, cr_json: &str) -> String {
    context.with(|ctx| {
        let f: Function<'_> = ctx.globals().get("reconcile").unwrap();
        let out: rquickjs::String<'_> = f.call((cr_json,)).unwrap();
        out.to_string().unwrap()
    })
}

/// Smallest memory limit (to 16 KiB) under which `Vm::new` and `calls` reconciles succeed:
/// the peak heap of one `Vm`, measured through the public API.
fn vm_peak_memory(bundle: &Arc<Bundle>, input: &str, calls: usize) -> usize {
    let fits = |memory: usize| {
        let limits = Limits { memory, ..Limits::default() };
        let Ok(mut vm) = Vm::new(Arc::clone(bundle), SDK_JS, limits) else {
            return false;
        };
        (0..calls).all(|_| vm.dispatch("reconcile", 0, input).is_ok())
    };
    let (mut lo, mut hi) = (64 * 1024, 64 << 20);
    assert!(fits(hi), "the Vm does not run in 64 MiB");
    while hi - lo > 16 * 1024 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { hi = mid } else { lo = mid }
    }
    hi
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn kib(bytes: usize) -> String {
    format!("{:.0} KiB", bytes as f64 / 1024.0)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (build_n, cold_n, calls, warmup) =
        if quick { (10, 30, 2_000, 300) } else { (40, 200, 10_000, 2_000) };
    let mut rows: Vec<[String; 5]> = Vec::new();
    let mut row = |what: &str, n: usize, median: String, p99: String, note: String| {
        rows.push([what.to_owned(), n.to_string(), median, p99, note]);
    };

    // 1. Bundle build of the SDK's WebApp example.
    let plan_dir = tempfile::tempdir().unwrap();
    std::fs::write(plan_dir.path().join("operator.ct"), PLAN).unwrap();
    let build = bench(2, build_n, || load_dir(plan_dir.path(), "operator.ct").unwrap().to_gz());
    let gz = load_dir(plan_dir.path(), "operator.ct").unwrap().to_gz();
    row(
        "bundle build: load_dir → to_gz (sdk/examples/webapp.ts)",
        build.n,
        ms(build.median),
        ms(build.p99),
        format!("{} bytes gz", gz.len()),
    );

    // 2. Cold start.
    let plan = Arc::new(Bundle::from_gz(&gz).unwrap());
    let bare_cold = bench(5, cold_n, bare_engine);
    row(
        "cold start: bare Runtime + Context::full",
        bare_cold.n,
        ms(bare_cold.median),
        ms(bare_cold.p99),
        String::new(),
    );
    let vm_cold = bench(5, cold_n, || Vm::new(Arc::clone(&plan), SDK_JS, Limits::default()).unwrap());
    row(
        "cold start: ctop Vm::new (SDK + the WebApp example's bundle)",
        vm_cold.n,
        ms(vm_cold.median),
        ms(vm_cold.p99),
        format!(
            "{:.1}× bare; SDK {} KiB of JS",
            ratio(vm_cold.median, bare_cold.median),
            (SDK_JS.len() + SDK_MODULES.iter().map(|(_, js)| js.len()).sum::<usize>()) / 1024
        ),
    );

    // 3. Warm reconcile, interleaved call by call.
    let op_dir = tempfile::tempdir().unwrap();
    std::fs::write(op_dir.path().join("operator.ct"), OPERATOR).unwrap();
    let script = Script::from_dir(op_dir.path(), "operator.ct", 1, Limits::default()).unwrap();
    let op_bundle = Arc::new(script.bundle().clone());
    let mut vm = Vm::new(Arc::clone(&op_bundle), SDK_JS, Limits::default()).unwrap();
    // The SDK's fixed cost: the same operator with a handler that only returns Result.ok().
    let (head, _) = OPERATOR.split_once(".reconcile(").unwrap();
    let floor_dir = tempfile::tempdir().unwrap();
    std::fs::write(floor_dir.path().join("operator.ct"), format!("{head}.reconcile(() => Result.ok());\n"))
        .unwrap();
    let floor_bundle = Arc::new(load_dir(floor_dir.path(), "operator.ct").unwrap());
    let mut floor_vm = Vm::new(floor_bundle, SDK_JS, Limits::default()).unwrap();
    let (_bare_rt, bare) = bare_engine();
    bare.with(|ctx| ctx.eval::<(), _>(BARE_JS)).unwrap();

    let cr_json = webapp_cr().to_string();
    let input = dispatch_input();
    let input_json = input.to_string();
    let bare_out = bare_reconcile(&bare, &cr_json);
    let ctop_out = script.dispatch("reconcile", 0, &input_json).unwrap();
    assert_eq!(ctop_out["applies"].as_array().map(Vec::len), Some(3), "{ctop_out}");
    assert_eq!(ctop_out["status"], json!({"ready": true, "phase": "Running"}));
    let ctop_out_len = ctop_out.to_string().len();

    // The controller's path: no caches in the input, getObserved served by the Observer.
    let lean_input = json!({ "object": webapp_cr(), "env": {}, "values": {} });
    let observer: Arc<dyn Observer> = Arc::new(OneSecret(token_secret()));
    let lean_out =
        script.dispatch_observed("reconcile", 0, &lean_input.to_string(), observer.clone()).unwrap();
    assert_eq!(lean_out["applies"], ctop_out["applies"], "both paths read the same token");
    let mut samples: [Vec<Duration>; 5] = Default::default();
    for i in 0..warmup + calls {
        let (b, out) = time(|| bare_reconcile(&bare, &cr_json));
        black_box(out);
        let (s, out) = time(|| {
            let input = serde_json::to_string(&input).unwrap();
            script.dispatch("reconcile", 0, &input).unwrap()
        });
        black_box(out);
        let (v, out) = time(|| vm.dispatch("reconcile", 0, &input_json).unwrap());
        black_box(out);
        let (f, out) = time(|| floor_vm.dispatch("reconcile", 0, &input_json).unwrap());
        black_box(out);
        let (o, out) = time(|| {
            let input = serde_json::to_string(&lean_input).unwrap();
            script.dispatch_observed("reconcile", 0, &input, observer.clone()).unwrap()
        });
        black_box(out);
        if i >= warmup {
            for (list, took) in samples.iter_mut().zip([b, s, v, f, o]) {
                list.push(took);
            }
        }
    }
    let [bare_call, script_call, vm_call, floor_call, observed_call] = samples.map(Stats::of);
    row(
        "reconcile: bare engine (JSON.parse → 3 children + status → JSON.stringify)",
        bare_call.n,
        us(bare_call.median),
        us(bare_call.p99),
        format!("in {} B, out {} B", cr_json.len(), bare_out.len()),
    );
    row(
        "reconcile: ctop Script::dispatch_observed (the controller's path: caches served on demand)",
        observed_call.n,
        us(observed_call.median),
        us(observed_call.p99),
        format!(
            "**{:.2}× bare** (p99 {:.2}×), target ≤ 2×",
            ratio(observed_call.median, bare_call.median),
            ratio(observed_call.p99, bare_call.p99),
        ),
    );
    row(
        "reconcile: ctop Script::dispatch (caches inline in the input, input serialized per call, pool)",
        script_call.n,
        us(script_call.median),
        us(script_call.p99),
        format!(
            "**{:.2}× bare** (p99 {:.2}×), target ≤ 2×; in {} B, out {} B",
            ratio(script_call.median, bare_call.median),
            ratio(script_call.p99, bare_call.p99),
            input_json.len(),
            ctop_out_len
        ),
    );
    row(
        "reconcile: ctop Vm::dispatch (input pre-serialized, no pool)",
        vm_call.n,
        us(vm_call.median),
        us(vm_call.p99),
        format!("{:.2}× bare", ratio(vm_call.median, bare_call.median)),
    );
    row(
        "reconcile: ctop Vm::dispatch, handler only returns Result.ok() (SDK floor)",
        floor_call.n,
        us(floor_call.median),
        us(floor_call.p99),
        "input parse, spec defaults, output copied to Rust".to_owned(),
    );

    // 4. Memory.
    let (bare_rt, _bare_ctx) = bare_engine();
    let bare_mem = usize::try_from(bare_rt.memory_usage().malloc_size).unwrap_or(0);
    row("memory: bare Runtime + Context (malloc_size)", 1, kib(bare_mem), "–".to_owned(), String::new());
    let peak_calls = if quick { 20 } else { 100 };
    let peak = vm_peak_memory(&op_bundle, &input_json, peak_calls);
    row(
        "memory: ctop Vm peak (smallest limit passing)",
        1,
        kib(peak),
        "–".to_owned(),
        format!("Vm::new + {peak_calls} reconciles, ±16 KiB"),
    );

    println!("\n| measurement | n | median | p99 | notes |\n|---|---:|---:|---:|---|");
    for [what, n, median, p99, note] in rows {
        println!("| {what} | {n} | {median} | {p99} | {note} |");
    }
    println!();
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}
