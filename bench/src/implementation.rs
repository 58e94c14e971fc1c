//! The three implementations of the WebApp operator and how each is started: ctop running
//! the example, the native kube-rs controller (`src/bin/webapp-native.rs`) and kopf
//! (`kopf/webapp.py`). Start at [`command`]: the command line of one implementation against
//! one kubesim, serving its reconcile count at `/metrics` on a port of the caller's choice.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::bail;

/// The names [`command`] knows, in the order the reports list them (`ctop-history-off`:
/// ctop with `--history 0`, to weigh the reconcile history it keeps by default;
/// `ctop-record`: ctop with `--record` into the example's copy, to weigh a recording).
pub const NAMES: [&str; 5] = ["ctop", "ctop-history-off", "ctop-record", "native", "kopf"];

/// Where each implementation's program is.
#[derive(Debug, Clone)]
pub struct Programs {
    /// The ctop binary.
    pub ctop: PathBuf,
    /// The native controller binary.
    pub native: PathBuf,
    /// The kopf executable (from the venv `bench/ci.sh` sets up).
    pub kopf: PathBuf,
    /// The kopf operator script.
    pub kopf_script: PathBuf,
}

impl Programs {
    /// Every program a run of `impls` needs is there: ctop always (it runs kubesim, or
    /// `sim` does, and writes the CRD) and each implementation's own. A missing one would
    /// make each of its runs fail to start and the report say "NO": this says what to
    /// build instead, before anything runs.
    pub fn check(&self, impls: &[String], sim: Option<&Path>) -> anyhow::Result<()> {
        let mut needed =
            vec![("ctop", self.ctop.as_path(), "--ctop", "build it with `cargo build --release -p ctop`")];
        if let Some(sim) = sim {
            needed.push(("ctop", sim, "--sim", "build it with `cargo build --release -p ctop`"));
        }
        for imp in impls {
            match imp.as_str() {
                "native" => needed.push((
                    "webapp-native",
                    &self.native,
                    "--native",
                    "build it with `cargo build --release -p ctop-bench`",
                )),
                "kopf" => {
                    needed.push(("kopf", &self.kopf, "--kopf", "set up bench/.venv with `bash bench/ci.sh`"))
                }
                name if NAMES.contains(&name) => {}
                name => bail!("no implementation {name}: --impls takes {}", NAMES.join(", ")),
            }
        }
        for (what, path, flag, build) in needed {
            if !path.is_file() {
                bail!("no {what} at {}: {build}, or give its path with {flag}", path.display());
            }
        }
        Ok(())
    }

    /// The binary the implementation `name` runs, when it is one of its own (kopf runs
    /// the venv's Python, shared with everything else).
    #[must_use]
    pub fn binary(&self, name: &str) -> Option<&Path> {
        match name {
            "native" => Some(&self.native),
            "kopf" => None,
            _ => Some(&self.ctop),
        }
    }
}

/// The program `name` beside the running one (Cargo builds `ctop`, `webapp-native` and the
/// bench binaries into one profile directory, wherever `CARGO_TARGET_DIR` puts it), or
/// `target/release/<name>` when there is none there: the default of each `--ctop` and
/// `--native`.
#[must_use]
pub fn beside_me(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("target/release").join(name))
}

/// What one start of an implementation is given.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    /// ctop only: the operator directory it runs (a copy of the example, see
    /// [`crate::sim::example_copy`]).
    pub example: &'a Path,
    /// The kubesim's kubeconfig.
    pub kubeconfig: &'a Path,
    /// The resync period (`500ms`, `5m`): ctop's copy of the example has it already, the
    /// others take it as an argument.
    pub every: &'a str,
    /// The port of its `/metrics`.
    pub metrics_port: u16,
}

/// The command that starts the implementation `name` (one of [`NAMES`]).
pub fn command(name: &str, programs: &Programs, launch: &Launch<'_>) -> anyhow::Result<Command> {
    let port = launch.metrics_port.to_string();
    Ok(match name {
        "ctop" | "ctop-history-off" | "ctop-record" => {
            let mut c = Command::new(&programs.ctop);
            c.arg("run").arg(launch.example).arg("--kubeconfig").arg(launch.kubeconfig);
            c.args(["--leader-elect=false", "--health-port", "0", "--metrics-port", &port]);
            if name == "ctop-history-off" {
                c.args(["--history", "0"]);
            }
            if name == "ctop-record" {
                c.arg("--record").arg(launch.example.join("bench.ctrec"));
            }
            c.env("CTOP_LOG", "warn");
            c
        }
        "native" => {
            let mut c = Command::new(&programs.native);
            c.arg("--kubeconfig").arg(launch.kubeconfig);
            c.args(["--every", launch.every, "--metrics-port", &port]);
            c
        }
        "kopf" => {
            let mut c = Command::new(&programs.kopf);
            c.args(["run", "--standalone", "--quiet", "-A"]).arg(&programs.kopf_script);
            c.env("KUBECONFIG", launch.kubeconfig);
            c.env("BENCH_EVERY", parse_duration(launch.every)?.as_secs_f64().to_string());
            c.env("BENCH_METRICS_PORT", port);
            c
        }
        other => {
            bail!("unknown implementation {other:?} (ctop, ctop-history-off, ctop-record, native, kopf)")
        }
    })
}

/// A duration like `500ms`, `1s`, `5m` (a bare number is seconds).
pub fn parse_duration(s: &str) -> anyhow::Result<Duration> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse()?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "s" | "" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        other => bail!("unknown duration unit {other:?} (ms, s, m)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_operators_write_them() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert!(parse_duration("1h").is_err());
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn kopf_gets_the_period_in_seconds_and_an_unknown_name_is_refused() {
        let programs = Programs {
            ctop: "ctop".into(),
            native: "webapp-native".into(),
            kopf: "kopf".into(),
            kopf_script: "webapp.py".into(),
        };
        let launch =
            Launch { example: Path::new("ex"), kubeconfig: Path::new("kc"), every: "500ms", metrics_port: 9 };
        let kopf = command("kopf", &programs, &launch).unwrap();
        let every = kopf.get_envs().find(|(k, _)| *k == "BENCH_EVERY").and_then(|(_, v)| v);
        assert_eq!(every.and_then(|v| v.to_str()), Some("0.5"));
        assert!(command("operator-sdk", &programs, &launch).is_err());
    }

    #[test]
    fn a_missing_program_is_named_with_its_flag_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let ctop = dir.path().join("ctop");
        std::fs::write(&ctop, "").unwrap();
        let programs = Programs {
            ctop,
            native: dir.path().join("webapp-native"),
            kopf: dir.path().join("kopf"),
            kopf_script: "webapp.py".into(),
        };
        let impls = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        programs.check(&impls(&["ctop", "ctop-history-off"]), None).unwrap();
        let e = programs.check(&impls(&["ctop", "native"]), None).unwrap_err().to_string();
        assert!(
            e.starts_with("no webapp-native at ") && e.ends_with("or give its path with --native"),
            "{e}"
        );
        let e = programs.check(&impls(&["kopf"]), None).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "no kopf at {}: set up bench/.venv with `bash bench/ci.sh`, or give its path with --kopf",
                dir.path().join("kopf").display()
            )
        );
        let e = programs.check(&impls(&["ctop"]), Some(Path::new("/nonexistent/ctop"))).unwrap_err();
        assert!(e.to_string().ends_with("--sim"), "{e}");
        let e = programs.check(&impls(&["operator-sdk"]), None).unwrap_err().to_string();
        assert!(e.starts_with("no implementation operator-sdk: --impls takes ctop, "), "{e}");
    }
}
