//! Human durations as scripts write them: `"30s"`, `"5m"`, `"1h30m"`, `"250ms"`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A non-negative span of time parsed from a Go-style duration string.
///
/// Accepted units are `ms`, `s`, `m`, `h` and `d`; several may follow each other
/// (`"1h30m"`). A bare `"0"` is zero. Serialized back in the same form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(std::time::Duration);

/// Why a duration string could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DurationError {
    /// The string was empty; write e.g. `"30s"`.
    #[error("empty duration: write a number with a unit, e.g. \"30s\" or \"5m\"")]
    Empty,
    /// A number was not followed by one of the known units.
    #[error("duration {input:?}: missing or unknown unit after {number} (use ms, s, m, h or d)")]
    Unit {
        /// The whole input.
        input: String,
        /// The number that had no valid unit.
        number: String,
    },
    /// A unit was not preceded by a number, or the number was not a valid integer.
    #[error("duration {input:?}: expected a whole number before each unit")]
    Number {
        /// The whole input.
        input: String,
    },
    /// The total does not fit in 64-bit milliseconds.
    #[error("duration {input:?} is too long")]
    Overflow {
        /// The whole input.
        input: String,
    },
}

impl Duration {
    /// A duration of `ms` milliseconds.
    #[must_use]
    pub const fn from_millis(ms: u64) -> Self {
        Self(std::time::Duration::from_millis(ms))
    }

    /// A duration of `s` seconds.
    #[must_use]
    pub const fn from_secs(s: u64) -> Self {
        Self(std::time::Duration::from_secs(s))
    }

    /// The standard-library value.
    #[must_use]
    pub const fn as_std(self) -> std::time::Duration {
        self.0
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        d.0
    }
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let s = input.trim();
        if s.is_empty() {
            return Err(DurationError::Empty);
        }
        if s == "0" {
            return Ok(Self::default());
        }
        let mut total: u64 = 0;
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(DurationError::Number { input: input.to_owned() });
            }
            let (number, tail) = rest.split_at(digits);
            let unit_len = tail.bytes().take_while(u8::is_ascii_alphabetic).count();
            let (unit, tail) = tail.split_at(unit_len);
            let factor: u64 = match unit {
                "ms" => 1,
                "s" => 1_000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => {
                    return Err(DurationError::Unit { input: input.to_owned(), number: number.to_owned() });
                }
            };
            let n: u64 = number.parse().map_err(|_| DurationError::Overflow { input: input.to_owned() })?;
            total = n
                .checked_mul(factor)
                .and_then(|v| total.checked_add(v))
                .ok_or_else(|| DurationError::Overflow { input: input.to_owned() })?;
            rest = tail;
        }
        Ok(Self::from_millis(total))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ms = u64::try_from(self.0.as_millis()).unwrap_or(u64::MAX);
        if ms == 0 {
            return f.write_str("0s");
        }
        for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
            if ms >= size {
                write!(f, "{}{unit}", ms / size)?;
                ms %= size;
            }
        }
        Ok(())
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_single_and_compound_units() {
        assert_eq!("5m".parse::<Duration>(), Ok(Duration::from_secs(300)));
        assert_eq!("1h30m".parse::<Duration>(), Ok(Duration::from_secs(5400)));
        assert_eq!("250ms".parse::<Duration>(), Ok(Duration::from_millis(250)));
        assert_eq!("2d".parse::<Duration>(), Ok(Duration::from_secs(172_800)));
        assert_eq!("0".parse::<Duration>(), Ok(Duration::default()));
    }

    #[test]
    fn rejects_bad_input_with_reason() {
        assert_eq!("".parse::<Duration>(), Err(DurationError::Empty));
        assert!(matches!("5".parse::<Duration>(), Err(DurationError::Unit { .. })));
        assert!(matches!("5y".parse::<Duration>(), Err(DurationError::Unit { .. })));
        assert!(matches!("m".parse::<Duration>(), Err(DurationError::Number { .. })));
        assert!(matches!("99999999999999999999h".parse::<Duration>(), Err(DurationError::Overflow { .. })));
    }

    #[test]
    fn displays_round_trip() {
        for s in ["1h30m", "5m", "250ms", "1m1s", "0s"] {
            let d: Duration = s.parse().expect("valid");
            assert_eq!(d.to_string(), s);
        }
    }
}
