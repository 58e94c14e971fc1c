/**
 * What handlers call while they run: children (`apply`, `patch`, `remove`), the objects the
 * controller observes (`getObserved`, `listObserved`), the handled object's status,
 * conditions, events and finalizers; and `output`, which turns the call's buffers into what
 * `__ct_dispatch` returns.
 */

import { active, ctx, isCurrent, notInConversion } from "./call.js";
import { host, log } from "./host.js";
import { isNamespaced, kindKey, kindRef } from "./kinds.js";
import { specSchemas } from "./resource.js";
import { clone, deepMerge, isPlainObject } from "./util.js";
import { ZodError } from "./z.js";

/**
 * The snapshot of a child `apply`/`patch` send: `{key, id}` (the host copied it) or
 * `{key, text}` (JSON text, outside ctop). Namespaced children without a namespace get the
 * CR's.
 */
function checkObject(obj, what) {
  if (!isPlainObject(obj) || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string"
      || typeof obj.metadata?.name !== "string" || !obj.metadata.name) {
    throw new TypeError(`${what}: expected an object with apiVersion, kind and metadata.name (build it with a kind handle, e.g. Secret({...}))`);
  }
  const ns = ctx?.cr?.metadata?.namespace;
  const fill = obj.metadata.namespace == null && ns && isNamespaced(obj) ? ns : undefined;
  const key = `${obj.apiVersion}/${obj.kind}/${fill ?? obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
  // The snapshot is taken now, so later changes to `obj` are not sent. Inside ctop the host
  // copies the object into Rust (`__ct_host.snap`, filling in the namespace) and the output
  // carries its index; elsewhere (node tests) it is JSON text spliced into the output.
  if (typeof host().snap === "function") return { key, id: host().snap(obj, fill) };
  const filled = fill ? { ...obj, metadata: { ...obj.metadata, namespace: fill } } : obj;
  return { key, text: JSON.stringify(filled) };
}

/**
 * Insert or replace the snapshot with the same key in `c.out[name]`, through the call's
 * key → position index (a scan per call made a loop of n applies take n² steps). A new child
 * past the host's `maxChildren` makes the host mark the call failed (catching the error
 * changes nothing) and throw.
 */
function pushUnique(c, name, snap) {
  const list = c.out[name];
  const index = c.index[name];
  const i = index.get(snap.key);
  if (i !== undefined) {
    // The replaced copy is freed in the host and no longer counts against the output budget.
    if (list[i].id !== undefined) host().release?.(list[i].id);
    list[i] = snap;
    return;
  }
  index.set(snap.key, list.length);
  list.push(snap);
  const max = host().maxChildren;
  if (typeof max === "number" && c.out.applies.length + c.out.patches.length > max) host().tooManyChildren();
}

/**
 * Add `obj` to the desired children of this reconcile (server-side applied with an owner
 * reference; what was applied before and is missing now gets pruned). Namespaced children
 * without a namespace get the CR's. Returns `obj` itself; the call takes a snapshot, so
 * later changes to `obj` are not sent. An existing object of that name that is not a child
 * yet is left alone (that child fails) unless `options.adopt` is true.
 */
export function apply(obj, options) {
  const c = active("apply");
  if (options !== undefined) {
    if (!isPlainObject(options)) throw new TypeError("apply: options must be an object ({ adopt: true })");
    for (const key of Object.keys(options)) {
      if (key !== "adopt") throw new TypeError(`apply: unknown option ${key} (only adopt)`);
    }
    if (options.adopt !== undefined && typeof options.adopt !== "boolean") {
      throw new TypeError("apply: adopt must be true or false");
    }
  }
  const snap = checkObject(obj, "apply");
  const spec = specSchemas.get(kindKey(obj));
  if (spec && obj.spec !== undefined) {
    const issues = [];
    spec._run(obj.spec, ["spec"], issues);
    if (issues.length) throw new ZodError(issues);
  }
  if (c.removed.has(snap.key)) throw new Error(`apply: ${snap.key} was removed in this call; apply or remove it, not both`);
  pushUnique(c, "applies", snap);
  if (options?.adopt === true) (c.adopted ??= new Set()).add(snap.key);
  return obj;
}

/** A partial object to merge into an existing object the operator does not own (no owner ref, never pruned). */
export function patch(obj) {
  const c = active("patch");
  const snap = checkObject(obj, "patch");
  pushUnique(c, "patches", snap);
  return obj;
}

/**
 * Delete the child `obj` (named by apiVersion, kind, metadata.name and, for namespaced kinds,
 * metadata.namespace, which defaults to the CR's) once this call's applies succeeded: for a
 * `finalize` that tears down in order, or a reconcile that returns `Result.keep()`. Only a
 * child of the object handled, of a `.manages()` kind, is deleted; anything else is left
 * alone. Returns `obj`.
 */
export function remove(obj) {
  const c = active("remove");
  if (!isPlainObject(obj) || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string"
      || typeof obj.metadata?.name !== "string" || !obj.metadata.name) {
    throw new TypeError("remove: expected an object with apiVersion, kind and metadata.name (e.g. ConfigMap({ metadata: { name } }))");
  }
  const ns = c.cr?.metadata?.namespace;
  const namespace = obj.metadata.namespace ?? (ns && isNamespaced(obj) ? ns : undefined);
  const key = `${obj.apiVersion}/${obj.kind}/${namespace ?? ""}/${obj.metadata.name}`;
  if (c.index.applies.has(key)) throw new Error(`remove: ${key} was applied in this call; apply or remove it, not both`);
  if (!c.removed.has(key)) {
    c.removed.add(key);
    // Only outputs that remove something carry `deletes`.
    (c.out.deletes ??= []).push({ apiVersion: obj.apiVersion, kind: obj.kind,
      metadata: { name: obj.metadata.name, ...(namespace && { namespace }) } });
  }
  return obj;
}

/**
 * The output: an object whose `applies`/`patches` are snapshot indices when the host took
 * the snapshots (the runtime copies it and splices them in), else JSON text with the
 * snapshots spliced in.
 */
export function output(o) {
  // The children that may adopt, by their position (the snapshots become indices below).
  if (ctx?.adopted?.size) o.adopt = o.applies.flatMap((x, i) => (ctx.adopted.has(x.key) ? [i] : []));
  if (typeof host().snap === "function") {
    // `o` is the fresh object `finish` built.
    o.applies = o.applies.map((x) => x.id);
    o.patches = o.patches.map((x) => x.id);
    return o;
  }
  const { applies, patches, ...rest } = o;
  const tail = JSON.stringify(rest);
  const list = (snaps) => `[${snaps.map((x) => x.text).join(",")}]`;
  return `{"applies":${list(applies)},"patches":${list(patches)}${tail === "{}" ? "}" : `,${tail.slice(1)}`}`;
}

const warnedKinds = new Set();

/**
 * The observed objects of kind `ref`. Either the input carried them (`input.observed`, a
 * map by kind, as tests and `ctop` before lazy caches pass them), or the runtime serves
 * them on demand through `__ct_host.observed("list", kindKey)`: a kind is then read from
 * the cache (and parsed) only when a handler asks for it, once per call.
 */
function observedList(ref) {
  notInConversion("getObserved/listObserved");
  const key = kindKey(ref);
  let list = ctx?.observed?.[key];
  if (list === undefined && ctx && !ctx.observedInput) {
    const text = host().observed?.("list", key);
    list = text == null ? null : JSON.parse(text);
    (ctx.observed ??= {})[key] = list;
  }
  if (Array.isArray(list)) return list;
  const e = ctx?.fns?.entry;
  const declared = e && [...e.manages, ...e.reads, ...e.watches.map((w) => w.kind), e.for]
    .some((k) => kindKey(k) === key);
  if (e && !declared && !warnedKinds.has(`${e.name} ${key}`)) {
    warnedKinds.add(`${e.name} ${key}`);
    log.warn(`${key} is not in manages/reads/watches of operator "${e.name}", so nothing of it is observed`);
  }
  return [];
}

/**
 * The cached object of `kind` named `name`, or undefined. `namespace` defaults to the CR's
 * (for cluster-scoped kinds it is ignored). Served by one keyed cache lookup when the
 * runtime provides `__ct_host.observed`.
 */
export function getObserved(kind, name, namespace) {
  const ref = kindRef(kind, "getObserved");
  const nsd = isNamespaced(ref);
  const ns = nsd ? (namespace ?? ctx?.namespace) : undefined;
  const key = kindKey(ref);
  if (ctx && !ctx.observedInput && ctx.observed?.[key] === undefined && typeof name === "string") {
    const text = host().observed?.("get", key, ns ?? "", name);
    if (text != null) return JSON.parse(text) ?? undefined;
  }
  return observedList(ref).find((o) => o?.metadata?.name === name
    && (ns === undefined || (o.metadata.namespace ?? undefined) === ns));
}

/**
 * All cached objects of `kind`, optionally filtered by `{namespace, labels, ownedBy}` or a
 * predicate. `ownedBy: obj` keeps the objects with an owner reference to `obj` (by uid when
 * both have one, else by apiVersion's group, kind and name), in `obj`'s namespace, and the
 * children ctop ties to `obj` in other namespaces (their `ctop.dev/owner` annotation).
 */
export function listObserved(kind, filter) {
  const list = observedList(kindRef(kind, "listObserved"));
  if (typeof filter === "function") return list.filter(filter);
  if (filter == null) return [...list];
  if (!isPlainObject(filter)) throw new TypeError("listObserved: the filter must be a function or {namespace, labels, ownedBy}");
  const owner = filter.ownedBy == null ? undefined : ownerMatcher(filter.ownedBy);
  return list.filter((o) => (filter.namespace === undefined || o.metadata?.namespace === filter.namespace)
    && Object.entries(filter.labels ?? {}).every(([k, v]) => o.metadata?.labels?.[k] === v)
    && (owner === undefined || owner(o)));
}

/** A predicate: does an object have an owner reference to `owner`? */
function ownerMatcher(owner) {
  const ref = kindRef(owner, "listObserved ownedBy");
  const meta = owner.metadata ?? {};
  if (typeof meta.name !== "string") throw new TypeError("listObserved: ownedBy must be an object with metadata.name");
  const group = (av) => (av.includes("/") ? av.slice(0, av.lastIndexOf("/")) : "");
  const ns = meta.namespace;
  const tied = tiedElsewhere(ref.apiVersion, ref.kind, meta);
  return (o) => ((ns === undefined || o.metadata?.namespace === ns)
    && (o.metadata?.ownerReferences ?? []).some((r) => (meta.uid && r.uid
      ? r.uid === meta.uid
      : r.kind === ref.kind && r.name === meta.name && group(String(r.apiVersion)) === group(ref.apiVersion))))
    || tied(o);
}

/**
 * A predicate: is an object a child of the namespaced object (`apiVersion`, `kind`, `meta`)
 * in another namespace? It carries no owner reference (none can cross namespaces); the
 * annotation the applier writes names its owner as `Kind.group namespace/name`.
 */
export function tiedElsewhere(apiVersion, kind, meta) {
  const ns = meta?.namespace;
  if (typeof ns !== "string" || !ns) return () => false;
  const g = String(apiVersion).includes("/") ? String(apiVersion).slice(0, String(apiVersion).lastIndexOf("/")) : "";
  const tie = `${kind}${g ? `.${g}` : ""} ${ns}/${meta.name}`;
  return (o) => o?.metadata?.namespace !== ns && o?.metadata?.annotations?.["ctop.dev/owner"] === tie;
}

/** The status of `cr`; for the CR being reconciled, with this call's `setStatus` patches merged in. */
export function getStatus(cr) {
  const base = clone(cr?.status) ?? {};
  const p = ctx?.out.status;
  return isCurrent(cr) && p ? deepMerge(base, clone(p)) : base;
}

/** Merge `patch` into the status patch of the CR being reconciled (written once, after the handler). */
export function setStatus(cr, statusPatch) {
  const { out } = active("setStatus");
  if (!isCurrent(cr)) throw new Error("setStatus: only the object being handled can be given a status");
  if (!isPlainObject(statusPatch)) throw new TypeError("setStatus: the patch must be an object");
  out.status = deepMerge(out.status ?? {}, clone(statusPatch));
}

const REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/**
 * Set one condition of the CR's `status.conditions` (last call per type wins). `status`
 * may be a boolean. The runtime fills lastTransitionTime and observedGeneration.
 */
export function setCondition(cr, { type, status, reason, message = "" } = {}) {
  const { out } = active("setCondition");
  if (!isCurrent(cr)) throw new Error("setCondition: only the object being handled can be given conditions");
  const s = status === true ? "True" : status === false ? "False" : status;
  if (typeof type !== "string" || !type) throw new TypeError("setCondition: type is required");
  if (!["True", "False", "Unknown"].includes(s)) throw new TypeError(`setCondition ${type}: status must be "True", "False", "Unknown" or a boolean`);
  const r = reason ?? (s === "True" ? type : s === "False" ? `Not${type}` : "Unknown");
  if (!REASON.test(r)) throw new TypeError(`setCondition ${type}: reason ${JSON.stringify(r)} must be CamelCase ([A-Za-z][A-Za-z0-9_,:]*)`);
  const cond = { type, status: s, reason: r, message: String(message) };
  const list = out.conditions;
  const i = list.findIndex((c) => c.type === type);
  if (i >= 0) list[i] = cond;
  else list.push(cond);
  return cond;
}

/** Record a Kubernetes Event about `obj` (the CR when null). */
export function event(obj, { type = "Normal", reason, message = "" } = {}) {
  const { out } = active("event");
  if (type !== "Normal" && type !== "Warning") throw new TypeError(`event: type must be "Normal" or "Warning"`);
  if (typeof reason !== "string" || !reason) throw new TypeError("event: reason is required");
  const e = { type, reason, message: String(message) };
  if (obj) {
    const m = obj.metadata ?? {};
    e.regarding = { apiVersion: obj.apiVersion, kind: obj.kind, name: m.name,
      ...(m.namespace && { namespace: m.namespace }), ...(m.uid && { uid: m.uid }) };
  }
  out.events.push(e);
  return e;
}

/** The finalizer `name`, else the controller's `.finalize()` one. */
function finalizerName(name, what) {
  const n = name ?? ctx?.fns.entry.finalizer;
  if (typeof n !== "string" || !n) throw new TypeError(`${what}: name is required (no .finalize() finalizer to default to)`);
  return n;
}

/**
 * Add finalizer `name` (default: this operator's) to `obj.metadata.finalizers`. On the CR
 * being handled it is also sent to the runtime. Returns whether anything changed.
 */
export function addFinalizer(obj, name) {
  if (ctx?.readOnly) active("addFinalizer"); // throws: an invariant only reads
  const n = finalizerName(name, "addFinalizer");
  obj.metadata ??= {};
  const list = (obj.metadata.finalizers ??= []);
  const changed = !list.includes(n);
  if (changed) list.push(n);
  if (isCurrent(obj)) {
    const f = ctx.out.finalizers;
    f.remove = f.remove.filter((x) => x !== n);
    if (!f.add.includes(n)) f.add.push(n);
  }
  return changed;
}

/** The reverse of `addFinalizer`. */
export function removeFinalizer(obj, name) {
  if (ctx?.readOnly) active("removeFinalizer");
  const n = finalizerName(name, "removeFinalizer");
  const list = obj.metadata?.finalizers ?? [];
  const changed = list.includes(n);
  if (changed) obj.metadata.finalizers = list.filter((x) => x !== n);
  if (isCurrent(obj)) {
    const f = ctx.out.finalizers;
    f.add = f.add.filter((x) => x !== n);
    if (!f.remove.includes(n)) f.remove.push(n);
  }
  return changed;
}
