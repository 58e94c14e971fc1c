// TypeScript-only syntax that the loader strips or lowers: interfaces, type aliases, enums
// (string and numeric), generics, parameter properties, `as`, `satisfies`, `!`.
import type { KubeObject } from "ctop";

export interface Labels {
  [key: string]: string;
}

export type Resources = { cpu: string; memory: string };

export enum Tier {
  Gold = "gold",
  Silver = "silver",
}

export enum Priority {
  Low,
  Normal = 5,
  High,
}

/** The subset of `obj` with `keys`. */
export function pick<T extends object, K extends keyof T>(obj: T, ...keys: K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const k of keys) out[k] = obj[k];
  return out;
}

/** Things by name, remembering the order they came in. */
export class Registry<T> {
  private readonly items = new Map<string, T>();
  constructor(public readonly label: string) {}
  add(name: string, item: T): this {
    this.items.set(name, item);
    return this;
  }
  get(name: string): T | undefined {
    return this.items.get(name);
  }
  names(): string[] {
    return [...this.items.keys()];
  }
}

export const standardLabels = (obj: KubeObject): Labels => ({
  "app.kubernetes.io/name": obj.metadata!.name!,
  "app.kubernetes.io/instance": `${obj.metadata?.namespace ?? "cluster"}.${obj.metadata!.name}`,
});

export const PORTS = { http: 80, https: 443 } as const satisfies Record<string, number>;
