use std::path::Path;

use serde_json::json;

use super::*;

fn parse(text: &str) -> Result<TestFile, FormatError> {
    TestFile::parse(Path::new("tests/t.yaml"), text, Path::new("."))
}

fn error(text: &str) -> String {
    parse(text).expect_err("invalid").to_string()
}

#[test]
fn a_full_test_reads() {
    let t = parse(
        r#"
name: scaling
quiet: 2s
workloads: {podStart: 1s, stages: ["app=x:fail"]}
oracles:
  idempotence: the script stamps the time
steps:
  - name: create
    apply:
      apiVersion: apps.example.com/v1
      kind: WebApp
      metadata: {name: shop}
      spec: {image: nginx}
    expect:
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: shop}
        spec: {replicas: 1}
      - absent: Service/other
      - event: {type: Normal, reason: Created, regarding: WebApp/shop}
  - patch: Deployment/shop
    status: {availableReplicas: 1}
  - advance: 1h
  - pods: "app=shop:fail"
  - fault: {verb: apply, resource: deployments, code: 500, count: 2}
  - fault: clear
  - delete: [WebApp/shop, WebApp/prod/other]
    expect:
      - absent: {kind: Deployment, name: shop}
"#,
    )
    .expect("valid");
    assert_eq!(t.name, "scaling");
    assert_eq!(t.quiet, Duration::from_secs(2));
    assert_eq!(t.timeout, DEFAULT_TIMEOUT);
    assert_eq!(
        t.workloads.as_ref().map(|w| (w.pod_start, w.stages.len())),
        Some((Duration::from_secs(1), 1))
    );
    assert_eq!(
        t.oracles_off.get(&Oracle::Idempotence).map(String::as_str),
        Some("the script stamps the time")
    );
    assert_eq!(t.steps.len(), 7);
    assert_eq!((t.steps[0].line, t.steps[0].name.as_str()), (8, "create"));
    assert!(matches!(&t.steps[0].action, Action::Apply(o) if o.len() == 1));
    assert_eq!(
        t.steps[0].expect[0],
        Expectation::Object {
            line: 15,
            target: ObjectRef {
                api_version: Some("apps/v1".into()),
                kind: "Deployment".into(),
                namespace: None,
                name: "shop".into()
            },
            fields: json!({"spec": {"replicas": 1}}),
        }
    );
    assert_eq!(t.steps[0].expect[1].line(), 19);
    assert!(matches!(&t.steps[0].expect[2], Expectation::Event { event, .. }
        if event.reason.as_deref() == Some("Created") && event.regarding.as_ref().map(|r| r.name.as_str()) == Some("shop")));
    assert!(
        matches!(&t.steps[1].action, Action::Patch { status: true, body, .. } if *body == json!({"status": {"availableReplicas": 1}}))
    );
    assert_eq!(t.steps[1].name, "patch the status of Deployment shop");
    assert!(matches!(t.steps[2].action, Action::Advance(d) if d == Duration::from_secs(3600)));
    assert!(matches!(&t.steps[3].action, Action::Pods(s) if s.len() == 1));
    assert!(matches!(&t.steps[4].action, Action::Fault(r) if r.code == 500 && r.count == 2));
    assert!(matches!(t.steps[5].action, Action::ClearFaults));
    assert!(matches!(&t.steps[6].action, Action::Delete(r) if r[1].namespace.as_deref() == Some("prod")));
}

#[test]
fn defaults_name_the_test_and_its_steps() {
    let t =
        parse("steps:\n  - apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n").expect("valid");
    assert_eq!(t.name, "t");
    assert_eq!(t.steps[0].name, "apply ConfigMap c");
    assert!(t.golden && t.workloads.is_some() && t.oracles_off.is_empty());
    assert_eq!(t.quiet, DEFAULT_QUIET);
}

#[test]
fn errors_name_the_file_and_line() {
    assert_eq!(
        error("steps:\n  - apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n    expct: []\n"),
        "tests/t.yaml:3: unknown field `expct`, expected one of name, apply, delete, patch, merge, status, advance, pods, fault, seed, replay, script, allow, expect"
    );
    assert_eq!(
        error("steps:\n  - advance: 1h\n  - delete: WebApp/shop\n    advance: 2s\n"),
        "tests/t.yaml:3: a step does one thing: apply, delete, patch, advance, pods, fault, seed or replay (split it into steps)"
    );
    assert_eq!(
        error("steps:\n  - advance: soon\n"),
        "tests/t.yaml:2: advance: duration \"soon\": expected a whole number before each unit"
    );
    assert_eq!(
        error("steps:\n  - delete: WebApp/shop\n    expect:\n      - kind: Deployment\n        spec: {}\n"),
        "tests/t.yaml:4: the Deployment has no metadata.name: an object expectation names its kind and metadata.name (or use absent:, event:, error:)"
    );
    assert_eq!(
        error("oracles:\n  idempotency: no\nsteps:\n  - advance: 1s\n"),
        "tests/t.yaml:2: oracles: no oracle \"idempotency\"; the oracles are controller-owner, observed-generation, errors-reported, idempotence, failed-apply-prunes-nothing, deletion-cleans-up, conversion-round-trip"
    );
    assert_eq!(
        error("oracles:\n  idempotence: \"\"\nsteps:\n  - advance: 1s\n"),
        "tests/t.yaml:2: oracles: idempotence: say why it is off (a reason is required)"
    );
    assert_eq!(
        error("steps:\n  - advance: 1s\n    expect:\n      - error: refused\n"),
        "tests/t.yaml:2: expect error: goes with apply, delete or patch (the action refused)"
    );
    assert_eq!(error("steps: []\n"), "tests/t.yaml:0: steps: a test needs at least one step");
    assert!(
        error("steps:\n  - apply: {kind: ConfigMap, metadata: {name: c}}\n").contains("has no apiVersion")
    );
    assert!(error("steps: [\n").starts_with("tests/t.yaml:"), "{}", error("steps: [\n"));
}

#[test]
fn references_read_in_every_form() {
    let r = |v: Value| ObjectRef::from_value(&v);
    assert_eq!(r(json!("WebApp/shop")).map(|r| r.to_string()), Ok("WebApp shop".into()));
    assert_eq!(r(json!("WebApp/prod/shop")).map(|r| r.to_string()), Ok("WebApp prod/shop".into()));
    assert!(r(json!("WebApp")).is_err() && r(json!("a/b/c/d")).is_err() && r(json!(3)).is_err());
    assert!(
        r(json!({"kind": "WebApp", "name": "shop", "colour": "red"})).unwrap_err().contains("\"colour\"")
    );
}

#[test]
fn apply_reads_a_file_of_the_operator() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("samples")).expect("mkdir");
    std::fs::write(
        dir.path().join("samples/two.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
    )
    .expect("write");
    let t = TestFile::parse(Path::new("t.yaml"), "steps:\n  - apply: samples/two.yaml\n", dir.path())
        .expect("valid");
    assert!(matches!(&t.steps[0].action, Action::Apply(o) if o.len() == 2));
    let e = TestFile::parse(Path::new("t.yaml"), "steps:\n  - apply: samples/none.yaml\n", dir.path())
        .expect_err("missing");
    assert!(e.to_string().starts_with("t.yaml:2: apply: cannot read samples/none.yaml"), "{e}");
}

#[test]
fn env_sets_the_scripts_env_with_strings_only() {
    let t = parse("env:\n  REGION: eu-west-1\n  EMPTY: \"\"\nsteps:\n  - advance: 1s\n").expect("valid");
    assert_eq!(
        t.env,
        Some(BTreeMap::from([
            ("EMPTY".to_owned(), String::new()),
            ("REGION".to_owned(), "eu-west-1".to_owned())
        ]))
    );
    assert_eq!(parse("steps:\n  - advance: 1s\n").expect("valid").env, None, "the process's CTOP_ENV_*");
    assert_eq!(
        error("env:\n  REGION: eu\n  REPLICAS: 3\nsteps:\n  - advance: 1s\n"),
        "tests/t.yaml:3: env: REPLICAS: 3 is not a string; quote it (\"3\"): the script's Env holds only strings, as the environment does"
    );
    assert_eq!(
        error("env:\n  CTOP_ENV_REGION: eu\nsteps:\n  - advance: 1s\n"),
        "tests/t.yaml:2: env: CTOP_ENV_REGION: name the variable as the script reads it (Env.REGION), without the CTOP_ENV_ prefix that ctop run's environment needs"
    );
    assert!(error("env: [REGION]\nsteps:\n  - advance: 1s\n").starts_with("tests/t.yaml:1: "));
}

#[test]
fn seed_and_replay_read_recordings_beside_the_test() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tests = dir.path().join("tests");
    std::fs::create_dir_all(tests.join("recordings")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("v2")).expect("mkdir");
    std::fs::write(tests.join("recordings/prod.ctrec"), "").expect("write");
    let file = tests.join("t.yaml");
    let parse = |text: &str| TestFile::parse(&file, text, dir.path());
    let t = parse(
        "steps:\n  - seed: recordings/prod.ctrec\n  - replay: recordings/prod.ctrec\n  \
         - replay: recordings/prod.ctrec\n    script: ../v2\n    allow: differences\n",
    )
    .expect("valid");
    let names: Vec<&str> = t.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "seed recordings/prod.ctrec",
            "replay recordings/prod.ctrec",
            "replay recordings/prod.ctrec against ../v2"
        ]
    );
    assert!(
        matches!(&t.steps[0].action, Action::Seed(r) if r.path == tests.join("recordings/prod.ctrec")),
        "{:?}",
        t.steps[0].action
    );
    let Action::Replay(plain) = &t.steps[1].action else { panic!("{:?}", t.steps[1].action) };
    assert_eq!((plain.script.as_ref(), plain.allow_differences), (None, false));
    assert_eq!(plain.label(), "the script under test");
    let Action::Replay(v2) = &t.steps[2].action else { panic!("{:?}", t.steps[2].action) };
    assert_eq!(v2.script.as_ref().map(|s| s.path.clone()), Some(tests.join("../v2")));
    assert!(v2.allow_differences);
    assert_eq!(v2.label(), "../v2");

    let error = |text: &str| parse(text).expect_err("invalid").to_string();
    let shown = file.display().to_string();
    // A missing file names the path it looked for, at the step's line.
    let e = error("steps:\n  - advance: 1s\n  - seed: recordings/none.ctrec\n");
    let missing = tests.join("recordings/none.ctrec");
    assert_eq!(
        e,
        format!(
            "{shown}:3: seed: there is no recording {} (the path is relative to the test file's directory)",
            missing.display()
        )
    );
    assert!(
        error("steps:\n  - replay: none.ctrec\n")
            .starts_with(&format!("{shown}:2: replay: there is no recording "))
    );
    assert!(
        error("steps:\n  - replay: recordings/prod.ctrec\n    script: ../v3\n")
            .starts_with(&format!("{shown}:2: script: ")),
    );
    assert_eq!(
        error("steps:\n  - replay: recordings/prod.ctrec\n    allow: [differences]\n").split(": ").next(),
        Some(format!("{shown}:3").as_str()),
        "allow is one word"
    );
    assert_eq!(
        error("steps:\n  - replay: recordings/prod.ctrec\n    allow: failures\n"),
        format!(
            "{shown}:2: allow: \"failures\": the only one is `differences` (new failures and divergences always fail)"
        )
    );
    assert_eq!(
        error("steps:\n  - seed: recordings/prod.ctrec\n    allow: differences\n"),
        format!("{shown}:2: script: and allow: go with replay:")
    );
    assert_eq!(
        error("steps:\n  - seed: recordings/prod.ctrec\n    replay: recordings/prod.ctrec\n"),
        format!(
            "{shown}:2: a step does one thing: apply, delete, patch, advance, pods, fault, seed or replay (split it into steps)"
        )
    );
    // An unknown key is refused at its line.
    assert!(
        error("steps:\n  - replay: recordings/prod.ctrec\n    alow: differences\n")
            .starts_with(&format!("{shown}:3: unknown field `alow`")),
    );
    assert_eq!(
        error("steps:\n  - seed: recordings/prod.ctrec\n    expect:\n      - error: refused\n"),
        format!("{shown}:2: expect error: goes with apply, delete or patch (the action refused)")
    );
}
