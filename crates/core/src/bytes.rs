//! Byte sizes as Kubernetes writes memory: `"64Mi"`, `"512Ki"`, `"1Gi"`, `"500M"`, `"1000"`.
//!
//! Written by hand: the flags that take a size (`--script-memory`, `--max-output`) and the
//! generated Deployment's memory requests speak Kubernetes quantities, which size crates
//! (`bytesize`, `byte-unit`) do not parse (`64Mi` there is `64 MiB`), and a full
//! `resource.Quantity` (fractions, exponents, milli units) is more than a byte count needs.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A whole number of bytes, parsed from and written as a Kubernetes quantity.
///
/// Binary suffixes `Ki`, `Mi`, `Gi`, `Ti` (powers of 1024), decimal `k`, `M`, `G`, `T`
/// (powers of 1000), or none (bytes). Written back with the largest binary suffix that
/// divides it exactly (`67108864` → `64Mi`), else in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(u64);

/// Why a size string could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ByteSizeError {
    /// Not a whole number followed by a known suffix.
    #[error("size {input:?}: write a whole number with an optional suffix, e.g. 64Mi, 512Ki or 1Gi")]
    Syntax {
        /// The whole input.
        input: String,
    },
    /// The size does not fit in 64 bits.
    #[error("size {input:?} is too large")]
    Overflow {
        /// The whole input.
        input: String,
    },
}

const SUFFIXES: [(&str, u64); 8] = [
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
    ("k", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
];

impl ByteSize {
    /// `n` bytes.
    #[must_use]
    pub const fn bytes(n: u64) -> Self {
        Self(n)
    }

    /// `n` MiB.
    #[must_use]
    pub const fn mib(n: u64) -> Self {
        Self(n << 20)
    }

    /// The number of bytes.
    #[must_use]
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The number of bytes as a `usize`, saturating on 32-bit targets.
    #[must_use]
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl From<usize> for ByteSize {
    fn from(n: usize) -> Self {
        Self(u64::try_from(n).unwrap_or(u64::MAX))
    }
}

impl FromStr for ByteSize {
    type Err = ByteSizeError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let syntax = || ByteSizeError::Syntax { input: input.to_owned() };
        let text = input.trim();
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        let (number, suffix) = text.split_at(digits);
        if number.is_empty() {
            return Err(syntax());
        }
        let n: u64 = number.parse().map_err(|_| ByteSizeError::Overflow { input: input.to_owned() })?;
        let unit = if suffix.is_empty() {
            1
        } else {
            SUFFIXES.iter().find(|(s, _)| *s == suffix).map(|(_, unit)| *unit).ok_or_else(syntax)?
        };
        n.checked_mul(unit).map(Self).ok_or_else(|| ByteSizeError::Overflow { input: input.to_owned() })
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let binary =
            SUFFIXES.iter().take(4).rev().find(|(_, unit)| self.0 >= *unit && self.0.is_multiple_of(*unit));
        match binary {
            Some((suffix, unit)) => write!(f, "{}{suffix}", self.0 / unit),
            None => write!(f, "{}", self.0),
        }
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kubernetes_memory_quantities() {
        let cases = [
            ("64Mi", 64 << 20),
            ("512Ki", 512 << 10),
            ("1Gi", 1 << 30),
            ("2Ti", 2 << 40),
            ("500M", 500_000_000),
            ("3k", 3_000),
            ("1000", 1_000),
            (" 16Mi ", 16 << 20),
            ("0", 0),
        ];
        for (text, bytes) in cases {
            assert_eq!(text.parse::<ByteSize>(), Ok(ByteSize::bytes(bytes)), "{text}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_whole_size() {
        for text in ["", "Mi", "1.5Gi", "64MB", "64 Mi", "-1", "1Qi"] {
            assert!(
                matches!(text.parse::<ByteSize>(), Err(ByteSizeError::Syntax { .. })),
                "{text:?} must be refused"
            );
        }
        assert!(matches!("99999999999Ti".parse::<ByteSize>(), Err(ByteSizeError::Overflow { .. })));
        let message = "64MB".parse::<ByteSize>().map_err(|e| e.to_string());
        assert_eq!(
            message,
            Err("size \"64MB\": write a whole number with an optional suffix, e.g. 64Mi, 512Ki or 1Gi".into())
        );
    }

    #[test]
    fn writes_the_largest_exact_binary_suffix() {
        assert_eq!(ByteSize::mib(64).to_string(), "64Mi");
        assert_eq!(ByteSize::bytes(1536).to_string(), "1536");
        assert_eq!(ByteSize::bytes(3 << 10).to_string(), "3Ki");
        assert_eq!(ByteSize::bytes(1 << 30).to_string(), "1Gi");
        assert_eq!(ByteSize::bytes(1000).to_string(), "1000");
        assert_eq!(ByteSize::bytes(0).to_string(), "0");
        for n in [0u64, 1, 1000, 1536, 64 << 20, (1 << 30) + 1] {
            assert_eq!(ByteSize::bytes(n).to_string().parse::<ByteSize>(), Ok(ByteSize::bytes(n)));
        }
    }
}
