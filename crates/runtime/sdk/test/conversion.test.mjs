// `res.addVersion(name, {...})`: what it registers, and the `convert` dispatch a conversion
// webhook calls (through ScriptHandlers::convert on the Rust side).
import { test } from "node:test";
import assert from "node:assert/strict";
import { load } from "./helpers.mjs";

const HEAD = `
import { resource, z, operator, apply, now, fetch, randomString, listObserved, ConfigMap } from "./ctop.js";
// The hub, v2: a structured schedule.
export const cronTab = resource("batch.example.com/v2", "CronTab", {
  spec: {
    schedule: z.object({ minute: z.string().default("*"), hour: z.string().default("*") }),
    suspend: z.boolean().default(false),
  },
  status: { lastScheduleTime: z.string() },
  printerColumns: [{ name: "Minute", jsonPath: ".spec.schedule.minute" }],
});
// v1: the schedule as one string "minute hour".
export const cronTabV1 = cronTab.addVersion("v1", {
  spec: { schedule: z.string(), suspend: z.boolean().default(false) },
  deprecated: "batch.example.com/v1 CronTab is deprecated; use batch.example.com/v2",
  storage: true,
  toHub: (o) => {
    const [minute, hour] = o.spec.schedule.split(" ");
    return { ...o, spec: { ...o.spec, schedule: { minute, hour } } };
  },
  fromHub: (o) => ({ ...o, spec: { ...o.spec, schedule: \`\${o.spec.schedule.minute} \${o.spec.schedule.hour}\` } }),
});
`;

const v1 = (schedule = "*/5 3", extra = {}) => ({
  apiVersion: "batch.example.com/v1", kind: "CronTab",
  metadata: { name: "nightly", namespace: "prod", uid: "u-1", resourceVersion: "7", labels: { a: "b" } },
  spec: { schedule, suspend: true }, status: { lastScheduleTime: "2026-01-01T00:00:00Z" }, ...extra,
});

const convert = (t, desiredAPIVersion, objects) => t.dispatch("convert", 0, { desiredAPIVersion, objects, env: {}, values: {} });

test("addVersion: the registry lists every version, the hub first; storage, deprecation and columns per version", async () => {
  const t = await load({ script: HEAD });
  const [r] = t.registry().resources;
  assert.equal(r.apiVersion, "batch.example.com/v2", "the hub stays the resource's version");
  assert.deepEqual(r.versions.map((v) => [v.name, v.served, v.storage]), [["v2", true, false], ["v1", true, true]]);
  assert.deepEqual(r.versions[1].deprecated, { warning: "batch.example.com/v1 CronTab is deprecated; use batch.example.com/v2" });
  assert.equal(r.versions[0].deprecated, undefined);
  assert.equal(r.versions[1].schema.properties.spec.properties.schedule.type, "string");
  assert.equal(r.versions[0].schema.properties.spec.properties.schedule.type, "object");
  assert.deepEqual(r.versions[1].printerColumns, r.printerColumns, "a version without columns shows the hub's");
  assert.ok(r.versions[1].schema.properties.status.properties.lastScheduleTime, "a version without status shares the hub's");
});

test("one version: nothing new in the registry (the one-version form is unchanged)", async () => {
  const t = await load({ script: `import { resource, z } from "./ctop.js";
    resource("apps.example.com/v1", "WebApp", { spec: { image: z.string() } });` });
  const [r] = t.registry().resources;
  assert.equal(r.versions, undefined);
  assert.equal(r.deprecated, undefined);
});

test("addVersion refuses bad names, repeats, missing functions, unknown options and two storage versions", async () => {
  const t = await load({ script: HEAD });
  const { resource, z } = t.sdk;
  const r = resource("batch.example.com/v1", "Other", { spec: { a: z.string() } });
  const fns = { toHub: (o) => o, fromHub: (o) => o };
  assert.throws(() => r.addVersion("version2", fns), /named like v1, v2beta1/);
  assert.throws(() => r.addVersion("v1", fns), /already has version v1/);
  assert.throws(() => r.addVersion("v2", { toHub: (o) => o }), /fromHub must be a function/);
  assert.throws(() => r.addVersion("v2", { ...fns, stored: true }), /unknown option stored/);
  assert.throws(() => r.addVersion("v2", { ...fns, deprecated: "" }), /deprecated must be/);
  r.addVersion("v2", { ...fns, storage: true });
  assert.throws(() => r.addVersion("v3", { ...fns, storage: true }), /v2 is already the storage version/);
});

test("convert: through the hub both ways, metadata kept, apiVersion set, objects already there untouched", async () => {
  const t = await load({ script: HEAD });
  const { convertedObjects: [hub] } = convert(t, "batch.example.com/v2", [v1()]);
  assert.equal(hub.apiVersion, "batch.example.com/v2");
  assert.deepEqual(hub.spec.schedule, { minute: "*/5", hour: "3" });
  assert.deepEqual(hub.metadata, v1().metadata);
  assert.deepEqual(hub.status, v1().status);
  const { convertedObjects: [back, same] } = convert(t, "batch.example.com/v1", [hub, v1("1 2")]);
  assert.deepEqual(back, v1());
  assert.deepEqual(same, v1("1 2"));
});

test("convert: a conversion may change labels and annotations, no other metadata", async () => {
  const t = await load({ script: `${HEAD}
    cronTab.addVersion("v3", {
      toHub: (o) => ({ ...o, metadata: { ...o.metadata, name: "renamed", labels: { moved: "yes" } } }),
      fromHub: (o) => ({ ...o, metadata: { annotations: { "example.com/lost": "x" } } }),
    });` });
  const obj = { ...v1(), apiVersion: "batch.example.com/v3", spec: { schedule: { minute: "1", hour: "2" } } };
  const { convertedObjects: [hub] } = convert(t, "batch.example.com/v2", [obj]);
  assert.equal(hub.metadata.name, "nightly", "the name is the object's, whatever the conversion returned");
  assert.deepEqual(hub.metadata.labels, { moved: "yes" });
  const { convertedObjects: [v3] } = convert(t, "batch.example.com/v3", [hub]);
  assert.deepEqual(v3.metadata, { ...hub.metadata, annotations: { "example.com/lost": "x" } });
});

test("convert: a throw, an invalid result and an unknown version fail with the object, the direction and the cause", async () => {
  const t = await load({ script: HEAD });
  assert.throws(() => convert(t, "batch.example.com/v2", [v1(null)]),
    /converting CronTab prod\/nightly from v1 to v2 \(v1\.toHub\): .*split/);
  const bad = { ...v1(), apiVersion: "batch.example.com/v2", spec: { schedule: "not structured" } };
  assert.throws(() => convert(t, "batch.example.com/v2", [{ ...bad, spec: { schedule: { minute: "1", hour: "2" } } }, v1(42)]),
    /from v1 to v2/);
  assert.throws(() => convert(t, "batch.example.com/v9", [v1()]), /has no version batch\.example\.com\/v9 \(it has v2, v1\)/);
  assert.throws(() => convert(t, "other.example.com/v2", [v1()]), /declares no resource CronTab\.other\.example\.com/);
  const t2 = await load({ script: `${HEAD}
    cronTab.addVersion("v3", { toHub: (o) => ({ ...o, spec: { schedule: 5 } }), fromHub: () => null });` });
  const v3 = { ...v1(), apiVersion: "batch.example.com/v3" };
  assert.throws(() => convert(t2, "batch.example.com/v2", [v3]), /the v2 object it returned is invalid: .*schedule/);
  assert.throws(() => convert(t2, "batch.example.com/v3", [{ ...v1(), apiVersion: "batch.example.com/v2", spec: { schedule: {} } }]),
    /must return the converted object \(\{spec, status\?\}\), got null/);
});

test("convert: a conversion is pure: clock, randomness, fetch, reads and writes throw", async () => {
  for (const call of ["now()", "randomString()", 'fetch("https://example.com")', "listObserved(ConfigMap)",
    'apply(ConfigMap({ metadata: { name: "x" } }))']) {
    const t = await load({ script: `${HEAD}
      cronTab.addVersion("v3", { toHub: (o) => { ${call}; return o; }, fromHub: (o) => o });` });
    const v3 = { ...v1(), apiVersion: "batch.example.com/v3" };
    assert.throws(() => convert(t, "batch.example.com/v2", [v3]), /cannot be called in a conversion: a conversion is a pure function/, call);
    assert.equal(t.host.fetches.length, 0, "nothing was fetched");
  }
});
