/**
 * The host: `globalThis.__ct_host`, the functions the runtime installs (their list is
 * `HOST_FUNCTIONS` in crates/runtime/src/vm/host.rs, and a test there checks every
 * `host().name` of the SDK against it), and the SDK functions that are little more than a
 * host call: randomness, the clock, cron schedules, base64, health, fetch and logs.
 *
 * Every use of the host in the SDK is written `host().name`, nothing else.
 */

import { notInConversion } from "./call.js";
import { duration, isPlainObject, safeJson, typeOf } from "./util.js";

/** The host functions: the runtime's, or the stand-in a Node test installs. */
export function host() {
  const h = globalThis.__ct_host;
  if (!h) throw new Error("ctop: globalThis.__ct_host is not installed");
  return h;
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
  // Read it once now, so a bad schedule or zone fails where it is written.
  host().cronNext(expression, timeZone, 0);
  return Object.freeze({
    expression,
    timeZone,
    next(after) {
      const ms = host().cronNext(expression, timeZone, instant(after ?? now(), "cron next"));
      return ms == null ? undefined : new Date(ms);
    },
    between(from, to, { limit = 1000 } = {}) {
      if (!Number.isInteger(limit) || limit < 1) throw new RangeError("cron between: limit must be a positive integer");
      return host().cronBetween(expression, timeZone, instant(from, "cron between"), instant(to, "cron between"), limit)
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
  if (typeof host().health !== "function") throw new Error("health() is not available in this runtime");
  let text;
  try {
    text = JSON.stringify(obj ?? null);
  } catch (e) {
    throw new TypeError(`health(obj): the object cannot be written as JSON: ${e.message}`);
  }
  const { status, reason, message } = host().health(text);
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
  if (typeof host().fetch !== "function") throw new Error("fetch is not available in this runtime");
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k, String(v)]));
  let body = init.body;
  if (body != null && typeof body !== "string") {
    body = JSON.stringify(body);
    if (!Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) headers["content-type"] = "application/json";
  }
  const req = { method: (init.method ?? "GET").toUpperCase(), headers, ...(body != null && { body }),
    ...(init.timeout !== undefined && { timeout: duration(init.timeout, "fetch timeout") }) };
  const raw = host().fetch(String(url), JSON.stringify(req));
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
