//! Package files: npm JavaScript into the bundle, CommonJS wrapped as ES modules.
//!
//! Package files skip the TypeScript transform and the printer: their text goes into the
//! bundle as written, with only import specifiers (and `require()` calls) replaced by
//! splicing, so line numbers stay those of the file in `node_modules` and no source map is
//! needed (a map would carry a second copy of every package's text and double the bundle).
//!
//! - An ES module ([`Loader::compile_package_esm`]) gets each static and literal dynamic
//!   import specifier replaced by its module name.
//! - A CommonJS module ([`Loader::compile_commonjs`]; `.cjs`, a `.js` file of a package
//!   without `"type": "module"` and without `import`/`export`) becomes an ES module that
//!   exports `__ctop_cjs()`, which runs the file's text once, as Node does, inside
//!   `function (exports, require, module, __filename, __dirname, global)` (`global` is
//!   `globalThis`, as in Node) and returns
//!   `module.exports`. Each `require("x")` with a literal argument becomes a reference to
//!   `x` imported at the top: `__ctop_rN()` for a CommonJS module (so its body runs when it
//!   is first required, like Node), the namespace of an ES module, the value of a JSON
//!   file. `require()` with any other argument is a load error naming its position.
//! - ES modules that import a CommonJS module get, like esbuild's interop, a default
//!   export that is `module.exports` (or `exports.default` when the module sets
//!   `__esModule`, as TypeScript and Babel output does) and a named export for each name
//!   that any importer asks for plus each name the file visibly assigns
//!   (`exports.x =`, `module.exports.x =`, `Object.defineProperty(exports, "x", …)`,
//!   `module.exports = { x, … }`), read from `module.exports` when the module is first
//!   evaluated ([`Wrapped::finish`]). These exports are added once every importer is known.

use std::collections::{BTreeSet, HashMap};

use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Argument, AssignmentTarget, CallExpression, Expression, IdentifierReference, ObjectPropertyKind,
    PropertyKey,
};
use oxc_ast_visit::{Visit, walk};
use oxc_parser::Parser;
use oxc_semantic::{ScopeFlags, Scoping, SemanticBuilder};
use oxc_span::{SourceType, Span};
use oxc_syntax::module_record::{ExportImportName, ImportImportName, ModuleRecord};

use super::{
    BUILTIN_MODULE, Compiled, Kind, LoadError, Loader, Module, ResolveError, line_col, node_builtins,
};

/// What ES modules import from one CommonJS module.
#[derive(Debug, Default)]
pub(super) struct Imports {
    /// Named imports and re-exports (`import { x }`, `export { x } from`).
    names: BTreeSet<String>,
}

/// A compiled CommonJS module waiting for its named exports.
pub(super) struct Wrapped {
    /// The module name, for `__filename` and messages.
    name: String,
    /// The imports of what it requires, on one line.
    header: String,
    /// The file's text with its `require()` calls replaced.
    body: String,
    /// Names the file visibly assigns to `exports`.
    exports: BTreeSet<String>,
}

impl Wrapped {
    /// The empty module that stands for a file the `browser` field maps to `false`.
    pub(super) fn empty() -> Self {
        Self {
            name: super::EMPTY_MODULE.to_string(),
            header: String::new(),
            body: String::new(),
            exports: BTreeSet::new(),
        }
    }

    /// The module's JavaScript; with `imports` (it has ES importers) also its default and
    /// named exports.
    pub(super) fn finish(self, imports: Option<&Imports>) -> Module {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string());
        let dir = self.name.rsplit_once('/').map_or("", |(dir, _)| dir);
        // The header and the wrapper's start share the file's first line, so the file's
        // line numbers are those of the bundle.
        let mut js = self.header;
        js.push_str(
            "var __ctop_m;export function __ctop_cjs(){if(__ctop_m===void 0){__ctop_m={exports:{}};\
             (function(exports,require,module,__filename,__dirname,global){",
        );
        js.push_str(&self.body);
        js.push_str(&format!(
            "\n}}).call(__ctop_m.exports,__ctop_m.exports,__ctop_require,__ctop_m,{},{},globalThis);}}return __ctop_m.exports;}}\n",
            quote(&format!("/{}", self.name)),
            quote(&format!("/{dir}")),
        ));
        js.push_str(&format!(
            "function __ctop_require(s){{throw new Error({}+JSON.stringify(s)+\": only require() calls with a string literal are bundled\");}}\n",
            quote(&format!("{}: require of ", self.name)),
        ));
        js.push_str("function __ctop_builtin(m){throw new Error(m);}\n");
        if let Some(imports) = imports {
            js.push_str(
                "var __ctop_e=__ctop_cjs();\
                 export default __ctop_e!==null&&typeof __ctop_e===\"object\"&&__ctop_e.__esModule?__ctop_e.default:__ctop_e;\n",
            );
            let names =
                imports.names.iter().chain(&self.exports).filter(|n| *n != "default" && *n != "__esModule");
            for (i, n) in names.collect::<BTreeSet<_>>().into_iter().enumerate() {
                let q = quote(n);
                js.push_str(&format!("var __ctop_x{i}=__ctop_e[{q}];export{{__ctop_x{i} as {q}}};\n"));
            }
        }
        Module { js, source_map: None }
    }
}

impl Loader {
    /// Remember what the ES module with `record` imports from CommonJS modules;
    /// `resolved` maps its specifiers to module names.
    pub(super) fn note_cjs_imports(&mut self, record: &ModuleRecord<'_>, resolved: &HashMap<String, String>) {
        for target in resolved.values() {
            if self.kinds.get(target) == Some(&Kind::Cjs) {
                self.cjs_imports.entry(target.clone()).or_default();
            }
        }
        let imported = record.import_entries.iter().filter_map(|e| match &e.import_name {
            ImportImportName::Name(n) => Some((e.module_request.name.as_str(), n.name.as_str())),
            _ => None,
        });
        let reexported =
            record.indirect_export_entries.iter().filter_map(|e| match (&e.module_request, &e.import_name) {
                (Some(m), ExportImportName::Name(n)) => Some((m.name.as_str(), n.name.as_str())),
                _ => None,
            });
        for (specifier, name) in imported.chain(reexported) {
            if let Some(imports) = resolved.get(specifier).and_then(|t| self.cjs_imports.get_mut(t)) {
                imports.names.insert(name.to_string());
            }
        }
    }

    /// An ES module of a package: its specifiers replaced, nothing else changed.
    pub(super) fn compile_package_esm(
        &mut self,
        name: &str,
        text: &str,
    ) -> Result<(Compiled, Vec<String>), LoadError> {
        let allocator = Allocator::default();
        let parsed = Parser::new(&allocator, text, SourceType::mjs()).parse();
        if let Some(d) = parsed.diagnostics.errors().next() {
            return Err(super::syntax_error(name, text, d));
        }
        let record = &parsed.module_record;
        // (offset of the quoted specifier, its end, the specifier)
        let mut requests: Vec<(u32, u32, String)> = record
            .requested_modules
            .iter()
            .flat_map(|(specifier, uses)| {
                uses.iter().map(move |u| (u.span.start, u.span.end, specifier.to_string()))
            })
            .collect();
        for import in &record.dynamic_imports {
            let raw = &text[import.module_request.start as usize..import.module_request.end as usize];
            match string_literal(raw) {
                Some(specifier) => {
                    requests.push((import.module_request.start, import.module_request.end, specifier))
                }
                None => {
                    let (line, column) = line_col(text, import.span.start);
                    return Err(LoadError::DynamicImport { file: name.to_string(), line, column });
                }
            }
        }
        requests.sort_unstable();
        let mut resolved = HashMap::new();
        let mut edits = Vec::new();
        let mut deps = Vec::new();
        for (start, end, specifier) in requests {
            let target = match resolved.get(&specifier) {
                Some(target) => Clone::clone(target),
                None => {
                    let target = self
                        .resolve(name, &specifier, false)
                        .map_err(|kind| self.resolve_error(kind, name, text, start, &specifier, false))?;
                    resolved.insert(specifier.clone(), target.clone());
                    target
                }
            };
            if target != BUILTIN_MODULE {
                deps.push(target.clone());
            }
            edits.push((start, end, quote(&target)));
        }
        self.note_cjs_imports(record, &resolved);
        Ok((Compiled::Module(Module { js: splice(text, edits), source_map: None }), deps))
    }

    /// A CommonJS module of a package, wrapped (see the module docs).
    pub(super) fn compile_commonjs(
        &mut self,
        name: &str,
        text: &str,
    ) -> Result<(Compiled, Vec<String>), LoadError> {
        let allocator = Allocator::default();
        let parsed = Parser::new(&allocator, text, SourceType::cjs()).parse();
        if let Some(d) = parsed.diagnostics.errors().next() {
            return Err(super::syntax_error(name, text, d));
        }
        let semantic = SemanticBuilder::new().build(&parsed.program);
        let scoping = semantic.semantic.into_scoping();
        let mut scan = Scan {
            scoping: &scoping,
            requires: Vec::new(),
            exports: BTreeSet::new(),
            depth: 0,
            dynamic: None,
        };
        scan.visit_program(&parsed.program);
        if let Some(offset) = scan.dynamic {
            let (line, column) = line_col(text, offset);
            return Err(LoadError::DynamicRequire { file: name.to_string(), line, column });
        }
        let mut header = String::new();
        let mut slots: HashMap<String, String> = HashMap::new();
        let mut edits = Vec::new();
        let mut deps = Vec::new();
        for require in scan.requires {
            let expr = match self.resolve(name, &require.specifier, true) {
                Ok(target) => match slots.get(&target) {
                    Some(expr) => expr.clone(),
                    None => {
                        let slot = format!("__ctop_r{}", slots.len());
                        let quoted = quote(&target);
                        let (import, expr) = match self.kinds.get(&target) {
                            _ if target == BUILTIN_MODULE => {
                                (format!("import * as {slot} from {quoted};"), slot.clone())
                            }
                            Some(Kind::Cjs) => (
                                format!("import {{ __ctop_cjs as {slot} }} from {quoted};"),
                                format!("{slot}()"),
                            ),
                            Some(Kind::Json) => (format!("import {slot} from {quoted};"), slot.clone()),
                            _ => (format!("import * as {slot} from {quoted};"), slot.clone()),
                        };
                        header.push_str(&import);
                        if target != BUILTIN_MODULE {
                            deps.push(target.clone());
                        }
                        slots.insert(target, expr.clone());
                        expr
                    }
                },
                Err(ResolveError::NodeBuiltin) if require.lazy => {
                    let chain = self.builtin_chain(name, &require.specifier, true);
                    format!("__ctop_builtin({})", quote(&format!("{chain}: {}", node_builtins::ADVICE)))
                }
                Err(kind) => {
                    return Err(self.resolve_error(
                        kind,
                        name,
                        text,
                        require.argument,
                        &require.specifier,
                        true,
                    ));
                }
            };
            edits.push((require.call.start, require.call.end, expr));
        }
        let mut body = splice(text, edits);
        if body.starts_with("#!") {
            body.replace_range(..2, "//");
        }
        let wrapped = Wrapped { name: name.to_string(), header, body, exports: scan.exports };
        Ok((Compiled::CommonJs(wrapped), deps))
    }
}

/// A `require()` call with a literal argument.
struct Require {
    /// The whole call, replaced.
    call: Span,
    /// Offset of the argument, for errors.
    argument: u32,
    specifier: String,
    /// Inside a function body: it runs only when that function is called.
    lazy: bool,
}

/// Finds a CommonJS file's `require()` calls and the names it assigns to `exports`.
struct Scan<'s> {
    scoping: &'s Scoping,
    requires: Vec<Require>,
    exports: BTreeSet<String>,
    /// How many functions deep the visitor is.
    depth: u32,
    /// Offset of the first `require()` without a literal argument.
    dynamic: Option<u32>,
}

impl Scan<'_> {
    /// Whether `id` is the free variable `name` (not a local of that name).
    fn is_global(&self, id: &IdentifierReference<'_>, name: &str) -> bool {
        id.name == name
            && id.reference_id.get().is_none_or(|r| self.scoping.get_reference(r).symbol_id().is_none())
    }

    /// `exports` or `module.exports`.
    fn is_exports(&self, e: &Expression<'_>) -> bool {
        match e {
            Expression::Identifier(id) => self.is_global(id, "exports"),
            Expression::StaticMemberExpression(m) => {
                m.property.name == "exports"
                    && matches!(&m.object, Expression::Identifier(id) if self.is_global(id, "module"))
            }
            _ => false,
        }
    }
}

impl<'a> Visit<'a> for Scan<'_> {
    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        if let Expression::Identifier(id) = &it.callee
            && self.is_global(id, "require")
        {
            let literal = match it.arguments.as_slice() {
                [Argument::StringLiteral(s)] => Some((s.value.to_string(), s.span.start)),
                [Argument::TemplateLiteral(t)] if t.expressions.is_empty() => t
                    .quasis
                    .first()
                    .and_then(|q| q.value.cooked.as_ref())
                    .map(|c| (c.to_string(), t.span.start)),
                _ => None,
            };
            match literal {
                Some((specifier, argument)) => {
                    self.requires.push(Require { call: it.span, argument, specifier, lazy: self.depth > 0 });
                }
                None => {
                    self.dynamic.get_or_insert(it.span.start);
                }
            }
        }
        // Object.defineProperty(exports, "name", …), as TypeScript's CommonJS output writes.
        if let Expression::StaticMemberExpression(m) = &it.callee
            && m.property.name == "defineProperty"
            && matches!(&m.object, Expression::Identifier(id) if id.name == "Object")
            && let [Argument::StringLiteral(key), ..] = it.arguments.get(1..).unwrap_or_default()
            && it.arguments.first().and_then(Argument::as_expression).is_some_and(|e| self.is_exports(e))
        {
            self.exports.insert(key.value.to_string());
        }
        walk::walk_call_expression(self, it);
    }

    fn visit_assignment_expression(&mut self, it: &oxc_ast::ast::AssignmentExpression<'a>) {
        match &it.left {
            AssignmentTarget::StaticMemberExpression(m) if self.is_exports(&m.object) => {
                self.exports.insert(m.property.name.to_string());
            }
            AssignmentTarget::StaticMemberExpression(m)
                if m.property.name == "exports"
                    && matches!(&m.object, Expression::Identifier(id) if self.is_global(id, "module")) =>
            {
                if let Expression::ObjectExpression(object) = &it.right {
                    for property in &object.properties {
                        if let ObjectPropertyKind::ObjectProperty(p) = property
                            && !p.computed
                            && let Some(key) = property_name(&p.key)
                        {
                            self.exports.insert(key);
                        }
                    }
                }
            }
            _ => {}
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_function(&mut self, it: &oxc_ast::ast::Function<'a>, flags: ScopeFlags) {
        self.depth += 1;
        walk::walk_function(self, it, flags);
        self.depth -= 1;
    }

    fn visit_arrow_function_expression(&mut self, it: &oxc_ast::ast::ArrowFunctionExpression<'a>) {
        self.depth += 1;
        walk::walk_arrow_function_expression(self, it);
        self.depth -= 1;
    }
}

/// The name of a non-computed property key.
fn property_name(key: &PropertyKey<'_>) -> Option<String> {
    match key {
        PropertyKey::StaticIdentifier(id) => Some(id.name.to_string()),
        PropertyKey::StringLiteral(s) => Some(s.value.to_string()),
        _ => None,
    }
}

/// The value of a quoted JavaScript string without escapes (`"x"`, `'x'`, `` `x` ``).
fn string_literal(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let quote = raw.chars().next().filter(|c| matches!(c, '"' | '\'' | '`'))?;
    let inner = raw.strip_prefix(quote)?.strip_suffix(quote)?;
    let escaped = inner.contains(['\\', quote]) || (quote == '`' && inner.contains("${"));
    (!escaped).then(|| inner.to_string())
}

/// `s` as a JavaScript string literal.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// `text` with each `(start, end, replacement)` applied; edits do not overlap.
fn splice(text: &str, mut edits: Vec<(u32, u32, String)>) -> String {
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(text.len() + edits.len() * 16);
    let mut at = 0usize;
    for (start, end, replacement) in edits {
        let (start, end) = (start as usize, end as usize);
        if start < at || end > text.len() {
            continue;
        }
        out.push_str(&text[at..start]);
        out.push_str(&replacement);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(string_literal("'a/b'").as_deref(), Some("a/b"));
        assert_eq!(string_literal("`x`").as_deref(), Some("x"));
        assert_eq!(string_literal("`${x}`"), None);
        assert_eq!(string_literal("name"), None);
        assert_eq!(splice("ab cd ef", vec![(6, 8, "X".into()), (0, 2, "Y".into())]), "Y cd X");
    }
}
