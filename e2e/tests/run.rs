//! `ctop run` as a user runs it: kubesim (`ctop sim`), the webapp example with
//! `--install-crds`, and kubectl creating, patching and inspecting objects.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Kubectl, Proc, ctop_run, operator_dir, start_sim};
use ctop_e2e::binary;

#[test]
fn run_reconciles_the_webapp_example() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp");
    let mut run = Proc(
        Command::new(binary::ctop())
            .arg("run")
            .arg(&example)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--install-crds", "--leader-elect=false", "--health-port", "0", "--metrics-port", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ctop run starts"),
    );
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "crd", "webapps.apps.example.com", "-o", "name"], |s| !s.is_empty());
    // The CRD is served once established; retry the create until discovery has it.
    let sample = example.join("samples");
    k.eventually(&["apply", "-f", sample.to_str().expect("utf-8")], |s| s.contains("webapp"));

    let owner_of = |kind: &str, name: &str| {
        k.eventually(&["get", kind, name, "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}"], |s| !s.is_empty())
    };
    for (kind, name) in [("deployment", "shop"), ("service", "shop"), ("secret", "shop-token")] {
        assert_eq!(owner_of(kind, name), "WebApp/shop/true", "{kind} {name} is owned by the WebApp");
    }
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"], |s| s == "Pending");
    let token = k.ok(&["get", "secret", "shop-token", "-o", "jsonpath={.data.token}"]);
    assert!(!token.is_empty());

    k.ok(&[
        "patch",
        "deployment",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2,"readyReplicas":2,"availableReplicas":2}}"#,
    ]);
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"], |s| s == "Running");

    k.ok(&["patch", "webapp", "shop", "--type=merge", "-p", r#"{"spec":{"replicas":3}}"#]);
    k.eventually(&["get", "deployment", "shop", "-o", "jsonpath={.spec.replicas}"], |s| s == "3");
    // 2 of 3 available now: back to Pending, after more reconciles.
    k.eventually(&["get", "webapp", "shop", "-o", "jsonpath={.status.phase}"], |s| s == "Pending");
    assert_eq!(
        k.ok(&["get", "secret", "shop-token", "-o", "jsonpath={.data.token}"]),
        token,
        "the token is generated once and read back from the cache"
    );

    let term = Command::new("kill").args(["-TERM", &run.0.id().to_string()]).status().expect("kill");
    assert!(term.success());
    let status = run.0.wait().expect("ctop run exits");
    assert!(status.success(), "ctop run exits cleanly on SIGTERM: {status:?}");
}

/// A `.watches()` operator: Secrets map to their owner by owner reference; ConfigMaps labelled `watched=yes` (label selector applied by
/// the server) are mapped by the script to the Thing named in their `thing` label, only
/// when labels or annotations change; each reconcile merge-patches an annotation into an
/// existing, unowned ConfigMap.
const WATCHES_SCRIPT: &str = r#"
import { resource, z, operator, patch, setStatus, listObserved, Result, ConfigMap, Secret } from "ctop";

const thing = resource("test.example.com/v1", "Thing", {
  scope: "Namespaced",
  spec: { note: z.string().default("") },
  status: { seen: z.string(), owned: z.string() },
});

operator(thing)
  .watches(ConfigMap, (cm) => cm.metadata.labels?.thing ? [cm.metadata.labels.thing] : [], {
    labelSelector: { watched: "yes" },
    predicate: { or: ["LabelChanged", "AnnotationChanged"] },
  })
  .watches(Secret)
  // The reconcile patches a ConfigMap it does not own: that takes a grant.
  .permission({ apiGroups: [""], resources: ["configmaps"], verbs: ["patch"] })
  .reconcile((cr) => {
    const name = cr.metadata.name;
    const owned = listObserved(Secret, (s) => s.metadata.ownerReferences?.some((r) => r.uid === cr.metadata.uid))
      .map((s) => `${s.metadata.name}=${s.metadata.annotations?.v ?? ""}`)
      .join(",");
    const seen = listObserved(ConfigMap, { labels: { thing: name } })
      .map((cm) => `${cm.metadata.name}=${cm.data?.v ?? ""}`)
      .sort()
      .join(",");
    setStatus(cr, { seen, owned });
    patch(ConfigMap({ metadata: { name: "external", annotations: { "seen-by": name } } }));
    return Result.ok();
  });
"#;

#[test]
fn run_maps_watched_objects_and_patches_unowned_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), WATCHES_SCRIPT);
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: dir.path().join("cache") };
    k.ok(&["create", "configmap", "external", "--from-literal=keep=me"]);
    let _run = ctop_run(&op, &kubeconfig, &[], "ctop-run.log");
    let thing = dir.path().join("thing.yaml");
    std::fs::write(&thing, "apiVersion: test.example.com/v1\nkind: Thing\nmetadata:\n  name: t1\n  namespace: default\nspec: {}\n")
        .expect("write");
    k.eventually(&["apply", "-f", thing.to_str().expect("utf-8")], |s| s.contains("t1"));
    let seen = || ["get", "thing", "t1", "-o", "jsonpath={.status.seen}/{.status.observedGeneration}"];
    k.eventually(&seen(), |s| s == "/1");

    // The patch: merged into the live object, which stays unowned.
    k.eventually(&["get", "configmap", "external", "-o", "jsonpath={.metadata.annotations.seen-by}"], |s| {
        s == "t1"
    });
    assert_eq!(
        k.ok(&["get", "configmap", "external", "-o", "jsonpath={.data.keep}|{.metadata.ownerReferences}"]),
        "me|",
        "the patched object keeps its data and gets no owner reference"
    );

    // A watched ConfigMap naming t1 in a label: the mapper enqueues t1.
    k.ok(&["create", "configmap", "a", "--from-literal=v=1"]);
    k.ok(&["label", "configmap", "a", "watched=yes", "thing=t1"]);
    k.eventually(&seen(), |s| s == "a=1/1");

    // Data-only changes do not pass LabelChanged|AnnotationChanged; an annotation does.
    k.ok(&["patch", "configmap", "a", "--type=merge", "-p", r#"{"data":{"v":"2"}}"#]);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(k.ok(&seen()), "a=1/1", "a data change is filtered out by the predicate");
    k.ok(&["annotate", "configmap", "a", "touch=1"]);
    k.eventually(&seen(), |s| s == "a=2/1");

    // Outside the label selector: not watched (nor cached), so it neither triggers nor is
    // seen by the reconcile that the next change of `a` triggers.
    k.ok(&["create", "configmap", "b", "--from-literal=v=9"]);
    k.ok(&["label", "configmap", "b", "thing=t1"]);
    k.ok(&["patch", "configmap", "a", "--type=merge", "-p", r#"{"data":{"v":"3"}}"#]);
    k.ok(&["annotate", "--overwrite", "configmap", "a", "touch=2"]);
    k.eventually(&seen(), |s| s == "a=3/1");

    // Without a mapper: a Secret maps to the Thing its owner reference names.
    let uid = k.ok(&["get", "thing", "t1", "-o", "jsonpath={.metadata.uid}"]);
    let secret = dir.path().join("secret.yaml");
    let write_secret = |v: &str| {
        std::fs::write(
            &secret,
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: default\n  annotations: {{v: \"{v}\"}}\n  ownerReferences:\n  - {{apiVersion: test.example.com/v1, kind: Thing, name: t1, uid: {uid}}}\n"
            ),
        )
        .expect("write");
        k.ok(&["apply", "-f", secret.to_str().expect("utf-8")]);
    };
    write_secret("x");
    k.eventually(&["get", "thing", "t1", "-o", "jsonpath={.status.owned}"], |s| s == "s=x");
    write_secret("y");
    k.eventually(&["get", "thing", "t1", "-o", "jsonpath={.status.owned}"], |s| s == "s=y");
}

/// `.watches()` of kinds the operator already watches: ConfigMaps (read) labelled
/// `watched=yes` map to the Thing their `thing` label names; a Thing maps to the Things
/// whose `spec.after` names it, and those read its note from the cache.
const SHARED_WATCH_SCRIPT: &str = r#"
import { resource, z, operator, setStatus, getObserved, listObserved, Result, ConfigMap } from "ctop";

const thing = resource("test.example.com/v1", "Thing", {
  scope: "Namespaced",
  spec: { note: z.string().default(""), after: z.string().default("") },
  status: { seen: z.string(), after: z.string() },
});

operator(thing)
  .reads(ConfigMap)
  .watches(ConfigMap, (cm) => [cm.metadata.labels?.thing ?? ""].filter((n) => n !== ""), {
    labelSelector: { watched: "yes" },
  })
  .watches(thing, (t) => listObserved(thing, { namespace: t.metadata.namespace })
    .filter((x) => x.spec.after === t.metadata.name))
  .reconcile((cr) => {
    const name = cr.metadata.name;
    const seen = listObserved(ConfigMap, { labels: { thing: name, watched: "yes" } })
      .map((cm) => `${cm.metadata.name}=${cm.data?.v ?? ""}`)
      .sort()
      .join(",");
    const after = cr.spec.after ? getObserved(thing, cr.spec.after)?.spec.note ?? "-" : "";
    setStatus(cr, { seen, after });
    return Result.ok();
  });
"#;

#[test]
fn watches_of_cached_kinds_share_their_watch_and_see_what_triggered_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), SHARED_WATCH_SCRIPT);
    let k = Kubectl { kubeconfig: kubeconfig.clone(), cache: dir.path().join("cache") };
    let _run = ctop_run(&op, &kubeconfig, &[], "ctop-run.log");
    let things = dir.path().join("things.yaml");
    let write_things = |note: &str| {
        std::fs::write(
            &things,
            format!(
                "apiVersion: test.example.com/v1\nkind: Thing\nmetadata: {{name: t1, namespace: default}}\nspec: {{note: \"{note}\"}}\n---\n\
                 apiVersion: test.example.com/v1\nkind: Thing\nmetadata: {{name: t2, namespace: default}}\nspec: {{after: t1}}\n"
            ),
        )
        .expect("write");
        k.eventually(&["apply", "-f", things.to_str().expect("utf-8")], |s| s.contains("t2"));
    };
    write_things("one");
    let after = || ["get", "thing", "t2", "-o", "jsonpath={.status.after}"];
    k.eventually(&after(), |s| s == "one");
    // Each change of t1 reaches t2, whose reconcile reads t1 from the cache: the mapper
    // runs on the primary watch's events after the cache has them, so never a stale note.
    for note in ["two", "three", "four", "five"] {
        write_things(note);
        k.eventually(&after(), |s| s == note);
    }

    // A ConfigMap labelled into the scope triggers its Thing; a data change does too.
    let seen = || ["get", "thing", "t1", "-o", "jsonpath={.status.seen}"];
    k.ok(&["create", "configmap", "a", "--from-literal=v=1"]);
    k.ok(&["label", "configmap", "a", "watched=yes", "thing=t1"]);
    k.eventually(&seen(), |s| s == "a=1");
    k.ok(&["patch", "configmap", "a", "--type=merge", "-p", r#"{"data":{"v":"2"}}"#]);
    k.eventually(&seen(), |s| s == "a=2");
    // Leaving the scope is reported as a deletion, as a server-filtered watch does.
    k.ok(&["label", "configmap", "a", "watched-"]);
    k.eventually(&seen(), |s| s.is_empty());

    // One watch per kind: the `.watches()` took the events of the primary and read watches.
    assert_eq!(k.requests_by_ctop().get("watch things").copied().unwrap_or(0), 1, "one watch of Things");
    assert_eq!(
        k.requests_by_ctop().get("watch configmaps").copied().unwrap_or(0),
        1,
        "one watch of ConfigMaps"
    );
}
