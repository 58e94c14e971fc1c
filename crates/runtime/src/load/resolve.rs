//! Resolving an import specifier to a module name.
//!
//! Start at [`Loader::resolve`]. The script's own files (outside `node_modules`) keep ctop's
//! rules for relative specifiers ([`Loader::find`]: exact file, `x.js` → `x.ts`, each
//! extension, `x/index.<ext>`, never outside the operator directory). Everything a package
//! file imports, and every bare specifier (`semver`, `cron-parser`, `pkg/sub`, `#internal`),
//! goes to `oxc_resolver` as a bundler would resolve it: from the importing file's
//! directory, walking up through the `node_modules` directories like Node, reading each
//! package.json's `exports` with the `import`, `module` and `default` conditions (never
//! `node`), then `module`, then `main`, subpath `imports` (`#x`), directory `index` files and
//! the `browser` field's object mappings (a mapping to `false` is an empty module). A
//! `require()` whose package only exports under `require` falls back to the `require`
//! condition. Node's built-in modules (`fs`, `node:fs`, ...) are reported as such, by
//! `oxc_resolver`'s list of them.
//!
//! Module names are `/`-separated paths relative to the operator directory
//! (`node_modules/semver/index.js`). A package found in a `node_modules` above the operator
//! directory is named relative to that ancestor with one `^/` per level up
//! (`^/node_modules/semver/index.js`), so names never hold `..` and stay the same on every
//! machine with the same layout.

use std::path::{Path, PathBuf};

use oxc_resolver::{ModuleType, ResolveOptions, Resolver};

use super::{BUILTIN_MODULE, BUILTIN_SPECIFIERS, EXTENSIONS, Kind, Loader, ResolveError};

/// Name of the module that stands for a file the `browser` field maps to `false`.
pub const EMPTY_MODULE: &str = "node_modules/.ctop-empty.js";

/// The two `oxc_resolver` configurations: ES conditions first, `require` as a fallback.
pub(super) struct Packages {
    esm: Resolver,
    require: Resolver,
}

impl Packages {
    pub(super) fn new() -> Self {
        let strings = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        let options = ResolveOptions {
            condition_names: strings(&["import", "module", "default"]),
            main_fields: strings(&["module", "main"]),
            alias_fields: vec![strings(&["browser"])],
            extensions: strings(&[".js", ".mjs", ".cjs", ".json"]),
            builtin_modules: true,
            module_type: true,
            ..ResolveOptions::default()
        };
        let require = ResolveOptions { condition_names: strings(&["require", "default"]), ..options.clone() };
        let esm = Resolver::new(options);
        let require = esm.clone_with_options(require);
        Self { esm, require }
    }
}

/// What a package specifier resolved to.
enum Found {
    /// A file and how to compile it.
    File(PathBuf, Kind),
    /// The `browser` field maps it to `false`.
    Empty,
}

impl Loader {
    pub(super) fn resolve_entry(&mut self, entry: &str) -> Result<String, super::LoadError> {
        let fail =
            |reason: &str| super::LoadError::Entry { entry: entry.to_string(), reason: reason.to_string() };
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

    /// Resolve `specifier` imported (or, with `require`, required) from module `from` to a
    /// module name or [`BUILTIN_MODULE`], remembering the first importer of each module for
    /// the chain in error messages.
    pub(super) fn resolve(
        &mut self,
        from: &str,
        specifier: &str,
        require: bool,
    ) -> Result<String, ResolveError> {
        let target = self.resolve_target(from, specifier, require)?;
        if target != BUILTIN_MODULE && target != from && !self.parents.contains_key(&target) {
            self.parents.insert(
                target.clone(),
                super::Edge { from: from.to_string(), specifier: specifier.to_string(), require },
            );
        }
        Ok(target)
    }

    fn resolve_target(&mut self, from: &str, specifier: &str, require: bool) -> Result<String, ResolveError> {
        if BUILTIN_SPECIFIERS.contains(&specifier) {
            return Ok(BUILTIN_MODULE.to_string());
        }
        let relative = specifier.starts_with("./")
            || specifier.starts_with("../")
            || specifier == "."
            || specifier == "..";
        if !is_package(from) && relative {
            if specifier.contains('\\') {
                return Err(ResolveError::NotRelative);
            }
            let base = join(from, specifier).ok_or(ResolveError::Outside)?;
            return self.find(&base);
        }
        let absolute =
            specifier.starts_with('/') || specifier.contains(':') && !specifier.starts_with("node:");
        if !is_package(from) && (absolute || specifier.contains('\\')) {
            return Err(ResolveError::NotRelative);
        }
        let dir = match self.paths.get(from) {
            Some(path) => path.parent().map(Path::to_path_buf).unwrap_or_else(|| self.root.clone()),
            None => self.root.join(from).parent().map(Path::to_path_buf).unwrap_or_else(|| self.root.clone()),
        };
        match self.find_package(&dir, specifier, require)? {
            Found::Empty => {
                self.kinds.insert(EMPTY_MODULE.to_string(), Kind::Cjs);
                self.paths.insert(EMPTY_MODULE.to_string(), PathBuf::new());
                Ok(EMPTY_MODULE.to_string())
            }
            Found::File(path, kind) => {
                let name = match self.names.get(&path) {
                    Some(name) => name.clone(),
                    None => {
                        let name = name_for(&self.root, &path).ok_or(ResolveError::NotFound)?;
                        self.names.insert(path.clone(), name.clone());
                        name
                    }
                };
                // A package's `imports` may point back into the script's own files: those
                // keep their usual kind (TypeScript, JSON).
                let kind = if is_package(&name) { kind } else { own_kind(&name) };
                self.kinds.insert(name.clone(), kind);
                self.paths.insert(name.clone(), path);
                Ok(name)
            }
        }
    }

    /// Resolve a package specifier with `oxc_resolver` from directory `dir`.
    fn find_package(&self, dir: &Path, specifier: &str, require: bool) -> Result<Found, ResolveError> {
        let first = self.packages.esm.resolve(dir, specifier);
        let resolution = match first {
            Ok(r) => r,
            Err(oxc_resolver::ResolveError::Builtin { .. }) if browser_maps_to_false(dir, specifier) => {
                return Ok(Found::Empty);
            }
            Err(oxc_resolver::ResolveError::Builtin { .. }) => return Err(ResolveError::NodeBuiltin),
            Err(oxc_resolver::ResolveError::Ignored(_)) => return Ok(Found::Empty),
            Err(e) if require => match self.packages.require.resolve(dir, specifier) {
                Ok(r) => r,
                Err(_) => return Err(ResolveError::Package(e.to_string())),
            },
            Err(e) => return Err(ResolveError::Package(e.to_string())),
        };
        let path = resolution.path().to_path_buf();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let kind = match (ext, resolution.module_type()) {
            ("json", _) | (_, Some(ModuleType::Json)) => Kind::Json,
            ("mjs", _) | (_, Some(ModuleType::Module)) => Kind::Esm,
            ("cjs", _) => Kind::Cjs,
            ("js", _) => detect_kind(&path),
            ("ts" | "mts" | "ct", _) => Kind::Esm,
            _ => {
                return Err(ResolveError::Package(format!(
                    "{} is not a JavaScript or JSON file",
                    path.display()
                )));
            }
        };
        Ok(Found::File(path, kind))
    }

    /// The first existing candidate file for the normalized path `base`.
    pub(super) fn find(&mut self, base: &str) -> Result<String, ResolveError> {
        for candidate in candidates(base) {
            let path = self.root.join(&candidate);
            if !path.is_file() {
                continue;
            }
            let canonical = path.canonicalize().map_err(|_| ResolveError::NotFound)?;
            if !canonical.starts_with(&self.root) {
                return Err(ResolveError::Outside);
            }
            let name = self.names.entry(canonical).or_insert(candidate).clone();
            self.kinds.entry(name.clone()).or_insert_with(|| own_kind(&name));
            return Ok(name);
        }
        Err(ResolveError::NotFound)
    }
}

/// Whether module `name` is a package file (inside a `node_modules` directory).
pub(super) fn is_package(name: &str) -> bool {
    name.starts_with("^/") || name.split('/').any(|seg| seg == "node_modules")
}

/// Whether the package.json nearest to `dir` has `"browser": { "<specifier>": false }`.
/// `oxc_resolver` reports a built-in before it reads the `browser` field, so this one case of
/// the field is read here.
fn browser_maps_to_false(dir: &Path, specifier: &str) -> bool {
    let Some(manifest) = dir.ancestors().map(|d| d.join("package.json")).find(|p| p.is_file()) else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(manifest) else { return false };
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else { return false };
    let bare = specifier.strip_prefix("node:").unwrap_or(specifier);
    [specifier, bare].iter().any(|key| json["browser"][*key] == serde_json::Value::Bool(false))
}

/// The kind of one of the script's own files.
fn own_kind(name: &str) -> Kind {
    if name.ends_with(".json") { Kind::Json } else { Kind::Esm }
}

/// A `.js` file in a package without `"type": "module"` is an ES module if it has ES
/// module syntax (`import`/`export`), as bundlers decide, and CommonJS otherwise.
fn detect_kind(path: &Path) -> Kind {
    let Ok(text) = std::fs::read_to_string(path) else { return Kind::Cjs };
    let allocator = oxc_allocator::Allocator::default();
    let parsed = oxc_parser::Parser::new(&allocator, &text, oxc_span::SourceType::unambiguous()).parse();
    if parsed.module_record.has_module_syntax { Kind::Esm } else { Kind::Cjs }
}

/// The module name of canonical path `path`: relative to `root`, or to the nearest
/// ancestor of `root` that holds it with one `^/` per level up. `None` for a path that is
/// not UTF-8.
fn name_for(root: &Path, path: &Path) -> Option<String> {
    let (ups, rest) =
        root.ancestors().enumerate().find_map(|(up, dir)| path.strip_prefix(dir).ok().map(|r| (up, r)))?;
    let mut parts = Vec::new();
    for component in rest.components() {
        parts.push(component.as_os_str().to_str()?.to_string());
    }
    Some(format!("{}{}", "^/".repeat(ups), parts.join("/")))
}

/// Join specifier `spec` to the directory of module `from`, normalizing `.` and `..`.
/// `None` if the result would leave the operator directory.
pub(super) fn join(from: &str, spec: &str) -> Option<String> {
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
pub(super) fn candidates(base: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_packages_above_the_operator_directory() {
        let root = Path::new("/repo/ops/web");
        assert_eq!(
            name_for(root, Path::new("/repo/ops/web/node_modules/a/i.js")).as_deref(),
            Some("node_modules/a/i.js")
        );
        assert_eq!(
            name_for(root, Path::new("/repo/node_modules/a/i.js")).as_deref(),
            Some("^/^/node_modules/a/i.js")
        );
        assert!(is_package("^/^/node_modules/a/i.js"));
        assert!(is_package("node_modules/a/i.js"));
        assert!(!is_package("lib/node_modules_like.ts"));
    }
}
