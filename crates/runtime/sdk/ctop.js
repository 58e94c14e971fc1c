/**
 * ctop — the built-in module `"ctop"` that operator scripts import.
 *
 * Plain ES2023 modules with no dependencies: this file is the module scripts import, and
 * re-exports what the modules under `src/` define, one concern each. It runs inside QuickJS
 * (which gets `src/x.js` as the module `ctop:src/x.js`: crates/runtime/src/sdk.rs); all it
 * needs from outside are the host functions in `globalThis.__ct_host` (`src/host.js`). Its
 * two faces, both described in crates/runtime/RUNTIME.md:
 *
 * - at load time, `resource(...)` and `operator(...)` register a plain JSON description of
 *   the CRDs and controllers into `globalThis.__ct_operator`;
 * - at run time, Rust calls `globalThis.__ct_dispatch(handler, controllerIndex, inputJson)`;
 *   the script's handler runs with `getObserved`, `apply`, `setStatus`, ... writing into
 *   per-call buffers, which come back as one output (children are handed to the host as
 *   they are applied).
 *
 * Every built-in kind handle is also a global under its lowerCamel name (`secret`,
 * `configMap`, ...), so a script's `getObserved(secret, ...)` works without an import.
 *
 * Reading order (each module imports only those before it):
 * - `src/util.js`: plain-data helpers, durations;
 * - `src/z.js`: the zod-compatible schemas;
 * - `src/kinds.js`: kind handles, `kindOf`; `src/builtins.js` (generated): the built-in ones;
 * - `src/call.js`: the state of the handler call in progress;
 * - `src/host.js`: the host, and what is little more than a host call (`fetch`, `cron`, `log`, ...);
 * - `src/resource.js`: `resource(...)`, CRDs and versions; `src/conversion.js`: converting between them;
 * - `src/operator.js`: `operator(...)` and its builder;
 * - `src/handler.js`: what handlers call (`apply`, `getObserved`, `setStatus`, ...);
 * - `src/invariants.js`: the `invariant` dispatch;
 * - `src/dispatch.js`: `__ct_dispatch`, `Result`, `Env`, `Values`;
 * - then this file: the exports and the globals.
 */

import * as builtins from "./src/builtins.js";
import { dispatch } from "./src/dispatch.js";
import { log } from "./src/host.js";
import { safeJson } from "./src/util.js";

export * from "./src/builtins.js";
export { Env, Result, Values } from "./src/dispatch.js";
export {
  addFinalizer, apply, event, getObserved, getStatus, listObserved, patch, remove, removeFinalizer,
  setCondition, setStatus,
} from "./src/handler.js";
export { cron, fetch, health, log, now, randomString, stringData } from "./src/host.js";
export { kindOf } from "./src/kinds.js";
export { operator } from "./src/operator.js";
export { resource } from "./src/resource.js";
export { z, ZodError } from "./src/z.js";

globalThis.__ct_dispatch = dispatch;

// Kind handles are also globals under a lowerCamel name (`secret`, `configMap`, ...), so a
// script's `getObserved(secret, ...)` works without an import. Existing globals are kept.
for (const [kind, handle] of Object.entries(builtins)) {
  const lower = kind[0].toLowerCase() + kind.slice(1);
  if (!(lower in globalThis)) {
    Object.defineProperty(globalThis, lower, { value: handle, writable: true, configurable: true });
  }
}

// QuickJS has no console: route it to the host log.
if (typeof globalThis.console === "undefined") {
  const line = (args) => args.map((a) => (typeof a === "string" ? a : safeJson(a))).join(" ");
  globalThis.console = {
    log: (...a) => log.info(line(a)), info: (...a) => log.info(line(a)),
    debug: (...a) => log.debug(line(a)), warn: (...a) => log.warn(line(a)), error: (...a) => log.error(line(a)),
  };
}
