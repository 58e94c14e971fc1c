// Test helpers: a fake `__ct_host` and fresh SDK instances (Node stands in for QuickJS).
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const made = [];
process.on("exit", () => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/**
 * A new directory under the system's temp directory, removed when the test process exits
 * (not before: a loaded SDK may still import from it).
 */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** A host that records what the SDK asks of it. `fetch` answers with `onFetch(url, init)`. */
export function fakeHost({ onFetch } = {}) {
  const ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  let seed = 0;
  const host = {
    logs: [],
    fetches: [],
    randomString(n) {
      let s = "";
      for (let i = 0; i < n; i++) s += ALPHABET[(seed++ * 7 + 3) % ALPHABET.length];
      return s;
    },
    log(level, message, fieldsJson) {
      host.logs.push({ level, message, fields: JSON.parse(fieldsJson) });
    },
    fetch(url, initJson) {
      const init = JSON.parse(initJson);
      host.fetches.push({ url, init });
      return JSON.stringify(onFetch ? onFetch(url, init) : { status: 200, headers: {}, body: "" });
    },
    now: () => 1_700_000_000_000,
  };
  return host;
}

/**
 * A fresh copy of the SDK (ctop.js and src/) in its own directory (so module state and
 * `__ct_operator` start empty), with `script` (a module importing "./ctop.js") evaluated
 * after it.
 */
export async function load({ script, host = fakeHost(), before } = {}) {
  const dir = tempDir("ctop-sdk-");
  copyFileSync(join(ROOT, "ctop.js"), join(dir, "ctop.js"));
  cpSync(join(ROOT, "src"), join(dir, "src"), { recursive: true });
  globalThis.__ct_host = host;
  before?.();
  const sdk = await import(pathToFileURL(join(dir, "ctop.js")).href);
  if (script !== undefined) {
    writeFileSync(join(dir, "operator.js"), script);
    await import(pathToFileURL(join(dir, "operator.js")).href);
  }
  const dispatch = (handler, index, input = {}) => {
    const out = globalThis.__ct_dispatch(handler, index, JSON.stringify(input));
    return typeof out === "string" ? JSON.parse(out) : out.then((s) => JSON.parse(s));
  };
  return { sdk, host, dir, dispatch, registry: () => JSON.parse(JSON.stringify(globalThis.__ct_operator)) };
}

/** The WebApp example (examples/webapp.ts) as JavaScript: examples/webapp.ts has no type annotations, only the specifier changes. */
export function planScript() {
  return readFileSync(join(ROOT, "examples/webapp.ts"), "utf8")
    .replace('"https://github.com/cloudticon/k8s@master"', '"./ctop.js"');
}

export const golden = (name) => JSON.parse(readFileSync(join(ROOT, "test/golden", name), "utf8"));

/** A WebApp CR as the runtime would pass it. */
export const webAppCr = (spec = { image: "nginx:1.27" }, extra = {}) => ({
  apiVersion: "apps.example.com/v1",
  kind: "WebApp",
  metadata: { name: "shop", namespace: "prod", uid: "u-1", generation: 1 },
  spec,
  ...extra,
});
