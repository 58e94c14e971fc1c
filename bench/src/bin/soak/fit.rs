//! The growth of RSS over waves: a least-squares line through the RSS after each wave from
//! the second on (the first wave also pays for what is allocated once: the caches' tables,
//! the script runtimes, the allocator's arenas), in MB per wave and per deleted object.

/// How RSS grows from wave to wave.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Growth {
    /// The first wave of the fit (the last is the last wave measured).
    pub from_wave: usize,
    /// The slope, MiB per wave.
    pub mb_per_wave: f64,
    /// The slope per object created and deleted in a wave, KiB.
    pub kb_per_object: f64,
    /// The slope scaled to 2,000 objects per wave (the goal's unit), MiB.
    pub mb_per_2000: f64,
}

/// The first wave of the fit.
pub const FROM_WAVE: usize = 2;

/// The slope of the least-squares line through `points` (x, y); `None` with fewer than
/// two distinct x.
#[must_use]
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The growth of `rss` (wave number, MiB after it) from [`FROM_WAVE`] on, for `size`
/// objects per wave; `None` with fewer than two such waves.
#[must_use]
pub fn growth(rss: &[(usize, f64)], size: usize) -> Option<Growth> {
    let points: Vec<(f64, f64)> =
        rss.iter().filter(|(w, _)| *w >= FROM_WAVE).map(|&(w, mb)| (w as f64, mb)).collect();
    let mb_per_wave = slope(&points)?;
    let size = size.max(1) as f64;
    Some(Growth {
        from_wave: FROM_WAVE,
        mb_per_wave,
        kb_per_object: mb_per_wave * 1024.0 / size,
        mb_per_2000: mb_per_wave * 2000.0 / size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_of_a_line_is_its_slope() {
        let line: Vec<(f64, f64)> = (0..5).map(|x| (f64::from(x), 3.0 + 2.5 * f64::from(x))).collect();
        assert!((slope(&line).unwrap() - 2.5).abs() < 1e-12);
        assert_eq!(slope(&[(1.0, 2.0)]), None);
        assert_eq!(slope(&[(1.0, 2.0), (1.0, 3.0)]), None, "one x only");
    }

    #[test]
    fn noise_around_a_line_fits_to_its_slope() {
        // y = 10 + 2x with ±1 alternating: the least-squares slope of 4 points.
        let pts = [(0.0, 11.0), (1.0, 11.0), (2.0, 15.0), (3.0, 15.0)];
        assert!((slope(&pts).unwrap() - 1.6).abs() < 1e-12);
    }

    #[test]
    fn growth_leaves_out_the_base_and_the_first_wave() {
        // The figures for ctop at 2,000 objects per wave.
        let rss = [(0, 40.0), (1, 62.0), (2, 71.0), (3, 80.0), (4, 91.0), (5, 101.0), (6, 110.0)];
        let g = growth(&rss, 2000).unwrap();
        assert!((g.mb_per_wave - 9.9).abs() < 1e-9, "{g:?}");
        assert!((g.mb_per_2000 - g.mb_per_wave).abs() < 1e-12);
        assert!((g.kb_per_object - 9.9 * 1024.0 / 2000.0).abs() < 1e-9);
        assert_eq!(growth(&rss[..3], 2000), None, "wave 2 alone is no slope");
        let tenfold = growth(&rss, 20_000).unwrap();
        assert!((tenfold.mb_per_2000 - 0.99).abs() < 1e-9);
    }
}
