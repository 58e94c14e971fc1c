/**
 * `resource(...)`: a script's custom resources, their CRDs (the schema from the `z` shapes,
 * printer columns, versions with `addVersion`) registered into `globalThis.__ct_operator`,
 * and the handle of each. The conversion between versions is `conversion.js`.
 */

import { makeKind, pluralize } from "./kinds.js";
import { clone, isPlainObject } from "./util.js";
import { toObjectSchema } from "./z.js";

/**
 * What the script's top level declares, as JSON the runtime reads (`__ct_operator`): the
 * resources (CRDs) here, the controllers from `operator.js`.
 */
export const registry = { resources: [], controllers: [] };
globalThis.__ct_operator = registry;
/** Spec schemas of declared resources by `"<apiVersion>/<Kind>"`, to check applied CRs. */
export const specSchemas = new Map();

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

/** A printer column as the CRD has it (type defaults to string), or a TypeError. */
function checkPrinterColumn(c, kind) {
  if (!c?.name || !c.jsonPath?.startsWith(".") || !PRINTER_TYPES.includes(c.type ?? "string")) {
    throw new TypeError(`resource ${kind}: printer column needs name, jsonPath starting with "." and type in ${PRINTER_TYPES.join("|")}`);
  }
  return { name: c.name, type: c.type ?? "string", jsonPath: c.jsonPath,
    ...(c.description !== undefined && { description: c.description }),
    ...(c.priority !== undefined && { priority: c.priority }) };
}

// ─── versions ───

/**
 * The versions of every resource by `"<group>/<Kind>"`: the hub (the version `resource`
 * names, which handlers see) and, per version, its schemas and the two functions that convert
 * between it and the hub (`toHub`, `fromHub`; none for the hub).
 */
export const conversions = new Map();

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

