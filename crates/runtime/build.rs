//! Splices the SDK's typings into the one `ctop.d.ts` that `ctop init` writes next to a script
//! (`ctop_runtime::sdk::SDK_DTS`): `sdk/ctop.d.ts` with each `export * from "./<name>";` line
//! replaced by `sdk/<name>.d.ts` (`z.d.ts`, and `k8s.d.ts`, the generated built-in kinds), and
//! the files' `import type { ... } from "./<name>";` lines among one another dropped. In
//! `sdk/` they stay separate modules, so that the real TypeScript compiler checks them as
//! they are (`npm test` there).

#![allow(clippy::print_stdout, reason = "cargo reads a build script's directives from its stdout")]

use std::path::Path;

/// The typings files, spliced into `ctop.d.ts`.
const PARTS: &[&str] = &["ctop", "z", "k8s"];

fn main() {
    let sdk = Path::new("sdk");
    for part in PARTS {
        println!("cargo::rerun-if-changed=sdk/{part}.d.ts");
    }
    let text = splice(sdk, "ctop");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("ctop.d.ts");
    std::fs::write(out, text).expect("write ctop.d.ts");
}

/// `sdk/<name>.d.ts` with its parts spliced in.
fn splice(sdk: &Path, name: &str) -> String {
    let path = sdk.join(format!("{name}.d.ts"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if let Some(part) = line.strip_prefix("export * from \"./").and_then(|r| r.strip_suffix("\";")) {
            assert!(PARTS.contains(&part) && part != "ctop", "{}: unknown part {part}", path.display());
            out.push_str(&splice(sdk, part));
            continue;
        }
        let local_import = line.starts_with("import type {")
            && PARTS.iter().any(|part| line.ends_with(&format!(" from \"./{part}\";")));
        if !local_import {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
