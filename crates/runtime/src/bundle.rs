//! The script bundle: every module of an operator, compiled to JavaScript.
//!
//! A [`Bundle`] is what [`crate::load::load_dir`] produces and what the vm evaluates. Module
//! names are normalized `/`-separated paths relative to the operator directory
//! (`operator.ct`, `lib/util.ts`, `data.json`); import specifiers inside each module's `js`
//! already name their targets that way, and the built-in module is always `"ctop"`.
//!
//! Start at [`Bundle::to_gz`] / [`Bundle::from_gz`] for storage (`bundle.js.gz`),
//! [`Bundle::sha256_hex`] for change detection, and [`Bundle::original_position`] to turn
//! a QuickJS error position back into a TypeScript position.
//!
//! Determinism: the canonical form is the compact JSON of the bundle (struct fields and map
//! keys in sorted order), gzipped with a fixed header (mtime 0, no file name, OS "unknown").
//! The same sources therefore always give the same bytes, and any change to a source
//! (even to a comment, since source maps carry the original text) changes the hash.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use flate2::{Compression, GzBuilder, read::GzDecoder};
use oxc_sourcemap::SourceMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Largest accepted size of a bundle's JSON once decompressed (guards against gzip bombs).
pub const MAX_BUNDLE_JSON_BYTES: u64 = 64 * 1024 * 1024;

/// An operator script compiled to JavaScript: the entry module and everything it imports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bundle {
    /// Name of the module to evaluate first (usually `operator.ct`).
    pub entry: String,
    /// Every module of the script by normalized name (see the module docs).
    pub modules: BTreeMap<String, Module>,
}

/// One compiled module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Module {
    /// ES module JavaScript; import specifiers are canonical module names or `"ctop"`.
    pub js: String,
    /// JSON source map v3 from `js` back to the original source (none for `.json` modules).
    pub source_map: Option<String>,
}

/// Why a stored bundle could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// The bytes are not a valid gzip stream.
    #[error("the bundle is not valid gzip (rebuild it with `ctop bundle DIR -o bundle.js.gz`)")]
    Gzip(#[source] std::io::Error),
    /// The decompressed bundle is larger than 64 MiB (`MAX_BUNDLE_JSON_BYTES`).
    #[error(
        "bundle is larger than {limit} bytes once decompressed; split the script or check that the bundle is not corrupt"
    )]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The decompressed bytes are not the JSON of a bundle.
    #[error("the bundle's JSON is invalid (rebuild it with `ctop bundle` of this ctop version)")]
    Json(#[source] serde_json::Error),
    /// The entry module is not one of the bundle's modules.
    #[error("bundle entry {entry:?} is not among its modules; rebuild the bundle")]
    MissingEntry {
        /// The entry name the bundle declares.
        entry: String,
    },
    /// A module name is not a normalized relative path (or `"ctop"` is shadowed).
    #[error("bundle module name {name:?} is not a normalized relative path; rebuild the bundle")]
    BadModuleName {
        /// The offending name.
        name: String,
    },
}

impl Bundle {
    /// The canonical JSON of the bundle: compact, fields and keys in sorted order.
    ///
    /// This is what [`Bundle::to_gz`] compresses and [`Bundle::sha256_hex`] hashes.
    pub fn canonical_json(&self) -> Vec<u8> {
        // Field order of `Bundle` (entry, modules) and `Module` (js, source_map) is
        // alphabetical and `modules` is a BTreeMap, so serde's output is already sorted.
        // Serializing plain strings and maps into memory cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Deterministic gzip of [`Bundle::canonical_json`]: same sources → same bytes.
    pub fn to_gz(&self) -> Vec<u8> {
        let json = self.canonical_json();
        let mut encoder = GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(Vec::with_capacity(json.len() / 3), Compression::best());
        // Writing into a Vec never fails; an error here would be a flate2 bug.
        if encoder.write_all(&json).is_err() {
            return Vec::new();
        }
        encoder.finish().unwrap_or_default()
    }

    /// Read a bundle written by [`Bundle::to_gz`], checking that it is well formed.
    pub fn from_gz(bytes: &[u8]) -> Result<Self, BundleError> {
        let mut json = Vec::new();
        GzDecoder::new(bytes)
            .take(MAX_BUNDLE_JSON_BYTES + 1)
            .read_to_end(&mut json)
            .map_err(BundleError::Gzip)?;
        if json.len() as u64 > MAX_BUNDLE_JSON_BYTES {
            return Err(BundleError::TooLarge { limit: MAX_BUNDLE_JSON_BYTES });
        }
        let bundle: Bundle = serde_json::from_slice(&json).map_err(BundleError::Json)?;
        if let Some(name) = bundle.modules.keys().find(|n| !is_normalized_name(n)) {
            return Err(BundleError::BadModuleName { name: name.clone() });
        }
        if !bundle.modules.contains_key(&bundle.entry) {
            return Err(BundleError::MissingEntry { entry: bundle.entry });
        }
        Ok(bundle)
    }

    /// Lowercase hex SHA-256 of [`Bundle::canonical_json`].
    ///
    /// Hashing the JSON rather than the gzip bytes keeps the hash independent of the
    /// compression backend.
    pub fn sha256_hex(&self) -> String {
        let digest = Sha256::digest(self.canonical_json());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Map a (line, column) in module `name`'s generated JS (1-based, as QuickJS reports)
    /// back to the TypeScript source position (1-based line and UTF-16 column).
    ///
    /// Returns `None` for an unknown module, a module without source map (JSON), or a
    /// position on a generated line with no mapping.
    pub fn original_position(&self, name: &str, line: u32, column: u32) -> Option<(u32, u32)> {
        let map_json = self.modules.get(name)?.source_map.as_deref()?;
        let map = SourceMap::from_json_string(map_json).ok()?;
        let table = map.generate_lookup_table();
        let token = map.lookup_token_approx(&table, line.checked_sub(1)?, column.checked_sub(1)?)?;
        token.get_source_id()?;
        Some((token.get_src_line() + 1, token.get_src_col() + 1))
    }
}

/// How big a bundle is: what `ctop bundle` and `ctop manifests` report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeReport {
    /// Bytes of `bundle.js.gz` ([`Bundle::to_gz`]).
    pub compressed: usize,
    /// Bytes of the bundle's JSON before compression ([`Bundle::canonical_json`]).
    pub uncompressed: usize,
    /// Number of modules.
    pub modules: usize,
    /// npm packages by the bytes of their modules' JavaScript, biggest first (at most
    /// [`SizeReport::TOP`]).
    pub packages: Vec<(String, usize)>,
}

impl SizeReport {
    /// How many packages the report names.
    pub const TOP: usize = 5;
}

impl std::fmt::Display for SizeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} gzipped ({} uncompressed), {} modules",
            human(self.compressed),
            human(self.uncompressed),
            self.modules
        )?;
        if !self.packages.is_empty() {
            let list: Vec<String> = self.packages.iter().map(|(p, n)| format!("{p} {}", human(*n))).collect();
            write!(f, "; biggest packages (uncompressed): {}", list.join(", "))?;
        }
        Ok(())
    }
}

/// `n` bytes as `123 B`, `12.3 KiB` or `1.2 MiB`.
fn human(n: usize) -> String {
    #[allow(clippy::cast_precision_loss)] // sizes of files, far below 2^52
    let x = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", x / 1024.0)
    } else {
        format!("{:.1} MiB", x / (1024.0 * 1024.0))
    }
}

/// The npm package of module `name` (`node_modules/@scope/pkg/x.js` → `@scope/pkg`), if any.
fn package_of(name: &str) -> Option<&str> {
    let start = name.rfind("node_modules/")? + "node_modules/".len();
    let rest = &name[start..];
    let mut segments = rest.splitn(3, '/');
    let first = segments.next()?;
    let len = if first.starts_with('@') { first.len() + 1 + segments.next()?.len() } else { first.len() };
    // A module right in `node_modules` (the loader's empty module) is in no package.
    rest[len..].starts_with('/').then(|| &rest[..len])
}

impl Bundle {
    /// The sizes of the bundle and of its biggest npm packages.
    pub fn size_report(&self) -> SizeReport {
        let mut packages: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, module) in &self.modules {
            if let Some(package) = package_of(name) {
                *packages.entry(package).or_default() +=
                    module.js.len() + module.source_map.as_ref().map_or(0, String::len);
            }
        }
        let mut packages: Vec<(String, usize)> =
            packages.into_iter().map(|(p, n)| (p.to_string(), n)).collect();
        packages.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        packages.truncate(SizeReport::TOP);
        SizeReport {
            compressed: self.to_gz().len(),
            uncompressed: self.canonical_json().len(),
            modules: self.modules.len(),
            packages,
        }
    }
}

/// Whether `name` is a module name the vm may be asked for: `/`-separated, relative,
/// without empty, `.` or `..` segments, and not the built-in `ctop`.
fn is_normalized_name(name: &str) -> bool {
    name != "ctop"
        && !name.contains('\\')
        && name.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Bundle {
        let mut modules = BTreeMap::new();
        modules.insert(
            "operator.ct".to_string(),
            Module { js: "import { a } from \"lib/a.ts\";\nconsole.log(a);\n".to_string(), source_map: None },
        );
        modules.insert(
            "lib/a.ts".to_string(),
            Module { js: "export const a = 1;\n".to_string(), source_map: None },
        );
        Bundle { entry: "operator.ct".to_string(), modules }
    }

    #[test]
    fn gz_round_trips_and_is_deterministic() {
        let b = sample();
        let gz = b.to_gz();
        assert_eq!(&gz[..3], &[0x1f, 0x8b, 8], "gzip magic and deflate");
        assert_eq!(&gz[4..8], &[0, 0, 0, 0], "mtime 0");
        assert_eq!(gz[3] & 0x08, 0, "no file name flag");
        assert_eq!(gz, sample().to_gz());
        assert_eq!(Bundle::from_gz(&gz).unwrap(), b);
    }

    #[test]
    fn canonical_json_has_sorted_keys() {
        let json = String::from_utf8(sample().canonical_json()).unwrap();
        assert!(json.starts_with("{\"entry\":\"operator.ct\",\"modules\":{\"lib/a.ts\":{\"js\":"));
        assert!(json.contains("\"source_map\":null"));
    }

    #[test]
    fn hash_changes_with_content() {
        let a = sample();
        let mut b = sample();
        assert_eq!(a.sha256_hex(), b.sha256_hex());
        assert_eq!(a.sha256_hex().len(), 64);
        b.modules.get_mut("lib/a.ts").unwrap().js.push(' ');
        assert_ne!(a.sha256_hex(), b.sha256_hex());
    }

    /// A corrupt bundle, loaded as a script, says that it is not gzip and the decoder's
    /// error, each once (they were said three times: by `ScriptError`, `BundleError` and the
    /// source).
    #[test]
    fn a_corrupt_bundle_says_each_cause_once() {
        let mut gz = sample().to_gz();
        for b in &mut gz[12..40] {
            *b ^= 0xa5;
        }
        let e = crate::Script::from_bundle_gz(&gz, 1, crate::Limits::default()).unwrap_err();
        assert!(matches!(e, crate::ScriptError::Bundle(BundleError::Gzip(_))), "{e:?}");
        let cause = std::error::Error::source(&e).expect("the decoder's error").to_string();
        assert!(!e.to_string().contains(&cause), "{e}");
        let line = ctop_core::Chain(&e).to_string();
        assert_eq!(
            line,
            format!(
                "the bundle is not valid gzip (rebuild it with `ctop bundle DIR -o bundle.js.gz`): {cause}"
            )
        );
        // anyhow's `{:#}` (how `ctop` prints an error) walks the same chain.
        let mut walked = vec![e.to_string()];
        let mut next = std::error::Error::source(&e);
        while let Some(c) = next {
            walked.push(c.to_string());
            next = c.source();
        }
        assert_eq!(walked.join(": "), line);
    }

    #[test]
    fn from_gz_rejects_bad_input() {
        assert!(matches!(Bundle::from_gz(b"not gzip"), Err(BundleError::Gzip(_))));

        let mut gz = GzBuilder::new().write(Vec::new(), Compression::fast());
        gz.write_all(b"{\"entry\":1}").unwrap();
        let bytes = gz.finish().unwrap();
        assert!(matches!(Bundle::from_gz(&bytes), Err(BundleError::Json(_))));

        let mut missing = sample();
        missing.entry = "nope.ct".into();
        let err = Bundle::from_gz(&missing.to_gz()).unwrap_err();
        assert!(matches!(err, BundleError::MissingEntry { .. }));
        assert!(err.to_string().contains("nope.ct"));

        for bad in ["../x.ts", "/abs.ts", "a//b.ts", "ctop", "./a.ts"] {
            let mut b = sample();
            b.modules.insert(bad.into(), Module { js: String::new(), source_map: None });
            assert!(matches!(Bundle::from_gz(&b.to_gz()), Err(BundleError::BadModuleName { .. })), "{bad}");
        }
    }

    #[test]
    fn size_report_names_the_biggest_packages() {
        let mut b = sample();
        let module = |n: usize| Module { js: "x".repeat(n), source_map: None };
        b.modules.insert("node_modules/big/a.js".into(), module(3000));
        b.modules.insert("node_modules/big/node_modules/@s/small/i.js".into(), module(10));
        b.modules.insert("node_modules/@s/mid/i.js".into(), module(200));
        let r = b.size_report();
        assert_eq!(r.modules, 5);
        assert_eq!(r.compressed, b.to_gz().len());
        assert_eq!(r.uncompressed, b.canonical_json().len());
        assert_eq!(
            r.packages,
            [("big".to_string(), 3000), ("@s/mid".to_string(), 200), ("@s/small".to_string(), 10)]
        );
        assert!(
            r.to_string().ends_with(
                "5 modules; biggest packages (uncompressed): big 2.9 KiB, @s/mid 200 B, @s/small 10 B"
            ),
            "{r}"
        );
        assert_eq!(package_of("lib/a.ts"), None);
        assert_eq!(package_of("node_modules/.ctop-empty.js"), None, "the empty module is in no package");
    }

    #[test]
    fn original_position_without_map_is_none() {
        let b = sample();
        assert_eq!(b.original_position("lib/a.ts", 1, 1), None);
        assert_eq!(b.original_position("missing.ts", 1, 1), None);
    }
}
