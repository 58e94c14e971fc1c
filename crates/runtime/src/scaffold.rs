//! The files `ctop init` writes: a working operator, a sample, a first test of it
//! (`ctop test`), values, typings, a `package.json` (TypeScript as a dev dependency,
//! `npm run check`, `npm test`), a `.gitignore` for
//! `node_modules/` and `ctop dev`'s `.ctop/dev/`, and editor settings.
//! Templates live in `crates/runtime/scaffold/`; start at [`files`].
//!
//! Editors: tsc and tsserver take no `.ct` file into a tsconfig project (TS6054), so an
//! editor checks `operator.ct` (a TypeScript file by `.vscode/settings.json`) in an inferred
//! project, where the tsconfig's `paths` do not apply. There `"ctop"` resolves through
//! `node_modules/@types/ctop`: the `package.json` depends on `file:.ctop/types`, which
//! [`editor_types`] fills (`ctop init` and `ctop types` write it), and `npm install` links it.

use crate::sdk::SDK_DTS;

const OPERATOR: &str = include_str!("../scaffold/operator.ct");
const SAMPLE: &str = include_str!("../scaffold/sample.yaml");
/// A first test (`ctop test`), of the sample.
const TEST: &str = include_str!("../scaffold/test.yaml");
const VALUES: &str = include_str!("../scaffold/values.yaml");
const PACKAGE: &str = include_str!("../scaffold/package.json");
const VSCODE: &str = include_str!("../scaffold/.vscode/settings.json");
/// `.gitignore` (stored without its dot, so that git does not read it as the scaffold's own).
const GITIGNORE: &str = include_str!("../scaffold/gitignore");
/// The SDK's own manifest: the TypeScript version scripts are checked with comes from it.
const SDK_PACKAGE: &str = include_str!("../sdk/package.json");

/// The `tsconfig.json` of a new operator (`ctop check` also uses it for an operator that
/// has none): strict, `"ctop"` mapped to `./ctop.d.ts`.
pub const TSCONFIG: &str = include_str!("../scaffold/tsconfig.json");

/// The TypeScript version range the SDK's typings are tested with (its `package.json`'s
/// `devDependencies.typescript`), which a new operator pins too.
#[must_use]
pub fn typescript_version() -> String {
    serde_json::from_str::<serde_json::Value>(SDK_PACKAGE)
        .ok()
        .and_then(|p| p["devDependencies"]["typescript"].as_str().map(str::to_owned))
        .unwrap_or_else(|| {
            unreachable!("crates/runtime/sdk/package.json names its typescript dev dependency")
        })
}

/// The files of a new operator for `kind` in API group `group`, as `(relative path,
/// contents)`.
#[must_use]
pub fn files(kind: &str, group: &str) -> Vec<(String, String)> {
    let fill = |t: &str| t.replace("__KIND__", kind).replace("__GROUP__", group);
    let package = PACKAGE
        .replace("__NAME__", &format!("{}-operator", kind.to_lowercase()))
        .replace("__TYPESCRIPT__", &typescript_version());
    let lower = kind.to_lowercase();
    let sample = format!("samples/{lower}.yaml");
    let test = fill(TEST).replace("__SAMPLE__", &sample).replace("__TEST__", &lower);
    vec![
        ("operator.ct".into(), fill(OPERATOR)),
        (sample, fill(SAMPLE)),
        (format!("tests/{lower}.yaml"), test),
        ("values.yaml".into(), VALUES.to_owned()),
        ("package.json".into(), package),
        (".gitignore".into(), GITIGNORE.to_owned()),
        ("tsconfig.json".into(), TSCONFIG.to_owned()),
        (".vscode/settings.json".into(), VSCODE.to_owned()),
        ("ctop.d.ts".into(), SDK_DTS.to_owned()),
    ]
    .into_iter()
    .chain(editor_types())
    .collect()
}

/// The `@types/ctop` package an operator's `package.json` links from `.ctop/types`, so that
/// `"ctop"` resolves without the tsconfig (see the module docs), as `(relative path,
/// contents)`.
#[must_use]
pub fn editor_types() -> [(String, String); 2] {
    let manifest = serde_json::json!({
        "name": "@types/ctop",
        "version": "0.0.0",
        "private": true,
        "description": "The typings of ctop's built-in module, written by `ctop init` and `ctop types`",
        "types": "index.d.ts",
    });
    [
        (".ctop/types/package.json".into(), format!("{manifest:#}\n")),
        (".ctop/types/index.d.ts".into(), SDK_DTS.to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_json_pins_the_sdks_typescript_and_runs_the_check() {
        let files = files("Demo", "demo.example.com");
        let package = files.iter().find(|(rel, _)| rel == "package.json").map(|(_, t)| t.as_str());
        let package: serde_json::Value = serde_json::from_str(package.unwrap_or_default()).expect("JSON");
        assert_eq!(package["name"], "demo-operator");
        assert_eq!(package["private"], true);
        assert_eq!(package["type"], "module");
        assert_eq!(package["scripts"]["check"], "ctop check .");
        assert_eq!(package["scripts"]["test"], "ctop test .");
        let test = files
            .iter()
            .find(|(rel, _)| rel == "tests/demo.yaml")
            .map(|(_, t)| t.as_str())
            .unwrap_or_default();
        assert!(
            test.contains("    apply: samples/demo.yaml\n") && test.contains("patch: Demo/hello"),
            "{test}"
        );
        assert!(!test.contains("__"), "every placeholder is filled: {test}");
        assert!(typescript_version().starts_with('^'), "{}", typescript_version());
        assert_eq!(package["devDependencies"]["typescript"], typescript_version());
        assert_eq!(package["devDependencies"]["@types/ctop"], "file:.ctop/types");
        let types = files.iter().find(|(rel, _)| rel == ".ctop/types/package.json").map(|(_, t)| t.as_str());
        let types: serde_json::Value = serde_json::from_str(types.unwrap_or_default()).expect("JSON");
        assert_eq!((&types["name"], &types["types"]), (&"@types/ctop".into(), &"index.d.ts".into()));
        assert!(files.iter().any(|(rel, text)| rel == ".ctop/types/index.d.ts" && text == SDK_DTS));
    }
}
