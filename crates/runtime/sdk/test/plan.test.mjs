// The WebApp example (examples/webapp.ts) runs unchanged (apart from the import specifier).
import { test } from "node:test";
import assert from "node:assert/strict";
import { golden, load, planScript, webAppCr } from "./helpers.mjs";

const EMPTY = { applies: [], patches: [], conditions: [], events: [], finalizers: { add: [], remove: [] } };

test("the WebApp example registers the expected __ct_operator", async () => {
  const t = await load({ script: planScript() });
  assert.deepEqual(t.registry(), golden("webapp.operator.json"));
});

test("a dispatched reconcile of the WebApp example returns its status and Result.ok()", async () => {
  const t = await load({ script: planScript() });
  const out = t.dispatch("reconcile", 0, { object: webAppCr(), observed: {}, env: {}, values: {} });
  assert.deepEqual(out, { ...EMPTY, status: { ready: true, phase: "Running" }, result: { type: "ok" } });
  // No Secret in the observed map and none declared: the token came from randomString,
  // and the SDK says why getObserved found nothing.
  assert.deepEqual(t.host.logs, [{ level: "warn", fields: {},
    message: 'v1/Secret is not in manages/reads/watches of operator "webapp", so nothing of it is observed' }]);
});

test("the lowercase `secret` global finds the observed Secret in the CR's namespace", async () => {
  let calls = 0;
  const host = (await import("./helpers.mjs")).fakeHost();
  const rs = host.randomString;
  host.randomString = (n) => (calls++, rs(n));
  const t = await load({ script: planScript(), host });
  const token = { apiVersion: "v1", kind: "Secret", metadata: { name: "shop-token", namespace: "prod" }, data: { token: "dG9r" } };
  const other = { ...token, metadata: { name: "shop-token", namespace: "dev" } };
  const out = t.dispatch("reconcile", 0, { object: webAppCr(), observed: { "v1/Secret": [other, token] } });
  assert.equal(calls, 0, "randomString must not be called when the Secret exists");
  assert.deepEqual(out.status, { ready: true, phase: "Running" });
  assert.equal(globalThis.secret.kind, "Secret");
  assert.equal(globalThis.secret.apiVersion, "v1");
});
