//! `ctop run --sharding` as it is deployed: two processes of the webapp example against
//! `ctop sim`, checked with kubectl. The objects spread over both members with their
//! children, the ring shows on the ControllerStatus, and when one process is killed its
//! objects move to the other.

mod common;

use common::examples::{example, run_example_with};
use common::{Kubectl, start_sim};

const LABEL: &str = "shard\\.ctop\\.dev/webapp";

fn member_flags(identity: &str) -> Vec<String> {
    [
        "--sharding",
        "--name",
        "webapp",
        "--identity",
        identity,
        "--lease-duration",
        "4s",
        "--renew-deadline",
        "3s",
        "--retry-period",
        "500ms",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

/// Each WebApp's member, and its Deployment's, as `name=member/deployment-member` lines.
fn members(k: &Kubectl) -> Vec<(String, String, String)> {
    let webapps = k.ok(&[
        "get",
        "webapps",
        "-o",
        &format!(
            "jsonpath={{range .items[*]}}{{.metadata.name}}={{.metadata.labels.{LABEL}}}{{\"\\n\"}}{{end}}"
        ),
    ]);
    let deployments = k.ok(&[
        "get",
        "deployments",
        "-o",
        &format!(
            "jsonpath={{range .items[*]}}{{.metadata.name}}={{.metadata.labels.{LABEL}}}{{\"\\n\"}}{{end}}"
        ),
    ]);
    let of = |text: &str, name: &str| {
        text.lines().find_map(|l| l.strip_prefix(&format!("{name}="))).unwrap_or_default().to_owned()
    };
    webapps
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(name, m)| (name.to_owned(), m.to_owned(), of(&deployments, name)))
        .collect()
}

#[test]
fn two_members_share_the_webapps_and_one_takes_over_when_the_other_dies() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (_sim, kubeconfig) = start_sim(tmp.path());
    let k = Kubectl { kubeconfig, cache: tmp.path().join("cache") };
    let a_flags = member_flags("member-a");
    let b_flags = member_flags("member-b");
    let a = run_example_with("webapp", &k, &a_flags.iter().map(String::as_str).collect::<Vec<_>>());
    let _b = {
        let flags: Vec<&str> = b_flags.iter().map(String::as_str).collect();
        common::ctop_run(&example("webapp"), &k.kubeconfig, &flags, "ctop-run-webapp-b.log")
    };
    k.eventually(&["get", "leases", "-l", "shard.ctop.dev/ring=webapp", "-o", "name"], |s| {
        s.lines().count() == 2
    });

    let manifests: String = (0..20)
        .map(|i| format!("apiVersion: apps.example.com/v1\nkind: WebApp\nmetadata:\n  name: app-{i}\nspec:\n  image: nginx:1.27\n  replicas: 1\n  port: 80\n---\n"))
        .collect();
    let file = tmp.path().join("webapps.yaml");
    std::fs::write(&file, manifests).expect("write the WebApps");
    k.eventually(&["apply", "-f", file.to_str().expect("utf-8")], |s| s.contains("app-19"));

    // Every WebApp is assigned, both members hold some, each Deployment is its owner's.
    k.eventually(&["get", "webapps", "-o", "name"], |_| {
        let m = members(&k);
        m.len() == 20 && m.iter().all(|(_, w, d)| !w.is_empty() && w == d)
    });
    let m = members(&k);
    for member in ["member-a", "member-b"] {
        assert!(m.iter().any(|(_, w, _)| w == member), "{member} holds no WebApp: {m:?}");
    }
    // The sharder shows the ring on the ControllerStatus.
    k.eventually(
        &["get", "controllerstatuses", "-o", "jsonpath={.items[0].status.sharding.members[*].name}"],
        |s| s == "member-a member-b",
    );

    // Killed, member-a's WebApps and their Deployments move to member-b.
    drop(a);
    k.eventually(&["get", "webapps", "-o", "name"], |_| {
        members(&k).iter().all(|(_, w, d)| w == "member-b" && d == "member-b")
    });
    k.eventually(&["get", "lease", "member-a", "-o", "jsonpath={.spec.holderIdentity}"], |s| {
        s == "ctop-sharder"
    });
}
