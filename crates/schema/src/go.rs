//! Go's rendering of values, as the API server's messages print them: `strconv.Quote`
//! ([`quote`]), `%v` of a float64 ([`float`]), `encoding/json` ([`json`]) and Go-syntax
//! `%#v` of unstructured data ([`sharp_v`]). Kubernetes 1.33 wording depends on these
//! byte for byte, so they are hand-written here: no Rust crate formats like Go's `fmt`.

use serde_json::Value;

use crate::access::{Num, num};

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if go_printable(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// An approximation of Go's `unicode.IsPrint`.
fn go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c as u32, 0xAD | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2064 | 0xFEFF)
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".to_owned() } else { "-Inf".to_owned() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".to_owned() } else { "0".to_owned() };
    }
    let (neg, digits, exp) = float_digits(f);
    let sign = if neg { "-" } else { "" };
    if (-4..6).contains(&exp) {
        format!("{sign}{}", fixed_form(&digits, exp))
    } else {
        format!("{sign}{}", exp_form(&digits, exp))
    }
}

/// The shortest round-trip decimal digits of `|f|` and its decimal exponent
/// (`d.ddd × 10^exp`).
fn float_digits(f: f64) -> (bool, String, i32) {
    let s = format!("{:e}", f.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    (f < 0.0, digits, exp.parse().unwrap_or(0))
}

fn exp_form(digits: &str, exp: i32) -> String {
    let (first, rest) = digits.split_at(1);
    let mant = if rest.is_empty() { first.to_owned() } else { format!("{first}.{rest}") };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{esign}{:02}", exp.abs())
}

fn fixed_form(digits: &str, exp: i32) -> String {
    let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if exp < 0 {
        let zeros = "0".repeat(usize::try_from(-exp - 1).unwrap_or(0));
        format!("0.{zeros}{digits}")
    } else if exp + 1 >= n {
        let zeros = "0".repeat(usize::try_from(exp + 1 - n).unwrap_or(0));
        format!("{digits}{zeros}")
    } else {
        let (a, b) = digits.split_at(usize::try_from(exp + 1).unwrap_or(0));
        format!("{a}.{b}")
    }
}

/// Go's `encoding/json` rendering of a float64.
fn json_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return if f.is_sign_negative() && f == 0.0 { "-0".to_owned() } else { "0".to_owned() };
    }
    let (neg, digits, exp) = float_digits(f);
    let sign = if neg { "-" } else { "" };
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        let (first, rest) = digits.split_at(1);
        let mant = if rest.is_empty() { first.to_owned() } else { format!("{first}.{rest}") };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{mant}e{esign}{}", exp.abs());
    }
    format!("{sign}{}", fixed_form(&digits, exp))
}

/// Go's `json.Marshal` of an unstructured value (sorted keys, HTML-safe escaping).
pub fn json(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => match num(v) {
            Some(Num::I(i)) => i.to_string(),
            Some(Num::F(f)) => json_float(f),
            None => v.to_string(),
        },
        Value::String(s) => json_string(s),
        Value::Array(a) => format!("[{}]", a.iter().map(json).collect::<Vec<_>>().join(",")),
        Value::Object(m) => {
            let parts: Vec<String> =
                m.iter().map(|(k, v)| format!("{}:{}", json_string(k), json(v))).collect();
            format!("{{{}}}", parts.join(","))
        }
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What `encoding/json` calls a JSON value in its errors (`cannot unmarshal <this> into
/// ...`): `null`, `bool`, `number`, `string`, `array` or `object`.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%v` of an unstructured value (`map[k:v ...]`, `[a b]`, `<nil>`; integers as
/// `int64`, other numbers as `float64`).
pub fn percent_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => match num(v) {
            Some(Num::I(i)) => i.to_string(),
            Some(Num::F(f)) => float(f),
            None => v.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(percent_v).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", percent_v(v))).collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// Go's `%#v` of an unstructured value (`map[string]interface {}{...}`).
pub fn sharp_v(v: &Value) -> String {
    fn inner(v: &Value) -> String {
        match v {
            Value::Null => "interface {}(nil)".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Number(_) => match num(v) {
                Some(Num::I(i)) => i.to_string(),
                Some(Num::F(f)) => float(f),
                None => v.to_string(),
            },
            Value::String(s) => quote(s),
            Value::Array(a) => {
                format!("[]interface {{}}{{{}}}", a.iter().map(inner).collect::<Vec<_>>().join(", "))
            }
            Value::Object(m) => {
                let parts: Vec<String> =
                    m.iter().map(|(k, v)| format!("{}:{}", quote(k), inner(v))).collect();
                format!("map[string]interface {{}}{{{}}}", parts.join(", "))
            }
        }
    }
    inner(v)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn go_float_matches_strconv_g() {
        assert_eq!(float(1.0), "1");
        assert_eq!(float(-1.5), "-1.5");
        assert_eq!(float(123456.0), "123456");
        assert_eq!(float(1e6), "1e+06");
        assert_eq!(float(1234567.0), "1.234567e+06");
        assert_eq!(float(0.0001), "0.0001");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(json_float(3.0), "3");
        assert_eq!(json_float(1e21), "1e+21");
        assert_eq!(json_float(1e-7), "1e-7");
        assert_eq!(json_float(1e6), "1000000");
    }

    #[test]
    fn percent_v_like_go() {
        assert_eq!(percent_v(&json!({"b": [1, null], "a": {"c": 2.5}})), "map[a:map[c:2.5] b:[1 <nil>]]");
        assert_eq!(
            percent_v(&json!({"spec": {"replicas": 1.5, "x": [1, "a", true, null]}})),
            "map[spec:map[replicas:1.5 x:[1 a true <nil>]]]"
        );
    }

    #[test]
    fn go_quote_and_json_escape_like_go() {
        assert_eq!(quote("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\x01é""#);
        assert_eq!(
            json(&json!({"b": "<&>", "a": [1, 1.5, null]})),
            r#"{"a":[1,1.5,null],"b":"\u003c\u0026\u003e"}"#
        );
        assert_eq!(
            sharp_v(&json!({"name": "a", "n": 1, "l": ["x"], "z": null})),
            r#"map[string]interface {}{"l":[]interface {}{"x"}, "n":1, "name":"a", "z":interface {}(nil)}"#
        );
    }

    // --- validation ----------------------------------------------------------
}
