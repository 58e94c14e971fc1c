//! `ctop run` with children in other namespaces: a Secret replicator (the
//! kubernetes-reflector pattern) copies a Secret into the namespaces its spec lists; the
//! copies carry no owner reference (none can cross namespaces), are pruned when a namespace
//! leaves the list, and are deleted with the replication, while the source stays.

mod common;

use common::{Kubectl, ctop_run, operator_dir, start_sim};

/// A `SecretReplication` copies the Secret `spec.secret` of its namespace into each of
/// `spec.namespaces`.
const REPLICATOR: &str = r#"
import { resource, z, operator, apply, getObserved, setStatus, Secret } from "ctop";

const replication = resource("replicator.example.com/v1", "SecretReplication", {
  scope: "Namespaced",
  spec: { secret: z.string(), namespaces: z.array(z.string()) },
  status: { copies: z.number().optional() },
});

operator(replication)
  .manages(Secret)
  .reconcile((cr) => {
    const source = getObserved(Secret, cr.spec.secret);
    if (!source) {
      setStatus(cr, { copies: 0 });
      return;
    }
    for (const ns of cr.spec.namespaces) {
      apply(Secret({ metadata: { name: cr.spec.secret, namespace: ns }, type: source.type, data: source.data }));
    }
    setStatus(cr, { copies: cr.spec.namespaces.length });
  });
"#;

fn replication(k: &Kubectl, dir: &std::path::Path, namespaces: &str) {
    let file = dir.join("replication.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: replicator.example.com/v1\nkind: SecretReplication\nmetadata: {{name: db, namespace: default}}\nspec: {{secret: db, namespaces: [{namespaces}]}}\n"
        ),
    )
    .expect("write");
    k.ok(&["apply", "-f", file.to_str().expect("utf-8")]);
}

#[test]
fn copies_in_other_namespaces_are_pruned_and_deleted_with_the_replication() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(dir.path());
    let op = operator_dir(dir.path(), REPLICATOR);
    let _run = ctop_run(&op, &kubeconfig, &[], "ctop.log");
    let k = Kubectl { kubeconfig, cache: dir.path().join("cache") };
    k.eventually(&["get", "crd", "secretreplications.replicator.example.com", "-o", "name"], |s| {
        !s.is_empty()
    });
    k.ok(&["create", "namespace", "team-a"]);
    k.ok(&["create", "namespace", "team-b"]);
    k.ok(&["create", "secret", "generic", "db", "-n", "default", "--from-literal=password=s3cret"]);

    replication(&k, dir.path(), "team-a, team-b");
    for ns in ["team-a", "team-b"] {
        // base64("s3cret")
        k.eventually(&["get", "secret", "db", "-n", ns, "-o", "jsonpath={.data.password}"], |s| {
            s == "czNjcmV0"
        });
    }
    assert_eq!(
        k.ok(&["get", "secret", "db", "-n", "team-a", "-o", "jsonpath={.metadata.ownerReferences}"]),
        ""
    );
    assert_eq!(
        k.ok(&[
            "get",
            "secret",
            "db",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.metadata.annotations.ctop\\.dev/owner}"
        ]),
        "SecretReplication.replicator.example.com default/db"
    );
    assert_eq!(
        k.ok(&["get", "secretreplication", "db", "-o", "jsonpath={.metadata.finalizers}"]),
        r#"["children.ctop.dev/op"]"#
    );

    // team-b leaves the list: its copy is pruned, team-a's stays.
    replication(&k, dir.path(), "team-a");
    k.eventually(&["get", "secrets", "-n", "team-b", "-o", "name"], |s| !s.contains("secret/db"));
    assert_eq!(k.ok(&["get", "secret", "db", "-n", "team-a", "-o", "jsonpath={.data.password}"]), "czNjcmV0");

    // Deleted: the copy goes, then the replication; the source stays.
    k.ok(&["delete", "secretreplication", "db", "--wait=false"]);
    k.eventually(&["get", "secrets", "-n", "team-a", "-o", "name"], |s| !s.contains("secret/db"));
    k.eventually(&["get", "secretreplications", "-o", "name"], |s| s.is_empty());
    assert_eq!(
        k.ok(&["get", "secret", "db", "-n", "default", "-o", "jsonpath={.data.password}"]),
        "czNjcmV0"
    );
}
