//! Where the `ctop` binary under test is.
//!
//! Cargo tells only the `ctop` package's own integration tests where its binary is
//! (`CARGO_BIN_EXE_ctop`), so this crate finds it the way Cargo lays out a target
//! directory: `$CTOP_BIN` when set, otherwise `ctop` in the profile directory of the
//! running executable. A test runs from `target/<profile>/deps/<test>-<hash>`, and a tool
//! built beside `ctop` from `target/<profile>/<tool>`; both look for `target/<profile>/ctop`.
//!
//! Cargo builds that binary for `cargo nextest run --workspace` (and for `-p ctop`), not for
//! `-p ctop-e2e` alone: a missing binary is an error that says how to build it, and a
//! test fails on it rather than skipping.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The environment variable that names the `ctop` binary to run instead of the one beside
/// the running executable.
pub const ENV: &str = "CTOP_BIN";

/// Why the `ctop` binary could not be found.
#[derive(Debug, thiserror::Error)]
pub enum BinaryError {
    /// `$CTOP_BIN` is set but names no file: fix or unset it.
    #[error("{ENV}={} is not a file; point it at a ctop binary or unset it", .0.display())]
    EnvNotAFile(PathBuf),
    /// The running executable's path is unknown (e.g. `/proc` is not mounted), so there is
    /// no profile directory to look in: set `$CTOP_BIN`.
    #[error("cannot tell where the running executable is, so cannot look for ctop beside it; set {ENV}")]
    CurrentExe(#[source] std::io::Error),
    /// The profile directory has no `ctop`: it was not built in this profile.
    #[error(
        "no ctop binary at {}: build it with `cargo build -p ctop` (or run the tests with \
         `cargo nextest run --workspace`, which builds it), or set {ENV}",
        .0.display()
    )]
    Missing(PathBuf),
}

/// The `ctop` binary: `$CTOP_BIN` when set, otherwise `ctop` in the Cargo profile
/// directory of the running executable.
///
/// # Errors
/// [`BinaryError`] when the binary is not there; its message says how to build it.
pub fn locate() -> Result<PathBuf, BinaryError> {
    if let Some(path) = std::env::var_os(ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(BinaryError::EnvNotAFile(path)) };
    }
    let exe = std::env::current_exe().map_err(BinaryError::CurrentExe)?;
    let path = beside(&exe);
    if path.is_file() { Ok(path) } else { Err(BinaryError::Missing(path)) }
}

/// `target/<profile>/ctop` for an executable in `target/<profile>/` or
/// `target/<profile>/deps/`.
fn beside(exe: &Path) -> PathBuf {
    let mut dir = exe.parent().unwrap_or(Path::new("."));
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent().unwrap_or(dir);
    }
    dir.join(format!("ctop{}", std::env::consts::EXE_SUFFIX))
}

/// The `ctop` binary for a test: [`locate`], once per process.
///
/// # Panics
/// When [`locate`] fails, with its message: without the binary a test fails, it never
/// passes by skipping.
#[must_use]
#[track_caller]
pub fn ctop() -> &'static Path {
    static CTOP: LazyLock<Result<PathBuf, String>> = LazyLock::new(|| locate().map_err(|e| e.to_string()));
    match &*CTOP {
        Ok(path) => path,
        Err(e) => panic!("{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_executable_finds_ctop_in_its_profile_dir() {
        let suffix = std::env::consts::EXE_SUFFIX;
        assert_eq!(
            beside(Path::new("/w/target/debug/deps/run-0123abcd")),
            PathBuf::from(format!("/w/target/debug/ctop{suffix}"))
        );
        assert_eq!(
            beside(Path::new("/w/target/x86_64-unknown-linux-gnu/release/deps/run-0123abcd")),
            PathBuf::from(format!("/w/target/x86_64-unknown-linux-gnu/release/ctop{suffix}"))
        );
    }

    #[test]
    fn a_tool_beside_ctop_finds_it() {
        let suffix = std::env::consts::EXE_SUFFIX;
        assert_eq!(
            beside(Path::new("/w/target/release/ctop-bench")),
            PathBuf::from(format!("/w/target/release/ctop{suffix}"))
        );
    }

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let text = BinaryError::Missing(PathBuf::from("/w/target/debug/ctop")).to_string();
        assert!(text.contains("/w/target/debug/ctop") && text.contains("cargo build -p ctop"), "{text}");
        assert!(text.contains("CTOP_BIN"), "{text}");
    }
}
