//! Loading an operator script: TypeScript → JavaScript, module resolution, the bundle.
//!
//! Start at [`load_dir`]: it reads the entry file (usually `operator.ct`) from the operator
//! directory, follows its imports, and returns a [`Bundle`] with one compiled ES module per
//! file. Each file goes through oxc: parse, semantic syntax checks, TypeScript stripping
//! (enums and namespaces become JavaScript; everything else ES2023+ is kept as written, since
//! QuickJS runs it natively), import rewriting, then printing with a source map.
//!
//! Resolution rules:
//! - `"ctop"` and the URL specifier `"https://github.com/cloudticon/k8s@master"` are the built-in
//!   module and become `"ctop"`; they are not loaded from disk.
//! - Relative specifiers (`./x`, `../x`) are resolved against the importing file: the exact
//!   file if it has a supported extension ([`EXTENSIONS`]), then `x.js` → `x.ts`, then `x`
//!   plus each extension, then `x/index` plus each extension. They must stay inside the
//!   operator directory (symbolic links are followed for that check).
//! - Bare specifiers (`semver`, `cron-parser`, `pkg/sub`, `#internal`) are npm packages
//!   from the operator's `node_modules`, resolved like a bundler would (`resolve.rs`), and
//!   so is everything a package file imports. Package files go into the bundle as written
//!   with their specifiers replaced, CommonJS ones wrapped as ES modules (`commonjs.rs`).
//!   Node's built-in modules are refused with the chain of imports that reached them
//!   (`node_builtins.rs`).
//! - Absolute paths and URLs are an error.
//! - `import()` with a string literal is rewritten like a static import; any other
//!   `import()` is an error, because its target could not be bundled.
//!
//! Every import not written as `import type`/`export type` must resolve (like `tsc`), but
//! only what survives TypeScript stripping is loaded: type-only specifiers and imports used
//! only as types (which TypeScript elides) load nothing. Import attributes
//! (`with { type: "json" }`) are dropped: the bundle already says what each module is.
//! `.json` files become `export default <json>;` modules (the JSON text as written, so key
//! order is kept; as in any object literal, a `"__proto__"` key sets the prototype).
//!
//! Errors name the file relative to the operator directory and a 1-based line and column
//! (UTF-16 units, like editors and source maps) in the original source.

mod commonjs;
mod node_builtins;
mod resolve;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    ExportAllDeclaration, ExportFromDeclaration, Expression, ImportDeclaration, ImportExpression, Str,
    StringLiteral,
};
use oxc_ast_visit::VisitMut;
use oxc_codegen::{Codegen, CodegenOptions};
use oxc_diagnostics::OxcDiagnostic;
use oxc_parser::Parser;
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;
use oxc_transformer::{EnvOptions, Module as ModuleFormat, TransformOptions, Transformer};

use crate::bundle::{Bundle, Module};

pub use resolve::EMPTY_MODULE;

/// Name of the built-in module in rewritten imports; the vm provides it from the sdk.
pub const BUILTIN_MODULE: &str = "ctop";

/// Import specifiers that denote the built-in module.
pub const BUILTIN_SPECIFIERS: [&str; 2] = ["ctop", "https://github.com/cloudticon/k8s@master"];

/// File extensions a module may have, in the order they are tried for extension-less imports.
pub const EXTENSIONS: [&str; 5] = ["ts", "ct", "js", "mjs", "json"];

/// Why an operator script could not be loaded. `file` is relative to the operator
/// directory; `line` and `column` are 1-based positions in that file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is not valid TypeScript/JavaScript (including early errors such as a
    /// redeclared `let`).
    #[error("{file}:{line}:{column}: syntax error: {message}; fix the code and load again")]
    Syntax {
        /// File with the error.
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
        /// What the parser reported.
        message: String,
    },
    /// The TypeScript transform rejected a construct (e.g. `export =` in a module).
    #[error("{file}:{line}:{column}: unsupported TypeScript: {message}; rewrite it with ES module syntax")]
    Unsupported {
        /// File with the construct.
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
        /// What the transform reported.
        message: String,
    },
    /// A relative import names no file with a supported extension.
    #[error(
        "{file}:{line}:{column}: cannot resolve import \"{specifier}\": no .ts, .ct, .js, .mjs or .json file matches it (the extension and `/index.<ext>` may be left out); check the path and the file name"
    )]
    Unresolved {
        /// Importing file.
        file: String,
        /// 1-based line of the specifier.
        line: u32,
        /// 1-based column of the specifier.
        column: u32,
        /// The specifier as written.
        specifier: String,
    },
    /// An absolute path or a URL.
    #[error(
        "{file}:{line}:{column}: cannot import \"{specifier}\": only \"ctop\", npm packages from node_modules and relative paths (./, ../) can be imported; copy the code into the operator directory and import it relatively"
    )]
    NotRelative {
        /// Importing file.
        file: String,
        /// 1-based line of the specifier.
        line: u32,
        /// 1-based column of the specifier.
        column: u32,
        /// The specifier as written.
        specifier: String,
    },
    /// A relative import leads outside the operator directory (via `..` or a symlink).
    #[error(
        "{file}:{line}:{column}: import \"{specifier}\" points outside the operator directory; move the imported file into the operator directory"
    )]
    OutsideRoot {
        /// Importing file.
        file: String,
        /// 1-based line of the specifier.
        line: u32,
        /// 1-based column of the specifier.
        column: u32,
        /// The specifier as written.
        specifier: String,
    },
    /// A package specifier that `oxc_resolver` could not resolve (not installed, not
    /// exported by the package, ...).
    #[error(
        "{file}:{line}:{column}: cannot resolve package import \"{specifier}\": {message}; install it with `npm install` in the operator directory (is it in package.json?)"
    )]
    Package {
        /// Importing file.
        file: String,
        /// 1-based line of the specifier.
        line: u32,
        /// 1-based column of the specifier.
        column: u32,
        /// The specifier as written.
        specifier: String,
        /// What the resolver reported.
        message: String,
    },
    /// The script or one of its packages imports a Node built-in module (`fs`, `node:net`,
    /// ...), which QuickJS does not have. `chain` names each module from the entry on.
    #[error("{file}:{line}:{column}: {chain}: {advice}", advice = node_builtins::ADVICE)]
    NodeBuiltin {
        /// The file with the import.
        file: String,
        /// 1-based line of the specifier.
        line: u32,
        /// 1-based column of the specifier.
        column: u32,
        /// The built-in as written (`fs`, `node:fs`).
        specifier: String,
        /// `operator.ct imports "pkg" → node_modules/pkg/index.js requires "fs"`.
        chain: String,
    },
    /// `require(expr)` in a CommonJS package file where `expr` is not a string literal.
    #[error(
        "{file}:{line}:{column}: require() needs a string literal argument so that its module can be bundled; use another version of the package or one that does not load modules by computed names"
    )]
    DynamicRequire {
        /// The package file.
        file: String,
        /// 1-based line of the `require(`.
        line: u32,
        /// 1-based column of the `require(`.
        column: u32,
    },
    /// `import(expr)` where `expr` is not a string literal.
    #[error(
        "{file}:{line}:{column}: import() needs a string literal specifier so that its module can be bundled; write the path literally or use a static import"
    )]
    DynamicImport {
        /// Importing file.
        file: String,
        /// 1-based line of the `import(`.
        line: u32,
        /// 1-based column of the `import(`.
        column: u32,
    },
    /// An imported `.json` file is not valid JSON.
    #[error("{file}:{line}:{column}: invalid JSON: {message}; fix the JSON file")]
    Json {
        /// The JSON file.
        file: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
        /// What the JSON parser reported.
        message: String,
    },
    /// The entry is not a file inside the operator directory.
    #[error(
        "entry \"{entry}\": {reason}; pass the path of the script relative to the operator directory (e.g. operator.ct)"
    )]
    Entry {
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading the operator directory or a module failed (missing, unreadable, not UTF-8).
    #[error("cannot read {} (check that it exists, is readable and is UTF-8 text)", path.display())]
    Io {
        /// The operator directory as given, or a module's path relative to it.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl LoadError {
    /// Where in the operator's files the error is: `(file, line, column)`, the file relative
    /// to the operator directory; `None` for errors that are not in a file.
    #[must_use]
    pub fn position(&self) -> Option<(&str, u32, u32)> {
        match self {
            Self::Syntax { file, line, column, .. }
            | Self::Unsupported { file, line, column, .. }
            | Self::Unresolved { file, line, column, .. }
            | Self::NotRelative { file, line, column, .. }
            | Self::OutsideRoot { file, line, column, .. }
            | Self::Package { file, line, column, .. }
            | Self::NodeBuiltin { file, line, column, .. }
            | Self::DynamicRequire { file, line, column, .. }
            | Self::DynamicImport { file, line, column, .. }
            | Self::Json { file, line, column, .. } => Some((file, *line, *column)),
            Self::Entry { .. } | Self::Io { .. } => None,
        }
    }
}

/// Load `dir/entry` and every module it imports into a [`Bundle`].
///
/// Relative imports may omit the extension (`.ts`, `.ct`, `.js`, `.mjs`, `.json`) and
/// `/index`; `"ctop"` and `"https://github.com/cloudticon/k8s@master"` are the built-in
/// module and are not loaded. Import cycles are fine. The result is deterministic: the same
/// files give an identical bundle wherever the directory is.
pub fn load_dir(dir: &Path, entry: &str) -> Result<Bundle, LoadError> {
    let root = dir.canonicalize().map_err(|source| LoadError::Io { path: dir.to_path_buf(), source })?;
    let mut loader = Loader {
        root,
        names: HashMap::new(),
        paths: HashMap::new(),
        kinds: HashMap::new(),
        parents: HashMap::new(),
        packages: resolve::Packages::new(),
        cjs_imports: HashMap::new(),
    };
    let entry_name = loader.resolve_entry(entry)?;
    let mut modules = BTreeMap::new();
    let mut cjs = Vec::new();
    let mut seen = HashSet::new();
    // Depth-first in source order, so the first error reported is always the same one.
    let mut pending = vec![entry_name.clone()];
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let (compiled, deps) = loader.compile(&name)?;
        match compiled {
            Compiled::Module(module) => {
                modules.insert(name, module);
            }
            Compiled::CommonJs(module) => cjs.push((name, module)),
        }
        pending.extend(deps.into_iter().rev().filter(|d| !seen.contains(d)));
    }
    // A CommonJS module's ES exports are the names its importers ask for, known only now.
    for (name, module) in cjs {
        let imports = loader.cjs_imports.remove(&name);
        modules.insert(name, module.finish(imports.as_ref()));
    }
    Ok(Bundle { entry: entry_name, modules })
}

/// How a module is compiled and imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An ES module (the script's files, `.mjs`, `"type": "module"`, ES syntax).
    Esm,
    /// A CommonJS package file, wrapped by [`commonjs`].
    Cjs,
    /// A `.json` file.
    Json,
}

/// How a module was first reached: `from` imports (or requires) it as `specifier`.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    specifier: String,
    require: bool,
}

/// A compiled module, or a CommonJS one whose exports are completed at the end.
enum Compiled {
    Module(Module),
    CommonJs(commonjs::Wrapped),
}

/// Resolution state for one [`load_dir`] call.
struct Loader {
    /// Canonical operator directory.
    root: PathBuf,
    /// Canonical file path → module name, so one file reached under two names (symlinks,
    /// case-insensitive file systems) is one module.
    names: HashMap<PathBuf, String>,
    /// Module name → canonical path, for files resolved by `oxc_resolver` (packages may
    /// live above the operator directory).
    paths: HashMap<String, PathBuf>,
    /// Module name → how it is compiled; known once it is resolved, before it is compiled.
    kinds: HashMap<String, Kind>,
    /// Module name → how it was first reached (the entry has none).
    parents: HashMap<String, Edge>,
    /// The package resolver.
    packages: resolve::Packages,
    /// CommonJS module name → what ES importers import from it.
    cjs_imports: HashMap<String, commonjs::Imports>,
}

/// Why a specifier did not resolve; turned into a [`LoadError`] with its position.
enum ResolveError {
    NotRelative,
    NotFound,
    Outside,
    /// `oxc_resolver`'s message.
    Package(String),
    /// A Node built-in module.
    NodeBuiltin,
}

impl Loader {
    /// Read and compile module `name`; returns it and the modules it imports.
    fn compile(&mut self, name: &str) -> Result<(Compiled, Vec<String>), LoadError> {
        if name == EMPTY_MODULE {
            return Ok((Compiled::CommonJs(commonjs::Wrapped::empty()), Vec::new()));
        }
        let path = self.paths.get(name).cloned().unwrap_or_else(|| self.root.join(name));
        let text = std::fs::read_to_string(path)
            .map_err(|source| LoadError::Io { path: PathBuf::from(name), source })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let kind = self.kinds.get(name).copied().unwrap_or(Kind::Esm);
        let typescript = [".ts", ".ct", ".mts"].iter().any(|ext| name.ends_with(ext));
        match kind {
            Kind::Json => json_module(name, text).map(|m| (Compiled::Module(m), Vec::new())),
            Kind::Esm if resolve::is_package(name) && !typescript => self.compile_package_esm(name, text),
            Kind::Esm => self.compile_script(name, text).map(|(m, deps)| (Compiled::Module(m), deps)),
            Kind::Cjs => self.compile_commonjs(name, text),
        }
    }

    fn compile_script(&mut self, name: &str, text: &str) -> Result<(Module, Vec<String>), LoadError> {
        let allocator = Allocator::default();
        let source_type = if name.ends_with(".js") || name.ends_with(".mjs") {
            SourceType::mjs()
        } else {
            SourceType::ts().with_module(true)
        };
        let diagnostic = |d: &OxcDiagnostic| diagnostic(name, text, d);

        let parsed = Parser::new(&allocator, text, source_type).parse();
        if let Some(d) = parsed.diagnostics.errors().next() {
            let (file, line, column, message) = diagnostic(d);
            return Err(LoadError::Syntax { file, line, column, message });
        }
        // Check every import that is not explicitly type-only, in source order, before
        // TypeScript elides the ones used only as types: a wrong path is always a mistake.
        let mut requests: Vec<(u32, &str)> = parsed
            .module_record
            .requested_modules
            .iter()
            .flat_map(|(specifier, uses)| {
                uses.iter().filter(|u| !u.is_type).map(move |u| (u.span.start, specifier.as_str()))
            })
            .collect();
        requests.sort_unstable();
        let mut resolved = HashMap::new();
        for (offset, specifier) in requests {
            if !resolved.contains_key(specifier) {
                let target = self
                    .resolve(name, specifier, false)
                    .map_err(|kind| self.resolve_error(kind, name, text, offset, specifier, false))?;
                resolved.insert(specifier.to_string(), target);
            }
        }
        self.note_cjs_imports(&parsed.module_record, &resolved);

        let mut program = parsed.program;
        let semantic =
            SemanticBuilder::new().with_check_syntax_error(true).with_enum_eval(true).build(&program);
        if let Some(d) = semantic.diagnostics.errors().next() {
            let (file, line, column, message) = diagnostic(d);
            return Err(LoadError::Syntax { file, line, column, message });
        }
        let scoping = semantic.semantic.into_scoping();
        let options = TransformOptions {
            // Reject `export =` / `import x = require()` instead of emitting CommonJS.
            env: EnvOptions { module: ModuleFormat::Esm, ..EnvOptions::default() },
            ..TransformOptions::default()
        };
        let transformed =
            Transformer::new(&allocator, Path::new(name), &options).build_with_scoping(scoping, &mut program);
        // The transform's warnings (`export =`, namespaces exporting `let`, …) all mean
        // the output would not behave like the source, so they fail the load too.
        if let Some(d) = transformed.diagnostics.first() {
            let (file, line, column, message) = diagnostic(d);
            return Err(LoadError::Unsupported { file, line, column, message });
        }

        let mut rewriter = Rewriter {
            loader: self,
            allocator: &allocator,
            file: name,
            text,
            resolved,
            deps: Vec::new(),
            error: None,
        };
        rewriter.visit_program(&mut program);
        if let Some(error) = rewriter.error {
            return Err(error);
        }
        let deps = rewriter.deps;

        let printed = Codegen::new()
            .with_options(CodegenOptions {
                source_map_path: Some(PathBuf::from(name)),
                ..CodegenOptions::default()
            })
            .build(&program);
        let module = Module { js: printed.code, source_map: printed.map.map(|m| m.to_json_string()) };
        Ok((module, deps))
    }
}

/// Rewrites every import specifier of one module to its canonical module name.
struct Rewriter<'a, 'l> {
    loader: &'l mut Loader,
    allocator: &'a Allocator,
    file: &'l str,
    text: &'l str,
    /// Specifiers already resolved while checking the imports.
    resolved: HashMap<String, String>,
    deps: Vec<String>,
    error: Option<LoadError>,
}

impl<'a> Rewriter<'a, '_> {
    fn rewrite(&mut self, literal: &mut StringLiteral<'a>) {
        if self.error.is_some() {
            return;
        }
        let specifier = literal.value.as_str();
        let target = match self.resolved.get(specifier) {
            Some(target) => Ok(target.clone()),
            None => self.loader.resolve(self.file, specifier, false),
        };
        match target {
            Ok(target) => {
                literal.value = Str::from_str_in(&target, &self.allocator);
                literal.raw = None;
                if self.loader.kinds.get(&target) == Some(&Kind::Cjs) {
                    self.loader.cjs_imports.entry(target.clone()).or_default();
                }
                if target != BUILTIN_MODULE {
                    self.deps.push(target);
                }
            }
            Err(kind) => {
                self.error = Some(self.loader.resolve_error(
                    kind,
                    self.file,
                    self.text,
                    literal.span.start,
                    specifier,
                    false,
                ));
            }
        }
    }
}

impl Loader {
    /// The [`LoadError`] for a specifier that did not resolve, at byte `offset` of `text`.
    fn resolve_error(
        &self,
        kind: ResolveError,
        file: &str,
        text: &str,
        offset: u32,
        specifier: &str,
        require: bool,
    ) -> LoadError {
        let (line, column) = line_col(text, offset);
        let chain = || self.builtin_chain(file, specifier, require);
        let (file, specifier) = (file.to_string(), specifier.to_string());
        match kind {
            ResolveError::NotRelative => LoadError::NotRelative { file, line, column, specifier },
            ResolveError::NotFound => LoadError::Unresolved { file, line, column, specifier },
            ResolveError::Outside => LoadError::OutsideRoot { file, line, column, specifier },
            ResolveError::Package(message) => LoadError::Package { file, line, column, specifier, message },
            ResolveError::NodeBuiltin => {
                LoadError::NodeBuiltin { chain: chain(), file, line, column, specifier }
            }
        }
    }
}

impl<'a> VisitMut<'a> for Rewriter<'a, '_> {
    fn visit_import_declaration(&mut self, it: &mut ImportDeclaration<'a>) {
        self.rewrite(&mut it.source);
        it.with_clause = None;
    }

    fn visit_export_all_declaration(&mut self, it: &mut ExportAllDeclaration<'a>) {
        self.rewrite(&mut it.source);
        it.with_clause = None;
    }

    fn visit_export_from_declaration(&mut self, it: &mut ExportFromDeclaration<'a>) {
        self.rewrite(&mut it.source);
        it.with_clause = None;
    }

    fn visit_import_expression(&mut self, it: &mut ImportExpression<'a>) {
        if let Expression::StringLiteral(literal) = &mut it.source {
            self.rewrite(literal);
            it.options = None;
        } else if self.error.is_none() {
            let (line, column) = line_col(self.text, it.span.start);
            self.error = Some(LoadError::DynamicImport { file: self.file.to_string(), line, column });
        }
    }
}

/// The [`LoadError::Syntax`] for parser diagnostic `d` in module `name`.
fn syntax_error(name: &str, text: &str, d: &OxcDiagnostic) -> LoadError {
    let (file, line, column, message) = diagnostic(name, text, d);
    LoadError::Syntax { file, line, column, message }
}

/// File, position and message of diagnostic `d` in module `name`: at its primary label,
/// else the latest one (where the problem was detected, e.g. the second declaration of a
/// redeclared name).
fn diagnostic(name: &str, text: &str, d: &OxcDiagnostic) -> (String, u32, u32, String) {
    let label = d.labels.iter().find(|l| l.primary()).or_else(|| d.labels.iter().max_by_key(|l| l.offset()));
    let (line, column) = line_col(text, label.map_or(0, |l| l.offset()));
    let message = match &d.help {
        Some(help) => format!("{} ({help})", d.message),
        None => d.message.to_string(),
    };
    (name.to_string(), line, column, message)
}

/// A `.json` file as an ES module: `export default <json as written>;`.
fn json_module(name: &str, text: &str) -> Result<Module, LoadError> {
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        // serde_json counts columns in bytes; report UTF-16 units like everywhere else.
        let line = u32::try_from(e.line()).unwrap_or(u32::MAX).max(1);
        let line_text = text.split('\n').nth(line as usize - 1).unwrap_or("");
        let mut byte = e.column().saturating_sub(1).min(line_text.len());
        while !line_text.is_char_boundary(byte) {
            byte -= 1;
        }
        let column = utf16_len(&line_text[..byte]) + 1;
        let message = e.to_string();
        // Drop serde_json's own " at line L column C" suffix: the position is in front.
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        return Err(LoadError::Json { file: name.to_string(), line, column, message });
    }
    Ok(Module { js: format!("export default {};\n", text.trim()), source_map: None })
}

/// 1-based line and UTF-16 column of byte `offset` in `text`.
fn line_col(text: &str, offset: u32) -> (u32, u32) {
    let mut offset = (offset as usize).min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    (u32::try_from(line).unwrap_or(u32::MAX), utf16_len(&before[line_start..]) + 1)
}

fn utf16_len(s: &str) -> u32 {
    u32::try_from(s.encode_utf16().count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
