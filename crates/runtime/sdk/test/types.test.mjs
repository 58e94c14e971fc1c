// The typings: examples type-check, a wrong one fails where it should, and every export of
// ctop.js is declared in ctop.d.ts or a file it re-exports.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { load, ROOT, tempDir } from "./helpers.mjs";

const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

function tsc(project, cwd = ROOT) {
  assert.ok(existsSync(TSC), "TypeScript is missing: run `npm install --prefix <sdk dir>`");
  const r = spawnSync(process.execPath, [TSC, "-p", join(cwd, project), "--noEmit", "--strict"], { cwd, encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

test("examples/*.ts type-check with --strict (the WebApp example, every function, several operators)", () => {
  const { status, output } = tsc("tsconfig.json");
  assert.equal(output.trim(), "");
  assert.equal(status, 0);
});

test("examples/fail/*.ts fail, each exactly on its marked lines", () => {
  const { status, output } = tsc("tsconfig.fail.json");
  assert.notEqual(status, 0);
  const files = JSON.parse(readFileSync(join(ROOT, "tsconfig.fail.json"), "utf8")).files.filter((f) => f.startsWith("examples/fail/"));
  assert.deepEqual(files.sort(), readdirSync(join(ROOT, "examples/fail")).map((f) => `examples/fail/${f}`).sort());
  const counts = { "wrong-type.ts": 6, "typing-rules.ts": 11 };
  for (const file of files) {
    const name = file.slice("examples/fail/".length);
    const src = readFileSync(join(ROOT, file), "utf8").split("\n");
    const marked = src.flatMap((line, i) => (/\/\/ ERROR-\d/.test(line) ? [i + 1] : []));
    const escaped = name.replace(/[.-]/g, "\\$&");
    const lines = [...output.matchAll(new RegExp(`${escaped}\\((\\d+),\\d+\\): error (TS\\d+)`, "g"))].map((m) => Number(m[1]));
    assert.equal(marked.length, counts[name], name);
    assert.deepEqual(lines, marked, output);
  }
  assert.match(output, /Type 'number' is not assignable to type 'string'/);
  assert.match(output, /Type '"Sleeping"' is not assignable/);
  assert.match(output, /Property 'nope' does not exist/);
  assert.match(output, /typing-rules\.ts\(8,\d+\): error TS2322: Type 'string \| undefined' is not assignable to type 'string'/);
});

/** The typings of the module "ctop": ctop.d.ts and the files it re-exports (z.d.ts, the generated k8s.d.ts). */
const typings = () => ["ctop.d.ts", "z.d.ts", "k8s.d.ts"].map((f) => readFileSync(join(ROOT, f), "utf8")).join("\n");

test("every export of ctop.js is declared in the typings, and nothing more", async () => {
  const { sdk } = await load();
  const dts = typings();
  const declared = new Set([...dts.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]));
  assert.deepEqual([...declared].sort(), Object.keys(sdk).sort());
});

test("every built-in kind handle has a lowercase global declared in the typings", async () => {
  const { sdk } = await load();
  const dts = typings();
  const kinds = Object.keys(sdk).filter((k) => typeof sdk[k] === "function" && typeof sdk[k].apiVersion === "string");
  assert.ok(kinds.length >= 29);
  for (const k of kinds) {
    const lower = k[0].toLowerCase() + k.slice(1);
    assert.match(dts, new RegExp(`const ${lower}: typeof ${k};`), lower);
    assert.match(dts, new RegExp(`export interface ${k} extends KubeObject`), k);
  }
});

/** The one ctop.d.ts `ctop init` writes: ctop.d.ts with its parts spliced in, as crates/runtime/build.rs does. */
function spliced(name = "ctop") {
  const parts = ["ctop", "z", "k8s"];
  return readFileSync(join(ROOT, `${name}.d.ts`), "utf8").split("\n").flatMap((line) => {
    const part = /^export \* from "\.\/(\w+)";$/.exec(line)?.[1];
    if (part) return [spliced(part).replace(/\n$/, "")];
    const local = line.startsWith("import type {") && parts.some((p) => line.endsWith(` from "./${p}";`));
    return local ? [] : [line];
  }).join("\n");
}

test("the one-file typings ctop init writes type-check the examples", () => {
  const dir = tempDir("ctop-dts-");
  writeFileSync(join(dir, "ctop.d.ts"), spliced());
  assert.doesNotMatch(spliced(), /from "\.\//);
  cpSync(join(ROOT, "examples"), join(dir, "examples"), { recursive: true });
  writeFileSync(join(dir, "tsconfig.json"), readFileSync(join(ROOT, "tsconfig.json")));
  const { status, output } = tsc("tsconfig.json", dir);
  assert.equal(output.trim(), "");
  assert.equal(status, 0);
});
