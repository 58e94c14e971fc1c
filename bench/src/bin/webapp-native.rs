//! `webapp-native`: the WebApp operator of `examples/webapp` written directly against
//! kube-rs, the "no script layer" baseline of the benchmark.
//!
//! It produces the same children and status as ctop running `examples/webapp`: a token
//! Secret (generated once, then read back from the reflector cache), a Deployment and a
//! Service, each server-side applied with field manager `ctop`, `force`, a controller owner
//! reference and the ApplySet (KEP-3659) labels; the owner's ApplySet label and annotations
//! (one merge patch, when missing); and `status {ready, phase, observedGeneration}` with a
//! `Ready` condition through the status subresource. Like ctop's applier it skips a child
//! whose body did not change since the last apply (and still exists), and skips the status
//! write when the live status already says the same.
//!
//! It deliberately does not use `ctop-applier`: this is what a careful hand-written
//! kube-rs controller does, so the comparison measures all of ctop (script layer and
//! applier) against plain kube-rs. Reconciles are counted at `/metrics` on `--metrics-port`
//! in the same form as ctop's `controller_runtime_reconcile_total`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, ResourceExt as _};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::sync::Mutex;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const MANAGER: &str = "ctop";
const TOOLING: &str = "ctop/v0.1.0";
const GROUP_KINDS: &str = "Deployment.apps,Secret,Service";

/// What the reconciler shares.
struct Ctx {
    client: Client,
    webapps: ApiResource,
    secrets: Store<Secret>,
    deployments: Store<Deployment>,
    every: Duration,
    /// Fingerprint of the last body applied per child (`uid/kind`), to skip unchanged applies.
    sent: Mutex<HashMap<String, u64>>,
    reconciles: AtomicU64,
    errors: AtomicU64,
}

#[derive(Debug)]
struct Failed(String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failed {}

fn fail(what: &str) -> impl FnOnce(kube::Error) -> Failed + '_ {
    move |e| Failed(format!("{what}: {e}"))
}

fn applyset_id(name: &str, namespace: &str) -> String {
    let digest = Sha256::digest(format!("{name}.{namespace}.WebApp.apps.example.com").as_bytes());
    format!("applyset-{}-v1", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest))
}

fn fingerprint(v: &Value) -> u64 {
    let digest = Sha256::digest(v.to_string().as_bytes());
    u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
}

fn merge(into: &mut Value, labels: &Value) {
    if let (Some(dst), Some(src)) = (into.as_object_mut(), labels.as_object()) {
        for (k, v) in src {
            dst.insert(k.clone(), v.clone());
        }
    }
}

async fn reconcile(cr: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, Failed> {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    if cr.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let name = cr.name_any();
    let ns = cr.namespace().unwrap_or_else(|| "default".into());
    let uid = cr.uid().unwrap_or_default();
    let spec = &cr.data["spec"];
    let replicas = spec["replicas"].as_i64().unwrap_or(1);
    let port = spec["port"].as_i64().unwrap_or(8080);
    let image = spec["image"].as_str().unwrap_or_default();
    let id = applyset_id(&name, &ns);
    let webapps: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ns, &ctx.webapps);

    // The parent's ApplySet label and annotations, once.
    let annotations = cr.annotations();
    if cr.labels().get("applyset.kubernetes.io/id") != Some(&id)
        || annotations.get("applyset.kubernetes.io/contains-group-kinds").map(String::as_str)
            != Some(GROUP_KINDS)
        || annotations.get("applyset.kubernetes.io/tooling").map(String::as_str) != Some(TOOLING)
    {
        let patch = json!({"metadata": {
            "labels": {"applyset.kubernetes.io/id": id},
            "annotations": {
                "applyset.kubernetes.io/contains-group-kinds": GROUP_KINDS,
                "applyset.kubernetes.io/tooling": TOOLING,
            },
        }});
        let params = PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() };
        webapps.patch(&name, &params, &Patch::Merge(&patch)).await.map_err(fail("applyset parent"))?;
    }

    let labels = json!({"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "webapp"});
    let mut child_labels = labels.clone();
    merge(&mut child_labels, &json!({"applyset.kubernetes.io/part-of": id}));
    let owner = json!([{
        "apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": name, "uid": uid,
        "controller": true, "blockOwnerDeletion": true,
    }]);
    let meta = |child: &str| json!({"name": child, "namespace": ns, "labels": child_labels, "ownerReferences": owner});

    let token_name = format!("{name}-token");
    let existing = ctx
        .secrets
        .get(&ObjectRef::new(&token_name).within(&ns))
        .and_then(|s| s.data.as_ref()?.get("token").cloned());
    let secret = match &existing {
        Some(token) => json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta(&token_name),
            "data": {"token": base64::engine::general_purpose::STANDARD.encode(&token.0)}}),
        None => json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta(&token_name),
            "stringData": {"token": uuid::Uuid::new_v4().simple().to_string()}}),
    };
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(&name),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{
                    "name": "web",
                    "image": image,
                    "ports": [{"containerPort": port}],
                    "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": token_name, "key": "token"}}}],
                }]},
            },
        },
    });
    let service = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": meta(&name),
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": port}]},
    });

    let params = PatchParams::apply(MANAGER).force();
    let exists_secret = existing.is_some();
    let exists_deploy = ctx.deployments.get(&ObjectRef::new(&name).within(&ns)).is_some();
    for (kind, body, exists) in [
        ("Secret", &secret, exists_secret),
        ("Deployment", &deployment, exists_deploy),
        ("Service", &service, true),
    ] {
        let key = format!("{uid}/{kind}");
        let print = fingerprint(body);
        if exists && ctx.sent.lock().map(|m| m.get(&key) == Some(&print)).unwrap_or(false) {
            continue;
        }
        let child = body["metadata"]["name"].as_str().unwrap_or_default();
        match kind {
            "Secret" => Api::<Secret>::namespaced(ctx.client.clone(), &ns)
                .patch(child, &params, &Patch::Apply(body))
                .await
                .map(drop),
            "Deployment" => Api::<Deployment>::namespaced(ctx.client.clone(), &ns)
                .patch(child, &params, &Patch::Apply(body))
                .await
                .map(drop),
            _ => Api::<Service>::namespaced(ctx.client.clone(), &ns)
                .patch(child, &params, &Patch::Apply(body))
                .await
                .map(drop),
        }
        .map_err(fail(kind))?;
        if let Ok(mut m) = ctx.sent.lock() {
            m.insert(key, print);
        }
    }

    let available = ctx
        .deployments
        .get(&ObjectRef::new(&name).within(&ns))
        .and_then(|d| d.status.as_ref()?.available_replicas)
        .unwrap_or(0);
    let ready = i64::from(available) >= replicas;
    let state = if ready { "True" } else { "False" };
    let live = &cr.data["status"];
    let live_ready = live["conditions"].as_array().and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"));
    let since = live_ready
        .filter(|c| c["status"] == state)
        .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned))
        .unwrap_or_else(|| jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    let status = json!({
        "ready": ready,
        "phase": if ready { "Running" } else { "Pending" },
        "observedGeneration": cr.metadata.generation,
        "conditions": [{
            "type": "Ready", "status": state, "lastTransitionTime": since,
            "reason": if ready { "Available" } else { "Progressing" },
            "message": format!("{available}/{replicas} replicas available"),
        }],
    });
    let covered = status.as_object().is_some_and(|want| want.iter().all(|(k, v)| &live[k] == v));
    if !covered {
        let body = json!({"apiVersion": "apps.example.com/v1", "kind": "WebApp",
            "metadata": {"name": name, "namespace": ns}, "status": status});
        webapps.patch_status(&name, &params, &Patch::Apply(&body)).await.map_err(fail("status"))?;
    }
    Ok(Action::requeue(ctx.every))
}

fn error_policy(_cr: Arc<DynamicObject>, err: &Failed, ctx: Arc<Ctx>) -> Action {
    ctx.errors.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(error = %err, "reconcile failed");
    Action::requeue(Duration::from_secs(1))
}

/// Serve `/metrics` (any path) with the reconcile counters.
async fn serve_metrics(port: u16, ctx: Arc<Ctx>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    loop {
        let (mut sock, _) = listener.accept().await?;
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let body = format!(
                "controller_runtime_reconcile_total{{controller=\"webapp\",result=\"success\"}} {}\n\
                 controller_runtime_reconcile_total{{controller=\"webapp\",result=\"error\"}} {}\n",
                ctx.reconciles.load(Ordering::Relaxed) - ctx.errors.load(Ordering::Relaxed),
                ctx.errors.load(Ordering::Relaxed),
            );
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        });
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter("warn").with_writer(std::io::stderr).init();
    let mut args = std::env::args().skip(1);
    let (mut kubeconfig, mut every, mut port, mut concurrency) = (None, "5m".to_owned(), 0u16, 4u16);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--kubeconfig" => kubeconfig = args.next(),
            "--every" => every = args.next().unwrap_or(every),
            "--metrics-port" => port = args.next().and_then(|p| p.parse().ok()).unwrap_or(0),
            "--concurrency" => concurrency = args.next().and_then(|p| p.parse().ok()).unwrap_or(4),
            other => anyhow::bail!(
                "unknown argument {other}; use --kubeconfig, --every, --metrics-port, --concurrency"
            ),
        }
    }
    let every = parse_duration(&every)?;
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await?,
    };
    let client = Client::try_from(config)?;
    let gvk = GroupVersionKind::gvk("apps.example.com", "v1", "WebApp");
    let webapps = ApiResource::from_gvk_with_plural(&gvk, "webapps");
    let wc = watcher::Config::default();

    let (secrets, secret_writer) = reflector::store::<Secret>();
    let secret_stream =
        reflector::reflector(secret_writer, watcher(Api::<Secret>::all(client.clone()), wc.clone()))
            .applied_objects()
            .boxed();
    let (deployments, deploy_writer) = reflector::store::<Deployment>();
    let deploy_stream =
        reflector::reflector(deploy_writer, watcher(Api::<Deployment>::all(client.clone()), wc.clone()))
            .applied_objects()
            .boxed();
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        webapps: webapps.clone(),
        secrets,
        deployments,
        every,
        sent: Mutex::default(),
        reconciles: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    });
    let metrics = tokio::spawn(serve_metrics(port, ctx.clone()));
    Controller::new_with(Api::<DynamicObject>::all_with(client.clone(), &webapps), wc.clone(), webapps)
        .with_config(ControllerConfig::default().concurrency(concurrency))
        .owns_stream(secret_stream)
        .owns_stream(deploy_stream)
        .owns(Api::<Service>::all(client), wc)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| std::future::ready(()))
        .await;
    metrics.abort();
    Ok(())
}

fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse()?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "s" | "" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        other => anyhow::bail!("unknown duration unit {other:?}"),
    })
}
