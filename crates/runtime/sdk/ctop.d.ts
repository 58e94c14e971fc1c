/**
 * Typings of the built-in module `"ctop"` that operator scripts import.
 *
 * Written by hand beside `ctop.js`. The generics make `resource(...)` infer the custom
 * resource's type from its `z` shapes, so `reconcile((cr) => ...)` sees `cr.spec.replicas`
 * as `number`. Built-in kinds (`Secret`, `Deployment`, ...) are both a value (a kind handle
 * that also builds objects) and an interface of the same name, generated into `k8s.d.ts`;
 * `z` is typed in `z.d.ts`. The typings `ctop init` writes are this file with those two
 * spliced in where it re-exports them (crates/runtime/build.rs).
 */

import type { AnyZodObject, Flatten, ObjectInput, ObjectOutput, OpenAPISchema, ZodObject, ZodRawShape } from "./z";

// ═══════════════════════════════ durations and results ═══════════════════════════════

/** `"30s"`, `"5m"`, `"1h30m"`, `"250ms"`, `"1d"`, or a number of seconds. */
export type Duration = string | number;

/** What a handler returns; returning nothing means `Result.ok()`. */
export type ResultValue =
  | { type: "ok"; keep?: boolean }
  | { type: "requeue"; after: string; keep?: boolean }
  | { type: "error"; message: string };

export declare const Result: {
  /**
   * Done; the next run comes from a watch event or `.every(...)`. What the handler
   * `apply`d is the complete desired set: children applied before and not now are pruned.
   */
  ok(): ResultValue;
  /**
   * Done, but keep the children: what this call `apply`d is applied and nothing is pruned.
   * For an early return (an invalid spec, a missing dependency) that must not delete the
   * children the last complete reconcile made. With `after`, run again then.
   */
  keep(after?: Duration): ResultValue;
  /** Run again after `after` (without counting as a failure). */
  requeue(after: Duration): ResultValue;
  /** Failed: nothing is applied or pruned; recorded on the object (event, condition), retried with backoff. */
  error(message: string | Error): ResultValue;
};

type Awaitable<T> = T | Promise<T>;
/** What `reconcile`, `finalize` and `onStart` may return. */
export type HandlerReturn = Awaitable<ResultValue | void | undefined>;

// ═══════════════════════════════ z ═══════════════════════════════

// `z` and its schema types: `z.d.ts`.
export * from "./z";

// ═══════════════════════════════ objects and kinds ═══════════════════════════════

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: { [key: string]: string };
  annotations?: { [key: string]: string };
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: unknown[];
}

/** Metadata of an object read from the API server: the server always sets these. */
export interface StoredMeta extends ObjectMeta {
  name: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
}

/** Any Kubernetes object. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  status?: unknown;
}

/** An object of a kind the typings do not know. */
export interface GenericObject extends KubeObject {
  [field: string]: any;
}

/** `{apiVersion, kind}` of a kind. */
export interface KindRef {
  apiVersion: string;
  kind: string;
}

/** What a kind handle builds an object from: the object without apiVersion/kind. */
export type KindInit<T extends KubeObject> = Omit<T, "apiVersion" | "kind"> & { apiVersion?: string; kind?: string };

/**
 * A kind handle: names a kind (`.manages(Secret)`, `getObserved(Secret, name)`) and builds
 * complete objects of it (`Secret({ metadata: { name }, stringData })`).
 */
export interface Kind<T extends KubeObject = GenericObject, Init = KindInit<T>> extends KindCall<Init, T> {
  readonly apiVersion: string;
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

/**
 * The constructor half of a kind handle. Declared as a method so that its parameter is
 * compared bivariantly: `Kind<Deployment>` is then a `Kind<KubeObject>`, and generic code
 * over several kinds (`for (const k of [Deployment, Service]) listObserved(k, ...)`) needs
 * no casts.
 */
type KindCall<Init, T> = { build(init: Init): T }["build"];

/** An object as the API server returns it: `metadata.name`, `uid` and `resourceVersion` are set. */
export type Stored<T extends KubeObject> = T & { metadata: StoredMeta };

/** An object with a name: what `apply` and `patch` return (they refuse an object without one). */
export type Named<T extends KubeObject> = T & { metadata: { name: string } };

/**
 * A kind named by handle, `{apiVersion, kind}`, `"apps/v1/Deployment"` or a known kind's bare
 * name (`"Secret"`). A kind is its group and its name: a bare name that kinds of two groups
 * answer to (a resource `"CronJob"` beside the built-in `batch/v1` CronJob) throws.
 */
export type AnyKind = Kind<any, any> | KindRef | string;

/** A handle for a kind the SDK does not ship (another operator's CRD, a newer built-in). */
export declare function kindOf<T extends KubeObject = GenericObject>(
  apiVersion: string,
  kind: string,
  options?: { plural?: string; namespaced?: boolean },
): Kind<T>;

// ═══════════════════════════════ custom resources ═══════════════════════════════

/** A condition in `status.conditions` (metav1.Condition). */
export interface Condition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** Status fields every ctop CRD has, whatever the script declares. */
export interface StandardStatus {
  conditions?: Condition[];
  observedGeneration?: number;
}

/** Metadata of a namespaced object read from the API server: it always has a namespace. */
export interface NamespacedMeta extends StoredMeta {
  namespace: string;
}

/**
 * The type of a custom resource object. Status fields are all optional: it is written
 * piecemeal. A namespaced resource's `metadata.namespace` is a string (`S` is the scope
 * `resource(...)` was given; namespaced by default).
 */
export interface CustomResource<
  Spec = { [key: string]: any },
  Status = {},
  AV extends string = string,
  K extends string = string,
  S extends Scope = Scope,
> {
  apiVersion: AV;
  kind: K;
  metadata: [S] extends ["Namespaced"] ? NamespacedMeta : StoredMeta;
  spec: Spec;
  status?: Flatten<Partial<Status> & StandardStatus>;
}

type SchemaArg = ZodRawShape | AnyZodObject | undefined;
/** The schema object of a `spec`/`status` option. */
type ObjectSchemaOf<S> = S extends AnyZodObject ? S : S extends ZodRawShape ? ZodObject<S> : undefined;
type OutputOf<S> = S extends AnyZodObject ? S["_output"] : S extends ZodRawShape ? ObjectOutput<S> : { [key: string]: any };
type InputOf<S> = S extends AnyZodObject ? S["_input"] : S extends ZodRawShape ? ObjectInput<S> : { [key: string]: any };

export type Scope = "Namespaced" | "Cluster";

export interface PrinterColumn {
  name: string;
  /** Default `"string"`. */
  type?: "string" | "integer" | "number" | "boolean" | "date";
  /** Starts with `.`, e.g. `.status.phase`. */
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface ResourceOptions<Spec extends SchemaArg, Status extends SchemaArg, S extends Scope = Scope> {
  /** Default `"Namespaced"`. */
  scope?: S;
  /** Fields of `spec` (or a `z.object`); without it, spec keeps any fields. */
  spec?: Spec;
  /** Fields of `status`; `conditions` and `observedGeneration` are always added. */
  status?: Status;
  shortNames?: string[];
  printerColumns?: PrinterColumn[];
  /** Default: the lowercased kind, pluralized (`webapps`). */
  plural?: string;
  /** Default: the lowercased kind. */
  singular?: string;
  /**
   * The version is deprecated: `true`, or the warning every client gets for a request in it
   * (default: the API server's `<group>/<version> <Kind> is deprecated`).
   */
  deprecated?: boolean | string;
}

/**
 * What a conversion function returns: the object in the other version. Its `apiVersion`,
 * `kind` and metadata are set by ctop, but for `labels` and `annotations`, the only metadata
 * a conversion may change (the API server requires it); `{ ...o, spec: {...} }` is the usual
 * form.
 */
export type Converted<SpecInput, Status> = {
  spec: SpecInput;
  status?: Status;
  metadata?: { labels?: { [key: string]: string }; annotations?: { [key: string]: string } };
  [field: string]: unknown;
};

type GroupOf<AV> = AV extends `${infer G}/${string}` ? G : string;
type ScopeOf<CR extends KubeObject> = CR["metadata"] extends NamespacedMeta ? "Namespaced" : Scope;
type StatusOf<CR> = CR extends { status?: infer S } ? S : never;

/** The type of an object of version `V` of the resource whose hub objects are `CR`. */
export type VersionObject<CR extends KubeObject, V extends string, Spec extends SchemaArg, Status extends SchemaArg> =
  CustomResource<
    OutputOf<Spec>,
    Status extends undefined ? Omit<NonNullable<StatusOf<CR>>, keyof StandardStatus> : OutputOf<Status>,
    `${GroupOf<CR["apiVersion"]>}/${V}`,
    CR["kind"],
    ScopeOf<CR>
  >;

/**
 * Another version of a resource (`res.addVersion(name, options)`): its own schemas, and the
 * two functions that convert its objects to the hub (the version `resource(...)` names,
 * which every handler sees) and back. A conversion is pure: no writes, clock, randomness,
 * fetch or reads.
 */
export interface VersionOptions<Spec extends SchemaArg, Status extends SchemaArg, Hub extends KubeObject, HubSpecInput, Spoke extends KubeObject> {
  /** Fields of `spec` in this version (or a `z.object`); without it, spec keeps any fields. */
  spec?: Spec;
  /** Fields of `status` in this version; default: the hub's. */
  status?: Status;
  /** Default: the hub's. */
  printerColumns?: PrinterColumn[];
  /** Whether the API serves the version (default true); a version objects may still be stored in stays declared, unserved. */
  served?: boolean;
  /** Objects are stored in this version (default: the hub is the storage version). */
  storage?: boolean;
  /** `true`, or the warning every client gets for a request in this version. */
  deprecated?: boolean | string;
  /** An object of this version as the hub has it. */
  toHub(object: Spoke): Converted<HubSpecInput, StatusOf<Hub>>;
  /** A hub object as this version has it. */
  fromHub(object: Hub): Converted<InputOf<Spec>, StatusOf<Spoke>>;
}

/** The handle `resource(...)` returns: a kind handle of the CR, with its schemas. */
export interface Resource<CR extends KubeObject, SpecInput, SpecSchema, StatusSchema>
  extends Kind<CR, { metadata: ObjectMeta; spec: SpecInput; status?: CR["status"] }> {
  readonly scope: Scope;
  readonly spec: SpecSchema;
  readonly status: StatusSchema;
  /** The whole object's openAPIV3Schema, as in the CRD. */
  readonly schema: OpenAPISchema;
  /**
   * Declare another version of this resource (see "Changing your API" in the README): the
   * CRD then serves every version, stores one, and the operator converts between them
   * through this, the hub. Returns the version's kind handle.
   */
  addVersion<const V extends string, Spec extends SchemaArg = undefined, Status extends SchemaArg = undefined>(
    name: V,
    options: VersionOptions<Spec, Status, CR, SpecInput, VersionObject<CR, V, Spec, Status>>,
  ): Kind<VersionObject<CR, V, Spec, Status>, { metadata: ObjectMeta; spec: InputOf<Spec>; status?: VersionObject<CR, V, Spec, Status>["status"] }>;
}

/** Declare a custom resource (one CRD); the type of its objects is inferred from the z shapes. */
export declare function resource<
  const AV extends string,
  const K extends string,
  Spec extends SchemaArg = undefined,
  Status extends SchemaArg = undefined,
  const S extends Scope = "Namespaced",
>(
  apiVersion: AV,
  kind: K,
  options?: ResourceOptions<Spec, Status, S>,
): Resource<
  CustomResource<OutputOf<Spec>, Status extends undefined ? {} : OutputOf<Status>, AV, K, S>,
  InputOf<Spec>,
  ObjectSchemaOf<Spec>,
  ObjectSchemaOf<Status>
>;

/** The object type of a kind handle: `KindObject<typeof webApp>`. */
export type KindObject<H> = H extends Kind<infer T, never> ? T : never;

// ═══════════════════════════════ operator ═══════════════════════════════

export type Predicate =
  | "GenerationChanged"
  | "ResourceVersionChanged"
  | "LabelChanged"
  | "AnnotationChanged"
  | { and: Predicate[] }
  | { or: Predicate[] };

export interface WatchOptions {
  /** Only this namespace. */
  namespace?: string;
  /** `"app=web,tier!=db"` or `{ app: "web" }`. */
  labelSelector?: string | { [key: string]: string };
  /** Which changes trigger the mapper. */
  predicate?: Predicate;
}

/** A CR to reconcile: its name (namespace defaults to the watched object's), `{name, namespace?}` or the CR itself. */
export type MapTarget = string | { name: string; namespace?: string } | KubeObject;
export type Mapper<T> = (obj: T) => MapTarget | MapTarget[] | null | undefined | void;

/** An RBAC rule; single strings are accepted for lists. */
export interface PolicyRule {
  apiGroups: string[] | string;
  resources: string[] | string;
  verbs: string[] | string;
  resourceNames?: string[] | string;
}

/** What `validate` returns: allowed (`true`/nothing), denied (`false`/a message) or in full. Throwing a ZodError denies with its message. */
export type ValidationReturn = Awaitable<
  boolean | string | void | undefined | { allowed: boolean; message?: string; warnings?: string[] }
>;

/** Options of `.every(period, options)`. */
export interface EveryOptions {
  /** Run the handler on every tick and trigger, even when nothing it read changed (default false). */
  always?: boolean;
}

/** Options of `.manages(...kinds, options)`. */
export interface ManagesOptions {
  /** Cache only objects that are children of this or another ctop operator (default false). */
  childrenOnly?: boolean;
  /**
   * Take over an existing object of these kinds that is not a child yet when a reconcile
   * applies one under its name (default false: that child fails with an `AdoptionRefused`
   * event naming who holds the object, and the object is left as it is). An object another
   * owner controls is never taken over.
   */
  adopt?: boolean;
}

/** Options of `.reads(...kinds, options)`. */
export interface ReadsOptions {
  /**
   * Watch and cache these kinds as their metadata only (`PartialObjectMetadata`, as
   * controller-runtime's `OnlyMetadata` and kube-rs's `metadata_watcher` do; default false):
   * the API server sends each object's `metadata` alone, so a kind with many or large objects
   * (Pods, Secrets) costs the operator a fraction of the memory and CPU. `getObserved` and
   * `listObserved` of these kinds then return `{ apiVersion, kind, metadata }` (the kind's own
   * `apiVersion` and `kind`), never `spec`, `status` or `data`, though their types still say
   * they may be there. A `.watches()` of the kind shares the watch: its mapper sees the same
   * objects. Refused (the script throws) for the operator's own kind and for kinds it
   * `.manages()`, whose full objects it needs. RBAC is the same: get, list, watch.
   */
  metadataOnly?: boolean;
}

/** Options of `apply(obj, options)`. */
export interface ApplyOptions {
  /**
   * Take over the object if it exists and is not a child yet: it gets the owner reference,
   * so deleting the CR deletes it (default false: that child fails, the object is left as it
   * is). An object another owner controls is never taken over.
   */
  adopt?: boolean;
}

/** Options of `.mutate(fn, options)`. */
export interface MutateOptions {
  /** Fill in the schema's defaults before the handler runs (default false). */
  defaults?: boolean;
}

/** The builder `operator(...)` returns; every method returns it again. */
export interface OperatorBuilder<CR extends KubeObject> {
  /**
   * Reconcile every CR periodically. A reconcile (a tick or any other trigger) whose handler
   * would read exactly what its last successful run read — the CR, each `getObserved` and
   * `listObserved`, the script, `Env` and `Values` — with its children still as applied, is
   * skipped: the last outcome stands. A run that read the clock (`now()`, `Date`), drew
   * randomness or called `fetch` is never skipped. `{ always: true }` runs the handler on
   * every trigger.
   */
  every(period: Duration, options?: EveryOptions): this;
  /** Owned children: watched, mapped to their owner, full RBAC, pruned when no longer applied. */
  manages(...kinds: (AnyKind | AnyKind[])[]): this;
  /**
   * `.manages(Secret, { childrenOnly: true })`: cache only the objects of these kinds that are
   * children (they carry the ApplySet part-of label ctop sets on every child), so unrelated
   * objects of the kind cost no memory; `getObserved` then sees children only.
   */
  manages(...kindsAndOptions: [...(AnyKind | AnyKind[])[], ManagesOptions]): this;
  /** Read-only kinds: watched (so `getObserved` sees them), RBAC get/list/watch. */
  reads(...kinds: (AnyKind | AnyKind[])[]): this;
  /**
   * `.reads(Pod, { metadataOnly: true })`: watch and cache these kinds as metadata only;
   * `getObserved`/`listObserved` of them return `{ apiVersion, kind, metadata }` (see
   * {@link ReadsOptions}).
   */
  reads(...kindsAndOptions: [...(AnyKind | AnyKind[])[], ReadsOptions]): this;
  /** Watch another kind; `mapper` names the CRs to reconcile (without one: by owner reference). */
  watches<T extends KubeObject>(kind: Kind<T, any>, mapper?: Mapper<Stored<T>> | null, options?: WatchOptions): this;
  watches<T extends KubeObject>(kind: Kind<T, any>, options: WatchOptions): this;
  watches(kind: KindRef | string, mapper?: Mapper<GenericObject> | null, options?: WatchOptions): this;
  /**
   * Where `fetch` may go: URL prefixes `scheme://host[:port][/path]` (`*.example.com` for
   * subdomains, port `*` for any). Nothing else is reachable (link-local addresses and the
   * operator's own ports never are); the generated NetworkPolicy allows the same.
   */
  egress(...urls: (string | string[])[]): this;
  /** Extra RBAC rules. */
  permission(...rules: (PolicyRule | PolicyRule[])[]): this;
  /**
   * Cleanup before a CR goes away; the finalizer defaults to `<plural>.<group>/finalizer` and is
   * removed once `fn` returns ok. What `fn` applies is the desired set during the deletion:
   * applying nothing prunes every child (`Result.keep()` keeps them; `Result.requeue(d)` calls
   * again). A deletion with `--cascade=orphan` or `foreground` applies and prunes nothing.
   */
  finalize(fn: (cr: CR) => HandlerReturn, name?: string | { name?: string }): this;
  /** Once when the controller starts. */
  onStart(fn: () => HandlerReturn): this;
  /** Validating admission webhook (`oldCr` on updates). */
  validate(fn: (cr: CR, oldCr: CR | undefined) => ValidationReturn): this;
  /**
   * Mutating admission webhook: change `cr` in place or return a new object. With
   * `{ defaults: true }` the spec arrives with the schema's defaults filled in, and they are
   * written to the stored object with the rest of the patch.
   */
  mutate(fn: (cr: CR, oldCr: CR | undefined) => Awaitable<CR | void | undefined>, options?: MutateOptions): this;
  /** Bring the world in line with `cr`: `apply` children, `setStatus`, return a Result. */
  reconcile(fn: (cr: CR) => HandlerReturn): this;
  /**
   * A rule every CR satisfies once the operator is quiet, whatever was written before it:
   * `ctop test --fuzz` checks it after random writes (the running operator never calls it).
   * `fn` gets the CR (spec defaults applied, as `reconcile` sees it) and the objects observed
   * of the controller's kinds, and returns `true` or nothing when the rule holds, else
   * `false` (reported as "does not hold"), a message, or several. A throw is a violation
   * with the error's message; the other invariants still run. Invariants only read: `apply`,
   * `patch`, `remove`, `setStatus`, `setCondition`, `event` and the finalizer calls throw
   * a TypeError in them. Several are kept in order; `name` defaults to `invariant N`.
   */
  invariant(name: string, fn: Invariant<CR>): this;
  invariant(fn: Invariant<CR>): this;
}

/** Options of `operator(kind, options)`: its name, and the scope of the primary watch. */
export interface OperatorOptions {
  /** A unique name (logs, metrics); defaults to the lowercase kind. */
  name?: string;
  /** Watch and reconcile the primary kind in this namespace only. */
  namespace?: string;
  /** Only primary objects matching this selector (`"app=web"` or `{ app: "web" }`), applied by the server. */
  labelSelector?: string | { [key: string]: string };
  /**
   * Only primary objects whose annotations match this selector (label-selector syntax over
   * annotations: `"service-per-pod-label"`, `"team=a,tier!=db"` or `{ team: "a" }`), as
   * Metacontroller's decorators select. Objects it does not select are never reconciled,
   * get no finalizer and no ApplySet record, and are not cached. An object that stops being
   * selected is released: the controller's finalizer is removed from it, and its children
   * stay (its owner references still delete them with it).
   */
  annotationSelector?: string | { [key: string]: string };
  /** Which updates of a primary object trigger a reconcile (creations and deletions always do). */
  predicate?: Predicate;
}

/** Start a controller for a resource (or any kind). Several may exist in one script. */
export declare function operator<T extends KubeObject>(res: Kind<T, any>, options?: OperatorOptions): OperatorBuilder<Stored<T>>;

// ═══════════════════════════════ inside handlers ═══════════════════════════════

/**
 * Add an object to the desired children (namespace defaults to the CR's); takes a snapshot
 * and returns `obj`. Its kind must be declared with `.manages(kind)`. The children applied
 * in one call are the complete desired set: those applied before and missing now are
 * pruned, unless the handler returns `Result.keep()` (or fails). An existing object of that
 * name that is not a child yet (made by hand, by another tool) is never taken over unless
 * `{ adopt: true }` says so here or in `.manages(kind, { adopt: true })`: without it that
 * child fails (an `AdoptionRefused` event names who holds the object) and nothing is pruned.
 * A child in another namespace than the CR's gets no owner reference (none can cross
 * namespaces): ctop ties it to the CR by label, puts a `children.ctop.dev/<operator>`
 * finalizer on the CR, and deletes the child itself when the CR is deleted.
 */
export declare function apply<T extends KubeObject>(obj: T, options?: ApplyOptions): Named<T>;
/** Merge a partial object into an object the operator does not own (no owner reference, never pruned). */
export declare function patch<T extends KubeObject>(obj: T): Named<T>;
/**
 * Delete the child `obj` (by apiVersion, kind, name; namespace defaults to the CR's) once this
 * call's applies succeeded: a finalize that tears down in order, or a reconcile returning
 * `Result.keep()`. Only a child of the object handled, of a `.manages()` kind, is deleted.
 */
export declare function remove<T extends KubeObject>(obj: T): T;

/**
 * The cached object, or undefined; namespace defaults to the CR's. Of a kind read with
 * `{ metadataOnly: true }`: `{ apiVersion, kind, metadata }` only.
 */
export declare function getObserved<T extends KubeObject>(kind: Kind<T, any>, name: string, namespace?: string): Stored<T> | undefined;
export declare function getObserved(kind: KindRef | string, name: string, namespace?: string): Stored<GenericObject> | undefined;

export type ListFilter<T> =
  | {
      namespace?: string;
      labels?: { [key: string]: string };
      /**
       * Only objects with an owner reference to this one (the CR's children: `{ ownedBy: cr }`),
       * and its children in other namespaces, which ctop ties to it by label and annotation.
       */
      ownedBy?: KubeObject;
    }
  | ((obj: T) => boolean);
/**
 * Cached objects of a kind (all namespaces unless filtered); of a kind read with
 * `{ metadataOnly: true }`, each is `{ apiVersion, kind, metadata }` only.
 */
export declare function listObserved<T extends KubeObject>(kind: Kind<T, any>, filter?: ListFilter<Stored<T>>): Stored<T>[];
export declare function listObserved(kind: KindRef | string, filter?: ListFilter<Stored<GenericObject>>): Stored<GenericObject>[];

/** What an invariant returns: it holds (`true`, nothing) or not (`false`, a message, messages). */
export type InvariantReturn = boolean | string | readonly string[] | null | undefined | void;
/** A rule of `.invariant(name, fn)`: synchronous, read-only. */
export type Invariant<CR> = (cr: CR, observed: Observed) => InvariantReturn;

/** What an invariant reads: the objects the check observed of the controller's kinds. */
export interface Observed {
  /** As `getObserved`: the object, or undefined; namespace defaults to the CR's. */
  get<T extends KubeObject>(kind: Kind<T, any>, name: string, namespace?: string): Stored<T> | undefined;
  get(kind: KindRef | string, name: string, namespace?: string): Stored<GenericObject> | undefined;
  /** As `listObserved`: the objects of a kind (all namespaces unless filtered). */
  list<T extends KubeObject>(kind: Kind<T, any>, filter?: ListFilter<Stored<T>>): Stored<T>[];
  list(kind: KindRef | string, filter?: ListFilter<Stored<GenericObject>>): Stored<GenericObject>[];
  /** The objects of every observed kind whose controller owner reference is the CR (by uid). */
  readonly children: Stored<GenericObject>[];
}

type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> | null }
    : T;

/** The status, with this call's `setStatus` patches merged in. */
export declare function getStatus<S>(cr: { status?: S }): Partial<NonNullable<S>>;
/** Deep-merge `patch` into the status written after the handler (null deletes a field). */
export declare function setStatus<S>(cr: { status?: S }, patch: DeepPartial<NonNullable<S>>): void;

export interface ConditionInput {
  type: string;
  status: "True" | "False" | "Unknown" | boolean;
  /** CamelCase; default: the type when True, `Not<type>` when False, `Unknown`. */
  reason?: string;
  message?: string;
}
/** Set one condition in `status.conditions` (the runtime fills times and observedGeneration). */
export declare function setCondition(cr: KubeObject, condition: ConditionInput): Required<Omit<Condition, "lastTransitionTime" | "observedGeneration">>;

export interface EventRecord {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  regarding?: { apiVersion: string; kind: string; name?: string; namespace?: string; uid?: string };
}
/** Record a Kubernetes Event about `obj` (about the CR when null). */
export declare function event(
  obj: KubeObject | null | undefined,
  event: { type?: "Normal" | "Warning"; reason: string; message?: string },
): EventRecord;

/**
 * Add a finalizer (default: this operator's); returns whether it was missing. Without
 * `.finalize()`, the reconcile runs while the CR is deleted and removes it with
 * `removeFinalizer`; what it applies then is the desired set during the deletion (applying
 * nothing prunes every child, and each child's deletion calls it again). Nothing is added
 * to a CR being deleted.
 */
export declare function addFinalizer(obj: KubeObject, name?: string): boolean;
/** Remove a finalizer (default: this operator's); returns whether it was there. */
export declare function removeFinalizer(obj: KubeObject, name?: string): boolean;

/** A time: milliseconds since the epoch, a `Date`, or an RFC 3339 string (`status.lastScheduleTime`). */
export type Instant = number | Date | string;

/** A cron schedule read by the host, in a time zone (see `cron`). */
export interface CronSchedule {
  readonly expression: string;
  readonly timeZone: string;
  /** The first run strictly after `after` (default `now()`), or undefined if it never runs again. */
  next(after?: Instant): Date | undefined;
  /** The runs in (from, to], oldest first, at most `limit` (default 1000): the runs missed since `from`. */
  between(from: Instant, to: Instant, options?: { limit?: number }): Date[];
}
/**
 * A cron schedule as a CronJob's `schedule` reads (five fields: minute hour day-of-month
 * month day-of-week, names like `MON` and `JAN`, or `@hourly`, `@daily`, `@weekly`,
 * `@monthly`, `@yearly`) in an IANA time zone (default `"UTC"`). A bad schedule or zone
 * throws a TypeError here. Its answers depend only on their arguments: pass the times.
 */
export declare function cron(expression: string, options?: { timeZone?: string }): CronSchedule;

/**
 * A Secret's values as text: `data` is base64 as the API server returns it, so this decodes
 * each value (UTF-8; a TypeError if one is not text) and adds `stringData`. To write text,
 * set `stringData` on the Secret you apply: ctop sends it as base64
 * `data`, as the server stores it, so applying the same value later as `data` read back
 * from the cache is the same apply (and skipped).
 */
export declare function stringData(secret: { data?: { [key: string]: string }; stringData?: { [key: string]: string }; metadata?: ObjectMeta }): { [key: string]: string };

/**
 * An object's health, as kstatus (cli-utils) names it:
 * - `Current`: its controller has done all it was asked (the latest spec is in effect and ready);
 * - `InProgress`: still being worked on (a rollout, a pod starting, a generation not yet observed);
 * - `Failed`: its controller gave up or cannot go on (a rollout past its deadline, a failed Job,
 *   a crash-looping or unschedulable Pod, a `Stalled` condition); waiting will not help;
 * - `Terminating`: being deleted (`metadata.deletionTimestamp` is set);
 * - `NotFound`: there is no object (`health(undefined)`);
 * - `Unknown`: it cannot be judged (a field of the wrong type, an unknown Pod phase).
 */
export type HealthStatus = "Current" | "InProgress" | "Failed" | "Terminating" | "NotFound" | "Unknown";

/** What `health(obj)` found. */
export interface Health {
  status: HealthStatus;
  /** One CamelCase word for the cause: `ReplicasUnavailable`, `JobFailed`, `PodReady`, or a condition's own reason. */
  reason: string;
  /** A short sentence with the numbers, not naming the object: `1 of 2 replicas available`. */
  message: string;
}

/**
 * The health of a Kubernetes object by kstatus' rules (those of kubectl, Flux and kpt, and of
 * the `Ready` condition ctop keeps on each primary): per kind for Deployment, StatefulSet,
 * DaemonSet, ReplicaSet, Job, Pod, PersistentVolumeClaim, Service, PodDisruptionBudget and
 * CustomResourceDefinition; by the `Ready`, `Reconciling` and `Stalled` conditions and
 * `observedGeneration` for any other kind. Pure: it reads the object alone. `undefined` or
 * `null` (a child `getObserved` did not find) is `NotFound`; anything else that is not an
 * object throws a TypeError.
 *
 * ```ts
 * const h = health(getObserved(Deployment, cr.metadata.name));
 * if (h.status !== "Current") setStatus(cr, { phase: "Pending", message: h.message });
 * ```
 */
export declare function health(obj: object | null | undefined): Health;

/** `n` (default 32) random characters from [a-zA-Z0-9]. */
export declare function randomString(n?: number): string;
/** Milliseconds since the epoch. */
export declare function now(): number;

export interface FetchInit {
  method?: string;
  headers?: { [name: string]: string | number };
  /** A string, or anything else sent as JSON. */
  body?: unknown;
  timeout?: Duration;
}
export interface FetchResponse {
  readonly url: string;
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: {
    get(name: string): string | null;
    has(name: string): boolean;
    forEach(fn: (value: string, name: string) => void): void;
    [Symbol.iterator](): IterableIterator<[string, string]>;
  };
  /** Synchronous (awaiting works too). */
  text(): string;
  json<T = any>(): T;
}
/** HTTP through the host: synchronous and bounded; network failures throw a TypeError. */
export declare function fetch(url: string, init?: FetchInit): FetchResponse;

export interface Logger {
  debug(message: unknown, fields?: { [key: string]: unknown }): void;
  info(message: unknown, fields?: { [key: string]: unknown }): void;
  warn(message: unknown, fields?: { [key: string]: unknown }): void;
  error(message: unknown, fields?: { [key: string]: unknown }): void;
}
export declare const log: Logger;

/**
 * The operator's environment variables: only those named `CTOP_ENV_<NAME>`, as
 * `Env.<NAME>` (the prefix stripped: `CTOP_ENV_REGION=eu` is `Env.REGION === "eu"`).
 * Nothing else of the process environment is visible (no `HOME`, `PATH` or credentials).
 * Values are strings. In a Deployment, set them in the container's `env`; in `ctop test`,
 * a test file's `env: {REGION: eu}` sets them for that test (and `tests/fuzz.yaml`'s for
 * the fuzzer), named as the script reads them.
 */
export declare const Env: { readonly [name: string]: string | undefined };

/** The operator's values; augment with `declare module "ctop" { interface CtopValues { ... } }`. */
export interface CtopValues {
  [key: string]: any;
}
export declare const Values: Readonly<CtopValues>;

// ═══════════════════════════════ built-in kinds ═══════════════════════════════

// The interfaces of the built-in kinds (`Deployment`, `DeploymentSpec`, `PodSpec`, ...), their
// handles and lowerCamel globals are generated from the Kubernetes API's schemas: `k8s.d.ts`
// (crates/runtime/tests/k8s_typings). The typings `ctop init` writes have it spliced in here.
export * from "./k8s";

/** A condition of a built-in kind's status: the fields the kinds' own condition types share. */
export interface KubeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
  lastProbeTime?: string;
}
/** A key of a ConfigMap or Secret (`configMapKeyRef`, `secretKeyRef`). */
export interface KeySelector {
  name?: string;
  key: string;
  optional?: boolean;
}
/** How a volume can be mounted (`accessModes` of a PersistentVolumeClaim or PersistentVolume). */
export type AccessMode = "ReadWriteOnce" | "ReadOnlyMany" | "ReadWriteMany" | "ReadWriteOncePod";

declare global {
  /** QuickJS has no console of its own: ctop routes it to `log` (same shape as the DOM/Node one, so they merge). */
  interface Console {
    log(...data: any[]): void;
    info(...data: any[]): void;
    debug(...data: any[]): void;
    warn(...data: any[]): void;
    error(...data: any[]): void;
  }
  var console: Console;
}
