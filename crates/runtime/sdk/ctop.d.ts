/**
 * Typings of the built-in module `"ctop"` that operator scripts import.
 *
 * Written by hand beside `ctop.js`. The generics make `resource(...)` infer the custom
 * resource's type from its `z` shapes, so `reconcile((cr) => ...)` sees `cr.spec.replicas`
 * as `number`. Built-in kinds (`Secret`, `Deployment`, ...) are both a value (a kind handle
 * that also builds objects) and an interface of the same name.
 */

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

export interface ZodIssue {
  code: string;
  path: (string | number)[];
  message: string;
  [detail: string]: unknown;
}

/** Thrown by `parse`; `message` is `"path: message; ..."`. */
export declare class ZodError extends Error {
  constructor(issues: ZodIssue[]);
  readonly issues: ZodIssue[];
  readonly errors: ZodIssue[];
}

export type SafeParseResult<T> = { success: true; data: T } | { success: false; error: ZodError };

/** A custom message: `.min(1, "too short")` or `.min(1, { message: "too short" })`. */
type Message = string | { message?: string };

/** A structural OpenAPI v3 schema, as it goes into a CRD. */
export interface OpenAPISchema {
  type?: "string" | "number" | "integer" | "boolean" | "object" | "array";
  description?: string;
  properties?: { [name: string]: OpenAPISchema };
  required?: string[];
  items?: OpenAPISchema;
  additionalProperties?: OpenAPISchema | boolean;
  enum?: unknown[];
  default?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  nullable?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
}

/** Every schema: `Out` is what `parse` returns, `In` what it accepts. */
export interface ZodType<Out = any, In = Out> {
  /** Type-level only (like zod): the parsed type. */
  readonly _output: Out;
  /** Type-level only (like zod): the accepted type. */
  readonly _input: In;
  readonly description: string | undefined;
  parse(value: unknown): Out;
  safeParse(value: unknown): SafeParseResult<Out>;
  optional(): ZodOptional<this>;
  nullable(): ZodNullable<this>;
  nullish(): ZodOptional<ZodNullable<this>>;
  /** Used when the value is missing; also the CRD's `default`. */
  default(value: Exclude<In, undefined>): ZodDefault<this>;
  describe(description: string): this;
  isOptional(): boolean;
  toOpenAPI(): OpenAPISchema;
}
export type ZodTypeAny = ZodType<any, any>;

export interface ZodOptional<T extends ZodTypeAny> extends ZodType<T["_output"] | undefined, T["_input"] | undefined> {}
export interface ZodNullable<T extends ZodTypeAny> extends ZodType<T["_output"] | null, T["_input"] | null> {}
export interface ZodDefault<T extends ZodTypeAny> extends ZodType<Exclude<T["_output"], undefined>, T["_input"] | undefined> {}

export interface ZodString extends ZodType<string> {
  min(length: number, message?: Message): this;
  max(length: number, message?: Message): this;
  length(length: number, message?: Message): this;
  nonempty(message?: Message): this;
  /** The CRD gets `re.source` as `pattern` (the API server evaluates it; flags are ignored). */
  regex(re: RegExp, message?: Message): this;
}

export interface ZodNumber extends ZodType<number> {
  /** Whole numbers; `type: integer` in the CRD. */
  int(): this;
  min(value: number, message?: Message): this;
  max(value: number, message?: Message): this;
  gte(value: number, message?: Message): this;
  lte(value: number, message?: Message): this;
  positive(message?: Message): this;
  nonnegative(message?: Message): this;
}

export interface ZodBoolean extends ZodType<boolean> {}

export interface ZodEnum<T extends readonly [string, ...string[]]> extends ZodType<T[number]> {
  readonly options: T[number][];
  readonly enum: { readonly [K in T[number]]: K };
}

export interface ZodLiteral<T extends string | number | boolean> extends ZodType<T> {
  readonly value: T;
}

/** Anything; `x-kubernetes-preserve-unknown-fields: true` in the CRD. */
export interface ZodAny extends ZodType<any> {}
export interface ZodUnknown extends ZodType<unknown> {}

export interface ZodArray<T extends ZodTypeAny> extends ZodType<T["_output"][], T["_input"][]> {
  readonly element: T;
  min(items: number, message?: Message): this;
  max(items: number, message?: Message): this;
  length(items: number, message?: Message): this;
  nonempty(message?: Message): this;
}

export type ZodRawShape = { [key: string]: ZodTypeAny };

type OptionalKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];
type RequiredKeys<T> = Exclude<keyof T, OptionalKeys<T>>;
type Flatten<T> = { [K in keyof T]: T[K] } & {};
/** `{a: string, b: number | undefined}` → `{a: string, b?: number | undefined}`. */
type WithOptionalKeys<T> = Flatten<{ [K in RequiredKeys<T>]: T[K] } & { [K in OptionalKeys<T>]?: T[K] }>;
export type ObjectOutput<S extends ZodRawShape> = WithOptionalKeys<{ [K in keyof S]: S[K]["_output"] }>;
export type ObjectInput<S extends ZodRawShape> = WithOptionalKeys<{ [K in keyof S]: S[K]["_input"] }>;

export interface ZodObject<S extends ZodRawShape, Extra = {}>
  extends ZodType<Flatten<ObjectOutput<S> & Extra>, Flatten<ObjectInput<S> & Extra>> {
  readonly shape: S;
  /** Keep unknown keys (and `x-kubernetes-preserve-unknown-fields` in the CRD). */
  passthrough(): ZodObject<S, { [key: string]: unknown }>;
  /** Drop unknown keys (the default). */
  strip(): ZodObject<S>;
  extend<E extends ZodRawShape>(shape: E): ZodObject<Flatten<Omit<S, keyof E> & E>, Extra>;
  partial(): ZodObject<{ [K in keyof S]: ZodOptional<S[K]> }, Extra>;
}
export type AnyZodObject = ZodObject<any, any>;

export interface ZodRecord<V extends ZodTypeAny>
  extends ZodType<{ [key: string]: V["_output"] }, { [key: string]: V["_input"] }> {}

/** The zod-compatible subset. */
export interface Z {
  string(): ZodString;
  number(): ZodNumber;
  /** Same as `z.number().int()`. */
  int(): ZodNumber;
  boolean(): ZodBoolean;
  enum<const T extends readonly [string, ...string[]]>(values: T): ZodEnum<T>;
  literal<const T extends string | number | boolean>(value: T): ZodLiteral<T>;
  object<S extends ZodRawShape>(shape: S): ZodObject<S>;
  array<T extends ZodTypeAny>(element: T): ZodArray<T>;
  record<V extends ZodTypeAny>(value: V): ZodRecord<V>;
  record<V extends ZodTypeAny>(key: ZodType<string>, value: V): ZodRecord<V>;
  any(): ZodAny;
  unknown(): ZodUnknown;
  optional<T extends ZodTypeAny>(schema: T): ZodOptional<T>;
  nullable<T extends ZodTypeAny>(schema: T): ZodNullable<T>;
  ZodError: typeof ZodError;
}
export declare const z: Z;
export declare namespace z {
  /** The parsed type of a schema: `z.infer<typeof s>`. */
  type infer<T extends ZodTypeAny> = T["_output"];
  type output<T extends ZodTypeAny> = T["_output"];
  type input<T extends ZodTypeAny> = T["_input"];
}

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

/** The cached object, or undefined; namespace defaults to the CR's. */
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
/** Cached objects of a kind (all namespaces unless filtered). */
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
 * set `stringData` on the Secret you apply; the server encodes it.
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

export type Quantity = string | number;
export type IntOrString = number | string;

export interface LabelSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}
export interface LabelSelector {
  matchLabels?: { [key: string]: string };
  matchExpressions?: LabelSelectorRequirement[];
}
export interface LocalObjectReference {
  name: string;
}
export interface KubeCondition {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
  lastProbeTime?: string;
}

// ─── core/v1: pods and containers ───

export interface KeySelector {
  name: string;
  key: string;
  optional?: boolean;
}
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: KeySelector;
    configMapKeyRef?: KeySelector;
    fieldRef?: { fieldPath: string; apiVersion?: string };
    resourceFieldRef?: { resource: string; containerName?: string; divisor?: Quantity };
  };
}
export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}
export interface ContainerPort {
  containerPort: number;
  name?: string;
  protocol?: "TCP" | "UDP" | "SCTP";
  hostPort?: number;
}
export interface ResourceRequirements {
  limits?: { [resource: string]: Quantity };
  requests?: { [resource: string]: Quantity };
}
export interface VolumeMount {
  name: string;
  mountPath: string;
  subPath?: string;
  readOnly?: boolean;
}
export interface Probe {
  httpGet?: { path?: string; port: IntOrString; host?: string; scheme?: "HTTP" | "HTTPS"; httpHeaders?: { name: string; value: string }[] };
  tcpSocket?: { port: IntOrString; host?: string };
  exec?: { command: string[] };
  grpc?: { port: number; service?: string };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}
export interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: "RuntimeDefault" | "Localhost" | "Unconfined"; localhostProfile?: string };
}
export interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  fsGroup?: number;
  supplementalGroups?: number[];
  seccompProfile?: { type: "RuntimeDefault" | "Localhost" | "Unconfined"; localhostProfile?: string };
}
export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  command?: string[];
  args?: string[];
  workingDir?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  securityContext?: SecurityContext;
  lifecycle?: { postStart?: unknown; preStop?: unknown };
  stdin?: boolean;
  tty?: boolean;
}
export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}
export interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: Quantity };
  configMap?: { name: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  secret?: { secretName: string; items?: KeyToPath[]; defaultMode?: number; optional?: boolean };
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  hostPath?: { path: string; type?: string };
  projected?: { sources: unknown[]; defaultMode?: number };
  downwardAPI?: { items?: unknown[]; defaultMode?: number };
  csi?: { driver: string; readOnly?: boolean; volumeAttributes?: { [key: string]: string } };
}
export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: "NoSchedule" | "PreferNoSchedule" | "NoExecute";
  tolerationSeconds?: number;
}
export interface TopologySpreadConstraint {
  maxSkew: number;
  topologyKey: string;
  whenUnsatisfiable: "DoNotSchedule" | "ScheduleAnyway";
  labelSelector?: LabelSelector;
}
export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  restartPolicy?: "Always" | "OnFailure" | "Never";
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  nodeName?: string;
  nodeSelector?: { [key: string]: string };
  affinity?: { nodeAffinity?: unknown; podAffinity?: unknown; podAntiAffinity?: unknown };
  tolerations?: Toleration[];
  topologySpreadConstraints?: TopologySpreadConstraint[];
  imagePullSecrets?: LocalObjectReference[];
  securityContext?: PodSecurityContext;
  hostNetwork?: boolean;
  dnsPolicy?: "ClusterFirst" | "ClusterFirstWithHostNet" | "Default" | "None";
  priorityClassName?: string;
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  hostname?: string;
  subdomain?: string;
}
export interface PodTemplateSpec {
  metadata?: ObjectMeta;
  spec: PodSpec;
}
export interface ContainerStatus {
  name: string;
  ready: boolean;
  restartCount: number;
  image: string;
  imageID?: string;
  started?: boolean;
  state?: { waiting?: { reason?: string; message?: string }; running?: { startedAt?: string }; terminated?: { exitCode: number; reason?: string; message?: string } };
}
export interface Pod extends KubeObject {
  apiVersion: "v1";
  kind: "Pod";
  spec?: PodSpec;
  status?: {
    phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
    conditions?: KubeCondition[];
    podIP?: string;
    hostIP?: string;
    startTime?: string;
    containerStatuses?: ContainerStatus[];
  };
}

// ─── core/v1: configuration and identity ───

export interface ConfigMap extends KubeObject {
  apiVersion: "v1";
  kind: "ConfigMap";
  data?: { [key: string]: string };
  binaryData?: { [key: string]: string };
  immutable?: boolean;
}
export interface Secret extends KubeObject {
  apiVersion: "v1";
  kind: "Secret";
  /** e.g. `Opaque`, `kubernetes.io/tls`, `kubernetes.io/dockerconfigjson`. */
  type?: string;
  /** base64-encoded values. */
  data?: { [key: string]: string };
  /** Plain values, written into `data` by the API server. */
  stringData?: { [key: string]: string };
  immutable?: boolean;
}
export interface ServiceAccount extends KubeObject {
  apiVersion: "v1";
  kind: "ServiceAccount";
  secrets?: { name?: string; namespace?: string }[];
  imagePullSecrets?: LocalObjectReference[];
  automountServiceAccountToken?: boolean;
}
export interface Namespace extends KubeObject {
  apiVersion: "v1";
  kind: "Namespace";
  spec?: { finalizers?: string[] };
  status?: { phase?: "Active" | "Terminating"; conditions?: KubeCondition[] };
}

// ─── core/v1: networking and storage ───

export interface ServicePort {
  port: number;
  targetPort?: IntOrString;
  name?: string;
  protocol?: "TCP" | "UDP" | "SCTP";
  nodePort?: number;
  appProtocol?: string;
}
export interface Service extends KubeObject {
  apiVersion: "v1";
  kind: "Service";
  spec?: {
    type?: "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName";
    selector?: { [key: string]: string };
    ports?: ServicePort[];
    clusterIP?: string;
    clusterIPs?: string[];
    externalName?: string;
    externalTrafficPolicy?: "Cluster" | "Local";
    sessionAffinity?: "ClientIP" | "None";
    loadBalancerClass?: string;
    publishNotReadyAddresses?: boolean;
  };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}
export interface Endpoints extends KubeObject {
  apiVersion: "v1";
  kind: "Endpoints";
  subsets?: {
    addresses?: { ip: string; hostname?: string; nodeName?: string }[];
    notReadyAddresses?: { ip: string; hostname?: string }[];
    ports?: { port: number; name?: string; protocol?: string }[];
  }[];
}
export type AccessMode = "ReadWriteOnce" | "ReadOnlyMany" | "ReadWriteMany" | "ReadWriteOncePod";
export interface PersistentVolumeClaimSpec {
  accessModes?: AccessMode[];
  resources?: { requests?: { storage?: Quantity; [resource: string]: Quantity | undefined }; limits?: { [resource: string]: Quantity } };
  storageClassName?: string;
  volumeMode?: "Filesystem" | "Block";
  volumeName?: string;
  selector?: LabelSelector;
}
export interface PersistentVolumeClaim extends KubeObject {
  apiVersion: "v1";
  kind: "PersistentVolumeClaim";
  spec?: PersistentVolumeClaimSpec;
  status?: { phase?: "Pending" | "Bound" | "Lost"; capacity?: { [resource: string]: Quantity }; accessModes?: AccessMode[] };
}
export interface PersistentVolume extends KubeObject {
  apiVersion: "v1";
  kind: "PersistentVolume";
  spec?: {
    capacity?: { [resource: string]: Quantity };
    accessModes?: AccessMode[];
    persistentVolumeReclaimPolicy?: "Retain" | "Delete" | "Recycle";
    storageClassName?: string;
    volumeMode?: "Filesystem" | "Block";
    claimRef?: { name?: string; namespace?: string; uid?: string };
    hostPath?: { path: string; type?: string };
    nfs?: { server: string; path: string; readOnly?: boolean };
    csi?: { driver: string; volumeHandle: string; fsType?: string };
  };
  status?: { phase?: "Pending" | "Available" | "Bound" | "Released" | "Failed" };
}
export interface LimitRange extends KubeObject {
  apiVersion: "v1";
  kind: "LimitRange";
  spec?: {
    limits: {
      type: "Container" | "Pod" | "PersistentVolumeClaim";
      max?: { [resource: string]: Quantity };
      min?: { [resource: string]: Quantity };
      default?: { [resource: string]: Quantity };
      defaultRequest?: { [resource: string]: Quantity };
    }[];
  };
}
export interface ResourceQuota extends KubeObject {
  apiVersion: "v1";
  kind: "ResourceQuota";
  spec?: { hard?: { [resource: string]: Quantity }; scopes?: string[] };
  status?: { hard?: { [resource: string]: Quantity }; used?: { [resource: string]: Quantity } };
}
export interface Node extends KubeObject {
  apiVersion: "v1";
  kind: "Node";
  spec?: {
    podCIDR?: string;
    providerID?: string;
    unschedulable?: boolean;
    taints?: { key: string; value?: string; effect: "NoSchedule" | "PreferNoSchedule" | "NoExecute" }[];
  };
  status?: {
    capacity?: { [resource: string]: Quantity };
    allocatable?: { [resource: string]: Quantity };
    conditions?: KubeCondition[];
    addresses?: { type: string; address: string }[];
  };
}

// ─── apps/v1 ───

export interface DeploymentSpec {
  replicas?: number;
  selector: LabelSelector;
  template: PodTemplateSpec;
  strategy?: { type?: "RollingUpdate" | "Recreate"; rollingUpdate?: { maxSurge?: IntOrString; maxUnavailable?: IntOrString } };
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
  progressDeadlineSeconds?: number;
  paused?: boolean;
}
export interface Deployment extends KubeObject {
  apiVersion: "apps/v1";
  kind: "Deployment";
  spec?: DeploymentSpec;
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    updatedReplicas?: number;
    unavailableReplicas?: number;
    conditions?: KubeCondition[];
  };
}
export interface StatefulSet extends KubeObject {
  apiVersion: "apps/v1";
  kind: "StatefulSet";
  spec?: {
    serviceName?: string;
    replicas?: number;
    selector: LabelSelector;
    template: PodTemplateSpec;
    volumeClaimTemplates?: { metadata?: ObjectMeta; spec: PersistentVolumeClaimSpec }[];
    podManagementPolicy?: "OrderedReady" | "Parallel";
    updateStrategy?: { type?: "RollingUpdate" | "OnDelete"; rollingUpdate?: { partition?: number; maxUnavailable?: IntOrString } };
    minReadySeconds?: number;
    revisionHistoryLimit?: number;
    persistentVolumeClaimRetentionPolicy?: { whenDeleted?: "Retain" | "Delete"; whenScaled?: "Retain" | "Delete" };
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    currentReplicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
    conditions?: KubeCondition[];
  };
}
export interface DaemonSet extends KubeObject {
  apiVersion: "apps/v1";
  kind: "DaemonSet";
  spec?: {
    selector: LabelSelector;
    template: PodTemplateSpec;
    updateStrategy?: { type?: "RollingUpdate" | "OnDelete"; rollingUpdate?: { maxSurge?: IntOrString; maxUnavailable?: IntOrString } };
    minReadySeconds?: number;
    revisionHistoryLimit?: number;
  };
  status?: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
    numberMisscheduled?: number;
    updatedNumberScheduled?: number;
    conditions?: KubeCondition[];
  };
}
export interface ReplicaSet extends KubeObject {
  apiVersion: "apps/v1";
  kind: "ReplicaSet";
  spec?: { replicas?: number; selector: LabelSelector; template?: PodTemplateSpec; minReadySeconds?: number };
  status?: { replicas?: number; readyReplicas?: number; availableReplicas?: number; observedGeneration?: number; conditions?: KubeCondition[] };
}

// ─── batch/v1 ───

export interface JobSpec {
  template: PodTemplateSpec;
  backoffLimit?: number;
  completions?: number;
  parallelism?: number;
  activeDeadlineSeconds?: number;
  ttlSecondsAfterFinished?: number;
  completionMode?: "NonIndexed" | "Indexed";
  suspend?: boolean;
  selector?: LabelSelector;
  manualSelector?: boolean;
}
export interface Job extends KubeObject {
  apiVersion: "batch/v1";
  kind: "Job";
  spec?: JobSpec;
  status?: {
    active?: number;
    succeeded?: number;
    failed?: number;
    ready?: number;
    startTime?: string;
    completionTime?: string;
    conditions?: KubeCondition[];
  };
}
export interface CronJob extends KubeObject {
  apiVersion: "batch/v1";
  kind: "CronJob";
  spec?: {
    schedule: string;
    timeZone?: string;
    jobTemplate: { metadata?: ObjectMeta; spec: JobSpec };
    concurrencyPolicy?: "Allow" | "Forbid" | "Replace";
    suspend?: boolean;
    startingDeadlineSeconds?: number;
    successfulJobsHistoryLimit?: number;
    failedJobsHistoryLimit?: number;
  };
  status?: { active?: { name?: string; namespace?: string; uid?: string }[]; lastScheduleTime?: string; lastSuccessfulTime?: string };
}

// ─── networking.k8s.io/v1 ───

export interface IngressBackend {
  service?: { name: string; port: { number?: number; name?: string } };
  resource?: { apiGroup?: string; kind: string; name: string };
}
export interface Ingress extends KubeObject {
  apiVersion: "networking.k8s.io/v1";
  kind: "Ingress";
  spec?: {
    ingressClassName?: string;
    defaultBackend?: IngressBackend;
    tls?: { hosts?: string[]; secretName?: string }[];
    rules?: {
      host?: string;
      http?: { paths: { path?: string; pathType: "Exact" | "Prefix" | "ImplementationSpecific"; backend: IngressBackend }[] };
    }[];
  };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } };
}
export interface IngressClass extends KubeObject {
  apiVersion: "networking.k8s.io/v1";
  kind: "IngressClass";
  spec?: { controller?: string; parameters?: { apiGroup?: string; kind: string; name: string; namespace?: string; scope?: string } };
}
export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}
export interface NetworkPolicyPort {
  protocol?: "TCP" | "UDP" | "SCTP";
  port?: IntOrString;
  endPort?: number;
}
export interface NetworkPolicy extends KubeObject {
  apiVersion: "networking.k8s.io/v1";
  kind: "NetworkPolicy";
  spec?: {
    podSelector: LabelSelector;
    policyTypes?: ("Ingress" | "Egress")[];
    ingress?: { from?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }[];
    egress?: { to?: NetworkPolicyPeer[]; ports?: NetworkPolicyPort[] }[];
  };
}

// ─── rbac.authorization.k8s.io/v1 ───

export interface RbacRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}
export interface Subject {
  kind: "User" | "Group" | "ServiceAccount";
  name: string;
  namespace?: string;
  apiGroup?: string;
}
export interface RoleRef {
  apiGroup: "rbac.authorization.k8s.io";
  kind: "Role" | "ClusterRole";
  name: string;
}
export interface Role extends KubeObject {
  apiVersion: "rbac.authorization.k8s.io/v1";
  kind: "Role";
  rules?: RbacRule[];
}
export interface ClusterRole extends KubeObject {
  apiVersion: "rbac.authorization.k8s.io/v1";
  kind: "ClusterRole";
  rules?: RbacRule[];
  aggregationRule?: { clusterRoleSelectors?: LabelSelector[] };
}
export interface RoleBinding extends KubeObject {
  apiVersion: "rbac.authorization.k8s.io/v1";
  kind: "RoleBinding";
  subjects?: Subject[];
  roleRef: RoleRef;
}
export interface ClusterRoleBinding extends KubeObject {
  apiVersion: "rbac.authorization.k8s.io/v1";
  kind: "ClusterRoleBinding";
  subjects?: Subject[];
  roleRef: RoleRef;
}

// ─── autoscaling, policy, coordination, storage ───

export interface HorizontalPodAutoscaler extends KubeObject {
  apiVersion: "autoscaling/v2";
  kind: "HorizontalPodAutoscaler";
  spec?: {
    scaleTargetRef: { apiVersion?: string; kind: string; name: string };
    minReplicas?: number;
    maxReplicas: number;
    metrics?: {
      type: "Resource" | "Pods" | "Object" | "External" | "ContainerResource";
      resource?: { name: string; target: { type: "Utilization" | "Value" | "AverageValue"; averageUtilization?: number; averageValue?: Quantity; value?: Quantity } };
      [source: string]: unknown;
    }[];
    behavior?: { scaleUp?: unknown; scaleDown?: unknown };
  };
  status?: { currentReplicas?: number; desiredReplicas?: number; lastScaleTime?: string; conditions?: KubeCondition[] };
}
export interface PodDisruptionBudget extends KubeObject {
  apiVersion: "policy/v1";
  kind: "PodDisruptionBudget";
  spec?: {
    selector?: LabelSelector;
    minAvailable?: IntOrString;
    maxUnavailable?: IntOrString;
    unhealthyPodEvictionPolicy?: "IfHealthyBudget" | "AlwaysAllow";
  };
  status?: { currentHealthy?: number; desiredHealthy?: number; disruptionsAllowed?: number; expectedPods?: number; conditions?: KubeCondition[] };
}
export interface Lease extends KubeObject {
  apiVersion: "coordination.k8s.io/v1";
  kind: "Lease";
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}
export interface StorageClass extends KubeObject {
  apiVersion: "storage.k8s.io/v1";
  kind: "StorageClass";
  provisioner: string;
  parameters?: { [key: string]: string };
  reclaimPolicy?: "Retain" | "Delete";
  volumeBindingMode?: "Immediate" | "WaitForFirstConsumer";
  allowVolumeExpansion?: boolean;
  mountOptions?: string[];
}

export declare const ConfigMap: Kind<ConfigMap>;
export declare const Secret: Kind<Secret>;
export declare const Service: Kind<Service>;
export declare const ServiceAccount: Kind<ServiceAccount>;
export declare const Pod: Kind<Pod>;
export declare const PersistentVolumeClaim: Kind<PersistentVolumeClaim>;
export declare const Endpoints: Kind<Endpoints>;
export declare const LimitRange: Kind<LimitRange>;
export declare const ResourceQuota: Kind<ResourceQuota>;
export declare const Namespace: Kind<Namespace>;
export declare const Node: Kind<Node>;
export declare const PersistentVolume: Kind<PersistentVolume>;
export declare const Deployment: Kind<Deployment>;
export declare const StatefulSet: Kind<StatefulSet>;
export declare const DaemonSet: Kind<DaemonSet>;
export declare const ReplicaSet: Kind<ReplicaSet>;
export declare const Job: Kind<Job>;
export declare const CronJob: Kind<CronJob>;
export declare const Ingress: Kind<Ingress>;
export declare const IngressClass: Kind<IngressClass>;
export declare const NetworkPolicy: Kind<NetworkPolicy>;
export declare const Role: Kind<Role>;
export declare const RoleBinding: Kind<RoleBinding>;
export declare const ClusterRole: Kind<ClusterRole>;
export declare const ClusterRoleBinding: Kind<ClusterRoleBinding>;
export declare const HorizontalPodAutoscaler: Kind<HorizontalPodAutoscaler>;
export declare const PodDisruptionBudget: Kind<PodDisruptionBudget>;
export declare const Lease: Kind<Lease>;
export declare const StorageClass: Kind<StorageClass>;

/**
 * Every built-in kind handle is also a global under its lowerCamel name, so scripts like
 * the plan's `getObserved(secret, ...)` work without importing it.
 */
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

  const configMap: typeof ConfigMap;
  const secret: typeof Secret;
  const service: typeof Service;
  const serviceAccount: typeof ServiceAccount;
  const pod: typeof Pod;
  const persistentVolumeClaim: typeof PersistentVolumeClaim;
  const endpoints: typeof Endpoints;
  const limitRange: typeof LimitRange;
  const resourceQuota: typeof ResourceQuota;
  const namespace: typeof Namespace;
  const node: typeof Node;
  const persistentVolume: typeof PersistentVolume;
  const deployment: typeof Deployment;
  const statefulSet: typeof StatefulSet;
  const daemonSet: typeof DaemonSet;
  const replicaSet: typeof ReplicaSet;
  const job: typeof Job;
  const cronJob: typeof CronJob;
  const ingress: typeof Ingress;
  const ingressClass: typeof IngressClass;
  const networkPolicy: typeof NetworkPolicy;
  const role: typeof Role;
  const roleBinding: typeof RoleBinding;
  const clusterRole: typeof ClusterRole;
  const clusterRoleBinding: typeof ClusterRoleBinding;
  const horizontalPodAutoscaler: typeof HorizontalPodAutoscaler;
  const podDisruptionBudget: typeof PodDisruptionBudget;
  const lease: typeof Lease;
  const storageClass: typeof StorageClass;
}
