//! The built-in module `ctop` that every script imports: its JavaScript source (served to
//! QuickJS under the module name `"ctop"`) and its hand-written TypeScript typings.
//!
//! The sources live in `crates/runtime/sdk/`, with their own tests (`npm test` there runs
//! them in Node and type-checks the examples with the real TypeScript compiler).

/// The JavaScript of the module `ctop`.
pub const SDK_JS: &str = include_str!("../sdk/ctop.js");

/// The typings (`ctop.d.ts`) that `ctop init` and `ctop types` write next to a script.
pub const SDK_DTS: &str = include_str!("../sdk/ctop.d.ts");
