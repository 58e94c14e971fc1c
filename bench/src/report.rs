//! The results: a Markdown table with the ratios against the targets, JSON, and a PNG chart.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::Run;

/// One line for the console.
pub fn summary(r: &Run) -> String {
    match &r.failure {
        Some(f) if r.create_converge_s == 0.0 => format!("FAILED: {f}"),
        _ => format!(
            "converge {:.2}s p50 {:.0}ms p99 {:.0}ms no-op {:.0}/s ({} writes) req/rec {:.2} req/CR {:.2} cpu {:.1}s rss {:.1}MB{}",
            r.create_converge_s,
            r.latency_p50_ms,
            r.latency_p99_ms,
            r.noop_per_s,
            r.steady_writes,
            r.requests_per_reconcile,
            r.create_requests as f64 / r.size.max(1) as f64,
            r.cpu_s,
            r.peak_rss_mb,
            r.failure.as_ref().map(|f| format!(" — {f}")).unwrap_or_default()
        ),
    }
}

/// (mean, p50) in µs of `ctop_script_duration_seconds{handler="reconcile"}` from /metrics.
pub fn script_times(metrics: &str) -> (Option<f64>, Option<f64>) {
    let reconcile =
        |l: &&str| l.starts_with("ctop_script_duration_seconds") && l.contains("handler=\"reconcile\"");
    let value = |l: &str| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok());
    let lines: Vec<&str> = metrics.lines().filter(reconcile).collect();
    let sum = lines.iter().find(|l| l.starts_with("ctop_script_duration_seconds_sum")).and_then(|l| value(l));
    let count =
        lines.iter().find(|l| l.starts_with("ctop_script_duration_seconds_count")).and_then(|l| value(l));
    let mean = match (sum, count) {
        (Some(s), Some(c)) if c > 0.0 => Some(s / c * 1e6),
        _ => None,
    };
    // Buckets: linear interpolation inside the bucket holding the median.
    let mut buckets: Vec<(f64, f64)> = lines
        .iter()
        .filter(|l| l.starts_with("ctop_script_duration_seconds_bucket"))
        .filter_map(|l| {
            let le = l.split("le=\"").nth(1)?.split('"').next()?;
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
            Some((le, value(l)?))
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let p50 = count.filter(|c| *c > 0.0).and_then(|c| {
        let half = c / 2.0;
        let (mut lo, mut below) = (0.0, 0.0);
        for (le, n) in &buckets {
            if *n >= half {
                if le.is_infinite() {
                    return Some(lo * 1e6);
                }
                let frac = if *n > below { (half - below) / (n - below) } else { 1.0 };
                return Some((lo + (le - lo) * frac) * 1e6);
            }
            lo = *le;
            below = *n;
        }
        None
    });
    (mean, p50)
}

/// The percentage of `reconcile` calls that ran on the async worker
/// (`ctop_script_calls_total{handler="reconcile",path="inline"}` of all paths), from /metrics;
/// `None` before the first call.
pub fn inline_share(metrics: &str) -> Option<f64> {
    let (mut inline, mut all) = (0.0, 0.0);
    for line in metrics.lines().filter(|l| l.starts_with("ctop_script_calls_total{")) {
        if !line.contains("handler=\"reconcile\"") {
            continue;
        }
        let Some(n) = line.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()) else {
            continue;
        };
        all += n;
        if line.contains("path=\"inline\"") {
            inline += n;
        }
    }
    (all > 0.0).then(|| inline / all * 100.0)
}

fn ratio(a: f64, b: f64) -> String {
    match a / b {
        r if a <= 0.0 || b <= 0.0 || !r.is_finite() => "–".into(),
        r if r < 0.1 => format!("{r:.4}×"),
        r => format!("{r:.2}×"),
    }
}

fn find<'a>(runs: &'a [Run], imp: &str, size: usize) -> Option<&'a Run> {
    runs.iter().find(|r| r.implementation == imp && r.size == size && r.create_converge_s > 0.0)
}

/// The Markdown table and the target check.
pub fn markdown(runs: &[Run], every: &str) -> String {
    let mut md = String::new();
    let rounds = runs.iter().map(|r| r.rounds).max().unwrap_or(1);
    let medians = if rounds > 1 {
        format!(" Each figure is the median of up to {rounds} interleaved runs (`--rounds`).")
    } else {
        String::new()
    };
    let pinned = if runs.iter().any(|r| r.pinned) {
        " Pinned (`--pin`): kubesim and the driver on CPU 0, the implementation on CPU 1."
    } else {
        ""
    };
    let _ = writeln!(
        md,
        "Resync period `{every}` for all three; kubesim `--plain-http`, one fresh kubesim per run; CRs in one namespace.{pinned}{medians}\n"
    );
    let _ = writeln!(
        md,
        "| impl | CRs | converged | cold start s | create→converged s | latency p50 ms | p99 ms | req/reconcile | req/CR | no-op rec/s | no-op rec/CPU-s | steady writes | update s | delete s | CPU s | base RSS MB | peak RSS MB | RSS/CR KB | script p50 µs (mean; share run inline) |"
    );
    let _ = writeln!(md, "|{}", "---|".repeat(19));
    for r in runs {
        let script = match (r.script_p50_us, r.script_mean_us, r.script_inline_pct) {
            (Some(p), Some(m), Some(i)) => format!("{p:.0} ({m:.0}; {i:.0} % inline)"),
            (Some(p), Some(m), None) => format!("{p:.0} ({m:.0})"),
            _ => "–".into(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.2} | {:.2} | {:.0} | {:.0} | {:.2} | {:.2} | {:.0} | {:.0} | {} | {:.2} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
            r.implementation,
            r.size,
            if r.converged {
                "yes".to_owned()
            } else {
                format!("NO: {}", r.failure.as_deref().unwrap_or(""))
            },
            r.cold_start_s,
            r.create_converge_s,
            r.latency_p50_ms,
            r.latency_p99_ms,
            r.requests_per_reconcile,
            r.create_requests as f64 / r.size.max(1) as f64,
            r.noop_per_s,
            r.noop_per_cpu_s,
            r.steady_writes,
            r.update_converge_s,
            r.delete_converge_s,
            r.cpu_s,
            r.base_rss_mb,
            r.peak_rss_mb,
            r.rss_per_cr_kb,
            script,
        );
    }
    let _ = writeln!(
        md,
        "\nThe update burst, per change (one `spec.image` change per CR; reconciles and requests until a second passes without a reconcile, echoes included):\n"
    );
    let _ = writeln!(md, "| impl | CRs | reconciles/CR | requests/CR | CPU µs/CR | CPU µs/reconcile |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for r in runs.iter().filter(|r| r.update_reconciles > 0) {
        let n = r.size.max(1) as f64;
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {:.2} | {:.0} | {:.0} |",
            r.implementation,
            r.size,
            r.update_reconciles as f64 / n,
            r.update_requests as f64 / n,
            r.update_cpu_s * 1e6 / n,
            r.update_cpu_s * 1e6 / r.update_reconciles as f64,
        );
    }
    let mut sizes: Vec<usize> = runs.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let _ = writeln!(
        md,
        "\nRatios (>1 means ctop is better: time of the peer / time of ctop, rate of ctop / rate of the peer):\n"
    );
    let _ = writeln!(
        md,
        "| CRs | vs | create→converged | update | no-op rec/s | no-op rec/CPU-s | CPU s | peak RSS |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for size in sizes {
        let Some(c) = find(runs, "ctop", size) else { continue };
        for peer in ["native", "kopf"] {
            let Some(p) = find(runs, peer, size) else { continue };
            let _ = writeln!(
                md,
                "| {size} | {peer} | {} | {} | {} | {} | {} | {} |",
                ratio(p.create_converge_s, c.create_converge_s),
                ratio(p.update_converge_s, c.update_converge_s),
                ratio(c.noop_per_s, p.noop_per_s),
                ratio(c.noop_per_cpu_s, p.noop_per_cpu_s),
                ratio(p.cpu_s, c.cpu_s),
                ratio(p.peak_rss_mb, c.peak_rss_mb),
            );
        }
    }
    md
}

/// Write results.md, results.json and chart.png under `out`.
pub fn write(out: &Path, runs: &[Run], every: &str) -> anyhow::Result<()> {
    std::fs::write(out.join("results.md"), markdown(runs, every))?;
    std::fs::write(out.join("results.json"), serde_json::to_string_pretty(runs)?)?;
    if let Err(e) = chart(&out.join("chart.png"), runs) {
        tracing::warn!(error = %e, "cannot draw the chart");
    }
    Ok(())
}

/// Grouped bars, one panel per figure, one group per size, one bar per implementation.
fn chart(path: &Path, runs: &[Run]) -> anyhow::Result<()> {
    ctop_bench::chart::font()?;
    let root = BitMapBackend::new(path, (2000, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((2, 4));
    type Figure = (&'static str, fn(&Run) -> f64);
    // The last two are the scale curve: cost per CR, whose growth across sizes shows.
    let figures: [Figure; 8] = [
        ("time to converge after create (s)", |r| r.create_converge_s),
        ("create→children p99 latency (ms)", |r| r.latency_p99_ms),
        ("no-op reconciles/s", |r| r.noop_per_s),
        ("CPU ms per CR (create + update)", |r| r.cpu_s * 1000.0 / r.size.max(1) as f64),
        ("CPU seconds (whole run)", |r| r.cpu_s),
        ("peak RSS (MB)", |r| r.peak_rss_mb),
        ("update burst converge (s)", |r| r.update_converge_s),
        ("RSS per CR (KB)", |r| r.rss_per_cr_kb),
    ];
    let mut sizes: Vec<usize> = runs.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let impls = ctop_bench::implementation::NAMES;
    for (panel, (title, value)) in panels.iter().zip(figures) {
        let max = runs.iter().map(value).fold(0.0_f64, f64::max).max(1e-3) * 1.15;
        let groups = sizes.len().max(1);
        let mut c = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..groups as f64, 0.0..max)?;
        let sizes_for_label = sizes.clone();
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(groups * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - i as f64 - 0.5).abs() < 0.01 {
                    sizes_for_label.get(i).map(|s| format!("{s} CRs")).unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .draw()?;
        for (k, imp) in impls.iter().enumerate() {
            let color = ctop_bench::chart::color(imp);
            let bars: Vec<_> = sizes
                .iter()
                .enumerate()
                .filter_map(|(g, size)| {
                    let r = runs.iter().find(|r| r.implementation == *imp && r.size == *size)?;
                    let width = 0.8 / impls.len() as f64;
                    let x0 = g as f64 + 0.1 + k as f64 * width;
                    Some(Rectangle::new([(x0, 0.0), (x0 + width * 0.92, value(r))], color.filled()))
                })
                .collect();
            c.draw_series(bars)?
                .label(*imp)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        }
        c.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inline_share_counts_reconcile_calls_on_every_path() {
        let metrics = r#"# TYPE ctop_script_calls counter
ctop_script_calls_total{controller="webapp",handler="reconcile",path="inline"} 90
ctop_script_calls_total{controller="webapp",handler="reconcile",path="blocking"} 8
ctop_script_calls_total{controller="webapp",handler="reconcile",path="restarted"} 2
ctop_script_calls_total{controller="webapp",handler="finalize",path="blocking"} 50
"#;
        assert_eq!(inline_share(metrics), Some(90.0));
        assert_eq!(inline_share("ctop_script_duration_seconds_count 3\n"), None);
    }
}
