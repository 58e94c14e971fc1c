// The operator's page in a real browser: `ctop dev` of a copy of examples/webapp on its
// embedded kubesim, WebApps created with kubectl, and Debian's chromium (headless, driven by
// puppeteer-core) on the URL ctop dev prints. The page must show the WebApp blog Ready True,
// open its view from the overview's link, draw the Deployment in its tree, and follow a
// change live, without a reload; a WebApp whose Pods fail shows Ready False and a red Pod,
// and one the script throws on shows the failure with its code frame. Screenshots go to
// $CARGO_TARGET_DIR/ui-screenshots (default target/); with UPDATE_README_IMAGE=1 the view
// of flaky is also written to docs/img/page.png.
//
// Environment: CTOP_BIN (the binary; default $CARGO_TARGET_DIR/debug/ctop), CHROMIUM (default
// /usr/bin/chromium), KUBECTL (default kubectl).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, existsSync, writeFileSync } from "node:fs";
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

// `ctop dev`, with its output kept: stdout is read for the page's URL, and both are shown
// when the test fails.
function startDev(tmp, kubeconfig) {
  const args = ["dev", copyOperator(tmp), "--kubeconfig", kubeconfig, "--ui-port", "0", "--pod-stage", FAIL_PODS];
  const child = spawn(ctop, args, {
    cwd: tmp,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const dev = { child, stdout: "", stderr: "", exited: null };
  child.stdout.setEncoding("utf8").on("data", (d) => (dev.stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d) => (dev.stderr += d));
  child.on("exit", (code, signal) => (dev.exited = { code, signal }));
  return dev;
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

async function stop(dev) {
  if (dev.exited) return;
  const exited = new Promise((resolve) => dev.child.once("exit", resolve));
  dev.child.kill("SIGTERM");
  const timer = setTimeout(() => dev.child.kill("SIGKILL"), 20_000);
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

    browser = await puppeteer.launch({
      executablePath: chromium,
      args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
    });
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
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
    assert.deepEqual(problems, [], "the browser saw no error");
  } catch (e) {
    const tail = (s) => s.split("\n").slice(-40).join("\n");
    e.message += `\n--- browser\n${problems.join("\n")}\n--- ctop dev stdout\n${tail(dev.stdout)}\n--- ctop dev stderr\n${tail(dev.stderr)}`;
    throw e;
  }
});
