//! The sharding benchmark's results: `results.md` (the runs, a table per run with a row
//! per replica and the totals, the kills, the ratios against one replica) and
//! `results.json`. Start at [`write`].

use std::fmt::Write as _;
use std::path::Path;

use crate::{ShardRun, Target};

/// One line for the console.
pub fn summary(r: &ShardRun) -> String {
    let kill = r.kill.as_ref().map_or(String::new(), |k| {
        format!(
            "; kill {}: moved {} converged {}",
            k.victim,
            opt(k.moved_s, 1, "s"),
            opt(k.converged_s, 1, "s")
        )
    });
    format!(
        "converge {:.2}s assign p50 {} p99 {} cpu {:.1}s{kill}{}",
        r.converge_s,
        opt(r.assign_p50_ms, 0, "ms"),
        opt(r.assign_p99_ms, 0, "ms"),
        r.members.iter().map(|m| m.cpu_s).sum::<f64>(),
        r.failure.as_ref().map(|f| format!(" — FAILED: {f}")).unwrap_or_default()
    )
}

fn opt(v: Option<f64>, digits: usize, unit: &str) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}{unit}"))
}

fn name(r: &ShardRun) -> String {
    let mode = if r.sharded { "sharded" } else { "plain (leader election)" };
    let kill = match r.kill.as_ref().and_then(|k| k.target) {
        Some(Target::Member) => ", kill a member",
        Some(Target::Leader) => ", kill the sharder",
        None => "",
    };
    format!("{} × {mode}{kill}", r.replicas)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 { format!("{:.2}×", a / b) } else { "–".to_owned() }
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The Markdown report of `runs`.
pub fn markdown(runs: &[ShardRun]) -> String {
    let mut md = String::new();
    let mut sizes: Vec<usize> = runs.iter().map(|r| r.size).collect();
    sizes.dedup();
    for size in sizes {
        let of_size: Vec<&ShardRun> = runs.iter().filter(|r| r.size == size).collect();
        let _ = writeln!(md, "## {size} CRs\n");
        let _ = writeln!(
            md,
            "| run | finished | create→converged s | latency p50 / p99 ms | assignment p50 / p99 / max ms | CPU s (all replicas) | peak RSS MB (sum) |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for r in &of_size {
            let _ = writeln!(
                md,
                "| {} | {} | {:.2} | {:.0} / {:.0} | {} / {} / {} | {:.1} | {:.1} |",
                name(r),
                if r.converged {
                    "yes".to_owned()
                } else {
                    format!("no: {}", r.failure.as_deref().unwrap_or(""))
                },
                r.converge_s,
                r.latency_p50_ms,
                r.latency_p99_ms,
                opt(r.assign_p50_ms, 0, ""),
                opt(r.assign_p99_ms, 0, ""),
                opt(r.assign_max_ms, 0, ""),
                r.members.iter().map(|m| m.cpu_s).sum::<f64>(),
                r.members.iter().map(|m| m.peak_rss_mb).sum::<f64>(),
            );
        }
        for r in &of_size {
            replicas_table(&mut md, r);
        }
        kills_table(&mut md, &of_size);
        ratios_table(&mut md, &of_size);
    }
    md
}

fn replicas_table(md: &mut String, r: &ShardRun) {
    let killed = r.kill.is_some();
    let _ = writeln!(md, "\n### {}\n", name(r));
    let _ = write!(md, "| replica | role | CRs held | share | peak RSS MB | CPU s | reconciles |");
    if killed {
        let _ = write!(md, " CRs held after the move | peak RSS MB after | CPU s after |");
    }
    let _ = writeln!(md, "\n|---|---|---|---|---|---|---|{}", if killed { "---|---|---|" } else { "" });
    let total = r.size.max(1) as f64;
    for m in &r.members {
        let role = match (m.leader, m.killed) {
            (true, true) => "sharder, killed",
            (true, false) if r.sharded => "sharder",
            (true, false) => "leader",
            (false, true) => "member, killed",
            (false, false) => "member",
        };
        let _ = write!(
            md,
            "| {} | {role} | {} | {:.1} % | {:.1} | {:.1} | {} |",
            m.identity,
            m.objects,
            m.objects as f64 * 100.0 / total,
            m.peak_rss_mb,
            m.cpu_s,
            m.reconciles
        );
        if killed {
            let _ = write!(
                md,
                " {} | {} | {} |",
                m.objects_after.map_or("–".to_owned(), |o| o.to_string()),
                opt(m.peak_rss_after_mb, 1, ""),
                opt(m.cpu_after_s, 1, "")
            );
        }
        let _ = writeln!(md);
    }
    let sum = |f: fn(&crate::Replica) -> f64| r.members.iter().map(f).sum::<f64>();
    let _ = write!(
        md,
        "| **total** | | {} | | {:.1} | {:.1} | {} |",
        r.members.iter().map(|m| m.objects).sum::<usize>(),
        sum(|m| m.peak_rss_mb),
        sum(|m| m.cpu_s),
        r.members.iter().map(|m| m.reconciles).sum::<u64>()
    );
    if killed {
        let _ = write!(
            md,
            " {} | {:.1} | {:.1} |",
            r.members.iter().filter_map(|m| m.objects_after).sum::<usize>(),
            sum(|m| m.peak_rss_after_mb.unwrap_or(0.0)),
            sum(|m| m.cpu_after_s.unwrap_or(0.0))
        );
    }
    let _ = writeln!(md);
}

fn kills_table(md: &mut String, runs: &[&ShardRun]) {
    let kills: Vec<(&ShardRun, &crate::Move)> =
        runs.iter().filter_map(|r| Some((*r, r.kill.as_ref()?))).collect();
    if kills.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n### Moving a killed replica's objects (seconds from the SIGKILL)\n");
    let _ = writeln!(
        md,
        "| run | killed | its CRs | lease duration s | its Lease taken over | new sharder | no CR on it | every CR and child on a survivor | tokens regenerated |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    for (r, k) in kills {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} |",
            name(r),
            k.victim,
            k.objects,
            k.lease_duration_s,
            opt(k.fenced_s, 2, ""),
            if k.target == Some(Target::Leader) { opt(k.new_leader_s, 2, "") } else { "–".to_owned() },
            opt(k.moved_s, 2, ""),
            opt(k.converged_s, 2, ""),
            k.tokens_changed
        );
    }
}

fn ratios_table(md: &mut String, runs: &[&ShardRun]) {
    let Some(one) = runs.iter().find(|r| r.sharded && r.replicas == 1 && r.converged) else { return };
    let per = |r: &ShardRun, f: fn(&crate::Replica) -> f64| mean(r.members.iter().map(f));
    let max = |r: &ShardRun| r.members.iter().map(|m| m.peak_rss_mb).fold(0.0, f64::max);
    let cpu = |r: &ShardRun| r.members.iter().map(|m| m.cpu_s).sum::<f64>();
    let _ = writeln!(
        md,
        "\n### Against 1 sharded replica (value of the run ÷ value of 1 replica: below 1× is less time, memory or CPU)\n"
    );
    let _ = writeln!(
        md,
        "| run | create→converged s | mean peak RSS per replica MB | largest peak RSS MB | mean CPU s per replica | CPU s of all replicas |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for r in runs.iter().filter(|r| !std::ptr::eq(**r, *one)) {
        let _ = writeln!(
            md,
            "| {} | {:.2} ({}) | {:.1} ({}) | {:.1} ({}) | {:.1} ({}) | {:.1} ({}) |",
            name(r),
            r.converge_s,
            ratio(r.converge_s, one.converge_s),
            per(r, |m| m.peak_rss_mb),
            ratio(per(r, |m| m.peak_rss_mb), per(one, |m| m.peak_rss_mb)),
            max(r),
            ratio(max(r), max(one)),
            per(r, |m| m.cpu_s),
            ratio(per(r, |m| m.cpu_s), per(one, |m| m.cpu_s)),
            cpu(r),
            ratio(cpu(r), cpu(one)),
        );
    }
}

/// Write `results.md` and `results.json` of `runs` into `out`.
pub fn write(out: &Path, runs: &[ShardRun]) -> anyhow::Result<()> {
    let mut sorted: Vec<ShardRun> = runs.to_vec();
    sorted.sort_by_key(|r| {
        (r.size, r.sharded, r.replicas, r.kill.as_ref().and_then(|k| k.target).map(|t| t as u8))
    });
    std::fs::write(out.join("results.md"), markdown(&sorted))?;
    std::fs::write(out.join("results.json"), serde_json::to_string_pretty(&sorted)?)?;
    Ok(())
}
