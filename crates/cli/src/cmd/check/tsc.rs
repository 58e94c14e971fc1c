//! Type checking with the real TypeScript compiler.
//!
//! tsc reads `.ts` files only, so [`stage`] mirrors the operator directory into a temporary
//! one where each `X.ct` is `X.ct.ts` (the same bytes: lines and columns do not move) and
//! the check's tsconfig extends the operator's with `moduleSuffixes: [".ct", ""]`: then
//! `./x`, `./x.js` and `./x.ct` all resolve to `x.ct.ts` and each file is in the program
//! once. The nearest `node_modules` is linked in, the SDK's `ctop.d.ts` and the generated
//! `ctop-resources.d.ts` written beside. [`run`] drives the `tsc` binary (TypeScript 7 is
//! a native program without a JavaScript API) and maps each reported path back to the
//! operator's file ([`parse`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;

use super::frame::{Finding, Location, Severity, shown};

/// The tsconfig the check runs with, in the staging directory.
const CHECK_TSCONFIG: &str = "tsconfig.ctop-check.json";
/// The scaffold's tsconfig, written when the operator has none.
const BASE_TSCONFIG: &str = "tsconfig.ctop-base.json";

/// The one command that installs the compiler in `dir`.
pub fn install_hint(dir: &Path) -> String {
    format!("cd {} && npm install --save-dev typescript", dir.display())
}

/// The compiler to run: `node_modules/.bin/tsc` of `dir` or a directory above it, else
/// `tsc` on `PATH`.
pub fn find(dir: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(dir).ok()?;
    if let Some(local) = abs.ancestors().map(|d| d.join("node_modules/.bin/tsc")).find(|p| p.is_file()) {
        return Some(local);
    }
    // A PATH lookup is these few lines; the `which` crate would add a dependency for them.
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("tsc")).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// Why the sources could not be staged or the compiler not run.
#[derive(Debug, thiserror::Error)]
pub enum TscError {
    /// Writing the staging directory failed.
    #[error("cannot stage the sources for tsc in {path}")]
    Stage {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Walking the operator directory failed.
    #[error("cannot read the operator directory")]
    Walk(#[from] walkdir::Error),
    /// The compiler could not be started.
    #[error("cannot run {tsc}")]
    Spawn {
        /// The compiler.
        tsc: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The operator's sources as tsc sees them.
pub struct Staged {
    dir: tempfile::TempDir,
    /// Staged path (relative, `/`-separated) → the operator's file.
    map: HashMap<String, String>,
}

impl Staged {
    /// The staging directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TscError + '_ {
    move |source| TscError::Stage { path: path.to_path_buf(), source }
}

/// Mirror `src` for tsc (see the module docs); `resources_dts` is the generated
/// `ctop-resources.d.ts`, when the script loaded.
pub fn stage(src: &Path, entry: &str, resources_dts: Option<&str>) -> Result<Staged, TscError> {
    let tmp = tempfile::Builder::new().prefix("ctop-check-").tempdir().map_err(io(src))?;
    let root = tmp.path().to_path_buf();
    let mut map = HashMap::new();
    let walk = walkdir::WalkDir::new(src).min_depth(1).into_iter().filter_entry(|e| {
        let name = e.file_name().to_string_lossy();
        !(name.starts_with('.') || name == "node_modules")
    });
    for entry in walk {
        let entry = entry?;
        if entry.file_type().is_dir() {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(src) else { continue };
        let rel = rel.to_string_lossy().replace('\\', "/");
        let staged = if rel.ends_with(".ct") { format!("{rel}.ts") } else { rel.clone() };
        let to = root.join(&staged);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        // A link to a file is copied as the file; a link to a directory is not followed.
        if entry.path().is_file() {
            std::fs::copy(entry.path(), &to).map_err(io(&to))?;
            map.insert(staged, rel);
        }
    }
    let abs = std::path::absolute(src).map_err(io(src))?;
    if let Some(modules) = abs.ancestors().map(|d| d.join("node_modules")).find(|p| p.is_dir()) {
        link_dir(&modules, &root.join("node_modules"))?;
    }
    let write = |rel: &str, text: &str| {
        let to = root.join(rel);
        std::fs::write(&to, text).map_err(io(&to))
    };
    write("ctop.d.ts", ctop_runtime::sdk::SDK_DTS)?;
    if let Some(dts) = resources_dts {
        write("ctop-resources.d.ts", dts)?;
    }
    let base = if src.join("tsconfig.json").is_file() {
        "./tsconfig.json"
    } else {
        write(BASE_TSCONFIG, ctop_runtime::scaffold::TSCONFIG)?;
        "./tsconfig.ctop-base.json"
    };
    let entry_staged = if entry.ends_with(".ct") { format!("{entry}.ts") } else { entry.to_owned() };
    let config = serde_json::json!({
        "extends": base,
        "compilerOptions": { "noEmit": true, "moduleSuffixes": [".ct", ""] },
        "files": [entry_staged],
        "include": [],
    });
    write(CHECK_TSCONFIG, &config.to_string())?;
    Ok(Staged { dir: tmp, map })
}

#[cfg(unix)]
fn link_dir(target: &Path, link: &Path) -> Result<(), TscError> {
    std::os::unix::fs::symlink(target, link).map_err(io(link))
}

#[cfg(not(unix))]
fn link_dir(target: &Path, link: &Path) -> Result<(), TscError> {
    std::os::windows::fs::symlink_dir(target, link).map_err(io(link))
}

/// Run `tsc` on `staged` and read its diagnostics as findings about the files of `src`.
pub fn run(tsc: &Path, src: &Path, staged: &Staged) -> Result<Vec<Finding>, TscError> {
    let out = Command::new(tsc)
        .args(["-p", CHECK_TSCONFIG, "--noEmit", "--pretty", "false"])
        .current_dir(staged.path())
        .output()
        .map_err(|source| TscError::Spawn { tsc: tsc.to_path_buf(), source })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut findings = parse(&stdout, src, staged);
    if !out.status.success() && findings.is_empty() {
        // It failed without a diagnostic: it could not run. npm's tsc is a script run by
        // `node` (`#!/usr/bin/env node`), which exits 127 when node is not on PATH.
        let help = if out.status.code() == Some(127) || stderr.contains("node") {
            "tsc runs on Node.js: install Node.js 20+ and put `node` on PATH".to_owned()
        } else {
            format!("reinstall the compiler: {}", install_hint(src))
        };
        findings.push(Finding::error(
            "tsc",
            format!("{} failed ({}):\n{}{}", tsc.display(), out.status, stdout.trim_end(), stderr.trim_end()),
            Some(help),
        ));
    }
    Ok(findings)
}

static DIAGNOSTIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?P<file>.+?)\((?P<line>\d+),(?P<col>\d+)\): )?(?P<sev>error|warning|message) (?P<code>TS\d+): (?P<msg>.*)$")
        .unwrap_or_else(|e| unreachable!("the pattern is valid: {e}"))
});

/// tsc's `--pretty false` output (`file(line,col): error TSn: message`, elaborations on
/// indented lines after it) as findings, each path mapped back to the operator's file.
pub fn parse(output: &str, src: &Path, staged: &Staged) -> Vec<Finding> {
    let mut findings: Vec<Finding> = Vec::new();
    for line in output.lines() {
        if let Some(c) = DIAGNOSTIC.captures(line) {
            let severity = if &c["sev"] == "error" { Severity::Error } else { Severity::Warning };
            let location = c.name("file").map(|file| {
                let number = |k: &str| c[k].parse().unwrap_or(1);
                locate(file.as_str(), number("line"), number("col"), src, staged)
            });
            let code = c["code"].to_owned();
            let help = help_for(&code, &c["msg"]);
            findings.push(Finding { severity, location, code, message: c["msg"].to_owned(), help });
        } else if let Some(last) = findings.last_mut()
            && line.starts_with(' ')
        {
            last.message.push('\n');
            last.message.push_str(line.trim_start());
        } else if !line.trim().is_empty() {
            findings.push(Finding::warning("tsc", line.to_owned(), None));
        }
    }
    findings
}

fn locate(file: &str, line: u32, column: u32, src: &Path, staged: &Staged) -> Location {
    let rel = Path::new(file)
        .strip_prefix(staged.path())
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|_| file.replace('\\', "/"));
    let rel = rel.strip_prefix("./").unwrap_or(&rel).to_owned();
    if rel == BASE_TSCONFIG {
        let shown = "tsconfig.json (ctop's default: the operator has none)".to_owned();
        return Location { shown, path: None, line, column };
    }
    match staged.map.get(&rel) {
        Some(original) => {
            Location { shown: shown(src, original), path: Some(src.join(original)), line, column }
        }
        // The SDK's typings, or a package: shown where tsc found it.
        None => {
            let path = staged.path().join(&rel);
            let path = path.canonicalize().unwrap_or(path);
            let shown = if rel == "ctop.d.ts" || rel == "ctop-resources.d.ts" {
                format!("{rel} (as this ctop writes it: `ctop types`)")
            } else {
                path.display().to_string()
            };
            Location { shown, path: Some(path), line, column }
        }
    }
}

/// What to do about a few diagnostics whose fix is ctop's, not TypeScript's.
fn help_for(code: &str, message: &str) -> Option<String> {
    match code {
        "TS2307" if message.contains("'ctop'") => Some(
            "map the module in tsconfig.json: \"paths\": { \"ctop\": [\"./ctop.d.ts\"] } (as `ctop init` writes it), and run `ctop types`"
                .to_owned(),
        ),
        "TS2307" => Some(
            "a package is installed with `npm install <name>` in the operator directory; a relative import names a file of it"
                .to_owned(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostics_map_back_to_the_operators_files() {
        let src = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(src.path().join("lib")).expect("mkdir");
        std::fs::write(src.path().join("operator.ct"), "import './lib/a';\n").expect("write");
        std::fs::write(src.path().join("lib/a.ct"), "export {};\n").expect("write");
        std::fs::write(src.path().join("lib/b.ts"), "export {};\n").expect("write");
        let staged = stage(src.path(), "operator.ct", None).expect("staged");
        assert!(
            staged.path().join("lib/a.ct.ts").is_file() && staged.path().join("operator.ct.ts").is_file()
        );
        let output = "operator.ct.ts(1,8): error TS2322: Type 'string' is not assignable to type 'number'.\n  \
                      Types of property 'a' are incompatible.\n\
                      lib/b.ts(2,3): warning TS6133: 'x' is declared but its value is never read.\n\
                      error TS5083: Cannot read file 'base.json'.\n\
                      tsconfig.ctop-base.json(3,5): error TS5023: Unknown compiler option 'x'.\n";
        let dir = Path::new("op");
        let found = parse(output, dir, &staged);
        let at = |f: &Finding| f.location.as_ref().map(|l| format!("{}:{}:{}", l.shown, l.line, l.column));
        assert_eq!(found.len(), 4);
        assert_eq!(at(&found[0]).as_deref(), Some("op/operator.ct:1:8"));
        assert_eq!(
            found[0].message,
            "Type 'string' is not assignable to type 'number'.\nTypes of property 'a' are incompatible."
        );
        assert_eq!(
            (at(&found[1]).as_deref(), found[1].severity),
            (Some("op/lib/b.ts:2:3"), Severity::Warning)
        );
        assert_eq!((at(&found[2]), found[2].code.as_str()), (None, "TS5083"));
        assert_eq!(
            at(&found[3]).as_deref(),
            Some("tsconfig.json (ctop's default: the operator has none):3:5")
        );
    }
}
