/**
 * Typings of `z`, the zod-compatible schemas of the module `"ctop"` (`src/z.js`). `ctop.d.ts`
 * re-exports them; the typings `ctop init` writes have this file spliced in there
 * (crates/runtime/build.rs).
 */

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
export type Flatten<T> = { [K in keyof T]: T[K] } & {};
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
