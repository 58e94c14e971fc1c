/**
 * The `convert` dispatch: objects of a resource converted between its versions through the
 * hub, as a conversion webhook answers. A conversion is pure: it runs with writes, the clock,
 * randomness and fetch refused.
 */

import { newOutput, setCtx } from "./call.js";
import { host } from "./host.js";
import { conversions } from "./resource.js";
import { clone, copyPlain, isPlainObject, NOT_PLAIN, safeJson } from "./util.js";

/** `"group/version"` → `[group, version]`. */
export function splitApiVersion(apiVersion, what) {
  const i = typeof apiVersion === "string" ? apiVersion.lastIndexOf("/") : -1;
  if (i <= 0) throw new TypeError(`${what}: apiVersion must be "<group>/<version>", got ${JSON.stringify(apiVersion)}`);
  return [apiVersion.slice(0, i), apiVersion.slice(i + 1)];
}

/**
 * The `convert` dispatch: `input.objects` converted to `input.desiredAPIVersion` through the
 * hub, as a conversion webhook answers (`{convertedObjects}`). A conversion is pure: it runs
 * with writes, the clock, randomness and fetch refused (`ctx.pure`).
 */
export function convertObjects(input) {
  const desired = input.desiredAPIVersion;
  const [group, to] = splitApiVersion(desired, "convert: desiredAPIVersion");
  if (!Array.isArray(input.objects)) throw new TypeError("convert: the input carries no objects (a list)");
  setCtx({ cr: null, namespace: undefined, observed: {}, observedInput: true, out: newOutput(), fns: null,
    index: { applies: new Map(), patches: new Map() }, removed: new Set(), readOnly: true, pure: true });
  try {
    const convertedObjects = input.objects.map((obj) => convertOne(obj, group, to));
    const out = { convertedObjects };
    return typeof host().snap === "function" ? out : JSON.stringify(out);
  } finally {
    setCtx(null);
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
