use super::compat::LAST_APPLIED;
use super::managed::unix_seconds;
use super::*;
use crate::merge::shape::ListType;
use crate::merge::shape::{MergeStrategy, builtin_shape};
use ctop_schema::go::json as go_json;

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2024-01-01T00:00:01Z";
const T2: &str = "2024-01-01T00:00:02Z";
const CR: &str = "example.com/v1";

/// A custom resource: `spec.items` keyed by name, `spec.tags` a set, `spec.args`
/// atomic, `spec.selector` an atomic map.
struct TestShape;

impl Shape for TestShape {
    fn list_type(&self, path: &[&str]) -> ListType {
        match path {
            ["spec", "items"] => ListType::Map(vec!["name".into()]),
            ["spec", "tags"] | ["metadata", "finalizers"] => ListType::Set,
            _ => ListType::Atomic,
        }
    }
    fn merge_strategy(&self, _: &[&str]) -> MergeStrategy {
        MergeStrategy::Replace
    }
    fn atomic_map(&self, path: &[&str]) -> bool {
        path == ["spec", "selector"]
    }
}

fn mgr(name: &'static str, time: &'static str) -> Manager<'static> {
    Manager { name, api_version: CR, subresource: None, time }
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w", "namespace": "ns"}, "spec": spec})
}

fn ok_apply(live: Option<&Value>, cfg: &Value, m: &Manager<'_>, force: bool) -> Value {
    apply(live, cfg, m, force, &TestShape, Scope::All).unwrap()
}

fn entries(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/managedFields").and_then(Value::as_array).cloned().unwrap_or_default()
}

fn fields(obj: &Value, manager: &str, op: &str) -> Value {
    entries(obj)
        .into_iter()
        .find(|e| e["manager"] == manager && e["operation"] == op)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn conflicts_of(err: SsaError) -> Vec<Conflict> {
    match err {
        SsaError::Conflict { conflicts } => conflicts,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn deployment_config(replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]}
            }
        }
    })
}

fn apps(name: &'static str, time: &'static str) -> Manager<'static> {
    Manager { name, api_version: "apps/v1", subresource: None, time }
}

#[test]
fn create_by_apply_owns_exactly_the_config_in_the_real_format() {
    let cfg = deployment_config(1);
    let out =
        apply(None, &cfg, &apps("mgr", T0), false, &builtin_shape("Deployment"), Scope::NoStatus).unwrap();
    let mut without = out.clone();
    drop_managed_fields(&mut without);
    assert_eq!(without, cfg);
    assert_eq!(
        entries(&out),
        vec![json!({
            "manager": "mgr", "operation": "Apply", "apiVersion": "apps/v1", "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:replicas": {}, "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                            ".": {}, "f:image": {}, "f:name": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                        }}}
                    }
                }
            }
        })]
    );
}

#[test]
fn kubectl_create_fields_match_the_real_update_format() {
    let new = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "app", "image": "nginx", "resources": {},
                                    "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                    "restartPolicy": "Always"
                }
            }
        },
        "status": {"replicas": 3}
    });
    let m = Manager { name: "kubectl-create", api_version: "apps/v1", subresource: None, time: T0 };
    let out = update(None, new, &m, &builtin_shape("Deployment"), Scope::NoStatus).unwrap();
    assert!(out.get("status").is_none(), "status is dropped on create");
    let expected = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:replicas": {}, "f:selector": {},
            "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {"k:{\"name\":\"app\"}": {
                        ".": {}, "f:image": {}, "f:name": {}, "f:resources": {},
                        "f:ports": {".": {}, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                            ".": {}, "f:containerPort": {}, "f:protocol": {}
                        }}
                    }},
                    "f:restartPolicy": {}
                }
            }
        }
    });
    assert_eq!(fields(&out, "kubectl-create", "Update"), expected);
    assert_eq!(entries(&out)[0]["apiVersion"], "apps/v1");
    // A custom resource has no zero value with structs in it: spec itself is new.
    let cr = update(None, widget(json!({"size": 1})), &mgr("c", T0), &TestShape, Scope::All).unwrap();
    assert_eq!(fields(&cr, "c", "Update"), json!({"f:spec": {".": {}, "f:size": {}}}));
}

#[test]
fn reapplying_over_a_defaulted_object_keeps_the_defaults() {
    let shape = builtin_shape("Deployment");
    let cfg = deployment_config(1);
    let mut live = apply(None, &cfg, &apps("mgr", T0), false, &shape, Scope::NoStatus).unwrap();
    // What the registry's defaulting adds afterwards: owned by nobody.
    live["spec"]["revisionHistoryLimit"] = json!(10);
    live["spec"]["strategy"] = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}});
    live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("Always");
    live["spec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = json!("TCP");
    live["status"] = json!({"replicas": 1});
    let again = apply(Some(&live), &cfg, &apps("mgr", T1), false, &shape, Scope::NoStatus).unwrap();
    assert_eq!(again, live);
    // Scaling through apply changes only replicas, and the entry's time.
    let scaled =
        apply(Some(&live), &deployment_config(3), &apps("mgr", T1), false, &shape, Scope::NoStatus).unwrap();
    let mut expected = live.clone();
    expected["spec"]["replicas"] = json!(3);
    expected["metadata"]["managedFields"][0]["time"] = json!(T1);
    assert_eq!(scaled, expected);
}

#[test]
fn reapplying_the_same_config_changes_nothing() {
    let cfg = widget(json!({"size": 1, "items": [{"name": "a", "v": 1}]}));
    let first = ok_apply(None, &cfg, &mgr("a", T0), false);
    let again = ok_apply(Some(&first), &cfg, &mgr("a", T1), false);
    assert_eq!(again, first);
}

#[test]
fn dropping_a_field_removes_it_unless_someone_else_owns_it() {
    let live =
        ok_apply(None, &widget(json!({"size": 1, "color": "red", "shape": "round"})), &mgr("a", T0), false);
    // b shares ownership of color by applying the same value.
    let live = ok_apply(Some(&live), &widget(json!({"color": "red"})), &mgr("b", T1), false);
    let out = ok_apply(Some(&live), &widget(json!({"size": 1})), &mgr("a", T2), false);
    assert_eq!(out["spec"], json!({"size": 1, "color": "red"}));
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:size": {}}}));
    assert_eq!(fields(&out, "b", "Apply"), json!({"f:spec": {"f:color": {}}}));
    // a no longer applying spec at all: its field goes, b's keeps spec alive.
    let bare = json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w"}});
    let out = ok_apply(Some(&out), &bare, &mgr("a", T2), false);
    assert_eq!(out["spec"], json!({"color": "red"}));
    assert_eq!(fields(&out, "a", "Apply"), Value::Null, "an empty set drops the entry");
}

#[test]
fn dropping_the_last_owned_field_of_a_struct_removes_the_struct() {
    let live = ok_apply(None, &widget(json!({"size": 1, "extra": {"a": 1}})), &mgr("a", T0), false);
    let out = ok_apply(Some(&live), &widget(json!({"size": 1})), &mgr("a", T1), false);
    assert_eq!(out["spec"], json!({"size": 1}));
    assert_eq!(out["metadata"]["managedFields"][0]["time"], T1);
}

#[test]
fn conflicting_appliers_fail_with_the_real_message_and_equal_values_are_shared() {
    let live = ok_apply(None, &widget(json!({"replicas": 1})), &mgr("a", T0), false);
    let err =
        apply(Some(&live), &widget(json!({"replicas": 2})), &mgr("b", T1), false, &TestShape, Scope::All)
            .unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(err.to_string(), "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas");
    let shared = ok_apply(Some(&live), &widget(json!({"replicas": 1})), &mgr("b", T1), false);
    assert_eq!(fields(&shared, "a", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(fields(&shared, "b", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
    // Unchanged object: the new entry carries no time, and sorts first.
    let names: Vec<Value> = entries(&shared).iter().map(|e| e["manager"].clone()).collect();
    assert_eq!(names, vec![json!("b"), json!("a")]);
    assert!(entries(&shared)[0].get("time").is_none());
}

#[test]
fn force_moves_ownership() {
    let live = ok_apply(None, &widget(json!({"replicas": 1, "size": 3})), &mgr("a", T0), false);
    let out = ok_apply(Some(&live), &widget(json!({"replicas": 2})), &mgr("b", T1), true);
    assert_eq!(out["spec"], json!({"replicas": 2, "size": 3}));
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:size": {}}}));
    assert_eq!(fields(&out, "b", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
    // a re-applying its old value now conflicts with b.
    let err = apply(
        Some(&out),
        &widget(json!({"replicas": 1, "size": 3})),
        &mgr("a", T2),
        false,
        &TestShape,
        Scope::All,
    )
    .unwrap_err();
    assert_eq!(conflicts_of(err)[0].manager, "b");
}

#[test]
fn an_update_takes_fields_and_a_later_apply_conflicts_with_it() {
    let live = ok_apply(None, &widget(json!({"replicas": 1, "paused": false})), &mgr("a", T0), false);
    let mut edited = live.clone();
    edited["spec"]["replicas"] = json!(5);
    let after = update(Some(&live), edited, &mgr("kubectl-edit", T1), &TestShape, Scope::All).unwrap();
    assert_eq!(fields(&after, "a", "Apply"), json!({"f:spec": {"f:paused": {}}}));
    assert_eq!(fields(&after, "kubectl-edit", "Update"), json!({"f:spec": {"f:replicas": {}}}));
    let ops: Vec<Value> = entries(&after).iter().map(|e| e["operation"].clone()).collect();
    assert_eq!(ops, vec![json!("Apply"), json!("Update")], "Apply entries sort first");
    let err = apply(
        Some(&after),
        &widget(json!({"replicas": 1, "paused": false})),
        &mgr("a", T2),
        false,
        &TestShape,
        Scope::All,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using example.com/v1: .spec.replicas"
    );
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let live =
        ok_apply(None, &widget(json!({"replicas": 1, "paused": false, "size": 1})), &mgr("a", T0), false);
    let mut edited = live.clone();
    edited["spec"]["replicas"] = json!(5);
    edited["spec"]["size"] = json!(2);
    let live = update(Some(&live), edited, &mgr("b", T1), &TestShape, Scope::All).unwrap();
    let live = ok_apply(Some(&live), &widget(json!({"paused": true})), &mgr("c", T1), true);
    let err = apply(
        Some(&live),
        &widget(json!({"replicas": 1, "paused": false, "size": 1})),
        &mgr("a", T2),
        false,
        &TestShape,
        Scope::All,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"b\" using example.com/v1:\n- .spec.replicas\n- .spec.size\nconflicts with \"c\":\n- .spec.paused"
    );
}

#[test]
fn containers_merge_by_name_and_each_manager_owns_its_own() {
    let shape = builtin_shape("Deployment");
    let cfg = |name: &str, image: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"template": {"spec": {"containers": [{"name": name, "image": image}]}}}})
    };
    let live = apply(None, &cfg("a", "img-a"), &apps("one", T0), false, &shape, Scope::NoStatus).unwrap();
    let live =
        apply(Some(&live), &cfg("b", "img-b"), &apps("two", T1), false, &shape, Scope::NoStatus).unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "img-a"}, {"name": "b", "image": "img-b"}])
    );
    assert_eq!(
        fields(&live, "two", "Apply")["f:spec"]["f:template"]["f:spec"]["f:containers"],
        json!({"k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}})
    );
    // "one" changing b's image conflicts on the item's field, with the real path.
    let err =
        apply(Some(&live), &cfg("b", "other"), &apps("one", T2), false, &shape, Scope::NoStatus).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"two\": .spec.template.spec.containers[name=\"b\"].image"
    );
    // "one" dropping container a removes it; b stays.
    let none = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    let out = apply(Some(&live), &none, &apps("one", T2), false, &shape, Scope::NoStatus).unwrap();
    assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([{"name": "b", "image": "img-b"}]));
}

#[test]
fn list_map_merge_order_follows_the_real_algorithm() {
    let items = |names: &[&str]| json!(names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>());
    let live = ok_apply(None, &widget(json!({"items": items(&["a", "b", "c"])})), &mgr("x", T0), false);
    let out = ok_apply(Some(&live), &widget(json!({"items": items(&["c", "d", "a"])})), &mgr("y", T1), false);
    assert_eq!(out["spec"]["items"], items(&["b", "c", "d", "a"]));
    let out = ok_apply(Some(&live), &widget(json!({"items": items(&["z", "b"])})), &mgr("y", T1), false);
    assert_eq!(out["spec"]["items"], items(&["a", "z", "b", "c"]));
}

#[test]
fn sets_are_unions_and_each_applier_removes_only_its_own_items() {
    let with = |tags: Value| widget(json!({"tags": tags}));
    let live = ok_apply(None, &with(json!(["x", "shared"])), &mgr("a", T0), false);
    let live = ok_apply(Some(&live), &with(json!(["y", "shared"])), &mgr("b", T1), false);
    // Live order is kept, but new items land where the applied order puts them.
    assert_eq!(live["spec"]["tags"], json!(["x", "y", "shared"]));
    assert_eq!(
        fields(&live, "b", "Apply"),
        json!({"f:spec": {"f:tags": {"v:\"shared\"": {}, "v:\"y\"": {}}}})
    );
    let out = ok_apply(Some(&live), &with(json!([])), &mgr("a", T2), false);
    assert_eq!(out["spec"]["tags"], json!(["y", "shared"]));
}

#[test]
fn finalizers_set_on_a_deployment() {
    let shape = builtin_shape("Deployment");
    let cfg = |f: Value| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "finalizers": f}});
    let live =
        apply(None, &cfg(json!(["a.io/x"])), &apps("one", T0), false, &shape, Scope::NoStatus).unwrap();
    let live = apply(Some(&live), &cfg(json!(["b.io/y"])), &apps("two", T1), false, &shape, Scope::NoStatus)
        .unwrap();
    assert_eq!(live["metadata"]["finalizers"], json!(["a.io/x", "b.io/y"]));
    assert_eq!(fields(&live, "one", "Apply"), json!({"f:metadata": {"f:finalizers": {"v:\"a.io/x\"": {}}}}));
    let gone = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
    let out = apply(Some(&live), &gone, &apps("one", T2), false, &shape, Scope::NoStatus).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b.io/y"]));
}

#[test]
fn an_applied_empty_map_is_owned_and_a_map_emptied_by_pruning_becomes_null() {
    // The CronJob case: the applier keeps `jobTemplate: {}` but no longer applies
    // what was inside. The real server owns `f:jobTemplate` as a leaf and leaves a
    // null where the emptied map was (tofieldset.go, remove.go).
    let full = widget(json!({"schedule": "a", "jobTemplate": {"spec": {"template": {"x": 1}}}}));
    let live = ok_apply(None, &full, &mgr("a", T0), false);
    let out =
        ok_apply(Some(&live), &widget(json!({"schedule": "b", "jobTemplate": {}})), &mgr("a", T1), true);
    assert_eq!(out["spec"], json!({"schedule": "b", "jobTemplate": null}));
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:jobTemplate": {}, "f:schedule": {}}}));

    // A map the object did not have is created as `{}`, and owned.
    let out = ok_apply(None, &widget(json!({"jobTemplate": {}})), &mgr("a", T0), false);
    assert_eq!(out["spec"], json!({"jobTemplate": {}}));
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:jobTemplate": {}}}));
    let again = ok_apply(Some(&out), &widget(json!({"jobTemplate": {}})), &mgr("a", T1), false);
    assert_eq!(again, out, "re-applying {{}} changes nothing");

    // metadata.labels: {} the same way.
    let cfg = json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w", "labels": {}}});
    let out = ok_apply(None, &cfg, &mgr("a", T0), false);
    assert_eq!(out["metadata"]["labels"], json!({}));
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:metadata": {"f:labels": {}}}));
    let labelled =
        json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w", "labels": {"k": "v"}}});
    let live = ok_apply(None, &labelled, &mgr("a", T0), false);
    let out = ok_apply(Some(&live), &cfg, &mgr("a", T1), false);
    assert_eq!(out["metadata"]["labels"], Value::Null, "emptied by pruning: null");
}

#[test]
fn emptying_an_applied_map_leaves_a_null_that_a_metadata_update_keeps() {
    // The cronjob example's sequence: `jobTemplate.spec` applied with content, then as
    // `{}`. structured-merge-diff merges `{}` into the live map (merge.go: not both
    // empty), prunes what the manager no longer applies (update.go, prune), and
    // removing every key of a map leaves a null (remove.go, doMap), owned as a leaf.
    let full =
        widget(json!({"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}}));
    let live = ok_apply(None, &full, &mgr("a", T0), false);
    let emptied = ok_apply(Some(&live), &widget(json!({"jobTemplate": {"spec": {}}})), &mgr("a", T1), false);
    assert_eq!(emptied["spec"], json!({"jobTemplate": {"spec": null}}));
    assert_eq!(fields(&emptied, "a", "Apply"), json!({"f:spec": {"f:jobTemplate": {"f:spec": {}}}}));
    // The API server stores it as a read gives it back (the schema drops that null,
    // api::validate::as_read_back); a metadata-only update of that object leaves the
    // spec and the Apply entry alone.
    let mut stored = emptied.clone();
    stored["spec"] = json!({"jobTemplate": {}});
    let mut annotated = stored.clone();
    annotated["metadata"]["annotations"] = json!({"a": "b"});
    let out = update(Some(&stored), annotated, &mgr("kubectl-annotate", T2), &TestShape, Scope::All)
        .expect("a metadata update");
    assert_eq!(out["spec"], stored["spec"]);
    assert_eq!(fields(&out, "a", "Apply"), fields(&emptied, "a", "Apply"));
    assert_eq!(
        fields(&out, "kubectl-annotate", "Update"),
        json!({"f:metadata": {"f:annotations": {".": {}, "f:a": {}}}})
    );
    // Applying the same `{}` again over the read-back object makes it `{}` (both sides
    // empty: a leaf), as on the real server, where that write also counts as a change.
    let again = ok_apply(Some(&out), &widget(json!({"jobTemplate": {"spec": {}}})), &mgr("a", T2), false);
    assert_eq!(again["spec"], json!({"jobTemplate": {"spec": {}}}));
}

#[test]
fn an_applied_empty_list_is_owned_only_when_atomic() {
    // An empty set or map list names no item, so nothing is owned (tofieldset.go,
    // doList); created, it stays as applied.
    let out = ok_apply(None, &widget(json!({"size": 1, "tags": [], "args": []})), &mgr("a", T0), false);
    assert_eq!(out["spec"], json!({"size": 1, "tags": [], "args": []}));
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:args": {}, "f:size": {}}}));
    // Over items the applier no longer applies, the unowned list goes whole (the
    // field is a member of the merged set and of nobody's).
    let cfg = widget(json!({"size": 1, "tags": ["x"], "items": [{"name": "i"}]}));
    let live = ok_apply(None, &cfg, &mgr("a", T0), false);
    let out =
        ok_apply(Some(&live), &widget(json!({"size": 1, "tags": [], "items": []})), &mgr("a", T1), false);
    assert_eq!(out["spec"], json!({"size": 1}));
}

#[test]
fn an_applied_null_over_a_live_map_merges_nothing_into_it() {
    // typed/merge.go: a null over a map with content is not a leaf; what goes is what
    // pruning takes, and what another manager owns stays.
    let live = ok_apply(None, &widget(json!({"extra": {"a": 1}})), &mgr("a", T0), false);
    let live = ok_apply(Some(&live), &widget(json!({"extra": {"b": 2}})), &mgr("b", T1), false);
    let out = ok_apply(Some(&live), &widget(json!({"extra": null})), &mgr("a", T2), false);
    assert_eq!(out["spec"], json!({"extra": {"b": 2}}));
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:extra": {}}}));
}

#[test]
fn atomic_lists_and_maps_are_replaced_and_owned_whole() {
    let live = ok_apply(
        None,
        &widget(json!({"args": [1, 2], "selector": {"a": "1", "b": "2"}})),
        &mgr("a", T0),
        false,
    );
    assert_eq!(fields(&live, "a", "Apply"), json!({"f:spec": {"f:args": {}, "f:selector": {}}}));
    let err = apply(Some(&live), &widget(json!({"args": [3]})), &mgr("b", T1), false, &TestShape, Scope::All)
        .unwrap_err();
    assert_eq!(conflicts_of(err)[0].field, ".spec.args");
    let out =
        ok_apply(Some(&live), &widget(json!({"args": [3], "selector": {"c": "3"}})), &mgr("b", T1), true);
    assert_eq!(out["spec"], json!({"args": [3], "selector": {"c": "3"}}));
    assert_eq!(fields(&out, "a", "Apply"), Value::Null);
}

#[test]
fn status_is_outside_the_main_resource_and_alone_in_the_subresource() {
    let shape = builtin_shape("Deployment");
    let mut cfg = deployment_config(1);
    cfg["status"] = json!({"replicas": 7});
    let live = apply(None, &cfg, &apps("mgr", T0), false, &shape, Scope::NoStatus).unwrap();
    assert!(live.get("status").is_none());
    assert!(fields(&live, "mgr", "Apply").get("f:status").is_none());

    let status_mgr = Manager { name: "ctrl", api_version: "apps/v1", subresource: Some("status"), time: T1 };
    let mut status_cfg = deployment_config(9);
    status_cfg["status"] = json!({"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]});
    let out = apply(Some(&live), &status_cfg, &status_mgr, false, &shape, Scope::StatusOnly).unwrap();
    assert_eq!(out["spec"], live["spec"], "spec untouched by the status subresource");
    assert_eq!(out["status"]["replicas"], 1);
    let e = entries(&out).into_iter().find(|e| e["manager"] == "ctrl").unwrap();
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}})
    );
    // Someone else applying status conflicts with the subresource manager by name.
    let other = Manager { name: "other", api_version: "apps/v1", subresource: Some("status"), time: T2 };
    let mut other_cfg = deployment_config(1);
    other_cfg["status"] = json!({"replicas": 2});
    let err = apply(Some(&out), &other_cfg, &other, false, &shape, Scope::StatusOnly).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource \"status\": .status.replicas"
    );

    // Updates: the main resource keeps the old status, the subresource the old rest.
    let mut new = out.clone();
    new["status"]["replicas"] = json!(42);
    new["spec"]["replicas"] = json!(3);
    let main = update(Some(&out), new.clone(), &apps("edit", T2), &shape, Scope::NoStatus).unwrap();
    assert_eq!(main["status"], out["status"]);
    assert_eq!(fields(&main, "edit", "Update"), json!({"f:spec": {"f:replicas": {}}}));
    let st_mgr = Manager { name: "kubelet", api_version: "apps/v1", subresource: Some("status"), time: T2 };
    let st = update(Some(&out), new, &st_mgr, &shape, Scope::StatusOnly).unwrap();
    assert_eq!(st["spec"], out["spec"]);
    assert_eq!(st["status"]["replicas"], 42);
    let e = entries(&st).into_iter().find(|e| e["manager"] == "kubelet").unwrap();
    assert_eq!(
        (e["subresource"].clone(), e["fieldsV1"].clone()),
        (json!("status"), json!({"f:status": {"f:replicas": {}}}))
    );
    assert_eq!(fields(&st, "ctrl", "Apply")["f:status"].get("f:replicas"), None, "taken from the applier");
}

#[test]
fn managed_fields_reset_and_untracked_objects() {
    let mut live = ok_apply(None, &widget(json!({"size": 1})), &mgr("a", T0), false);
    live["metadata"]["uid"] = json!("u1");
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{}]);
    new["spec"]["size"] = json!(2);
    let reset = update(Some(&live), new, &mgr("edit", T1), &TestShape, Scope::All).unwrap();
    assert!(reset.pointer("/metadata/managedFields").is_none());
    assert_eq!(reset["spec"]["size"], 2);
    // An untracked existing object stays untracked through updates...
    let mut next = reset.clone();
    next["spec"]["size"] = json!(3);
    let still = update(Some(&reset), next, &mgr("edit", T1), &TestShape, Scope::All).unwrap();
    assert!(still.pointer("/metadata/managedFields").is_none());
    // ...and an empty list resets too (the real isResetManagedFields).
    let mut empty = live.clone();
    empty["metadata"]["managedFields"] = json!([]);
    let cleared = update(Some(&live), empty, &mgr("edit", T1), &TestShape, Scope::All).unwrap();
    assert!(cleared.pointer("/metadata/managedFields").is_none());
    // The next apply gives every existing field to "before-first-apply" first.
    let err = apply(Some(&still), &widget(json!({"size": 9})), &mgr("a", T2), false, &TestShape, Scope::All)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using example.com/v1: .spec.size"
    );
    let out = ok_apply(Some(&still), &widget(json!({"size": 3})), &mgr("a", T2), false);
    assert_eq!(fields(&out, "a", "Apply"), json!({"f:spec": {"f:size": {}}}));
    assert_eq!(fields(&out, "before-first-apply", "Update"), json!({"f:spec": {".": {}, "f:size": {}}}));
}

#[test]
fn clients_may_rewrite_managed_fields_and_garbage_is_ignored() {
    let mut live = update(
        None,
        widget(json!({"size": 1})),
        &mgr("kubectl-client-side-apply", T0),
        &TestShape,
        Scope::All,
    )
    .unwrap();
    live["metadata"]["uid"] = json!("u1");
    // kubectl's migration: the same fields, now as an Apply entry of "kubectl".
    let mut migrated = live.clone();
    migrated["metadata"]["managedFields"][0]["manager"] = json!("kubectl");
    migrated["metadata"]["managedFields"][0]["operation"] = json!("Apply");
    let out = update(Some(&live), migrated, &mgr("kubectl", T1), &TestShape, Scope::All).unwrap();
    assert_eq!(entries(&out).len(), 1);
    assert_eq!(fields(&out, "kubectl", "Apply"), json!({"f:spec": {".": {}, "f:size": {}}}));
    // Undecodable managedFields from a client fall back to the stored ones.
    let mut bad = live.clone();
    bad["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Delete"}]);
    let kept = update(Some(&live), bad, &mgr("y", T1), &TestShape, Scope::All).unwrap();
    assert_eq!(entries(&kept), entries(&live));
    // Absent managedFields keep the stored ones and track the change.
    let mut plain = live.clone();
    drop_managed_fields(&mut plain);
    plain["spec"]["color"] = json!("red");
    let tracked = update(Some(&live), plain, &mgr("y", T1), &TestShape, Scope::All).unwrap();
    assert_eq!(fields(&tracked, "y", "Update"), json!({"f:spec": {"f:color": {}}}));
    assert_eq!(
        fields(&tracked, "kubectl-client-side-apply", "Update"),
        json!({"f:spec": {".": {}, "f:size": {}}})
    );
}

#[test]
fn updates_move_changed_fields_and_drop_removed_ones() {
    let live = ok_apply(
        None,
        &widget(json!({"items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}], "size": 1})),
        &mgr("a", T0),
        false,
    );
    let mut new = live.clone();
    new["spec"]["items"] = json!([{"name": "a", "v": 1}]);
    new["spec"]["size"] = json!(2);
    let out = update(Some(&live), new, &mgr("u", T1), &TestShape, Scope::All).unwrap();
    assert_eq!(
        fields(&out, "a", "Apply"),
        json!({"f:spec": {"f:items": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:v": {}}}}})
    );
    assert_eq!(fields(&out, "u", "Update"), json!({"f:spec": {"f:size": {}}}));
    // A no-op update later keeps everything, timestamps included.
    let same = update(Some(&out), out.clone(), &mgr("u", T2), &TestShape, Scope::All).unwrap();
    assert_eq!(same, out);
    // A second change by the same updater adds to its entry and bumps its time.
    let mut more = out.clone();
    more["spec"]["color"] = json!("blue");
    let more = update(Some(&out), more, &mgr("u", T2), &TestShape, Scope::All).unwrap();
    assert_eq!(fields(&more, "u", "Update"), json!({"f:spec": {"f:color": {}, "f:size": {}}}));
    assert_eq!(entries(&more)[1]["time"], T2);
}

#[test]
fn update_managers_are_capped_at_ten() {
    let mut live = widget(json!({}));
    let names: Vec<String> = (0..11).map(|i| format!("m{i:02}")).collect();
    let times: Vec<String> = (0..11).map(|i| format!("2024-01-01T00:00:{i:02}Z")).collect();
    for (i, (name, time)) in names.iter().zip(&times).enumerate() {
        let mut new = live.clone();
        new["spec"][format!("f{i}")] = json!(i);
        let m = Manager { name, api_version: CR, subresource: None, time };
        live = update(Some(&live).filter(|_| i > 0), new, &m, &TestShape, Scope::All).unwrap();
        live["metadata"]["uid"] = json!("u");
    }
    let all = entries(&live);
    assert_eq!(all.len(), 10);
    let names: Vec<&str> = all.iter().filter_map(|e| e["manager"].as_str()).collect();
    assert_eq!(names[..2], ["ancient-changes", "m02"], "m00 and m01 were merged, keeping m01's time");
    let ancient = &all[0];
    assert_eq!(ancient["time"], "2024-01-01T00:00:01Z");
    assert_eq!(ancient["fieldsV1"], json!({"f:spec": {".": {}, "f:f0": {}, "f:f1": {}}}));
}

#[test]
fn kubectl_takes_over_from_client_side_apply() {
    let annotation = format!(
        "{}\n",
        json!({"apiVersion": CR, "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 1}})
    );
    let mut obj = widget(json!({"replicas": 1}));
    obj["metadata"]["annotations"] = json!({ LAST_APPLIED: annotation });
    let mut live = update(None, obj, &mgr("kubectl-client-side-apply", T0), &TestShape, Scope::All).unwrap();
    live["metadata"]["uid"] = json!("u1");
    let cfg = widget(json!({"replicas": 2}));
    let err = apply(Some(&live), &cfg, &mgr("someone", T1), false, &TestShape, Scope::All).unwrap_err();
    assert_eq!(conflicts_of(err).len(), 1);
    let out = ok_apply(Some(&live), &cfg, &mgr("kubectl", T1), false);
    assert_eq!(out["spec"]["replicas"], 2);
    assert_eq!(out["metadata"]["annotations"][LAST_APPLIED], json!(format!("{}\n", go_json(&cfg))));
    assert_eq!(fields(&out, "kubectl", "Apply"), json!({"f:spec": {"f:replicas": {}}}));
}

#[test]
fn malformed_requests_are_refused_like_the_real_server() {
    let shape = builtin_shape("Deployment");
    let mut cfg = deployment_config(1);
    cfg["metadata"]["managedFields"] = json!([]);
    let err = apply(None, &cfg, &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
    assert_eq!((err.code(), err.to_string()), (400, "metadata.managedFields must be nil".into()));

    let err = apply(None, &json!([1]), &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
    assert_eq!(err.code(), 400);
    assert!(err.to_string().starts_with("error decoding YAML: "));

    let err = apply(None, &widget(json!({})), &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
    assert_eq!(err.to_string(), "invalid object type: example.com/v1, Kind=Widget");

    let mut cfg = deployment_config(1);
    cfg["spec"]["template"]["spec"]["containers"] = json!([{"image": "x"}]);
    let err = apply(None, &cfg, &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
    assert_eq!((err.code(), err.reason()), (500, ""));
    assert_eq!(
        err.to_string(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys has an element that omits key field \"name\" (and doesn't have default value)"
    );
    cfg["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "a", "env": [{"name": "X"}, {"name": "X"}]}, {"name": "a"}, null]);
    let err = apply(None, &cfg, &apps("m", T0), false, &shape, Scope::NoStatus).unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n  .spec.template.spec.containers[name=\"a\"].env: duplicate entries for key [name=\"X\"]\n  .spec.template.spec.containers: duplicate entries for key [name=\"a\"]\n  .spec.template.spec.containers: element 2: associative list with keys may not have a null element"
    );

    let mut live =
        apply(None, &deployment_config(1), &apps("m", T0), false, &shape, Scope::NoStatus).unwrap();
    live["metadata"]["managedFields"][0]["fieldsType"] = json!("FieldsV2");
    let err = apply(Some(&live), &deployment_config(1), &apps("m", T1), false, &shape, Scope::NoStatus)
        .unwrap_err();
    assert_eq!(err.code(), 500);
    assert_eq!(
        err.to_string(),
        "failed to decode managed fields: invalid fieldsType \"FieldsV2\" in managed fields entry 0"
    );
    assert!(matches!(
        update(None, json!("x"), &apps("m", T0), &shape, Scope::All),
        Err(SsaError::InvalidBody(_))
    ));
}

#[test]
fn fields_v1_round_trips_and_paths_print_like_the_real_ones() {
    let raw = json!({
        "f:spec": {".": {}, "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
                   "f:tags": {"v:\"a<b\"": {}}, "i:3": {}, "x:unknown": {}}
    });
    let set = Set::from_json(&raw).unwrap();
    let mut expected = raw.clone();
    expected["f:spec"].as_object_mut().unwrap().remove("x:unknown");
    let out = set.to_json();
    assert_eq!(out["f:spec"]["f:tags"], json!({"v:\"a\\u003cb\"": {}}), "Go escapes < in keys");
    expected["f:spec"]["f:tags"] = json!({"v:\"a\\u003cb\"": {}});
    assert_eq!(out, expected);
    let paths: Vec<String> = set.paths().iter().map(|p| path_string(p)).collect();
    assert_eq!(
        paths,
        // Members of a level come before its children, as the real iteration does.
        vec![
            ".spec",
            ".spec[3]",
            ".spec.ports[port=80,protocol=\"TCP\"]",
            ".spec.ports[port=80,protocol=\"TCP\"].port",
            ".spec.tags[=\"a<b\"]"
        ]
    );
    assert!(Set::from_json(&json!({"f:a": "x"})).is_err());
    assert!(Set::from_json(&json!({"k:{bad": {}})).is_err());
}

#[test]
fn times_sort_numerically_and_parse_offsets() {
    assert_eq!(unix_seconds(Some("1970-01-01T00:00:00Z")), 0);
    assert_eq!(unix_seconds(Some("2024-01-01T00:00:00Z")), 1_704_067_200);
    assert_eq!(unix_seconds(Some("2024-01-01T01:00:00+01:00")), 1_704_067_200);
    assert_eq!(unix_seconds(Some("garbage")), 0);
    assert_eq!(unix_seconds(None), 0);
}
