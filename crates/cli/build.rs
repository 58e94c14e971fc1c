//! Link-time layout of the `ctop` binary, for a smaller resident set (bench/README.md,
//! "Base memory and the shipped build").
//!
//! - **Hot functions first.** `hot-functions.txt` names the functions a start of `ctop run`
//!   and its reconciles execute (`bench/hot-functions.sh` writes it from a `valgrind
//!   --tool=callgrind` run and a `perf` sample of the benchmark). The linker places them
//!   together at the start of `.text`, so the pages a running operator maps are those few
//!   megabytes, not pages of the whole 40 MB text scattered by one touched function each.
//!   Names carry a hash that depends on the profile and the dependencies' versions, and
//!   in the release profile a local that ThinLTO promotes is renamed after its codegen
//!   unit's content (`.llvm.<hash>`), so an edit renames some functions of its crate: a
//!   function the list does not name (new or edited code, another profile) is laid out as
//!   before, and only the saving shrinks until the list is written again.
//! - **Packed relative relocations** (`-z pack-relative-relocs`, DT_RELR): the 76,000
//!   relocations of a position-independent binary take 40 KB instead of 1.8 MB that the
//!   loader reads at start. Needs glibc 2.36 at run time, checked here on the build host
//!   (the deploy image's base is Debian 12, glibc 2.36).
//!
//! Only optimised builds for x86_64 Linux with glibc get either (there rustc links with its
//! own lld, which knows both flags); a debug build links as rustc's defaults say, and so
//! does any build with `CTOP_LINK_LAYOUT=0` in its environment (to weigh what this saves).
//! No crate does this (two linker flags chosen per build), hence the hand-written script.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=hot-functions.txt");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CTOP_LINK_LAYOUT");
    if std::env::var("CTOP_LINK_LAYOUT").is_ok_and(|v| v == "0") {
        return;
    }
    let optimised = std::env::var("OPT_LEVEL").is_ok_and(|o| o != "0");
    let linux_gnu = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64")
        && std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|o| o == "linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|e| e == "gnu");
    if !optimised || !linux_gnu {
        return;
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    // The linker reads a copy in OUT_DIR, not the checkout's file: cargo reuses this
    // script's output for another checkout that shares the target directory (the path is
    // not part of a workspace member's fingerprint), and a path into a moved or deleted
    // checkout would fail the link.
    let order = Path::new(&out_dir).join("hot-functions.txt");
    if std::fs::copy(Path::new(&manifest).join("hot-functions.txt"), &order).is_ok() {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
        // Names of another build's functions are expected; they are skipped silently.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    if glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the build host's glibc (`ldd --version`) is at least `major.minor`.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("ldd").arg("--version").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.lines().next().and_then(|l| l.split_whitespace().last()) else { return false };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    found >= (major, minor)
}
