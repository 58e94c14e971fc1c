/**
 * Kind handles: functions that build objects of a kind and carry its identity (`apiVersion`,
 * `kind`, `group`, `version`, `plural`, `namespaced`), and the table of every kind the SDK
 * knows (built-ins from `builtins.js`, `kindOf`, `resource`). `kindRef` reads a kind however
 * a script names it.
 */

import { isPlainObject } from "./util.js";

/** Every kind the SDK knows, by `"<apiVersion>/<Kind>"`: built-ins, `kindOf`, `resource`. */
export const knownKinds = new Map();
/** `"<apiVersion>/<Kind>"`, the key of a kind in every table of the SDK. */
export const kindKey = (r) => `${r.apiVersion}/${r.kind}`;

/**
 * A kind handle: a function that builds a full object (`Secret({metadata, data})` →
 * `{apiVersion: "v1", kind: "Secret", metadata, data}`) and carries the kind's identity.
 */
export function makeKind({ apiVersion, kind, plural, namespaced }) {
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

/** The plural a kind gets when nobody says (`Policy` → `policies`); RBAC guesses alike. */
export function pluralize(kind) {
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
export function kindRef(k, what = "kind") {
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
export const isNamespaced = (ref) => knownKinds.get(kindKey(ref))?.namespaced ?? true;
