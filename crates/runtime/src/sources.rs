//! Noticing that an operator directory changed: [`SourceWatch`] polls the modification
//! times of the files a reload would read. Polling, not inotify (`notify`): one walk every
//! half second of a small directory costs nothing, works the same on every file system
//! (network mounts, containers, editors that replace files by renaming), and needs no
//! debouncing of the bursts of events an editor's save makes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The extensions of the files whose change reloads the script: sources, JSON and YAML
/// (values, samples); not logs, kubeconfigs or anything else written into the directory.
const EXTENSIONS: [&str; 10] = ["ct", "ts", "mts", "cts", "js", "mjs", "cjs", "json", "yaml", "yml"];

/// The modification times of a directory's source files, as last seen.
#[derive(Debug)]
pub struct SourceWatch {
    dir: PathBuf,
    seen: BTreeMap<PathBuf, Option<SystemTime>>,
}

impl SourceWatch {
    /// Watch `dir` from its present state.
    #[must_use]
    pub fn new(dir: &Path) -> Self {
        Self { dir: dir.to_owned(), seen: stamps(dir) }
    }

    /// Whether a source file was added, removed or modified since the last call (or
    /// [`SourceWatch::new`]). Dot-directories and `node_modules` are not looked into, except
    /// for `node_modules/.package-lock.json`, which npm rewrites when it installs packages.
    pub fn changed(&mut self) -> bool {
        let now = stamps(&self.dir);
        if now == self.seen {
            return false;
        }
        self.seen = now;
        true
    }
}

fn watched(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.contains(&e))
}

fn stamps(dir: &Path) -> BTreeMap<PathBuf, Option<SystemTime>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name();
            let hidden = name.to_string_lossy().starts_with('.') || name == "node_modules";
            if name == "node_modules" {
                // Not walked (it is large), but npm rewrites this file on every install that
                // changes the packages: a reload picks the new ones up.
                let lock = path.join(".package-lock.json");
                if let Ok(meta) = std::fs::metadata(&lock) {
                    out.insert(lock, meta.modified().ok());
                }
            }
            match e.file_type() {
                Ok(t) if t.is_dir() && !hidden => stack.push(path),
                Ok(t) if t.is_file() && watched(&path) => {
                    let mtime = e.metadata().ok().and_then(|m| m.modified().ok());
                    out.insert(path, mtime);
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::SourceWatch;

    fn touch(path: &std::path::Path, secs_later: u64) {
        let file = std::fs::File::options().append(true).open(path).expect("open");
        file.set_modified(SystemTime::now() + Duration::from_secs(secs_later)).expect("set mtime");
    }

    #[test]
    fn sources_added_modified_and_removed_are_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("operator.ct");
        std::fs::write(&script, "x").expect("write");
        let mut watch = SourceWatch::new(dir.path());
        assert!(!watch.changed());
        touch(&script, 5);
        assert!(watch.changed());
        assert!(!watch.changed(), "a change is reported once");
        std::fs::create_dir(dir.path().join("lib")).expect("mkdir");
        std::fs::write(dir.path().join("lib/util.ts"), "y").expect("write");
        assert!(watch.changed(), "a new module in a subdirectory");
        std::fs::remove_file(dir.path().join("lib/util.ts")).expect("rm");
        assert!(watch.changed(), "a removed module");
    }

    #[test]
    fn logs_kubeconfigs_and_hidden_directories_are_not_sources() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut watch = SourceWatch::new(dir.path());
        std::fs::write(dir.path().join("run.log"), "x").expect("write");
        std::fs::write(dir.path().join("kubeconfig"), "x").expect("write");
        for hidden in [".ctop", "node_modules"] {
            std::fs::create_dir(dir.path().join(hidden)).expect("mkdir");
            std::fs::write(dir.path().join(hidden).join("state.json"), "x").expect("write");
        }
        assert!(!watch.changed());
        std::fs::write(dir.path().join("values.yaml"), "a: 1").expect("write");
        assert!(watch.changed());
    }

    #[test]
    fn an_npm_install_is_a_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("node_modules")).expect("mkdir");
        let mut watch = SourceWatch::new(dir.path());
        std::fs::create_dir(dir.path().join("node_modules/semver")).expect("mkdir");
        std::fs::write(dir.path().join("node_modules/semver/index.js"), "x").expect("write");
        assert!(!watch.changed(), "package files are not walked");
        std::fs::write(dir.path().join("node_modules/.package-lock.json"), "{}").expect("write");
        assert!(watch.changed(), "npm wrote its lockfile");
    }
}
