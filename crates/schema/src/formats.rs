//! String formats as go-openapi's `strfmt` registry checks them for CRDs (the subset the
//! server keeps, `SUPPORTED_FORMATS`). Where a crate accepts exactly what `strfmt`
//! accepts it is used; the others are hand-written with the reason beside them.

use serde_json::Value;

use crate::access::{INT_OR_STRING, flag, s_str, s_type};
use crate::pattern::with_regex;

pub(crate) const SUPPORTED_FORMATS: [&str; 25] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "quantity",
];

/// The format after the server strips the ones CRDs do not support.
pub(crate) fn effective_format(s: &Value) -> &str {
    let f = s_str(s, "format").unwrap_or("");
    if f.is_empty() {
        return f;
    }
    let t = if flag(s, INT_OR_STRING) { "" } else { s_type(s) };
    let keep = match t {
        "" | "string" => SUPPORTED_FORMATS.contains(&f.replace('-', "").as_str()),
        "integer" => f == "int32" || f == "int64",
        "number" => f == "float" || f == "double",
        _ => false,
    };
    if keep { f } else { "" }
}

/// Checks a string against a (normalized) format; formats not implemented here pass.
pub(crate) fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "uuid" => uuid_ok(s, None),
        "uuid3" => uuid_ok(s, Some('3')),
        "uuid4" => uuid_ok(s, Some('4')),
        "uuid5" => uuid_ok(s, Some('5')),
        "ipv4" => s.contains('.') && s.parse::<std::net::IpAddr>().is_ok(),
        "ipv6" => s.contains(':') && s.parse::<std::net::IpAddr>().is_ok(),
        "cidr" => cidr_ok(s),
        "mac" => mac_ok(s),
        "hostname" => hostname_ok(s),
        "date" => date_ok(s),
        "datetime" => datetime_ok(s),
        "byte" => base64_ok(s),
        "hexcolor" => {
            let h = s.strip_prefix('#').unwrap_or(s);
            (h.len() == 3 || h.len() == 6) && h.chars().all(|c| c.is_ascii_hexdigit())
        }
        "bsonobjectid" => s.len() == 24 && s.chars().all(|c| c.is_ascii_hexdigit()),
        _ => true,
    }
}

pub(crate) fn uuid_ok(s: &str, version: Option<char>) -> bool {
    let mut hex = String::new();
    let mut rest = s;
    for (n, len) in [8usize, 4, 4, 4, 12].into_iter().enumerate() {
        if n > 0 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
        let Some(part) = rest.get(..len) else {
            return false;
        };
        if !part.chars().all(|c| c.is_ascii_hexdigit()) {
            return false;
        }
        hex.push_str(part);
        rest = &rest[len..];
    }
    if !rest.is_empty() {
        return false;
    }
    let b = hex.as_bytes();
    match version {
        None => true,
        Some('3') => b[12] == b'3',
        Some(v) => b[12] == v as u8 && matches!(b[16].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b'),
    }
}

pub(crate) fn cidr_ok(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(addr) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.chars().all(|c| c.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

pub(crate) fn mac_ok(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit());
    for sep in [':', '-'] {
        let parts: Vec<&str> = s.split(sep).collect();
        if matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| hex(p, 2)) {
            return true;
        }
    }
    let parts: Vec<&str> = s.split('.').collect();
    matches!(parts.len(), 3 | 4 | 10) && parts.iter().all(|p| hex(p, 4))
}

/// strfmt's hostname: labels of letters, digits and symbols; a dot-less name is one
/// character, an optional dash and up to 62 more; otherwise the last label has at
/// least two characters and only single dashes between them.
pub(crate) fn hostname_ok(s: &str) -> bool {
    let x = |c: char| {
        c.is_ascii_alphanumeric()
            || !c.is_ascii()
                && with_regex(r"^[\p{S}\p{L}]$", |re| re.is_match(c.encode_utf8(&mut [0; 4])))
                    .unwrap_or(false)
    };
    if s.len() > 255 || s.split('.').any(|p| p.len() > 63) {
        return false;
    }
    let labels: Vec<Vec<char>> = s.split('.').map(|l| l.chars().collect()).collect();
    let Some((last, init)) = labels.split_last() else { return false };
    let Some((&first, rest)) = last.split_first() else { return false };
    if init.is_empty() {
        let rest = rest.strip_prefix(&['-']).unwrap_or(rest);
        return x(first) && rest.len() <= 62 && rest.iter().all(|c| x(*c));
    }
    let ends_ok = |l: &[char]| l.first().is_some_and(|c| x(*c)) && l.last().is_some_and(|c| x(*c));
    let inner_ok = init.iter().all(|l| l.len() <= 63 && ends_ok(l) && l.iter().all(|c| *c == '-' || x(*c)));
    let groups = rest.iter().filter(|c| **c != '-').count();
    let last_ok = ends_ok(last)
        && (1..=62).contains(&groups)
        && rest.iter().all(|c| *c == '-' || x(*c))
        && !last.windows(2).any(|w| w == ['-', '-']);
    inner_ok && last_ok
}

/// strfmt's date: Go's `time.Parse("2006-01-02", s)`, four-digit year, two-digit month and
/// day, a day that exists in that month (the calendar is jiff's).
pub(crate) fn date_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let number = |r: std::ops::Range<usize>| {
        s.get(r).filter(|p| p.bytes().all(|c| c.is_ascii_digit())).and_then(|p| p.parse::<i16>().ok())
    };
    let (Some(y), Some(m), Some(d)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let (Ok(m), Ok(d)) = (i8::try_from(m), i8::try_from(d)) else { return false };
    jiff::civil::Date::new(y, m, d).is_ok()
}

/// strfmt's date-time: a date, a `t`, `hh:mm:ss`, an optional fraction, and `z` or an
/// offset (case-insensitive).
pub(crate) fn datetime_ok(s: &str) -> bool {
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if s.len() < 4 || parts.len() < 2 || !date_ok(parts[0]) {
        return false;
    }
    let time = r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$";
    with_regex(time, |re| {
        re.captures(parts[1]).is_some_and(|c| {
            let at = |i: usize| c.get(i).map_or("", |m| m.as_str());
            at(1) <= "23" && at(2) <= "59" && at(3) <= "59"
        })
    })
    .unwrap_or(false)
}

/// kube-openapi's `byte` format: the shape check of govalidator's `IsBase64` regex
/// (groups of four from the standard alphabet, at most two `=` of padding, not empty). It
/// is a match on the text, not a decode, so the `base64` crate's decoder (which also
/// checks the trailing bits) would refuse strings the server accepts.
pub(crate) fn base64_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let body = b.len() - b.iter().rev().take_while(|c| **c == b'=').count();
    b.len() - body <= 2 && b[..body].iter().all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

// --- patterns (Go RE2 syntax) -------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_checkers() {
        for d in ["2024-02-29", "2000-02-29", "0000-01-01", "1999-12-31"] {
            assert!(format_ok("date", d), "{d}");
        }
        for d in [
            "2023-02-29",
            "1900-02-29",
            "2024-04-31",
            "2024-13-01",
            "2024-00-10",
            "2024-1-01",
            "20240101",
            "",
        ] {
            assert!(!format_ok("date", d), "{d}");
        }
        for h in ["localhost", "a-b", "host.io", "x1.y-z.com", "k8s.example.com", "ünï.côde"] {
            assert!(format_ok("hostname", h), "{h}");
        }
        for h in ["a-b-c", "a.b", "host.-x", "x..y", "a.b--c", ""] {
            assert!(!format_ok("hostname", h), "{h}");
        }
        for t in ["2024-01-02T03:04:05.123+02:00", "2024-01-02t03:04:05z", "2024-12-31T23:59:59Z"] {
            assert!(format_ok("datetime", t), "{t}");
        }
        for t in ["2024-01-02 03:04:05Z", "2024-13-02T03:04:05Z", "2024-01-02T03:60:05Z"] {
            assert!(!format_ok("datetime", t), "{t}");
        }
        assert!(format_ok("uuid4", "123e4567-e89b-42d3-a456-426614174000"));
        assert!(!format_ok("uuid4", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(format_ok("uuid", "123E4567E89B12D3A456426614174000"));
        assert!(format_ok("cidr", "10.0.0.0/8") && !format_ok("cidr", "10.0.0.0/33"));
        assert!(format_ok("ipv6", "::1") && !format_ok("ipv6", "1.2.3.4"));
        assert!(
            format_ok("mac", "01:23:45:67:89:ab")
                && format_ok("mac", "0123.4567.89ab")
                && !format_ok("mac", "01:23")
        );
        assert!(format_ok("byte", "aGVsbG8=") && !format_ok("byte", "aGVsbG8") && !format_ok("byte", ""));
        assert!(format_ok("hexcolor", "#fff") && !format_ok("hexcolor", "#ffff"));
    }
}
