//! Child processes the benchmark starts and what they say of themselves. Start at
//! [`spawn`]: each implementation and each kubesim runs as a child of its own, killed when
//! its [`Proc`] is dropped, so its CPU time and peak RSS ([`proc_usage`], from `/proc`)
//! are its own; [`reconciles`] reads its reconcile count from its `/metrics`.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::Context as _;

/// A child process, killed (SIGKILL) and reaped when dropped.
pub struct Proc {
    /// The process.
    pub child: Child,
}

impl Proc {
    /// Its process id.
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kill it with SIGKILL (nothing released, as a crashed node would) and reap it.
    pub fn kill(&mut self) -> std::io::Result<()> {
        self.child.kill()?;
        self.child.wait().map(drop)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Drop the pages of `program` from the page cache, so that the next process started
/// from it finds none of them there and maps only the pages it runs. A page fault on a
/// program's text maps the pages around it that are already cached (the kernel's
/// fault-around, 64 KB), so a resident set read after pages were cached by an earlier
/// run, by `ctop manifests` or by a kubesim of the same file counts up to a megabyte of
/// code the process never ran (bench/README.md, "Base RSS and the page cache"). Pages
/// that a running process maps stay.
pub fn uncache(program: &Path) -> anyhow::Result<()> {
    let file = std::fs::File::open(program).with_context(|| format!("cannot open {}", program.display()))?;
    rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
        .with_context(|| format!("cannot drop {} from the page cache", program.display()))
}

/// A free TCP port on the loopback interface.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `cmd` run through `taskset -c <cpus>`: the same program, arguments, environment and
/// directory, allowed on those CPUs only (`taskset` execs it, so the child's pid is the
/// program's).
#[must_use]
pub fn pinned(cmd: &Command, cpus: &str) -> Command {
    let mut out = Command::new("taskset");
    out.arg("-c").arg(cpus).arg(cmd.get_program()).args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => out.env(key, v),
            None => out.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        out.current_dir(dir);
    }
    out
}

/// Keep this process (every thread of it) on `cpus`, with `taskset -a -p`.
pub fn pin_self(cpus: &str) -> anyhow::Result<()> {
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus])
        .arg(std::process::id().to_string())
        .stdout(Stdio::null())
        .status()
        .context("cannot run taskset (util-linux) to pin the benchmark's processes")?;
    anyhow::ensure!(status.success(), "taskset could not pin this process to CPU {cpus}: {status}");
    Ok(())
}

/// Start `cmd` with stdout and stderr both going to `log`.
pub fn spawn(cmd: &mut Command, log: &Path) -> anyhow::Result<Proc> {
    let file = std::fs::File::create(log)?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    Ok(Proc { child })
}

/// (CPU seconds, VmRSS MiB, VmHWM MiB) of a process.
#[must_use]
pub fn proc_usage(pid: u32) -> (f64, f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is [0], utime is field 14 overall → [11], stime [12].
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (cpu, kb("VmRSS:") / 1024.0, kb("VmHWM:") / 1024.0)
}

/// The text of `GET /metrics` on `127.0.0.1:port` (headers included), if it answers.
pub async fn scrape(port: u16) -> Option<String> {
    let mut sock = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.ok()?;
    let mut out = String::new();
    sock.read_to_string(&mut out).await.ok()?;
    Some(out)
}

/// The sum of the samples whose line starts with `prefix` in a Prometheus text exposition.
#[must_use]
pub fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// `controller_runtime_reconcile_total` of the process serving `/metrics` on `port` (0 when
/// it does not answer).
pub async fn reconciles(port: u16) -> u64 {
    scrape(port).await.map_or(0, |t| metric(&t, "controller_runtime_reconcile_total") as u64)
}
