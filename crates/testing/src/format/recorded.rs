//! The two actions that take a recording (`ctop run --record FILE`) as a test's input:
//! `seed: FILE` fills the cluster with the objects the recording saw ([`crate::seed`]), and
//! `replay: FILE` runs its calls again against a script ([`crate::replay::step`]). Paths
//! are relative to the test file's directory; a file that is not there is an error of the
//! test file, at the step's line, before anything runs.
//!
//! ```yaml
//! steps:
//!   - seed: recordings/prod.ctrec
//!   - replay: recordings/prod.ctrec     # against the script under test
//!   - replay: recordings/prod.ctrec
//!     script: ../webapp-v2              # against another version
//!     allow: differences                # differences pass; new failures never do
//! ```

use std::path::{Path, PathBuf};

/// A recording named by a step: as written, and resolved against the test's directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordingPath {
    /// The path as the test writes it (for step names and reports).
    pub written: String,
    /// The path to read.
    pub path: PathBuf,
}

impl std::fmt::Display for RecordingPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.written)
    }
}

/// A `replay:` step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayStep {
    /// The recording.
    pub recording: RecordingPath,
    /// The directory of the script to replay against (`script:`); `None` is the operator
    /// under test.
    pub script: Option<RecordingPath>,
    /// `allow: differences`: outcomes that differ pass the step (new failures and
    /// divergences never do).
    pub allow_differences: bool,
}

impl ReplayStep {
    /// How the replay's report names the script: `script:` as written, else "the script
    /// under test" (never an absolute path: it goes into golden files).
    pub fn label(&self) -> String {
        self.script.as_ref().map_or_else(|| "the script under test".to_owned(), |s| s.written.clone())
    }
}

/// `seed: FILE`: the recording, which must exist.
pub fn seed(file: &str, test_dir: &Path) -> Result<RecordingPath, String> {
    recording("seed", file, test_dir)
}

/// `replay: FILE` with its optional `script: DIR` and `allow: differences`.
pub fn replay(
    file: &str,
    script: Option<&str>,
    allow: Option<&str>,
    test_dir: &Path,
) -> Result<ReplayStep, String> {
    let recording = recording("replay", file, test_dir)?;
    let script = script
        .map(|dir| {
            let path = test_dir.join(dir);
            if path.is_dir() {
                Ok(RecordingPath { written: dir.to_owned(), path })
            } else {
                Err(format!(
                    "script: {} is not a directory (the path is relative to the test file's directory)",
                    path.display()
                ))
            }
        })
        .transpose()?;
    let allow_differences = match allow {
        None => false,
        Some("differences") => true,
        Some(other) => {
            return Err(format!(
                "allow: {other:?}: the only one is `differences` (new failures and divergences always fail)"
            ));
        }
    };
    Ok(ReplayStep { recording, script, allow_differences })
}

fn recording(action: &str, file: &str, test_dir: &Path) -> Result<RecordingPath, String> {
    if file.is_empty() {
        return Err(format!("{action}: the path of a recording (`ctop run --record FILE` writes one)"));
    }
    let path = test_dir.join(file);
    if !path.is_file() {
        return Err(format!(
            "{action}: there is no recording {} (the path is relative to the test file's directory)",
            path.display()
        ));
    }
    Ok(RecordingPath { written: file.to_owned(), path })
}
