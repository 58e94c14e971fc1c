//! npm packages in scripts, with real packages installed from npm: the fixture operator in
//! `tests/npm/` (its `package-lock.json` is committed, `node_modules` is installed by
//! `scripts/test.sh` with `npm ci`) loads semver (CommonJS, and a subpath of it),
//! cron-parser (CommonJS requiring the ES build of luxon) and query-string (ES modules
//! only, with ES-only dependencies) into the bundle and runs them in QuickJS. The refusals
//! (Node built-ins, `require()` of a computed name) use small packages written by the test.

use std::path::{Path, PathBuf};

use ctop_runtime::{Limits, LoadError, Script, ScriptError, load_dir};
use serde_json::json;

/// The fixture operator directory, with its packages installed.
fn fixture() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npm");
    assert!(
        dir.join("node_modules/cron-parser/package.json").is_file()
            && dir.join("node_modules/semver/package.json").is_file()
            && dir.join("node_modules/query-string/package.json").is_file(),
        "the npm fixture's packages are not installed: run `npm ci --prefix {}` (scripts/test.sh does)",
        dir.display()
    );
    dir
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    }
}

fn load(files: &[(&str, &str)]) -> Result<ctop_runtime::Bundle, LoadError> {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), files);
    load_dir(dir.path(), "operator.ct")
}

#[test]
fn commonjs_and_es_packages_load_and_run_in_quickjs() {
    let script =
        Script::from_dir(&fixture(), "operator.ct", 1, Limits::default()).expect("the fixture loads");
    let input = json!({
        "object": {"apiVersion": "npm.ctop.dev/v1", "kind": "Release",
                   "metadata": {"name": "r", "namespace": "default", "uid": "u-1", "generation": 1},
                   "spec": {"version": "1.4.2", "schedule": "30 6 * * 1", "query": "a=1&b=x&b=y"}},
        "observed": {}, "env": {}, "values": {}
    });
    let out = script.dispatch("reconcile", 0, &input.to_string()).expect("reconcile runs");
    assert_eq!(
        out["status"],
        json!({
            "compatible": true,
            "major": 1,
            "coerced": "2.5.0",
            // 2026-01-01 is a Thursday: the next Monday 06:30 UTC.
            "next": "2026-01-05T06:30:00.000Z",
            "query": "{\"a\":1,\"b\":[\"x\",\"y\"]}",
        }),
        "{out}"
    );
}

#[test]
fn package_modules_are_named_by_their_path_and_the_bundle_is_deterministic() {
    let one = load_dir(&fixture(), "operator.ct").expect("load");
    let two = load_dir(&fixture(), "operator.ct").expect("load");
    assert_eq!(one.to_gz(), two.to_gz(), "same node_modules, same bytes");
    for name in [
        "node_modules/semver/index.js",
        "node_modules/semver/functions/coerce.js",
        "node_modules/cron-parser/dist/index.js",
        "node_modules/luxon/build/es6/luxon.mjs",
        "node_modules/query-string/index.js",
        "node_modules/decode-uri-component/index.js",
    ] {
        assert!(one.modules.contains_key(name), "{name} missing from {:?}", one.modules.keys());
    }
    // luxon's CommonJS build is not bundled next to its ES build.
    assert!(!one.modules.keys().any(|n| n.starts_with("node_modules/luxon/build/node")));
    let semver = &one.modules["node_modules/semver/index.js"].js;
    assert!(semver.contains("export function __ctop_cjs()"), "CommonJS is wrapped");
    assert!(!semver.contains("require('./"), "requires are bundled: {}", &semver[..400]);
    // `import * as semver from "semver"` would see every name of its `module.exports = {…}`,
    // not only the ones the fixture imports.
    assert!(semver.contains("as \"valid\"}"), "names assigned to module.exports are exported");
}

#[test]
fn a_node_builtin_is_refused_with_the_chain_of_imports() {
    let err = load(&[
        ("operator.ct", "import { x } from \"good-pkg\";\nconsole.log(x);\n"),
        ("node_modules/good-pkg/package.json", r#"{"name":"good-pkg","main":"main.js"}"#),
        ("node_modules/good-pkg/main.js", "exports.x = require(\"bad-pkg\").y;\n"),
        ("node_modules/bad-pkg/package.json", r#"{"name":"bad-pkg"}"#),
        ("node_modules/bad-pkg/index.js", "const fs = require(\"fs\");\nexports.y = 1;\n"),
    ])
    .expect_err("fs is refused");
    assert_eq!(
        err.to_string(),
        "node_modules/bad-pkg/index.js:1:20: operator.ct imports \"good-pkg\" → node_modules/good-pkg/main.js \
         requires \"bad-pkg\" → node_modules/bad-pkg/index.js requires \"fs\": Node built-in modules are not \
         available in ctop scripts; use a package that does not need them"
    );

    // An ES import, with the node: prefix, straight from the script.
    let err = load(&[("operator.ct", "import net from \"node:net\";\nnet;\n")]).expect_err("refused");
    assert!(matches!(&err, LoadError::NodeBuiltin { line: 1, column: 17, .. }), "{err:?}");
    assert!(err.to_string().contains("operator.ct imports \"node:net\": Node built-in"), "{err}");
    for builtin in ["child_process", "crypto", "http", "path", "node:fs/promises", "worker_threads"] {
        let err = load(&[("operator.ct", &format!("import \"{builtin}\";"))]).expect_err(builtin);
        assert!(matches!(err, LoadError::NodeBuiltin { .. }), "{builtin}: {err:?}");
    }
}

#[test]
fn the_browser_field_can_replace_a_builtin_and_lazy_requires_fail_when_called() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(
        dir.path(),
        &[
            (
                "operator.ct",
                "import { resource, z, operator, setStatus, Result } from \"ctop\";\n\
                 import pkg from \"mapped\";\n\
                 import { read } from \"lazy\";\n\
                 const r = resource(\"t.ctop.dev/v1\", \"T\", { scope: \"Namespaced\", spec: {}, status: { a: z.string(), b: z.string() } });\n\
                 operator(r).reconcile((cr) => {\n\
                   let b = \"\";\n\
                   try { read(); } catch (e) { b = String(e.message); }\n\
                   setStatus(cr, { a: pkg.kind, b });\n\
                   return Result.ok();\n\
                 });\n",
            ),
            ("node_modules/mapped/package.json", r#"{"name":"mapped","browser":{"fs":false}}"#),
            (
                "node_modules/mapped/index.js",
                "const fs = require(\"fs\");\nmodule.exports = { kind: typeof fs };\n",
            ),
            ("node_modules/lazy/package.json", r#"{"name":"lazy"}"#),
            (
                "node_modules/lazy/index.js",
                "exports.read = function () { return require(\"fs\").readFileSync(\"x\"); };\n",
            ),
        ],
    );
    let script = Script::from_dir(dir.path(), "operator.ct", 1, Limits::default()).expect("loads");
    let input = json!({
        "object": {"apiVersion": "t.ctop.dev/v1", "kind": "T",
                   "metadata": {"name": "t", "namespace": "default", "uid": "u-1", "generation": 1}, "spec": {}},
        "observed": {}, "env": {}, "values": {}
    });
    let out = script.dispatch("reconcile", 0, &input.to_string()).expect("reconcile");
    assert_eq!(out["status"]["a"], "object", "fs mapped to false is an empty module: {out}");
    assert_eq!(
        out["status"]["b"],
        "operator.ct imports \"lazy\" → node_modules/lazy/index.js requires \"fs\": Node built-in modules are not \
         available in ctop scripts; use a package that does not need them"
    );
}

#[test]
fn require_of_a_computed_name_is_refused_at_its_position() {
    let err = load(&[
        ("operator.ct", "import \"dyn\";\n"),
        ("node_modules/dyn/package.json", r#"{"name":"dyn"}"#),
        ("node_modules/dyn/index.js", "var name = \"./a\";\nmodule.exports =  require(name);\n"),
    ])
    .expect_err("refused");
    assert!(
        matches!(&err, LoadError::DynamicRequire { file, line: 2, column: 19 } if file == "node_modules/dyn/index.js"),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("node_modules/dyn/index.js:2:19: require() needs a string literal"),
        "{err}"
    );
}

#[test]
fn a_missing_package_says_to_install_it() {
    let err =
        load(&[("operator.ct", "import semver from \"semver\";\nsemver;\n")]).expect_err("not installed");
    assert!(matches!(&err, LoadError::Package { line: 1, column: 20, .. }), "{err:?}");
    assert!(err.to_string().contains("npm install"), "{err}");
    // Scripts still load through Script with the same error.
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), &[("operator.ct", "import \"nope\";")]);
    let result = Script::from_dir(dir.path(), "operator.ct", 1, Limits::default());
    assert!(matches!(result, Err(ScriptError::Load(LoadError::Package { .. }))), "{:?}", result.err());
}
