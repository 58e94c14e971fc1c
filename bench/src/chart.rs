//! What the benchmarks' charts share: the font plotters draws text with (registered once
//! per process from the system's DejaVu Sans, see [`font`]) and one colour per
//! implementation ([`color`]).

use plotters::style::{FontStyle, RGBColor};

const FONT_PATHS: &[&str] =
    &["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf"];

/// Register DejaVu Sans as plotters' `sans-serif` (once; later calls return the first
/// call's result). Fails when no DejaVuSans.ttf is installed.
pub fn font() -> anyhow::Result<()> {
    static FONT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    FONT.get_or_init(|| register().map_err(|e| e.to_string())).clone().map_err(anyhow::Error::msg)
}

fn register() -> anyhow::Result<()> {
    let bytes = FONT_PATHS
        .iter()
        .find_map(|p| std::fs::read(p).ok())
        .ok_or_else(|| anyhow::anyhow!("no DejaVuSans.ttf found (looked in {FONT_PATHS:?})"))?;
    let leaked: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, leaked)
        .map_err(|_| anyhow::anyhow!("the font does not load"))?;
    Ok(())
}

/// The colour of an implementation in every chart (ctop blue, ctop without its history light
/// blue, ctop recording dark blue, native green, kopf red).
#[must_use]
pub fn color(implementation: &str) -> RGBColor {
    match implementation {
        "ctop" => RGBColor(31, 119, 180),
        "ctop-history-off" => RGBColor(140, 190, 230),
        "ctop-record" => RGBColor(20, 60, 120),
        "native" => RGBColor(44, 160, 44),
        "kopf" => RGBColor(214, 39, 40),
        _ => RGBColor(127, 127, 127),
    }
}
