/**
 * `operator(res)`: a controller and its fluent builder (what it manages, reads and watches,
 * egress, permissions, and its handlers). The JSON half of each controller goes into
 * `__ct_operator.controllers`; the functions stay here (`controllerFns`) for `__ct_dispatch`.
 */

import { kindKey, kindRef, knownKinds, pluralize } from "./kinds.js";
import { registry, specSchemas } from "./resource.js";
import { asList, duration, isPlainObject } from "./util.js";

/**
 * The JS-side halves of the controllers, by index (functions never go into
 * `__ct_operator`): `{entry, handlers, mappers, invariants, kind, schema, mutateDefaults}`.
 */
export const controllerFns = [];

const PREDICATES = ["GenerationChanged", "ResourceVersionChanged", "LabelChanged", "AnnotationChanged"];

/** A predicate of `watches` or `operator`, checked. */
function checkPredicate(p) {
  if (typeof p === "string" && PREDICATES.includes(p)) return p;
  if (isPlainObject(p) && Array.isArray(p.and)) return { and: p.and.map(checkPredicate) };
  if (isPlainObject(p) && Array.isArray(p.or)) return { or: p.or.map(checkPredicate) };
  throw new TypeError(`watches: predicate must be one of ${PREDICATES.join(", ")} or {and|or: [...]}`);
}

/** `"app=web,tier"` as is; `{app: "web"}` → `"app=web"`. */
function labelSelector(sel, what = "watches: labelSelector") {
  if (typeof sel === "string") return sel;
  if (isPlainObject(sel)) return Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(",");
  throw new TypeError(`${what} must be a string or an object of ${what.endsWith("annotationSelector") ? "annotations" : "labels"}`);
}

/** An RBAC rule of `.permission()`, single strings made lists. */
function checkRule(rule) {
  const r = {
    apiGroups: asList(rule?.apiGroups), resources: asList(rule?.resources), verbs: asList(rule?.verbs),
    ...(rule?.resourceNames !== undefined && { resourceNames: asList(rule.resourceNames) }),
  };
  if (!r.resources.length || !r.verbs.length || rule.apiGroups === undefined || rule.apiGroups === null) {
    throw new TypeError("permission: a rule needs apiGroups, resources and verbs");
  }
  return r;
}

/** The handlers a controller may have, in the order `handlers` lists them. */
export const HANDLERS = ["reconcile", "finalize", "onStart", "validate", "mutate"];

/** The fluent builder `operator(res)` returns; every method returns the builder. */
class OperatorBuilder {
  #entry;
  #fns;
  constructor(entry, fns) {
    this.#entry = entry;
    this.#fns = fns;
  }
  /**
   * Periodic resync of every CR. A tick whose handler would read exactly what it read last
   * time is skipped unless `{ always: true }`.
   */
  every(d, opts = {}) {
    this.#entry.every = duration(d, "every");
    if (!isPlainObject(opts)) throw new TypeError("every: the second argument is an options object ({ always })");
    for (const key of Object.keys(opts)) {
      if (key !== "always") throw new TypeError(`every: unknown option ${key} (only always)`);
    }
    if (opts.always !== undefined && typeof opts.always !== "boolean") {
      throw new TypeError("every: always must be true or false");
    }
    if (opts.always) this.#entry.alwaysRun = true;
    return this;
  }
  /**
   * Owned children: watched, mapped to their owner, full RBAC, pruned when no longer applied.
   * A last argument `{ childrenOnly: true }` caches only objects of these kinds that are
   * children (they carry the ApplySet part-of label ctop sets on every child), so unrelated
   * objects of the kind in the cluster cost no memory; `getObserved` then sees children only.
   * `{ adopt: true }` lets a reconcile take over an existing object of these kinds that is
   * not a child yet when it applies one under its name (by default that child fails).
   */
  manages(...kinds) {
    const last = kinds[kinds.length - 1];
    const opts = isPlainObject(last) && !("kind" in last) ? kinds.pop() : {};
    for (const key of Object.keys(opts)) {
      if (key !== "childrenOnly" && key !== "adopt") {
        throw new TypeError(`manages: unknown option ${key} (childrenOnly, adopt)`);
      }
      if (typeof opts[key] !== "boolean") throw new TypeError(`manages: ${key} must be true or false`);
    }
    // An object's children are one ApplySet, named after the object: two controllers of the
    // same kind that both applied children would each prune the other's.
    for (const k of kinds.flat()) kindRef(k, "manages");
    const rival = registry.controllers.find((c) => c !== this.#entry && c.manages.length
      && kindKey(c.for) === kindKey(this.#entry.for));
    if (rival && kinds.flat().length) {
      throw new Error(`operator "${this.#entry.name}": operator "${rival.name}" already manages children of `
        + `${this.#entry.for.kind} objects, and an object's children belong to one controller (each would prune `
        + `the other's); apply them from one controller, or patch() objects you do not own`);
    }
    for (const k of kinds.flat()) this.#refuseMetadataOnly(kindRef(k, "manages"), "manages");
    this.#addKinds("manages", kinds);
    for (const option of ["childrenOnly", "adopt"]) {
      if (opts[option] !== true) continue;
      this.#entry[option] ??= [];
      for (const k of kinds.flat()) {
        const ref = kindRef(k, "manages");
        if (!this.#entry[option].some((x) => kindKey(x) === kindKey(ref))) this.#entry[option].push(ref);
      }
    }
    return this;
  }
  /**
   * Read-only kinds: watched (so `getObserved` sees them), RBAC get/list/watch. A last
   * argument `{ metadataOnly: true }` watches and caches them as `PartialObjectMetadata`
   * (the server sends `metadata` alone): `getObserved`/`listObserved` of these kinds give
   * `{ apiVersion, kind, metadata }`, never `spec` or `status`. Refused for the operator's
   * own kind and for kinds it manages (their full objects are needed).
   */
  reads(...kinds) {
    const last = kinds[kinds.length - 1];
    const opts = isPlainObject(last) && !("kind" in last) ? kinds.pop() : {};
    for (const key of Object.keys(opts)) {
      if (key !== "metadataOnly") throw new TypeError(`reads: unknown option ${key} (only metadataOnly)`);
      if (typeof opts[key] !== "boolean") throw new TypeError(`reads: ${key} must be true or false`);
    }
    this.#addKinds("reads", kinds);
    if (opts.metadataOnly !== true) return this;
    for (const k of kinds.flat()) {
      const ref = kindRef(k, "reads");
      this.#entry.metadataOnly ??= [];
      if (!this.#entry.metadataOnly.some((x) => kindKey(x) === kindKey(ref))) this.#entry.metadataOnly.push(ref);
      this.#refuseMetadataOnly(ref, "reads");
    }
    return this;
  }
  /** Throw when `ref` is both metadata-only and needed in full (see `ControllerSpec::metadata_only_conflict`). */
  #refuseMetadataOnly(ref, method) {
    if (!this.#entry.metadataOnly?.some((x) => kindKey(x) === kindKey(ref))) return;
    const why = kindKey(ref) === kindKey(this.#entry.for)
      ? "the kind this operator reconciles"
      : this.#entry.manages.some((x) => kindKey(x) === kindKey(ref)) || method === "manages"
        ? "managed by this operator (the Ready condition reads its children's status)"
        : null;
    if (why) {
      throw new Error(`operator "${this.#entry.name}": .reads(${ref.kind}, { metadataOnly: true }): ${ref.kind} is `
        + `${why}, so its objects are cached in full; drop metadataOnly`);
    }
  }
  #addKinds(field, kinds) {
    for (const k of kinds.flat()) {
      const ref = kindRef(k, field);
      if (!this.#entry[field].some((x) => kindKey(x) === kindKey(ref))) this.#entry[field].push(ref);
    }
    return this;
  }
  /**
   * Watch another kind; `mapper(obj)` names the CRs to reconcile (without a mapper the
   * runtime maps by owner reference). `watches(kind, opts)` is accepted too.
   */
  watches(kind, mapper, opts = {}) {
    if (isPlainObject(mapper)) [mapper, opts] = [undefined, mapper];
    if (mapper != null && typeof mapper !== "function") throw new TypeError("watches: mapper must be a function");
    const w = { kind: kindRef(kind, "watches"), mapper: typeof mapper === "function" };
    if (opts.namespace !== undefined) w.namespace = String(opts.namespace);
    if (opts.labelSelector !== undefined) w.labelSelector = labelSelector(opts.labelSelector);
    if (opts.predicate !== undefined) w.predicate = checkPredicate(opts.predicate);
    this.#fns.mappers.push(mapper ?? null);
    this.#entry.watches.push(w);
    return this;
  }
  /**
   * Where `fetch` may go: URL prefixes `scheme://host[:port][/path]` (host `*.example.com`
   * for subdomains, port `*` for any). Nothing else is reachable, and never link-local
   * addresses (cloud metadata) or the operator's own ports; the generated NetworkPolicy
   * allows the same destinations.
   */
  egress(...urls) {
    this.#entry.egress ??= [];
    for (const u of urls.flat()) {
      if (typeof u !== "string" || !/^https?:\/\/[^/\s]+/i.test(u)) {
        throw new TypeError(`egress: expected URL prefixes like "https://api.example.com", got ${JSON.stringify(u)}`);
      }
      if (!this.#entry.egress.includes(u)) this.#entry.egress.push(u);
    }
    return this;
  }
  /** Extra RBAC rules beyond what manages/reads imply. */
  permission(...rules) {
    for (const r of rules.flat()) this.#entry.permissions.push(checkRule(r));
    return this;
  }
  /** Cleanup before deletion; the finalizer name defaults to `<plural>.<group>/finalizer`. */
  finalize(fn, name) {
    const n = typeof name === "string" ? name : name?.name;
    const { plural, group } = this.#fns.kind;
    this.#entry.finalizer = n ?? `${group ? `${plural}.${group}` : plural}/finalizer`;
    return this.#handler("finalize", fn);
  }
  onStart(fn) { return this.#handler("onStart", fn); }
  validate(fn) { return this.#handler("validate", fn); }
  /**
   * Mutating admission handler. With `{ defaults: true }` the handler sees the spec with the
   * schema's defaults filled in, so the webhook's patch writes them into the stored object.
   */
  mutate(fn, opts = {}) {
    if (opts != null && !isPlainObject(opts)) throw new TypeError("mutate: options must be an object");
    this.#fns.mutateDefaults = opts?.defaults === true;
    return this.#handler("mutate", fn);
  }
  reconcile(fn) { return this.#handler("reconcile", fn); }
  /**
   * A rule that holds for every CR once the operator is quiet, checked by `ctop test --fuzz`
   * (never by the running operator): `fn(cr, observed)` returns true or nothing when it
   * holds, else false, a message or a list of messages. `name` defaults to `invariant N`.
   * Several are kept in order.
   */
  invariant(name, fn) {
    if (typeof name === "function" && fn === undefined) [name, fn] = [undefined, name];
    if (typeof fn !== "function") throw new TypeError("invariant: expected a function (and a name before it, optionally)");
    const list = this.#fns.invariants;
    const n = name ?? `invariant ${list.length + 1}`;
    if (typeof n !== "string" || !n) throw new TypeError("invariant: the name must be a non-empty string");
    if (list.some((x) => x.name === n)) throw new Error(`${this.#entry.name}: invariant "${n}" is declared twice`);
    list.push({ name: n, fn });
    (this.#entry.invariants ??= []).push(n);
    this.#entry.handlers = handlerNames(this.#fns);
    return this;
  }
  #handler(name, fn) {
    if (typeof fn !== "function") throw new TypeError(`${name}: expected a function`);
    if (this.#fns.handlers[name]) throw new Error(`${this.#entry.name}: ${name} is already set`);
    this.#fns.handlers[name] = fn;
    this.#entry.handlers = handlerNames(this.#fns);
    return this;
  }
}

/** The `handlers` of a controller's entry: those declared, then `invariant` when it has any. */
const handlerNames = (fns) =>
  [...HANDLERS.filter((h) => fns.handlers[h]), ...(fns.invariants.length ? ["invariant"] : [])];

/** Start a controller for `res` (a `resource(...)` handle or any kind handle). */
export function operator(res, { name, namespace, labelSelector: selector, annotationSelector, predicate } = {}) {
  const ref = kindRef(res, "operator");
  const info = knownKinds.get(kindKey(ref)) ?? { ...ref, plural: pluralize(ref.kind), group: "", namespaced: true };
  const taken = (n) => registry.controllers.some((c) => c.name === n);
  let unique = name ?? ref.kind.toLowerCase();
  if (name !== undefined && taken(name)) throw new Error(`operator name "${name}" is used twice`);
  for (let i = 2; taken(unique); i++) unique = `${ref.kind.toLowerCase()}-${i}`;
  const entry = { index: registry.controllers.length, name: unique, for: ref, every: null, manages: [],
    reads: [], watches: [], permissions: [], finalizer: null, handlers: [] };
  // Scoping of the primary watch itself (the Δ-controller's source options).
  if (namespace !== undefined) entry.namespace = String(namespace);
  if (selector !== undefined) entry.labelSelector = labelSelector(selector, "operator: labelSelector");
  if (annotationSelector !== undefined) {
    entry.annotationSelector = labelSelector(annotationSelector, "operator: annotationSelector");
  }
  if (predicate !== undefined) entry.predicate = checkPredicate(predicate);
  const fns = { entry, handlers: {}, mappers: [], invariants: [], kind: info, schema: specSchemas.get(kindKey(ref)) };
  registry.controllers.push(entry);
  controllerFns.push(fns);
  return new OperatorBuilder(entry, fns);
}

/** Apply the spec defaults of the resource's schema (the API server normally did already). */
export function withDefaults(fns, obj) {
  if (!fns.schema || !isPlainObject(obj)) return obj;
  const r = fns.schema.safeParse(obj.spec ?? {});
  if (r.success) obj.spec = r.data;
  return obj;
}
