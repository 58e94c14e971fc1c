//! `ctop run` never takes over what it did not make: a Tenant that wants a namespace someone
//! created by hand leaves it alone and says why, and deleting the Tenant deletes nothing of
//! it; a namespace the Tenant made goes with it.

mod common;

use common::{Kubectl, ctop_run, operator_dir, start_sim};

/// A cluster-scoped `Tenant` applies the Namespace its spec names, with a ConfigMap in it.
const TENANT: &str = r#"
import { resource, z, operator, apply, setStatus, Result, Namespace, ConfigMap } from "ctop";

const tenant = resource("tenancy.example.com/v1", "Tenant", {
  scope: "Cluster",
  spec: { namespace: z.string() },
  status: { phase: z.string() },
});

operator(tenant)
  .manages(Namespace, ConfigMap)
  .reconcile((cr) => {
    apply(Namespace({ metadata: { name: cr.spec.namespace } }));
    setStatus(cr, { phase: "Ready" });
    return Result.ok();
  });
"#;

fn tenant(k: &Kubectl, dir: &std::path::Path, name: &str, namespace: &str) {
    let file = dir.join(format!("tenant-{name}.yaml"));
    std::fs::write(
        &file,
        format!(
            "apiVersion: tenancy.example.com/v1\nkind: Tenant\nmetadata: {{name: {name}}}\nspec: {{namespace: {namespace}}}\n"
        ),
    )
    .expect("write");
    k.ok(&["apply", "-f", file.to_str().expect("utf-8")]);
}

#[test]
fn a_namespace_made_by_hand_survives_the_tenant_that_wanted_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), TENANT);
    let _run = ctop_run(&op, &kubeconfig, &[], "ctop.log");
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "crd", "tenants.tenancy.example.com", "-o", "name"], |s| !s.is_empty());

    // Someone's namespace, with something precious in it.
    k.ok(&["create", "namespace", "team-a"]);
    k.ok(&["create", "configmap", "precious", "-n", "team-a", "--from-literal=data=keep"]);
    tenant(&k, dir.path(), "a", "team-a");

    // The Tenant says why it did not take the namespace: its condition and an event name the
    // namespace and who holds it.
    let reason = k.eventually(
        &["get", "tenant", "a", "-o", "jsonpath={.status.conditions[?(@.type==\"Reconciled\")].reason}"],
        |s| s == "AdoptionRefused",
    );
    assert_eq!(reason, "AdoptionRefused");
    let message = k.ok(&[
        "get",
        "tenant",
        "a",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Reconciled\")].message}",
    ]);
    assert!(
        message.contains("Namespace team-a: it exists and is not a child of Tenant.tenancy.example.com a")
            && message.contains("it has no owner reference and no ApplySet label"),
        "{message}"
    );
    let events = k.eventually(
        &[
            "get",
            "events",
            "-A",
            "--field-selector",
            "involvedObject.name=a",
            "-o",
            "jsonpath={.items[*].reason}",
        ],
        |s| s.contains("AdoptionRefused"),
    );
    assert!(events.contains("AdoptionRefused"), "{events}");
    assert_eq!(
        k.ok(&["get", "namespace", "team-a", "-o", "jsonpath={.metadata.ownerReferences}"]),
        "",
        "no owner reference was put on it"
    );
    assert_eq!(
        k.ok(&[
            "get",
            "namespace",
            "team-a",
            "-o",
            "jsonpath={.metadata.labels.applyset\\.kubernetes\\.io/part-of}"
        ]),
        "",
        "no ApplySet label either"
    );

    // A namespace the operator makes is its child, and goes with its Tenant.
    tenant(&k, dir.path(), "b", "team-b");
    k.eventually(
        &["get", "namespace", "team-b", "-o", "jsonpath={.metadata.ownerReferences[0].name}"],
        |s| s == "b",
    );
    k.ok(&["delete", "tenant", "a", "b"]);
    k.eventually(&["get", "tenants", "-o", "name"], |s| s.is_empty());
    // The garbage collector has acted on the deleted Tenants once team-b is gone.
    k.eventually(&["get", "namespaces", "-o", "name"], |s| !s.contains("namespace/team-b"));
    assert_eq!(k.ok(&["get", "namespace", "team-a", "-o", "jsonpath={.status.phase}"]), "Active");
    assert_eq!(
        k.ok(&["get", "configmap", "precious", "-n", "team-a", "-o", "jsonpath={.data.data}"]),
        "keep"
    );
}
