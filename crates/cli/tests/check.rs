//! `ctop check` on real operator directories with the real TypeScript compiler: the SDK's
//! `crates/runtime/sdk/node_modules/.bin/tsc` (`npm ci` there installs it; scripts/test.sh
//! does), put on the `PATH` of the checked command.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A `PATH` with the SDK's tsc and the node it runs on.
fn tsc_path() -> std::ffi::OsString {
    let bin = repo().join("crates/runtime/sdk/node_modules/.bin");
    assert!(
        bin.join("tsc").is_file(),
        "the SDK's TypeScript compiler is missing; install it with: (cd crates/runtime/sdk && npm ci)"
    );
    let path = std::env::var_os("PATH").unwrap_or_default();
    let node = std::env::split_paths(&path)
        .find(|d| d.join("node").is_file())
        .expect("node is on PATH (tsc runs on it); install Node.js 20+");
    std::env::join_paths([bin, node]).expect("a PATH")
}

fn ctop(args: &[&str], path: &std::ffi::OsStr) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctop"))
        .args(args)
        .env("PATH", path)
        .env("CTOP_LOG", "error")
        .output()
        .expect("ctop runs")
}

fn check(dir: &Path, path: &std::ffi::OsStr) -> (bool, String) {
    let out = ctop(&["check", &dir.display().to_string()], path);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// A fresh `ctop init` operator in a temporary directory.
fn init() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("op");
    let out = ctop(
        &["init", &dir.display().to_string(), "--kind", "Demo", "--group", "demo.example.com"],
        &tsc_path(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (tmp, dir)
}

fn append(file: &Path, text: &str) -> u32 {
    let mut old = std::fs::read_to_string(file).expect("read");
    if !old.ends_with('\n') {
        old.push('\n');
    }
    let line = u32::try_from(old.lines().count()).expect("few lines") + 1;
    std::fs::write(file, old + text).expect("write");
    line
}

#[test]
fn a_fresh_init_passes_and_writes_the_npm_and_editor_files() {
    let (_tmp, dir) = init();
    let (ok, out) = check(&dir, &tsc_path());
    assert!(ok, "{out}");
    assert!(out.contains("no errors (0 warning(s))"), "{out}");
    let package: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("package.json")).expect("package.json"))
            .expect("JSON");
    assert_eq!(package["scripts"]["check"], "ctop check .");
    assert!(dir.join(".vscode/settings.json").is_file());
    let ignored = std::fs::read_to_string(dir.join(".gitignore")).expect(".gitignore");
    assert!(
        ignored.lines().any(|l| l == "node_modules/") && ignored.lines().any(|l| l == ".ctop/dev/"),
        "{ignored}"
    );
    assert!(dir.join(".ctop/types/index.d.ts").is_file() && dir.join(".ctop/types/package.json").is_file());
}

/// An editor checks `operator.ct` outside the tsconfig (tsc takes no `.ct` file into a
/// project): once `npm install` links `.ctop/types` as `@types/ctop`, `"ctop"` resolves
/// with no tsconfig at all. The link is made here as npm makes it (a symlink), and tsc runs
/// with `--ignoreConfig`, as an editor's inferred project would.
#[test]
fn an_editor_without_the_tsconfig_resolves_ctop_through_the_types_package() {
    let (_tmp, dir) = init();
    std::fs::copy(dir.join("operator.ct"), dir.join("editor.ts")).expect("copy");
    let tsc = |dir: &Path| {
        Command::new("tsc")
            .args(["--ignoreConfig", "--noEmit", "--strict", "editor.ts"])
            .current_dir(dir)
            .env("PATH", tsc_path())
            .output()
            .expect("tsc runs")
    };
    let out = tsc(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && text.contains("Cannot find module 'ctop'"),
        "before npm install: {text}"
    );

    std::fs::create_dir_all(dir.join("node_modules/@types")).expect("mkdir");
    #[cfg(unix)]
    std::os::unix::fs::symlink("../../.ctop/types", dir.join("node_modules/@types/ctop")).expect("symlink");
    let out = tsc(&dir);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_type_error_in_operator_ct_is_reported_at_its_line_and_column() {
    let (_tmp, dir) = init();
    let line = append(&dir.join("operator.ct"), "const replicas: number = \"three\";\n");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    let shown = dir.join("operator.ct").display().to_string();
    let want = format!(
        "{shown}:{line}:7: error TS2322: Type 'string' is not assignable to type 'number'.\n   |\n{line} | const replicas: number = \"three\";\n   |       ^\n"
    );
    assert!(out.contains(&want), "want\n{want}\nin\n{out}");
}

#[test]
fn type_errors_in_imported_ts_and_ct_files_point_at_those_files() {
    let (_tmp, dir) = init();
    std::fs::create_dir_all(dir.join("lib")).expect("mkdir");
    std::fs::write(dir.join("lib/util.ts"), "export const port = 80;\nexport const name: string = port;\n")
        .expect("write");
    std::fs::write(
        dir.join("helper.ct"),
        "export function twice(n: number): number {\n  return `${n}${n}`;\n}\n",
    )
    .expect("write");
    std::fs::write(dir.join("other.ct"), "export const one: number = 1;\n").expect("write");
    // Imported without an extension and with .ct written out: each file is checked once
    // and reported under its own name.
    append(
        &dir.join("operator.ct"),
        "import { port } from \"./lib/util\";\nimport { twice } from \"./helper.ct\";\nimport { one } from \"./other.ct\";\nimport { one as uno } from \"./other\";\nexport const total: number = twice(port) + one + uno;\n",
    );
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    let at = |rel: &str| dir.join(rel).display().to_string();
    assert!(
        out.contains(&format!(
            "{}:2:14: error TS2322: Type 'number' is not assignable to type 'string'.",
            at("lib/util.ts")
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{}:2:3: error TS2322: Type 'string' is not assignable to type 'number'.",
            at("helper.ct")
        )),
        "{out}"
    );
    assert_eq!(out.matches("error TS").count(), 2, "each error once:\n{out}");
    assert!(!out.contains(".ct.ts"), "{out}");
}

#[test]
fn every_example_passes() {
    let mut checked = 0;
    for entry in std::fs::read_dir(repo().join("examples")).expect("examples/") {
        let dir = entry.expect("entry").path();
        if !dir.join("operator.ct").is_file() {
            continue;
        }
        let (ok, out) = check(&dir, &tsc_path());
        assert!(ok, "{}:\n{out}", dir.display());
        assert!(out.contains(": no errors (0 warning(s))"), "{}:\n{out}", dir.display());
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} examples");
}

#[test]
fn a_kind_named_like_a_built_in_of_another_group_passes_beside_it() {
    // The kubebuilder tutorial's batch.tutorial.kubebuilder.io CronJob, which reads the
    // built-in batch/v1 CronJob: types, names, the CRD and the RBAC of both kinds.
    let dir = repo().join("crates/runtime/tests/golden/kubebuilder-cronjob");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(ok && out.contains(": no errors (0 warning(s))"), "{out}");
    let manifests = ctop(&["manifests", &dir.display().to_string()], &tsc_path());
    assert!(manifests.status.success(), "{}", String::from_utf8_lossy(&manifests.stderr));
    let yaml = String::from_utf8_lossy(&manifests.stdout);
    assert!(yaml.contains("  name: cronjobs.batch.tutorial.kubebuilder.io\n"), "{yaml}");
    for rule in [
        "- apiGroups:\n  - batch\n  resources:\n  - cronjobs\n  verbs:\n  - get\n  - list\n  - watch\n",
        "- apiGroups:\n  - batch.tutorial.kubebuilder.io\n  resources:\n  - cronjobs/status\n",
    ] {
        assert!(yaml.contains(rule), "no rule {rule}in\n{yaml}");
    }
}

#[test]
fn kinds_a_reconcile_writes_or_reads_must_be_declared() {
    let (_tmp, dir) = init();
    let text = std::fs::read_to_string(dir.join("operator.ct")).expect("read");
    let text = text
        .replace("import { resource,", "import { listObserved, Secret, ConfigMap, resource,")
        .replace(
            "    const available =",
            "    apply(ConfigMap({ metadata: { name }, data: { a: \"b\" } }));\n    listObserved(Secret);\n    const available =",
        )
        .replace(
            "  .manages(Deployment, Service)",
            "  .manages(Deployment, Service)\n  .finalize(() => { apply(ConfigMap({ metadata: { name: \"gone\" } })); })\n  .onStart(() => { apply(ConfigMap({ metadata: { name: \"start\", namespace: \"default\" } })); })",
        );
    std::fs::write(dir.join("operator.ct"), text).expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    assert!(
        out.contains("error rbac: operator \"demo\" applies ConfigMap default/hello (reconcile of samples/demo.yaml), but v1/ConfigMap is not in its .manages(...)"),
        "{out}"
    );
    assert!(out.contains("= help: add .manages(ConfigMap) to operator \"demo\""), "{out}");
    assert!(out.contains("error rbac: operator \"demo\" calls listObserved(Secret, ...)"), "{out}");
    assert!(out.contains("= help: add .reads(Secret)"), "{out}");
    // finalize runs on each sample being deleted, onStart once.
    assert!(
        out.contains("applies ConfigMap default/gone (finalize of samples/demo.yaml), but v1/ConfigMap"),
        "{out}"
    );
    assert!(out.contains("applies ConfigMap default/start (onStart), but v1/ConfigMap"), "{out}");
}

/// A `patch()` of an object the operator does not own needs a `.permission(...)` naming
/// that resource (by its plural) and, when the rule names objects, that object.
#[test]
fn a_patch_needs_a_permission_for_that_resource_and_name() {
    let (_tmp, dir) = init();
    let original = std::fs::read_to_string(dir.join("operator.ct")).expect("read");
    let with_permission = |rule: &str| {
        original
            .replace("import { resource,", "import { patch, ConfigMap, resource,")
            .replace(
                "    const available =",
                "    patch(ConfigMap({ metadata: { name: \"shared\" }, data: { a: \"b\" } }));\n    const available =",
            )
            .replace("  .manages(Deployment, Service)", &format!("  .manages(Deployment, Service)\n  .permission({rule})"))
    };
    let cases = [
        (r#"{ apiGroups: "", resources: "secrets", verbs: "patch" }"#, false),
        (r#"{ apiGroups: "", resources: "configmaps", verbs: "get" }"#, false),
        (r#"{ apiGroups: "", resources: "configmaps", verbs: "patch", resourceNames: "other" }"#, false),
        (r#"{ apiGroups: "", resources: "configmaps", verbs: "patch", resourceNames: "shared" }"#, true),
        (r#"{ apiGroups: "", resources: "*", verbs: "patch" }"#, true),
    ];
    for (rule, allowed) in cases {
        std::fs::write(dir.join("operator.ct"), with_permission(rule)).expect("write");
        let (ok, out) = check(&dir, &tsc_path());
        assert_eq!(ok, allowed, "{rule}: {out}");
        if !allowed {
            assert!(out.contains("error rbac: operator \"demo\" patches ConfigMap default/shared"), "{out}");
            assert!(
                out.contains(r#"resources: ["configmaps"], verbs: ["patch"]"#),
                "the help names the plural: {out}"
            );
        }
    }
}

#[test]
fn without_a_compiler_it_says_how_to_install_one() {
    let (_tmp, dir) = init();
    let (ok, out) = check(&dir, std::ffi::OsStr::new(""));
    assert!(!ok, "{out}");
    assert!(out.contains("error tsc: no TypeScript compiler"), "{out}");
    assert!(
        out.contains(&format!("install it with: cd {} && npm install --save-dev typescript", dir.display())),
        "{out}"
    );
}

#[test]
fn the_compiler_of_the_operators_node_modules_comes_first() {
    let (_tmp, dir) = init();
    let modules = repo().join("crates/runtime/sdk/node_modules");
    std::os::unix::fs::symlink(&modules, dir.join("node_modules")).expect("link node_modules");
    // Only node on PATH: the tsc found is the operator's own.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let node = std::env::split_paths(&path).find(|d| d.join("node").is_file()).expect("node is on PATH");
    let (ok, out) = check(&dir, node.as_os_str());
    assert!(ok, "{out}");
    assert!(
        out.contains(&format!("type-checked with {}", dir.join("node_modules/.bin/tsc").display())),
        "{out}"
    );
}

#[test]
fn syntax_errors_schemas_and_names_the_api_server_would_refuse() {
    let (_tmp, dir) = init();
    let script = dir.join("operator.ct");
    let text = std::fs::read_to_string(&script).expect("read");
    let broken = text
        .replace("scope: \"Namespaced\",", "scope: \"Namespaced\",\n  plural: \"Demo_Apps\",")
        .replace(".default(1).describe(\"How many pods.\")", ".default(0).describe(\"How many pods.\")")
        .replace("operator(app)", "operator(app, { name: \"Demo Controller\" })");
    std::fs::write(&script, &broken).expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    assert!(out.contains("error name: resource Demo (demo.example.com/v1): the plural \"Demo_Apps\" is not a DNS-1035 label"), "{out}");
    assert!(out.contains("= help: pass a valid plural to resource(...), e.g. \"demo-apps\""), "{out}");
    assert!(
        out.contains("error name: operator \"Demo Controller\": its name is not a DNS-1123 label"),
        "{out}"
    );
    assert!(
        out.contains("error manifests: the API server would refuse CRD Demo_Apps.demo.example.com:"),
        "{out}"
    );
    assert!(out.contains("(in the script's schema at spec.replicas: change its .default(...)"), "{out}");

    // A syntax error: the loader and tsc both place it at the end of the file.
    std::fs::write(&script, text).expect("write");
    let line = append(&script, "function f( {\n");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    let shown = script.display().to_string();
    assert!(out.contains(&format!("{shown}:{}:1: error load: syntax error", line + 1)), "{out}");
    assert!(out.contains(&format!("{shown}:{}:1: error TS1005: '}}' expected.", line + 1)), "{out}");
}

#[test]
fn samples_are_pruned_defaulted_and_validated_as_the_api_server_would() {
    let (_tmp, dir) = init();
    let sample = dir.join("samples/demo.yaml");
    let text =
        std::fs::read_to_string(&sample).expect("read").replace("replicas: 2", "replicas: 50\n  colour: red");
    std::fs::write(&sample, text).expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    assert!(
        out.contains("warning sample: samples/demo.yaml: Demo hello: unknown field \"spec.colour\": the API server drops it"),
        "{out}"
    );
    assert!(
        out.contains("error sample: samples/demo.yaml: Demo hello: the API server would refuse it:\n  spec.replicas: Invalid value: 50: spec.replicas in body should be less than or equal to 20\n"),
        "{out}"
    );
    // No handler runs on a refused sample, nor on a bare object in its place.
    assert!(!out.contains("reconcile of"), "{out}");
}

/// A RoleBinding a reconcile applies binds a role the operator must be allowed to bind: the
/// API server's escalation prevention refuses it otherwise (kubesim with `--authz` too), so
/// `ctop check` fails with the `.permission(...)` line to add until it is declared; a Role
/// that grants more than the generated RBAC holds needs `escalate` the same way.
#[test]
fn a_role_binding_needs_bind_on_its_role_and_a_role_its_rules_or_escalate() {
    let (_tmp, dir) = init();
    let original = std::fs::read_to_string(dir.join("operator.ct")).expect("read");
    let script = |permissions: &str| {
        original
            .replace("import { resource,", "import { RoleBinding, Role, resource,")
            .replace(
                "    const available =",
                "    apply(RoleBinding({ metadata: { name: `${name}-admins` },\n      \
                 roleRef: { apiGroup: \"rbac.authorization.k8s.io\", kind: \"ClusterRole\", name: \"admin\" },\n      \
                 subjects: [{ kind: \"ServiceAccount\", name, namespace: cr.metadata.namespace }] }));\n    \
                 apply(Role({ metadata: { name: `${name}-reader` },\n      \
                 rules: [{ apiGroups: [\"apps\"], resources: [\"deployments\"], verbs: [\"get\", \"list\"] }] }));\n    \
                 apply(RoleBinding({ metadata: { name: `${name}-readers` },\n      \
                 roleRef: { apiGroup: \"rbac.authorization.k8s.io\", kind: \"Role\", name: `${name}-reader` },\n      \
                 subjects: [{ kind: \"ServiceAccount\", name, namespace: cr.metadata.namespace }] }));\n    \
                 const available =",
            )
            .replace("  .manages(Deployment, Service)", &format!("  .manages(Deployment, Service, RoleBinding, Role){permissions}"))
    };
    std::fs::write(dir.join("operator.ct"), script("")).expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    assert!(
        out.contains("error rbac: operator \"demo\" applies RoleBinding default/hello-admins (reconcile of samples/demo.yaml), which binds ClusterRole \"admin\": the API server refuses it"),
        "{out}"
    );
    assert!(
        out.contains(r#"= help: add .permission({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles"], verbs: ["bind"], resourceNames: ["admin"] }) to operator "demo""#),
        "{out}"
    );
    // The Role grants get and list of Deployments, which the generated RBAC holds
    // (.manages(Deployment)): no escalate needed, and binding it needs no bind either.
    assert!(!out.contains("applies Role default/hello-reader"), "{out}");
    assert!(!out.contains("hello-readers"), "{out}");

    // The line the help gives, declared: the check passes.
    let bind = r#"
  .permission({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["clusterroles"], verbs: ["bind"], resourceNames: ["admin"] })"#;
    std::fs::write(dir.join("operator.ct"), script(bind)).expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(ok, "{out}");

    // A Role granting Secrets, which nothing declares, needs escalate on it.
    let secrets = script(bind)
        .replace(
            r#"resources: ["deployments"], verbs: ["get", "list"]"#,
            r#"resources: ["secrets"], verbs: ["get"]"#,
        )
        .replace(
            r#"apiGroups: ["apps"], resources: ["secrets"]"#,
            r#"apiGroups: [""], resources: ["secrets"]"#,
        );
    std::fs::write(dir.join("operator.ct"), &secrets).expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    assert!(
        out.contains("error rbac: operator \"demo\" applies Role default/hello-reader (reconcile of samples/demo.yaml), which grants permissions the generated RBAC does not hold (get secrets)"),
        "{out}"
    );
    assert!(
        out.contains(r#"= help: add .permission({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["escalate"], resourceNames: ["hello-reader"] }) to operator "demo""#),
        "{out}"
    );
    // Binding that Role now needs bind on it as well: the operator does not hold its rules.
    assert!(
        out.contains(r#"= help: add .permission({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["bind"], resourceNames: ["hello-reader"] }) to operator "demo""#),
        "{out}"
    );
    let escalate = r#"
  .permission({ apiGroups: ["rbac.authorization.k8s.io"], resources: ["roles"], verbs: ["escalate", "bind"], resourceNames: ["hello-reader"] })"#;
    let declared = secrets.replace(bind, &format!("{bind}{escalate}"));
    std::fs::write(dir.join("operator.ct"), declared).expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(ok, "{out}");
}

/// A resource with two versions: every sample, in either version, goes through the script's
/// conversions to the other version and back; a field lost on the way fails the check with
/// its path, and a sample in v2 is checked against v2's schema.
#[test]
fn conversions_run_on_every_sample_and_a_lost_field_is_an_error() {
    let (_tmp, dir) = init();
    // v2 names the image by repository and tag; its conversions forget the port.
    append(
        &dir.join("operator.ct"),
        r#"app.addVersion("v2", {
  spec: { repository: z.string(), tag: z.string().default("latest"), replicas: z.number().int().min(1).default(1) },
  toHub: (o) => ({ ...o, spec: { image: `${o.spec.repository}:${o.spec.tag}`, replicas: o.spec.replicas } }),
  fromHub: (o) => {
    const [repository, tag = "latest"] = o.spec.image.split(":");
    return { ...o, spec: { repository, tag, replicas: o.spec.replicas } };
  },
});
"#,
    );
    std::fs::write(
        dir.join("samples/v2.yaml"),
        "apiVersion: demo.example.com/v2\nkind: Demo\nmetadata:\n  name: two\nspec:\n  repository: nginx\n  tag: \"1.27\"\n",
    )
    .expect("write");
    let (ok, out) = check(&dir, &tsc_path());
    assert!(!ok, "{out}");
    assert!(
        out.contains(
            "error conversion: samples/demo.yaml: Demo hello: spec.port was lost (it was 80) on the way through demo.example.com/v2 and back"
        ),
        "{out}"
    );
    assert!(!out.contains("samples/v2.yaml: Demo two"), "v2 → v1 → v2 keeps everything: {out}");
    assert!(!out.contains("error TS"), "the versions type-check: {out}");
}

/// A version that the CRDs last deployed (or a cluster's) may hold objects in cannot leave
/// the script: `ctop check --previous` says what to do; once the cluster's storedVersions no
/// longer lists it, the check passes.
#[test]
fn a_version_still_stored_cannot_be_dropped() {
    let (_tmp, dir) = init();
    let crd = |stored: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: demos.demo.example.com\n\
             spec:\n  group: demo.example.com\n  versions:\n  - {{name: v1, served: true, storage: true}}\n  \
             - {{name: v1alpha1, served: false, storage: false}}\nstatus:\n  storedVersions: {stored}\n"
        )
    };
    let previous = dir.join("crd.yaml");
    std::fs::write(&previous, crd("[v1, v1alpha1]")).expect("write");
    let out = ctop(
        &["check", &dir.display().to_string(), "--previous", &previous.display().to_string()],
        &tsc_path(),
    );
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains(
            "error versions: the script no longer declares version v1alpha1 of demos.demo.example.com"
        ),
        "{text}"
    );
    assert!(text.contains("--migrate-storage"), "{text}");
    std::fs::write(&previous, crd("[v1]")).expect("write");
    let out = ctop(
        &["check", &dir.display().to_string(), "--previous", &previous.display().to_string()],
        &tsc_path(),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}
