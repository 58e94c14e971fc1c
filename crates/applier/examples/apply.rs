//! Apply a desired set of children under an owner, three times: the first pass creates the
//! children, the second writes nothing, the third prunes the child that left the set.
//!
//! Runs against the cluster of `KUBECONFIG` (or `~/.kube/config`), in its current namespace.
//! Without a cluster, start kubesim first:
//!
//! ```sh
//! ./ctop sim --addr 127.0.0.1:6443 --kubeconfig /tmp/kubesim.kubeconfig &
//! KUBECONFIG=/tmp/kubesim.kubeconfig cargo run -p ctop-applier --example apply
//! ```
//!
//! The owner is a ConfigMap named `ctop-applier-example`; delete it to have the garbage
//! collector remove what is left of its children.

// An example talks to its user on stdout.
#![allow(clippy::print_stdout)]

use ctop_applier::{Applier, ApplierConfig, ApplyReport};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

const OWNER: &str = "ctop-applier-example";

fn child(name: &str, greeting: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": OWNER}},
        "data": {"greeting": greeting},
    })
}

fn show(pass: &str, report: &ApplyReport) {
    let list =
        |refs: &[ctop_applier::ChildRef]| refs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    println!("{pass}");
    println!("  applied: [{}]", list(&report.applied));
    println!("  skipped: [{}]", list(&report.skipped));
    println!("  pruned:  [{}]", list(&report.pruned));
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = kube::Client::try_default().await?;
    let namespace = client.default_namespace().to_owned();

    // Any object read from the API server can own children; here, a ConfigMap.
    let owners: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let owner_body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": OWNER}});
    let owner =
        owners.patch(OWNER, &PatchParams::apply("ctop-applier-example"), &Patch::Apply(&owner_body)).await?;

    let applier = Applier::new(client.clone(), ApplierConfig::new("ctop-applier-example"));

    let report = applier.apply(&owner, [child("example-a", "hello"), child("example-b", "bonjour")]).await?;
    show("1. two children", &report);

    // The owner now carries the ApplySet label and annotations; read it again as a
    // controller's cache would have it.
    let owner = owners.get(OWNER).await?;
    let report = applier.apply(&owner, [child("example-a", "hello"), child("example-b", "bonjour")]).await?;
    show("2. the same two children (nothing written)", &report);

    let report = applier.apply(&owner, [child("example-a", "hello")]).await?;
    show("3. example-b left the desired set", &report);

    let owner = owners.get(OWNER).await?;
    println!("owner {namespace}/{OWNER}:");
    for (k, v) in owner.metadata.labels.iter().flatten().chain(owner.metadata.annotations.iter().flatten()) {
        if k.starts_with("applyset.kubernetes.io/") {
            println!("  {k}: {v}");
        }
    }
    println!("clean up: kubectl delete configmap -n {namespace} {OWNER}   (example-a is garbage-collected)");
    Ok(())
}
