//! The health check run for real in Lua 5.1 with Argo CD's libraries alone (base and
//! table), on objects as ctop's controller leaves them; and the `argocd-cm` patch around it.

use mlua::{Lua, LuaOptions, StdLib, Table};
use serde_json::{Value, json};

use super::*;

/// `v` as Argo CD hands an object to a health check: `null` is `nil`, every number a Lua
/// number, arrays sequences from 1, objects tables.
fn lua_value(lua: &Lua, v: &Value) -> mlua::Result<mlua::Value> {
    Ok(match v {
        Value::Null => mlua::Value::Nil,
        Value::Bool(b) => mlua::Value::Boolean(*b),
        Value::Number(n) => mlua::Value::Number(n.as_f64().unwrap_or_default()),
        Value::String(s) => mlua::Value::String(lua.create_string(s)?),
        Value::Array(items) => {
            let t = lua.create_table()?;
            for item in items {
                t.raw_push(lua_value(lua, item)?)?;
            }
            mlua::Value::Table(t)
        }
        Value::Object(fields) => {
            let t = lua.create_table()?;
            for (k, item) in fields {
                t.raw_set(k.as_str(), lua_value(lua, item)?)?;
            }
            mlua::Value::Table(t)
        }
    })
}

/// A Lua 5.1 with the base and table libraries only, as Argo CD runs health checks.
fn sandbox() -> Lua {
    let lua = Lua::new_with(StdLib::TABLE, LuaOptions::default()).expect("a Lua 5.1");
    let version: String = lua.globals().get("_VERSION").expect("_VERSION");
    assert_eq!(version, "Lua 5.1");
    for absent in ["string", "math", "os", "io"] {
        assert!(lua.globals().get::<mlua::Value>(absent).expect("a global").is_nil(), "{absent} is loaded");
    }
    lua
}

/// What [`HEALTH_LUA`] says of `obj`: `(status, message)`.
fn health(obj: &Value) -> (String, String) {
    let lua = sandbox();
    lua.globals().set("obj", lua_value(&lua, obj).expect("obj converts")).expect("obj set");
    let hs: Table = lua.load(HEALTH_LUA).set_name("health.lua").eval().expect("the check runs");
    let status: String = hs.get("status").expect("a status");
    let message: String = hs.get("message").expect("a message");
    assert!(
        ["Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"].contains(&status.as_str()),
        "{status} is no Argo CD health"
    );
    (status, message)
}

fn says(obj: &Value) -> (&'static str, String) {
    let (status, message) = health(obj);
    let status = match status.as_str() {
        "Healthy" => "Healthy",
        "Progressing" => "Progressing",
        "Degraded" => "Degraded",
        other => panic!("unexpected {other}: {message}"),
    };
    (status, message)
}

/// A WebApp at `generation` with `status`.
fn webapp(generation: u64, status: Value) -> Value {
    json!({
        "apiVersion": "apps.example.com/v1",
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "default", "generation": generation, "uid": "u-1"},
        "spec": {"image": "nginx", "replicas": 2},
        "status": status,
    })
}

/// A condition as the status writer stamps it, `observedGeneration` when given.
fn condition(kind: &str, status: &str, reason: &str, message: &str, generation: Option<u64>) -> Value {
    let mut c = json!({
        "type": kind, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    });
    if let Some(g) = generation {
        c["observedGeneration"] = json!(g);
    }
    c
}

/// After a reconcile of generation 2 that succeeded: `Reconciled` True and `ready`.
fn reconciled(ready: Value) -> Value {
    webapp(
        2,
        json!({
            "observedGeneration": 2,
            "conditions": [condition("Reconciled", "True", "ReconcileSucceeded", "", Some(2)), ready],
        }),
    )
}

#[test]
fn every_child_current_is_healthy() {
    let obj =
        reconciled(condition("Ready", "True", "ChildrenCurrent", "all 3 children are current", Some(2)));
    assert_eq!(says(&obj), ("Healthy", "all 3 children are current".into()));
}

#[test]
fn a_child_in_progress_is_progressing_with_its_message() {
    let obj = reconciled(condition(
        "Ready",
        "False",
        "ChildInProgress",
        "Deployment shop: 1 of 2 replicas available",
        Some(2),
    ));
    assert_eq!(
        says(&obj),
        ("Progressing", "ChildInProgress: Deployment shop: 1 of 2 replicas available".into())
    );
    for reason in ["ChildTerminating", "ChildNotFound", "ChildUnknown"] {
        let obj = reconciled(condition("Ready", "False", reason, "Secret shop-token: not found", Some(2)));
        assert_eq!(says(&obj), ("Progressing", format!("{reason}: Secret shop-token: not found")));
    }
    let obj = reconciled(condition("Ready", "Unknown", "ChildUnknown", "", Some(2)));
    assert_eq!(says(&obj), ("Progressing", "ChildUnknown".into()));
}

#[test]
fn a_failed_child_is_degraded() {
    let obj = reconciled(condition(
        "Ready",
        "False",
        "ChildFailed",
        "Deployment shop: ProgressDeadlineExceeded",
        Some(2),
    ));
    assert_eq!(says(&obj), ("Degraded", "ChildFailed: Deployment shop: ProgressDeadlineExceeded".into()));
}

#[test]
fn a_script_error_is_degraded_even_on_a_spec_the_operator_never_reconciled() {
    // Generation 3 failed: the controller wrote Reconciled False without an
    // observedGeneration and left status.observedGeneration at 2, Ready as it was.
    let message = "reconcile of WebApp default/shop threw: TypeError: cannot read 'port' of undefined";
    let obj = webapp(
        3,
        json!({
            "observedGeneration": 2,
            "conditions": [
                condition("Reconciled", "False", "ScriptError", message, None),
                condition("Ready", "True", "ChildrenCurrent", "all 3 children are current", Some(2)),
            ],
        }),
    );
    assert_eq!(says(&obj), ("Degraded", format!("ScriptError: {message}")));
    // Every reason the controller fails a reconcile with, on a current generation too.
    for reason in [
        "ScriptTimeout",
        "ScriptCrashed",
        "InvalidOutput",
        "ReconcileFailed",
        "UndeclaredKind",
        "AdoptionRefused",
        "ApplyFailed",
        "StatusFailed",
        "APIError",
        "DeletionStalled",
    ] {
        let mut obj = reconciled(condition("Ready", "True", "ChildrenCurrent", "no children", Some(2)));
        obj["status"]["conditions"][0] = condition("Reconciled", "False", reason, "it went wrong", None);
        assert_eq!(says(&obj), ("Degraded", format!("{reason}: it went wrong")));
    }
    // An object whose every reconcile failed has no observedGeneration at all.
    let obj =
        webapp(1, json!({"conditions": [condition("Reconciled", "False", "ScriptError", "boom", None)]}));
    assert_eq!(says(&obj), ("Degraded", "ScriptError: boom".into()));
}

#[test]
fn a_spec_the_operator_has_not_observed_yet_is_progressing() {
    let obj = webapp(
        3,
        json!({
            "observedGeneration": 2,
            "conditions": [
                condition("Reconciled", "True", "ReconcileSucceeded", "", Some(2)),
                condition("Ready", "True", "ChildrenCurrent", "its child is current", Some(2)),
            ],
        }),
    );
    // The number reads as a whole number, as gopher-lua and Lua 5.1 both print it.
    assert_eq!(says(&obj), ("Progressing", "waiting for the operator to observe generation 3".into()));
}

#[test]
fn a_condition_written_for_an_older_spec_is_not_believed() {
    // A Ready (set by the script with its own observedGeneration) older than the spec.
    let obj = reconciled(condition("Ready", "True", "Available", "2/2 replicas available", Some(1)));
    assert_eq!(says(&obj), ("Progressing", "waiting for the operator to observe generation 2".into()));
    // A failure of an older spec, the new one not reconciled yet: waiting, not Degraded.
    let obj = webapp(
        2,
        json!({
            "observedGeneration": 1,
            "conditions": [condition("Reconciled", "False", "ScriptError", "boom", Some(1))],
        }),
    );
    assert_eq!(says(&obj), ("Progressing", "waiting for the operator to observe generation 2".into()));
    // A stale Stalled does not degrade a Ready object.
    let mut obj = reconciled(condition("Ready", "True", "ChildrenCurrent", "its child is current", Some(2)));
    obj["status"]["conditions"].as_array_mut().expect("a list").push(condition(
        "Stalled",
        "True",
        "Stuck",
        "",
        Some(1),
    ));
    assert_eq!(says(&obj), ("Healthy", "its child is current".into()));
}

#[test]
fn an_object_being_deleted_is_progressing() {
    let mut obj = reconciled(condition("Ready", "True", "ChildrenCurrent", "no children", Some(2)));
    obj["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    assert_eq!(says(&obj), ("Progressing", "being deleted".into()));
    obj["status"]["conditions"][0] =
        condition("Reconciled", "False", "DeletionStalled", "the finalizer cannot run", None);
    assert_eq!(
        says(&obj),
        ("Progressing", "being deleted; DeletionStalled: the finalizer cannot run".into())
    );
}

#[test]
fn a_brand_new_object_waits_for_its_first_reconcile() {
    let mut obj = webapp(1, Value::Null);
    obj.as_object_mut().expect("an object").remove("status");
    assert_eq!(says(&obj), ("Progressing", "waiting for the first reconcile".into()));
    for status in [json!({}), json!({"conditions": []}), json!("junk"), json!({"conditions": "junk"})] {
        assert_eq!(says(&webapp(1, status)), ("Progressing", "waiting for the first reconcile".into()));
    }
}

#[test]
fn a_ready_the_script_sets_with_its_own_reasons_decides() {
    // examples/webapp sets Ready itself: True "Available", False "Progressing".
    let obj = reconciled(condition("Ready", "True", "Available", "2/2 replicas available", Some(2)));
    assert_eq!(says(&obj), ("Healthy", "2/2 replicas available".into()));
    let obj = reconciled(condition("Ready", "False", "Progressing", "0/2 replicas available", Some(2)));
    assert_eq!(says(&obj), ("Progressing", "Progressing: 0/2 replicas available".into()));
    // Only ChildFailed degrades: a script's own False reason is still moving.
    let obj = reconciled(condition("Ready", "False", "QuotaExceeded", "waiting for quota", Some(2)));
    assert_eq!(says(&obj), ("Progressing", "QuotaExceeded: waiting for quota".into()));
    // True without a message: the reason says it.
    let obj = reconciled(condition("Ready", "True", "Available", "", Some(2)));
    assert_eq!(says(&obj), ("Healthy", "Available".into()));
}

#[test]
fn kstatus_conditions_are_read_as_flux_reads_them() {
    let ready = condition("Ready", "True", "ChildrenCurrent", "no children", Some(2));
    let mut obj = reconciled(ready);
    obj["status"]["conditions"].as_array_mut().expect("a list").push(condition(
        "Stalled",
        "True",
        "BadConfig",
        "the plan cannot be met",
        Some(2),
    ));
    assert_eq!(says(&obj), ("Degraded", "BadConfig: the plan cannot be met".into()));
    obj["status"]["conditions"][2] = condition("Reconciling", "True", "Scaling", "2 of 3", Some(2));
    assert_eq!(says(&obj), ("Progressing", "Scaling: 2 of 3".into()));
}

#[test]
fn reconciled_without_ready_is_healthy() {
    let obj = webapp(
        2,
        json!({
            "observedGeneration": 2,
            "conditions": [condition("Reconciled", "True", "ReconcileSucceeded", "", Some(2))],
        }),
    );
    assert_eq!(says(&obj), ("Healthy", "reconciled".into()));
}

#[test]
fn malformed_fields_do_not_break_the_check() {
    let obj = reconciled(json!({"type": "Ready", "status": "False", "reason": {"x": 1}, "message": 7}));
    assert_eq!(says(&obj), ("Progressing", String::new()));
    let obj = webapp(
        2,
        json!({"observedGeneration": "2", "conditions": ["junk", 3, {"type": "Ready", "status": "True", "message": "up"}]}),
    );
    assert_eq!(says(&obj), ("Healthy", "up".into()));
}

/// Two kinds of one operator and a third no operator reconciles.
fn spec() -> OperatorSpec {
    let resource = |kind: &str, group: &str| {
        json!({
            "apiVersion": format!("{group}/v1"), "group": group, "version": "v1", "kind": kind,
            "plural": format!("{}s", kind.to_lowercase()), "singular": kind.to_lowercase(),
            "schema": {"type": "object"}, "statusSubresource": true,
        })
    };
    let controller = |index: u32, kind: &str, group: &str| {
        json!({
            "index": index, "name": kind.to_lowercase(),
            "for": {"apiVersion": format!("{group}/v1"), "kind": kind},
            "handlers": ["reconcile"],
        })
    };
    serde_json::from_value(json!({
        "resources": [
            resource("WebApp", "apps.example.com"),
            resource("Database", "data.example.com"),
            resource("Settings", "apps.example.com"),
        ],
        "controllers": [controller(0, "WebApp", "apps.example.com"), controller(1, "Database", "data.example.com")],
    }))
    .expect("a spec")
}

#[test]
fn the_patch_holds_one_check_per_reconciled_kind() {
    let checks = health_checks(&spec(), "argo").expect("checks");
    assert_eq!(
        checks.config_map,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "argocd-cm",
                "namespace": "argo",
                "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
            },
            "data": {
                "resource.customizations.health.apps.example.com_WebApp": HEALTH_LUA,
                "resource.customizations.health.data.example.com_Database": HEALTH_LUA,
            },
        })
    );
    assert_eq!(
        checks.notes,
        ["no Argo CD health check for apps.example.com/Settings: no operator(...) reconciles it"]
    );
}

#[test]
fn the_yaml_reads_back_as_the_patch_with_the_script_as_a_block() {
    let checks = health_checks(&spec(), DEFAULT_NAMESPACE).expect("checks");
    let yaml = checks.to_yaml().expect("yaml");
    let back: Value = ctop_core::yaml::from_str(&yaml).expect("YAML");
    assert_eq!(back, checks.config_map);
    assert!(
        yaml.contains("  resource.customizations.health.apps.example.com_WebApp: |\n    -- Argo CD health"),
        "{yaml}"
    );
    assert!(
        yaml.starts_with("# Argo CD health checks, generated by `ctop manifests --argocd-health`."),
        "{yaml}"
    );
}

#[test]
fn nothing_to_check_and_bad_namespaces_are_refused() {
    let mut spec = spec();
    spec.controllers.clear();
    let err = health_checks(&spec, DEFAULT_NAMESPACE).expect_err("no operator");
    assert_eq!(
        err.to_string(),
        "no Argo CD health check to write: ctop keeps conditions only on the kinds an operator(...) of the script \
         reconciles, and none reconciles WebApp or Database or Settings"
    );
    spec.resources.clear();
    let err = health_checks(&spec, DEFAULT_NAMESPACE).expect_err("no kinds");
    assert!(err.to_string().starts_with("the script defines no kind of its own"), "{err}");
    let err = health_checks(&self::spec(), "Argo CD").expect_err("not a DNS label");
    assert!(matches!(err, Error::BadName { field: "Argo CD namespace", .. }), "{err}");
}

#[test]
fn keys_follow_argo_cds_group_underscore_kind() {
    assert_eq!(
        health_key("apps.example.com", "WebApp"),
        "resource.customizations.health.apps.example.com_WebApp"
    );
}
