//! The built-in module `ctop` that every script imports: its JavaScript (served to QuickJS
//! under the module name `"ctop"`, with the modules it imports), and its TypeScript typings.
//!
//! The sources live in `crates/runtime/sdk/`, with their own tests (`npm test` there runs
//! them in Node and type-checks the examples with the real TypeScript compiler; its README
//! says what is where). `sdk/ctop.js` is the module scripts import; it imports the SDK's
//! other modules, `sdk/src/<name>.js`, which the vm serves as `ctop:src/<name>.js`
//! ([`SDK_MODULES`], [`resolve`]): a name no file of a bundle can have, and only the SDK's
//! own modules can import them.

use sha2::{Digest as _, Sha256};

/// The JavaScript of the module `ctop` (`sdk/ctop.js`).
pub const SDK_JS: &str = include_str!("../sdk/ctop.js");

/// The prefix of the names the SDK's other modules are served under.
const PREFIX: &str = "ctop:";

/// The SDK's modules besides `ctop` itself, `(name, source)`: `sdk/src/z.js` is served as
/// `ctop:src/z.js`. A test checks that every file of `sdk/src/` is here.
pub const SDK_MODULES: &[(&str, &str)] = &[
    ("ctop:src/builtins.js", include_str!("../sdk/src/builtins.js")),
    ("ctop:src/call.js", include_str!("../sdk/src/call.js")),
    ("ctop:src/conversion.js", include_str!("../sdk/src/conversion.js")),
    ("ctop:src/dispatch.js", include_str!("../sdk/src/dispatch.js")),
    ("ctop:src/handler.js", include_str!("../sdk/src/handler.js")),
    ("ctop:src/host.js", include_str!("../sdk/src/host.js")),
    ("ctop:src/invariants.js", include_str!("../sdk/src/invariants.js")),
    ("ctop:src/kinds.js", include_str!("../sdk/src/kinds.js")),
    ("ctop:src/operator.js", include_str!("../sdk/src/operator.js")),
    ("ctop:src/resource.js", include_str!("../sdk/src/resource.js")),
    ("ctop:src/util.js", include_str!("../sdk/src/util.js")),
    ("ctop:src/z.js", include_str!("../sdk/src/z.js")),
];

/// The typings (`ctop.d.ts`) that `ctop init` and `ctop types` write next to a script: one
/// file, `sdk/ctop.d.ts` with `sdk/z.d.ts` and the generated built-in kinds of `sdk/k8s.d.ts`
/// spliced in where it re-exports them (`build.rs`).
pub const SDK_DTS: &str = include_str!(concat!(env!("OUT_DIR"), "/ctop.d.ts"));

/// The source of the SDK module `name` (one of [`SDK_MODULES`]).
pub fn module(name: &str) -> Option<&'static str> {
    SDK_MODULES.iter().find(|(n, _)| *n == name).map(|(_, source)| *source)
}

/// The SDK module that `specifier` names when the SDK module `base` (`"ctop"` or one of
/// [`SDK_MODULES`]) imports it: a relative specifier (`./src/z.js` from `ctop`, `./z.js` from
/// `ctop:src/kinds.js`) of one of [`SDK_MODULES`]. `None` for anything else.
pub fn resolve(base: &str, specifier: &str) -> Option<&'static str> {
    let dir = if base == crate::vm::SDK_MODULE {
        ""
    } else {
        let path = base.strip_prefix(PREFIX).filter(|_| module(base).is_some())?;
        path.rsplit_once('/').map_or("", |(dir, _)| dir)
    };
    if !specifier.starts_with("./") && !specifier.starts_with("../") {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in specifier.split('/') {
        match part {
            "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    let name = format!("{PREFIX}{}", parts.join("/"));
    SDK_MODULES.iter().find(|(n, _)| *n == name).map(|(n, _)| *n)
}

/// The sha256 (hex) of the SDK's JavaScript: every module's name and source. A recording
/// notes it, so that a replay by another SDK says so.
pub fn sha256_hex() -> String {
    let mut hash = Sha256::new();
    for (name, source) in std::iter::once((crate::vm::SDK_MODULE, SDK_JS)).chain(SDK_MODULES.iter().copied())
    {
        hash.update(name.as_bytes());
        hash.update([0]);
        hash.update(source.as_bytes());
        hash.update([0]);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// One built-in kind the SDK has a handle for (`Deployment`), as `sdk/src/builtins.js` (which
/// is generated from k8s-openapi) declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinKind {
    /// `apps/v1`, `v1`.
    pub api_version: String,
    /// `Deployment`.
    pub kind: String,
    /// The resource name, `deployments`.
    pub plural: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
}

/// Every built-in kind the SDK has a handle for, in the order `sdk/src/builtins.js` lists
/// them: read from its `export const <Kind> = k(apiVersion, kind, plural, namespaced);` lines.
pub fn builtin_kinds() -> Vec<BuiltinKind> {
    let source = module("ctop:src/builtins.js").unwrap_or_default();
    source
        .lines()
        .filter_map(|line| {
            let args = line.strip_prefix("export const ")?.split_once(" = k(")?.1.strip_suffix(");")?;
            let (api_version, kind, plural, namespaced): (String, String, String, bool) =
                serde_json::from_str(&format!("[{args}]")).ok()?;
            Some(BuiltinKind { api_version, kind, plural, namespaced })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
