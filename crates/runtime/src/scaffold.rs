//! The files `ctop init` writes: a working operator, a sample, values, typings and editor
//! settings. Templates live in `crates/runtime/scaffold/`.

use crate::sdk::SDK_DTS;

const OPERATOR: &str = include_str!("../scaffold/operator.ct");
const SAMPLE: &str = include_str!("../scaffold/sample.yaml");
const VALUES: &str = include_str!("../scaffold/values.yaml");
const TSCONFIG: &str = include_str!("../scaffold/tsconfig.json");
const VSCODE: &str = include_str!("../scaffold/.vscode/settings.json");

/// The files of a new operator for `kind` in API group `group`, as `(relative path,
/// contents)`.
pub fn files(kind: &str, group: &str) -> Vec<(String, String)> {
    let fill = |t: &str| t.replace("__KIND__", kind).replace("__GROUP__", group);
    vec![
        ("operator.ct".into(), fill(OPERATOR)),
        (format!("samples/{}.yaml", kind.to_lowercase()), fill(SAMPLE)),
        ("values.yaml".into(), VALUES.to_owned()),
        ("tsconfig.json".into(), TSCONFIG.to_owned()),
        (".vscode/settings.json".into(), VSCODE.to_owned()),
        ("ctop.d.ts".into(), SDK_DTS.to_owned()),
    ]
}
