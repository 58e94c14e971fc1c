/**
 * The `invariant` dispatch of `ctop test --fuzz`: a controller's `.invariant(...)` rules run
 * on a CR and the objects observed, read-only, and their violations.
 */

import { ctx, newOutput, setCtx } from "./call.js";
import { getObserved, listObserved, tiedElsewhere } from "./handler.js";
import { host } from "./host.js";
import { withDefaults } from "./operator.js";
import { clone, isPlainObject, typeOf } from "./util.js";

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
export function checkInvariants(fns, input) {
  const object = input.object;
  if (!isPlainObject(object)) throw new TypeError("__ct_dispatch invariant: the input carries no object (the CR to check)");
  const cr = withDefaults(fns, object);
  const violations = [];
  setCtx({ cr: null, namespace: cr.metadata?.namespace, observed: input.observed ?? null,
    observedInput: input.observed != null, out: newOutput(), fns,
    index: { applies: new Map(), patches: new Map() }, removed: new Set(), readOnly: true });
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
    setCtx(null);
  }
  const out = { violations };
  return typeof host().snap === "function" ? out : JSON.stringify(out);
}
