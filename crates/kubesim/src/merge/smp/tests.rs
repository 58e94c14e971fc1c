#![allow(clippy::unwrap_used)]

use super::*;
use crate::merge::shape::builtin_shape;
use serde_json::json;

fn deploy(spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"template": {"spec": spec}}})
}

fn apply(original: &Value, patch: Value) -> Value {
    strategic_merge(original, &patch, &builtin_shape("Deployment")).unwrap()
}

fn fails(original: &Value, patch: Value) -> SmpError {
    strategic_merge(original, &patch, &builtin_shape("Deployment")).unwrap_err()
}

fn pod_spec(v: &Value) -> &Value {
    &v["spec"]["template"]["spec"]
}

fn names(list: &Value, key: &str) -> Vec<Value> {
    list.as_array().unwrap().iter().map(|i| i[key].clone()).collect()
}

fn has_directive(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| is_directive_key(k) || has_directive(v)),
        Value::Array(a) => a.iter().any(has_directive),
        _ => false,
    }
}

fn two_containers() -> Value {
    deploy(json!({"containers": [
        {"name": "app", "image": "app:1",
         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]},
        {"name": "sidecar", "image": "proxy:1"}
    ]}))
}

#[test]
fn containers_merge_by_name_with_env_and_ports() {
    let out = apply(
        &two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [{
            "name": "app", "image": "app:2",
            "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
            "ports": [{"containerPort": 443, "name": "https"}]
        }]}}}}),
    );
    let containers = &pod_spec(&out)["containers"];
    assert_eq!(names(containers, "name"), [json!("app"), json!("sidecar")]);
    let app = &containers[0];
    assert_eq!(app["image"], "app:2");
    // B merged in place, C (new) follows the patch's B, A (live only) keeps its lead.
    assert_eq!(
        app["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "20"}, {"name": "C", "value": "3"}])
    );
    assert_eq!(
        app["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"},
               {"containerPort": 443, "protocol": "TCP", "name": "https"}])
    );
    assert_eq!(containers[1], json!({"name": "sidecar", "image": "proxy:1"}));
    assert_eq!(out["metadata"]["name"], "web");
}

#[test]
fn new_container_is_placed_after_the_patch_item_before_it() {
    let orig = two_containers();
    // A new item with no patch item before it goes first (as in the kubectl patch docs,
    // where the added redis container is listed before nginx).
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "extra", "image": "x:1"}]}}}}),
    );
    assert_eq!(
        names(&pod_spec(&out)["containers"], "name"),
        [json!("extra"), json!("app"), json!("sidecar")]
    );
    // Listed after an existing item, it lands right behind it, ahead of the live-only
    // items that follow.
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "app:2"}, {"name": "extra", "image": "x:1"}]}}}}),
    );
    assert_eq!(
        names(&pod_spec(&out)["containers"], "name"),
        [json!("app"), json!("extra"), json!("sidecar")]
    );
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "sidecar"}, {"name": "extra", "image": "x:1"}]}}}}),
    );
    assert_eq!(
        names(&pod_spec(&out)["containers"], "name"),
        [json!("app"), json!("sidecar"), json!("extra")]
    );
}

#[test]
fn delete_container_with_patch_delete() {
    let out = apply(
        &two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}),
    );
    let containers = &pod_spec(&out)["containers"];
    assert_eq!(names(containers, "name"), [json!("app")]);
    assert!(!has_directive(&out));
    // Deleting an absent item is a no-op.
    let again = apply(
        &out,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}),
    );
    assert_eq!(again, out);
}

#[test]
fn set_element_order_reorders_live_and_patch_items() {
    let orig = deploy(json!({"containers": [
        {"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "c", "image": "c"}]}));
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
            "containers": [{"name": "a", "image": "a2"}]}}}}),
    );
    let containers = &pod_spec(&out)["containers"];
    assert_eq!(names(containers, "name"), [json!("c"), json!("a"), json!("b")]);
    assert_eq!(containers[1]["image"], "a2");
    assert!(!has_directive(&out));
    // Items the order list does not name keep their live position relative to it.
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}]}}}}),
    );
    assert_eq!(names(&pod_spec(&out)["containers"], "name"), [json!("b"), json!("c"), json!("a")]);
    // A patch list out of the order list's order is rejected.
    let err = fails(
        &orig,
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "b"}, {"name": "a"}]}}}}),
    );
    assert_eq!(
        err.to_string(),
        "The order in patch list:\n[map[name:b] map[name:a]]\n doesn't match $setElementOrder list:\n[map[name:a] map[name:b]]\n"
    );
    assert_eq!(err.code(), 500);
}

#[test]
fn set_element_order_on_primitives_and_new_lists() {
    let orig = json!({"metadata": {"name": "x", "finalizers": ["a", "b"]}});
    let out = apply(
        &orig,
        json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "b", "a"]));
    // A list the live object lacks is taken from the patch, minus `$patch` items.
    let orig = deploy(json!({}));
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "b"}, {"name": "a"}, {"name": "z", "$patch": "delete"}]}}}}),
    );
    assert_eq!(names(&pod_spec(&out)["containers"], "name"), [json!("b"), json!("a")]);
    let err = fails(&json!({"spec": {"x": []}}), json!({"spec": {"$setElementOrder/x": []}}));
    assert_eq!(err, SmpError::NoElements);
}

#[test]
fn kubectl_apply_style_patch() {
    // The shape of patch `kubectl apply` sends when a container is dropped and an env
    // var changes.
    let out = apply(
        &two_containers(),
        json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "app"}],
            "containers": [
                {"name": "app", "$setElementOrder/env": [{"name": "B"}, {"name": "A"}],
                 "env": [{"name": "B", "value": "3"}]},
                {"name": "sidecar", "$patch": "delete"}]}}}}),
    );
    let containers = &pod_spec(&out)["containers"];
    assert_eq!(names(containers, "name"), [json!("app")]);
    assert_eq!(containers[0]["env"], json!([{"name": "B", "value": "3"}, {"name": "A", "value": "1"}]));
    assert!(!has_directive(&out));
}

#[test]
fn replace_list_directive_wins_over_deletes() {
    let out = apply(
        &two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "$patch": "delete"}, {"$patch": "replace"}, {"name": "n"}]}}}}),
    );
    assert_eq!(pod_spec(&out)["containers"], json!([{"name": "n"}]));
    let svc = json!({"spec": {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 81}]}});
    let out = strategic_merge(
        &svc,
        &json!({"spec": {"ports": [{"port": 81, "targetPort": 8081}]}}),
        &builtin_shape("Service"),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 81, "targetPort": 8081}])
    );
}

#[test]
fn finalizers_union_and_delete_from_primitive_list() {
    let orig = json!({"metadata": {"name": "x", "finalizers": ["a", "b"]}});
    let out = apply(&orig, json!({"metadata": {"finalizers": ["a", "c"]}}));
    // Union without duplicates; the new value follows the patch's "a".
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "c", "b"]));
    let out = apply(&out, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}}));
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "b"]));
    assert!(!has_directive(&out));
    // Adds apply before deletions in the same patch.
    let out = apply(
        &orig,
        json!({"metadata": {"finalizers": ["d"], "$deleteFromPrimitiveList/finalizers": ["b", "d"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["a"]));
    // Deleting from a list the object does not have changes nothing (fixed upstream in #105421).
    let bare = json!({"metadata": {"name": "x"}});
    assert_eq!(apply(&bare, json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})), bare);
    // The deletion list works on any primitive list, whatever its strategy (#110472).
    let orig = deploy(json!({"containers": [{"name": "app", "args": ["--debug", "--x"]}]}));
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "app", "$deleteFromPrimitiveList/args": ["--debug"]}]}}}}),
    );
    assert_eq!(pod_spec(&out)["containers"][0]["args"], json!(["--x"]));
}

#[test]
fn null_removes_a_label_and_null_for_missing_key_is_ignored() {
    let orig = json!({"metadata": {"name": "x", "labels": {"app": "web", "tier": "fe"}}});
    let out = apply(&orig, json!({"metadata": {"labels": {"tier": null, "gone": null, "new": "1"}}}));
    assert_eq!(out["metadata"]["labels"], json!({"app": "web", "new": "1"}));
    let out = apply(&orig, json!({"metadata": {"labels": null}}));
    assert_eq!(out["metadata"], json!({"name": "x"}));
}

#[test]
fn retain_keys_clears_unlisted_fields() {
    let orig = json!({"spec": {"strategy": {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxSurge": 1}}}});
    let out = apply(
        &orig,
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null}}}),
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    let out = apply(&orig, json!({"spec": {"strategy": {"$retainKeys": ["rollingUpdate"]}}}));
    assert_eq!(out["spec"]["strategy"], json!({"rollingUpdate": {"maxSurge": 1}}));
    let err = fails(&orig, json!({"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}));
    assert_eq!(err, SmpError::BadRetainKeysFormat);
    assert_eq!((err.code(), err.reason()), (400, "BadRequest"));
    let err = fails(&orig, json!({"spec": {"strategy": {"$retainKeys": "type"}}}));
    assert_eq!(err.to_string(), "invalid patch format of retainKeys");
}

#[test]
fn patch_replace_on_a_map_and_on_a_list() {
    let orig = json!({"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}});
    let out = apply(&orig, json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}));
    assert_eq!(out["metadata"]["labels"], json!({"c": "3"}));

    let out = apply(
        &two_containers(),
        json!({"spec": {"template": {"spec": {"containers": [
            {"name": "only", "image": "o:1"}, {"$patch": "replace"}]}}}}),
    );
    assert_eq!(pod_spec(&out)["containers"], json!([{"name": "only", "image": "o:1"}]));

    // On the whole object.
    let out = apply(&orig, json!({"$patch": "replace", "metadata": {"name": "y"}}));
    assert_eq!(out, json!({"metadata": {"name": "y"}}));
}

#[test]
fn patch_delete_on_a_map_empties_it() {
    let orig = json!({"metadata": {"name": "x", "labels": {"a": "1"}}});
    let out = apply(&orig, json!({"metadata": {"labels": {"$patch": "delete"}}}));
    assert_eq!(out["metadata"]["labels"], json!({}));
    // For a map the object lacks, the patch value is dropped altogether.
    let bare = json!({"metadata": {"name": "x"}});
    assert_eq!(apply(&bare, json!({"metadata": {"labels": {"$patch": "delete"}}})), bare);
}

#[test]
fn owner_references_merge_by_uid() {
    let orig = json!({"metadata": {"name": "x", "ownerReferences": [
        {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "u1"},
        {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "u2"}]}});
    let out = apply(
        &orig,
        json!({"metadata": {"ownerReferences": [
            {"uid": "u2", "controller": true},
            {"apiVersion": "v1", "kind": "C", "name": "c", "uid": "u3"}]}}),
    );
    let refs = &out["metadata"]["ownerReferences"];
    assert_eq!(names(refs, "uid"), [json!("u1"), json!("u2"), json!("u3")]);
    assert_eq!(refs[1]["controller"], true);
    assert_eq!(refs[1]["name"], "b");
}

#[test]
fn replace_list_is_replaced_whole() {
    let orig = deploy(json!({"tolerations": [
        {"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}));
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {"tolerations": [{"key": "c", "operator": "Exists", "$patch": "x"}]}}}}),
    );
    assert_eq!(pod_spec(&out)["tolerations"], json!([{"key": "c", "operator": "Exists"}]));
}

#[test]
fn nested_lists_inside_merged_items() {
    let orig = deploy(json!({"containers": [{
        "name": "app", "args": ["a", "b"],
        "volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "tmp", "mountPath": "/tmp"}],
        "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}));
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {"containers": [{
            "name": "app", "args": ["c"],
            "volumeMounts": [{"mountPath": "/tmp", "readOnly": true}, {"mountPath": "/data", "$patch": "delete"}],
            "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"key": "k2"}}}]}]}}}}),
    );
    let app = &pod_spec(&out)["containers"][0];
    assert_eq!(app["args"], json!(["c"]));
    assert_eq!(app["volumeMounts"], json!([{"name": "tmp", "mountPath": "/tmp", "readOnly": true}]));
    assert_eq!(app["env"][0]["valueFrom"]["secretKeyRef"], json!({"name": "s", "key": "k2"}));
    assert!(!has_directive(&out));
}

#[test]
fn added_values_lose_directives_and_nulls() {
    let orig = deploy(json!({"containers": [{"name": "app"}]}));
    let out = apply(
        &orig,
        json!({"spec": {"template": {"spec": {
            "volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "$patch": "delete"}],
            "securityContext": {"runAsUser": 1, "fsGroup": null, "$retainKeys": ["runAsUser"]},
            "containers": [{"name": "new", "env": [{"name": "E", "$patch": "delete"}],
                            "$setElementOrder/env": [{"name": "E"}]}]}}}}),
    );
    let spec = pod_spec(&out);
    assert_eq!(spec["volumes"], json!([{"name": "v", "emptyDir": {}}]));
    assert_eq!(spec["securityContext"], json!({"runAsUser": 1}));
    // Appended list items are taken raw by Go; only their directive keys go.
    assert_eq!(spec["containers"][0], json!({"name": "new", "env": [{"name": "E"}]}));
    assert!(!has_directive(&out));
}

#[test]
fn scalars_and_type_changes_replace() {
    let orig = json!({"spec": {"replicas": 1, "paused": false, "selector": {"matchLabels": {"a": "b"}}}});
    let out = apply(&orig, json!({"spec": {"replicas": 3, "paused": true, "selector": "x"}}));
    assert_eq!(out["spec"], json!({"replicas": 3, "paused": true, "selector": "x"}));
}

#[test]
fn null_or_empty_patch_changes_nothing() {
    let orig = two_containers();
    assert_eq!(apply(&orig, Value::Null), orig);
    assert_eq!(apply(&orig, json!({})), orig);
}

#[test]
fn unknown_patch_directives_are_rejected() {
    let orig = json!({"metadata": {"name": "x", "labels": {"a": "1"}}});
    let err = fails(&orig, json!({"metadata": {"labels": {"$patch": "merge"}}}));
    assert_eq!(err.to_string(), "unknown patch type: merge in map: map[$patch:merge]");
    assert_eq!((err.code(), err.reason()), (500, ""));
    let err = fails(&orig, json!({"metadata": {"labels": {"$patch": true, "b": 2}}}));
    assert_eq!(err.to_string(), "unknown patch type: %!s(bool=true) in map: map[$patch:true b:2]");

    let c = two_containers();
    let err = fails(
        &c,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "bogus"}]}}}}),
    );
    assert_eq!(err.to_string(), "unknown patch type: bogus in map: map[$patch:bogus name:app]");
    let err = fails(
        &c,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}}}),
    );
    assert_eq!(err, SmpError::MergeDirectiveInList);
    assert_eq!(err.to_string(), "merging lists cannot yet be specified in the patch");
}

#[test]
fn malformed_inputs_are_rejected_with_real_messages() {
    let c = two_containers();
    let err = fails(&c, json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}));
    assert_eq!(err.to_string(), "map: map[image:x] does not contain declared merge key: name");
    let err = fails(&c, json!({"spec": {"template": {"spec": {"containers": [{"$patch": "delete"}]}}}}));
    assert_eq!(err.to_string(), "map: map[$patch:delete] does not contain declared merge key: name");
    let err = fails(&c, json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}));
    assert_eq!((err.code(), err.to_string().as_str()), (400, "invalid patch format of primitive list"));
    let err = fails(&c, json!({"metadata": {"$setElementOrderX/finalizers": ["a"]}}));
    assert_eq!(err.to_string(), "invalid patch format of setElementOrder list");
    let err = fails(&c, json!({"metadata": {"$setElementOrder/finalizers": "a"}}));
    assert_eq!(err.to_string(), "expected a []interface {}, but received a string");
    let err = fails(&c, json!({"spec": {"template": {"spec": {"containers": ["app"]}}}}));
    assert_eq!(
        err.to_string(),
        "list element types are not identical: [[map[env:[map[name:A value:1] map[name:B value:2]] image:app:1 name:app ports:[map[containerPort:80 protocol:TCP] map[containerPort:443 protocol:TCP]]] map[image:proxy:1 name:sidecar]] [app]]"
    );
    let orig = json!({"metadata": {"finalizers": []}});
    let err = fails(&orig, json!({"metadata": {"finalizers": [["a"]]}}));
    assert_eq!(err, SmpError::ListOfLists);
    assert_eq!((err.code(), err.reason()), (422, "Invalid"));
    assert_eq!(err.status_message(), "the server rejected our request due to an error in our request");
    let err = fails(&orig, json!({"metadata": {"finalizers": [{"a": 1}]}}));
    assert_eq!(err.to_string(), "cannot merge lists without merge key for string");
    let err = fails(&c, json!([1]));
    assert_eq!(err.to_string(), "json: cannot unmarshal array into Go value of type map[string]interface {}");
    assert_eq!(err.code(), 400);
    assert_eq!(fails(&json!([]), json!({})), SmpError::BadJsonDoc);
}

#[test]
fn directive_keys_are_recognised() {
    for k in ["$patch", "$retainKeys", "$setElementOrder/containers", "$deleteFromPrimitiveList/finalizers"] {
        assert!(is_directive_key(k), "{k}");
    }
    for k in ["patch", "$foo", "name", "$retainKeysX"] {
        assert!(!is_directive_key(k), "{k}");
    }
}

#[test]
fn go_formatting_matches_fmt() {
    let cases = [
        (1.5, "1.5"),
        (1.0, "1"),
        (100_000.0, "100000"),
        (1_000_000.0, "1e+06"),
        (123_456_789.0, "1.23456789e+08"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.25, "-2.25"),
    ];
    for (f, s) in cases {
        assert_eq!(go_float(f), s);
    }
    assert_eq!(go_v(&json!({"b": [1, null], "a": {"c": 2.5}})), "map[a:map[c:2.5] b:[1 <nil>]]");
    assert_eq!(go_s(&json!(3)), "%!s(int64=3)");
    assert_eq!(go_s(&Value::Null), "%!s(<nil>)");
}
