//! `resource.Quantity` as validation needs it: parsing the stored string, comparing two
//! quantities, and `Quantity.String()`'s canonical form (`CanonicalizeBytes`), which the
//! server prints in messages such as `must be less than or equal to cpu limit of 500m`.

use std::cmp::Ordering;

/// How a quantity was written, which decides how it prints (`resource.Format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `1`, `500m`, `2k`, `3G`.
    DecimalSI,
    /// `128Mi`, `1Gi`.
    BinarySI,
    /// `1e3`.
    DecimalExponent,
}

/// An exact quantity: `mantissa × 10^exp`, with the format it was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Quantity {
    mantissa: i128,
    exp: i32,
    format: Format,
}

const DECIMAL_SUFFIXES: [(&str, i32); 9] =
    [("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6), ("G", 9), ("T", 12), ("P", 15), ("E", 18)];
const BINARY_SUFFIXES: [(&str, u32); 6] = [("Ki", 1), ("Mi", 2), ("Gi", 3), ("Ti", 4), ("Pi", 5), ("Ei", 6)];

impl Quantity {
    /// `resource.ParseQuantity`; `None` for a string it refuses.
    pub(crate) fn parse(s: &str) -> Option<Quantity> {
        let s = s.trim();
        let split =
            s.find(|c: char| !(c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))).unwrap_or(s.len());
        let (number, suffix) = s.split_at(split);
        let (negative, digits) = match number.as_bytes().first() {
            Some(b'-') => (true, &number[1..]),
            Some(b'+') => (false, &number[1..]),
            _ => (false, number),
        };
        let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
        if (whole.is_empty() && frac.is_empty())
            || !(whole.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()))
        {
            return None;
        }
        let all = format!("{whole}{frac}");
        let all = all.trim_start_matches('0');
        if all.len() > 30 {
            return None;
        }
        let mut mantissa: i128 = if all.is_empty() { 0 } else { all.parse().ok()? };
        let mut exp = -i32::try_from(frac.len()).ok()?;
        let format = if suffix.is_empty() {
            Format::DecimalSI
        } else if let Some((_, e)) = DECIMAL_SUFFIXES.iter().find(|(n, _)| *n == suffix) {
            exp += e;
            Format::DecimalSI
        } else if let Some((_, k)) = BINARY_SUFFIXES.iter().find(|(n, _)| *n == suffix) {
            mantissa = mantissa.checked_mul(1024_i128.checked_pow(*k)?)?;
            Format::BinarySI
        } else if let Some(e) = suffix.strip_prefix(['e', 'E']) {
            exp += e.parse::<i32>().ok()?;
            Format::DecimalExponent
        } else {
            return None;
        };
        if negative {
            mantissa = -mantissa;
        }
        Some(Quantity { mantissa, exp, format }.normalized())
    }

    /// The same value with no trailing zeros in the mantissa.
    fn normalized(mut self) -> Quantity {
        if self.mantissa == 0 {
            self.exp = 0;
            return self;
        }
        while self.mantissa % 10 == 0 {
            self.mantissa /= 10;
            self.exp += 1;
        }
        self
    }

    /// Whether the value is below zero.
    pub(crate) fn is_negative(&self) -> bool {
        self.mantissa < 0
    }

    /// Whether the value is zero.
    pub(crate) fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// The value scaled to `10^exp` units, if it fits.
    fn at(&self, exp: i32) -> Option<i128> {
        let shift = u32::try_from(self.exp - exp).ok()?;
        self.mantissa.checked_mul(10_i128.checked_pow(shift)?)
    }

    /// `Quantity.Cmp`.
    pub(crate) fn cmp_value(&self, other: &Quantity) -> Ordering {
        let exp = self.exp.min(other.exp);
        match (self.at(exp), other.at(exp)) {
            (Some(a), Some(b)) => a.cmp(&b),
            // One of them is too large to scale: compare by sign and magnitude order.
            _ => (self.mantissa.signum(), self.exp).cmp(&(other.mantissa.signum(), other.exp)),
        }
    }

    /// The integer value when the quantity is whole.
    fn whole(&self) -> Option<i128> {
        if self.exp >= 0 { self.at(0) } else { None }
    }

    /// `Quantity.String()`: `CanonicalizeBytes`.
    pub(crate) fn canonical(&self) -> String {
        if self.mantissa == 0 {
            return "0".to_owned();
        }
        let mut format = self.format;
        if format == Format::BinarySI {
            let small = self.whole().is_some_and(|w| w.abs() < 1024);
            if small || self.whole().is_none() {
                format = Format::DecimalSI;
            }
        }
        if format == Format::BinarySI {
            let mut value = self.whole().unwrap_or_default();
            let mut k = 0;
            while k < 6 && value % 1024 == 0 {
                value /= 1024;
                k += 1;
            }
            let suffix = if k == 0 { "" } else { BINARY_SUFFIXES[k - 1].0 };
            return format!("{value}{suffix}");
        }
        // The exponent becomes a multiple of 3, the mantissa grows to keep the value.
        let (mut mantissa, mut exp) = (self.mantissa, self.exp);
        match exp.rem_euclid(3) {
            1 => {
                mantissa *= 10;
                exp -= 1;
            }
            2 => {
                mantissa *= 100;
                exp -= 2;
            }
            _ => {}
        }
        let suffix = match (format, exp) {
            (_, 0) => String::new(),
            (Format::DecimalSI, e) => DECIMAL_SUFFIXES
                .iter()
                .find(|(_, x)| *x == e)
                .map_or_else(|| format!("e{e}"), |(n, _)| (*n).to_owned()),
            (_, e) => format!("e{e}"),
        };
        format!("{mantissa}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::Quantity;

    fn canon(s: &str) -> String {
        Quantity::parse(s).map(|q| q.canonical()).unwrap_or_default()
    }

    /// `resource.Quantity.String()` (apimachinery pkg/api/resource/quantity.go, CanonicalizeBytes).
    #[test]
    fn canonical_forms_like_go() {
        assert_eq!(canon("500m"), "500m");
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("2000"), "2k");
        assert_eq!(canon("1500"), "1500");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("512Ki"), "512Ki");
        assert_eq!(canon("1.5Gi"), "1536Mi");
        assert_eq!(canon("100Mi"), "100Mi");
        assert_eq!(canon("-1"), "-1");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("1e3"), "1e3");
        assert!(Quantity::parse("abc").is_none());
        assert!(Quantity::parse("1Xi").is_none());
    }

    #[test]
    fn compares_across_units() {
        let a = Quantity::parse("1Gi").expect("parses");
        let b = Quantity::parse("1000Mi").expect("parses");
        assert!(a.cmp_value(&b).is_gt());
        let c = Quantity::parse("0.5").expect("parses");
        let d = Quantity::parse("500m").expect("parses");
        assert!(c.cmp_value(&d).is_eq());
    }
}
