// `.invariant(name?, fn)`: what it registers, and the `invariant` dispatch the fuzzer of
// `ctop test --fuzz` calls (through ScriptHandlers::invariants on the Rust side).
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, webAppCr } from "./helpers.mjs";

const HEAD = `
import { resource, z, operator, apply, patch, remove, getObserved, listObserved, setStatus, setCondition, event,
  addFinalizer, removeFinalizer, Deployment, Service, ConfigMap } from "./ctop.js";
const webApp = resource("apps.example.com/v1", "WebApp", {
  spec: { image: z.string(), replicas: z.number().int().min(1).default(2) },
});
`;

const deployment = (name, replicas, owner = "u-1", extra = {}) => ({
  apiVersion: "apps/v1", kind: "Deployment",
  metadata: { name, namespace: "prod", uid: `d-${name}`, ...(owner && { ownerReferences: [
    { apiVersion: "apps.example.com/v1", kind: "WebApp", name: "shop", uid: owner, controller: true }] }) },
  spec: { replicas }, ...extra,
});

const check = (t, object = webAppCr(), observed = {}, index = 0) =>
  t.dispatch("invariant", index, { object, observed, env: {}, values: {} });

test("invariant(): names default to `invariant N`, kept in order, recorded in handlers and invariants", async () => {
  const t = await load({ script: `${HEAD}
    operator(webApp)
      .invariant(() => true)
      .invariant("named", () => true)
      .invariant(() => true)
      .reconcile(() => {});
    operator(Deployment).reconcile(() => {});` });
  const [app, plain] = t.registry().controllers;
  assert.deepEqual(app.invariants, ["invariant 1", "named", "invariant 3"]);
  assert.deepEqual(app.handlers, ["reconcile", "invariant"], "a handler declared after an invariant keeps it");
  assert.equal(plain.invariants, undefined, "no invariants, no field (the spec JSON is unchanged)");
  assert.deepEqual(plain.handlers, ["reconcile"]);
  assert.deepEqual(check(t, { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" } }, {}, 1),
    { violations: [] }, "a controller without invariants has nothing to violate");

  const { operator, Service } = t.sdk;
  const b = operator(Service);
  assert.throws(() => b.invariant("x"), /invariant: expected a function/);
  assert.throws(() => b.invariant("", () => true), /non-empty string/);
  assert.throws(() => b.invariant(3, () => true), /non-empty string/);
  b.invariant("same", () => true);
  assert.throws(() => b.invariant("same", () => true), /invariant "same" is declared twice/);
});

test("invariant dispatch: true/nothing hold; false, a message, messages, a throw and a bad return are violations", async () => {
  const t = await load({ script: `${HEAD}
    operator(webApp)
      .invariant("true", () => true)
      .invariant("nothing", () => {})
      .invariant("empty list", () => [])
      .invariant("false", () => false)
      .invariant("message", (cr) => cr.spec.image === "nginx:1.28" || \`image \${cr.spec.image}\`)
      .invariant("messages", () => ["one", "two"])
      .invariant("throws", () => { throw new RangeError("out of range"); })
      .invariant("throws a string", () => { throw "plain"; })
      .invariant("number", () => 3)
      .invariant("list of numbers", () => [1])
      .invariant("async", async () => { throw new Error("never seen"); })
      .invariant("after", () => "still runs");` });
  assert.deepEqual(check(t).violations, [
    { invariant: "false", message: "does not hold" },
    { invariant: "message", message: "image nginx:1.27" },
    { invariant: "messages", message: "one" },
    { invariant: "messages", message: "two" },
    { invariant: "throws", message: "out of range" },
    { invariant: "throws a string", message: "plain" },
    { invariant: "number", message: "returned number 3: an invariant returns true or nothing (holds), false, a message or a list of messages" },
    { invariant: "list of numbers", message: "returned a list that holds a non-string: an invariant returns true or nothing (holds), false, a message or a list of messages" },
    { invariant: "async", message: "returned a Promise: an invariant is synchronous (no async, no await)" },
    { invariant: "after", message: "still runs" },
  ]);
  assert.throws(() => check(t, null), /the input carries no object/);
});

test("invariants only read: every write throws a TypeError that becomes the violation", async () => {
  const writes = {
    apply: "apply(ConfigMap({ metadata: { name: 'c' } }))",
    patch: "patch(ConfigMap({ metadata: { name: 'c' } }))",
    remove: "remove(ConfigMap({ metadata: { name: 'c' } }))",
    setStatus: "setStatus(cr, { phase: 'x' })",
    setCondition: "setCondition(cr, { type: 'Ready', status: true })",
    event: "event(cr, { reason: 'Checked' })",
    addFinalizer: "addFinalizer(cr, 'a/b')",
    removeFinalizer: "removeFinalizer(cr, 'a/b')",
  };
  const t = await load({ script: `${HEAD}
    operator(webApp)${Object.entries(writes).map(([name, call]) => `
      .invariant(${JSON.stringify(name)}, (cr) => { ${call}; return true; })`).join("")}
      .invariant("TypeError", (cr) => { try { apply(cr); } catch (e) { return e instanceof TypeError || "not a TypeError"; } });` });
  const violations = check(t).violations;
  assert.deepEqual(violations.map((v) => v.invariant), Object.keys(writes));
  for (const v of violations) {
    assert.equal(v.message, `${v.invariant} cannot be called in an invariant: invariants only read `
      + "(observed.get/list/children, getObserved, listObserved) and return what does not hold");
  }
  // The dispatch is over: top-level calls are refused as before, and reconcile writes.
  assert.throws(() => t.sdk.apply(t.sdk.ConfigMap({ metadata: { name: "c" } })), /only be called inside a handler/);
});

test("observed: get, list and children read input.observed, as getObserved/listObserved do inside", async () => {
  const t = await load({ script: `${HEAD}
    operator(webApp)
      .manages(Deployment, Service)
      .invariant("get", (cr, observed) => {
        const d = observed.get(Deployment, cr.metadata.name);
        if (!d) return \`no Deployment \${cr.metadata.name}\`;
        return d.spec.replicas === cr.spec.replicas || \`replicas \${d.spec.replicas} != \${cr.spec.replicas}\`;
      })
      .invariant("getObserved", (cr) => getObserved(Deployment, "shop") === undefined ? "none" : true)
      .invariant("other namespace", (cr, observed) => observed.get(Deployment, "shop", "dev") ? "seen in dev" : true)
      .invariant("list", (cr, observed) => {
        const n = observed.list(Deployment, { ownedBy: cr }).length;
        return n === listObserved(Deployment, { ownedBy: cr }).length && \`\${n} owned\`;
      })
      .invariant("children", (cr, observed) => observed.children.map((c) => \`\${c.kind} \${c.metadata.name}\`))
      .invariant("the CR is a copy", (cr) => { cr.spec.image = "changed"; return true; })
      .invariant("defaults", (cr) => cr.spec.image === "nginx:1.27" || \`image \${cr.spec.image}\`);` });
  const observed = {
    "apps/v1/Deployment": [deployment("shop", 1), deployment("other", 2, "u-2"), deployment("loose", 1, null)],
    "v1/Service": [{ apiVersion: "v1", kind: "Service", metadata: { name: "shop", namespace: "prod",
      ownerReferences: [{ apiVersion: "apps.example.com/v1", kind: "WebApp", name: "shop", uid: "u-1", controller: true }] } },
    { apiVersion: "v1", kind: "Service", metadata: { name: "owned-not-controlled", namespace: "prod",
      ownerReferences: [{ apiVersion: "apps.example.com/v1", kind: "WebApp", name: "shop", uid: "u-1" }] } },
    // A child in another namespace: no owner reference, the applier's annotation.
    { apiVersion: "v1", kind: "Service", metadata: { name: "copy", namespace: "dev",
      annotations: { "ctop.dev/owner": "WebApp.apps.example.com prod/shop" } } }],
  };
  assert.deepEqual(check(t, webAppCr(), observed).violations, [
    { invariant: "get", message: "replicas 1 != 2" },
    { invariant: "list", message: "1 owned" },
    { invariant: "children", message: "Deployment shop" },
    { invariant: "children", message: "Service shop" },
    { invariant: "children", message: "Service copy" },
  ]);
  assert.deepEqual(check(t, webAppCr(), {}).violations, [
    { invariant: "get", message: "no Deployment shop" },
    { invariant: "getObserved", message: "none" },
    { invariant: "list", message: "0 owned" },
  ]);
  const noUid = webAppCr();
  delete noUid.metadata.uid;
  assert.deepEqual(check(t, noUid, observed).violations.filter((v) => v.invariant === "children"), [],
    "children are matched by uid: a CR without one has none");
});
