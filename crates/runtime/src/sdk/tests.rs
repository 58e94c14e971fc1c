//! The SDK's modules as the vm serves them, and the host functions it calls.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;
use crate::vm::HOST_FUNCTIONS;

/// Every JavaScript source of the SDK: `(file under sdk/, source)`.
fn sources() -> Vec<(String, &'static str)> {
    std::iter::once(("ctop.js".to_owned(), SDK_JS))
        .chain(SDK_MODULES.iter().map(|(name, source)| (name.trim_start_matches(PREFIX).to_owned(), *source)))
        .collect()
}

#[test]
fn every_file_of_sdk_src_is_served() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk/src");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .expect("in a test")
        .map(|e| e.expect("in a test").file_name().into_string().expect("in a test"))
        .filter(|f| f.ends_with(".js"))
        .map(|f| format!("{PREFIX}src/{f}"))
        .collect();
    files.sort();
    let served: Vec<String> = SDK_MODULES.iter().map(|(name, _)| (*name).to_owned()).collect();
    assert_eq!(served, files, "list every file of sdk/src in SDK_MODULES (sorted)");
    for (name, source) in SDK_MODULES {
        let path = dir.join(name.trim_start_matches(PREFIX).trim_start_matches("src/"));
        assert_eq!(std::fs::read_to_string(path).expect("in a test"), *source);
    }
}

#[test]
fn relative_imports_of_sdk_modules_resolve_to_sdk_modules_only() {
    assert_eq!(resolve("ctop", "./src/z.js"), Some("ctop:src/z.js"));
    assert_eq!(resolve("ctop:src/kinds.js", "./util.js"), Some("ctop:src/util.js"));
    assert_eq!(resolve("ctop:src/kinds.js", "../src/util.js"), Some("ctop:src/util.js"));
    assert_eq!(resolve("ctop", "./src/nope.js"), None);
    assert_eq!(resolve("ctop", "src/z.js"), None);
    assert_eq!(resolve("ctop", "../../z.js"), None);
    // A bundle's module cannot reach the SDK's internals.
    assert_eq!(resolve("operator.ct", "./src/z.js"), None);
    assert_eq!(resolve("ctop:src/missing.js", "./z.js"), None);
}

#[test]
fn every_import_of_the_sdk_resolves() {
    for (file, source) in sources() {
        let base = if file == "ctop.js" { "ctop".to_owned() } else { format!("{PREFIX}{file}") };
        for line in source.lines() {
            let Some(rest) = line.split(" from \"").nth(1) else { continue };
            let specifier = rest.split('"').next().expect("in a test");
            assert!(resolve(&base, specifier).is_some(), "{file}: {specifier} does not resolve");
        }
    }
}

/// The lines of `source` that are not comment lines.
fn code(source: &str) -> impl Iterator<Item = &str> {
    source.lines().filter(|l| {
        let l = l.trim_start();
        !(l.starts_with("//") || l.starts_with("/*") || l.starts_with('*'))
    })
}

/// The names `host().<name>` in the code of `source`, and how many `host()` are not followed
/// by `.<name>` (but its definition).
fn host_uses(source: &str) -> (BTreeSet<String>, usize) {
    let mut names = BTreeSet::new();
    let mut other = 0;
    for (line, at) in code(source).flat_map(|l| l.match_indices("host()").map(move |(at, _)| (l, at))) {
        if line[..at].ends_with("function ")
            || line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = &line[at + "host()".len()..];
        let name: String = rest
            .strip_prefix('.')
            .map(|r| r.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect())
            .unwrap_or_default();
        if name.is_empty() {
            other += 1;
        } else {
            names.insert(name);
        }
    }
    (names, other)
}

#[test]
fn the_sdk_calls_exactly_the_host_functions_the_vm_installs() {
    let mut used = BTreeSet::new();
    for (file, source) in sources() {
        let (names, other) = host_uses(source);
        assert_eq!(other, 0, "{file}: write every use of the host as host().name");
        used.extend(names);
        if file != "src/host.js" {
            assert!(
                !code(source).any(|l| l.contains("__ct_host")),
                "{file} reads globalThis.__ct_host; go through host() of src/host.js"
            );
        }
    }
    let installed: BTreeSet<String> = HOST_FUNCTIONS.iter().map(|s| (*s).to_owned()).collect();
    let unknown: Vec<&String> = used.difference(&installed).collect();
    assert!(unknown.is_empty(), "the SDK calls host functions the vm does not install: {unknown:?}");
    let unused: Vec<&String> = installed.difference(&used).collect();
    assert!(unused.is_empty(), "the vm installs host functions the SDK never calls: {unused:?}");
}

#[test]
fn builtin_kinds_are_read_from_the_generated_module() {
    let kinds = builtin_kinds();
    let exports = SDK_MODULES
        .iter()
        .find(|(n, _)| *n == "ctop:src/builtins.js")
        .map(|(_, s)| s.lines().filter(|l| l.starts_with("export const ")).count())
        .expect("in a test");
    assert_eq!(kinds.len(), exports);
    assert!(kinds.len() >= 29);
    let deployment = kinds.iter().find(|k| k.kind == "Deployment").expect("in a test");
    assert_eq!(
        deployment,
        &BuiltinKind {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            namespaced: true
        }
    );
    assert!(kinds.iter().any(|k| k.kind == "Namespace" && !k.namespaced));
}

#[test]
fn the_sha256_covers_every_module() {
    let hex = sha256_hex();
    assert_eq!(hex.len(), 64);
    assert_eq!(hex, sha256_hex());
}

#[test]
fn the_served_typings_are_one_file() {
    assert!(!SDK_DTS.contains("from \"./"), "a relative import was left in SDK_DTS");
    assert!(!SDK_DTS.contains("export * from"), "an export * was left in SDK_DTS");
    for name in
        ["export declare const z: Z;", "export interface DeploymentSpec {", "export interface StoredMeta"]
    {
        assert!(SDK_DTS.contains(name), "{name} is not in SDK_DTS");
    }
}
