/**
 * `z`: the zod-compatible subset scripts declare their resources' spec and status with.
 * Every schema validates and fills defaults (`parse`, `safeParse`) and compiles to the
 * structural OpenAPI v3 schema a CRD carries (`toOpenAPI`). Tests: `test/z.test.mjs`.
 */

import { clone, isPlainObject, typeOf } from "./util.js";

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
  const min = def.min, max = def.max, exclusiveMin = def.exclusiveMin;
  if (min === undefined && max === undefined) return;
  const tooSmall = min !== undefined && (exclusiveMin ? n <= min : n < min);
  if (!tooSmall && !(max !== undefined && n > max)) return;
  const unit = what === "String" ? " character(s)" : what === "Array" ? " element(s)" : "";
  const say = (rel, bound) => what === "Number" ? `Number must be ${rel} ${bound}`
    : `${what} must contain ${min === max ? "exactly" : rel} ${bound}${unit}`;
  if (tooSmall) {
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
      // Not `const [k, s] = entries[i]`: QuickJS destructures an array through its iterator.
      const k = entries[i][0], s = entries[i][1];
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

/** Whether `v` is a z schema. */
export const isSchema = (v) => v instanceof ZodType;

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
export function toObjectSchema(v, what) {
  if (v === undefined || isSchema(v)) return v;
  if (isPlainObject(v)) return z.object(v);
  throw new TypeError(`${what}: expected an object of z schemas or a z.object`);
}
