// Every SDK function, through __ct_operator and __ct_dispatch as the Rust side uses them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeHost, load, webAppCr } from "./helpers.mjs";

const WEBAPP = `
import { resource, z } from "./ctop.js";
export const webApp = resource("apps.example.com/v1", "WebApp", {
  spec: { image: z.string(), replicas: z.number().int().min(1).default(1), tls: z.boolean().default(false) },
  status: { ready: z.boolean(), phase: z.enum(["Pending", "Running"]), url: z.string() },
});
globalThis.webApp = webApp;
`;

/** Load the SDK plus a WebApp resource and `body` (which may use every export and `webApp`). */
const withOperator = (body, opts = {}) =>
  load({ ...opts, script: `${WEBAPP}\nimport * as ct from "./ctop.js";\nconst { ${[
    "operator", "apply", "patch", "remove", "getObserved", "listObserved", "getStatus", "setStatus", "setCondition", "event",
    "addFinalizer", "removeFinalizer", "randomString", "fetch", "log", "Env", "Values", "Result", "now", "kindOf",
    "Secret", "ConfigMap", "Deployment", "Service", "Namespace", "ClusterRole", "Job",
  ].join(", ")} } = ct;\n${body}` });

const secret = (name, namespace = "prod", extra = {}) =>
  ({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace, labels: { app: name } }, ...extra });

test("resource(): names, scope, printer columns, short names and the CRD schema", async () => {
  const t = await load({ script: `
    import { resource, z } from "./ctop.js";
    resource("org.example.com/v1beta1", "Policy", { scope: "Cluster", shortNames: ["pol"], plural: "policies",
      printerColumns: [{ name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp", priority: 1 },
                       { name: "Mode", jsonPath: ".spec.mode", description: "mode" }],
      spec: z.object({ mode: z.string().optional() }),
      status: { count: z.int(), conditions: z.array(z.any()) } });
    resource("org.example.com/v1", "Box", {});
    resource("org.example.com/v1", "Class", { singular: "klass" });` });
  const [policy, box, klass] = t.registry().resources;
  assert.deepEqual({ ...policy, schema: undefined }, {
    apiVersion: "org.example.com/v1beta1", group: "org.example.com", version: "v1beta1", kind: "Policy",
    plural: "policies", singular: "policy", scope: "Cluster", shortNames: ["pol"], schema: undefined,
    printerColumns: [{ name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp", priority: 1 },
      { name: "Mode", type: "string", jsonPath: ".spec.mode", description: "mode" }],
    statusSubresource: true,
  });
  assert.equal(policy.schema.required, undefined, "spec without required fields is not required");
  assert.deepEqual(policy.schema.properties.status.properties.count, { type: "integer" });
  assert.equal(policy.schema.properties.status.required, undefined, "status fields are never required");
  assert.deepEqual(policy.schema.properties.status.properties.conditions,
    { type: "array", items: { "x-kubernetes-preserve-unknown-fields": true } }, "a declared conditions field wins");
  assert.deepEqual(box.schema.properties.spec, { type: "object", "x-kubernetes-preserve-unknown-fields": true });
  assert.equal(box.scope, "Namespaced");
  assert.deepEqual([box.plural, klass.plural, klass.singular], ["boxes", "classes", "klass"]);

  const { resource, z } = t.sdk;
  assert.throws(() => resource("v1", "X", {}), /dotted group/);
  assert.throws(() => resource("a.b/v1", "lower", {}), /UpperCamelCase/);
  assert.throws(() => resource("a.b/v1", "X", { scope: "Global" }), /scope/);
  assert.throws(() => resource("org.example.com/v1", "Box", {}), /declared twice/);
  assert.throws(() => resource("a.b/v1", "Y", { spec: { a: 1 } }), /not a z schema/);
  assert.throws(() => resource("a.b/v1", "Z", { printerColumns: [{ name: "n", jsonPath: "spec.x" }] }), /printer column/);
  assert.equal(z.string().parse("x"), "x");
});

test("kind handles build full objects and name kinds; lowercase globals; kindOf", async () => {
  const t = await load();
  const { Secret, Deployment, Namespace, ClusterRole, kindOf } = t.sdk;
  assert.deepEqual(Secret({ metadata: { name: "s" }, stringData: { a: "b" } }),
    { apiVersion: "v1", kind: "Secret", metadata: { name: "s" }, stringData: { a: "b" } });
  assert.deepEqual(Deployment({ kind: "Wrong", metadata: { name: "d" }, spec: { replicas: 1 } }),
    { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d" }, spec: { replicas: 1 } });
  assert.deepEqual(Namespace({}), { apiVersion: "v1", kind: "Namespace", metadata: {} });
  assert.deepEqual({ ...Deployment }, { apiVersion: "apps/v1", kind: "Deployment", group: "apps", version: "v1",
    plural: "deployments", namespaced: true });
  assert.equal(Namespace.namespaced, false);
  assert.equal(ClusterRole.group, "rbac.authorization.k8s.io");
  assert.equal(t.sdk.Ingress.plural, "ingresses");
  assert.equal(t.sdk.NetworkPolicy.plural, "networkpolicies");
  assert.equal(t.sdk.Endpoints.plural, "endpoints");
  assert.equal(JSON.stringify({ k: Secret }), '{"k":{"apiVersion":"v1","kind":"Secret"}}');
  for (const name of ["secret", "configMap", "deployment", "statefulSet", "persistentVolumeClaim", "namespace", "job", "cronJob"]) {
    assert.equal(typeof globalThis[name], "function", name);
    assert.equal(globalThis[name].kind, name[0].toUpperCase() + name.slice(1));
  }
  const cert = kindOf("cert-manager.io/v1", "Certificate");
  assert.deepEqual(cert({ metadata: { name: "c" } }), { apiVersion: "cert-manager.io/v1", kind: "Certificate", metadata: { name: "c" } });
  assert.equal(cert.plural, "certificates");
  assert.equal(kindOf("x.io/v1", "Thing", { namespaced: false, plural: "thingz" }).plural, "thingz");
  assert.throws(() => Secret("x"), TypeError);
});

test("operator(): the builder fills the controller entry exactly", async () => {
  const t = await withOperator(`
    const cert = kindOf("cert-manager.io/v1", "Certificate");
    operator(webApp)
      .every("1h30m")
      .manages(Deployment, Service, [Secret, Deployment])
      .reads(ConfigMap, "Namespace", "cert-manager.io/v1/Issuer", { apiVersion: "v1", kind: "Pod" })
      .watches(ConfigMap, (cm) => cm.metadata.name, { namespace: "prod", labelSelector: { app: "web", tier: "fe" },
        predicate: { and: ["GenerationChanged", { or: ["LabelChanged", "AnnotationChanged"] }] } })
      .watches(cert, { labelSelector: "app=web" })
      .watches(Secret, null, { predicate: "ResourceVersionChanged" })
      .permission({ apiGroups: [""], resources: ["events"], verbs: ["create"] },
                  [{ apiGroups: "apps", resources: "deployments/scale", verbs: ["get", "update"], resourceNames: "web" }])
      .reconcile(() => {}).mutate(() => {}).validate(() => {}).onStart(() => {}).finalize(() => {});
    operator(webApp).finalize(() => {}, "example.com/cleanup");
    operator(webApp, { name: "webs" }).every(90, { always: true }).finalize(() => {}, { name: "x.io/y" });
    operator(Deployment).every(0.5).finalize(() => {});
    operator(Namespace).finalize(() => {});`);
  const [a, b, c, d, e] = t.registry().controllers;
  assert.deepEqual(a, {
    index: 0, name: "webapp", for: { apiVersion: "apps.example.com/v1", kind: "WebApp" }, every: "1h30m",
    manages: [{ apiVersion: "apps/v1", kind: "Deployment" }, { apiVersion: "v1", kind: "Service" }, { apiVersion: "v1", kind: "Secret" }],
    reads: [{ apiVersion: "v1", kind: "ConfigMap" }, { apiVersion: "v1", kind: "Namespace" },
      { apiVersion: "cert-manager.io/v1", kind: "Issuer" }, { apiVersion: "v1", kind: "Pod" }],
    watches: [
      { kind: { apiVersion: "v1", kind: "ConfigMap" }, mapper: true, namespace: "prod", labelSelector: "app=web,tier=fe",
        predicate: { and: ["GenerationChanged", { or: ["LabelChanged", "AnnotationChanged"] }] } },
      { kind: { apiVersion: "cert-manager.io/v1", kind: "Certificate" }, mapper: false, labelSelector: "app=web" },
      { kind: { apiVersion: "v1", kind: "Secret" }, mapper: false, predicate: "ResourceVersionChanged" },
    ],
    permissions: [
      { apiGroups: [""], resources: ["events"], verbs: ["create"] },
      { apiGroups: ["apps"], resources: ["deployments/scale"], verbs: ["get", "update"], resourceNames: ["web"] },
    ],
    finalizer: "webapps.apps.example.com/finalizer",
    handlers: ["reconcile", "finalize", "onStart", "validate", "mutate"],
  });
  assert.deepEqual([b.index, b.name, b.finalizer, b.every, b.handlers], [1, "webapp-2", "example.com/cleanup", null, ["finalize"]]);
  assert.deepEqual([c.name, c.every, c.alwaysRun, c.finalizer], ["webs", "90s", true, "x.io/y"]);
  assert.equal(a.alwaysRun, undefined, "skipping unchanged reconciles is the default");
  assert.deepEqual([d.name, d.for, d.every, d.finalizer], ["deployment", { apiVersion: "apps/v1", kind: "Deployment" }, "500ms", "deployments.apps/finalizer"]);
  assert.equal(e.finalizer, "namespaces/finalizer");

  const { operator, Secret } = t.sdk;
  const wa = globalThis.webApp;
  assert.throws(() => operator(wa).every("5 minutes"), /invalid duration/);
  assert.throws(() => operator(wa).every("5m", { alwys: true }), /unknown option alwys/);
  assert.throws(() => operator(wa).every("5m", { always: "yes" }), /always must be true or false/);
  assert.throws(() => operator(wa).watches(Secret, () => [], { predicate: "Sometimes" }), /predicate/);
  assert.throws(() => operator(wa).watches(Secret, "name"), /mapper must be a function/);
  assert.throws(() => operator(wa).reconcile(() => {}).reconcile(() => {}), /reconcile is already set/);
  assert.throws(() => operator(wa).reconcile("fn"), /expected a function/);
  assert.throws(() => operator(wa).permission({ resources: ["x"], verbs: ["get"] }), /apiGroups/);
  assert.throws(() => operator(wa).manages(42), /kind handle/);
  assert.throws(() => operator(wa, { name: "webs" }), /used twice/);
});

test("reconcile: apply with namespace defaulting, replacement, CR schema checks; patch", async () => {
  const t = await withOperator(`
    operator(webApp).manages(Secret, Deployment, Namespace).reconcile((cr) => {
      apply(Secret({ metadata: { name: cr.metadata.name + "-a" }, stringData: { v: "1" } }));
      apply(Secret({ metadata: { name: cr.metadata.name + "-a" }, stringData: { v: "2" } }));
      apply(Secret({ metadata: { name: "elsewhere", namespace: "other" } }));
      apply(Namespace({ metadata: { name: "team" } }));
      apply({ apiVersion: "cert-manager.io/v1", kind: "Certificate", metadata: { name: "c" } });
      const child = apply(webApp({ metadata: { name: "child" }, spec: { image: "x" } }));
      child.metadata.name = "mutated after apply";
      patch(ConfigMap({ metadata: { name: "shared" }, data: { k: "v" } }));
    });`);
  const out = t.dispatch("reconcile", 0, { object: webAppCr() });
  assert.deepEqual(out.applies, [
    { apiVersion: "v1", kind: "Secret", metadata: { name: "shop-a", namespace: "prod" }, stringData: { v: "2" } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "elsewhere", namespace: "other" } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } },
    { apiVersion: "cert-manager.io/v1", kind: "Certificate", metadata: { name: "c", namespace: "prod" } },
    { apiVersion: "apps.example.com/v1", kind: "WebApp", metadata: { name: "child", namespace: "prod" }, spec: { image: "x" } },
  ]);
  assert.deepEqual(out.patches, [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "shared", namespace: "prod" }, data: { k: "v" } }]);

  const bad = await withOperator(`
    operator(webApp).reconcile(() => { apply(webApp({ metadata: { name: "c" }, spec: { image: 1, replicas: 0 } })); });
    operator(webApp).reconcile(() => { apply({ kind: "Secret", metadata: { name: "x" } }); });
    operator(webApp).reconcile(() => { apply(Secret({ metadata: {} })); });`);
  assert.throws(() => bad.dispatch("reconcile", 0, { object: webAppCr() }),
    { name: "ZodError", message: "spec.image: Expected string, received number; spec.replicas: Number must be greater than or equal to 1" });
  assert.throws(() => bad.dispatch("reconcile", 1, { object: webAppCr() }), /apiVersion, kind and metadata.name/);
  assert.throws(() => bad.dispatch("reconcile", 2, { object: webAppCr() }), /apiVersion, kind and metadata.name/);
});

test("operator(): an annotationSelector, as a string or an object", async () => {
  const t = await withOperator(`
    operator(ConfigMap, { annotationSelector: "decorate" }).reconcile(() => {});
    operator(Secret, { annotationSelector: { team: "a" } }).reconcile(() => {});`);
  const [a, b] = t.registry().controllers;
  assert.equal(a.annotationSelector, "decorate");
  assert.equal(b.annotationSelector, "team=a");
  await assert.rejects(withOperator(`operator(ConfigMap, { annotationSelector: 3 });`),
    /operator: annotationSelector must be a string or an object of annotations/);
});

test("adoption: apply(obj, { adopt: true }) marks the child; .manages(kind, { adopt: true }) the kind", async () => {
  const t = await withOperator(`
    operator(webApp).manages(Secret).manages(Namespace, { adopt: true }).reconcile((cr) => {
      apply(Secret({ metadata: { name: "a" } }));
      apply(Secret({ metadata: { name: "b" } }), { adopt: true });
      apply(Namespace({ metadata: { name: "team" } }));
      apply(Secret({ metadata: { name: "b" } }));
    });
    operator(Deployment).manages(Secret).reconcile(() => { apply(Secret({ metadata: { name: "a" } })); });`);
  const [ctl, plain] = t.registry().controllers;
  assert.deepEqual(ctl.adopt, [{ apiVersion: "v1", kind: "Namespace" }]);
  assert.equal(plain.adopt, undefined, "nothing adopts unless asked");
  const out = t.dispatch("reconcile", 0, { object: webAppCr() });
  assert.deepEqual(out.applies.map((o) => o.metadata.name), ["a", "b", "team"]);
  assert.deepEqual(out.adopt, [1], "by position; a later apply of the same child keeps its mark");
  const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "d", namespace: "prod" } };
  assert.equal(t.dispatch("reconcile", 1, { object: deployment }).adopt, undefined);

  const bad = await withOperator(`
    operator(webApp).manages(Secret).reconcile(() => { apply(Secret({ metadata: { name: "a" } }), { adopt: "yes" }); });
    operator(webApp, { name: "b" }).reconcile(() => { apply(Secret({ metadata: { name: "a" } }), { force: true }); });`);
  assert.throws(() => bad.dispatch("reconcile", 0, { object: webAppCr() }), /adopt must be true or false/);
  assert.throws(() => bad.dispatch("reconcile", 1, { object: webAppCr() }), /unknown option force \(only adopt\)/);
  await assert.rejects(withOperator(`operator(webApp).manages(Secret, { adopt: 1 });`), /adopt must be true or false/);
});

test("reconcile: getObserved and listObserved", async () => {
  const t = await withOperator(`
    globalThis.seen = {};
    operator(webApp).reads(Secret, Namespace, ConfigMap).reconcile((cr) => {
      seen.same = getObserved(Secret, "a")?.metadata.namespace;
      seen.other = getObserved(secret, "a", "dev")?.metadata.namespace;
      seen.missing = getObserved(Secret, "nope");
      seen.byString = getObserved("v1/Secret", "a")?.metadata.namespace;
      seen.byRef = getObserved({ apiVersion: "v1", kind: "Secret" }, "b")?.metadata.name;
      seen.ns = getObserved(Namespace, "prod")?.metadata.name;
      seen.noCm = getObserved(ConfigMap, "x");
      seen.all = listObserved(Secret).map((s) => s.metadata.namespace + "/" + s.metadata.name);
      seen.inDev = listObserved(Secret, { namespace: "dev" }).map((s) => s.metadata.name);
      seen.labelled = listObserved(Secret, { labels: { app: "b" } }).map((s) => s.metadata.name);
      seen.both = listObserved(Secret, { namespace: "prod", labels: { app: "a" } }).length;
      seen.fn = listObserved(Secret, (s) => s.data?.k === "v").map((s) => s.metadata.name);
      seen.none = listObserved(Deployment);
    });`);
  t.dispatch("reconcile", 0, {
    object: webAppCr(),
    observed: {
      "v1/Secret": [secret("a", "dev"), secret("a"), secret("b", "prod", { data: { k: "v" } })],
      "v1/Namespace": [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "prod" } }],
    },
  });
  assert.deepEqual(globalThis.seen, {
    same: "prod", other: "dev", missing: undefined, byString: "prod", byRef: "b", ns: "prod", noCm: undefined,
    all: ["dev/a", "prod/a", "prod/b"], inDev: ["a"], labelled: ["b"], both: 1, fn: ["b"], none: [],
  });
  assert.deepEqual(t.host.logs.map((l) => l.message),
    ['apps/v1/Deployment is not in manages/reads/watches of operator "webapp", so nothing of it is observed']);
});

test("reconcile: getStatus, setStatus (deep merge), setCondition, event, defaults in cr.spec", async () => {
  const t = await withOperator(`
    globalThis.seen = {};
    operator(webApp).reconcile((cr) => {
      seen.spec = cr.spec;
      seen.before = getStatus(cr);
      setStatus(cr, { phase: "Pending", extra: { a: 1, b: 2 } });
      setStatus(cr, { ready: true, extra: { b: null, c: 3 } });
      seen.after = getStatus(cr);
      seen.otherStatus = getStatus({ status: { x: 1 } });
      setCondition(cr, { type: "Ready", status: false, message: "waiting" });
      setCondition(cr, { type: "Ready", status: true });
      setCondition(cr, { type: "Degraded", status: "Unknown", reason: "Probing" });
      seen.cond = setCondition(cr, { type: "Synced", status: "False" });
      event(cr, { reason: "Created", message: "made it" });
      event(null, { type: "Warning", reason: "Slow" });
      event(Secret({ metadata: { name: "s", namespace: "prod" } }), { reason: "Rotated", message: "new key" });
    });`);
  const out = t.dispatch("reconcile", 0, { object: webAppCr({ image: "x", replicas: 3 }, { status: { phase: "Running", url: "u" } }) });
  assert.deepEqual(globalThis.seen.spec, { image: "x", replicas: 3, tls: false }, "spec defaults are applied");
  assert.deepEqual(globalThis.seen.before, { phase: "Running", url: "u" });
  assert.deepEqual(globalThis.seen.after, { phase: "Pending", url: "u", ready: true, extra: { a: 1, b: null, c: 3 } });
  assert.deepEqual(globalThis.seen.otherStatus, { x: 1 });
  assert.deepEqual(globalThis.seen.cond, { type: "Synced", status: "False", reason: "NotSynced", message: "" });
  assert.deepEqual(out.status, { phase: "Pending", extra: { a: 1, b: null, c: 3 }, ready: true });
  assert.deepEqual(out.conditions, [
    { type: "Ready", status: "True", reason: "Ready", message: "" },
    { type: "Degraded", status: "Unknown", reason: "Probing", message: "" },
    { type: "Synced", status: "False", reason: "NotSynced", message: "" },
  ]);
  assert.deepEqual(out.events, [
    { type: "Normal", reason: "Created", message: "made it",
      regarding: { apiVersion: "apps.example.com/v1", kind: "WebApp", name: "shop", namespace: "prod", uid: "u-1" } },
    { type: "Warning", reason: "Slow", message: "" },
    { type: "Normal", reason: "Rotated", message: "new key", regarding: { apiVersion: "v1", kind: "Secret", name: "s", namespace: "prod" } },
  ]);

  const bad = await withOperator(`
    operator(webApp).reconcile((cr) => { setStatus({ ...cr, metadata: { name: "other", uid: "u-2" } }, { ready: true }); });
    operator(webApp).reconcile((cr) => { setStatus(cr, "ready"); });
    operator(webApp).reconcile((cr) => { setCondition(cr, { type: "Ready", status: "yes" }); });
    operator(webApp).reconcile((cr) => { setCondition(cr, { type: "Ready", status: true, reason: "not ok" }); });
    operator(webApp).reconcile((cr) => { event(cr, { type: "Error", reason: "X" }); });
    operator(webApp).reconcile((cr) => { event(cr, { message: "no reason" }); });`);
  assert.throws(() => bad.dispatch("reconcile", 0, { object: webAppCr() }), /only the object being handled/);
  assert.throws(() => bad.dispatch("reconcile", 1, { object: webAppCr() }), /must be an object/);
  assert.throws(() => bad.dispatch("reconcile", 2, { object: webAppCr() }), /status must be/);
  assert.throws(() => bad.dispatch("reconcile", 3, { object: webAppCr() }), /CamelCase/);
  assert.throws(() => bad.dispatch("reconcile", 4, { object: webAppCr() }), /Normal" or "Warning/);
  assert.throws(() => bad.dispatch("reconcile", 5, { object: webAppCr() }), /reason is required/);
});

test("finalizers: addFinalizer/removeFinalizer on the CR and on other objects; finalize handler", async () => {
  const t = await withOperator(`
    globalThis.seen = {};
    operator(webApp).finalize((cr) => {
      seen.removed = removeFinalizer(cr);
      seen.again = removeFinalizer(cr);
      return Result.ok();
    }).reconcile((cr) => {
      seen.added = addFinalizer(cr);
      seen.twice = addFinalizer(cr);
      addFinalizer(cr, "other.io/keep");
      removeFinalizer(cr, "other.io/keep");
      const s = Secret({ metadata: { name: "s" } });
      addFinalizer(s, "x.io/f");
      seen.child = s.metadata.finalizers;
      apply(s);
    });
    operator(webApp).reconcile((cr) => { addFinalizer(cr); });`);
  const out = t.dispatch("reconcile", 0, { object: webAppCr() });
  assert.deepEqual([globalThis.seen.added, globalThis.seen.twice], [true, false]);
  assert.deepEqual(out.finalizers, { add: ["webapps.apps.example.com/finalizer"], remove: ["other.io/keep"] });
  assert.deepEqual(globalThis.seen.child, ["x.io/f"]);
  assert.deepEqual(out.applies[0].metadata.finalizers, ["x.io/f"]);

  const cr = webAppCr({ image: "x" }, { metadata: { name: "shop", namespace: "prod", deletionTimestamp: "2024-01-01T00:00:00Z",
    finalizers: ["webapps.apps.example.com/finalizer"] } });
  const fin = t.dispatch("finalize", 0, { object: cr });
  assert.deepEqual([globalThis.seen.removed, globalThis.seen.again], [true, false]);
  assert.deepEqual(fin.finalizers, { add: [], remove: ["webapps.apps.example.com/finalizer"] });
  assert.deepEqual(fin.result, { type: "ok" });
  assert.throws(() => t.dispatch("reconcile", 1, { object: webAppCr() }), /name is required/);
});

test("results, Env, Values, randomString, now, log, buffers cleared between calls", async () => {
  const t = await withOperator(`
    globalThis.seen = [];
    operator(webApp).reconcile((cr) => {
      seen.push({ env: { ...Env }, values: { ...Values }, r: randomString(8), d: randomString(), t: now() });
      log.debug("dbg"); log.info("hello", { replicas: cr.spec.replicas }); log.warn({ odd: true }); log.error("bad", { err: new Error("boom") });
      if (Values.mode === "requeue") return Result.requeue("30s");
      if (Values.mode === "seconds") return Result.requeue(45);
      if (Values.mode === "error") return Result.error(new Error("went wrong"));
      if (Values.mode === "raw") return { type: "requeue", after: "1m" };
      if (Values.mode === "bad") return 42;
      apply(Secret({ metadata: { name: "once" } }));
      return Result.ok();
    });`);
  const first = t.dispatch("reconcile", 0, { object: webAppCr(), env: { HOME: "/root" }, values: { a: { b: 1 } } });
  assert.equal(first.applies.length, 1);
  assert.deepEqual(t.dispatch("reconcile", 0, { object: webAppCr(), values: { mode: "requeue" } }).result, { type: "requeue", after: "30s" });
  const second = t.dispatch("reconcile", 0, { object: webAppCr(), values: { mode: "seconds" } });
  assert.deepEqual(second.result, { type: "requeue", after: "45s" });
  assert.deepEqual(second.applies, [], "buffers start empty on every dispatch");
  assert.deepEqual(t.dispatch("reconcile", 0, { object: webAppCr(), values: { mode: "error" } }).result, { type: "error", message: "went wrong" });
  assert.deepEqual(t.dispatch("reconcile", 0, { object: webAppCr(), values: { mode: "raw" } }).result, { type: "requeue", after: "1m" });
  assert.throws(() => t.dispatch("reconcile", 0, { object: webAppCr(), values: { mode: "bad" } }), /must return Result/);
  const [a, b] = globalThis.seen;
  assert.deepEqual(a.env, { HOME: "/root" });
  assert.deepEqual(a.values, { a: { b: 1 } });
  assert.deepEqual(b.env, {}, "Env is replaced, not merged");
  assert.deepEqual(b.values, { mode: "requeue" });
  assert.match(a.r, /^[A-Za-z0-9]{8}$/);
  assert.equal(a.d.length, 32);
  assert.equal(a.t, 1_700_000_000_000);
  assert.deepEqual(t.host.logs.slice(0, 4), [
    { level: "debug", message: "dbg", fields: {} },
    { level: "info", message: "hello", fields: { replicas: 1 } },
    { level: "warn", message: '{"odd":true}', fields: {} },
    { level: "error", message: "bad", fields: { err: { error: "boom" } } },
  ]);
  assert.throws(() => t.sdk.randomString(0), RangeError);
  assert.throws(() => t.sdk.Result.requeue("soon"), /invalid duration/);
  assert.deepEqual(t.sdk.Result.requeue("1d2h"), { type: "requeue", after: "1d2h" });
  assert.deepEqual(t.sdk.Result.ok(), { type: "ok" });
  assert.deepEqual(t.sdk.Result.keep(), { type: "ok", keep: true });
  assert.deepEqual(t.sdk.Result.keep("10s"), { type: "requeue", after: "10s", keep: true });
});

test("remove names children to delete, never one applied in the same call", async () => {
  const t = await withOperator(`
    operator(webApp).manages(Secret).reconcile((cr) => {
      remove(Secret({ metadata: { name: "old" } }));
      remove(Secret({ metadata: { name: "old" } }));
      if (Values.both) apply(Secret({ metadata: { name: "old" } }));
      return Result.keep();
    });`);
  const out = t.dispatch("reconcile", 0, { object: webAppCr(), values: {} });
  assert.deepEqual(out.deletes, [{ apiVersion: "v1", kind: "Secret", metadata: { name: "old", namespace: "prod" } }]);
  assert.throws(() => t.dispatch("reconcile", 0, { object: webAppCr(), values: { both: true } }), /apply or remove it, not both/);
});

test("Result.keep reaches the runtime with the children applied in the call", async () => {
  const t = await withOperator(`
    operator(webApp).manages(Secret).reconcile((cr) => {
      if (Values.invalid) {
        setStatus(cr, { phase: "Invalid" });
        return Result.keep();
      }
      apply(Secret({ metadata: { name: "token" } }));
      return Values.later ? Result.keep(30) : Result.ok();
    });`);
  const kept = t.dispatch("reconcile", 0, { object: webAppCr(), values: { invalid: true } });
  assert.deepEqual(kept.result, { type: "ok", keep: true });
  assert.deepEqual(kept.applies, []);
  assert.deepEqual(kept.status, { phase: "Invalid" });
  const later = t.dispatch("reconcile", 0, { object: webAppCr(), values: { later: true } });
  assert.deepEqual(later.result, { type: "requeue", after: "30s", keep: true });
  assert.equal(later.applies.length, 1);
  assert.deepEqual(t.dispatch("reconcile", 0, { object: webAppCr(), values: {} }).result, { type: "ok" });
});

test("fetch goes through the host and returns a Response-like object", async () => {
  const host = fakeHost({
    onFetch: (url) => url.includes("down") ? { error: "connection refused" }
      : { status: 201, statusText: "Created", headers: { "Content-Type": "application/json" }, body: '{"id":7}' },
  });
  const t = await load({ host });
  const res = t.sdk.fetch("http://api.local/items", { method: "post", headers: { "X-N": 1 }, body: { name: "a" }, timeout: "2s" });
  assert.deepEqual(host.fetches, [{ url: "http://api.local/items",
    init: { method: "POST", headers: { "X-N": "1", "content-type": "application/json" }, body: '{"name":"a"}', timeout: "2s" } }]);
  assert.deepEqual([res.status, res.statusText, res.ok, res.url], [201, "Created", true, "http://api.local/items"]);
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.equal(res.headers.has("CONTENT-TYPE"), true);
  assert.equal(res.headers.get("missing"), null);
  assert.deepEqual([...res.headers], [["content-type", "application/json"]]);
  assert.deepEqual(res.json(), { id: 7 });
  assert.equal(res.text(), '{"id":7}');
  assert.deepEqual(await res.json(), { id: 7 }, "awaiting works too");
  t.sdk.fetch("http://api.local/raw", { body: "plain", headers: { "Content-Type": "text/plain" } });
  assert.deepEqual(host.fetches[1].init, { method: "GET", headers: { "Content-Type": "text/plain" }, body: "plain" });
  assert.throws(() => t.sdk.fetch("http://down.local/"), { name: "TypeError", message: "fetch http://down.local/: connection refused" });
});

test("map:<i> turns mapper results into requests", async () => {
  const t = await withOperator(`
    operator(webApp)
      .watches(ConfigMap, (cm) => cm.data.targets.split(","))
      .watches(Secret, (s) => [{ name: "x" }, { name: "y", namespace: "other" }, webApp({ metadata: { name: "z", namespace: "zz" }, spec: {} }), { name: "x" }])
      .watches(Deployment, () => null)
      .watches(Service, () => "one")
      .watches(Namespace)
      .watches(ConfigMap, () => [{}]);
    operator(Namespace).watches(Secret, (s) => ({ name: s.metadata.namespace }));`);
  const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "prod" }, data: { targets: "a,b" } };
  assert.deepEqual(t.dispatch("map:0", 0, { object: cm }).requests, [{ name: "a", namespace: "prod" }, { name: "b", namespace: "prod" }]);
  assert.deepEqual(t.dispatch("map:1", 0, { object: secret("s") }).requests,
    [{ name: "x", namespace: "prod" }, { name: "y", namespace: "other" }, { name: "z", namespace: "zz" }]);
  assert.deepEqual(t.dispatch("map:2", 0, { object: secret("s") }).requests, []);
  assert.deepEqual(t.dispatch("map:3", 0, { object: secret("s") }).requests, [{ name: "one", namespace: "prod" }]);
  assert.throws(() => t.dispatch("map:4", 0, { object: secret("s") }), /no mapper for map:4/);
  assert.throws(() => t.dispatch("map:5", 0, { object: cm }), /needs a name/);
  assert.deepEqual(t.dispatch("map:0", 1, { object: secret("s") }).requests, [{ name: "prod" }], "cluster-scoped: no namespace");
  const out = t.dispatch("map:0", 0, { object: cm });
  assert.deepEqual(Object.keys(out).sort(), ["applies", "conditions", "events", "finalizers", "patches", "requests", "result", "status"]);
});

test("validate: allowed, denied, warnings, ZodError; mutate: in place or returned", async () => {
  const t = await withOperator(`
    operator(webApp).validate((cr, old) => {
      if (cr.spec.image === "throw") webApp.spec.parse({ image: 5 });
      if (cr.spec.image === "crash") throw new Error("bug");
      if (old && old.spec.image !== cr.spec.image) return "image is immutable";
      if (cr.spec.replicas > 5) return { allowed: true, warnings: ["many replicas"] };
      if (cr.spec.replicas === 5) return false;
      return cr.spec.tls === false ? undefined : true;
    }).mutate((cr, old) => {
      if (old) return { ...cr, metadata: { ...cr.metadata, labels: { updated: "yes" } } };
      cr.metadata.labels = { app: cr.metadata.name };
    });
    operator(webApp).mutate(() => 3);`);
  const v = (spec, old) => {
    const o = t.dispatch("validate", 0, { object: webAppCr(spec), ...(old && { oldObject: webAppCr(old) }) });
    return { allowed: o.allowed, message: o.message, warnings: o.warnings };
  };
  assert.deepEqual(v({ image: "a" }), { allowed: true, message: undefined, warnings: undefined }, "defaults applied: tls === false");
  assert.deepEqual(v({ image: "a" }, { image: "b" }), { allowed: false, message: "image is immutable", warnings: undefined });
  assert.deepEqual(v({ image: "a", replicas: 6 }), { allowed: true, message: undefined, warnings: ["many replicas"] });
  assert.deepEqual(v({ image: "a", replicas: 5 }), { allowed: false, message: "denied by the operator", warnings: undefined });
  assert.deepEqual(v({ image: "throw" }), { allowed: false, message: "image: Expected string, received number", warnings: undefined });
  assert.throws(() => v({ image: "crash" }), /bug/);

  const m1 = t.dispatch("mutate", 0, { object: webAppCr({ image: "a" }) });
  assert.deepEqual(m1.object.metadata.labels, { app: "shop" });
  assert.deepEqual(m1.object.spec, { image: "a" }, "mutate sees the object as submitted (no SDK defaults)");
  const m2 = t.dispatch("mutate", 0, { object: webAppCr({ image: "a" }), oldObject: webAppCr({ image: "a" }) });
  assert.deepEqual(m2.object.metadata.labels, { updated: "yes" });
  assert.throws(() => t.dispatch("mutate", 1, { object: webAppCr() }), /return the object or nothing/);
});

test("onStart runs without an object; errors for unknown handlers and controllers", async () => {
  const t = await withOperator(`
    globalThis.seen = {};
    operator(webApp).onStart(function () {
      seen.args = arguments.length;
      apply(ConfigMap({ metadata: { name: "shared", namespace: "ops" } }));
      seen.setStatus = (() => { try { setStatus({ metadata: {} }, {}); } catch (e) { return e.message; } })();
    });`);
  const out = t.dispatch("onStart", 0, { observed: {}, env: {}, values: {} });
  assert.deepEqual(out.applies, [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "shared", namespace: "ops" } }]);
  assert.deepEqual(out.result, { type: "ok" });
  assert.equal(globalThis.seen.args, 0);
  assert.match(globalThis.seen.setStatus, /only the object being handled/);
  assert.throws(() => t.dispatch("reconcile", 0, { object: webAppCr() }), /has no reconcile handler/);
  assert.throws(() => t.dispatch("frobnicate", 0, {}), /has no frobnicate handler/);
  assert.throws(() => t.dispatch("reconcile", 9, {}), /no controller with index 9/);
  assert.throws(() => t.sdk.apply(t.sdk.Secret({ metadata: { name: "x" } })), /only be called inside a handler/);
  assert.throws(() => t.sdk.setStatus({}, {}), /only be called inside a handler/);
  assert.equal(t.sdk.getObserved(t.sdk.Secret, "x"), undefined, "lookups outside a handler find nothing");
});

test("exceptions propagate; async handlers return a Promise of the output", async () => {
  const t = await withOperator(`
    operator(webApp).reconcile((cr) => { throw new Error("reconcile failed for " + cr.metadata.name); });
    operator(webApp).reconcile(async (cr) => {
      await null;
      setStatus(cr, { ready: true });
      return Result.requeue("5s");
    }).validate(async (cr) => { await null; webApp.spec.parse({}); });
    operator(webApp).reconcile(async () => { await null; throw new Error("later"); });`);
  assert.throws(() => t.dispatch("reconcile", 0, { object: webAppCr() }), /reconcile failed for shop/);
  const pending = globalThis.__ct_dispatch("reconcile", 1, JSON.stringify({ object: webAppCr() }));
  assert.equal(typeof pending.then, "function");
  const out = JSON.parse(await pending);
  assert.deepEqual([out.status, out.result], [{ ready: true }, { type: "requeue", after: "5s" }]);
  assert.deepEqual((await t.dispatch("validate", 1, { object: webAppCr() })).message, "image: Required");
  await assert.rejects(t.dispatch("reconcile", 2, { object: webAppCr() }), /later/);
});

test("a console shim is installed only where there is no console (QuickJS)", async () => {
  const saved = globalThis.console;
  let t;
  try {
    t = await load({ before: () => { delete globalThis.console; } });
    globalThis.console.log("a", { b: 1 }, 2);
    globalThis.console.error("oops");
  } finally {
    globalThis.console = saved;
  }
  assert.deepEqual(t.host.logs, [{ level: "info", message: 'a {"b":1} 2', fields: {} }, { level: "error", message: "oops", fields: {} }]);
});

test("Env and Values can be preset by the vm before evaluation", async () => {
  const t = await load({ before: () => { globalThis.__ct_env = { A: "1" }; globalThis.__ct_values = { v: true }; } });
  delete globalThis.__ct_env;
  delete globalThis.__ct_values;
  assert.deepEqual({ ...t.sdk.Env }, { A: "1" });
  assert.deepEqual({ ...t.sdk.Values }, { v: true });
});

test("permission accepts the core group as a single empty string", async () => {
  const { load } = await import("./helpers.mjs");
  const t = await load({
    script: `import { resource, z, operator } from "./ctop.js";
      const r = resource("x.example.com/v1", "Thing", { scope: "Namespaced", spec: { a: z.string() }, status: {} });
      operator(r).permission({ apiGroups: "", resources: "pods", verbs: ["get"] }).reconcile(() => {});`,
  });
  assert.deepEqual(t.registry().controllers[0].permissions, [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }]);
});

test("listObserved({ownedBy}): the children of an object, by uid or by name and kind", async () => {
  const t = await withOperator(`
    globalThis.owned = {};
    operator(webApp).manages(Job).reconcile((cr) => {
      owned.byUid = listObserved(Job, { ownedBy: cr }).map((j) => j.metadata.name);
      owned.noUid = listObserved(Job, { ownedBy: { ...cr, metadata: { name: "shop", namespace: "prod" } } })
        .map((j) => j.metadata.name);
      owned.labelled = listObserved(Job, { ownedBy: cr, labels: { keep: "1" } }).map((j) => j.metadata.name);
      try { listObserved(Job, { ownedBy: "shop" }); } catch (e) { owned.error = e.message; }
    });`);
  const ref = (name, uid, kind = "WebApp", apiVersion = "apps.example.com/v1") => ({ apiVersion, kind, name, uid });
  const job = (name, namespace, refs, labels, annotations) => ({ apiVersion: "batch/v1", kind: "Job",
    metadata: { name, namespace, ownerReferences: refs, ...(labels && { labels }), ...(annotations && { annotations }) } });
  t.dispatch("reconcile", 0, {
    object: webAppCr(),
    observed: {
      "batch/v1/Job": [
        job("mine", "prod", [ref("shop", "u-1")], { keep: "1" }),
        job("also-mine", "prod", [ref("other", "x"), ref("shop", "u-1")]),
        job("older-shop", "prod", [ref("shop", "u-0")]),
        job("elsewhere", "dev", [ref("shop", "u-1")]),
        job("other-kind", "prod", [ref("shop", "u-9", "Shop")]),
        job("orphan", "prod", undefined),
        // In another namespace, tied by the applier's annotation (no owner reference).
        job("copy", "dev", undefined, undefined, { "ctop.dev/owner": "WebApp.apps.example.com prod/shop" }),
        job("copy-of-other", "dev", undefined, undefined, { "ctop.dev/owner": "WebApp.apps.example.com prod/other" }),
      ],
    },
  });
  assert.deepEqual(globalThis.owned, {
    byUid: ["mine", "also-mine", "copy"],
    noUid: ["mine", "also-mine", "older-shop", "copy"],
    labelled: ["mine"],
    error: "listObserved ownedBy: expected a kind handle such as Secret or Deployment, got shop",
  });
});

test("resource(): a kind named like a built-in of another group is its own kind", async () => {
  // The kubebuilder tutorial's CronJob beside the built-in batch/v1 CronJob: kinds are
  // group + name, handles and "<apiVersion>/<Kind>" strings name either, a bare name neither.
  const t = await load({ script: `
    import { resource, operator, apply, getObserved, listObserved, Job, CronJob } from "./ctop.js";
    const cronJob = resource("batch.tutorial.kubebuilder.io/v1", "CronJob", {});
    operator(cronJob).manages(Job).reads(CronJob).reconcile((cr) => {
      globalThis.seen = { builtin: listObserved(CronJob).map((o) => o.metadata.name),
        own: getObserved(cronJob, cr.metadata.name)?.apiVersion,
        byString: listObserved("batch/v1/CronJob").length };
      try { getObserved("CronJob", "x"); } catch (e) { globalThis.seen.bare = e.message; }
      apply(Job({ metadata: { name: cr.metadata.name } }));
    });
    operator(CronJob).reads("batch.tutorial.kubebuilder.io/v1/CronJob").reconcile(() => {});` });
  const [own, builtin] = t.registry().controllers;
  assert.deepEqual(t.registry().resources.map((r) => [r.apiVersion, r.kind, r.plural]),
    [["batch.tutorial.kubebuilder.io/v1", "CronJob", "cronjobs"]]);
  assert.deepEqual([own.name, own.for, own.reads], ["cronjob",
    { apiVersion: "batch.tutorial.kubebuilder.io/v1", kind: "CronJob" }, [{ apiVersion: "batch/v1", kind: "CronJob" }]]);
  assert.deepEqual([builtin.name, builtin.for, builtin.reads], ["cronjob-2", { apiVersion: "batch/v1", kind: "CronJob" },
    [{ apiVersion: "batch.tutorial.kubebuilder.io/v1", kind: "CronJob" }]]);
  const cr = { apiVersion: "batch.tutorial.kubebuilder.io/v1", kind: "CronJob",
    metadata: { name: "tutorial", namespace: "prod", uid: "u-1" } };
  const out = t.dispatch("reconcile", 0, { object: cr, observed: {
    "batch/v1/CronJob": [{ apiVersion: "batch/v1", kind: "CronJob", metadata: { name: "builtin", namespace: "prod" } }],
    "batch.tutorial.kubebuilder.io/v1/CronJob": [cr] } });
  assert.deepEqual(globalThis.seen, { builtin: ["builtin"], own: "batch.tutorial.kubebuilder.io/v1", byString: 1,
    bare: 'getObserved: "CronJob" names batch/v1 CronJob and batch.tutorial.kubebuilder.io/v1 CronJob; pass the '
      + 'kind\'s handle, or "<apiVersion>/CronJob" such as "batch/v1/CronJob"' });
  assert.deepEqual(out.applies.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`), ["batch/v1 Job tutorial"]);
  await assert.rejects(
    load({ script: `import { resource, operator } from "./ctop.js";
      resource("batch.tutorial.kubebuilder.io/v1", "CronJob"); operator("CronJob");` }),
    { message: /^operator: "CronJob" names batch\/v1 CronJob and batch.tutorial.kubebuilder.io\/v1 CronJob/ },
  );
});

test("stringData decodes a Secret's data as text and keeps stringData", async () => {
  const host = fakeHost();
  host.decodeBase64 = (s) => {
    const b = Buffer.from(s, "base64");
    if (b.toString("base64") !== s) throw new TypeError("not base64");
    return b.toString("utf8");
  };
  const { sdk } = await load({ host });
  assert.deepEqual(sdk.stringData({ metadata: { name: "s" }, data: { user: "YWRtaW4=", pw: "cMOkc3M=" }, stringData: { extra: "x" } }),
    { user: "admin", pw: "päss", extra: "x" });
  assert.deepEqual(sdk.stringData({ metadata: { name: "s" } }), {});
  assert.throws(() => sdk.stringData({ metadata: { name: "s" }, data: { bad: "%%%" } }),
    { message: "stringData: data.bad of s: not base64" });
});

test("two controllers of one kind may not both manage children", async () => {
  await assert.rejects(
    withOperator(`
      operator(webApp, { name: "a" }).manages(Secret);
      operator(webApp, { name: "b" }).reads(ConfigMap).manages(Deployment);`),
    { message: 'operator "b": operator "a" already manages children of WebApp objects, and an object\'s children belong to one controller (each would prune the other\'s); apply them from one controller, or patch() objects you do not own' },
  );
  // One that only reads, watches or patches is fine.
  await withOperator(`
    operator(webApp, { name: "a" }).manages(Secret);
    operator(webApp, { name: "b" }).reads(ConfigMap).reconcile(() => {});`);
});

test("reads(kind, { metadataOnly: true }): the kinds are read and listed as metadata-only; needed ones are refused", async () => {
  const t = await withOperator(`
    operator(webApp).manages(Secret).reads(ConfigMap).reads([Namespace], "v1/Pod", { metadataOnly: true })
      .reads("v1/Pod", { metadataOnly: true }).reads(Job, { metadataOnly: false });
    operator(Deployment).reads(ConfigMap);`);
  const [ctl, plain] = t.registry().controllers;
  assert.deepEqual(ctl.reads, [{ apiVersion: "v1", kind: "ConfigMap" }, { apiVersion: "v1", kind: "Namespace" },
    { apiVersion: "v1", kind: "Pod" }, { apiVersion: "batch/v1", kind: "Job" }]);
  assert.deepEqual(ctl.metadataOnly, [{ apiVersion: "v1", kind: "Namespace" }, { apiVersion: "v1", kind: "Pod" }],
    "listed once, in order; metadataOnly: false reads in full");
  assert.equal(plain.metadataOnly, undefined, "absent unless asked");

  await assert.rejects(withOperator(`operator(webApp).reads(Secret, { metadata: true });`),
    /reads: unknown option metadata \(only metadataOnly\)/);
  await assert.rejects(withOperator(`operator(webApp).reads(Secret, { metadataOnly: "yes" });`),
    /reads: metadataOnly must be true or false/);
  await assert.rejects(withOperator(`operator(webApp).manages(Secret).reads(Secret, { metadataOnly: true });`),
    /operator "webapp": \.reads\(Secret, \{ metadataOnly: true \}\): Secret is managed by this operator/);
  await assert.rejects(withOperator(`operator(webApp).reads(Secret, { metadataOnly: true }).manages([Service, Secret]);`),
    /Secret is managed by this operator \(the Ready condition reads its children's status\), so its objects are cached in full; drop metadataOnly/);
  await assert.rejects(withOperator(`operator(ConfigMap).reads(ConfigMap, { metadataOnly: true });`),
    /ConfigMap is the kind this operator reconciles/);
});
