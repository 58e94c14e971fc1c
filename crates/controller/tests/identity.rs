//! Each operator has its own name: field manager, Leases and event reporter. Two operators
//! on one cluster keep their own fields (the API server moves a field to the one that
//! takes it over), and an operator upgraded from the former shared name `ctop` leaves no
//! field owned by `ctop`, so what it stops applying is removed.

mod common;

use common::{Launch, eventually, sim, start_on};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::{Value, json};

/// The managers of `o`'s `managedFields`.
fn managers(o: &impl kube::Resource) -> Vec<String> {
    o.meta().managed_fields.iter().flatten().filter_map(|e| e.manager.clone()).collect()
}

/// The fields (as `FieldsV1`) `manager` applied to `o`.
fn applied_by(o: &impl kube::Resource, manager: &str) -> Value {
    o.meta()
        .managed_fields
        .iter()
        .flatten()
        .find(|e| e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some("Apply"))
        .and_then(|e| e.fields_v1.as_ref().map(|f| f.0.clone()))
        .unwrap_or(Value::Null)
}

/// One ConfigMap per Widget with a key per name of `spec.names`.
const CHILD: &str = r#"
operator(widget).manages(ConfigMap).reconcile((cr) => {
  apply(ConfigMap({ metadata: { name: cr.metadata.name }, data: Object.fromEntries(cr.spec.names.map((n) => [n, "1"])) }));
  setStatus(cr, { phase: "Ready" });
});
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_from_the_former_name_leaves_no_field_owned_by_ctop() {
    let sim = sim().await;
    let old = start_on(&sim, CHILD, Launch { name: Some("ctop"), ..Launch::default() }).await;
    old.create("w", json!({"names": ["a", "b"]})).await;
    let cm = eventually(20, "the child with a and b", || async {
        let cm = old.config_maps().get_opt("w").await.ok().flatten()?;
        (cm.data.as_ref()?.len() == 2).then_some(cm)
    })
    .await;
    assert!(managers(&cm).contains(&"ctop".to_owned()), "written as ctop: {:?}", managers(&cm));
    eventually(20, "the status", || async {
        old.widget("w").await.filter(|w| w.data["status"]["phase"] == "Ready")
    })
    .await;
    old.stop().await;

    // The same operator, upgraded: its own name.
    let new = start_on(&sim, CHILD, Launch { name: Some("widgets"), ..Launch::default() }).await;
    for what in ["the child", "the widget"] {
        eventually(30, &format!("no field of {what} owned by ctop"), || async {
            let m = match what {
                "the child" => managers(&new.config_maps().get("w").await.ok()?),
                _ => managers(&new.widget("w").await?),
            };
            (!m.is_empty() && !m.contains(&"ctop".to_owned())).then_some(())
        })
        .await;
    }
    // What it stops applying goes: no other manager holds it.
    new.set_spec("w", json!({"names": ["a"]})).await;
    let cm: ConfigMap = eventually(20, "b removed from the child", || async {
        let cm = new.config_maps().get_opt("w").await.ok().flatten()?;
        (cm.data.as_ref()?.len() == 1).then_some(cm)
    })
    .await;
    assert_eq!(cm.data.as_ref().and_then(|d| d.get("a")).map(String::as_str), Some("1"));
    new.stop().await;
}

/// An operator of the Widgets labelled `team=<team>` that applies the shared ConfigMap
/// `shared` at start (a key of its own and `x`) and reports each Widget it sees.
fn team(team: &str) -> String {
    format!(
        r#"
import {{ event }} from "ctop";
operator(widget, {{ labelSelector: "team={team}" }})
  .manages(ConfigMap)
  .onStart(() => {{
    apply(ConfigMap({{ metadata: {{ name: "shared", namespace: "default" }}, data: {{ {team}: "1", x: "{team}" }} }}));
    return Result.ok();
  }})
  .reconcile((cr) => {{ event(cr, {{ reason: "Seen", message: "seen by {team}" }}); }});
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_operators_keep_their_own_fields_leases_and_events() {
    let sim = sim().await;
    let a =
        start_on(&sim, &team("a"), Launch { name: Some("team-a"), leader_elect: true, ..Launch::default() })
            .await;
    let shared = |op: &common::Operator| op.config_maps();
    eventually(30, "team-a's shared ConfigMap", || async {
        let cm = shared(&a).get_opt("shared").await.ok().flatten()?;
        (cm.data.as_ref()?.get("x").map(String::as_str) == Some("a")).then_some(())
    })
    .await;
    let b =
        start_on(&sim, &team("b"), Launch { name: Some("team-b"), leader_elect: true, ..Launch::default() })
            .await;
    let cm = eventually(30, "team-b takes x over", || async {
        let cm = shared(&b).get_opt("shared").await.ok().flatten()?;
        (cm.data.as_ref()?.get("x").map(String::as_str) == Some("b")).then_some(cm)
    })
    .await;
    // Each keeps its own key: under one shared manager, b's apply would have removed `a`.
    let data = cm.data.clone().unwrap_or_default();
    assert_eq!(
        (data.get("a").map(String::as_str), data.get("b").map(String::as_str)),
        (Some("1"), Some("1"))
    );
    // The forced takeover moved `x` to team-b, as the API server records it.
    assert!(applied_by(&cm, "team-b")["f:data"].get("f:x").is_some(), "{:?}", cm.managed_fields());
    assert!(applied_by(&cm, "team-a")["f:data"].get("f:x").is_none(), "{:?}", cm.managed_fields());
    assert!(applied_by(&cm, "team-a")["f:data"].get("f:a").is_some());

    // Leases of their own.
    let leases: Api<Lease> = Api::namespaced(a.client.clone(), "default");
    for lease in ["team-a-leader", "team-b-leader"] {
        eventually(20, lease, || async { leases.get_opt(lease).await.ok().flatten() }).await;
    }
    // Events name the operator that wrote them.
    let widget = |name: &str, team: &str| {
        json!({"apiVersion": "test.ctop.dev/v1", "kind": "Widget",
               "metadata": {"name": name, "namespace": "default", "labels": {"team": team}}, "spec": {}})
    };
    for (name, t) in [("wa", "a"), ("wb", "b")] {
        let obj: DynamicObject = serde_json::from_value(widget(name, t)).expect("widget");
        a.widgets().create(&Default::default(), &obj).await.expect("created");
    }
    let events: Api<DynamicObject> = Api::namespaced_with(
        a.client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("events.k8s.io", "v1", "Event"), "events"),
    );
    for (name, reporter) in [("wa", "team-a"), ("wb", "team-b")] {
        let seen = eventually(20, &format!("the event about {name}"), || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| e.data["regarding"]["name"] == name && e.data["reason"] == "Seen")
        })
        .await;
        assert_eq!(seen.data["reportingController"], reporter, "{name}");
        assert_eq!(seen.data["note"], format!("seen by {}", &reporter[5..]));
    }
    b.stop().await;
    a.stop().await;
}
