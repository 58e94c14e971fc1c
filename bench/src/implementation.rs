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
}
