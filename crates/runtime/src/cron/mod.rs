//! Cron schedules with time zones for scripts: the host half of the SDK's `cron(...)`.
//!
//! QuickJS has no `Intl`, so a script cannot turn a wall-clock schedule in a time zone into
//! instants by itself. [`Schedule::parse`] reads an expression the way a Kubernetes CronJob's
//! `schedule` is read (five fields, names of months and days, `@hourly`-style shortcuts;
//! `croner` does the parsing and the search) in an IANA time zone (the copy of the tz
//! database built into the binary, see [`zone`], so no `/usr/share/zoneinfo` is needed in
//! the container), and answers in milliseconds since the epoch: [`Schedule::next_after`] and
//! [`Schedule::between`]. Both are pure functions of their arguments, so a reconcile that
//! uses them stays deterministic.
//!
//! Wall-clock times that a daylight-saving change skips run at the first instant after the
//! gap; times it repeats run once, at the first of the two instants (croner's rules, which
//! match cron daemons').

use chrono::{DateTime, TimeZone, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use rquickjs::{Coerced, Ctx, Exception, Function, Object};

pub mod zone;

use zone::Zone;

/// Most instants [`Schedule::between`] returns in one call.
pub const MAX_BETWEEN: usize = 10_000;

/// A cron expression that could not be read, or a time zone that is not in the database.
#[derive(Debug, thiserror::Error)]
pub enum CronError {
    /// The expression is not a five-field cron schedule or shortcut.
    #[error("invalid cron schedule {expression:?}")]
    Expression {
        /// The expression as given.
        expression: String,
        /// What croner reported.
        #[source]
        source: croner::errors::CronError,
    },
    /// The time zone is not an IANA name.
    #[error("unknown time zone {0:?}: use an IANA name such as \"Europe/Berlin\" or \"UTC\"")]
    TimeZone(String),
    /// An instant outside the range of dates the search can represent.
    #[error("time {0} ms since the epoch is out of range")]
    Time(f64),
}

/// A parsed schedule in a time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    zone: Zone,
}

impl Schedule {
    /// Reads `expression` (five fields, as a CronJob's `schedule`) in the zone `time_zone`
    /// (an IANA name; `UTC` when empty).
    pub fn parse(expression: &str, time_zone: &str) -> Result<Self, CronError> {
        let zone = if time_zone.is_empty() {
            Zone::utc()
        } else {
            Zone::named(time_zone).ok_or_else(|| CronError::TimeZone(time_zone.to_owned()))?
        };
        // Kubernetes reads schedules with robfig/cron's standard parser: minute, hour,
        // day of month, month, day of week; no seconds and no years.
        let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
        let cron = parser
            .parse(expression)
            .map_err(|source| CronError::Expression { expression: expression.to_owned(), source })?;
        Ok(Self { cron, zone })
    }

    /// The first scheduled instant strictly after `after_ms`, or `None` if the schedule
    /// never fires again (e.g. `0 0 30 2 *`).
    pub fn next_after(&self, after_ms: f64) -> Result<Option<f64>, CronError> {
        let start = self.at(after_ms)?;
        Ok(self.cron.find_next_occurrence(&start, false).ok().map(|t| millis(&t)))
    }

    /// The scheduled instants in `(from_ms, to_ms]`, oldest first, at most `limit` of them
    /// (and at most [`MAX_BETWEEN`]): a CronJob controller's missed runs since its last one.
    pub fn between(&self, from_ms: f64, to_ms: f64, limit: usize) -> Result<Vec<f64>, CronError> {
        let start = self.at(from_ms)?;
        let mut out = Vec::new();
        if to_ms <= from_ms {
            return Ok(out);
        }
        for t in self.cron.iter_after(start).take(limit.min(MAX_BETWEEN)) {
            let ms = millis(&t);
            if ms > to_ms {
                break;
            }
            out.push(ms);
        }
        Ok(out)
    }

    fn at(&self, ms: f64) -> Result<DateTime<Zone>, CronError> {
        if !ms.is_finite() {
            return Err(CronError::Time(ms));
        }
        // Whole milliseconds; the search works on whole seconds anyway.
        let utc = Utc.timestamp_millis_opt(ms.floor() as i64).single().ok_or(CronError::Time(ms))?;
        Ok(utc.with_timezone(&self.zone))
    }
}

/// Installs `__ct_host.cronNext(expression, timeZone, afterMs)` (a number, or `null` when the
/// schedule never fires again) and `__ct_host.cronBetween(expression, timeZone, fromMs, toMs,
/// limit)` (an array of numbers) on `host`. Bad input throws a `TypeError` or `RangeError`
/// with the [`CronError`] text and its cause.
pub(crate) fn install<'js>(ctx: &Ctx<'js>, host: &Object<'js>) -> rquickjs::Result<()> {
    let next = |ctx: Ctx<'js>, expression: Coerced<String>, zone: Coerced<String>, after: f64| {
        let schedule = Schedule::parse(&expression.0, &zone.0).map_err(|e| throw(&ctx, &e))?;
        schedule.next_after(after).map_err(|e| throw(&ctx, &e))
    };
    host.set("cronNext", Function::new(ctx.clone(), next)?.with_name("cronNext")?)?;
    let between = |ctx: Ctx<'js>,
                   expression: Coerced<String>,
                   zone: Coerced<String>,
                   from: f64,
                   to: f64,
                   limit: f64| {
        let schedule = Schedule::parse(&expression.0, &zone.0).map_err(|e| throw(&ctx, &e))?;
        // A limit that is not a positive whole number gives nothing; huge ones are capped.
        let limit = if limit.is_finite() && limit > 0.0 { limit.min(MAX_BETWEEN as f64) as usize } else { 0 };
        schedule.between(from, to, limit).map_err(|e| throw(&ctx, &e))
    };
    host.set("cronBetween", Function::new(ctx.clone(), between)?.with_name("cronBetween")?)?;
    Ok(())
}

fn throw(ctx: &Ctx<'_>, e: &CronError) -> rquickjs::Error {
    match e {
        CronError::Time(_) => Exception::throw_range(ctx, &ctop_core::Chain(e).to_string()),
        _ => Exception::throw_type(ctx, &ctop_core::Chain(e).to_string()),
    }
}

fn millis<Z: TimeZone>(t: &DateTime<Z>) -> f64 {
    t.timestamp_millis() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(rfc3339: &str) -> f64 {
        DateTime::parse_from_rfc3339(rfc3339).unwrap().timestamp_millis() as f64
    }

    fn iso(ms: f64) -> String {
        Utc.timestamp_millis_opt(ms as i64).unwrap().to_rfc3339()
    }

    #[test]
    fn next_run_in_utc_and_in_a_zone() {
        let s = Schedule::parse("30 9 * * MON-FRI", "").unwrap();
        // Saturday 2026-11-28 → Monday 09:30 UTC.
        let next = s.next_after(ms("2026-11-28T12:00:00Z")).unwrap().unwrap();
        assert_eq!(iso(next), "2026-11-30T09:30:00+00:00");

        let s = Schedule::parse("30 9 * * MON-FRI", "America/New_York").unwrap();
        let next = s.next_after(ms("2026-11-28T12:00:00Z")).unwrap().unwrap();
        assert_eq!(iso(next), "2026-11-30T14:30:00+00:00", "09:30 EST is 14:30 UTC");
        // Strictly after: the instant itself is not returned.
        assert_eq!(s.next_after(next).unwrap().unwrap(), ms("2026-12-01T14:30:00Z"));
    }

    #[test]
    fn shortcuts_and_names() {
        let s = Schedule::parse("@hourly", "UTC").unwrap();
        assert_eq!(s.next_after(ms("2026-01-01T10:15:00Z")).unwrap(), Some(ms("2026-01-01T11:00:00Z")));
        let s = Schedule::parse("0 0 1 jan *", "UTC").unwrap();
        assert_eq!(s.next_after(ms("2026-06-01T00:00:00Z")).unwrap(), Some(ms("2027-01-01T00:00:00Z")));
    }

    #[test]
    fn missed_runs_between_two_times() {
        let s = Schedule::parse("*/15 * * * *", "UTC").unwrap();
        let runs = s.between(ms("2026-01-01T10:00:00Z"), ms("2026-01-01T11:00:00Z"), 100).unwrap();
        let got: Vec<String> = runs.into_iter().map(iso).collect();
        assert_eq!(
            got,
            [
                "2026-01-01T10:15:00+00:00",
                "2026-01-01T10:30:00+00:00",
                "2026-01-01T10:45:00+00:00",
                "2026-01-01T11:00:00+00:00"
            ]
        );
        let capped = s.between(ms("2026-01-01T00:00:00Z"), ms("2026-01-02T00:00:00Z"), 3).unwrap();
        assert_eq!(capped.len(), 3);
        assert!(s.between(ms("2026-01-02T00:00:00Z"), ms("2026-01-01T00:00:00Z"), 3).unwrap().is_empty());
    }

    #[test]
    fn daylight_saving_gap_runs_once_after_it() {
        // 2026-03-29 02:30 does not exist in Berlin (clocks jump 02:00 → 03:00).
        let s = Schedule::parse("30 2 * * *", "Europe/Berlin").unwrap();
        let next = s.next_after(ms("2026-03-28T12:00:00Z")).unwrap().unwrap();
        assert!(next > ms("2026-03-28T12:00:00Z") && next < ms("2026-03-30T12:00:00Z"), "{}", iso(next));
    }

    #[test]
    fn bad_input_says_what_is_wrong() {
        let e = Schedule::parse("* * *", "UTC").unwrap_err();
        assert!(matches!(e, CronError::Expression { .. }), "{e}");
        assert_eq!(e.to_string(), "invalid cron schedule \"* * *\"");
        // The cause follows once, in the chain (and in the TypeError a script sees).
        let line = ctop_core::Chain(&e).to_string();
        let cause = std::error::Error::source(&e).expect("croner's error").to_string();
        assert_eq!(line, format!("invalid cron schedule \"* * *\": {cause}"));
        // Seconds are not part of a CronJob schedule.
        assert!(Schedule::parse("0 * * * * *", "UTC").is_err());
        let e = Schedule::parse("* * * * *", "Mars/Olympus").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown time zone \"Mars/Olympus\": use an IANA name such as \"Europe/Berlin\" or \"UTC\""
        );
        let s = Schedule::parse("* * * * *", "UTC").unwrap();
        assert!(matches!(s.next_after(f64::NAN), Err(CronError::Time(_))));
    }

    #[test]
    fn a_schedule_that_never_fires_has_no_next_run() {
        let s = Schedule::parse("0 0 30 2 *", "UTC").unwrap();
        assert_eq!(s.next_after(ms("2026-01-01T00:00:00Z")).unwrap(), None);
    }
}
