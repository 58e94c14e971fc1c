//! IANA time zones for `croner`'s search: chrono's [`TimeZone`] trait over Jiff's copy of
//! the tz database.
//!
//! `croner` searches in any `chrono::TimeZone`. The usual one, `chrono-tz`, compiles the
//! database into tables of `&str` pointers: 1 MB of relocated data that every start of the
//! binary writes and keeps resident, for the few scripts that use `cron(...)` with a zone.
//! Jiff's bundled database is plain bytes, read only when a zone is looked up. No crate
//! adapts one to the other, hence this small bridge.
//!
//! The bundled copy is used, never `/usr/share/zoneinfo`: a schedule gives the same
//! instants on a laptop and in the distroless image.
//!
//! croner's iterator wants a `Copy` zone, so a [`Zone`] is a reference to a zone kept for
//! the life of the process: one per name ever looked up, at most the database's ~600.

use std::collections::HashMap;
use std::sync::LazyLock;

use parking_lot::Mutex;

use chrono::{FixedOffset, MappedLocalTime, NaiveDate, NaiveDateTime, Offset, TimeZone};
use jiff::tz::{AmbiguousOffset, TimeZoneDatabase};

static DATABASE: LazyLock<TimeZoneDatabase> = LazyLock::new(TimeZoneDatabase::bundled);
static UTC: jiff::tz::TimeZone = jiff::tz::TimeZone::UTC;
/// The zones looked up so far, by name.
static ZONES: LazyLock<Mutex<HashMap<String, &'static jiff::tz::TimeZone>>> = LazyLock::new(Default::default);

/// A time zone of the bundled IANA database.
#[derive(Debug, Clone, Copy)]
pub struct Zone(&'static jiff::tz::TimeZone);

impl Zone {
    /// UTC.
    pub fn utc() -> Self {
        Self(&UTC)
    }

    /// The zone named exactly `name` (`"Europe/Berlin"`; the case must match, as in Go's
    /// `time.LoadLocation` on Linux), or `None`.
    pub fn named(name: &str) -> Option<Self> {
        let mut zones = ZONES.lock();
        if let Some(zone) = zones.get(name) {
            return Some(Self(zone));
        }
        let zone = DATABASE.get(name).ok()?;
        if zone.iana_name() != Some(name) {
            return None;
        }
        // Kept for good: bounded by the database's names (above).
        let zone: &'static jiff::tz::TimeZone = Box::leak(Box::new(zone));
        zones.insert(name.to_owned(), zone);
        Some(Self(zone))
    }

    fn offset_at(&self, at: jiff::Timestamp) -> ZoneOffset {
        ZoneOffset { zone: *self, fixed: fixed(self.0.to_offset(at)) }
    }
}

/// The offset of a [`Zone`] at one instant (chrono keeps the zone inside the offset).
#[derive(Debug, Clone, Copy)]
pub struct ZoneOffset {
    zone: Zone,
    fixed: FixedOffset,
}

impl Offset for ZoneOffset {
    fn fix(&self) -> FixedOffset {
        self.fixed
    }
}

impl TimeZone for Zone {
    type Offset = ZoneOffset;

    fn from_offset(offset: &ZoneOffset) -> Self {
        offset.zone
    }

    fn offset_from_local_date(&self, local: &NaiveDate) -> MappedLocalTime<ZoneOffset> {
        self.offset_from_local_datetime(&local.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_local_datetime(&self, local: &NaiveDateTime) -> MappedLocalTime<ZoneOffset> {
        let Some(civil) = civil(local) else { return MappedLocalTime::None };
        let with = |offset: jiff::tz::Offset| ZoneOffset { zone: *self, fixed: fixed(offset) };
        match self.0.to_ambiguous_timestamp(civil).offset() {
            AmbiguousOffset::Unambiguous { offset } => MappedLocalTime::Single(with(offset)),
            // Clocks jumped over this wall-clock time: it does not exist.
            AmbiguousOffset::Gap { .. } => MappedLocalTime::None,
            // Clocks went back: the earlier instant has the offset from before the change.
            AmbiguousOffset::Fold { before, after } => MappedLocalTime::Ambiguous(with(before), with(after)),
        }
    }

    fn offset_from_utc_date(&self, utc: &NaiveDate) -> ZoneOffset {
        self.offset_from_utc_datetime(&utc.and_time(chrono::NaiveTime::MIN))
    }

    fn offset_from_utc_datetime(&self, utc: &NaiveDateTime) -> ZoneOffset {
        // Outside Jiff's years (-9999..=9999) the offset of the nearest end holds.
        let seconds = utc.and_utc().timestamp();
        let at = jiff::Timestamp::from_second(seconds).unwrap_or(if seconds < 0 {
            jiff::Timestamp::MIN
        } else {
            jiff::Timestamp::MAX
        });
        self.offset_at(at)
    }
}

fn fixed(offset: jiff::tz::Offset) -> FixedOffset {
    // Every offset of the database is within a day, which is all FixedOffset refuses.
    FixedOffset::east_opt(offset.seconds()).unwrap_or_else(|| chrono::Utc.fix())
}

fn civil(t: &NaiveDateTime) -> Option<jiff::civil::DateTime> {
    use chrono::{Datelike, Timelike};
    let date = jiff::civil::Date::new(
        i16::try_from(t.year()).ok()?,
        i8::try_from(t.month()).ok()?,
        i8::try_from(t.day()).ok()?,
    )
    .ok()?;
    let time = jiff::civil::Time::new(
        i8::try_from(t.hour()).ok()?,
        i8::try_from(t.minute()).ok()?,
        i8::try_from(t.second()).ok()?,
        i32::try_from(t.nanosecond().min(999_999_999)).ok()?,
    )
    .ok()?;
    Some(date.to_datetime(time))
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;

    fn local(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap()
    }

    #[test]
    fn names_are_iana_names_with_their_case() {
        assert!(Zone::named("Europe/Berlin").is_some());
        assert!(Zone::named("UTC").is_some());
        assert!(Zone::named("europe/berlin").is_none(), "Go's LoadLocation is case-sensitive on Linux");
        assert!(Zone::named("Mars/Olympus").is_none());
        assert!(Zone::named("").is_none());
        // Links of the database are names too, as their files are for Go.
        for link in ["US/Eastern", "Asia/Calcutta", "Etc/GMT+5", "GMT"] {
            assert!(Zone::named(link).is_some(), "{link}");
        }
    }

    #[test]
    fn offsets_follow_daylight_saving() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        let winter = Utc.with_ymd_and_hms(2026, 1, 15, 12, 0, 0).unwrap().with_timezone(&berlin);
        assert_eq!(winter.offset().fix().local_minus_utc(), 3600);
        let summer = Utc.with_ymd_and_hms(2026, 7, 15, 12, 0, 0).unwrap().with_timezone(&berlin);
        assert_eq!(summer.offset().fix().local_minus_utc(), 7200);
        assert_eq!(summer.to_rfc3339(), "2026-07-15T14:00:00+02:00");
    }

    #[test]
    fn a_skipped_wall_time_does_not_exist_and_a_repeated_one_is_ambiguous() {
        let berlin = Zone::named("Europe/Berlin").unwrap();
        // 2026-03-29: 02:00 → 03:00.
        assert!(matches!(berlin.from_local_datetime(&local("2026-03-29 02:30")), MappedLocalTime::None));
        // 2026-10-25: 03:00 → 02:00, so 02:30 happens twice, first at +02:00.
        let MappedLocalTime::Ambiguous(first, second) =
            berlin.from_local_datetime(&local("2026-10-25 02:30"))
        else {
            panic!("02:30 on 2026-10-25 is in Berlin's fold");
        };
        assert_eq!(first.with_timezone(&Utc), DateTime::parse_from_rfc3339("2026-10-25T00:30:00Z").unwrap());
        assert_eq!(second.with_timezone(&Utc), DateTime::parse_from_rfc3339("2026-10-25T01:30:00Z").unwrap());
        let single = berlin.from_local_datetime(&local("2026-10-25 12:00")).single().unwrap();
        assert_eq!(single.to_rfc3339(), "2026-10-25T12:00:00+01:00");
    }

    #[test]
    fn instants_beyond_the_database_years_keep_the_last_offset() {
        let kolkata = Zone::named("Asia/Kolkata").unwrap();
        let far = NaiveDate::from_ymd_opt(20_000, 1, 1).unwrap().and_time(chrono::NaiveTime::MIN);
        assert_eq!(kolkata.offset_from_utc_datetime(&far).fix().local_minus_utc(), 19_800);
    }
}
