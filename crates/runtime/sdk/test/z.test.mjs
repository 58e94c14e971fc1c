// z: validation errors, defaults, and the OpenAPI it compiles to.
import { test } from "node:test";
import assert from "node:assert/strict";
import { load } from "./helpers.mjs";

const { sdk } = await load();
const { z, ZodError } = sdk;

const issues = (schema, value) => {
  const r = schema.safeParse(value);
  assert.equal(r.success, false, `expected ${JSON.stringify(value)} to be rejected`);
  assert.ok(r.error instanceof ZodError);
  return r.error.issues.map((i) => [i.path.join("."), i.message]);
};

test("primitives accept their type and reject others with zod's messages", () => {
  assert.equal(z.string().parse("a"), "a");
  assert.equal(z.number().parse(1.5), 1.5);
  assert.equal(z.boolean().parse(false), false);
  assert.deepEqual(issues(z.string(), 1), [["", "Expected string, received number"]]);
  assert.deepEqual(issues(z.number(), "1"), [["", "Expected number, received string"]]);
  assert.deepEqual(issues(z.number(), NaN), [["", "Expected number, received nan"]]);
  assert.deepEqual(issues(z.boolean(), null), [["", "Expected boolean, received null"]]);
  assert.deepEqual(issues(z.string(), undefined), [["", "Required"]]);
  assert.deepEqual(issues(z.object({}), []), [["", "Expected object, received array"]]);
});

test("int, min and max for numbers, string lengths and array lengths", () => {
  assert.equal(z.int().parse(3), 3);
  assert.deepEqual(issues(z.number().int(), 1.5), [["", "Expected integer, received float"]]);
  assert.deepEqual(issues(z.number().min(1).max(3), 0), [["", "Number must be greater than or equal to 1"]]);
  assert.deepEqual(issues(z.number().min(1).max(3), 4), [["", "Number must be less than or equal to 3"]]);
  assert.deepEqual(issues(z.number().positive(), 0), [["", "Number must be greater than 0"]]);
  assert.equal(z.number().nonnegative().parse(0), 0);
  assert.deepEqual(issues(z.string().min(2), "a"), [["", "String must contain at least 2 character(s)"]]);
  assert.deepEqual(issues(z.string().max(2), "abc"), [["", "String must contain at most 2 character(s)"]]);
  assert.deepEqual(issues(z.string().length(2), "abc"), [["", "String must contain exactly 2 character(s)"]]);
  assert.deepEqual(issues(z.array(z.int()).min(1), []), [["", "Array must contain at least 1 element(s)"]]);
  assert.deepEqual(issues(z.array(z.int()).max(1), [1, 2]), [["", "Array must contain at most 1 element(s)"]]);
  assert.deepEqual(issues(z.string().min(3, "too short"), "ab"), [["", "too short"]]);
  assert.deepEqual(issues(z.number().max(1, { message: "too big" }), 2), [["", "too big"]]);
});

test("regex, enum, literal", () => {
  const dns = z.string().regex(/^[a-z]+$/g);
  assert.equal(dns.parse("abc"), "abc");
  assert.equal(dns.parse("abc"), "abc", "a /g flag must not make the check stateful");
  assert.deepEqual(issues(dns, "ABC"), [["", "Invalid"]]);
  assert.deepEqual(issues(z.string().regex(/^a/, "must start with a"), "b"), [["", "must start with a"]]);
  const phase = z.enum(["Pending", "Running"]);
  assert.equal(phase.parse("Running"), "Running");
  assert.deepEqual(phase.options, ["Pending", "Running"]);
  assert.deepEqual(phase.enum, { Pending: "Pending", Running: "Running" });
  assert.deepEqual(issues(phase, "Done"), [["", "Invalid enum value. Expected 'Pending' | 'Running', received 'Done'"]]);
  assert.deepEqual(issues(z.literal("v1"), "v2"), [["", 'Invalid literal value, expected "v1"']]);
  assert.throws(() => z.enum([]), TypeError);
});

test("objects: nested paths, all issues at once, unknown keys stripped or kept", () => {
  const s = z.object({
    name: z.string(),
    ports: z.array(z.object({ port: z.int().min(1) })),
    labels: z.record(z.string()),
  });
  assert.deepEqual(issues(s, { ports: [{ port: 1 }, { port: 0 }], labels: { a: 1 } }), [
    ["name", "Required"],
    ["ports.1.port", "Number must be greater than or equal to 1"],
    ["labels.a", "Expected string, received number"],
  ]);
  const e = s.safeParse({ ports: [{ port: 0 }], labels: {} }).error;
  assert.equal(e.name, "ZodError");
  assert.equal(e.message, "name: Required; ports[0].port: Number must be greater than or equal to 1");
  assert.equal(e.errors, e.issues);
  assert.throws(() => s.parse({}), (err) => err instanceof ZodError && err.issues.length === 3);
  assert.deepEqual(z.object({ a: z.int() }).parse({ a: 1, b: 2 }), { a: 1 });
  assert.deepEqual(z.object({ a: z.int() }).passthrough().parse({ a: 1, b: { c: 2 } }), { a: 1, b: { c: 2 } });
  assert.deepEqual(z.record(z.string().min(2), z.int()).safeParse({ a: 1 }).error.issues[0].path, ["a"]);
  assert.deepEqual(z.object({ a: z.int() }).extend({ b: z.string() }).partial().parse({}), {});
  assert.deepEqual(Object.keys(z.object({ a: z.int() }).shape), ["a"]);
  assert.throws(() => z.object({ a: "string" }), /field "a" is not a z schema/);
});

test("optional, nullable and defaults (applied deeply, validated, never shared)", () => {
  const s = z.object({
    replicas: z.number().int().default(1),
    image: z.string().optional(),
    tier: z.string().nullable(),
    resources: z.object({ cpu: z.string().default("100m") }).default({}),
    tags: z.array(z.string()).default([]),
    extra: z.any(),
  });
  const a = s.parse({ tier: null });
  assert.deepEqual(a, { replicas: 1, tier: null, resources: { cpu: "100m" }, tags: [] });
  a.tags.push("x");
  assert.deepEqual(s.parse({ tier: "a" }).tags, [], "a default is copied, not shared");
  assert.deepEqual(issues(s, {}), [["tier", "Required"]]);
  assert.deepEqual(issues(s, { tier: null, replicas: "2" }), [["replicas", "Expected number, received string"]]);
  assert.deepEqual(s.parse({ tier: null, extra: { any: ["thing"] } }).extra, { any: ["thing"] });
  assert.equal(z.string().nullish().parse(undefined), undefined);
  assert.equal(z.string().nullish().parse(null), null);
  assert.equal(z.any().default(5).parse(undefined), 5);
  assert.deepEqual(issues(z.int().default(1.5), undefined), [["", "Expected integer, received float"]]);
  assert.equal(z.string().describe("d").description, "d");
  assert.equal(z.optional(z.string()).isOptional(), true);
  assert.equal(z.nullable(z.string()).parse(null), null);
});

test("toOpenAPI of a representative schema, exactly", () => {
  const s = z.object({
    image: z.string().min(1).max(255).regex(/^[a-z0-9./:-]+$/).describe("Container image"),
    replicas: z.number().int().min(0).max(10).default(1),
    ratio: z.number().positive().optional(),
    mode: z.enum(["fast", "safe"]).default("safe"),
    kind: z.literal("web"),
    enabled: z.boolean().nullable(),
    ports: z.array(z.object({ name: z.string().optional(), port: z.int().min(1).max(65535) })).min(1).max(8),
    labels: z.record(z.string()).optional(),
    limits: z.record(z.string(), z.number()),
    config: z.any().describe("Free-form"),
    extra: z.object({ keep: z.string() }).passthrough().optional(),
  });
  assert.deepEqual(s.toOpenAPI(), {
    type: "object",
    properties: {
      image: { type: "string", minLength: 1, maxLength: 255, pattern: "^[a-z0-9./:-]+$", description: "Container image" },
      replicas: { type: "integer", minimum: 0, maximum: 10, default: 1 },
      ratio: { type: "number", minimum: 0, exclusiveMinimum: true },
      mode: { type: "string", enum: ["fast", "safe"], default: "safe" },
      kind: { type: "string", enum: ["web"] },
      enabled: { type: "boolean", nullable: true },
      ports: {
        type: "array",
        minItems: 1,
        maxItems: 8,
        items: {
          type: "object",
          properties: { name: { type: "string" }, port: { type: "integer", minimum: 1, maximum: 65535 } },
          required: ["port"],
        },
      },
      labels: { type: "object", additionalProperties: { type: "string" } },
      limits: { type: "object", additionalProperties: { type: "number" } },
      config: { "x-kubernetes-preserve-unknown-fields": true, description: "Free-form" },
      extra: {
        type: "object",
        properties: { keep: { type: "string" } },
        required: ["keep"],
        "x-kubernetes-preserve-unknown-fields": true,
      },
    },
    required: ["image", "kind", "enabled", "ports", "limits"],
  });
  assert.deepEqual(z.literal(3).toOpenAPI(), { type: "integer", enum: [3] });
  assert.deepEqual(z.literal(true).toOpenAPI(), { type: "boolean", enum: [true] });
  assert.deepEqual(z.object({}).toOpenAPI(), { type: "object", properties: {} });
});
