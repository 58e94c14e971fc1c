/**
 * ctop — the built-in module `"ctop"` that operator scripts import.
 *
 * One plain ES2023 module with no dependencies. It runs inside QuickJS; the only things it
 * needs from outside are the host functions in `globalThis.__ct_host` (randomness, logging,
 * time, fetch, cached objects). Its two faces, both described in crates/runtime/RUNTIME.md:
 *
 * - at load time, `resource(...)` and `operator(...)` register a plain JSON description of
 *   the CRDs and controllers into `globalThis.__ct_operator`;
 * - at run time, Rust calls `globalThis.__ct_dispatch(handler, controllerIndex, inputJson)`;
 *   the script's handler runs with `getObserved`, `apply`, `setStatus`, ... writing into
 *   per-call buffers, which come back as one output (children are handed to the host as
 *   they are applied, see `checkObject`).
 *
 * Every built-in kind handle is also a global under its lowerCamel name (`secret`,
 * `configMap`, ...), so the plan's `getObserved(secret, ...)` works without an import.
 *
 * Reading order: helpers → `z` (schemas) → kind handles → `resource` → `operator` →
 * functions used inside handlers → invariants → `__ct_dispatch` → globals.
 */

// ───────────────────────────── helpers ─────────────────────────────

/** @param {unknown} v */
const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** Marks a value `copyPlain` leaves to the JSON round trip. */
const NOT_PLAIN = Symbol("not plain");

/**
 * Deep copy of plain data (objects, arrays, strings, booleans, finite numbers, null), or
 * `NOT_PLAIN` for anything JSON would change (dates, functions, class instances, NaN, holes).
 */
function copyPlain(v, depth) {
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      return Number.isFinite(v) ? v : NOT_PLAIN;
    case "object": {
      if (v === null) return null;
      if (depth > 100) return NOT_PLAIN;
      if (Array.isArray(v)) {
        const out = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          const x = copyPlain(v[i], depth + 1);
          if (x === NOT_PLAIN) return NOT_PLAIN;
          out[i] = x;
        }
        return out;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return NOT_PLAIN;
      const out = {};
      for (const k in v) {
        if (!Object.hasOwn(v, k) || v[k] === undefined) continue;
        const x = copyPlain(v[k], depth + 1);
        if (x === NOT_PLAIN || k === "__proto__") return NOT_PLAIN;
        out[k] = x;
      }
      return out;
    }
    default:
      return NOT_PLAIN;
  }
}

/** Deep copy with JSON's meaning (QuickJS has no structuredClone): plain data fast, the rest through JSON. */
function clone(v) {
  if (v === undefined) return undefined;
  const copy = copyPlain(v, 0);
  return copy === NOT_PLAIN ? JSON.parse(JSON.stringify(v)) : copy;
}

/** JSON merge-patch style merge of `patch` into `base` (objects merge, everything else replaces). */
function deepMerge(base, patch) {
  if (!isPlainObject(base) || !isPlainObject(patch)) return patch;
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) out[k] = k in out ? deepMerge(out[k], v) : v;
  return out;
}

const DURATION = /^(?:\d+(?:ms|s|m|h|d))+$/;

/**
 * A duration as the Rust side reads it: `"30s"`, `"5m"`, `"1h30m"`, `"250ms"`, `"1d"`, `"0"`.
 * A number means seconds (`30` → `"30s"`, `0.25` → `"250ms"`).
 */
function duration(d, what) {
  if (typeof d === "number" && Number.isFinite(d) && d >= 0) {
    return Number.isInteger(d) ? `${d}s` : `${Math.round(d * 1000)}ms`;
  }
  if (typeof d === "string" && (d === "0" || DURATION.test(d.trim()))) return d.trim();
  throw new TypeError(`${what}: invalid duration ${JSON.stringify(d)} (write e.g. "30s", "5m", "1h30m")`);
}

const host = () => {
  const h = globalThis.__ct_host;
  if (!h) throw new Error("ctop: globalThis.__ct_host is not installed");
  return h;
};

const safeJson = (v) =>
  JSON.stringify(v ?? {}, (_k, x) =>
    x instanceof Error ? { error: x.message } : typeof x === "bigint" ? String(x) : x);

// ───────────────────────────── z: schemas ─────────────────────────────

/** The error `parse` throws: zod's shape (`issues` with `path`, `message`, `code`). */
export class ZodError extends Error {
  constructor(issues) {
    super(issues.map(formatIssue).join("; "));
    this.name = "ZodError";
    this.issues = issues;
  }
  get errors() {
    return this.issues;
  }
}

function formatIssue(issue) {
  const path = issue.path.reduce(
    (s, p) => (typeof p === "number" ? `${s}[${p}]` : s ? `${s}.${p}` : String(p)), "");
  return path ? `${path}: ${issue.message}` : issue.message;
}

const typeOf = (v) =>
  v === null ? "null" : Array.isArray(v) ? "array"
    : typeof v === "number" && Number.isNaN(v) ? "nan" : typeof v;

const msgOf = (m) => (typeof m === "string" ? m : m?.message);

/**
 * Base of every schema. Schemas are immutable: each modifier returns a copy.
 * `_def` holds the flags shared by all kinds (optional, nullable, default, description)
 * and the kind-specific checks.
 */
class ZodType {
  constructor(def = {}) {
    this._def = def;
  }
  _copy(patch) {
    const s = Object.create(Object.getPrototypeOf(this));
    s._def = { ...this._def, ...patch };
    return s;
  }
  optional() { return this._copy({ optional: true }); }
  nullable() { return this._copy({ nullable: true }); }
  nullish() { return this._copy({ optional: true, nullable: true }); }
  /** Used when the value is `undefined`; the default itself is validated like input. */
  default(value) { return this._copy({ hasDefault: true, defaultValue: clone(value) }); }
  describe(description) { return this._copy({ description }); }
  get description() { return this._def.description; }
  isOptional() { return Boolean(this._def.optional || this._def.hasDefault); }

  parse(value) {
    const issues = [];
    const out = this._run(value, [], issues);
    if (issues.length) throw new ZodError(issues);
    return out;
  }
  safeParse(value) {
    const issues = [];
    const data = this._run(value, [], issues);
    return issues.length ? { success: false, error: new ZodError(issues) } : { success: true, data };
  }

  _run(v, path, issues) {
    if (v === undefined) {
      if (this._def.hasDefault) v = clone(this._def.defaultValue);
      else if (this.isOptional()) return undefined;
      else {
        issues.push({ code: "invalid_type", path: [...path], message: "Required" });
        return undefined;
      }
    }
    if (v === null && this._def.nullable) return null;
    return this._check(v, path, issues);
  }
  _typeIssue(expected, v, path, issues) {
    issues.push({ code: "invalid_type", path: [...path], expected, received: typeOf(v),
      message: `Expected ${expected}, received ${typeOf(v)}` });
  }
  _check(v) { return v; }
  _schema() { return {}; }

  /** The structural OpenAPI v3 schema of this type (for a CRD). */
  toOpenAPI() {
    const s = this._schema();
    if (this._def.description !== undefined) s.description = this._def.description;
    if (this._def.hasDefault) s.default = clone(this._def.defaultValue);
    if (this._def.nullable) s.nullable = true;
    return s;
  }
}

/** Bounds shared by numbers (value), strings (length) and arrays (item count); zod's messages. */
function boundsCheck(n, def, path, issues, what) {
  const { min, max, exclusiveMin } = def;
  if (min === undefined && max === undefined) return;
  const unit = what === "String" ? " character(s)" : what === "Array" ? " element(s)" : "";
  const say = (rel, bound) => what === "Number" ? `Number must be ${rel} ${bound}`
    : `${what} must contain ${min === max ? "exactly" : rel} ${bound}${unit}`;
  if (min !== undefined && (exclusiveMin ? n <= min : n < min)) {
    const rel = what !== "Number" ? "at least" : exclusiveMin ? "greater than" : "greater than or equal to";
    issues.push({ code: "too_small", path: [...path], minimum: min, message: def.minMessage ?? say(rel, min) });
  }
  if (max !== undefined && n > max) {
    const rel = what === "Number" ? "less than or equal to" : "at most";
    issues.push({ code: "too_big", path: [...path], maximum: max, message: def.maxMessage ?? say(rel, max) });
  }
}

class ZodString extends ZodType {
  min(n, m) { return this._copy({ min: n, minMessage: msgOf(m) }); }
  max(n, m) { return this._copy({ max: n, maxMessage: msgOf(m) }); }
  length(n, m) { return this._copy({ min: n, max: n, minMessage: msgOf(m), maxMessage: msgOf(m) }); }
  nonempty(m) { return this.min(1, m); }
  /** The pattern goes to OpenAPI as `re.source`; flags are ignored (the API server uses RE2). */
  regex(re, m) { return this._copy({ pattern: new RegExp(re.source), patternMessage: msgOf(m) }); }
  _check(v, path, issues) {
    if (typeof v !== "string") return this._typeIssue("string", v, path, issues), undefined;
    boundsCheck(v.length, this._def, path, issues, "String");
    if (this._def.pattern && !this._def.pattern.test(v)) {
      issues.push({ code: "invalid_string", validation: "regex", path: [...path],
        message: this._def.patternMessage ?? "Invalid" });
    }
    return v;
  }
  _schema() {
    const d = this._def;
    return { type: "string",
      ...(d.min !== undefined && { minLength: d.min }), ...(d.max !== undefined && { maxLength: d.max }),
      ...(d.pattern && { pattern: d.pattern.source }) };
  }
}

class ZodNumber extends ZodType {
  int() { return this._copy({ int: true }); }
  min(n, m) { return this._copy({ min: n, minMessage: msgOf(m), exclusiveMin: false }); }
  max(n, m) { return this._copy({ max: n, maxMessage: msgOf(m) }); }
  gte(n, m) { return this.min(n, m); }
  lte(n, m) { return this.max(n, m); }
  nonnegative(m) { return this.min(0, m); }
  positive(m) { return this._copy({ min: 0, minMessage: msgOf(m), exclusiveMin: true }); }
  _check(v, path, issues) {
    if (typeof v !== "number" || Number.isNaN(v)) return this._typeIssue("number", v, path, issues), undefined;
    if (this._def.int && !Number.isInteger(v)) {
      issues.push({ code: "invalid_type", path: [...path], expected: "integer", received: "float",
        message: "Expected integer, received float" });
      return v;
    }
    boundsCheck(v, this._def, path, issues, "Number");
    return v;
  }
  _schema() {
    const d = this._def;
    return { type: d.int ? "integer" : "number",
      ...(d.min !== undefined && { minimum: d.min }), ...(d.exclusiveMin && { exclusiveMinimum: true }),
      ...(d.max !== undefined && { maximum: d.max }) };
  }
}

class ZodBoolean extends ZodType {
  _check(v, path, issues) {
    if (typeof v !== "boolean") return this._typeIssue("boolean", v, path, issues), undefined;
    return v;
  }
  _schema() { return { type: "boolean" }; }
}

class ZodEnum extends ZodType {
  get options() { return [...this._def.values]; }
  get enum() { return Object.fromEntries(this._def.values.map((v) => [v, v])); }
  _check(v, path, issues) {
    if (!this._def.values.includes(v)) {
      const want = this._def.values.map((x) => `'${x}'`).join(" | ");
      issues.push({ code: "invalid_enum_value", path: [...path], options: this.options,
        message: `Invalid enum value. Expected ${want}, received ${typeof v === "string" ? `'${v}'` : typeOf(v)}` });
    }
    return v;
  }
  _schema() { return { type: "string", enum: [...this._def.values] }; }
}

class ZodLiteral extends ZodType {
  get value() { return this._def.value; }
  _check(v, path, issues) {
    if (v !== this._def.value) {
      issues.push({ code: "invalid_literal", path: [...path], expected: this._def.value,
        message: `Invalid literal value, expected ${JSON.stringify(this._def.value)}` });
    }
    return v;
  }
  _schema() {
    const v = this._def.value;
    const type = typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v;
    return { type, enum: [v] };
  }
}

class ZodAny extends ZodType {
  isOptional() { return true; }
  _run(v) { return clone(v === undefined && this._def.hasDefault ? this._def.defaultValue : v); }
  _schema() { return { "x-kubernetes-preserve-unknown-fields": true }; }
}

class ZodArray extends ZodType {
  get element() { return this._def.element; }
  min(n, m) { return this._copy({ min: n, minMessage: msgOf(m) }); }
  max(n, m) { return this._copy({ max: n, maxMessage: msgOf(m) }); }
  length(n, m) { return this._copy({ min: n, max: n, minMessage: msgOf(m), maxMessage: msgOf(m) }); }
  nonempty(m) { return this.min(1, m); }
  _check(v, path, issues) {
    if (!Array.isArray(v)) return this._typeIssue("array", v, path, issues), undefined;
    boundsCheck(v.length, this._def, path, issues, "Array");
    // `path` is one array pushed and popped on the way down; issues copy it.
    const el = this._def.element;
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      out[i] = el._run(v[i], path, issues);
      path.pop();
    }
    return out;
  }
  _schema() {
    const d = this._def;
    return { type: "array", items: d.element.toOpenAPI(),
      ...(d.min !== undefined && { minItems: d.min }), ...(d.max !== undefined && { maxItems: d.max }) };
  }
}

class ZodObject extends ZodType {
  get shape() { return this._def.shape; }
  /** Keep keys the shape does not name (also in the CRD: x-kubernetes-preserve-unknown-fields). */
  passthrough() { return this._copy({ passthrough: true }); }
  strip() { return this._copy({ passthrough: false }); }
  extend(shape) { return this._copy({ shape: { ...this._def.shape, ...checkShape(shape) } }); }
  partial() {
    return this._copy({ shape: Object.fromEntries(
      Object.entries(this._def.shape).map(([k, s]) => [k, s.optional()])) });
  }
  _check(v, path, issues) {
    if (!isPlainObject(v)) return this._typeIssue("object", v, path, issues), undefined;
    const out = this._def.passthrough ? { ...v } : {};
    const entries = (this._entries ??= Object.entries(this._def.shape));
    for (let i = 0; i < entries.length; i++) {
      const [k, s] = entries[i];
      path.push(k);
      const r = s._run(v[k], path, issues);
      path.pop();
      if (r !== undefined) out[k] = r;
      else if (this._def.passthrough) delete out[k];
    }
    return out;
  }
  _schema() {
    const properties = {};
    const required = [];
    for (const [k, s] of Object.entries(this._def.shape)) {
      properties[k] = s.toOpenAPI();
      if (!s.isOptional()) required.push(k);
    }
    return { type: "object", properties, ...(required.length && { required }),
      ...(this._def.passthrough && { "x-kubernetes-preserve-unknown-fields": true }) };
  }
}

class ZodRecord extends ZodType {
  _check(v, path, issues) {
    if (!isPlainObject(v)) return this._typeIssue("object", v, path, issues), undefined;
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      path.push(k);
      this._def.key?._run(k, path, issues);
      const r = this._def.value._run(x, path, issues);
      path.pop();
      if (r !== undefined) out[k] = r;
    }
    return out;
  }
  _schema() { return { type: "object", additionalProperties: this._def.value.toOpenAPI() }; }
}

const isSchema = (v) => v instanceof ZodType;

function checkShape(shape) {
  if (!isPlainObject(shape)) throw new TypeError("z.object: expected an object of schemas");
  for (const [k, s] of Object.entries(shape)) {
    if (!isSchema(s)) throw new TypeError(`z.object: field "${k}" is not a z schema`);
  }
  return shape;
}

/** A zod-compatible subset. Every schema validates/defaults (`parse`) and compiles (`toOpenAPI`). */
export const z = Object.freeze({
  string: () => new ZodString(),
  number: () => new ZodNumber(),
  int: () => new ZodNumber({ int: true }),
  boolean: () => new ZodBoolean(),
  enum: (values) => {
    if (!Array.isArray(values) || !values.length || values.some((v) => typeof v !== "string")) {
      throw new TypeError("z.enum: expected a non-empty array of strings");
    }
    return new ZodEnum({ values: [...values] });
  },
  literal: (value) => new ZodLiteral({ value }),
  object: (shape) => new ZodObject({ shape: checkShape(shape) }),
  array: (element) => {
    if (!isSchema(element)) throw new TypeError("z.array: expected a z schema");
    return new ZodArray({ element });
  },
  /** `z.record(value)` or `z.record(keySchema, value)`; keys are strings in JSON. */
  record: (a, b) => new ZodRecord(b === undefined ? { value: a } : { key: a, value: b }),
  any: () => new ZodAny(),
  unknown: () => new ZodAny(),
  optional: (s) => s.optional(),
  nullable: (s) => s.nullable(),
  ZodError,
});

/** `{a: z.string()}` and `z.object({a: z.string()})` are both accepted where a schema is wanted. */
function toObjectSchema(v, what) {
  if (v === undefined || isSchema(v)) return v;
  if (isPlainObject(v)) return z.object(v);
  throw new TypeError(`${what}: expected an object of z schemas or a z.object`);
}

// ───────────────────────────── kinds ─────────────────────────────

/** Every kind the SDK knows, by `"<apiVersion>/<Kind>"`: built-ins, `kindOf`, `resource`. */
const knownKinds = new Map();
const kindKey = (r) => `${r.apiVersion}/${r.kind}`;

/**
 * A kind handle: a function that builds a full object (`Secret({metadata, data})` →
 * `{apiVersion: "v1", kind: "Secret", metadata, data}`) and carries the kind's identity.
 */
function makeKind({ apiVersion, kind, plural, namespaced }) {
  const slash = apiVersion.lastIndexOf("/");
  const info = { apiVersion, kind, group: slash < 0 ? "" : apiVersion.slice(0, slash),
    version: apiVersion.slice(slash + 1), plural: plural ?? pluralize(kind), namespaced };
  const handle = function (obj = {}) {
    if (!isPlainObject(obj)) throw new TypeError(`${kind}(...): expected an object`);
    const out = { apiVersion, kind, metadata: Object.assign({}, obj.metadata) };
    for (const k in obj) {
      if (k !== "apiVersion" && k !== "kind" && k !== "metadata" && Object.hasOwn(obj, k)) out[k] = obj[k];
    }
    return out;
  };
  for (const [k, v] of Object.entries(info)) Object.defineProperty(handle, k, { value: v, enumerable: true });
  Object.defineProperty(handle, "toJSON", { value: () => ({ apiVersion, kind }) });
  knownKinds.set(kindKey(info), info);
  return handle;
}

function pluralize(kind) {
  const k = kind.toLowerCase();
  if (/(s|x|z|ch|sh)$/.test(k)) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/** A handle for a kind the SDK does not ship (another operator's CRD, a newer built-in). */
export function kindOf(apiVersion, kind, { plural, namespaced = true } = {}) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    throw new TypeError("kindOf(apiVersion, kind): both must be strings");
  }
  return makeKind({ apiVersion, kind, plural, namespaced });
}

/**
 * `{apiVersion, kind}` from a handle, an object, `"v1/Secret"`, `"apps/v1/Deployment"` or
 * the bare name of a known kind (`"Secret"`), which must then be one group's.
 */
function kindRef(k, what = "kind") {
  if ((typeof k === "function" || isPlainObject(k)) && typeof k.apiVersion === "string" && typeof k.kind === "string") {
    return { apiVersion: k.apiVersion, kind: k.kind };
  }
  if (typeof k === "string") {
    const i = k.lastIndexOf("/");
    if (i > 0) return { apiVersion: k.slice(0, i), kind: k.slice(i + 1) };
    // Two versions of one group are one kind (the first known names it); two groups are two.
    const found = [...knownKinds.values()].filter((x) => x.kind === k);
    if (new Set(found.map((x) => x.group)).size > 1) {
      const all = found.map((x) => `${x.apiVersion} ${x.kind}`).join(" and ");
      throw new TypeError(`${what}: "${k}" names ${all}; pass the kind's handle, or "<apiVersion>/${k}" `
        + `such as "${found[0].apiVersion}/${k}"`);
    }
    if (found.length) return { apiVersion: found[0].apiVersion, kind: found[0].kind };
  }
  throw new TypeError(`${what}: expected a kind handle such as Secret or Deployment, got ${String(k)}`);
}

/** Unknown kinds are taken as namespaced (most are). */
const isNamespaced = (ref) => knownKinds.get(kindKey(ref))?.namespaced ?? true;

const BUILTINS = {
  v1: ["ConfigMap", "Secret", "Service", "ServiceAccount", "Pod", "PersistentVolumeClaim",
    "Endpoints:endpoints", "LimitRange", "ResourceQuota", "Namespace!", "Node!", "PersistentVolume!"],
  "apps/v1": ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"],
  "batch/v1": ["Job", "CronJob"],
  "networking.k8s.io/v1": ["Ingress:ingresses", "NetworkPolicy:networkpolicies", "IngressClass!:ingressclasses"],
  "rbac.authorization.k8s.io/v1": ["Role", "RoleBinding", "ClusterRole!", "ClusterRoleBinding!"],
  "autoscaling/v2": ["HorizontalPodAutoscaler"],
  "policy/v1": ["PodDisruptionBudget"],
  "coordination.k8s.io/v1": ["Lease"],
  "storage.k8s.io/v1": ["StorageClass!:storageclasses"],
};
/** @type {Record<string, Function>} */
const builtin = {};
for (const [apiVersion, kinds] of Object.entries(BUILTINS)) {
  for (const spec of kinds) {
    const [name, plural] = spec.split(":");
    const kind = name.replace("!", "");
    builtin[kind] = makeKind({ apiVersion, kind, plural: plural ?? kind.toLowerCase() + "s",
      namespaced: !name.endsWith("!") });
  }
}
export const {
  ConfigMap, Secret, Service, ServiceAccount, Pod, PersistentVolumeClaim, Endpoints, LimitRange,
  ResourceQuota, Namespace, Node, PersistentVolume, Deployment, StatefulSet, DaemonSet, ReplicaSet,
  Job, CronJob, Ingress, NetworkPolicy, IngressClass, Role, RoleBinding, ClusterRole,
  ClusterRoleBinding, HorizontalPodAutoscaler, PodDisruptionBudget, Lease, StorageClass,
} = builtin;

// ───────────────────────────── registry: resource() and operator() ─────────────────────────────

const registry = { resources: [], controllers: [] };
globalThis.__ct_operator = registry;
/** JS-side halves of the controllers (functions never go into `__ct_operator`). */
const controllerFns = [];
/** Spec schemas of declared resources by `"<apiVersion>/<Kind>"`, to check applied CRs. */
const specSchemas = new Map();

/** What `status.conditions` and `status.observedGeneration` look like in every CRD. */
const CONDITIONS_SCHEMA = {
  type: "array",
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
  items: {
    type: "object",
    required: ["type", "status"],
    properties: {
      type: { type: "string" },
      status: { type: "string", enum: ["True", "False", "Unknown"] },
      reason: { type: "string" },
      message: { type: "string" },
      lastTransitionTime: { type: "string", format: "date-time" },
      observedGeneration: { type: "integer" },
    },
  },
};

const PRINTER_TYPES = ["string", "integer", "number", "boolean", "date"];

/**
 * Declare a custom resource: its CRD goes into `__ct_operator.resources`, and the returned
 * handle is a kind (for `operator`, `getObserved`, `manages`) and a constructor.
 */
export function resource(apiVersion, kind, opts = {}) {
  const m = /^([a-z0-9.-]+\.[a-z0-9-]+)\/([a-z0-9]+)$/.exec(apiVersion ?? "");
  if (!m) throw new TypeError(`resource: apiVersion must be "<group>/<version>" with a dotted group, got ${JSON.stringify(apiVersion)}`);
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind ?? "")) throw new TypeError(`resource: kind must be UpperCamelCase, got ${JSON.stringify(kind)}`);
  const [, group, version] = m;
  const scope = opts.scope ?? "Namespaced";
  if (scope !== "Namespaced" && scope !== "Cluster") throw new TypeError(`resource ${kind}: scope must be "Namespaced" or "Cluster"`);
  if (registry.resources.some((r) => r.group === group && r.kind === kind)) {
    throw new Error(`resource ${kind}.${group} is declared twice`);
  }
  // A kind is its group and name, as the API server has it: the kubebuilder tutorial's
  // batch.tutorial.kubebuilder.io/v1 CronJob and the built-in batch/v1 CronJob are two
  // kinds. Only a bare "CronJob" string would mean either, and kindRef refuses it then.
  const spec = toObjectSchema(opts.spec, `resource ${kind}: spec`);
  const status = toObjectSchema(opts.status, `resource ${kind}: status`);
  const plural = opts.plural ?? pluralize(kind);
  const schema = objectSchema(spec, status);
  const printerColumns = (opts.printerColumns ?? []).map((c) => checkPrinterColumn(c, kind));
  const deprecated = deprecation(opts.deprecated, `resource ${kind}`);

  const entry = {
    apiVersion, group, version, kind, plural,
    singular: opts.singular ?? kind.toLowerCase(),
    scope,
    shortNames: [...(opts.shortNames ?? [])],
    printerColumns,
    schema,
    statusSubresource: true,
    ...(deprecated && { deprecated }),
  };
  registry.resources.push(entry);
  const handle = makeKind({ apiVersion, kind, plural, namespaced: scope === "Namespaced" });
  if (spec) specSchemas.set(`${apiVersion}/${kind}`, spec);
  const versions = { group, kind, plural, scope, hub: version, byName: new Map([[version, { spec, status }]]) };
  conversions.set(`${group}/${kind}`, versions);
  Object.defineProperties(handle, {
    scope: { value: scope, enumerable: true },
    spec: { value: spec, enumerable: true },
    status: { value: status, enumerable: true },
    schema: { value: schema, enumerable: true },
    addVersion: { value: (name, options) => addVersion(entry, versions, name, options) },
  });
  return handle;
}

/** The openAPIV3Schema of a whole object of a resource from its spec and status schemas. */
function objectSchema(spec, status) {
  const specSchema = spec ? spec.toOpenAPI() : { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  const statusSchema = status ? status.toOpenAPI() : { type: "object", properties: {} };
  delete statusSchema.required; // the operator writes status piecemeal: no status field is required
  statusSchema.properties ??= {};
  statusSchema.properties.conditions ??= clone(CONDITIONS_SCHEMA);
  statusSchema.properties.observedGeneration ??= { type: "integer" };
  const schema = { type: "object", properties: { spec: specSchema, status: statusSchema } };
  if (specSchema.required?.length) schema.required = ["spec"];
  return schema;
}

/** `deprecated: true | "warning"` as the registry has it (`{warning?}`), or undefined. */
function deprecation(d, what) {
  if (d === undefined || d === false) return undefined;
  if (d === true) return {};
  if (typeof d === "string" && d.trim()) return { warning: d };
  throw new TypeError(`${what}: deprecated must be true, false or the warning clients get (a non-empty string)`);
}

// ───────────────────────────── versions and conversion ─────────────────────────────

/**
 * The versions of every resource by `"<group>/<Kind>"`: the hub (the version `resource`
 * names, which handlers see) and, per version, its schemas and the two functions that convert
 * between it and the hub (`toHub`, `fromHub`; none for the hub).
 */
const conversions = new Map();

const VERSION_OPTIONS = ["spec", "status", "printerColumns", "served", "storage", "deprecated", "toHub", "fromHub"];

/**
 * `res.addVersion(name, options)`: another version of a resource, with its own schemas and the
 * two functions converting its objects to the hub and back. The CRD then lists every version
 * and names the operator as its conversion webhook.
 */
function addVersion(entry, versions, name, options) {
  const what = `${entry.kind}.addVersion(${JSON.stringify(name)})`;
  if (typeof name !== "string" || !/^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/.test(name)) {
    throw new TypeError(`${what}: a version is named like v1, v2beta1 or v1alpha2 (Kubernetes orders versions by these names)`);
  }
  if (versions.byName.has(name)) throw new Error(`${what}: ${entry.kind}.${entry.group} already has version ${name}`);
  if (!isPlainObject(options)) throw new TypeError(`${what}: the second argument is an options object ({spec, status, toHub, fromHub, ...})`);
  for (const key of Object.keys(options)) {
    if (!VERSION_OPTIONS.includes(key)) throw new TypeError(`${what}: unknown option ${key} (${VERSION_OPTIONS.join(", ")})`);
  }
  for (const fn of ["toHub", "fromHub"]) {
    if (typeof options[fn] !== "function") {
      throw new TypeError(`${what}: ${fn} must be a function (${fn === "toHub" ? `a ${name} object → the ${versions.hub} object` : `a ${versions.hub} object → the ${name} object`}); `
        + "every version converts to and from the hub, the version handlers see");
    }
  }
  for (const flag of ["served", "storage"]) {
    if (options[flag] !== undefined && typeof options[flag] !== "boolean") throw new TypeError(`${what}: ${flag} must be true or false`);
  }
  const spec = toObjectSchema(options.spec, `${what}: spec`);
  // A version without its own status shares the hub's (the operator writes one status).
  const status = options.status === undefined ? versions.byName.get(versions.hub).status
    : toObjectSchema(options.status, `${what}: status`);
  const deprecated = deprecation(options.deprecated, what);
  entry.versions ??= [{ name: entry.version, served: true, storage: true, schema: entry.schema,
    printerColumns: entry.printerColumns, ...(entry.deprecated && { deprecated: entry.deprecated }) }];
  if (options.storage) {
    const stored = entry.versions.find((v) => v.storage && v.name !== entry.version);
    if (stored) throw new Error(`${what}: version ${stored.name} is already the storage version; exactly one version is stored`);
    entry.versions[0].storage = false;
  }
  entry.versions.push({
    name, served: options.served ?? true, storage: options.storage === true,
    ...(deprecated && { deprecated }),
    schema: objectSchema(spec, status),
    printerColumns: options.printerColumns === undefined ? entry.printerColumns
      : options.printerColumns.map((c) => checkPrinterColumn(c, entry.kind)),
  });
  versions.byName.set(name, { spec, status, toHub: options.toHub, fromHub: options.fromHub });
  const apiVersion = `${entry.group}/${name}`;
  if (spec) specSchemas.set(`${apiVersion}/${entry.kind}`, spec);
  const handle = makeKind({ apiVersion, kind: entry.kind, plural: entry.plural, namespaced: entry.scope === "Namespaced" });
  Object.defineProperties(handle, {
    scope: { value: entry.scope, enumerable: true },
    spec: { value: spec, enumerable: true },
    status: { value: status, enumerable: true },
    schema: { value: entry.versions.at(-1).schema, enumerable: true },
  });
  return handle;
}

/** `"group/version"` → `[group, version]`. */
function splitApiVersion(apiVersion, what) {
  const i = typeof apiVersion === "string" ? apiVersion.lastIndexOf("/") : -1;
  if (i <= 0) throw new TypeError(`${what}: apiVersion must be "<group>/<version>", got ${JSON.stringify(apiVersion)}`);
  return [apiVersion.slice(0, i), apiVersion.slice(i + 1)];
}

/**
 * The `convert` dispatch: `input.objects` converted to `input.desiredAPIVersion` through the
 * hub, as a conversion webhook answers (`{convertedObjects}`). A conversion is pure: it runs
 * with writes, the clock, randomness and fetch refused (`ctx.pure`).
 */
function convertObjects(input) {
  const desired = input.desiredAPIVersion;
  const [group, to] = splitApiVersion(desired, "convert: desiredAPIVersion");
  if (!Array.isArray(input.objects)) throw new TypeError("convert: the input carries no objects (a list)");
  ctx = { cr: null, namespace: undefined, observed: {}, observedInput: true, out: newOutput(), fns: null,
    index: { applies: new Map(), patches: new Map() }, removed: new Set(), readOnly: true, pure: true };
  try {
    const convertedObjects = input.objects.map((obj) => convertOne(obj, group, to));
    const out = { convertedObjects };
    return typeof globalThis.__ct_host?.snap === "function" ? out : JSON.stringify(out);
  } finally {
    ctx = null;
  }
}

/** One object to version `to` of `group`: through its version's `toHub`, then `fromHub` of `to`. */
function convertOne(obj, group, to) {
  if (!isPlainObject(obj)) throw new TypeError("convert: every object must be a JSON object");
  const versions = conversions.get(`${group}/${obj.kind}`);
  const name = `${obj.kind} ${obj.metadata?.namespace ? `${obj.metadata.namespace}/` : ""}${obj.metadata?.name ?? ""}`;
  if (!versions) throw new TypeError(`convert: the script declares no resource ${obj.kind}.${group}`);
  const [fromGroup, from] = splitApiVersion(obj.apiVersion, `convert ${name}`);
  for (const [g, v] of [[fromGroup, from], [group, to]]) {
    if (g !== group || !versions.byName.has(v)) {
      throw new TypeError(`convert ${name}: ${obj.kind}.${group} has no version ${g}/${v} (it has ${[...versions.byName.keys()].join(", ")})`);
    }
  }
  if (from === to) return obj;
  const hub = from === versions.hub ? obj : convertStep(obj, versions, from, versions.hub, "toHub");
  return to === versions.hub ? hub : convertStep(hub, versions, to, to, "fromHub");
}

/**
 * One call of a conversion function (`fn` of version `owner`) on a copy of `obj`, whose result
 * becomes an object of version `target`: apiVersion and kind set, metadata kept but for
 * labels and annotations (the only metadata a conversion may change, as the API server
 * requires), the spec checked against the target version's schema.
 */
function convertStep(obj, versions, owner, target, fn) {
  const fromVersion = splitApiVersion(obj.apiVersion, "convert")[1];
  const what = `converting ${obj.kind} ${obj.metadata?.namespace ? `${obj.metadata.namespace}/` : ""}${obj.metadata?.name ?? ""} `
    + `from ${fromVersion} to ${target} (${owner}.${fn})`;
  let r;
  try {
    r = versions.byName.get(owner)[fn](clone(obj));
  } catch (e) {
    if (e instanceof Error) {
      e.message = `${what}: ${e.message}`;
      throw e;
    }
    throw new Error(`${what}: threw ${safeJson(e)}`);
  }
  if (r && typeof r.then === "function") throw new TypeError(`${what}: returned a Promise; a conversion is synchronous (no async, no await)`);
  if (!isPlainObject(r)) throw new TypeError(`${what}: must return the converted object ({spec, status?}), got ${r === null ? "null" : typeof r}`);
  const copy = copyPlain(r, 0);
  if (copy === NOT_PLAIN) throw new TypeError(`${what}: returned something JSON cannot carry (a Date, a function, NaN, a class instance)`);
  const { apiVersion: _a, kind: _k, metadata, ...rest } = copy;
  const meta = { ...obj.metadata };
  for (const key of ["labels", "annotations"]) {
    const v = metadata?.[key];
    if (v === undefined) continue;
    if (v !== null && (!isPlainObject(v) || Object.values(v).some((x) => typeof x !== "string"))) {
      throw new TypeError(`${what}: metadata.${key} must map names to strings`);
    }
    if (v === null || !Object.keys(v).length) delete meta[key];
    else meta[key] = v;
  }
  const out = { apiVersion: `${versions.group}/${target}`, kind: obj.kind, metadata: meta, ...rest };
  const schema = versions.byName.get(target).spec;
  if (schema) {
    const checked = schema.safeParse(out.spec ?? {});
    if (!checked.success) throw new TypeError(`${what}: the ${target} object it returned is invalid: ${checked.error.message}`);
  }
  return out;
}

function checkPrinterColumn(c, kind) {
  if (!c?.name || !c.jsonPath?.startsWith(".") || !PRINTER_TYPES.includes(c.type ?? "string")) {
    throw new TypeError(`resource ${kind}: printer column needs name, jsonPath starting with "." and type in ${PRINTER_TYPES.join("|")}`);
  }
  return { name: c.name, type: c.type ?? "string", jsonPath: c.jsonPath,
    ...(c.description !== undefined && { description: c.description }),
    ...(c.priority !== undefined && { priority: c.priority }) };
}

const PREDICATES = ["GenerationChanged", "ResourceVersionChanged", "LabelChanged", "AnnotationChanged"];

function checkPredicate(p) {
  if (typeof p === "string" && PREDICATES.includes(p)) return p;
  if (isPlainObject(p) && Array.isArray(p.and)) return { and: p.and.map(checkPredicate) };
  if (isPlainObject(p) && Array.isArray(p.or)) return { or: p.or.map(checkPredicate) };
  throw new TypeError(`watches: predicate must be one of ${PREDICATES.join(", ")} or {and|or: [...]}`);
}

/** `"app=web,tier"` as is; `{app: "web"}` → `"app=web"`. */
function labelSelector(sel, what = "watches: labelSelector") {
  if (typeof sel === "string") return sel;
  if (isPlainObject(sel)) return Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(",");
  throw new TypeError(`${what} must be a string or an object of ${what.endsWith("annotationSelector") ? "annotations" : "labels"}`);
}

const asList = (v) => (v === undefined ? [] : Array.isArray(v) ? [...v] : [v]);

function checkRule(rule) {
  const r = {
    apiGroups: asList(rule?.apiGroups), resources: asList(rule?.resources), verbs: asList(rule?.verbs),
    ...(rule?.resourceNames !== undefined && { resourceNames: asList(rule.resourceNames) }),
  };
  if (!r.resources.length || !r.verbs.length || rule.apiGroups === undefined || rule.apiGroups === null) {
    throw new TypeError("permission: a rule needs apiGroups, resources and verbs");
  }
  return r;
}

const HANDLERS = ["reconcile", "finalize", "onStart", "validate", "mutate"];

/** The fluent builder `operator(res)` returns; every method returns the builder. */
class OperatorBuilder {
  #entry;
  #fns;
  constructor(entry, fns) {
    this.#entry = entry;
    this.#fns = fns;
  }
  /**
   * Periodic resync of every CR. A tick whose handler would read exactly what it read last
   * time is skipped unless `{ always: true }`.
   */
  every(d, opts = {}) {
    this.#entry.every = duration(d, "every");
    if (!isPlainObject(opts)) throw new TypeError("every: the second argument is an options object ({ always })");
    for (const key of Object.keys(opts)) {
      if (key !== "always") throw new TypeError(`every: unknown option ${key} (only always)`);
    }
    if (opts.always !== undefined && typeof opts.always !== "boolean") {
      throw new TypeError("every: always must be true or false");
    }
    if (opts.always) this.#entry.alwaysRun = true;
    return this;
  }
  /**
   * Owned children: watched, mapped to their owner, full RBAC, pruned when no longer applied.
   * A last argument `{ childrenOnly: true }` caches only objects of these kinds that are
   * children (they carry the ApplySet part-of label ctop sets on every child), so unrelated
   * objects of the kind in the cluster cost no memory; `getObserved` then sees children only.
   * `{ adopt: true }` lets a reconcile take over an existing object of these kinds that is
   * not a child yet when it applies one under its name (by default that child fails).
   */
  manages(...kinds) {
    const last = kinds[kinds.length - 1];
    const opts = isPlainObject(last) && !("kind" in last) ? kinds.pop() : {};
    for (const key of Object.keys(opts)) {
      if (key !== "childrenOnly" && key !== "adopt") {
        throw new TypeError(`manages: unknown option ${key} (childrenOnly, adopt)`);
      }
      if (typeof opts[key] !== "boolean") throw new TypeError(`manages: ${key} must be true or false`);
    }
    // An object's children are one ApplySet, named after the object: two controllers of the
    // same kind that both applied children would each prune the other's.
    for (const k of kinds.flat()) kindRef(k, "manages");
    const rival = registry.controllers.find((c) => c !== this.#entry && c.manages.length
      && kindKey(c.for) === kindKey(this.#entry.for));
    if (rival && kinds.flat().length) {
      throw new Error(`operator "${this.#entry.name}": operator "${rival.name}" already manages children of `
        + `${this.#entry.for.kind} objects, and an object's children belong to one controller (each would prune `
        + `the other's); apply them from one controller, or patch() objects you do not own`);
    }
    this.#addKinds("manages", kinds);
    for (const option of ["childrenOnly", "adopt"]) {
      if (opts[option] !== true) continue;
      this.#entry[option] ??= [];
      for (const k of kinds.flat()) {
        const ref = kindRef(k, "manages");
        if (!this.#entry[option].some((x) => kindKey(x) === kindKey(ref))) this.#entry[option].push(ref);
      }
    }
    return this;
  }
  /** Read-only kinds: watched (so `getObserved` sees them), RBAC get/list/watch. */
  reads(...kinds) { return this.#addKinds("reads", kinds); }
  #addKinds(field, kinds) {
    for (const k of kinds.flat()) {
      const ref = kindRef(k, field);
      if (!this.#entry[field].some((x) => kindKey(x) === kindKey(ref))) this.#entry[field].push(ref);
    }
    return this;
  }
  /**
   * Watch another kind; `mapper(obj)` names the CRs to reconcile (without a mapper the
   * runtime maps by owner reference). `watches(kind, opts)` is accepted too.
   */
  watches(kind, mapper, opts = {}) {
    if (isPlainObject(mapper)) [mapper, opts] = [undefined, mapper];
    if (mapper != null && typeof mapper !== "function") throw new TypeError("watches: mapper must be a function");
    const w = { kind: kindRef(kind, "watches"), mapper: typeof mapper === "function" };
    if (opts.namespace !== undefined) w.namespace = String(opts.namespace);
    if (opts.labelSelector !== undefined) w.labelSelector = labelSelector(opts.labelSelector);
    if (opts.predicate !== undefined) w.predicate = checkPredicate(opts.predicate);
    this.#fns.mappers.push(mapper ?? null);
    this.#entry.watches.push(w);
    return this;
  }
  /**
   * Where `fetch` may go: URL prefixes `scheme://host[:port][/path]` (host `*.example.com`
   * for subdomains, port `*` for any). Nothing else is reachable, and never link-local
   * addresses (cloud metadata) or the operator's own ports; the generated NetworkPolicy
   * allows the same destinations.
   */
  egress(...urls) {
    this.#entry.egress ??= [];
    for (const u of urls.flat()) {
      if (typeof u !== "string" || !/^https?:\/\/[^/\s]+/i.test(u)) {
        throw new TypeError(`egress: expected URL prefixes like "https://api.example.com", got ${JSON.stringify(u)}`);
      }
      if (!this.#entry.egress.includes(u)) this.#entry.egress.push(u);
    }
    return this;
  }
  /** Extra RBAC rules beyond what manages/reads imply. */
  permission(...rules) {
    for (const r of rules.flat()) this.#entry.permissions.push(checkRule(r));
    return this;
  }
  /** Cleanup before deletion; the finalizer name defaults to `<plural>.<group>/finalizer`. */
  finalize(fn, name) {
    const n = typeof name === "string" ? name : name?.name;
    const { plural, group } = this.#fns.kind;
    this.#entry.finalizer = n ?? `${group ? `${plural}.${group}` : plural}/finalizer`;
    return this.#handler("finalize", fn);
  }
  onStart(fn) { return this.#handler("onStart", fn); }
  validate(fn) { return this.#handler("validate", fn); }
  /**
   * Mutating admission handler. With `{ defaults: true }` the handler sees the spec with the
   * schema's defaults filled in, so the webhook's patch writes them into the stored object.
   */
  mutate(fn, opts = {}) {
    if (opts != null && !isPlainObject(opts)) throw new TypeError("mutate: options must be an object");
    this.#fns.mutateDefaults = opts?.defaults === true;
    return this.#handler("mutate", fn);
  }
  reconcile(fn) { return this.#handler("reconcile", fn); }
  /**
   * A rule that holds for every CR once the operator is quiet, checked by `ctop test --fuzz`
   * (never by the running operator): `fn(cr, observed)` returns true or nothing when it
   * holds, else false, a message or a list of messages. `name` defaults to `invariant N`.
   * Several are kept in order.
   */
  invariant(name, fn) {
    if (typeof name === "function" && fn === undefined) [name, fn] = [undefined, name];
    if (typeof fn !== "function") throw new TypeError("invariant: expected a function (and a name before it, optionally)");
    const list = this.#fns.invariants;
    const n = name ?? `invariant ${list.length + 1}`;
    if (typeof n !== "string" || !n) throw new TypeError("invariant: the name must be a non-empty string");
    if (list.some((x) => x.name === n)) throw new Error(`${this.#entry.name}: invariant "${n}" is declared twice`);
    list.push({ name: n, fn });
    (this.#entry.invariants ??= []).push(n);
    this.#entry.handlers = handlerNames(this.#fns);
    return this;
  }
  #handler(name, fn) {
    if (typeof fn !== "function") throw new TypeError(`${name}: expected a function`);
    if (this.#fns.handlers[name]) throw new Error(`${this.#entry.name}: ${name} is already set`);
    this.#fns.handlers[name] = fn;
    this.#entry.handlers = handlerNames(this.#fns);
    return this;
  }
}

/** The `handlers` of a controller's entry: those declared, then `invariant` when it has any. */
const handlerNames = (fns) =>
  [...HANDLERS.filter((h) => fns.handlers[h]), ...(fns.invariants.length ? ["invariant"] : [])];

/** Start a controller for `res` (a `resource(...)` handle or any kind handle). */
export function operator(res, { name, namespace, labelSelector: selector, annotationSelector, predicate } = {}) {
  const ref = kindRef(res, "operator");
  const info = knownKinds.get(kindKey(ref)) ?? { ...ref, plural: pluralize(ref.kind), group: "", namespaced: true };
  const taken = (n) => registry.controllers.some((c) => c.name === n);
  let unique = name ?? ref.kind.toLowerCase();
  if (name !== undefined && taken(name)) throw new Error(`operator name "${name}" is used twice`);
  for (let i = 2; taken(unique); i++) unique = `${ref.kind.toLowerCase()}-${i}`;
  const entry = { index: registry.controllers.length, name: unique, for: ref, every: null, manages: [],
    reads: [], watches: [], permissions: [], finalizer: null, handlers: [] };
  // Scoping of the primary watch itself (the Δ-controller's source options).
  if (namespace !== undefined) entry.namespace = String(namespace);
  if (selector !== undefined) entry.labelSelector = labelSelector(selector, "operator: labelSelector");
  if (annotationSelector !== undefined) {
    entry.annotationSelector = labelSelector(annotationSelector, "operator: annotationSelector");
  }
  if (predicate !== undefined) entry.predicate = checkPredicate(predicate);
  const fns = { entry, handlers: {}, mappers: [], invariants: [], kind: info, schema: specSchemas.get(kindKey(ref)) };
  registry.controllers.push(entry);
  controllerFns.push(fns);
  return new OperatorBuilder(entry, fns);
}

// ───────────────────────────── inside a handler ─────────────────────────────

/**
 * The state of the dispatch being run. `cr` is the object being reconciled (null in
 * `onStart` and mappers); `namespace` is the default namespace for lookups and children.
 */
let ctx = null;

const newOutput = () => ({ applies: [], patches: [], status: null, conditions: [], events: [],
  finalizers: { add: [], remove: [] }, result: { type: "ok" } });

/**
 * The running dispatch, for functions that write output: they make no sense at top level,
 * nor in an invariant, which only reads.
 */
function active(what) {
  if (!ctx) throw new Error(`${what} can only be called inside a handler`);
  if (ctx.pure) throw impure(what);
  if (ctx.readOnly) {
    throw new TypeError(`${what} cannot be called in an invariant: invariants only read `
      + "(observed.get/list/children, getObserved, listObserved) and return what does not hold");
  }
  return ctx;
}

/** The error of a call a conversion may not make: it must be a pure function of the object. */
const impure = (what) => new TypeError(`${what} cannot be called in a conversion: a conversion is a pure function `
  + "of the object it converts (no writes, clock, randomness or fetch), so that every replica and every retry converts alike");

/** Throws when the running dispatch is a conversion. */
function notInConversion(what) {
  if (ctx?.pure) throw impure(what);
}

function isCurrent(obj) {
  const cr = ctx?.cr;
  if (!cr || !obj) return false;
  if (obj === cr) return true;
  const a = obj.metadata ?? {}, b = cr.metadata ?? {};
  if (a.uid && b.uid) return a.uid === b.uid;
  return obj.kind === cr.kind && a.name === b.name && (a.namespace ?? "") === (b.namespace ?? "");
}

function checkObject(obj, what) {
  if (!isPlainObject(obj) || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string"
      || typeof obj.metadata?.name !== "string" || !obj.metadata.name) {
    throw new TypeError(`${what}: expected an object with apiVersion, kind and metadata.name (build it with a kind handle, e.g. Secret({...}))`);
  }
  const ns = ctx?.cr?.metadata?.namespace;
  const fill = obj.metadata.namespace == null && ns && isNamespaced(obj) ? ns : undefined;
  const key = `${obj.apiVersion}/${obj.kind}/${fill ?? obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
  // The snapshot is taken now, so later changes to `obj` are not sent. Inside ctop the host
  // copies the object into Rust (`__ct_host.snap`, filling in the namespace) and the output
  // carries its index; elsewhere (node tests) it is JSON text spliced into the output.
  const snap = globalThis.__ct_host?.snap;
  if (typeof snap === "function") return { key, id: snap(obj, fill) };
  const filled = fill ? { ...obj, metadata: { ...obj.metadata, namespace: fill } } : obj;
  return { key, text: JSON.stringify(filled) };
}

/**
 * Insert or replace the snapshot with the same key in `c.out[name]`, through the call's
 * key → position index (a scan per call made a loop of n applies take n² steps). A new child
 * past the host's `maxChildren` makes the host mark the call failed (catching the error
 * changes nothing) and throw.
 */
function pushUnique(c, name, snap) {
  const list = c.out[name];
  const index = c.index[name];
  const i = index.get(snap.key);
  if (i !== undefined) {
    // The replaced copy is freed in the host and no longer counts against the output budget.
    if (list[i].id !== undefined) globalThis.__ct_host?.release?.(list[i].id);
    list[i] = snap;
    return;
  }
  index.set(snap.key, list.length);
  list.push(snap);
  const host = globalThis.__ct_host;
  if (typeof host?.maxChildren === "number" && c.out.applies.length + c.out.patches.length > host.maxChildren) {
    host.tooManyChildren();
  }
}

/**
 * Add `obj` to the desired children of this reconcile (server-side applied with an owner
 * reference; what was applied before and is missing now gets pruned). Namespaced children
 * without a namespace get the CR's. Returns `obj` itself; the call takes a snapshot, so
 * later changes to `obj` are not sent. An existing object of that name that is not a child
 * yet is left alone (that child fails) unless `options.adopt` is true.
 */
export function apply(obj, options) {
  const c = active("apply");
  if (options !== undefined) {
    if (!isPlainObject(options)) throw new TypeError("apply: options must be an object ({ adopt: true })");
    for (const key of Object.keys(options)) {
      if (key !== "adopt") throw new TypeError(`apply: unknown option ${key} (only adopt)`);
    }
    if (options.adopt !== undefined && typeof options.adopt !== "boolean") {
      throw new TypeError("apply: adopt must be true or false");
    }
  }
  const snap = checkObject(obj, "apply");
  const spec = specSchemas.get(kindKey(obj));
  if (spec && obj.spec !== undefined) {
    const issues = [];
    spec._run(obj.spec, ["spec"], issues);
    if (issues.length) throw new ZodError(issues);
  }
  if (c.removed.has(snap.key)) throw new Error(`apply: ${snap.key} was removed in this call; apply or remove it, not both`);
  pushUnique(c, "applies", snap);
  if (options?.adopt === true) (c.adopted ??= new Set()).add(snap.key);
  return obj;
}

/** A partial object to merge into an existing object the operator does not own (no owner ref, never pruned). */
export function patch(obj) {
  const c = active("patch");
  const snap = checkObject(obj, "patch");
  pushUnique(c, "patches", snap);
  return obj;
}

/**
 * Delete the child `obj` (named by apiVersion, kind, metadata.name and, for namespaced kinds,
 * metadata.namespace, which defaults to the CR's) once this call's applies succeeded: for a
 * `finalize` that tears down in order, or a reconcile that returns `Result.keep()`. Only a
 * child of the object handled, of a `.manages()` kind, is deleted; anything else is left
 * alone. Returns `obj`.
 */
export function remove(obj) {
  const c = active("remove");
  if (!isPlainObject(obj) || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string"
      || typeof obj.metadata?.name !== "string" || !obj.metadata.name) {
    throw new TypeError("remove: expected an object with apiVersion, kind and metadata.name (e.g. ConfigMap({ metadata: { name } }))");
  }
  const ns = c.cr?.metadata?.namespace;
  const namespace = obj.metadata.namespace ?? (ns && isNamespaced(obj) ? ns : undefined);
  const key = `${obj.apiVersion}/${obj.kind}/${namespace ?? ""}/${obj.metadata.name}`;
  if (c.index.applies.has(key)) throw new Error(`remove: ${key} was applied in this call; apply or remove it, not both`);
  if (!c.removed.has(key)) {
    c.removed.add(key);
    // Only outputs that remove something carry `deletes`.
    (c.out.deletes ??= []).push({ apiVersion: obj.apiVersion, kind: obj.kind,
      metadata: { name: obj.metadata.name, ...(namespace && { namespace }) } });
  }
  return obj;
}

/**
 * The output: an object whose `applies`/`patches` are snapshot indices when the host took
 * the snapshots (the runtime copies it and splices them in), else JSON text with the
 * snapshots spliced in.
 */
function output(o) {
  // The children that may adopt, by their position (the snapshots become indices below).
  if (ctx?.adopted?.size) o.adopt = o.applies.flatMap((x, i) => (ctx.adopted.has(x.key) ? [i] : []));
  if (typeof globalThis.__ct_host?.snap === "function") {
    // `o` is the fresh object `finish` built.
    o.applies = o.applies.map((x) => x.id);
    o.patches = o.patches.map((x) => x.id);
    return o;
  }
  const { applies, patches, ...rest } = o;
  const tail = JSON.stringify(rest);
  const list = (snaps) => `[${snaps.map((x) => x.text).join(",")}]`;
  return `{"applies":${list(applies)},"patches":${list(patches)}${tail === "{}" ? "}" : `,${tail.slice(1)}`}`;
}

const warnedKinds = new Set();

/**
 * The observed objects of kind `ref`. Either the input carried them (`input.observed`, a
 * map by kind, as tests and `ctop` before lazy caches pass them), or the runtime serves
 * them on demand through `__ct_host.observed("list", kindKey)`: a kind is then read from
 * the cache (and parsed) only when a handler asks for it, once per call.
 */
function observedList(ref) {
  notInConversion("getObserved/listObserved");
  const key = kindKey(ref);
  let list = ctx?.observed?.[key];
  if (list === undefined && ctx && !ctx.observedInput) {
    const text = globalThis.__ct_host?.observed?.("list", key);
    list = text == null ? null : JSON.parse(text);
    (ctx.observed ??= {})[key] = list;
  }
  if (Array.isArray(list)) return list;
  const e = ctx?.fns?.entry;
  const declared = e && [...e.manages, ...e.reads, ...e.watches.map((w) => w.kind), e.for]
    .some((k) => kindKey(k) === key);
  if (e && !declared && !warnedKinds.has(`${e.name} ${key}`)) {
    warnedKinds.add(`${e.name} ${key}`);
    log.warn(`${key} is not in manages/reads/watches of operator "${e.name}", so nothing of it is observed`);
  }
  return [];
}

/**
 * The cached object of `kind` named `name`, or undefined. `namespace` defaults to the CR's
 * (for cluster-scoped kinds it is ignored). Served by one keyed cache lookup when the
 * runtime provides `__ct_host.observed`.
 */
export function getObserved(kind, name, namespace) {
  const ref = kindRef(kind, "getObserved");
  const nsd = isNamespaced(ref);
  const ns = nsd ? (namespace ?? ctx?.namespace) : undefined;
  const key = kindKey(ref);
  if (ctx && !ctx.observedInput && ctx.observed?.[key] === undefined && typeof name === "string") {
    const text = globalThis.__ct_host?.observed?.("get", key, ns ?? "", name);
    if (text != null) return JSON.parse(text) ?? undefined;
  }
  return observedList(ref).find((o) => o?.metadata?.name === name
    && (ns === undefined || (o.metadata.namespace ?? undefined) === ns));
}

/**
 * All cached objects of `kind`, optionally filtered by `{namespace, labels, ownedBy}` or a
 * predicate. `ownedBy: obj` keeps the objects with an owner reference to `obj` (by uid when
 * both have one, else by apiVersion's group, kind and name), in `obj`'s namespace, and the
 * children ctop ties to `obj` in other namespaces (their `ctop.dev/owner` annotation).
 */
export function listObserved(kind, filter) {
  const list = observedList(kindRef(kind, "listObserved"));
  if (typeof filter === "function") return list.filter(filter);
  if (filter == null) return [...list];
  if (!isPlainObject(filter)) throw new TypeError("listObserved: the filter must be a function or {namespace, labels, ownedBy}");
  const owner = filter.ownedBy == null ? undefined : ownerMatcher(filter.ownedBy);
  return list.filter((o) => (filter.namespace === undefined || o.metadata?.namespace === filter.namespace)
    && Object.entries(filter.labels ?? {}).every(([k, v]) => o.metadata?.labels?.[k] === v)
    && (owner === undefined || owner(o)));
}

/** A predicate: does an object have an owner reference to `owner`? */
function ownerMatcher(owner) {
  const ref = kindRef(owner, "listObserved ownedBy");
  const meta = owner.metadata ?? {};
  if (typeof meta.name !== "string") throw new TypeError("listObserved: ownedBy must be an object with metadata.name");
  const group = (av) => (av.includes("/") ? av.slice(0, av.lastIndexOf("/")) : "");
  const ns = meta.namespace;
  const tied = tiedElsewhere(ref.apiVersion, ref.kind, meta);
  return (o) => ((ns === undefined || o.metadata?.namespace === ns)
    && (o.metadata?.ownerReferences ?? []).some((r) => (meta.uid && r.uid
      ? r.uid === meta.uid
      : r.kind === ref.kind && r.name === meta.name && group(String(r.apiVersion)) === group(ref.apiVersion))))
    || tied(o);
}

/**
 * A predicate: is an object a child of the namespaced object (`apiVersion`, `kind`, `meta`)
 * in another namespace? It carries no owner reference (none can cross namespaces); the
 * annotation the applier writes names its owner as `Kind.group namespace/name`.
 */
function tiedElsewhere(apiVersion, kind, meta) {
  const ns = meta?.namespace;
  if (typeof ns !== "string" || !ns) return () => false;
  const g = String(apiVersion).includes("/") ? String(apiVersion).slice(0, String(apiVersion).lastIndexOf("/")) : "";
  const tie = `${kind}${g ? `.${g}` : ""} ${ns}/${meta.name}`;
  return (o) => o?.metadata?.namespace !== ns && o?.metadata?.annotations?.["ctop.dev/owner"] === tie;
}

/** The status of `cr`; for the CR being reconciled, with this call's `setStatus` patches merged in. */
export function getStatus(cr) {
  const base = clone(cr?.status) ?? {};
  const p = ctx?.out.status;
  return isCurrent(cr) && p ? deepMerge(base, clone(p)) : base;
}

/** Merge `patch` into the status patch of the CR being reconciled (written once, after the handler). */
export function setStatus(cr, statusPatch) {
  const { out } = active("setStatus");
  if (!isCurrent(cr)) throw new Error("setStatus: only the object being handled can be given a status");
  if (!isPlainObject(statusPatch)) throw new TypeError("setStatus: the patch must be an object");
  out.status = deepMerge(out.status ?? {}, clone(statusPatch));
}

const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/**
 * Set one condition of the CR's `status.conditions` (last call per type wins). `status`
 * may be a boolean. The runtime fills lastTransitionTime and observedGeneration.
 */
export function setCondition(cr, { type, status, reason, message = "" } = {}) {
  const { out } = active("setCondition");
  if (!isCurrent(cr)) throw new Error("setCondition: only the object being handled can be given conditions");
  const s = status === true ? "True" : status === false ? "False" : status;
  if (typeof type !== "string" || !type) throw new TypeError("setCondition: type is required");
  if (!["True", "False", "Unknown"].includes(s)) throw new TypeError(`setCondition ${type}: status must be "True", "False", "Unknown" or a boolean`);
  const r = reason ?? (s === "True" ? type : s === "False" ? `Not${type}` : "Unknown");
  if (!REASON.test(r)) throw new TypeError(`setCondition ${type}: reason ${JSON.stringify(r)} must be CamelCase ([A-Za-z][A-Za-z0-9_,:]*)`);
  const cond = { type, status: s, reason: r, message: String(message) };
  const list = out.conditions;
  const i = list.findIndex((c) => c.type === type);
  if (i >= 0) list[i] = cond;
  else list.push(cond);
  return cond;
}

/** Record a Kubernetes Event about `obj` (the CR when null). */
export function event(obj, { type = "Normal", reason, message = "" } = {}) {
  const { out } = active("event");
  if (type !== "Normal" && type !== "Warning") throw new TypeError(`event: type must be "Normal" or "Warning"`);
  if (typeof reason !== "string" || !reason) throw new TypeError("event: reason is required");
  const e = { type, reason, message: String(message) };
  if (obj) {
    const m = obj.metadata ?? {};
    e.regarding = { apiVersion: obj.apiVersion, kind: obj.kind, name: m.name,
      ...(m.namespace && { namespace: m.namespace }), ...(m.uid && { uid: m.uid }) };
  }
  out.events.push(e);
  return e;
}

function finalizerName(name, what) {
  const n = name ?? ctx?.fns.entry.finalizer;
  if (typeof n !== "string" || !n) throw new TypeError(`${what}: name is required (no .finalize() finalizer to default to)`);
  return n;
}

/**
 * Add finalizer `name` (default: this operator's) to `obj.metadata.finalizers`. On the CR
 * being handled it is also sent to the runtime. Returns whether anything changed.
 */
export function addFinalizer(obj, name) {
  if (ctx?.readOnly) active("addFinalizer"); // throws: an invariant only reads
  const n = finalizerName(name, "addFinalizer");
  obj.metadata ??= {};
  const list = (obj.metadata.finalizers ??= []);
  const changed = !list.includes(n);
  if (changed) list.push(n);
  if (isCurrent(obj)) {
    const f = ctx.out.finalizers;
    f.remove = f.remove.filter((x) => x !== n);
    if (!f.add.includes(n)) f.add.push(n);
  }
  return changed;
}

/** The reverse of `addFinalizer`. */
export function removeFinalizer(obj, name) {
  if (ctx?.readOnly) active("removeFinalizer");
  const n = finalizerName(name, "removeFinalizer");
  const list = obj.metadata?.finalizers ?? [];
  const changed = list.includes(n);
  if (changed) obj.metadata.finalizers = list.filter((x) => x !== n);
  if (isCurrent(obj)) {
    const f = ctx.out.finalizers;
    f.add = f.add.filter((x) => x !== n);
    if (!f.remove.includes(n)) f.remove.push(n);
  }
  return changed;
}

/** `n` characters from [a-zA-Z0-9], from the OS's randomness. */
export function randomString(n = 32) {
  notInConversion("randomString()");
  if (!Number.isInteger(n) || n < 1 || n > 65536) throw new RangeError("randomString: n must be an integer in 1..65536");
  return String(host().randomString(n));
}

/** Milliseconds since the epoch, from the host clock. */
export const now = () => {
  notInConversion("now()");
  return Number(host().now());
};

/** Milliseconds since the epoch from a number, a Date or an RFC 3339 string. */
function instant(t, what) {
  const ms = t instanceof Date ? t.getTime() : typeof t === "string" ? Date.parse(t) : t;
  if (typeof ms !== "number" || !Number.isFinite(ms)) {
    throw new TypeError(`${what}: expected a time (ms since the epoch, a Date or an RFC 3339 string), got ${String(t)}`);
  }
  return ms;
}

/**
 * A cron schedule (five fields, as a CronJob's `schedule`, or `@hourly`-style) in an IANA
 * time zone (default UTC), read by the host: QuickJS has no time zones of its own.
 * `next(after)` is the first run strictly after `after` (default `now()`), or undefined;
 * `between(from, to, {limit})` the runs in (from, to], oldest first, at most `limit`
 * (default 1000). Both are pure given their arguments: pass times explicitly to keep a
 * reconcile deterministic.
 */
export function cron(expression, { timeZone = "UTC" } = {}) {
  if (typeof expression !== "string") throw new TypeError("cron: the schedule must be a string");
  if (typeof timeZone !== "string") throw new TypeError("cron: timeZone must be a string");
  const h = host();
  // Read it once now, so a bad schedule or zone fails where it is written.
  h.cronNext(expression, timeZone, 0);
  return Object.freeze({
    expression,
    timeZone,
    next(after) {
      const ms = h.cronNext(expression, timeZone, instant(after ?? now(), "cron next"));
      return ms == null ? undefined : new Date(ms);
    },
    between(from, to, { limit = 1000 } = {}) {
      if (!Number.isInteger(limit) || limit < 1) throw new RangeError("cron between: limit must be a positive integer");
      return h.cronBetween(expression, timeZone, instant(from, "cron between"), instant(to, "cron between"), limit)
        .map((ms) => new Date(ms));
    },
  });
}

/**
 * A Secret's `data` as text: the API server returns each value base64-encoded, so this
 * decodes them (UTF-8) and overlays any `stringData` the object still carries (an object
 * built in the script, not yet stored). To write text, set `stringData`: the API server
 * encodes it into `data`.
 */
export function stringData(secret) {
  if (!isPlainObject(secret)) throw new TypeError("stringData: expected a Secret");
  const out = {};
  for (const [k, v] of Object.entries(secret.data ?? {})) {
    try {
      out[k] = String(host().decodeBase64(String(v)));
    } catch (e) {
      throw new TypeError(`stringData: data.${k} of ${secret.metadata?.name ?? "the Secret"}: ${e.message}`);
    }
  }
  return Object.assign(out, secret.stringData ?? {});
}

/**
 * The health of a Kubernetes object by the rules of kstatus (cli-utils), which kubectl,
 * Flux and kpt judge readiness with, and with which the controller keeps each primary's
 * `Ready` condition: `{status, reason, message}`, status one of `Current`, `InProgress`,
 * `Failed`, `Terminating`, `NotFound`, `Unknown`. The host computes it (`ctop-health`) from
 * the object alone, so it is pure: it may run anywhere, conversions included. `undefined`
 * and `null` (what `getObserved` gives for a child not there yet) are `NotFound`.
 */
export function health(obj) {
  if (obj != null && !isPlainObject(obj)) {
    throw new TypeError(`health(obj): expected a Kubernetes object (with apiVersion and kind), got ${typeOf(obj)}`);
  }
  const h = host();
  if (typeof h.health !== "function") throw new Error("health() is not available in this runtime");
  let text;
  try {
    text = JSON.stringify(obj ?? null);
  } catch (e) {
    throw new TypeError(`health(obj): the object cannot be written as JSON: ${e.message}`);
  }
  const { status, reason, message } = h.health(text);
  return { status, reason, message };
}

/** Response headers with case-insensitive `get`. */
class ResponseHeaders {
  #map;
  constructor(obj) {
    this.#map = new Map(Object.entries(obj ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
  }
  get(name) { return this.#map.get(String(name).toLowerCase()) ?? null; }
  has(name) { return this.#map.has(String(name).toLowerCase()); }
  forEach(fn) { this.#map.forEach((v, k) => fn(v, k, this)); }
  [Symbol.iterator]() { return this.#map.entries(); }
  toJSON() { return Object.fromEntries(this.#map); }
}

/**
 * HTTP through the host: synchronous, bounded in time and size. Returns a Response-like
 * object whose `text()`/`json()` return values directly (awaiting them works too).
 * Network failures throw a TypeError, like fetch.
 */
export function fetch(url, init = {}) {
  notInConversion("fetch()");
  const h = host();
  if (typeof h.fetch !== "function") throw new Error("fetch is not available in this runtime");
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k, String(v)]));
  let body = init.body;
  if (body != null && typeof body !== "string") {
    body = JSON.stringify(body);
    if (!Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) headers["content-type"] = "application/json";
  }
  const req = { method: (init.method ?? "GET").toUpperCase(), headers, ...(body != null && { body }),
    ...(init.timeout !== undefined && { timeout: duration(init.timeout, "fetch timeout") }) };
  const raw = h.fetch(String(url), JSON.stringify(req));
  const res = typeof raw === "string" ? JSON.parse(raw) : raw;
  if (res?.error) throw new TypeError(`fetch ${url}: ${res.error}`);
  const text = res.body ?? "";
  return Object.freeze({
    url: String(url), status: res.status, statusText: res.statusText ?? "",
    ok: res.status >= 200 && res.status < 300, headers: new ResponseHeaders(res.headers),
    text: () => text, json: () => JSON.parse(text),
  });
}

const logAt = (level) => (message, fields) =>
  void host().log(level, typeof message === "string" ? message : safeJson(message), safeJson(fields));

/** Structured logs through the host (the runtime adds operator and object fields). */
export const log = Object.freeze({ debug: logAt("debug"), info: logAt("info"), warn: logAt("warn"), error: logAt("error") });

/** The operator's environment and values (replaced in place on every call). */
export const Env = {};
export const Values = {};
const refill = (target, src) => {
  for (const k of Object.keys(target)) delete target[k];
  if (isPlainObject(src)) Object.assign(target, src);
};
refill(Env, globalThis.__ct_env);
refill(Values, globalThis.__ct_values);

/** What a handler returns. */
export const Result = Object.freeze({
  ok: () => ({ type: "ok" }),
  /**
   * Done, but leave the children alone: what this call applied is applied, nothing is
   * pruned. For an early return (an invalid spec, a dependency not ready) that must not
   * delete what the last complete reconcile created. With `after`, run again then.
   */
  keep: (after) => after === undefined ? { type: "ok", keep: true }
    : { type: "requeue", after: duration(after, "Result.keep"), keep: true },
  requeue: (after) => ({ type: "requeue", after: duration(after, "Result.requeue") }),
  error: (message) => ({ type: "error", message: message instanceof Error ? message.message : String(message ?? "error") }),
});

// ───────────────────────────── invariants ─────────────────────────────

/** What an invariant returned, as the messages of its violations (none: it holds). */
function violationsOf(r) {
  if (r === undefined || r === null || r === true) return [];
  if (r === false || r === "") return ["does not hold"];
  if (typeof r === "string") return [r];
  if (Array.isArray(r) && r.every((m) => typeof m === "string")) return r.map((m) => m || "does not hold");
  if (typeof r?.then === "function") {
    r.then(undefined, () => {}); // its rejection is not the call's failure
    return ["returned a Promise: an invariant is synchronous (no async, no await)"];
  }
  const what = Array.isArray(r) ? "a list that holds a non-string" : isPlainObject(r) ? "an object" : `${typeOf(r)} ${String(r)}`;
  return [`returned ${what}: an invariant returns true or nothing (holds), false, a message or a list of messages`];
}

/**
 * An invariant's second argument: `get` and `list` are `getObserved` and `listObserved`;
 * `children` the objects of every observed kind whose controller owner reference is `cr`
 * (by uid), and its children in other namespaces, computed on first use.
 */
function observedView(cr) {
  let children;
  const uid = cr.metadata?.uid;
  const tied = tiedElsewhere(cr.apiVersion, cr.kind, cr.metadata);
  return Object.freeze({
    get: (kind, name, namespace) => getObserved(kind, name, namespace),
    list: (kind, filter) => listObserved(kind, filter),
    get children() {
      children ??= !uid ? [] : Object.values(ctx?.observed ?? {}).flatMap((list) => (Array.isArray(list) ? list : [])
        .filter((o) => (o?.metadata?.ownerReferences ?? []).some((r) => r.controller === true && r.uid === uid)
          || tied(o)));
      return children;
    },
  });
}

/**
 * The `invariant` dispatch: every invariant of the controller, in order, on a copy of
 * `input.object` (spec defaults applied, as reconcile sees it) with lookups served from
 * `input.observed`. A throw is that invariant's violation; the others still run. Writes
 * throw (see `active`). Output: `{violations: [{invariant, message}]}`, an object inside
 * ctop, JSON text elsewhere (as `output`).
 */
function checkInvariants(fns, input) {
  const object = input.object;
  if (!isPlainObject(object)) throw new TypeError("__ct_dispatch invariant: the input carries no object (the CR to check)");
  const cr = withDefaults(fns, object);
  const violations = [];
  ctx = { cr: null, namespace: cr.metadata?.namespace, observed: input.observed ?? null,
    observedInput: input.observed != null, out: newOutput(), fns,
    index: { applies: new Map(), patches: new Map() }, removed: new Set(), readOnly: true };
  try {
    for (const { name, fn } of fns.invariants) {
      ctx.cr = clone(cr);
      let messages;
      try {
        messages = violationsOf(fn(ctx.cr, observedView(ctx.cr)));
      } catch (e) {
        messages = [(e instanceof Error && e.message) || String(e)];
      }
      for (const message of messages) violations.push({ invariant: name, message });
    }
  } finally {
    ctx = null;
  }
  const out = { violations };
  return typeof globalThis.__ct_host?.snap === "function" ? out : JSON.stringify(out);
}

// ───────────────────────────── dispatch ─────────────────────────────

function normalizeResult(r, handler) {
  const keep = isPlainObject(r) && r.keep === true ? { keep: true } : {};
  if (r == null) return { type: "ok" };
  if (isPlainObject(r) && r.type === "ok") return { type: "ok", ...keep };
  if (isPlainObject(r) && r.type === "requeue") return { type: "requeue", after: duration(r.after, handler), ...keep };
  if (isPlainObject(r) && r.type === "error") return { type: "error", message: String(r.message) };
  throw new TypeError(`${handler} must return Result.ok(), Result.keep(), Result.requeue(d), Result.error(msg) or nothing`);
}

function normalizeValidation(r) {
  if (r === undefined || r === null || r === true) return { allowed: true };
  if (r === false) return { allowed: false, message: "denied by the operator" };
  if (typeof r === "string") return { allowed: false, message: r };
  if (isPlainObject(r) && typeof r.allowed === "boolean") {
    return { allowed: r.allowed, ...(r.message !== undefined && { message: String(r.message) }),
      ...(r.warnings?.length && { warnings: r.warnings.map(String) }) };
  }
  throw new TypeError("validate must return true/undefined (allowed), false or a message (denied), or {allowed, message?, warnings?}");
}

function normalizeRequests(r, obj, fns) {
  const ns = fns.kind.namespaced ? obj?.metadata?.namespace : undefined;
  const seen = new Set();
  const requests = [];
  for (const x of asList(r ?? undefined)) {
    const req = typeof x === "string" ? { name: x, namespace: ns }
      : x?.metadata ? { name: x.metadata.name, namespace: x.metadata.namespace ?? ns }
        : { name: x?.name, namespace: x?.namespace ?? ns };
    if (typeof req.name !== "string" || !req.name) throw new TypeError("mapper: each request needs a name");
    if (!fns.kind.namespaced || req.namespace == null) delete req.namespace;
    const key = `${req.namespace ?? ""}/${req.name}`;
    if (!seen.has(key)) seen.add(key), requests.push(req);
  }
  return requests;
}

/** Apply the spec defaults of the resource's schema (the API server normally did already). */
function withDefaults(fns, obj) {
  if (!fns.schema || !isPlainObject(obj)) return obj;
  const r = fns.schema.safeParse(obj.spec ?? {});
  if (r.success) obj.spec = r.data;
  return obj;
}

/** The input of a dispatch, parsed; `Env` and `Values` refilled from it. */
function readInput(inputJson) {
  const input = (typeof inputJson === "string" ? JSON.parse(inputJson) : inputJson) ?? {};
  refill(Env, input.env);
  refill(Values, input.values);
  return input;
}

/**
 * The one entry point from Rust (see crates/runtime/RUNTIME.md). Returns the output (see
 * `output`), or a Promise of it when the handler is async: the vm must then run pending jobs
 * until it settles.
 */
function dispatch(handler, controllerIndex, inputJson) {
  // Conversions belong to resources, not controllers: the index is not read.
  if (handler === "convert") return convertObjects(readInput(inputJson));
  const fns = controllerFns[controllerIndex];
  if (!fns) throw new Error(`__ct_dispatch: no controller with index ${controllerIndex}`);
  if (handler === "invariant") return checkInvariants(fns, readInput(inputJson));
  const isMap = handler.startsWith("map:");
  const fn = isMap ? fns.mappers[Number(handler.slice(4))] : HANDLERS.includes(handler) && fns.handlers[handler];
  if (typeof fn !== "function") {
    throw new Error(`__ct_dispatch: controller ${controllerIndex} has no ${isMap ? `mapper for ${handler}` : `${handler} handler`}`);
  }
  const input = readInput(inputJson);
  const object = input.object ?? null;
  const old = input.oldObject ?? undefined;
  const out = newOutput();
  ctx = { cr: isMap || handler === "onStart" ? null : object, namespace: object?.metadata?.namespace,
    observed: input.observed ?? null, observedInput: input.observed != null, out, fns,
    index: { applies: new Map(), patches: new Map() }, removed: new Set() };

  /** Turns the handler's return value into the output for this kind of handler. */
  let finish;
  const call = () => {
    switch (handler) {
      case "validate": {
        const deny = (e) => { if (e instanceof ZodError) return e.message; throw e; };
        finish = (r) => ({ ...out, ...normalizeValidation(r) });
        let r;
        try {
          r = fn(withDefaults(fns, object), old);
        } catch (e) {
          return deny(e);
        }
        return r && typeof r.then === "function" ? r.then(undefined, deny) : r;
      }
      case "mutate":
        finish = (r) => {
          if (r != null && !isPlainObject(r)) throw new TypeError("mutate must return the object or nothing");
          return { ...out, object: r ?? object };
        };
        return fn(fns.mutateDefaults ? withDefaults(fns, object) : object, old);
      case "onStart":
        finish = (r) => ({ ...out, result: normalizeResult(r, handler) });
        return fn();
      case "reconcile":
      case "finalize":
        finish = (r) => ({ ...out, result: normalizeResult(r, handler) });
        return fn(withDefaults(fns, object));
      default:
        finish = (r) => ({ ...out, requests: normalizeRequests(r, object, fns) });
        return fn(object);
    }
  };
  // `ctx` lives exactly as long as the handler: cleared when it returns, throws or settles.
  const done = (r) => {
    try {
      return output(finish(r));
    } finally {
      ctx = null;
    }
  };
  let ret;
  try {
    ret = call();
  } catch (e) {
    ctx = null;
    throw e;
  }
  if (ret && typeof ret.then === "function") {
    return ret.then(done, (e) => { ctx = null; throw e; });
  }
  return done(ret);
}

globalThis.__ct_dispatch = dispatch;

// ───────────────────────────── globals ─────────────────────────────

// Kind handles are also globals under a lowerCamel name (`secret`, `configMap`, ...), so the
// plan's `getObserved(secret, ...)` works without an import. Existing globals are kept.
for (const [kind, handle] of Object.entries(builtin)) {
  const lower = kind[0].toLowerCase() + kind.slice(1);
  if (!(lower in globalThis)) {
    Object.defineProperty(globalThis, lower, { value: handle, writable: true, configurable: true });
  }
}

// QuickJS has no console: route it to the host log.
if (typeof globalThis.console === "undefined") {
  const line = (args) => args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" ");
  globalThis.console = {
    log: (...a) => log.info(line(a)), info: (...a) => log.info(line(a)),
    debug: (...a) => log.debug(line(a)), warn: (...a) => log.warn(line(a)), error: (...a) => log.error(line(a)),
  };
}
