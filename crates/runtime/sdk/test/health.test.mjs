// health(obj): the SDK checks the argument and hands the object's JSON to the host, which
// judges it (QuickJS and the real rules: tests/host_helpers.rs in the runtime crate).
import { test } from "node:test";
import assert from "node:assert/strict";
import { fakeHost, load } from "./helpers.mjs";

const deployment = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "shop" }, status: { replicas: 2 } };

test("health() sends the object's JSON to the host and returns status, reason and message", async () => {
  const seen = [];
  const host = { ...fakeHost(), health(text) {
    seen.push(text);
    return { status: "InProgress", reason: "ReplicasUnavailable", message: "1 of 2 replicas available", extra: 1 };
  } };
  const { sdk } = await load({ host });
  assert.deepEqual(sdk.health(deployment), { status: "InProgress", reason: "ReplicasUnavailable", message: "1 of 2 replicas available" });
  sdk.health(undefined);
  sdk.health(null);
  assert.deepEqual(seen, [JSON.stringify(deployment), "null", "null"], "a missing object goes as JSON null (NotFound)");
});

test("health() refuses what is not an object with a TypeError naming it, before the host", async () => {
  const { sdk } = await load();
  for (const [bad, got] of [["shop", "string"], [3, "number"], [[deployment], "array"], [() => deployment, "function"]]) {
    assert.throws(() => sdk.health(bad), {
      name: "TypeError",
      message: `health(obj): expected a Kubernetes object (with apiVersion and kind), got ${got}`,
    });
  }
  const cyclic = { apiVersion: "v1", kind: "ConfigMap" };
  cyclic.self = cyclic;
  const host = { ...fakeHost(), health: () => ({}) };
  const withHost = await load({ host });
  assert.throws(() => withHost.sdk.health(cyclic), { name: "TypeError", message: /^health\(obj\): the object cannot be written as JSON: / });
});

test("health() without the host function says so", async () => {
  const { sdk } = await load();
  assert.throws(() => sdk.health(deployment), { message: "health() is not available in this runtime" });
});
