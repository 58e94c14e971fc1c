//! The soak's results: `results.md` (per size, the RSS after each wave and the growth of
//! every implementation, the goal, then every wave's figures), `results.json` and
//! `chart.png` (RSS per wave, one panel per size, one line per implementation). Start at
//! [`write`].

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::SoakRun;
use crate::fit::FROM_WAVE;

/// The goal, in MiB of growth per wave of 2,000 objects.
const GOAL_MB_PER_2000: f64 = 1.5;

/// One line for the console.
pub fn summary(r: &SoakRun) -> String {
    let rss: Vec<String> = r.waves.iter().map(|w| format!("{:.1}", w.rss_mb)).collect();
    format!(
        "RSS MB by wave [{}], growth {}, {:.0}s{}",
        rss.join(", "),
        r.growth.map_or_else(
            || "–".to_owned(),
            |g| format!("{:.2} MB/wave ({:.2} KB per object)", g.mb_per_wave, g.kb_per_object)
        ),
        r.elapsed_s,
        r.failure.as_ref().map(|f| format!(" — FAILED: {f}")).unwrap_or_default()
    )
}

fn sizes(runs: &[SoakRun]) -> Vec<usize> {
    let mut sizes: Vec<usize> = runs.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

fn growth_cells(r: &SoakRun) -> String {
    r.growth.map_or_else(
        || "– | – | –".to_owned(),
        |g| format!("{:.2} | {:.2} | {:.2}", g.mb_per_wave, g.kb_per_object, g.mb_per_2000),
    )
}

/// Whether ctop met the goal at `size`, in words.
fn goal(runs: &[SoakRun], size: usize) -> String {
    let growth = |imp: &str| runs.iter().find(|r| r.is(imp, size)).and_then(|r| r.growth);
    let Some(ctop) = growth("ctop") else {
        return format!("No growth for ctop: it needs waves {FROM_WAVE} and {} at least", FROM_WAVE + 1);
    };
    let absolute = if ctop.mb_per_2000 <= GOAL_MB_PER_2000 { "met" } else { "missed" };
    let mut words = format!(
        "ctop grows {:.2} MB per 2,000 objects (goal ≤ {GOAL_MB_PER_2000}): **{absolute}**",
        ctop.mb_per_2000
    );
    if let Some(native) = growth("native") {
        let relative = if ctop.mb_per_wave <= native.mb_per_wave { "met" } else { "missed" };
        let _ = write!(
            words,
            "; against native's {:.2} MB per wave, ctop's {:.2} (goal ≤ native's): **{relative}**",
            native.mb_per_wave, ctop.mb_per_wave
        );
    }
    words
}

/// The Markdown report of `runs`.
pub fn markdown(runs: &[SoakRun]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Per implementation, a fresh kubesim (`ctop sim --plain-http --no-workloads`) and a probe CR, \
         then waves of N WebApps with new names: created at once (32 requests in flight), converged \
         (Deployment, Service, token Secret and status seen), deleted, gone (every CR and child), the \
         implementation quiet (no reconcile, no queued work and at most 20 ms of CPU for a whole window), \
         then its `VmRSS`. Wave 0 is the base, before the first wave. Growth is the least-squares slope \
         of the RSS over waves {FROM_WAVE} to the last, per wave and per object created and deleted in a \
         wave. Goal: ctop's growth per wave ≤ native's, and ≤ {GOAL_MB_PER_2000} MB per 2,000 objects.\n"
    );
    for size in sizes(runs) {
        let of_size: Vec<&SoakRun> = runs.iter().filter(|r| r.size == size).collect();
        let waves = of_size.iter().map(|r| r.waves.len()).max().unwrap_or(0);
        let _ = writeln!(md, "## {size} CRs per wave\n");
        let wave_heads: String = (1..waves).map(|w| format!(" wave {w} |")).collect();
        let _ = writeln!(
            md,
            "| impl | RSS MB: base |{wave_heads} growth MB/wave | KB per deleted object | MB per 2,000 objects | peak RSS (VmHWM) MB | finished | run s |"
        );
        let _ = writeln!(md, "|---|{}---|---|---|---|---|---|", "---|".repeat(waves));
        for r in &of_size {
            let rss: String = (0..waves)
                .map(|i| r.waves.get(i).map_or(" – |".to_owned(), |w| format!(" {:.1} |", w.rss_mb)))
                .collect();
            let hwm = r.waves.iter().map(|w| w.hwm_mb).fold(0.0, f64::max);
            let finished = if r.converged {
                "yes".to_owned()
            } else {
                format!("no: {}", r.failure.as_deref().unwrap_or(""))
            };
            let _ = writeln!(
                md,
                "| {} |{rss} {} | {hwm:.1} | {finished} | {:.0} |",
                r.implementation,
                growth_cells(r),
                r.elapsed_s
            );
        }
        let _ = writeln!(md, "\n{}.\n", goal(runs, size));
        let _ = writeln!(
            md,
            "| impl | wave | create→converged s | delete→gone s | quiet after s | RSS MB | VmHWM MB | CPU s (total) | reconciles (total) | kubesim RSS MB |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
        for r in &of_size {
            for w in &r.waves {
                let phase = |s: f64| if w.wave == 0 { "–".to_owned() } else { format!("{s:.2}") };
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {:.2}{} | {:.1} | {:.1} | {:.1} | {} | {:.1} |",
                    r.implementation,
                    if w.wave == 0 { "base".to_owned() } else { w.wave.to_string() },
                    phase(w.create_converge_s),
                    phase(w.delete_gone_s),
                    w.settle_s,
                    if w.quiet { "" } else { " (not quiet)" },
                    w.rss_mb,
                    w.hwm_mb,
                    w.cpu_s,
                    w.reconciles,
                    w.sim_rss_mb
                );
            }
        }
        let _ = writeln!(md);
    }
    md
}

/// Write results.md, results.json and chart.png under `out`.
pub fn write(out: &Path, runs: &[SoakRun]) -> anyhow::Result<()> {
    std::fs::write(out.join("results.md"), markdown(runs))?;
    std::fs::write(out.join("results.json"), serde_json::to_string_pretty(runs)?)?;
    if let Err(e) = chart(&out.join("chart.png"), runs) {
        tracing::warn!(error = %e, "cannot draw the chart");
    }
    Ok(())
}

/// RSS after each wave: one panel per size, one line per implementation.
fn chart(path: &Path, runs: &[SoakRun]) -> anyhow::Result<()> {
    ctop_bench::chart::font()?;
    let sizes = sizes(runs);
    let root = BitMapBackend::new(path, (800 * sizes.len().max(1) as u32, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, sizes.len().max(1)));
    for (panel, size) in panels.iter().zip(&sizes) {
        let of_size: Vec<&SoakRun> = runs.iter().filter(|r| r.size == *size).collect();
        let last = of_size.iter().flat_map(|r| &r.waves).map(|w| w.wave).max().unwrap_or(1).max(1);
        let max = of_size.iter().flat_map(|r| &r.waves).map(|w| w.rss_mb).fold(0.0, f64::max).max(1.0) * 1.15;
        let mut c = ChartBuilder::on(panel)
            .caption(format!("RSS after each wave of {size} CRs (MB)"), ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.2..last as f64 + 0.2, 0.0..max)?;
        c.configure_mesh()
            .x_labels(last + 1)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .x_desc("wave (0: base)")
            .draw()?;
        for r in of_size {
            let color = ctop_bench::chart::color(&r.implementation);
            let points: Vec<(f64, f64)> = r.waves.iter().map(|w| (w.wave as f64, w.rss_mb)).collect();
            let label = match r.growth {
                Some(g) => format!("{} ({:+.2} MB/wave)", r.implementation, g.mb_per_wave),
                None => r.implementation.clone(),
            };
            c.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
            c.draw_series(points.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::growth;
    use crate::wave::Wave;

    fn run(imp: &str, rss: &[f64]) -> SoakRun {
        let waves: Vec<Wave> = rss
            .iter()
            .enumerate()
            .map(|(i, mb)| Wave { wave: i, rss_mb: *mb, quiet: true, ..Wave::default() })
            .collect();
        let points: Vec<(usize, f64)> = waves.iter().map(|w| (w.wave, w.rss_mb)).collect();
        SoakRun {
            implementation: imp.into(),
            size: 2000,
            waves_planned: rss.len() - 1,
            converged: true,
            growth: growth(&points, 2000),
            waves,
            ..SoakRun::default()
        }
    }

    #[test]
    fn the_report_has_every_wave_and_says_whether_the_goal_is_met() {
        let runs = [
            run("ctop", &[40.0, 62.0, 71.0, 80.0, 91.0, 101.0, 110.0]),
            run("native", &[20.0, 100.0, 102.0, 102.0, 103.0, 105.0, 106.0]),
        ];
        let md = markdown(&runs);
        assert!(md.contains("| ctop | 40.0 | 62.0 | 71.0 | 80.0 | 91.0 | 101.0 | 110.0 | 9.90 |"), "{md}");
        assert!(md.contains("| native | base | – | – |"), "{md}");
        assert!(md.contains("(goal ≤ 1.5): **missed**"), "{md}");
        assert!(md.contains("(goal ≤ native's): **missed**"), "{md}");
        let mut table = md.lines().skip_while(|l| !l.starts_with("| impl | RSS"));
        let cells = |l: Option<&str>| l.map(|l| l.matches('|').count());
        let header = cells(table.next());
        assert_eq!(header, cells(table.next()), "the rule under the header");
        assert_eq!(header, cells(table.next()), "ctop's row");
        let flat = [run("ctop", &[40.0, 50.0, 50.5, 50.5, 51.0, 51.0, 51.5]), runs[1].clone()];
        assert!(markdown(&flat).contains("**met**; against native's"));
    }
}
