/**
 * Helpers every part of the SDK uses: plain-data checks and copies, merging, durations, and
 * JSON for logs. No state, no host calls.
 */

/** @param {unknown} v */
export const isPlainObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** Marks a value `copyPlain` leaves to the JSON round trip. */
export const NOT_PLAIN = Symbol("not plain");

/**
 * Deep copy of plain data (objects, arrays, strings, booleans, finite numbers, null), or
 * `NOT_PLAIN` for anything JSON would change (dates, functions, class instances, NaN, holes).
 */
export function copyPlain(v, depth) {
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
export function clone(v) {
  if (v === undefined) return undefined;
  const copy = copyPlain(v, 0);
  return copy === NOT_PLAIN ? JSON.parse(JSON.stringify(v)) : copy;
}

/** JSON merge-patch style merge of `patch` into `base` (objects merge, everything else replaces). */
export function deepMerge(base, patch) {
  if (!isPlainObject(base) || !isPlainObject(patch)) return patch;
  const out = { ...base };
  // An index loop over the keys, not `for (const [k, v] of Object.entries(patch))`: QuickJS
  // runs for-of and array destructuring through iterator objects, on every handler call.
  const keys = Object.keys(patch);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    out[k] = k in out ? deepMerge(out[k], patch[k]) : patch[k];
  }
  return out;
}

const DURATION = /^(?:\d+(?:ms|s|m|h|d))+$/;

/**
 * A duration as the Rust side reads it: `"30s"`, `"5m"`, `"1h30m"`, `"250ms"`, `"1d"`, `"0"`.
 * A number means seconds (`30` → `"30s"`, `0.25` → `"250ms"`).
 */
export function duration(d, what) {
  if (typeof d === "number" && Number.isFinite(d) && d >= 0) {
    return Number.isInteger(d) ? `${d}s` : `${Math.round(d * 1000)}ms`;
  }
  if (typeof d === "string" && (d === "0" || DURATION.test(d.trim()))) return d.trim();
  throw new TypeError(`${what}: invalid duration ${JSON.stringify(d)} (write e.g. "30s", "5m", "1h30m")`);
}

/** JSON for logs: errors as `{error}`, bigints as strings. */
export const safeJson = (v) =>
  JSON.stringify(v ?? {}, (_k, x) =>
    x instanceof Error ? { error: x.message } : typeof x === "bigint" ? String(x) : x);

/** The type of a value as zod and error messages name it (`null`, `array`, `nan`, ...). */
export const typeOf = (v) =>
  v === null ? "null" : Array.isArray(v) ? "array"
    : typeof v === "number" && Number.isNaN(v) ? "nan" : typeof v;

/** `undefined` → `[]`, a list → a copy of it, anything else → `[it]`. */
export const asList = (v) => (v === undefined ? [] : Array.isArray(v) ? [...v] : [v]);
