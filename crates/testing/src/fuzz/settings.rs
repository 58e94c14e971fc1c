//! An operator's fuzz settings, `DIR/tests/fuzz.yaml` (optional): the oracles the fuzzer
//! leaves out for this operator, each with the reason, as a test's `oracles:` does; and the
//! script's `Env`, as a test's `env:` gives it.
//!
//! ```yaml
//! oracles:
//!   failed-apply-prunes-nothing: "a Job of a past run is never applied again"
//! env:
//!   REGION: eu-west-1
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::oracles::Oracle;

/// The file's name, under `DIR/tests/`.
pub const FILE: &str = "fuzz.yaml";

/// What `tests/fuzz.yaml` says.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The oracles left out, with why.
    pub oracles_off: BTreeMap<Oracle, String>,
    /// The script's `Env` (`env:`); `None` gives it the process's `CTOP_ENV_*` variables.
    pub env: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    oracles: BTreeMap<String, String>,
    env: Option<BTreeMap<String, serde_json::Value>>,
}

impl Settings {
    /// The settings of the operator in `dir` (none when it has no `tests/fuzz.yaml`); an
    /// invalid file is an error naming it.
    pub fn read(dir: &Path) -> Result<Self, String> {
        let path = dir.join("tests").join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let raw: Raw = serde_saphyr::from_str_with_options(&text, ctop_core::yaml::options(None))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut oracles_off = BTreeMap::new();
        for (name, reason) in raw.oracles {
            let oracle: Oracle = name.parse().map_err(|m| format!("{}: {m}", path.display()))?;
            if reason.trim().is_empty() {
                return Err(format!(
                    "{}: oracles: {name}: say why it is off (a reason is required)",
                    path.display()
                ));
            }
            oracles_off.insert(oracle, reason);
        }
        let env = match raw.env {
            None => None,
            Some(vars) => Some(
                vars.into_iter()
                    .map(|(name, value)| {
                        crate::format::env::variable(&name, value)
                            .map(|text| (name, text))
                            .map_err(|m| format!("{}: {m}", path.display()))
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(Self { oracles_off, env })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_oracles_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(Settings::read(dir.path()).expect("no file").oracles_off.is_empty());
        std::fs::create_dir_all(dir.path().join("tests")).expect("tests");
        let file = dir.path().join("tests").join(FILE);
        std::fs::write(&file, "oracles:\n  idempotence: the script stamps the time\n").expect("write");
        let s = Settings::read(dir.path()).expect("valid");
        assert_eq!(
            s.oracles_off.get(&Oracle::Idempotence).map(String::as_str),
            Some("the script stamps the time")
        );
        std::fs::write(&file, "oracles:\n  idempotency: x\n").expect("write");
        assert!(Settings::read(dir.path()).expect_err("unknown").contains("no oracle \"idempotency\""));
        std::fs::write(&file, "oracles:\n  idempotence: \" \"\n").expect("write");
        assert!(Settings::read(dir.path()).expect_err("no reason").contains("a reason is required"));
        std::fs::write(&file, "steps: []\n").expect("write");
        assert!(Settings::read(dir.path()).is_err());
        std::fs::write(&file, "env:\n  REGION: eu\n").expect("write");
        let s = Settings::read(dir.path()).expect("env");
        assert_eq!(s.env, Some(BTreeMap::from([("REGION".to_owned(), "eu".to_owned())])));
        std::fs::write(&file, "env:\n  REPLICAS: 3\n").expect("write");
        assert!(Settings::read(dir.path()).expect_err("a number").ends_with("env: REPLICAS: 3 is not a string; quote it (\"3\"): the script's Env holds only strings, as the environment does"));
    }
}
