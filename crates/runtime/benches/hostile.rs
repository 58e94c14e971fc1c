//! Peak memory of hostile scripts against the configured limits.
//!
//! `cargo bench -p ctop-runtime --bench hostile`. Each case runs in a child process of its own
//! (this binary again, with `--case`), so its peak resident set (`VmHWM`) is its own: the
//! runtime's hostile golden script is loaded into `workers` runtimes with the default limits
//! (64 MiB of script memory, a 16 MiB output budget, 10,000 children, a 5 s deadline here),
//! and `workers` calls of the hostile mode run at once. The table compares the peak with
//! what the limits allow per runtime, `script memory + output budget + 8 MiB` of transient
//! copies (the formula `ctop manifests` sizes the container with), over the process's
//! baseline after loading.

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ctop_runtime::{Limits, Script};
use serde_json::json;

const MIB: f64 = 1024.0 * 1024.0;

/// (name, mode, count): the hostile golden script's modes.
const CASES: &[(&str, &str, u32)] = &[
    ("endless loop", "loop", 0),
    ("allocation bomb", "alloc", 0),
    ("allocation bomb in a promise job", "jobAlloc", 0),
    ("100,000 applies", "applies", 100_000),
    ("the same child applied forever", "applySame", 0),
    ("children of 64 KiB strings", "output", 1_000),
];

fn status_kb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn limits() -> Limits {
    Limits { timeout: Duration::from_secs(5), ..Limits::default() }
}

/// The child process: load, note the baseline, run `workers` calls of `mode` at once.
fn run_case(mode: &str, count: u32, workers: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/hostile");
    let script = Script::from_dir(&dir, "operator.ct", workers, limits()).unwrap();
    let base = status_kb("VmRSS:");
    let started = Instant::now();
    let errors: Vec<String> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..workers)
            .map(|i| {
                let script = &script;
                s.spawn(move || {
                    let input = json!({"object": {"apiVersion": "hostile.example.com/v1", "kind": "Bomb",
                        "metadata": {"name": format!("b{i}"), "namespace": "default", "uid": format!("u{i}")},
                        "spec": {"mode": mode, "count": count}}, "observed": {}, "env": {}, "values": {}});
                    match script.dispatch("reconcile", 0, &input.to_string()) {
                        Ok(_) => "no error".to_owned(),
                        Err(e) => e.to_string(),
                    }
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let took = started.elapsed();
    let peak = status_kb("VmHWM:");
    let first = errors.first().map(String::as_str).unwrap_or_default();
    let kind = first.split([';', '(']).next().unwrap_or_default().trim();
    println!("{base} {peak} {} {kind}", took.as_millis());
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--case") {
        let mode = &args[i + 1];
        let count: u32 = args[i + 2].parse().unwrap();
        let workers: usize = args[i + 3].parse().unwrap();
        run_case(mode, count, workers);
        return;
    }
    let l = limits();
    let per_runtime = (l.memory + l.max_output) as f64 / MIB + 8.0;
    println!(
        "Peak RSS of hostile calls, {} MiB script memory, {} MiB output budget per runtime",
        l.memory >> 20,
        l.max_output >> 20
    );
    println!();
    println!(
        "| case | runtimes | error | took ms | base MiB | peak MiB | peak − base | allowed (runtimes × {per_runtime:.0} MiB) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let exe = std::env::current_exe().unwrap();
    for &(name, mode, count) in CASES {
        for workers in [1usize, 4] {
            let out = Command::new(&exe)
                .args(["--case", mode, &count.to_string(), &workers.to_string()])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let mut fields = text.trim().splitn(4, ' ');
            let (Some(base), Some(peak), Some(ms), Some(kind)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                eprintln!("{name}: the case process failed: {}", String::from_utf8_lossy(&out.stderr));
                continue;
            };
            let base: f64 = base.parse::<f64>().unwrap() / 1024.0;
            let peak: f64 = peak.parse::<f64>().unwrap() / 1024.0;
            println!(
                "| {name} | {workers} | {kind} | {ms} | {base:.0} | {peak:.0} | {:.0} | {:.0} |",
                peak - base,
                workers as f64 * per_runtime
            );
        }
    }
}
