//! `ScriptHandlers::invariants` in real QuickJS with the embedded SDK: a script's
//! `.invariant(...)` rules are registered in the spec and checked on an object with the
//! observed objects the caller passes, each violation typed.

use std::sync::Arc;
use std::time::Duration;

use ctop_runtime::{InvariantViolation, Limits, Script, ScriptHandlers};
use serde_json::{Value, json};

const OPERATOR: &str = r#"import {
  resource, z, operator, apply, setStatus, getObserved, listObserved, Result, Deployment, Service, ConfigMap,
} from "ctop";

const webApp = resource("apps.example.com/v1", "WebApp", {
  scope: "Namespaced",
  spec: { image: z.string(), replicas: z.number().int().min(1).default(2) },
  status: { phase: z.string() },
});

operator(webApp)
  .manages(Deployment, Service)
  .reconcile(() => Result.ok())
  .invariant("deployment follows spec", (cr, observed) => {
    const d = observed.get(Deployment, cr.metadata.name);
    if (!d) return `no Deployment ${cr.metadata.name}`;
    return d.spec?.replicas === cr.spec.replicas || `replicas ${d.spec?.replicas} != ${cr.spec.replicas}`;
  })
  .invariant((cr) => cr.spec.image !== "bad:false" && cr.spec.image !== "bad:all")
  .invariant("messages", (cr) => cr.spec.image === "bad:all" ? ["first", "second"] : [])
  .invariant("throws", (cr) => {
    if (cr.spec.image === "bad:all") throw new Error(`cannot check ${cr.metadata.name}`);
  })
  .invariant("applies", (cr) => {
    if (cr.spec.image === "bad:all") apply(ConfigMap({ metadata: { name: "x" } }));
  })
  .invariant("sets status", (cr) => {
    if (cr.spec.image === "bad:all") setStatus(cr, { phase: "x" });
  })
  .invariant("getObserved", (cr) => getObserved(Service, cr.metadata.name) !== undefined || "no Service")
  .invariant("children", (cr, observed) => {
    const kinds = observed.children.map((c) => c.kind).sort().join(",");
    return kinds === listObserved(Service, { ownedBy: cr }).concat(listObserved(Deployment, { ownedBy: cr }))
      .map((c) => c.kind).sort().join(",") || `children ${kinds}`;
  });

operator(Deployment, { name: "plain" }).reconcile(() => Result.ok());
"#;

fn handlers(files: &[(&str, &str)], limits: Limits) -> ScriptHandlers {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    let script = Script::from_dir(dir.path(), "operator.ct", 1, limits).expect("the script loads");
    ScriptHandlers::new(Arc::new(script), &json!({}), &json!({}))
}

fn web_app(image: &str) -> Value {
    json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
           "metadata": {"name": "shop", "namespace": "prod", "uid": "u-1", "generation": 1},
           "spec": {"image": image}})
}

/// A child of `shop` (controller owner reference to uid `u-1`).
fn child(api_version: &str, kind: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": "shop", "namespace": "prod", "uid": format!("{kind}-1"),
                        "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp",
                                             "name": "shop", "uid": "u-1", "controller": true}]},
           "spec": spec})
}

fn observed(replicas: u32) -> Value {
    json!({
        "apps/v1/Deployment": [child("apps/v1", "Deployment", json!({"replicas": replicas}))],
        "v1/Service": [child("v1", "Service", json!({}))],
    })
}

fn violation(invariant: &str, message: &str) -> InvariantViolation {
    InvariantViolation { invariant: invariant.into(), message: message.into() }
}

#[test]
fn the_spec_names_the_invariants() {
    let h = handlers(&[("operator.ct", OPERATOR)], Limits::default());
    let c = &h.script().spec().controllers;
    assert_eq!(c[0].handlers, ["reconcile", "invariant"]);
    assert_eq!(
        c[0].invariants,
        [
            "deployment follows spec",
            "invariant 2",
            "messages",
            "throws",
            "applies",
            "sets status",
            "getObserved",
            "children"
        ]
    );
    assert!(c[1].invariants.is_empty() && c[1].handlers == ["reconcile"]);
    let plain = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
    assert_eq!(h.invariants(1, &plain, &json!({})), Ok(vec![]), "no invariants, none violated");
}

#[test]
fn every_invariant_holds_on_a_caught_up_object() {
    let h = handlers(&[("operator.ct", OPERATOR)], Limits::default());
    // The spec's default (replicas 2) is what the invariant compares with.
    assert_eq!(h.invariants(0, &web_app("nginx:1.27"), &observed(2)), Ok(vec![]));
}

#[test]
fn false_messages_throws_and_writes_are_violations() {
    let h = handlers(&[("operator.ct", OPERATOR)], Limits::default());
    assert_eq!(
        h.invariants(0, &web_app("bad:false"), &observed(2)),
        Ok(vec![violation("invariant 2", "does not hold")])
    );
    let refused = |what: &str| {
        format!(
            "{what} cannot be called in an invariant: invariants only read \
             (observed.get/list/children, getObserved, listObserved) and return what does not hold"
        )
    };
    assert_eq!(
        h.invariants(0, &web_app("bad:all"), &observed(3)),
        Ok(vec![
            violation("deployment follows spec", "replicas 3 != 2"),
            violation("invariant 2", "does not hold"),
            violation("messages", "first"),
            violation("messages", "second"),
            violation("throws", "cannot check shop"),
            violation("applies", &refused("apply")),
            violation("sets status", &refused("setStatus")),
        ])
    );
}

#[test]
fn lookups_and_children_read_the_observed_objects_given() {
    let h = handlers(&[("operator.ct", OPERATOR)], Limits::default());
    assert_eq!(
        h.invariants(0, &web_app("nginx:1.27"), &json!({})),
        Ok(vec![
            violation("deployment follows spec", "no Deployment shop"),
            violation("getObserved", "no Service")
        ])
    );
    // A Service owned by another WebApp is no child of this one, and not found by name elsewhere.
    let mut other = observed(2);
    other["v1/Service"][0]["metadata"]["ownerReferences"][0]["uid"] = json!("u-2");
    other["v1/Service"][0]["metadata"]["namespace"] = json!("dev");
    assert_eq!(
        h.invariants(0, &web_app("nginx:1.27"), &other),
        Ok(vec![violation("getObserved", "no Service")])
    );
    // `children` is what has a controller reference to the CR's uid, of every observed kind.
    let mut loose = observed(2);
    loose["v1/Service"][0]["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    assert_eq!(
        h.invariants(0, &web_app("nginx:1.27"), &loose),
        Ok(vec![violation("children", "children Deployment")])
    );
}

#[test]
fn a_stuck_invariant_or_a_bad_output_is_an_error() {
    let stuck = r#"import { resource, z, operator } from "ctop";
const r = resource("x.example.com/v1", "Thing", { spec: { n: z.number() } });
operator(r).reconcile(() => {}).invariant("loops", () => { for (;;) {} });
operator(r, { name: "second" }).invariant(() => true);
// A script that replaces the SDK's entry point answers what it likes.
const sdk = globalThis.__ct_dispatch;
globalThis.__ct_dispatch = (h, i, input) => i === 1 ? { violations: [{ invariant: "x" }] } : sdk(h, i, input);
"#;
    let limits = Limits { timeout: Duration::from_millis(300), ..Limits::default() };
    let h = handlers(&[("operator.ct", stuck)], limits);
    let thing = json!({"apiVersion": "x.example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"n": 1}});
    let e = h.invariants(0, &thing, &json!({})).expect_err("the deadline stops it");
    assert!(e.starts_with("invariant failed: ") && e.contains("deadline"), "{e}");
    let e = h.invariants(1, &thing, &json!({})).expect_err("no message");
    assert_eq!(
        e,
        "invariant: the output is not {violations: [{invariant, message}]}: missing field `message`"
    );
}
