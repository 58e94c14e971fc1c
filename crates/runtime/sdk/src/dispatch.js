/**
 * `__ct_dispatch(handler, controllerIndex, inputJson)`, the one entry point from Rust (see
 * crates/runtime/RUNTIME.md): it reads the input, runs the handler with the call's state set
 * (`call.js`), and turns what it returns into the output. Also what handlers return
 * (`Result`) and read (`Env`, `Values`).
 */

import { newOutput, setCtx } from "./call.js";
import { convertObjects } from "./conversion.js";
import { output } from "./handler.js";
import { checkInvariants } from "./invariants.js";
import { controllerFns, HANDLERS, withDefaults } from "./operator.js";
import { asList, duration, isPlainObject } from "./util.js";
import { ZodError } from "./z.js";

/** The operator's environment and values (replaced in place on every call). */
export const Env = {};
export const Values = {};
const refill = (target, src) => {
  const keys = Object.keys(target);
  for (let i = 0; i < keys.length; i++) delete target[keys[i]];
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
export function dispatch(handler, controllerIndex, inputJson) {
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
  setCtx({ cr: isMap || handler === "onStart" ? null : object, namespace: object?.metadata?.namespace,
    observed: input.observed ?? null, observedInput: input.observed != null, out, fns,
    index: { applies: new Map(), patches: new Map() }, removed: new Set() });

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
      setCtx(null);
    }
  };
  let ret;
  try {
    ret = call();
  } catch (e) {
    setCtx(null);
    throw e;
  }
  if (ret && typeof ret.then === "function") {
    return ret.then(done, (e) => { setCtx(null); throw e; });
  }
  return done(ret);
}
