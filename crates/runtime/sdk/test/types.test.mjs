// The hand-written typings: examples type-check, a wrong one fails where it should, and
// every export of ctop.js is declared in ctop.d.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { load, ROOT } from "./helpers.mjs";

const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

function tsc(project) {
  assert.ok(existsSync(TSC), "TypeScript is missing: run `npm install --prefix <sdk dir>`");
  const r = spawnSync(process.execPath, [TSC, "-p", join(ROOT, project), "--noEmit", "--strict"], { cwd: ROOT, encoding: "utf8" });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

test("examples/*.ts type-check with --strict (the plan's example, every function, several operators)", () => {
  const { status, output } = tsc("tsconfig.json");
  assert.equal(output.trim(), "");
  assert.equal(status, 0);
});

test("examples/fail/*.ts fail, each exactly on its marked lines", () => {
  const { status, output } = tsc("tsconfig.fail.json");
  assert.notEqual(status, 0);
  const files = JSON.parse(readFileSync(join(ROOT, "tsconfig.fail.json"), "utf8")).files.filter((f) => f.startsWith("examples/fail/"));
  assert.deepEqual(files.sort(), readdirSync(join(ROOT, "examples/fail")).map((f) => `examples/fail/${f}`).sort());
  const counts = { "wrong-type.ts": 6, "typing-rules.ts": 10 };
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

test("every export of ctop.js is declared in ctop.d.ts, and nothing more", async () => {
  const { sdk } = await load();
  const dts = readFileSync(join(ROOT, "ctop.d.ts"), "utf8");
  const declared = new Set([...dts.matchAll(/^export declare (?:const|function|class) (\w+)/gm)].map((m) => m[1]));
  assert.deepEqual([...declared].sort(), Object.keys(sdk).sort());
});

test("every built-in kind handle has a lowercase global declared in ctop.d.ts", async () => {
  const { sdk } = await load();
  const dts = readFileSync(join(ROOT, "ctop.d.ts"), "utf8");
  const kinds = Object.keys(sdk).filter((k) => typeof sdk[k] === "function" && typeof sdk[k].apiVersion === "string");
  assert.ok(kinds.length >= 29);
  for (const k of kinds) {
    const lower = k[0].toLowerCase() + k.slice(1);
    assert.match(dts, new RegExp(`const ${lower}: typeof ${k};`), lower);
    assert.match(dts, new RegExp(`export interface ${k} extends KubeObject`), k);
  }
});
