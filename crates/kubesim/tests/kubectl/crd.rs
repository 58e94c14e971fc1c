//! CustomResourceDefinitions through kubectl: establishment and printer columns, schema
//! validation and its 422s, defaults and CEL rules refused or evaluated as the API server
//! does, unknown fields, the status subresource, explain, and deletion of a CRD's objects.

use serde_json::json;

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn crd_established_and_printer_columns() {
    let env = Env::start().await;
    install_widgets(&env);
    let crd = env.get(&["crd", "widgets.example.com"]).expect("crd");
    let conds = crd["status"]["conditions"].as_array().expect("conditions");
    assert!(conds.iter().any(|c| c["type"] == "Established" && c["status"] == "True"), "{crd}");
    assert!(conds.iter().any(|c| c["type"] == "NamesAccepted" && c["status"] == "True"), "{crd}");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");

    env.apply(&widget("small", "  size: 2\n  color: red\n"), &[]);
    env.apply(&widget("big", "  size: 9\n"), &[]);
    assert_eq!(env.names(&["widgets"]), ["big", "small"]);
    assert_eq!(env.names(&["wd"]), ["big", "small"], "short name");
    assert_eq!(env.names(&["widget.example.com"]), ["big", "small"], "resource.group");

    let table = env.ok(&["get", "widgets"]);
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "SIZE", "COLOR", "AGE"], "{table}");
    assert_eq!(&lines[1][..2], ["big", "9"], "{table}");
    assert_eq!(lines[1].len(), 3, "empty color is blank: {table}");
    assert_eq!(&lines[2][..3], ["small", "2", "red"], "{table}");
    assert!(lines[2][3].ends_with('s'), "age like 0s: {table}");

    let wide = env.ok(&["get", "widget", "small", "--no-headers"]);
    assert!(wide.split_whitespace().collect::<Vec<_>>().starts_with(&["small", "2", "red"]), "{wide}");

    // The CRD's resource shows up in discovery.
    let resources = env.ok(&["api-resources", "--api-group=example.com"]);
    let row = resources.lines().find(|l| l.starts_with("widgets")).expect("widgets row");
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["widgets", "wd", "example.com/v1", "true", "Widget"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_schema_violation_is_422_naming_the_field() {
    let env = Env::start().await;
    install_widgets(&env);
    let out = env.run_stdin(&["apply", "-f", "-"], &widget("bad", "  size: twenty\n"));
    assert!(!out.ok());
    assert!(out.stderr.contains(r#"The Widget "bad" is invalid: "#), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            r#"spec.size: Invalid value: "string": spec.size in body must be of type integer: "string""#
        ),
        "{}",
        out.stderr
    );

    let out = env.run_stdin(&["apply", "-f", "-"], &widget("bad", "  size: 20\n  color: green\n"));
    assert!(!out.ok());
    assert!(out.stderr.contains(r#"The Widget "bad" is invalid: "#), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(r#"spec.color: Unsupported value: "green": supported values: "red", "blue""#),
        "{}",
        out.stderr
    );

    let out = env.run_stdin(&["apply", "-f", "-"], &widget("bad", "  color: red\n"));
    assert!(!out.ok());
    assert!(
        out.stderr.contains(r#"The Widget "bad" is invalid: spec.size: Required value"#),
        "{}",
        out.stderr
    );

    assert!(env.get(&["widget", "bad"]).is_none(), "nothing stored");

    // An update that breaks the schema is rejected too, and the object is unchanged.
    env.apply(&widget("good", "  size: 3\n"), &[]);
    let out = env.run(&["patch", "widget", "good", "--type", "merge", "-p", r#"{"spec":{"size":0}}"#]);
    assert!(!out.ok());
    assert!(out.stderr.contains(r#"The Widget "good" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"#), "{}", out.stderr);
    assert_eq!(env.get(&["widget", "good"]).unwrap()["spec"]["size"], 3);
}

/// A CRD of Gadgets whose `spec` carries `x-kubernetes-validations`; `{rules}` is the
/// YAML list of rules, indented for the `spec` schema.
fn gadget_crd(spec_extra: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {{kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
{spec_extra}
"#
    )
}

fn gadget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\nspec: {spec}\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_with_a_bad_default_or_an_uncompilable_rule_is_refused() {
    let env = Env::start().await;
    // A default that does not validate against its own schema: the default is validated
    // by kube-openapi with an empty root name (apiserver/schema/defaulting/validation.go),
    // hence " in body".
    let crd = gadget_crd(
        "            properties:\n              size: {type: integer, minimum: 1, default: 0}\n              mode: {type: string, enum: [a, b], default: c}",
    );
    let err = env.run_stdin(&["apply", "-f", "-"], &crd).stderr;
    assert!(
        err.contains(
            r#"The CustomResourceDefinition "gadgets.example.com" is invalid: 
* spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[mode].default: Unsupported value: "c": supported values: "a", "b"
* spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].default: Invalid value: 0:  in body should be greater than or equal to 1"#
        ),
        "{err}"
    );
    // A rule that does not parse: the field and value as ValidateCustomResourceDefinitionOpenAPISchema
    // reports them (apis/apiextensions/validation/validation.go) and cel-go's issue text
    // after "compilation failed: " (apiserver/schema/cel/compilation.go).
    let crd = gadget_crd("            x-kubernetes-validations:\n            - rule: self.size >");
    let err = env.run_stdin(&["apply", "-f", "-"], &crd).stderr;
    assert!(
        err.contains(
            "The CustomResourceDefinition \"gadgets.example.com\" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: \
             Invalid value: apiextensions.ValidationRule{Rule:\"self.size >\", Message:\"\", MessageExpression:\"\", \
             Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: \
             compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.size >\n | ...........^"
        ),
        "{err}"
    );
    assert!(env.get(&["crd", "gadgets.example.com"]).is_none(), "nothing stored");
}

#[tokio::test(flavor = "multi_thread")]
async fn cel_rules_run_on_create_and_update() {
    let env = Env::start().await;
    let crd = gadget_crd(
        r#"            x-kubernetes-validations:
            - rule: self.min <= self.max
              messageExpression: "'min ' + string(self.min) + ' is above max ' + string(self.max)"
              fieldPath: .min
            - rule: self.mode == oldSelf.mode
              message: mode is immutable
              reason: FieldValueForbidden
            properties:
              min: {type: integer}
              max: {type: integer, x-kubernetes-validations: [{rule: self <= 100}]}
              mode: {type: string}"#,
    );
    env.apply(&crd, &[]);
    env.ok(&["wait", "--for=condition=established", "crd/gadgets.example.com", "--timeout=10s"]);

    // Messages as cel/validation.go words them: the rule's field (or fieldPath) with
    // Invalid value: "<schema type>" and the messageExpression, message, or
    // "failed rule: <rule>"; the reason picks the cause type. A node's own rules run
    // before those of its fields.
    let err = env.run_stdin(&["apply", "-f", "-"], &gadget("g", "{min: 500, max: 300, mode: a}")).stderr;
    assert!(
        err.contains(
            r#"The Gadget "g" is invalid: 
* spec.min: Invalid value: "object": min 500 is above max 300
* spec.max: Invalid value: "integer": failed rule: self <= 100"#
        ),
        "{err}"
    );
    // A schema error (here a type error) blocks the rules (registry/customresource/strategy.go).
    let err = env.run_stdin(&["apply", "-f", "-"], &gadget("g", "{min: x, max: 1, mode: a}")).stderr;
    assert!(
        err.contains(
            r#"* <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
        ),
        "{err}"
    );
    assert!(env.get(&["gadget", "g"]).is_none(), "nothing stored");

    // The transition rule does not run on create, and runs on update.
    env.apply(&gadget("g", "{min: 1, max: 3, mode: a}"), &[]);
    let err = env.fails(&["patch", "gadget", "g", "--type", "merge", "-p", r#"{"spec":{"mode":"b"}}"#]);
    assert!(err.contains(r#"The Gadget "g" is invalid: spec: Forbidden: mode is immutable"#), "{err}");
    let err = env.fails(&["patch", "gadget", "g", "--type", "merge", "-p", r#"{"spec":{"min":4}}"#]);
    assert!(
        err.contains(r#"The Gadget "g" is invalid: spec.min: Invalid value: "object": min 4 is above max 3"#),
        "{err}"
    );
    env.ok(&["patch", "gadget", "g", "--type", "merge", "-p", r#"{"spec":{"max":9}}"#]);
    assert_eq!(env.get(&["gadget", "g"]).unwrap()["spec"]["max"], 9);
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_unknown_fields_warn_or_fail() {
    let env = Env::start().await;
    install_widgets(&env);
    let out = env.apply(&widget("w1", "  size: 1\n  bogus: x\n"), &["--validate=warn"]);
    assert!(out.stderr.contains(r#"Warning: unknown field "spec.bogus""#), "{}", out.stderr);
    let w = env.get(&["widget", "w1"]).expect("created with warning");
    assert_eq!(w["spec"], json!({"size": 1}), "unknown field pruned");

    let out = env.apply(&widget("w2", "  size: 1\n  bogus: x\n"), &["--validate=false"]);
    assert!(!out.stderr.contains("Warning"), "Ignore: silent: {}", out.stderr);
    assert_eq!(env.get(&["widget", "w2"]).unwrap()["spec"], json!({"size": 1}));

    // kubectl's default is --validate=strict.
    for validate in ["--validate=strict", "--validate=true"] {
        let out = env
            .run_stdin(&["apply", validate, "-f", "-"], &widget("w", "  size: 1\n  bogus: x\n  more: z\n"));
        assert!(!out.ok(), "{validate}");
        assert!(
            out.stderr.contains(
                r#"Error from server (BadRequest): error when creating "STDIN": Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.bogus", unknown field "spec.more""#
            ),
            "{validate}: {}",
            out.stderr
        );
        assert!(env.get(&["widget", "w"]).is_none());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_crd() {
    let env = Env::start().await;
    install_widgets(&env);
    let out = env.ok(&["explain", "widgets.spec"]);
    assert!(out.contains("KIND:       Widget"), "{out}");
    assert!(out.contains("FIELD: spec <Object>"), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["size", "<integer>", "-required-"])), "{out}");
    assert!(out.lines().any(|l| l.split_whitespace().eq(["color", "<string>"])), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_status_subresource_and_generation() {
    let env = Env::start().await;
    install_widgets(&env);
    env.apply(&widget("w", "  size: 1\n"), &[]);
    let w = env.get(&["widget", "w"]).unwrap();
    assert_eq!(w["metadata"]["generation"], 1);

    // Status only changes through the subresource, and does not bump generation.
    env.ok(&[
        "patch",
        "widget",
        "w",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true},"spec":{"size":2}}"#,
    ]);
    let w = env.get(&["widget", "w"]).unwrap();
    assert_eq!(w["spec"]["size"], 2);
    assert!(
        w.get("status").is_none_or(|s| s.get("ready").is_none()),
        "status ignored on the main resource: {w}"
    );
    assert_eq!(w["metadata"]["generation"], 2);
    let out = env.ok(&[
        "patch",
        "widget",
        "w",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"ready":true},"spec":{"size":5}}"#,
    ]);
    assert!(out.contains("widget.example.com/w patched"), "{out}");
    let w = env.get(&["widget", "w"]).unwrap();
    assert_eq!(w["status"]["ready"], true);
    assert_eq!(w["spec"]["size"], 2, "spec ignored on the status subresource");
    assert_eq!(w["metadata"]["generation"], 2);
    let status = env.json(&["get", "widget", "w", "--subresource=status"]);
    assert_eq!(status["status"]["ready"], true);
    // The status write is recorded as its own managedFields entry.
    let w = env.get(&["widget", "w", "--show-managed-fields"]).unwrap();
    let entries = w["metadata"]["managedFields"].as_array().expect("managedFields");
    let status_entry =
        entries.iter().find(|e| e["fieldsV1"].get("f:status").is_some()).expect("status entry");
    assert_eq!(status_entry["manager"], "kubectl-patch", "{w}");
    assert_eq!(status_entry["subresource"], "status", "{status_entry}");
}

#[tokio::test(flavor = "multi_thread")]
async fn crd_delete_removes_custom_resources() {
    let env = Env::start().await;
    install_widgets(&env);
    env.apply(&widget("w", "  size: 1\n"), &[]);
    let out = env.ok(&["delete", "crd", "widgets.example.com"]);
    assert!(
        out.contains(r#"customresourcedefinition.apiextensions.k8s.io "widgets.example.com" deleted"#),
        "{out}"
    );
    env.wait_gone(&["crd", "widgets.example.com"]).await;
    let groups = env.ok(&["get", "--raw", "/apis"]);
    assert!(!groups.contains("example.com"), "{groups}");
    let err = env.fails(&["get", "widgets"]);
    assert!(err.contains("the server could not find the requested resource"), "{err}");
    // Recreated, it starts empty.
    install_widgets(&env);
    assert!(env.names(&["widgets"]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_whose_schema_has_the_wrong_types_is_refused_as_the_decoder_words_it() {
    let env = Env::start().await;
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.x.io}\n\
        spec:\n  group: x.io\n  scope: Namespaced\n  names: {kind: Thing, plural: things, singular: thing}\n  \
        versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        \
        type: object\n        required: [false]\n";
    let out = env.run_stdin(&["apply", "-f", "-"], crd);
    assert!(!out.ok());
    assert!(
        out.stderr.contains(
            "CustomResourceDefinition in version \"v1\" cannot be handled as a CustomResourceDefinition: json: cannot \
             unmarshal bool into Go struct field JSONSchemaProps.spec.versions.schema.openAPIV3Schema.required of type string"
        ),
        "{}",
        out.stderr
    );
    assert!(!env.run(&["get", "crd", "things.x.io"]).ok(), "nothing was stored");
}

/// A CronTab-like kind whose `jobTemplate.spec` is free-form (the cronjob example's
/// `z.any()`): `x-kubernetes-preserve-unknown-fields`, no type, not nullable.
const CRONTAB_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              schedule: {type: string}
              jobTemplate:
                type: object
                properties:
                  spec: {x-kubernetes-preserve-unknown-fields: true}
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_emptied_applied_map_reads_back_without_its_null_and_annotate_keeps_the_generation() {
    let env = Env::start().await;
    env.apply(CRONTAB_CRD, &[]);
    env.ok(&["wait", "--for=condition=Established", "crd/crontabs.example.com"]);
    let tab = |job_spec: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: CronTab\nmetadata:\n  name: t\nspec:\n  schedule: '* * * * *'\n  \
             jobTemplate:\n    spec: {job_spec}\n"
        )
    };
    env.apply(&tab("{template: {spec: {containers: [{name: c, image: busybox}]}}}"), &["--server-side"]);
    // Applied as {}: structured-merge-diff prunes what the manager applied inside and
    // leaves a null, which the real server's storage drops when it reads the object back.
    env.apply(&tab("{}"), &["--server-side"]);
    let t = env.get(&["crontab", "t", "--show-managed-fields"]).unwrap();
    assert_eq!(t["spec"]["jobTemplate"], json!({}), "{t}");
    assert_eq!(t["metadata"]["generation"], 2);
    let applied = t["metadata"]["managedFields"].as_array().expect("managedFields")[0]["fieldsV1"].clone();
    assert_eq!(applied["f:spec"]["f:jobTemplate"], json!({"f:spec": {}}), "the applier still owns it");

    // A metadata-only write changes neither the spec nor the generation.
    env.ok(&["annotate", "crontab", "t", "a=b"]);
    let annotated = env.get(&["crontab", "t"]).unwrap();
    assert_eq!(annotated["metadata"]["annotations"]["a"], "b");
    assert_eq!(annotated["spec"], t["spec"]);
    assert_eq!(annotated["metadata"]["generation"], 2);
    // Nor does a label, or an empty merge patch.
    env.ok(&["label", "crontab", "t", "l=v"]);
    env.ok(&["patch", "crontab", "t", "--type", "merge", "-p", "{}"]);
    let after = env.get(&["crontab", "t"]).unwrap();
    assert_eq!(
        (after["spec"].clone(), after["metadata"]["generation"].clone()),
        (t["spec"].clone(), json!(2))
    );
}
