//! Node's built-in modules (`fs`, `node:fs`, `net`, `child_process`, ...) in a script's
//! import graph.
//!
//! QuickJS has none of them, so a script or package that imports one cannot work. Which
//! specifiers are built-ins is `oxc_resolver`'s list (the `nodejs-built-in-modules` crate,
//! Node's `builtinModules` plus the `node:`-only ones); a package's `browser` field that
//! maps a built-in to `false` makes it an empty module instead, as bundlers do.
//!
//! Start at [`Loader::builtin_chain`]: the words of the error, naming every module on the
//! way from the entry to the import (`operator.ct imports "bad-pkg" →
//! node_modules/bad-pkg/index.js requires "fs"`), so that the user sees which of their
//! dependencies pulled it in.
//!
//! An `import` of a built-in, and a `require()` of one at a module's top level, fail the
//! load. A `require()` of one inside a function body runs only when that function is
//! called (e.g. cron-parser's `CronFileParser` requires `fs` in the methods that read a
//! crontab file): it is compiled into a call that throws the same message then, so the
//! rest of such a package stays usable.

use super::{Edge, Loader};

/// What follows the chain in the error and in the exception of a lazy `require()`.
pub const ADVICE: &str =
    "Node built-in modules are not available in ctop scripts; use a package that does not need them";

impl Loader {
    /// The import chain from the entry to module `file`, ending with `file` importing (or
    /// requiring) `specifier`.
    pub(super) fn builtin_chain(&self, file: &str, specifier: &str, require: bool) -> String {
        let mut edges = vec![Edge { from: file.to_string(), specifier: specifier.to_string(), require }];
        let mut at = file;
        // The parents form a tree rooted at the entry (each module's first importer), so
        // this ends; the bound only guards against a bug.
        while let Some(edge) = self.parents.get(at) {
            if edges.len() > self.parents.len() + 1 {
                break;
            }
            edges.push(edge.clone());
            at = &edge.from;
        }
        edges
            .iter()
            .rev()
            .map(|e| {
                format!("{} {} \"{}\"", e.from, if e.require { "requires" } else { "imports" }, e.specifier)
            })
            .collect::<Vec<_>>()
            .join(" → ")
    }
}
