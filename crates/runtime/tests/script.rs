//! Scripts end to end in real QuickJS with the embedded SDK: the SDK's WebApp example loads,
//! declares the expected operator and reconciles; bad scripts fail precisely and leave the
//! pool usable.

use std::time::Duration;

use ctop_runtime::{Limits, LoadError, Script, ScriptError, VmError};
use serde_json::json;

const PLAN: &str = include_str!("../sdk/examples/webapp.ts");

fn write(dir: &std::path::Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    }
}

fn script(files: &[(&str, &str)], limits: Limits) -> Result<Script, ScriptError> {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), files);
    Script::from_dir(dir.path(), "operator.ct", 2, limits)
}

fn webapp_input() -> String {
    json!({
        "object": {"apiVersion": "apps.example.com/v1", "kind": "WebApp",
                   "metadata": {"name": "shop", "namespace": "prod", "uid": "u-1", "generation": 1},
                   "spec": {"image": "nginx:1.27"}},
        "observed": {}, "env": {}, "values": {}
    })
    .to_string()
}

#[test]
fn the_webapp_example_declares_and_reconciles() {
    let s = script(&[("operator.ct", PLAN)], Limits::default()).expect("the WebApp example loads");
    let spec = s.spec();
    assert_eq!(spec.resources.len(), 1);
    let r = &spec.resources[0];
    assert_eq!(
        (r.group.as_str(), r.version.as_str(), r.kind.as_str(), r.plural.as_str()),
        ("apps.example.com", "v1", "WebApp", "webapps")
    );
    assert_eq!(r.schema["properties"]["spec"]["properties"]["replicas"]["default"], 1);
    assert_eq!(r.schema["properties"]["spec"]["required"], json!(["image"]));
    assert_eq!(
        r.schema["properties"]["status"]["properties"]["phase"]["enum"],
        json!(["Pending", "Running", "Failed"])
    );
    let c = &spec.controllers[0];
    assert_eq!(c.every, Some(ctop_core::Duration::from_secs(300)));
    assert_eq!(c.for_.kind, "WebApp");
    let out = s.dispatch("reconcile", 0, &webapp_input()).expect("reconcile");
    assert_eq!(out["status"], json!({"ready": true, "phase": "Running"}));
    assert_eq!(out["result"], json!({"type": "ok"}));
}

#[test]
fn the_bundle_round_trips_and_is_deterministic() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), &[("operator.ct", PLAN)]);
    let a = ctop_runtime::load_dir(dir.path(), "operator.ct").expect("load");
    let b = ctop_runtime::load_dir(dir.path(), "operator.ct").expect("load");
    assert_eq!(a.to_gz(), b.to_gz(), "same sources, same bytes");
    let s =
        Script::from_bundle_gz(&a.to_gz(), 1, Limits::default()).expect("bundle runs without the sources");
    assert_eq!(s.spec().controllers.len(), 1);
}

#[test]
fn a_syntax_error_names_file_line_and_column() {
    let err =
        script(&[("operator.ct", "import { z } from \"ctop\";\nconst x: number = ;\n")], Limits::default())
            .expect_err("syntax error");
    match err {
        ScriptError::Load(LoadError::Syntax { file, line, .. }) => {
            assert_eq!((file.as_str(), line), ("operator.ct", 2))
        }
        other => panic!("expected a syntax error, got {other}"),
    }
}

#[test]
fn an_unknown_import_names_the_specifier() {
    let err =
        script(&[("operator.ct", "import { x } from \"./nope\";\nexport const y = x;\n")], Limits::default())
            .expect_err("unresolved");
    let text = err.to_string();
    assert!(text.starts_with("operator.ct:1:19:") && text.contains("./nope"), "{text}");
}

const THROWER: &str = r#"import { resource, z, operator, apply, Result } from "ctop";
interface Unused { a: string }
const r = resource("x.example.com/v1", "Thing", { scope: "Namespaced", spec: { n: z.number() }, status: {} });
operator(r).reconcile((cr) => {
  if (cr.spec.n === 1) { throw new Error("n must not be 1"); }
  if (cr.spec.n === 2) { while (true) {} }
  if (cr.spec.n === 3) { const a: number[][] = []; for (;;) a.push(new Array(1e6).fill(1)); }
  if (cr.spec.n === 4) { apply({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "big" }, data: { x: "x".repeat(6_000_000) } }); }
  return Result.ok();
});
"#;

fn thing(n: u32) -> String {
    json!({"object": {"apiVersion": "x.example.com/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "d"}, "spec": {"n": n}},
           "observed": {}, "env": {}, "values": {}})
    .to_string()
}

#[test]
fn failures_are_precise_and_the_pool_stays_usable() {
    let limits = Limits {
        timeout: Duration::from_millis(500),
        memory: 32 << 20,
        max_output: 4 << 20,
        ..Limits::default()
    };
    let s = script(&[("operator.ct", THROWER)], limits).expect("loads");
    match s.dispatch("reconcile", 0, &thing(1)) {
        Err(VmError::Exception { message, file, line, .. }) => {
            assert!(message.contains("n must not be 1"), "{message}");
            assert_eq!(file.as_deref(), Some("operator.ct"));
            assert_eq!(line, Some(5), "the TypeScript line, not the stripped JavaScript's");
        }
        other => panic!("expected an exception, got {other:?}"),
    }
    assert!(matches!(s.dispatch("reconcile", 0, &thing(2)), Err(VmError::Timeout { .. })));
    let bomb = s.dispatch("reconcile", 0, &thing(3));
    assert!(matches!(bomb, Err(VmError::OutOfMemory { .. })), "{bomb:?}");
    let huge = s.dispatch("reconcile", 0, &thing(4));
    assert!(matches!(huge, Err(VmError::OutputTooLarge { .. })), "{huge:?}");
    let ok = s.dispatch("reconcile", 0, &thing(5)).expect("the pool still serves");
    assert_eq!(ok["result"], json!({"type": "ok"}));
}

#[test]
fn an_exception_while_loading_names_the_typescript_position() {
    let src = "import { z } from \"ctop\";\ninterface A { x: number }\nconst a: A = { x: 1 };\nif (a.x === 1) {\n  throw new Error(\"boom at load\");\n}\n";
    let err = script(&[("operator.ct", src)], Limits::default()).expect_err("throws at load");
    let text = err.to_string();
    assert!(text.contains("boom at load") && text.contains("operator.ct:5:"), "{text}");
}

#[test]
fn the_webapp_example_keeps_its_token() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp");
    let s = Script::from_dir(&dir, "operator.ct", 1, Limits::default()).expect("examples/webapp loads");
    let cr = json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "prod", "uid": "u-1", "generation": 1},
        "spec": {"image": "nginx:1.27", "replicas": 2, "port": 80}});
    let first =
        s.dispatch("reconcile", 0, &json!({"object": cr, "observed": {}}).to_string()).expect("reconcile");
    let secret = first["applies"]
        .as_array()
        .expect("applies")
        .iter()
        .find(|o| o["kind"] == "Secret")
        .expect("token Secret");
    let token = secret["stringData"]["token"].as_str().expect("generated token");
    assert_eq!(token.len(), 32);
    assert_eq!(first["status"], json!({"ready": false, "phase": "Pending"}));
    // Once the Secret is observed, its token is kept, never regenerated.
    let observed = json!({"v1/Secret": [{"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "shop-token", "namespace": "prod"}, "data": {"token": "c2VjcmV0"}}],
        "apps/v1/Deployment": [{"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "shop", "namespace": "prod"}, "status": {"availableReplicas": 2}}]});
    let again = s
        .dispatch("reconcile", 0, &json!({"object": cr, "observed": observed}).to_string())
        .expect("reconcile");
    let secret = again["applies"]
        .as_array()
        .expect("applies")
        .iter()
        .find(|o| o["kind"] == "Secret")
        .expect("token Secret");
    assert_eq!(secret["data"]["token"], "c2VjcmV0");
    assert!(secret.get("stringData").is_none());
    assert_eq!(again["status"], json!({"ready": true, "phase": "Running"}));
}

/// An [`ctop_runtime::Observer`] over fixed objects that records what was asked.
struct Fixed {
    objects: Vec<serde_json::Value>,
    asked: std::sync::Mutex<Vec<String>>,
}

impl ctop_runtime::Observer for Fixed {
    fn list(&self, kind: &str) -> Option<String> {
        self.asked.lock().expect("lock").push(format!("list {kind}"));
        (kind == "v1/Secret").then(|| json!(self.objects).to_string())
    }

    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        self.asked.lock().expect("lock").push(format!("get {kind} {} {name}", namespace.unwrap_or("-")));
        (kind == "v1/Secret").then(|| {
            self.objects
                .iter()
                .find(|o| o["metadata"]["name"] == name && o["metadata"]["namespace"].as_str() == namespace)
                .map(|o| o.to_string())
        })
    }
}

#[test]
fn observed_objects_are_served_on_demand_by_the_host() {
    let src = r#"
import { resource, z, operator, getObserved, listObserved, setStatus, Result, Secret, ConfigMap } from "ctop";
const thing = resource("test.example.com/v1", "Thing", { scope: "Namespaced", spec: {} , status: { found: z.string(), missing: z.boolean(), count: z.number(), cms: z.number() } });
operator(thing).manages(Secret).reconcile((cr) => {
  setStatus(cr, {
    found: getObserved(Secret, "a")?.data?.k ?? "none",
    missing: getObserved(Secret, "zzz") === undefined,
    count: listObserved(Secret).length,
    cms: listObserved(ConfigMap).length,
  });
  return Result.ok();
});
"#;
    let s = script(&[("operator.ct", src)], Limits::default()).expect("loads");
    let observer = std::sync::Arc::new(Fixed {
        objects: vec![
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "djE="}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b", "namespace": "ns"}}),
        ],
        asked: std::sync::Mutex::default(),
    });
    let input = json!({"object": {"apiVersion": "test.example.com/v1", "kind": "Thing",
        "metadata": {"name": "t", "namespace": "ns", "uid": "u"}, "spec": {}}})
    .to_string();
    let out = s.dispatch_observed("reconcile", 0, &input, observer.clone()).expect("reconcile");
    assert_eq!(out["status"], json!({"found": "djE=", "missing": true, "count": 2, "cms": 0}));
    assert_eq!(
        *observer.asked.lock().expect("lock"),
        ["get v1/Secret ns a", "get v1/Secret ns zzz", "list v1/Secret", "list v1/ConfigMap"],
        "one keyed lookup per getObserved; a kind is listed once per call"
    );
    // Without an observer the input's `observed` is used, as before.
    let legacy = s.dispatch("reconcile", 0, &webapp_like(&input)).expect("reconcile");
    assert_eq!(legacy["status"]["count"], 1);
}

fn webapp_like(input: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(input).expect("json");
    v["observed"] = json!({"v1/Secret": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "eA=="}}]});
    v.to_string()
}

#[test]
fn operator_options_scope_the_primary_watch() {
    let src = r#"
import { operator, Result, Pod } from "ctop";
operator(Pod, { name: "annotator", namespace: "production", labelSelector: { app: "web" },
  predicate: { or: ["LabelChanged", "AnnotationChanged"] } }).reconcile(() => Result.ok());
"#;
    let s = script(&[("operator.ct", src)], Limits::default()).expect("loads");
    let c = &s.spec().controllers[0];
    assert_eq!(c.name, "annotator");
    assert_eq!(c.namespace.as_deref(), Some("production"));
    assert_eq!(c.label_selector.as_deref(), Some("app=web"));
    assert_eq!(
        serde_json::to_value(&c.predicate).expect("json"),
        json!({"or": ["LabelChanged", "AnnotationChanged"]})
    );
}

/// An operator on a `Thing` kind whose reconcile body is `body` (`cr` in scope).
fn thing_operator(body: &str) -> String {
    format!(
        "import {{ resource, z, operator, apply, patch, setStatus, Result, ConfigMap, Secret }} from \"ctop\";\n\
         const thing = resource(\"things.example.com/v1\", \"Thing\", {{ spec: {{ n: z.number().default(1) }} }});\n\
         operator(thing).manages(ConfigMap, Secret).reconcile((cr) => {{ {body} }});\n"
    )
}

fn thing_input() -> String {
    json!({"object": {"apiVersion": "things.example.com/v1", "kind": "Thing",
                      "metadata": {"name": "a", "namespace": "ns", "uid": "u-1", "generation": 1}, "spec": {}},
           "env": {}, "values": {}})
    .to_string()
}

#[test]
fn children_are_copied_with_json_rules_when_applied() {
    let body = r#"
      const when = new Date(Date.UTC(2026, 0, 2, 3, 4, 5));
      const cm = ConfigMap({ metadata: { name: "c", labels: { keep: "yes", drop: undefined } },
        data: { when, half: 0.5, whole: 2.0 * 3, big: 2 ** 60, nan: NaN, inf: -Infinity, fn: () => 1,
                list: [1, undefined, () => 2, "x", null, true], nested: { deep: [{ a: [] }] } } });
      apply(cm);
      cm.data.half = "changed after apply";              // the snapshot is taken at apply()
      apply(Secret({ metadata: { name: "s", namespace: "other" }, stringData: { k: "v" } }));
      apply(ConfigMap({ metadata: { name: "c", labels: { replaced: "yes" } } })); // same key: replaces
      patch(ConfigMap({ metadata: { name: "p", namespace: null }, data: { x: "1" } }));
      setStatus(cr, { seen: { at: when } });
      return Result.ok();
    "#;
    let s = script(&[("operator.ct", &thing_operator(body))], Limits::default()).expect("loads");
    let out = s.dispatch("reconcile", 0, &thing_input()).expect("reconcile");
    assert_eq!(
        out["applies"],
        json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns",
             "labels": {"replaced": "yes"}}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "other"},
             "stringData": {"k": "v"}},
        ]),
        "the second ConfigMap c replaced the first; a given namespace is kept",
    );
    assert_eq!(
        out["patches"],
        json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "p", "namespace": "ns"}, "data": {"x": "1"}}]),
        "a null namespace is filled"
    );
    assert_eq!(out["status"], json!({"seen": {"at": "2026-01-02T03:04:05.000Z"}}));

    // The same body with the first apply only, to see the copied values one by one.
    let first = body.replace("apply(Secret", "0 && apply(Secret").replace(
        "apply(ConfigMap({ metadata: { name: \"c\"",
        "0 && apply(ConfigMap({ metadata: { name: \"c\"",
    );
    let s = script(&[("operator.ct", &thing_operator(&first))], Limits::default()).expect("loads");
    let out = s.dispatch("reconcile", 0, &thing_input()).expect("reconcile");
    let cm = &out["applies"][0];
    assert_eq!(cm["metadata"]["labels"], json!({"keep": "yes"}), "undefined properties are left out");
    assert_eq!(
        cm["data"],
        json!({"when": "2026-01-02T03:04:05.000Z", "half": 0.5, "whole": 6, "big": 1_152_921_504_606_846_976_u64,
               "nan": null, "inf": null, "list": [1, null, null, "x", null, true], "nested": {"deep": [{"a": []}]}}),
    );
    assert!(cm["data"]["whole"].is_i64(), "a whole float is an integer, as JSON.parse would give it");
}

#[test]
fn children_that_json_cannot_hold_fail_the_call_and_the_output_is_bounded() {
    let cases = [
        (
            "const o = { name: \"x\" }; o.self = o; apply(ConfigMap({ metadata: { name: \"c\" }, data: o }));",
            "cyclic",
        ),
        ("apply(ConfigMap({ metadata: { name: \"c\" }, data: { n: 10n } }));", "BigInt"),
        (
            "const o = { get x() { apply(Secret({ metadata: { name: \"s\" } })); return 1; } };\n\
             apply(ConfigMap({ metadata: { name: \"c\" }, data: o }));",
            "while an object is being copied",
        ),
    ];
    for (body, says) in cases {
        let s = script(&[("operator.ct", &thing_operator(body))], Limits::default()).expect("loads");
        let err = s.dispatch("reconcile", 0, &thing_input()).expect_err(says);
        assert!(
            matches!(&err, VmError::Exception { message, .. } if message.contains(says)),
            "{says}: {err}"
        );
    }
    // Many children, each small, past the output limit: refused even if the script catches.
    let body = "for (let i = 0; i < 1000; i++) { try { apply(ConfigMap({ metadata: { name: `c${i}` }, \
                data: { v: \"x\".repeat(100) } })); } catch (e) {} } return Result.ok();";
    let limits = Limits { max_output: 16 * 1024, ..Limits::default() };
    let s = script(&[("operator.ct", &thing_operator(body))], limits).expect("loads");
    let err = s.dispatch("reconcile", 0, &thing_input()).expect_err("too large");
    assert!(matches!(err, VmError::OutputTooLarge { limit: 16_384, .. }), "{err}");
    // The next call of the same runtime starts with a fresh budget.
    let small = thing_operator("apply(ConfigMap({ metadata: { name: \"c\" } }));");
    let s = script(&[("operator.ct", &small)], limits).expect("loads");
    for _ in 0..3 {
        let out = s.dispatch("reconcile", 0, &thing_input()).expect("small output");
        assert_eq!(out["applies"].as_array().map(Vec::len), Some(1));
    }
}

/// The kubebuilder tutorial's `CronJob` (`batch.tutorial.kubebuilder.io`), read beside the
/// built-in `batch/v1` CronJob.
const TUTORIAL_CRONJOB: &str = r#"import { resource, z, operator, apply, getObserved, listObserved, setStatus, Job, CronJob } from "ctop";
const cronJob = resource("batch.tutorial.kubebuilder.io/v1", "CronJob", { spec: { schedule: z.string() } });
operator(cronJob).manages(Job).reads(CronJob).reconcile((cr) => {
  apply(Job({ metadata: { name: cr.metadata.name }, spec: {} }));
  setStatus(cr, { builtin: listObserved(CronJob).map((c) => c.apiVersion), own: getObserved(cronJob, cr.metadata.name)?.spec });
});
"#;

/// An [`ctop_runtime::Observer`] that serves one object of each of the two CronJob kinds.
struct TwoCronJobs;

impl ctop_runtime::Observer for TwoCronJobs {
    fn list(&self, kind: &str) -> Option<String> {
        let (api_version, _) = kind.rsplit_once('/')?;
        let spec = json!({"schedule": api_version});
        Some(json!([{"apiVersion": api_version, "kind": "CronJob", "metadata": {"name": "c", "namespace": "ns"}, "spec": spec}]).to_string())
    }

    fn get(&self, _kind: &str, _namespace: Option<&str>, _name: &str) -> Option<Option<String>> {
        None
    }
}

#[test]
fn a_resource_named_like_a_built_in_kind_of_another_group_is_a_kind_of_its_own() {
    let s = script(&[("operator.ct", TUTORIAL_CRONJOB)], Limits::default()).expect("loads");
    let spec = s.spec();
    let r = &spec.resources[0];
    assert_eq!(
        (r.api_version.as_str(), r.group.as_str(), r.kind.as_str(), r.plural.as_str()),
        ("batch.tutorial.kubebuilder.io/v1", "batch.tutorial.kubebuilder.io", "CronJob", "cronjobs")
    );
    let c = &spec.controllers[0];
    assert_eq!(
        (c.for_.api_version.as_str(), c.for_.kind.as_str()),
        ("batch.tutorial.kubebuilder.io/v1", "CronJob")
    );
    assert_eq!((c.reads[0].api_version.as_str(), c.reads[0].kind.as_str()), ("batch/v1", "CronJob"));
    let input = json!({"object": {"apiVersion": "batch.tutorial.kubebuilder.io/v1", "kind": "CronJob",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u"}, "spec": {"schedule": "* * * * *"}}})
    .to_string();
    let out =
        s.dispatch_observed("reconcile", 0, &input, std::sync::Arc::new(TwoCronJobs)).expect("reconcile");
    assert_eq!(
        out["status"],
        json!({"builtin": ["batch/v1"], "own": {"schedule": "batch.tutorial.kubebuilder.io/v1"}}),
        "each handle reads its own kind"
    );
    assert_eq!(out["applies"][0]["kind"], "Job");

    // Only a bare name that could mean either is refused, where it is written.
    let bare = TUTORIAL_CRONJOB.replace(".reads(CronJob)", "\n  .reads(\"CronJob\")");
    let err = script(&[("operator.ct", &bare)], Limits::default()).expect_err("ambiguous").to_string();
    assert!(
        err.contains(
            r#"reads: "CronJob" names batch/v1 CronJob and batch.tutorial.kubebuilder.io/v1 CronJob"#
        ) && err.contains("operator.ct:4:"),
        "{err}"
    );
}

/// The printed code frame of the error `source` fails to load with.
fn load_frame(source: &str) -> (String, String) {
    let err = script(&[("operator.ct", source)], Limits::default()).expect_err("does not load");
    let frame = ctop_runtime::frame_in(&err, None).expect("a frame");
    (err.to_string(), frame.to_string())
}

#[test]
fn a_load_error_of_a_calls_options_points_at_the_call() {
    // QuickJS places a call at the last expression of its arguments (`.min(1)` here); the
    // frame points at `resource(` instead, where the options that are wrong are passed.
    let (message, frame) = load_frame(
        r#"import { resource, z, operator, Result } from "ctop";

const app = resource("apps.example.com/v1", "App", {
  scope: "Global",
  spec: {
    image: z.string(),
    replicas: z.number().int().min(1),
  },
});
operator(app).reconcile(() => Result.ok());
"#,
    );
    assert!(
        message.ends_with(r#"resource App: scope must be "Namespaced" or "Cluster" (at operator.ct:3:13)"#),
        "{message}"
    );
    assert_eq!(
        frame,
        r#" --> operator.ct:3:13
  |
3 | const app = resource("apps.example.com/v1", "App", {
  |             ^"#
    );

    // A bad schema, and a method of the builder: the method's name.
    let (_, frame) = load_frame(
        "import { resource, operator } from \"ctop\";\nconst app = resource(\"a.example.com/v1\", \"App\", {\n  spec: { n: 1 },\n});\n",
    );
    assert_eq!(
        frame,
        " --> operator.ct:2:13\n  |\n2 | const app = resource(\"a.example.com/v1\", \"App\", {\n  |             ^"
    );
    let (message, frame) = load_frame(
        "import { resource, operator } from \"ctop\";\nconst app = resource(\"a.example.com/v1\", \"App\", {});\noperator(app)\n  .every(\n    \"soon\",\n  );\n",
    );
    assert!(message.contains("(at operator.ct:4:4)"), "{message}");
    assert_eq!(frame, " --> operator.ct:4:4\n  |\n4 |   .every(\n  |    ^");
}

#[test]
fn an_error_thrown_in_the_scripts_own_code_keeps_its_position() {
    let (_, frame) = load_frame(
        "import { z } from \"ctop\";\nfunction check(n: number) {\n  if (n > 1) {\n    throw new Error(\"too big\");\n  }\n}\ncheck(\n  2,\n);\n",
    );
    assert!(frame.starts_with(" --> operator.ct:4:"), "{frame}");
}
