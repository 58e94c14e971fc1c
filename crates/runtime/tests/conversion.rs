//! `ScriptHandlers::convert` in real QuickJS with the embedded SDK: a resource's versions are
//! registered in the spec, objects convert through the hub both ways, and a conversion that
//! throws, loops, eats memory, returns an invalid object or reads the clock fails with the
//! script's error while the next conversion still works.

use std::sync::Arc;
use std::time::Duration;

use ctop_runtime::{Limits, Script, ScriptHandlers};
use serde_json::{Value, json};

const OPERATOR: &str = r#"import { resource, z, operator } from "ctop";

const cronTab = resource("batch.example.com/v2", "CronTab", {
  spec: { schedule: z.object({ minute: z.string(), hour: z.string() }) },
});
cronTab.addVersion("v1", {
  spec: { schedule: z.string() },
  storage: true,
  deprecated: true,
  toHub: (o) => {
    if (o.spec.schedule === "throw") throw new Error("cannot read this schedule");
    if (o.spec.schedule === "loop") for (;;) {}
    if (o.spec.schedule === "memory") { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }
    if (o.spec.schedule === "date") return { ...o, spec: { schedule: { minute: String(new Date().getMinutes()), hour: "*" } } };
    if (o.spec.schedule === "invalid") return { ...o, spec: { schedule: "still a string" } };
    const [minute, hour] = o.spec.schedule.split(" ");
    return { ...o, spec: { schedule: { minute, hour } } };
  },
  fromHub: (o) => ({ ...o, spec: { schedule: `${o.spec.schedule.minute} ${o.spec.schedule.hour}` } }),
});
operator(cronTab).reconcile(() => {});
"#;

fn handlers(limits: Limits) -> ScriptHandlers {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("operator.ct"), OPERATOR).expect("write");
    let script = Script::from_dir(dir.path(), "operator.ct", 1, limits).expect("the script loads");
    ScriptHandlers::new(Arc::new(script), &json!({}), &json!({}))
}

fn v1(name: &str, schedule: &str) -> Value {
    json!({"apiVersion": "batch.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name, "namespace": "prod", "uid": format!("u-{name}")},
        "spec": {"schedule": schedule}})
}

#[test]
fn the_spec_lists_every_version_with_the_storage_one() {
    let h = handlers(Limits::default());
    let r = &h.script().spec().resources[0];
    assert!(r.converts());
    assert_eq!(r.version, "v2", "the hub is the version handlers see");
    assert_eq!(r.storage_version(), "v1");
    let names: Vec<_> =
        r.all_versions().iter().map(|v| (v.name.clone(), v.served, v.deprecated.is_some())).collect();
    assert_eq!(names, [("v2".to_owned(), true, false), ("v1".to_owned(), true, true)]);
}

#[test]
fn objects_convert_through_the_hub_in_one_call() {
    let h = handlers(Limits::default());
    let hub = h.convert("batch.example.com/v2", &[v1("a", "*/5 3"), v1("b", "0 0")]).expect("converts");
    assert_eq!(hub[0]["apiVersion"], "batch.example.com/v2");
    assert_eq!(hub[0]["spec"]["schedule"], json!({"minute": "*/5", "hour": "3"}));
    assert_eq!(hub[1]["metadata"]["name"], "b");
    let back = h.convert("batch.example.com/v1", &hub).expect("converts back");
    assert_eq!(back, [v1("a", "*/5 3"), v1("b", "0 0")]);
}

#[test]
fn a_failing_conversion_fails_that_call_with_the_scripts_error_and_the_next_one_works() {
    let limits = Limits { timeout: Duration::from_millis(300), ..Limits::default() };
    let h = handlers(limits);
    let cases = [
        ("throw", "converting CronTab prod/x from v1 to v2 (v1.toHub): cannot read this schedule"),
        ("loop", "deadline"),
        ("memory", "memory"),
        ("invalid", "the v2 object it returned is invalid"),
        ("date", "it called Date; a conversion is a pure function"),
    ];
    for (schedule, expected) in cases {
        let err = h.convert("batch.example.com/v2", &[v1("x", schedule)]).expect_err(schedule);
        assert!(err.contains(expected), "{schedule}: {err}");
        let ok = h.convert("batch.example.com/v2", &[v1("y", "1 2")]).expect("the next conversion works");
        assert_eq!(ok[0]["spec"]["schedule"]["minute"], "1");
    }
    let err = h.convert("batch.example.com/v2", &[v1("x", "throw")]).expect_err("throws");
    assert!(err.contains("operator.ct:"), "the error names where in the script: {err}");
}

#[test]
fn a_round_trip_names_the_field_a_conversion_loses() {
    let h = handlers(Limits::default());
    let r = h.script().spec().resources[0].clone();
    h.round_trip(&r, &v1("a", "1 2")).expect("v1 → v2 → v1 keeps everything");
    // v2 can hold a day the v1 string cannot: the v1 conversion drops it.
    let hub = json!({"apiVersion": "batch.example.com/v2", "kind": "CronTab", "metadata": {"name": "a"},
        "spec": {"schedule": {"minute": "1", "hour": "2", "day": "3"}}});
    let err = h.round_trip(&r, &hub).expect_err("the day is lost");
    assert_eq!(
        err.to_string(),
        r#"spec.schedule.day was lost (it was "3") on the way through batch.example.com/v1 and back"#
    );
    let err = h.round_trip(&r, &v1("a", "throw")).expect_err("the conversion throws");
    assert!(
        matches!(&err, ctop_runtime::RoundTripError::Failed { to, .. } if to == "batch.example.com/v2"),
        "{err}"
    );
}

#[test]
fn a_list_page_of_many_objects_converts_whatever_its_size() {
    let h = handlers(Limits::default());
    // 1,000 objects of 300 small fields each (as managedFields make them): as one call's
    // output, past its 16Mi budget (a serde_json::Value is many times its JSON).
    let fields: serde_json::Map<String, Value> = (0..300).map(|i| (format!("k{i}"), json!(i))).collect();
    let many: Vec<Value> = (0..1000)
        .map(|i| {
            let mut o = v1(&format!("c-{i:04}"), &format!("{} 3", i % 60));
            o["metadata"]["annotations"] =
                Value::Object(fields.iter().map(|(k, v)| (k.clone(), json!(v.to_string()))).collect());
            o
        })
        .collect();
    let hub = h.convert("batch.example.com/v2", &many).expect("a thousand objects convert");
    assert_eq!(hub.len(), 1000);
    assert_eq!(hub[999]["metadata"]["name"], "c-0999");
    assert_eq!(hub[999]["spec"]["schedule"]["minute"], "39");
}
