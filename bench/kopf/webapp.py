"""The WebApp operator of examples/webapp written with kopf: the scripted-framework peer.

Same children and status as ctop: a token Secret (generated once, then read back from
kopf's in-memory index), a Deployment and a Service, server-side applied with field
manager "ctop", force, a controller owner reference and the ApplySet labels; the owner's
ApplySet label/annotations; status {ready, phase, observedGeneration} and a Ready
condition. Children whose body did not change since the last apply are skipped, and the
status is patched only when it changes (like ctop). Server-side apply goes through kopf's
own aiohttp (kopf has no SSA client); the kubeconfig's server must be plain HTTP (the
benchmark runs kubesim with --plain-http for all implementations).

Environment: KUBECONFIG, BENCH_EVERY (resync seconds, float), BENCH_METRICS_PORT.
Reconciles are counted at /metrics like ctop's controller_runtime_reconcile_total.
"""

import base64
import datetime
import hashlib
import json
import os
import secrets

import aiohttp
import aiohttp.web
import kopf
import yaml

EVERY = float(os.environ.get("BENCH_EVERY", "300"))
METRICS_PORT = int(os.environ.get("BENCH_METRICS_PORT", "0"))
MANAGER = "ctop"
TOOLING = "ctop/v0.1.0"
GROUP_KINDS = "Deployment.apps,Secret,Service"

STATE = {"reconciles": 0, "errors": 0, "session": None, "server": None, "sent": {}}


def server_url():
    with open(os.environ["KUBECONFIG"]) as f:
        kc = yaml.safe_load(f)
    current = kc.get("current-context")
    ctx = next(c["context"] for c in kc["contexts"] if c["name"] == current)
    cluster = next(c["cluster"] for c in kc["clusters"] if c["name"] == ctx["cluster"])
    return cluster["server"].rstrip("/")


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_):
    settings.posting.enabled = False
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage()
    STATE["server"] = server_url()
    STATE["session"] = aiohttp.ClientSession()

    async def metrics(_request):
        ok = STATE["reconciles"] - STATE["errors"]
        body = (
            f'controller_runtime_reconcile_total{{controller="webapp",result="success"}} {ok}\n'
            f'controller_runtime_reconcile_total{{controller="webapp",result="error"}} {STATE["errors"]}\n'
        )
        return aiohttp.web.Response(text=body)

    app = aiohttp.web.Application()
    app.router.add_get("/metrics", metrics)
    runner = aiohttp.web.AppRunner(app)
    await runner.setup()
    await aiohttp.web.TCPSite(runner, "127.0.0.1", METRICS_PORT).start()


@kopf.index("", "v1", "secrets")
def tokens(namespace, name, body, **_):
    token = (body.get("data") or {}).get("token")
    return {(namespace, name): token} if token else None


@kopf.index("apps", "v1", "deployments")
def available(namespace, name, status, **_):
    return {(namespace, name): (status or {}).get("availableReplicas", 0)}


def applyset_id(name, namespace):
    digest = hashlib.sha256(f"{name}.{namespace}.WebApp.apps.example.com".encode()).digest()
    return "applyset-" + base64.urlsafe_b64encode(digest).decode().rstrip("=") + "-v1"


async def request(method, path, body, content_type):
    url = STATE["server"] + path
    async with STATE["session"].request(
        method, url, data=json.dumps(body), headers={"Content-Type": content_type}
    ) as resp:
        if resp.status >= 300:
            raise kopf.TemporaryError(f"{method} {path}: {resp.status} {await resp.text()}", delay=1)
        await resp.read()


async def apply(path, body):
    await request("PATCH", f"{path}?fieldManager={MANAGER}&force=true", body, "application/apply-patch+yaml")


async def reconcile(name, namespace, uid, spec, meta, status, patch, tokens, available):
    STATE["reconciles"] += 1
    try:
        await reconcile_inner(name, namespace, uid, spec, meta, status, patch, tokens, available)
    except Exception:
        STATE["errors"] += 1
        raise


async def reconcile_inner(name, namespace, uid, spec, meta, status, patch, tokens, available):
    replicas = spec.get("replicas", 1)
    port = spec.get("port", 8080)
    ident = applyset_id(name, namespace)
    annotations = meta.get("annotations") or {}
    if (
        (meta.get("labels") or {}).get("applyset.kubernetes.io/id") != ident
        or annotations.get("applyset.kubernetes.io/contains-group-kinds") != GROUP_KINDS
        or annotations.get("applyset.kubernetes.io/tooling") != TOOLING
    ):
        patch.metadata.setdefault("labels", {})["applyset.kubernetes.io/id"] = ident
        patch.metadata.setdefault("annotations", {}).update(
            {"applyset.kubernetes.io/contains-group-kinds": GROUP_KINDS, "applyset.kubernetes.io/tooling": TOOLING}
        )

    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "webapp"}
    child_labels = dict(labels, **{"applyset.kubernetes.io/part-of": ident})
    owner = [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": name, "uid": uid,
              "controller": True, "blockOwnerDeletion": True}]

    def meta_of(child):
        return {"name": child, "namespace": namespace, "labels": child_labels, "ownerReferences": owner}

    token_name = f"{name}-token"
    existing = next(iter(tokens.get((namespace, token_name), [])), None)
    if existing:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": meta_of(token_name), "data": {"token": existing}}
    else:
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": meta_of(token_name),
                  "stringData": {"token": secrets.token_hex(16)}}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta_of(name),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "web",
                    "image": spec.get("image"),
                    "ports": [{"containerPort": port}],
                    "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": token_name, "key": "token"}}}],
                }]},
            },
        },
    }
    service = {"apiVersion": "v1", "kind": "Service", "metadata": meta_of(name),
               "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": port}]}}
    has_deploy = (namespace, name) in available
    children = [
        ("Secret", f"/api/v1/namespaces/{namespace}/secrets/{token_name}", secret, bool(existing)),
        ("Deployment", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", deployment, has_deploy),
        ("Service", f"/api/v1/namespaces/{namespace}/services/{name}", service, True),
    ]
    for kind, path, body, exists in children:
        key = f"{uid}/{kind}"
        print_ = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        if exists and STATE["sent"].get(key) == print_:
            continue
        await apply(path, body)
        STATE["sent"][key] = print_

    avail = next(iter(available.get((namespace, name), [])), 0) or 0
    ready = avail >= replicas
    state = "True" if ready else "False"
    live = dict(status or {})
    live_ready = next((c for c in live.get("conditions") or [] if c.get("type") == "Ready"), None)
    since = (live_ready or {}).get("lastTransitionTime") if (live_ready or {}).get("status") == state else None
    if not since:
        since = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    want = {
        "ready": ready,
        "phase": "Running" if ready else "Pending",
        "observedGeneration": meta.get("generation"),
        "conditions": [{
            "type": "Ready", "status": state, "lastTransitionTime": since,
            "reason": "Available" if ready else "Progressing",
            "message": f"{avail}/{replicas} replicas available",
        }],
    }
    for k, v in want.items():
        if live.get(k) != v:
            patch.status[k] = v


@kopf.on.resume("apps.example.com", "v1", "webapps")
@kopf.on.create("apps.example.com", "v1", "webapps")
@kopf.on.update("apps.example.com", "v1", "webapps", field="spec")
async def on_change(name, namespace, uid, spec, meta, status, patch, tokens, available, **_):
    await reconcile(name, namespace, uid, spec, meta, status, patch, tokens, available)


@kopf.timer("apps.example.com", "v1", "webapps", interval=EVERY, initial_delay=EVERY)
async def resync(name, namespace, uid, spec, meta, status, patch, tokens, available, **_):
    await reconcile(name, namespace, uid, spec, meta, status, patch, tokens, available)
