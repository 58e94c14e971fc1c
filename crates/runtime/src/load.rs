//! Loading an operator script: TypeScript → JavaScript, module resolution, the bundle.
//!
//! Start at [`load_dir`]: it reads the entry file (usually `operator.ct`) from the operator
//! directory, follows its imports, and returns a [`Bundle`] with one compiled ES module per
//! file. Each file goes through oxc: parse, semantic syntax checks, TypeScript stripping
//! (enums and namespaces become JavaScript; everything else ES2023+ is kept as written, since
//! QuickJS runs it natively), import rewriting, then printing with a source map.
//!
//! Resolution rules:
//! - `"ctop"` and the plan's `"https://github.com/cloudticon/k8s@master"` are the built-in
//!   module and become `"ctop"`; they are not loaded from disk.
//! - Relative specifiers (`./x`, `../x`) are resolved against the importing file: the exact
//!   file if it has a supported extension ([`EXTENSIONS`]), then `x.js` → `x.ts`, then `x`
//!   plus each extension, then `x/index` plus each extension. They must stay inside the
//!   operator directory (symbolic links are followed for that check).
//! - Anything else (packages, absolute paths, URLs) is an error.
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

use std::collections::{BTreeMap, HashMap};
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
    /// An import that is neither relative nor the built-in module (a package, an absolute
    /// path, a URL).
    #[error(
        "{file}:{line}:{column}: cannot import \"{specifier}\": only \"ctop\" and relative paths (./, ../) can be imported; copy the code into the operator directory and import it relatively"
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
    #[error("{}: cannot read: {source}; check that it exists, is readable and is UTF-8 text", path.display())]
    Io {
        /// The operator directory as given, or a module's path relative to it.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Load `dir/entry` and every module it imports into a [`Bundle`].
///
/// Relative imports may omit the extension (`.ts`, `.ct`, `.js`, `.mjs`, `.json`) and
/// `/index`; `"ctop"` and `"https://github.com/cloudticon/k8s@master"` are the built-in
/// module and are not loaded. Import cycles are fine. The result is deterministic: the same
/// files give an identical bundle wherever the directory is.
pub fn load_dir(dir: &Path, entry: &str) -> Result<Bundle, LoadError> {
    let root = dir.canonicalize().map_err(|source| LoadError::Io { path: dir.to_path_buf(), source })?;
    let mut loader = Loader { root, names: HashMap::new() };
    let entry_name = loader.resolve_entry(entry)?;
    let mut modules = BTreeMap::new();
    // Depth-first in source order, so the first error reported is always the same one.
    let mut pending = vec![entry_name.clone()];
    while let Some(name) = pending.pop() {
        if modules.contains_key(&name) {
            continue;
        }
        let (module, deps) = loader.compile(&name)?;
        modules.insert(name, module);
        pending.extend(deps.into_iter().rev().filter(|d| !modules.contains_key(d)));
    }
    Ok(Bundle { entry: entry_name, modules })
}

/// Resolution state for one [`load_dir`] call.
struct Loader {
    /// Canonical operator directory.
    root: PathBuf,
    /// Canonical file path → module name, so one file reached under two names (symlinks,
    /// case-insensitive file systems) is one module.
    names: HashMap<PathBuf, String>,
}

/// Why a specifier did not resolve; turned into a [`LoadError`] with its position.
enum ResolveError {
    NotRelative,
    NotFound,
    Outside,
}

impl Loader {
    fn resolve_entry(&mut self, entry: &str) -> Result<String, LoadError> {
        let fail = |reason: &str| LoadError::Entry { entry: entry.to_string(), reason: reason.to_string() };
        if Path::new(entry).is_absolute() || entry.contains('\\') {
            return Err(fail("is not a relative path"));
        }
        let base = join("", entry).ok_or_else(|| fail("is outside the operator directory"))?;
        match self.find(&base) {
            Ok(name) => Ok(name),
            Err(ResolveError::Outside) => Err(fail("is outside the operator directory")),
            Err(_) => Err(fail("does not exist (or has no .ts, .ct, .js, .mjs or .json extension)")),
        }
    }

    /// Resolve `specifier` imported from module `from` to a module name or [`BUILTIN_MODULE`].
    fn resolve(&mut self, from: &str, specifier: &str) -> Result<String, ResolveError> {
        if BUILTIN_SPECIFIERS.contains(&specifier) {
            return Ok(BUILTIN_MODULE.to_string());
        }
        let relative = specifier.starts_with("./")
            || specifier.starts_with("../")
            || specifier == "."
            || specifier == "..";
        if !relative || specifier.contains('\\') {
            return Err(ResolveError::NotRelative);
        }
        let base = join(from, specifier).ok_or(ResolveError::Outside)?;
        self.find(&base)
    }

    /// The first existing candidate file for the normalized path `base`.
    fn find(&mut self, base: &str) -> Result<String, ResolveError> {
        for candidate in candidates(base) {
            let path = self.root.join(&candidate);
            if !path.is_file() {
                continue;
            }
            let canonical = path.canonicalize().map_err(|_| ResolveError::NotFound)?;
            if !canonical.starts_with(&self.root) {
                return Err(ResolveError::Outside);
            }
            return Ok(self.names.entry(canonical).or_insert(candidate).clone());
        }
        Err(ResolveError::NotFound)
    }

    /// Read and compile module `name`; returns it and the modules it imports.
    fn compile(&mut self, name: &str) -> Result<(Module, Vec<String>), LoadError> {
        let text = std::fs::read_to_string(self.root.join(name))
            .map_err(|source| LoadError::Io { path: PathBuf::from(name), source })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if name.ends_with(".json") {
            return json_module(name, text).map(|m| (m, Vec::new()));
        }
        self.compile_script(name, text)
    }

    fn compile_script(&mut self, name: &str, text: &str) -> Result<(Module, Vec<String>), LoadError> {
        let allocator = Allocator::default();
        let source_type = if name.ends_with(".js") || name.ends_with(".mjs") {
            SourceType::mjs()
        } else {
            SourceType::ts().with_module(true)
        };
        let diagnostic = |d: &OxcDiagnostic| {
            // The primary label, else the latest one: where the problem was detected
            // (e.g. the second declaration of a redeclared name).
            let label =
                d.labels.iter().find(|l| l.primary()).or_else(|| d.labels.iter().max_by_key(|l| l.offset()));
            let (line, column) = line_col(text, label.map_or(0, |l| l.offset()));
            let message = match &d.help {
                Some(help) => format!("{} ({help})", d.message),
                None => d.message.to_string(),
            };
            (name.to_string(), line, column, message)
        };

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
                    .resolve(name, specifier)
                    .map_err(|kind| resolve_error(kind, name, text, offset, specifier))?;
                resolved.insert(specifier.to_string(), target);
            }
        }

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
            None => self.loader.resolve(self.file, specifier),
        };
        match target {
            Ok(target) => {
                literal.value = Str::from_str_in(&target, &self.allocator);
                literal.raw = None;
                if target != BUILTIN_MODULE {
                    self.deps.push(target);
                }
            }
            Err(kind) => {
                self.error = Some(resolve_error(kind, self.file, self.text, literal.span.start, specifier));
            }
        }
    }
}

/// The [`LoadError`] for a specifier that did not resolve, at byte `offset` of `text`.
fn resolve_error(kind: ResolveError, file: &str, text: &str, offset: u32, specifier: &str) -> LoadError {
    let (line, column) = line_col(text, offset);
    let (file, specifier) = (file.to_string(), specifier.to_string());
    match kind {
        ResolveError::NotRelative => LoadError::NotRelative { file, line, column, specifier },
        ResolveError::NotFound => LoadError::Unresolved { file, line, column, specifier },
        ResolveError::Outside => LoadError::OutsideRoot { file, line, column, specifier },
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

/// Join specifier `spec` to the directory of module `from`, normalizing `.` and `..`.
/// `None` if the result would leave the operator directory.
fn join(from: &str, spec: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    parts.pop();
    for seg in spec.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            seg => parts.push(seg),
        }
    }
    Some(parts.join("/"))
}

/// Candidate module names for the normalized path `base`, in resolution order.
fn candidates(base: &str) -> Vec<String> {
    let mut out = Vec::new();
    if !base.is_empty() {
        let has_ext = EXTENSIONS.iter().any(|ext| base.strip_suffix(ext).is_some_and(|s| s.ends_with('.')));
        if has_ext {
            out.push(base.to_string());
        }
        if let Some(stem) = base.strip_suffix(".js") {
            out.push(format!("{stem}.ts"));
        }
        out.extend(EXTENSIONS.iter().map(|ext| format!("{base}.{ext}")));
    }
    let dir = if base.is_empty() { String::new() } else { format!("{base}/") };
    out.extend(EXTENSIONS.iter().map(|ext| format!("{dir}index.{ext}")));
    out
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
mod tests {
    use super::*;
    use std::fs;
    use tempfile::TempDir;

    fn tree(files: &[(&str, &str)]) -> TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    fn load(files: &[(&str, &str)]) -> Result<Bundle, LoadError> {
        let dir = tree(files);
        load_dir(dir.path(), "operator.ct")
    }

    fn js(bundle: &Bundle, name: &str) -> String {
        bundle.modules[name].js.clone()
    }

    /// Whether `code` parses as a plain JavaScript module without errors.
    fn is_valid_js(code: &str) -> bool {
        let allocator = Allocator::default();
        let ret = Parser::new(&allocator, code, SourceType::mjs()).parse();
        ret.diagnostics.errors().next().is_none() && !ret.panicked
    }

    #[test]
    fn strips_each_typescript_construct() {
        // (construct, source, must appear in the output, must not appear in the output)
        let cases: &[(&str, &str, &[&str], &[&str])] = &[
            (
                "interface",
                "interface Spec { replicas: number }\nexport const x = 1;",
                &["export const x = 1"],
                &["interface", "replicas"],
            ),
            (
                "type alias",
                "type Name = string | undefined;\nexport const n: Name = 'a';",
                &["export const n = \"a\""],
                &["type", "Name"],
            ),
            (
                "enum",
                "export enum Phase { Ready = 'Ready', Failed = 'Failed' }\nexport const p = Phase.Ready;",
                &["Phase[\"Ready\"] = \"Ready\"", "Phase.Ready"],
                &["enum"],
            ),
            (
                "generics",
                "function id<T extends object>(v: T): T { return v; }\nexport const m = new Map<string, number>(); id<{}>({});",
                &["function id(v)", "new Map()", "id({})"],
                &["<T", "<string"],
            ),
            (
                "as",
                "const o = { a: 1 } as const; export const v = (o as any).a as number;",
                &["const o = { a: 1 }", "o.a"],
                &[" as "],
            ),
            (
                "satisfies",
                "export const cfg = { port: 80 } satisfies Record<string, number>;",
                &["export const cfg = { port: 80 }"],
                &["satisfies", "Record"],
            ),
            (
                "non-null",
                "declare const m: Map<string, string>; export const v = m.get('a')!.length;",
                &["m.get(\"a\").length"],
                &["!"],
            ),
            (
                "import type / export type",
                "import type { Foo } from './types';\nexport type { Foo };\nexport type Bar = Foo;\nexport const x = 1;",
                &["export const x = 1"],
                &["import", "Foo", "Bar"],
            ),
            (
                "type-only import specifier",
                "import { type Foo, helper } from './types';\nexport const x: Foo = helper();",
                &["import { helper } from \"types.ts\"", "helper()"],
                &["Foo"],
            ),
            (
                "parameter properties",
                "export class Svc { constructor(private readonly name: string, public port = 80) {} }",
                &["this.name = name", "this.port = port"],
                &["private", "readonly", "public"],
            ),
            (
                "declare",
                "declare const VERSION: string;\ndeclare function f(): void;\ndeclare module 'x' { }\ndeclare global { var g: number }\nexport const x = 1;",
                &["export const x = 1"],
                &["declare", "VERSION", "global"],
            ),
            (
                "abstract class",
                "export abstract class Base { abstract run(): void; hello() { return 1; } }\nexport class Impl extends Base { run() {} }",
                &["export class Base", "hello()", "class Impl extends Base"],
                &["abstract"],
            ),
            (
                "optional chaining and nullish",
                "export const f = (o?: { a?: { b?: number } }) => o?.a?.b ?? 0;",
                &["o?.a?.b ?? 0"],
                &["?:"],
            ),
            ("namespace", "export namespace NS { export const k = 1; }", &["NS.k = 1"], &["namespace"]),
        ];
        for (construct, source, present, absent) in cases {
            let bundle = load(&[
                ("operator.ct", source),
                ("types.ts", "export interface Foo { a: 1 }\nexport function helper(): any { return 1; }\n"),
            ])
            .unwrap_or_else(|e| panic!("{construct}: {e}"));
            let out = js(&bundle, "operator.ct");
            assert!(is_valid_js(&out), "{construct}: not plain JS:\n{out}");
            for p in *present {
                assert!(out.contains(p), "{construct}: missing {p:?} in\n{out}");
            }
            for a in *absent {
                assert!(!out.contains(a), "{construct}: unexpected {a:?} in\n{out}");
            }
        }
    }

    #[test]
    fn type_only_imports_load_nothing() {
        let b = load(&[
            (
                "operator.ct",
                "import type { A } from './missing';\nimport { B } from './b';\nimport { unused } from './c';\nlet x: A | B;\nexport {};",
            ),
            ("b.ts", "export interface B { b: 1 }"),
            ("c.ts", "export const unused = 1;"),
        ])
        .unwrap();
        assert_eq!(b.modules.keys().collect::<Vec<_>>(), ["operator.ct"]);

        // Imports TypeScript elides are still checked, like tsc does.
        let err = load(&[("operator.ct", "import { B } from './also-missing';\nlet x: B;\nexport {};")])
            .unwrap_err();
        assert!(matches!(err, LoadError::Unresolved { line: 1, column: 19, .. }), "{err:?}");
    }

    #[test]
    fn output_is_an_es_module_with_rewritten_specifiers() {
        let b = load(&[
            (
                "operator.ct",
                "import { resource, operator } from \"https://github.com/cloudticon/k8s@master\";\n\
                 import * as sdk from 'ctop';\n\
                 import { util } from './lib/util';\n\
                 import data from './data.json' with { type: 'json' };\n\
                 export * from './lib';\n\
                 export { util as u2 } from './lib/util.ts';\n\
                 export const lazy = () => import('./lib/lazy.js');\n\
                 resource(util, data, sdk); operator();\n",
            ),
            ("lib/util.ts", "export const util = 1;"),
            ("lib/index.ts", "export const fromIndex = 1;"),
            ("lib/lazy.ts", "export const later = 2;"),
            ("data.json", "{ \"b\": 1, \"a\": [true, null] }\n"),
        ])
        .unwrap();
        let out = js(&b, "operator.ct");
        assert!(out.contains("import { resource, operator } from \"ctop\";"), "{out}");
        assert!(out.contains("import * as sdk from \"ctop\";"), "{out}");
        assert!(out.contains("import { util } from \"lib/util.ts\";"), "{out}");
        assert!(out.contains("import data from \"data.json\";"), "{out}");
        assert!(out.contains("export * from \"lib/index.ts\";"), "{out}");
        assert!(out.contains("export { util as u2 } from \"lib/util.ts\";"), "{out}");
        assert!(out.contains("import(\"lib/lazy.ts\")"), "{out}");
        assert!(!out.contains("with"), "import attributes dropped: {out}");
        assert_eq!(
            b.modules.keys().collect::<Vec<_>>(),
            ["data.json", "lib/index.ts", "lib/lazy.ts", "lib/util.ts", "operator.ct"]
        );
        assert_eq!(js(&b, "data.json"), "export default { \"b\": 1, \"a\": [true, null] };\n");
        assert_eq!(b.modules["data.json"].source_map, None);
        assert!(b.modules["lib/util.ts"].source_map.is_some());
    }

    #[test]
    fn resolution_order_and_parent_dirs() {
        let b = load(&[
            ("operator.ct", "import './a'; import './b.js'; import './c.mjs'; import './d';"),
            ("a.ts", "import '../x/../a.ts';"),
            ("a.ct", "throw 1;"),
            ("b.ts", "import './sub/deep';"),
            ("c.mjs", "export {};"),
            ("d/index.ct", "import '../c.mjs';"),
            ("sub/deep.js", "import '..';"),
            ("index.json", "{}"),
        ]);
        // "../x/../a.ts" from a.ts leaves the directory before coming back: rejected.
        assert!(matches!(b, Err(LoadError::OutsideRoot { .. })), "{b:?}");

        let b = load(&[
            ("operator.ct", "import './a'; import './b.js'; import './c.mjs'; import './d';"),
            ("a.ts", "import './sub/../a.ts';"),
            ("a.ct", "throw 1;"),
            ("b.ts", "import './sub/deep';"),
            ("c.mjs", "export {};"),
            ("d/index.ct", "import '../c.mjs';"),
            ("sub/deep.js", "import '..';"),
            ("index.json", "{}"),
        ])
        .unwrap();
        assert_eq!(
            b.modules.keys().collect::<Vec<_>>(),
            ["a.ts", "b.ts", "c.mjs", "d/index.ct", "index.json", "operator.ct", "sub/deep.js"]
        );
        assert!(js(&b, "operator.ct").contains("import \"b.ts\";"));
        assert!(js(&b, "sub/deep.js").contains("import \"index.json\";"));
    }

    #[test]
    fn cycles_load() {
        let b = load(&[
            ("operator.ct", "import { a } from './a'; export const root = a;"),
            ("a.ts", "import { b } from './b'; export const a = () => b();"),
            ("b.ts", "import { root } from './operator.ct'; import { a } from './a'; export const b = () => [root, a];"),
        ])
        .unwrap();
        assert_eq!(b.modules.len(), 3);
        assert!(js(&b, "b.ts").contains("from \"operator.ct\""));
    }

    #[test]
    fn syntax_error_position() {
        let err = load(&[("operator.ct", "const a = 1;\n\nfunction f( {\n  return a;\n}\n")]).unwrap_err();
        let LoadError::Syntax { file, line, .. } = &err else { panic!("{err:?}") };
        assert_eq!(file, "operator.ct");
        assert_eq!(*line, 4);
        assert!(err.to_string().starts_with("operator.ct:4:"), "{err}");

        let err = load(&[("operator.ct", "import './lib/x';"), ("lib/x.ts", "let a = 1;\n  let a = 2;\n")])
            .unwrap_err();
        assert!(
            matches!(&err, LoadError::Syntax { file, line: 2, column: 7, .. } if file == "lib/x.ts"),
            "{err:?}"
        );

        let err = load(&[("operator.ct", "// é\nconst s = 'é'; const = 3;")]).unwrap_err();
        assert!(matches!(err, LoadError::Syntax { line: 2, column: 22, .. }), "{err:?}");
    }

    #[test]
    fn unresolved_import_position() {
        let err = load(&[("operator.ct", "import { x } from 'ctop';\n  import y from \"./lib/nope\";\n")])
            .unwrap_err();
        assert!(
            matches!(&err, LoadError::Unresolved { file, line: 2, column: 17, specifier }
                if file == "operator.ct" && specifier == "./lib/nope"),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(text.starts_with("operator.ct:2:17: cannot resolve import \"./lib/nope\""), "{text}");

        // A file with an unsupported extension does not resolve either.
        let err = load(&[("operator.ct", "import './cfg.yaml';"), ("cfg.yaml", "a: 1")]).unwrap_err();
        assert!(matches!(err, LoadError::Unresolved { .. }), "{err:?}");
    }

    #[test]
    fn bare_and_absolute_specifiers_are_rejected() {
        for spec in ["lodash", "/etc/passwd", "https://example.com/x.js", "node:fs"] {
            let err = load(&[("operator.ct", &format!("import '{spec}';"))]).unwrap_err();
            assert!(
                matches!(&err, LoadError::NotRelative { line: 1, column: 8, specifier, .. } if specifier == spec),
                "{spec}: {err:?}"
            );
        }
    }

    #[test]
    fn imports_escaping_the_directory_are_rejected() {
        let outer = tree(&[("secret.ts", "export const s = 1;"), ("op/lib/x.ts", "export {};")]);
        fs::write(outer.path().join("op/operator.ct"), "import './lib/x';\nimport { s } from '../secret';\n")
            .unwrap();
        let err = load_dir(&outer.path().join("op"), "operator.ct").unwrap_err();
        assert!(
            matches!(&err, LoadError::OutsideRoot { file, line: 2, column: 19, specifier }
                if file == "operator.ct" && specifier == "../secret"),
            "{err:?}"
        );
        assert!(err.to_string().contains("outside the operator directory"));

        let err = load_dir(&outer.path().join("op"), "../secret.ts").unwrap_err();
        assert!(matches!(err, LoadError::Entry { .. }), "{err:?}");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_directory_are_rejected() {
        let outer = tree(&[("secret.ts", "export const s = 1;"), ("op/operator.ct", "import './link';")]);
        std::os::unix::fs::symlink(outer.path().join("secret.ts"), outer.path().join("op/link.ts")).unwrap();
        let err = load_dir(&outer.path().join("op"), "operator.ct").unwrap_err();
        assert!(matches!(err, LoadError::OutsideRoot { .. }), "{err:?}");
    }

    #[test]
    fn invalid_json_position() {
        let err = load(&[
            ("operator.ct", "import d from './data.json';\nconsole.log(d);"),
            ("data.json", "{\n  \"a\": 1,\n  \"b\": ,\n}"),
        ])
        .unwrap_err();
        assert!(
            matches!(&err, LoadError::Json { file, line: 3, column: 8, .. } if file == "data.json"),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("data.json:3:8: invalid JSON: expected value"), "{err}");

        let err = load(&[("operator.ct", "import './e.json';"), ("e.json", "")]).unwrap_err();
        assert!(matches!(err, LoadError::Json { line: 1, column: 1, .. }), "{err:?}");
    }

    #[test]
    fn dynamic_import_needs_a_literal() {
        let err = load(&[("operator.ct", "const n = './a';\nawait import(n);")]).unwrap_err();
        assert!(matches!(err, LoadError::DynamicImport { line: 2, column: 7, .. }), "{err:?}");
    }

    #[test]
    fn entry_and_directory_errors() {
        let dir = tree(&[("main.ts", "export {};")]);
        let err = load_dir(dir.path(), "operator.ct").unwrap_err();
        assert!(matches!(err, LoadError::Entry { .. }), "{err:?}");
        assert!(err.to_string().contains("does not exist"));
        // The entry resolves like an import.
        assert_eq!(load_dir(dir.path(), "main").unwrap().entry, "main.ts");
        assert_eq!(load_dir(dir.path(), "./main.ts").unwrap().entry, "main.ts");

        let err = load_dir(&dir.path().join("nope"), "operator.ct").unwrap_err();
        assert!(matches!(err, LoadError::Io { .. }), "{err:?}");

        let dir = tree(&[("operator.ct", "import './bin.ts';")]);
        fs::write(dir.path().join("bin.ts"), [0xff, 0xfe, 0x00]).unwrap();
        let err = load_dir(dir.path(), "operator.ct").unwrap_err();
        assert!(matches!(&err, LoadError::Io { path, .. } if path == Path::new("bin.ts")), "{err:?}");
    }

    #[test]
    fn unsupported_typescript_is_reported() {
        let cases = [
            "const a = 1;\nexport = a;\n",
            "import fs = require('fs');\nfs;\n",
            "export namespace NS {\n  export let counter = 1;\n}\n",
        ];
        for source in cases {
            let err = load(&[("operator.ct", source)]).unwrap_err();
            assert!(matches!(&err, LoadError::Unsupported { line: 1 | 2, .. }), "{source}: {err:?}");
            assert!(err.to_string().contains("unsupported TypeScript"), "{err}");
        }
    }

    #[test]
    fn deterministic_bundles() {
        let files: &[(&str, &str)] = &[
            ("operator.ct", "// the operator\nimport { a } from './lib/a';\nexport const x: number = a;\n"),
            ("lib/a.ts", "export const a = 1;\n"),
            ("cfg.json", "{\"k\": 1}"),
        ];
        let one = load(files).unwrap();
        let two = load(files).unwrap();
        assert_eq!(one, two);
        assert_eq!(one.to_gz(), two.to_gz());
        assert_eq!(one.sha256_hex(), two.sha256_hex());
        assert!(!one.modules["operator.ct"].source_map.as_ref().unwrap().contains("/tmp"));

        let mut changed = files.to_vec();
        changed[0].1 = "// the operator!\nimport { a } from './lib/a';\nexport const x: number = a;\n";
        let three = load(&changed).unwrap();
        assert_ne!(one.sha256_hex(), three.sha256_hex());
        assert_ne!(one.to_gz(), three.to_gz());
        assert_eq!(Bundle::from_gz(&three.to_gz()).unwrap(), three);
    }

    #[test]
    fn original_position_maps_back_to_typescript() {
        let source = "interface Spec {\n  replicas: number;\n}\n\ntype T = Spec;\n\nexport function check(s: Spec): void {\n  if (s.replicas < 0) {\n    throw new Error('negative');\n  }\n}\n";
        let b = load(&[("operator.ct", source)]).unwrap();
        let out = js(&b, "operator.ct");
        let (idx, text) = out.lines().enumerate().find(|(_, l)| l.contains("throw")).unwrap();
        let line = idx as u32 + 1;
        let column = text.find("throw").unwrap() as u32 + 1;
        assert!(line < 9, "types were stripped, so the line moved: {out}");
        assert_eq!(b.original_position("operator.ct", line, column), Some((9, 5)));
        let col_new = text.find("new").unwrap() as u32 + 1;
        assert_eq!(b.original_position("operator.ct", line, col_new), Some((9, 11)));
        assert_eq!(b.original_position("operator.ct", 0, 1), None);
        assert_eq!(b.original_position("operator.ct", 500, 1), None);
    }

    #[test]
    fn helpers() {
        assert_eq!(join("lib/a.ts", "../b").as_deref(), Some("b"));
        assert_eq!(join("a.ts", "./x/./y/../z").as_deref(), Some("x/z"));
        assert_eq!(join("a.ts", "../x"), None);
        assert_eq!(join("a.ts", ".").as_deref(), Some(""));
        assert_eq!(candidates("")[0], "index.ts");
        assert_eq!(&candidates("x.js")[..3], ["x.js", "x.ts", "x.js.ts"]);
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("😀x", 4), (1, 3));
    }
}
