//! The checks that Go types with their own JSON decoding make, in their own words:
//! `resource.Quantity` (k8s.io/apimachinery/pkg/api/resource/quantity.go, `ParseQuantity`),
//! `metav1.Time`/`MicroTime` (`time.Parse` of Go's time/format.go with the RFC 3339
//! layouts), and `[]byte` (base64 `StdEncoding`, Go's encoding/base64/base64.go
//! `decodeQuantum`). Each is a validity check only: kubesim keeps the JSON as it came.

/// `ErrFormatWrong` of quantity.go.
const QUANTITY_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `ErrNumeric` of quantity.go.
const QUANTITY_NUMERIC: &str = "unable to parse numeric part of quantity";
/// `ErrSuffix` of quantity.go.
const QUANTITY_SUFFIX: &str = "unable to parse quantity's suffix";

/// Why `ParseQuantity(s)` fails, if it does.
pub(crate) fn quantity_error(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        return Some(QUANTITY_FORMAT);
    }
    if s == "0" {
        return None;
    }
    let b = s.as_bytes();
    let end = b.len();
    let digits_from = |mut i: usize| {
        while i < end && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    // parseQuantityString: sign, leading zeros, numerator, an optional denominator.
    let mut pos = usize::from(matches!(b[0], b'-' | b'+'));
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return None;
    }
    let num_start = pos;
    pos = digits_from(pos);
    if pos >= end {
        return None;
    }
    let mut num_digits = pos - num_start;
    if b[pos] == b'.' {
        let denom_start = pos + 1;
        pos = digits_from(denom_start);
        if pos >= end {
            return None;
        }
        num_digits += pos - denom_start;
    }
    let value_has_digits = s[..pos].bytes().any(|c| c.is_ascii_digit());
    // The suffix: letters of the SI and binary suffixes, then an optional signed exponent.
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end {
        if matches!(b[pos], b'-' | b'+') {
            pos += 1;
        }
        if digits_from(pos) < end {
            return Some(QUANTITY_FORMAT);
        }
    }
    let suffix = &s[suffix_start..];
    let binary = matches!(suffix, "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei");
    let known = binary
        || matches!(suffix, "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E")
        || (suffix.len() > 1
            && matches!(suffix.as_bytes()[0], b'e' | b'E')
            && suffix[1..].parse::<i32>().is_ok());
    if !known {
        return Some(QUANTITY_SUFFIX);
    }
    // The slow path (more than 18 digits, or a binary fraction) parses the numeric part
    // with inf.Dec, which needs a digit.
    let slow = num_digits > 18 || (binary && s[..suffix_start].contains('.'));
    (slow && !value_has_digits).then_some(QUANTITY_NUMERIC)
}

/// `time.RFC3339`.
pub(crate) const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.RFC3339Micro`.
pub(crate) const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// Go's `time` package quoting of a value in a `ParseError` (`quote` in format.go).
fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        }
    }
    out.push('"');
    out
}

/// One element of the two RFC 3339 layouts.
#[derive(Clone, Copy)]
enum Elem {
    Literal(&'static str),
    LongYear,
    ZeroMonth,
    ZeroDay,
    Hour,
    ZeroMinute,
    ZeroSecond,
    Micros,
    ColonTz,
}

impl Elem {
    fn layout(self) -> &'static str {
        match self {
            Self::Literal(s) => s,
            Self::LongYear => "2006",
            Self::ZeroMonth => "01",
            Self::ZeroDay => "02",
            Self::Hour => "15",
            Self::ZeroMinute => "04",
            Self::ZeroSecond => "05",
            Self::Micros => ".000000",
            Self::ColonTz => "Z07:00",
        }
    }
}

/// `getnum` of format.go: one or two digits (`fixed`: exactly two).
fn getnum(s: &str, fixed: bool) -> Option<(u32, &str)> {
    let b = s.as_bytes();
    let d = |i: usize| b.get(i).filter(|c| c.is_ascii_digit()).map(|c| u32::from(c - b'0'));
    let first = d(0)?;
    match d(1) {
        Some(second) => Some((first * 10 + second, &s[2..])),
        None if fixed => None,
        None => Some((first, &s[1..])),
    }
}

/// Why `time.Parse(layout, value)` fails for one of the two RFC 3339 layouts, in Go's words.
pub(crate) fn time_error(layout: &'static str, value: &str) -> Option<String> {
    use Elem::{ColonTz, Hour, Literal, LongYear, Micros, ZeroDay, ZeroMinute, ZeroMonth, ZeroSecond};
    let micro = layout == RFC3339_MICRO;
    let elems: &[Elem] = if micro {
        &[
            LongYear,
            Literal("-"),
            ZeroMonth,
            Literal("-"),
            ZeroDay,
            Literal("T"),
            Hour,
            Literal(":"),
            ZeroMinute,
            Literal(":"),
            ZeroSecond,
            Micros,
            ColonTz,
        ]
    } else {
        &[
            LongYear,
            Literal("-"),
            ZeroMonth,
            Literal("-"),
            ZeroDay,
            Literal("T"),
            Hour,
            Literal(":"),
            ZeroMinute,
            Literal(":"),
            ZeroSecond,
            ColonTz,
        ]
    };
    let cannot = |layout_elem: &str, value_elem: &str| {
        Some(format!(
            "parsing time {} as {}: cannot parse {} as {}",
            time_quote(value),
            time_quote(layout),
            time_quote(value_elem),
            time_quote(layout_elem)
        ))
    };
    let range = |what: &str| Some(format!("parsing time {}: {what} out of range", time_quote(value)));
    let (mut year, mut month, mut day) = (0, 1, 1);
    let mut rest = value;
    for &elem in elems {
        let hold = rest;
        let parsed: Option<&str> = match elem {
            Literal(lit) => match rest.strip_prefix(lit) {
                Some(r) => Some(r),
                None => return cannot(lit, rest),
            },
            LongYear => (rest.len() >= 4 && rest.as_bytes()[0].is_ascii_digit())
                .then(|| rest.get(..4).and_then(|y| y.parse::<u32>().ok()).map(|y| (y, &rest[4..])))
                .flatten()
                .map(|(y, r)| {
                    year = y;
                    r
                }),
            ZeroMonth => match getnum(rest, true) {
                Some((m, r)) if (1..=12).contains(&m) => {
                    month = m;
                    Some(r)
                }
                Some(_) => return range("month"),
                None => None,
            },
            ZeroDay => getnum(rest, true).map(|(d, r)| {
                day = d;
                r
            }),
            Hour => match getnum(rest, false) {
                Some((h, _)) if h >= 24 => return range("hour"),
                other => other.map(|(_, r)| r),
            },
            ZeroMinute => match getnum(rest, true) {
                Some((m, _)) if m >= 60 => return range("minute"),
                other => other.map(|(_, r)| r),
            },
            ZeroSecond => match getnum(rest, true) {
                Some((s, _)) if s >= 60 => return range("second"),
                Some((_, r)) => {
                    // A fraction the layout does not have is taken all the same.
                    let b = r.as_bytes();
                    if !micro && b.len() >= 2 && matches!(b[0], b'.' | b',') && b[1].is_ascii_digit() {
                        let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
                        Some(&r[n..])
                    } else {
                        Some(r)
                    }
                }
                None => None,
            },
            Micros => {
                let b = rest.as_bytes();
                (b.len() >= 7 && matches!(b[0], b'.' | b',') && b[1..7].iter().all(u8::is_ascii_digit))
                    .then(|| &rest[7..])
            }
            ColonTz => {
                if let Some(r) = rest.strip_prefix('Z') {
                    Some(r)
                } else if rest.len() < 6 || rest.as_bytes()[3] != b':' {
                    None
                } else {
                    let hours = rest.get(1..3).and_then(|h| getnum(h, true));
                    let minutes = hours.and(rest.get(4..6)).and_then(|m| getnum(m, true));
                    let mut out_of_range = None;
                    if hours.is_some_and(|(h, _)| h > 24) {
                        out_of_range = Some("time zone offset hour");
                    }
                    if minutes.is_some_and(|(m, _)| m > 60) {
                        out_of_range = Some("time zone offset minute");
                    }
                    if let Some(what) = out_of_range {
                        return range(what);
                    }
                    (hours.is_some() && minutes.is_some() && matches!(rest.as_bytes()[0], b'+' | b'-'))
                        .then(|| &rest[6..])
                }
            }
        };
        match parsed {
            Some(r) => rest = r,
            None => return cannot(elem.layout(), hold),
        }
    }
    if !rest.is_empty() {
        return Some(format!("parsing time {}: extra text: {}", time_quote(value), time_quote(rest)));
    }
    // The tokens were read in Go's words above; whether the day exists in its month is the
    // calendar's (jiff's) to say.
    let exists = match (i16::try_from(year), i8::try_from(month), i8::try_from(day)) {
        (Ok(y), Ok(m), Ok(d)) => jiff::civil::Date::new(y, m, d).is_ok(),
        _ => false,
    };
    (!exists).then(|| format!("parsing time {}: day out of range", time_quote(value)))
}

/// The byte offset Go's `base64.StdEncoding.Decode` reports (`illegal base64 data at input
/// byte N`) for `s`, if it is not valid padded base64 (`\r` and `\n` are skipped).
pub(crate) fn base64_error(s: &str) -> Option<usize> {
    let src = s.as_bytes();
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut si = 0;
    // decodeQuantum, one quantum of four characters at a time.
    while si < src.len() {
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return None;
                }
                return Some(si - j);
            }
            let c = src[si];
            si += 1;
            if valid(c) {
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' {
                return Some(si - 1);
            }
            match j {
                0 | 1 => return Some(si - 1),
                2 => {
                    while si < src.len() && newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Some(src.len());
                    }
                    if src[si] != b'=' {
                        return Some(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            return (si < src.len()).then_some(si);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_like_parse_quantity() {
        for ok in ["1", "100m", "1.5Gi", "2e3", "0.1", "+5", "-1k", "1E-3", ".5", "12Mi", "0", "00"] {
            assert_eq!(quantity_error(ok), None, "{ok}");
        }
        assert_eq!(quantity_error("abc"), Some(QUANTITY_FORMAT));
        assert_eq!(quantity_error("1mi"), Some(QUANTITY_SUFFIX));
        assert_eq!(quantity_error(""), Some(QUANTITY_FORMAT));
        assert_eq!(quantity_error("1Gb"), Some(QUANTITY_FORMAT));
        assert_eq!(quantity_error("1 Gi"), Some(QUANTITY_FORMAT));
        assert_eq!(quantity_error("true"), Some(QUANTITY_FORMAT));
        assert_eq!(quantity_error("1Kb"), Some(QUANTITY_FORMAT));
        assert_eq!(quantity_error("1ki"), Some(QUANTITY_SUFFIX));
    }

    #[test]
    fn times_like_go() {
        assert_eq!(time_error(RFC3339, "2024-05-01T10:00:00Z"), None);
        assert_eq!(time_error(RFC3339, "2024-05-01T10:00:00.123+02:00"), None);
        assert_eq!(
            time_error(RFC3339, "abc").as_deref(),
            Some(r#"parsing time "abc" as "2006-01-02T15:04:05Z07:00": cannot parse "abc" as "2006""#)
        );
        assert_eq!(
            time_error(RFC3339, "2024-05-01").as_deref(),
            Some(r#"parsing time "2024-05-01" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "T""#)
        );
        assert_eq!(
            time_error(RFC3339, "2024-13-01T00:00:00Z").as_deref(),
            Some(r#"parsing time "2024-13-01T00:00:00Z": month out of range"#)
        );
        assert_eq!(
            time_error(RFC3339, "2023-02-29T00:00:00Z").as_deref(),
            Some(r#"parsing time "2023-02-29T00:00:00Z": day out of range"#)
        );
        assert_eq!(time_error(RFC3339, "2024-02-29T00:00:00Z"), None, "a leap year");
        assert!(time_error(RFC3339, "1900-02-29T00:00:00Z").is_some(), "not a leap year");
        assert!(time_error(RFC3339, "2024-04-31T00:00:00Z").is_some());
        assert_eq!(
            time_error(RFC3339, "2024-05-01T10:00:00Zx").as_deref(),
            Some(r#"parsing time "2024-05-01T10:00:00Zx": extra text: "x""#)
        );
        assert_eq!(time_error(RFC3339_MICRO, "2024-05-01T10:00:00.123456Z"), None);
        assert!(time_error(RFC3339_MICRO, "2024-05-01T10:00:00Z").is_some());
    }

    #[test]
    fn base64_offsets_like_go() {
        assert_eq!(base64_error("aGVsbG8="), None);
        assert_eq!(base64_error("aGVs\nbG8="), None);
        assert_eq!(base64_error(""), None);
        assert_eq!(base64_error("hello"), Some(4));
        assert_eq!(base64_error("not base64!"), Some(3));
        assert_eq!(base64_error("aGVsbG8"), Some(4));
        assert_eq!(base64_error("aGVsbG8=x"), Some(8));
        assert_eq!(base64_error("a==="), Some(1));
    }
}
