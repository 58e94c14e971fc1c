// The operator's page in a real browser: `ctop dev` of a copy of examples/webapp on its
// embedded kubesim, WebApps created with kubectl, and Debian's chromium (headless, driven by
// puppeteer-core) on the URL ctop dev prints. The page must show the WebApp blog Ready True,
// open its view from the overview's link, draw the Deployment in its tree, and follow a
// change live, without a reload; a WebApp whose Pods fail shows Ready False and a red Pod,
// and one the script throws on shows the failure with its code frame. Screenshots go to
// $CARGO_TARGET_DIR/ui-screenshots (default target/); with UPDATE_README_IMAGE=1 the view
// of flaky is also written to docs/img/page.png. That page has no shadow: it asks
// api/shadow once, gets a 404 and shows no shadow banner.
//
// The second test is a shadow (`ctop run --shadow`): `ctop sim` stands in for the live
// cluster, examples/webapp (v1) reconciles its sample there and stops, and a v2 that drops
// the Service (and annotates the Deployment with markup) runs as a shadow with its page. The
// page must show the banner naming the live server, "converged", the summary line of the
// Service it would delete, the count on shop's row, shop's would-be writes (the Deployment's
// change field by field, as text) and, without a reload, a WebApp created on the cluster
// meanwhile. Its screenshots are shadow-overview.png and shadow-object.png.
//
// Environment: CTOP_BIN (the binary; default $CARGO_TARGET_DIR/debug/ctop), CHROMIUM (default
// /usr/bin/chromium), KUBECTL (default kubectl).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const targetDir = path.resolve(root, process.env.CARGO_TARGET_DIR || "target");
const ctop = path.resolve(root, process.env.CTOP_BIN || path.join(targetDir, "debug/ctop"));
const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
const kubectlBin = process.env.KUBECTL || "kubectl";
const shots = path.join(targetDir, "ui-screenshots");

// Every wait is on a condition, bounded by these.
const START_TIMEOUT = 90_000;
const WAIT_TIMEOUT = 60_000;

const webApp = (name) => `apiVersion: apps.example.com/v1
kind: WebApp
metadata:
  name: ${name}
  namespace: default
spec:
  image: nginx:1.27
  replicas: 2
  port: 8080
`;

// The copy's script throws on the WebApp "broken" (a failure with a code frame); kubesim
// fails the Pods of the WebApp "flaky".
const THROW_AT = "const name = cr.metadata.name;";
const THROW = `${THROW_AT}\n    if (name === "broken") throw new Error("broken on purpose");`;
const FAIL_PODS = "app.kubernetes.io/name=flaky:fail";

function copyOperator(tmp) {
  const dir = path.join(tmp, "webapp");
  cpSync(path.join(root, "examples/webapp"), dir, { recursive: true });
  const script = path.join(dir, "operator.ct");
  const source = readFileSync(script, "utf8");
  assert.ok(source.includes(THROW_AT), `examples/webapp/operator.ct no longer has ${THROW_AT}`);
  writeFileSync(script, source.replace(THROW_AT, THROW));
  return dir;
}

// `ctop ARGS` in `cwd`, with its output kept: stdout may be read (for ctop dev's page URL),
// and both are shown when the test fails.
function launch(name, args, cwd) {
  const child = spawn(ctop, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
  const proc = { name, child, stdout: "", stderr: "", exited: null };
  child.stdout.setEncoding("utf8").on("data", (d) => (proc.stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d) => (proc.stderr += d));
  child.on("exit", (code, signal) => (proc.exited = { code, signal }));
  return proc;
}

function startDev(tmp, kubeconfig) {
  return launch("ctop dev", ["dev", copyOperator(tmp), "--kubeconfig", kubeconfig, "--ui-port", "0", "--pod-stage", FAIL_PODS], tmp);
}

// The output of every process, for a failed test's message.
function outputs(procs) {
  const tail = (s) => s.split("\n").slice(-40).join("\n");
  return procs.map((p) => `\n--- ${p.name} stdout\n${tail(p.stdout)}\n--- ${p.name} stderr\n${tail(p.stderr)}`).join("");
}

// Waits until `condition()` (maybe async) is truthy, asking every 100 ms; fails once `proc`
// exits or after WAIT_TIMEOUT.
async function until(condition, what, proc) {
  const deadline = Date.now() + WAIT_TIMEOUT;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (proc?.exited) throw new Error(`${proc.name} exited (${JSON.stringify(proc.exited)}) before ${what}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// A port free on 127.0.0.1 (for a flag that takes no 0).
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function launchBrowser() {
  return puppeteer.launch({
    executablePath: chromium,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

function pageUrl(dev) {
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error("ctop dev printed no `page: URL` line in time")), START_TIMEOUT);
    const look = () => {
      const m = /^page: (http:\/\/\S+)$/m.exec(dev.stdout);
      if (m) {
        clearTimeout(deadline);
        dev.child.stdout.off("data", look);
        resolve(m[1]);
      } else if (dev.exited) {
        clearTimeout(deadline);
        reject(new Error(`ctop dev exited (${JSON.stringify(dev.exited)}) before printing its page`));
      }
    };
    dev.child.stdout.on("data", look);
    dev.child.on("exit", look);
    look();
  });
}

function kubectl(kubeconfig, args, input) {
  return execFileSync(kubectlBin, ["--kubeconfig", kubeconfig, ...args], { input, encoding: "utf8" });
}

// kubectl's output, or "" when it fails (for conditions waited on).
function kubectlOr(kubeconfig, args) {
  try {
    return execFileSync(kubectlBin, ["--kubeconfig", kubeconfig, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch {
    return "";
  }
}

async function stop(proc) {
  if (proc.exited) return;
  const exited = new Promise((resolve) => proc.child.once("exit", resolve));
  proc.child.kill("SIGTERM");
  const timer = setTimeout(() => proc.child.kill("SIGKILL"), 20_000);
  await exited;
  clearTimeout(timer);
}

test("the operator's page shows a WebApp, its tree and its reconciles, live", { timeout: 300_000 }, async (t) => {
  assert.ok(existsSync(ctop), `${ctop} is missing: build it first (cargo build -p ctop)`);
  assert.ok(existsSync(chromium), `${chromium} is missing: apt-get install chromium`);
  mkdirSync(shots, { recursive: true });
  const tmp = mkdtempSync(path.join(tmpdir(), "ctop-ui-"));
  const kubeconfig = path.join(tmp, "kubeconfig");
  const dev = startDev(tmp, kubeconfig);
  let browser;
  const problems = [];
  t.after(async () => {
    await browser?.close();
    await stop(dev);
    rmSync(tmp, { recursive: true, force: true });
  });
  try {
    const url = await pageUrl(dev);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    kubectl(kubeconfig, ["apply", "-f", "-"], ["blog", "flaky", "broken"].map(webApp).join("---\n"));

    browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    // The page asks api/shadow at load; without a shadow the answer is a 404, which the
    // browser logs as an error: that one is expected.
    const shadowAnswers = [];
    page.on("response", (r) => r.url().endsWith("/api/shadow") && shadowAnswers.push(r.status()));
    page.on("console", (m) => m.type() === "error" && !m.location()?.url?.endsWith("/api/shadow") && problems.push(`console: ${m.text()}`));
    page.on("requestfailed", (r) => {
      // The event stream is cut when the browser closes; anything else must load.
      if (!r.url().endsWith("/api/stream")) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
    });
    await page.goto(url, { waitUntil: "domcontentloaded" });

    // The overview: the WebApp blog, Ready True once its Deployment's Pods run.
    const row = 'tr[data-object="default/blog"]';
    await page.waitForFunction((row) => document.querySelector(`${row} .ready-True`), { timeout: WAIT_TIMEOUT }, row);
    await page.waitForFunction(() => document.querySelector("#live.on"), { timeout: WAIT_TIMEOUT });
    assert.equal(await page.$eval(`${row} .health`, (e) => e.classList.contains("health-Current")), true);
    assert.ok(await page.$('tr[data-object="default/shop"]'), "the sample WebApp shop is listed too");
    await page.waitForFunction(() => document.querySelector('tr[data-object="default/flaky"] .ready-False'), { timeout: WAIT_TIMEOUT });
    await page.waitForFunction(() => document.querySelector('tr[data-object="default/broken"] .result.failed'), { timeout: WAIT_TIMEOUT });
    // Its reconciles fail: its health says so, whatever its (absent) Ready condition says.
    await page.waitForFunction(() => document.querySelector('tr[data-object="default/broken"] .health.health-Failed'), { timeout: WAIT_TIMEOUT });
    await page.screenshot({ path: path.join(shots, "overview.png"), fullPage: true });

    // A link straight to an object's view: the failure, its message and its code frame.
    await page.goto(url + "#object?controller=webapp&namespace=default&name=broken", { waitUntil: "domcontentloaded" });
    await page.waitForFunction(
      () => [...document.querySelectorAll(".reconcile.failed pre.frame")].some((f) => f.textContent.includes("operator.ct:")) &&
        document.querySelector(".reconcile.failed .failure p")?.textContent.includes("broken on purpose"),
      { timeout: WAIT_TIMEOUT },
    );
    await page.screenshot({ path: path.join(shots, "failure.png"), fullPage: true });

    // Failing Pods: a red Pod in the tree.
    await page.goto(url + "#object?controller=webapp&namespace=default&name=flaky", { waitUntil: "domcontentloaded" });
    await page.waitForFunction(
      () => [...document.querySelectorAll(".tree .node.health-Failed .kind")].some((k) => k.textContent === "Pod"),
      { timeout: WAIT_TIMEOUT },
    );
    assert.equal(await page.$eval(".facts .badge", (b) => b.classList.contains("ready-False")), true, "flaky is not Ready");
    await page.screenshot({ path: path.join(shots, "failing-pods.png"), fullPage: true });
    if (process.env.UPDATE_README_IMAGE === "1") {
      // The README's picture: every health colour but NotFound in one tree.
      await page.screenshot({ path: path.join(root, "docs/img/page.png") });
    }

    // Back to the overview, and to blog through its link.
    await page.goto(url, { waitUntil: "domcontentloaded" });
    await page.waitForFunction((row) => document.querySelector(`${row} .ready-True`), { timeout: WAIT_TIMEOUT }, row);

    // Its view, through the link: a URL naming the object, and the tree with the Deployment.
    // The overview is drawn again whenever an object changes (the failing WebApp retries
    // every few seconds), so the link found may be replaced before the mouse gets there:
    // click again on the new one.
    for (let attempt = 1; ; attempt++) {
      try {
        await page.click(`${row} a.object`);
        break;
      } catch (e) {
        if (attempt >= 10 || !String(e.message).includes("not clickable")) throw e;
      }
    }
    await page.waitForFunction(() => location.hash.startsWith("#object?"), { timeout: WAIT_TIMEOUT });
    const hash = new URLSearchParams((await page.evaluate(() => location.hash)).slice("#object?".length));
    assert.deepEqual([hash.get("controller"), hash.get("namespace"), hash.get("name")], ["webapp", "default", "blog"]);
    const deployment = () => {
      const nodes = [...document.querySelectorAll(".tree .node")];
      return nodes.find((n) => n.querySelector(".kind")?.textContent === "Deployment" && n.querySelector(".name")?.textContent === "blog");
    };
    await page.waitForFunction(deployment, { timeout: WAIT_TIMEOUT });
    await page.waitForFunction(`(${deployment})()?.classList.contains("health-Current")`, { timeout: WAIT_TIMEOUT });
    const kinds = await page.$$eval(".tree .node .kind", (ks) => ks.map((k) => k.textContent));
    for (const kind of ["WebApp", "Deployment", "ReplicaSet", "Pod", "Service", "Secret"]) {
      assert.ok(kinds.includes(kind), `the tree shows a ${kind}: ${kinds.join(", ")}`);
    }
    await page.waitForFunction(() => document.querySelector(".timeline .reconcile .action-created"), { timeout: WAIT_TIMEOUT });

    // Live: a change of the spec shows up as a new reconcile, without reloading the page.
    await page.evaluate(() => (window.notReloaded = true));
    kubectl(kubeconfig, ["patch", "webapp", "blog", "--type=merge", "-p", '{"spec":{"replicas":3}}']);
    await page.waitForFunction(
      () => [...document.querySelectorAll(".timeline .chip")].some((c) => c.textContent === "object changed (generation 2)"),
      { timeout: WAIT_TIMEOUT },
    );
    assert.equal(await page.evaluate(() => window.notReloaded), true, "the page was not reloaded");
    // Settled again: three Pods, every node green.
    await page.waitForFunction(
      () => [...document.querySelectorAll(".tree .node")].filter((n) => n.querySelector(".kind")?.textContent === "Pod").length === 3 &&
        !document.querySelector(".tree .node:not(.health-Current)"),
      { timeout: WAIT_TIMEOUT },
    );
    const shot = path.join(shots, "object.png");
    await page.screenshot({ path: shot, fullPage: true });

    // No shadow here: api/shadow answered 404 at each load, and no part of it shows.
    assert.ok(shadowAnswers.length > 0, "the page asked api/shadow");
    assert.deepEqual([...new Set(shadowAnswers)], [404], "api/shadow is a 404 under ctop dev");
    assert.equal(await page.$eval("#shadow", (b) => b.hidden && getComputedStyle(b).display === "none"), true, "no shadow banner");
    assert.equal(await page.$(".shadow-writes:not([hidden]), .shadow-summary:not([hidden]), .shadow-mark:not([hidden])"), null);
    assert.deepEqual(problems, [], "the browser saw no error");
  } catch (e) {
    e.message += `\n--- browser\n${problems.join("\n")}${outputs([dev])}`;
    throw e;
  }
});

// v2 of examples/webapp: no Service any more, and an annotation holding markup on the
// Deployment (which the page must show as text).
const SERVICE_AT = "    apply(Service({";
const DEPLOYMENT_AT = "apply(Deployment({\n      metadata: { name, labels },";
const DEPLOYMENT = `apply(Deployment({\n      metadata: { name, labels, annotations: { note: "<i>v2</i>" } },`;

function copyV2(tmp) {
  const dir = path.join(tmp, "webapp-v2");
  cpSync(path.join(root, "examples/webapp"), dir, { recursive: true });
  const script = path.join(dir, "operator.ct");
  const source = readFileSync(script, "utf8");
  const start = source.indexOf(SERVICE_AT);
  assert.ok(start >= 0 && source.includes(DEPLOYMENT_AT), `examples/webapp/operator.ct no longer has ${SERVICE_AT} and ${DEPLOYMENT_AT}`);
  const end = start + source.slice(start).indexOf("}));\n") + "}));\n".length;
  writeFileSync(script, (source.slice(0, start) + source.slice(end)).replace(DEPLOYMENT_AT, DEPLOYMENT));
  return dir;
}

test("under ctop run --shadow the page shows what the shadow would write", { timeout: 300_000 }, async (t) => {
  assert.ok(existsSync(ctop), `${ctop} is missing: build it first (cargo build -p ctop)`);
  assert.ok(existsSync(chromium), `${chromium} is missing: apt-get install chromium`);
  mkdirSync(shots, { recursive: true });
  const tmp = mkdtempSync(path.join(tmpdir(), "ctop-ui-shadow-"));
  const kubeconfig = path.join(tmp, "kc");
  const procs = [];
  let browser;
  const problems = [];
  t.after(async () => {
    await browser?.close();
    for (const proc of procs.slice().reverse()) await stop(proc);
    rmSync(tmp, { recursive: true, force: true });
  });
  try {
    // The live cluster.
    const sim = launch("ctop sim", ["sim", "--no-workloads", "--addr", "127.0.0.1:0", "--kubeconfig", kubeconfig], tmp);
    procs.push(sim);
    await until(() => existsSync(kubeconfig), "ctop sim wrote its kubeconfig", sim);
    const server = /^\s*server:\s*(\S+)\s*$/m.exec(readFileSync(kubeconfig, "utf8"))?.[1];
    assert.ok(server, "the kubeconfig names its server");

    // v1 reconciles the sample there, then stops.
    const example = path.join(root, "examples/webapp");
    const v1 = launch("ctop run (v1)", ["run", example, "--kubeconfig", kubeconfig, "--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"], tmp);
    procs.push(v1);
    await until(() => kubectlOr(kubeconfig, ["apply", "-f", path.join(example, "samples")]), "the sample WebApp could be applied (its CRD installed)", v1);
    await until(() => kubectlOr(kubeconfig, ["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"]), "v1 set shop's status", v1);
    await until(() => kubectlOr(kubeconfig, ["get", "service", "shop", "-o", "name"]), "v1 created shop's Service", v1);
    await stop(v1);
    assert.equal(v1.exited.code, 0, `v1 stopped cleanly on SIGTERM: ${JSON.stringify(v1.exited)}`);

    // v2 as a shadow, with its page.
    const port = await freePort();
    const shadow = launch("ctop run --shadow (v2)", ["run", copyV2(tmp), "--kubeconfig", kubeconfig, "--name", "webapp", "--shadow", "--shadow-quiet", "1s",
      "--ui-port", String(port), "--health-port", "0", "--metrics-port", "0"], tmp);
    procs.push(shadow);
    const url = `http://127.0.0.1:${port}/`;
    await until(() => fetch(url + "api/shadow").then((r) => r.ok, () => false), "the shadow's page answered api/shadow", shadow);

    browser = await launchBrowser();
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
    page.on("requestfailed", (r) => {
      if (!r.url().endsWith("/api/stream")) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
    });
    let asked = 0;
    page.on("response", (r) => r.url().endsWith("/api/shadow") && r.status() === 200 && asked++);
    await page.goto(url, { waitUntil: "domcontentloaded" });

    // The banner: the live server, nothing written to it, converged.
    await page.waitForFunction(() => document.querySelector("#shadow:not([hidden]) .shadow-state")?.textContent === "converged", { timeout: WAIT_TIMEOUT });
    const banner = await page.$eval("#shadow", (b) => ({ text: b.textContent, live: b.querySelector(".shadow-live").textContent }));
    assert.equal(banner.live.replace(/\/$/, ""), server.replace(/\/$/, ""), "the banner names the live server");
    assert.ok(banner.text.startsWith(`Shadow of ${banner.live}: nothing is written to it`), banner.text);
    // The reconciles still come live.
    await page.waitForFunction(() => document.querySelector("#live.on"), { timeout: WAIT_TIMEOUT });

    // The overview: the summary, and a count on shop's row naming the Service.
    const line = (text) => [...document.querySelectorAll(".shadow-summary:not([hidden]) li")].some((li) => li.textContent === text);
    await page.waitForFunction(line, { timeout: WAIT_TIMEOUT }, "would delete v1/Service on 1 of 1 WebApp objects");
    assert.equal(await page.$eval(".shadow-summary h2", (e) => e.firstChild.textContent), "Would write");
    const mark = await page.waitForSelector('tr[data-object="default/shop"] .shadow-mark:not([hidden])', { timeout: WAIT_TIMEOUT });
    assert.match(await mark.evaluate((m) => m.textContent), /^would write \d+$/);
    assert.ok((await mark.evaluate((m) => m.title)).split("\n").includes("delete v1/Service default/shop"));
    await page.screenshot({ path: path.join(shots, "shadow-overview.png"), fullPage: true });

    // shop's view: the banner still, the Service it would delete, the Deployment's change
    // field by field, the markup as text.
    await page.goto(url + "#object?controller=webapp&namespace=default&name=shop", { waitUntil: "domcontentloaded" });
    await page.waitForFunction(
      () => [...document.querySelectorAll(".shadow-writes:not([hidden]) .would-write .what")].some((w) => w.textContent === "delete v1/Service default/shop"),
      { timeout: WAIT_TIMEOUT },
    );
    assert.equal(await page.$eval("#shadow", (b) => !b.hidden && b.querySelector(".shadow-state").textContent), "converged");
    const change = await page.$$eval(".shadow-writes .would-write", (ws) => ws.map((w) => ({
      what: w.querySelector(".what").textContent,
      rows: [...w.querySelectorAll(".diff tr")].map((tr) => [...tr.children].map((c) => c.textContent)),
    })).find((w) => w.what === "change apps/v1/Deployment default/shop"));
    assert.ok(change, "the Deployment's change is listed");
    assert.deepEqual(change.rows.find(([path]) => path === "metadata.annotations.note"), ["metadata.annotations.note", "—", "→", '"<i>v2</i>"'], JSON.stringify(change.rows));
    assert.equal(await page.$(".shadow-writes i, #shadow i"), null, "no markup from the report");
    await page.screenshot({ path: path.join(shots, "shadow-object.png"), fullPage: true });

    // Live, without a reload: a WebApp created on the cluster comes into the report.
    await page.evaluate(() => {
      window.notReloaded = true;
      location.hash = "";
    });
    await page.waitForFunction(line, { timeout: WAIT_TIMEOUT }, "would delete v1/Service on 1 of 1 WebApp objects");
    const before = asked;
    kubectl(kubeconfig, ["apply", "-f", "-"], webApp("blog"));
    await page.waitForFunction(line, { timeout: WAIT_TIMEOUT }, "would delete v1/Service on 1 of 2 WebApp objects");
    await page.waitForSelector('tr[data-object="default/blog"] .shadow-mark:not([hidden])', { timeout: WAIT_TIMEOUT });
    assert.ok(asked > before, "the report was asked again");
    assert.equal(await page.evaluate(() => window.notReloaded), true, "the page was not reloaded");
    assert.deepEqual(problems, [], "the browser saw no error");
  } catch (e) {
    e.message += `\n--- browser\n${problems.join("\n")}${outputs(procs)}`;
    throw e;
  }
});
