// The admission handlers as the webhook server calls them: `.mutate(fn, { defaults: true })`
// fills in the schema's defaults before the handler runs; without it the object is as sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load, webAppCr } from "./helpers.mjs";

test("mutate with { defaults: true } sees and returns the schema's defaults", async () => {
  const t = await load({ script: `
    import { resource, z, operator } from "./ctop.js";
    const webApp = resource("apps.example.com/v1", "WebApp", {
      spec: { image: z.string(), replicas: z.number().int().min(1).default(2), tls: z.boolean().default(false) },
    });
    operator(webApp).mutate((cr) => { cr.metadata.labels = { replicas: String(cr.spec.replicas) }; }, { defaults: true });
    operator(webApp, { name: "plain" }).mutate((cr) => { cr.metadata.labels = { replicas: String(cr.spec.replicas) }; });
    operator(webApp, { name: "returns" }).mutate((cr) => ({ ...cr, metadata: { ...cr.metadata, labels: { x: "y" } } }), { defaults: true });` });
  const withDefaults = t.dispatch("mutate", 0, { object: webAppCr({ image: "a" }) });
  assert.deepEqual(withDefaults.object.spec, { image: "a", replicas: 2, tls: false });
  assert.deepEqual(withDefaults.object.metadata.labels, { replicas: "2" });
  const kept = t.dispatch("mutate", 0, { object: webAppCr({ image: "a", replicas: 3 }) });
  assert.deepEqual(kept.object.spec, { image: "a", replicas: 3, tls: false }, "given values win over defaults");
  const plain = t.dispatch("mutate", 1, { object: webAppCr({ image: "a" }) });
  assert.deepEqual(plain.object.spec, { image: "a" }, "no defaults unless asked");
  assert.deepEqual(plain.object.metadata.labels, { replicas: "undefined" });
  const returned = t.dispatch("mutate", 2, { object: webAppCr({ image: "a" }) });
  assert.deepEqual(returned.object.spec, { image: "a", replicas: 2, tls: false });
  assert.deepEqual(returned.object.metadata.labels, { x: "y" });
});

test("mutate options are checked", async () => {
  await assert.rejects(
    load({ script: `
      import { resource, z, operator } from "./ctop.js";
      const r = resource("apps.example.com/v1", "WebApp", { spec: { image: z.string() } });
      operator(r).mutate(() => {}, "defaults");` }),
    /mutate: options must be an object/,
  );
});
