//! CronJob schedules as `github.com/robfig/cron/v3`'s `ParseStandard` reads them (five
//! fields or a `@descriptor`, optional `TZ=`/`CRON_TZ=` prefix), with its error texts, and
//! `validateTimeZone` (IANA names of the bundled tz database, matched with their case as Go's
//! `time.LoadLocation` matches file names on Linux).

use crate::field::{Bad, Cause, Path, invalid};

/// Minimum, maximum and names of one field.
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MONTHS: [(&str, u64); 12] = [
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];
const DAYS: [(&str, u64); 7] =
    [("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)];
const FIELDS: [Bounds; 5] = [
    Bounds { min: 0, max: 59, names: &[] },
    Bounds { min: 0, max: 23, names: &[] },
    Bounds { min: 1, max: 31, names: &[] },
    Bounds { min: 1, max: 12, names: &MONTHS },
    Bounds { min: 0, max: 6, names: &DAYS },
];
const DESCRIPTORS: [&str; 7] =
    ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];

/// `cron.ParseStandard`: `Ok` or the parser's error text.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_owned());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or_default();
        let Some(space) = spec.find(' ') else {
            return Err(format!(
                "provided bad location {}: unknown time zone {}",
                &spec[eq + 1..],
                &spec[eq + 1..]
            ));
        };
        let zone = &spec[eq + 1..space];
        if !known_zone(zone) && zone != "UTC" && zone != "Local" {
            return Err(format!("provided bad location {zone}: unknown time zone {zone}"));
        }
        spec = spec[space..].trim();
    }
    if spec.starts_with('@') {
        if DESCRIPTORS.contains(&spec) || spec.starts_with("@every ") {
            return Ok(());
        }
        return Err(format!("unrecognized descriptor: {spec}"));
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    for (field, bounds) in fields.iter().zip(FIELDS.iter()) {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            range(expr, bounds)?;
        }
    }
    Ok(())
}

/// `getRange`.
fn range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if low_high[0] == "*" || low_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = int_or_name(low_high[0], b)?;
        match low_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_high[1], b)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if low_high.len() == 1 {
                end = b.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", b.min));
    }
    if end > b.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", b.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, b: &Bounds) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    match b.names.iter().find(|(n, _)| *n == lower) {
        Some((_, v)) => Ok(*v),
        None => must_parse_int(expr),
    }
}

/// `mustParseInt` with Go's `strconv.Atoi` error.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax",
            ctop_schema::go::quote(expr)
        ));
    }
    let Ok(n) = expr.parse::<i64>() else {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range",
            ctop_schema::go::quote(expr)
        ));
    };
    u64::try_from(n).map_err(|_| format!("negative number ({n}) not allowed: {expr}"))
}

/// `validateTimeZone` (a set `timeZone`).
pub(crate) fn validate_time_zone(zone: &str, p: &Path) -> Vec<Cause> {
    let bad = || Bad::Str(zone.to_owned());
    if zone.is_empty() {
        return vec![invalid(p.as_str(), bad(), "timeZone must be nil or non-empty string")];
    }
    let mut out = Vec::new();
    if zone.eq_ignore_ascii_case("Local") {
        out.push(invalid(
            p.as_str(),
            bad(),
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if zone != "UTC" && zone != "Local" && !known_zone(zone) {
        out.push(invalid(p.as_str(), bad(), &format!("unknown time zone {zone}")));
    }
    out
}

/// Whether `zone` names a zone of the bundled IANA database, with the same case.
fn known_zone(zone: &str) -> bool {
    static DATABASE: std::sync::LazyLock<jiff::tz::TimeZoneDatabase> =
        std::sync::LazyLock::new(jiff::tz::TimeZoneDatabase::bundled);
    DATABASE.get(zone).is_ok_and(|tz| tz.iana_name() == Some(zone))
}

#[cfg(test)]
mod tests {
    use super::known_zone;

    #[test]
    fn zones_are_database_names_and_links_with_their_case() {
        assert!(known_zone("Europe/Berlin"));
        assert!(known_zone("US/Eastern"), "a link of the database, as its file is for Go");
        assert!(!known_zone("europe/berlin"), "Go's LoadLocation is case-sensitive on Linux");
        assert!(!known_zone("Mars/Olympus"));
    }
}
