//! `@hash`: six base-36 characters of the MD5 of the value's JSON, byte-compatible with
//! Δ-controller. That JSON is Go's `encoding/json` output ([`go_json`]): keys sorted, no
//! spaces, `<`, `>`, `&`, U+2028 and U+2029 escaped, floats in Go's shortest form. The
//! digest, read as a 128-bit big-endian number, is written in base 36 (lowercase),
//! left-padded with `0` to 25 characters, and cut to its first 6.
//!
//! `ctop-schema`'s `go::json` writes the same JSON, but depending on it would pull the
//! CEL stack into this pure library, and it writes `\b` and `\f` as Go before 1.22 did
//! (`\u0008`), where Δ-controller's Go 1.24 writes `\b` and `\f`.

use std::fmt::Write as _;

use md5::{Digest as _, Md5};
use serde_json::Value;

/// The `@hash` of a value.
pub(crate) fn hash_value(v: &Value) -> String {
    let digest = Md5::digest(go_json(v).as_bytes());
    let mut n = digest.iter().fold(0u128, |acc, b| (acc << 8) | u128::from(*b));
    let mut digits = Vec::with_capacity(25);
    while n > 0 {
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
    }
    digits.resize(25, b'0');
    digits.iter().rev().take(6).map(|b| char::from(*b)).collect()
}

/// A value as Go's `json.Marshal` writes it.
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (None, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&go_float(f)),
            _ => out.push_str("null"),
        },
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// A float as Go writes it in JSON: decimal between 1e-6 and 1e21, else exponent form
/// with at least one exponent digit and a sign (`1e+21`, `1e-7`).
fn go_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{f}")
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{go_json, hash_value};

    #[test]
    fn go_json_matches_encoding_json() {
        assert_eq!(
            go_json(&json!({"b": [1, 2.5, null], "a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e","b":[1,2.5,null]}"#
        );
        assert_eq!(go_json(&json!(1e21)), "1e+21");
        assert_eq!(go_json(&json!(1.5e-7)), "1.5e-7");
        assert_eq!(go_json(&json!(2.0)), "2");
    }

    #[test]
    fn hash_vectors() {
        // md5 of the JSON, as a number, in base 36: dorzm8q71mzcxty16hae8up81.
        assert_eq!(hash_value(&json!({"a": 1, "b": {"c": 2}, "x": [1, 2, 3, 4, 5]})), "dorzm8");
        assert_eq!(hash_value(&json!({"a": 2, "b": {"c": 2}, "x": [1, 2, 3, 4, 5]})), "9pxacx");
        // 24 base-36 digits, so Go's `%025s` pads a leading zero: 0owrwm…
        assert_eq!(hash_value(&json!("x17")), "0owrwm");
    }
}
