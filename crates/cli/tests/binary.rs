//! The binary starts, and lies where the black-box tests look for it.
//!
//! Every test that runs the binary lives in `e2e/tests`. This file is also why those tests
//! have a binary to run: Cargo builds a package's binaries for `cargo test` and
//! `cargo nextest run` only when that package has an integration test, so without one here
//! `cargo nextest run --workspace` would build `ctop`'s unit tests but not
//! `target/<profile>/ctop`.

use std::path::Path;
use std::process::Command;

#[test]
fn prints_its_version() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctop")).arg("--version").output().expect("ctop runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), concat!("ctop ", env!("CARGO_PKG_VERSION"), "\n"));
}

/// `ctop_e2e::binary` looks for `ctop` in the profile directory of the test executable
/// (`target/<profile>/deps/<test>` → `target/<profile>/ctop`): where Cargo puts it.
#[test]
fn lies_in_the_profile_directory_of_the_tests() {
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let bin = Path::new(env!("CARGO_BIN_EXE_ctop"));
    assert_eq!(bin.parent(), Some(profile), "ctop is at {}, this test at {}", bin.display(), exe.display());
}
