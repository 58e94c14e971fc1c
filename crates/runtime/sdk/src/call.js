/**
 * The state of the handler call in progress (`ctx`), set by `__ct_dispatch` for exactly as
 * long as the handler runs, and the checks of the functions that may only run inside one.
 */

/**
 * The state of the dispatch being run, or null outside one. `cr` is the object being
 * reconciled (null in `onStart` and mappers); `namespace` is the default namespace for
 * lookups and children; `out` the output being built; `readOnly` in an invariant, `pure` in
 * a conversion.
 */
export let ctx = null;

/** Starts (`c`) or ends (`null`) a call. */
export const setCtx = (c) => {
  ctx = c;
};

/** A fresh output of a call, to which `apply`, `setStatus`, ... add. */
export const newOutput = () => ({ applies: [], patches: [], status: null, conditions: [], events: [],
  finalizers: { add: [], remove: [] }, result: { type: "ok" } });

/**
 * The running dispatch, for functions that write output: they make no sense at top level,
 * nor in an invariant, which only reads.
 */
export function active(what) {
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
export function notInConversion(what) {
  if (ctx?.pure) throw impure(what);
}

/** Whether `obj` is the object the running call handles. */
export function isCurrent(obj) {
  const cr = ctx?.cr;
  if (!cr || !obj) return false;
  if (obj === cr) return true;
  const a = obj.metadata ?? {}, b = cr.metadata ?? {};
  if (a.uid && b.uid) return a.uid === b.uid;
  return obj.kind === cr.kind && a.name === b.name && (a.namespace ?? "") === (b.namespace ?? "");
}
