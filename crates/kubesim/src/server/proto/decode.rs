//! From a message's bytes to the JSON Go's `encoding/json` would write for the decoded
//! struct: [`decode_message`] merges records into a map, [`finalize`] adds what Go always
//! writes (zero scalars, value structs, `null`s), and the special types (Time, MicroTime,
//! Quantity, IntOrString, FieldsV1) are decoded to their JSON forms.

use serde_json::{Map, Value};

use super::ProtoError;
use super::table::{Card, Field, Schema, Ty, fields_of};
use super::wire::{LEN, Reader, VARINT, go_string, wrong_wire};

/// Decode message `name` from `buf`, merging into `out` (as Go's generated `Unmarshal` does:
/// scalars overwrite, repeated fields append, embedded messages merge).
pub(super) fn decode_message(
    schema: &'static Schema,
    name: &str,
    buf: &[u8],
    out: &mut Map<String, Value>,
) -> Result<(), ProtoError> {
    let fields = fields_of(schema, name)?;
    let mut r = Reader::new(buf);
    while !r.done() {
        let (num, wire) = r.tag(name)?;
        let Some(f) = fields.iter().find(|f| f.num == num) else {
            r.skip(wire)?;
            continue;
        };
        match (f.card, f.ty) {
            (Card::Value | Card::Ptr, Ty::Msg(sub)) => {
                let bytes = expect_len(f, wire, &mut r)?;
                if f.inline {
                    decode_message(schema, sub, bytes, out)?;
                } else {
                    let slot = out.entry(f.json).or_insert_with(|| Value::Object(Map::new()));
                    if !slot.is_object() {
                        *slot = Value::Object(Map::new());
                    }
                    if let Value::Object(m) = slot {
                        decode_message(schema, sub, bytes, m)?;
                    }
                }
            }
            (Card::Value | Card::Ptr, ty) => {
                let v = decode_value(schema, f, ty, wire, &mut r)?;
                out.insert(f.json.to_string(), v);
            }
            (Card::List, Ty::Bool | Ty::I32 | Ty::I64) if wire == LEN => {
                let mut packed = Reader::new(r.bytes()?);
                let mut items = Vec::new();
                while !packed.done() {
                    items.push(decode_value(schema, f, f.ty, VARINT, &mut packed)?);
                }
                if !items.is_empty() {
                    append(out, f.json, items);
                }
            }
            (Card::List, ty) => {
                let v = decode_value(schema, f, ty, wire, &mut r)?;
                append(out, f.json, vec![v]);
            }
            (Card::Map, ty) => {
                let mut entry = Reader::new(expect_len(f, wire, &mut r)?);
                let mut key = String::new();
                let mut value = None;
                while !entry.done() {
                    match entry.tag(name)? {
                        (1, LEN) => key = go_string(entry.bytes()?),
                        (2, w) => value = Some(decode_value(schema, f, ty, w, &mut entry)?),
                        (1, w) => return Err(wrong_wire(f.json, w)),
                        (_, w) => entry.skip(w)?,
                    }
                }
                let value = match value {
                    Some(v) => v,
                    None => zero_value(schema, ty)?,
                };
                let slot = out.entry(f.json).or_insert_with(|| Value::Object(Map::new()));
                if !slot.is_object() {
                    *slot = Value::Object(Map::new());
                }
                if let Value::Object(m) = slot {
                    m.insert(key, value);
                }
            }
        }
    }
    Ok(())
}

pub(super) fn expect_len<'a>(f: &Field, wire: u8, r: &mut Reader<'a>) -> Result<&'a [u8], ProtoError> {
    if wire != LEN {
        return Err(wrong_wire(f.json, wire));
    }
    r.bytes()
}

pub(super) fn append(out: &mut Map<String, Value>, key: &str, items: Vec<Value>) {
    match out.get_mut(key) {
        Some(Value::Array(existing)) => existing.extend(items),
        _ => {
            out.insert(key.to_string(), Value::Array(items));
        }
    }
}

/// Decode one value of type `ty` (a scalar, a special type, or a whole message).
pub(super) fn decode_value(
    schema: &'static Schema,
    f: &Field,
    ty: Ty,
    wire: u8,
    r: &mut Reader<'_>,
) -> Result<Value, ProtoError> {
    let want = match ty {
        Ty::Bool | Ty::I32 | Ty::I64 => VARINT,
        _ => LEN,
    };
    if wire != want {
        return Err(wrong_wire(f.json, wire));
    }
    Ok(match ty {
        Ty::Bool => Value::Bool(r.varint()? != 0),
        // Go truncates to int32 for int32 fields.
        Ty::I32 => Value::from(r.varint()? as u32 as i32),
        Ty::I64 => Value::from(r.varint()? as i64),
        Ty::Str => Value::String(go_string(r.bytes()?)),
        Ty::Bytes => Value::String(base64(r.bytes()?)),
        Ty::Time => decode_time(r.bytes()?, false)?,
        Ty::MicroTime => decode_time(r.bytes()?, true)?,
        Ty::Quantity => decode_quantity(r.bytes()?)?,
        Ty::IntOrString => decode_int_or_string(r.bytes()?)?,
        Ty::FieldsV1 => decode_fields_v1(r.bytes()?)?,
        Ty::StrList => {
            let mut items = Vec::new();
            let mut sub = Reader::new(r.bytes()?);
            while !sub.done() {
                match sub.tag("ExtraValue")? {
                    (1, LEN) => items.push(Value::String(go_string(sub.bytes()?))),
                    (1, w) => return Err(wrong_wire("items", w)),
                    (_, w) => sub.skip(w)?,
                }
            }
            if items.is_empty() { Value::Null } else { Value::Array(items) }
        }
        Ty::Msg(sub) => {
            let mut m = Map::new();
            decode_message(schema, sub, r.bytes()?, &mut m)?;
            Value::Object(m)
        }
    })
}

/// Apply Go `encoding/json` presence rules to a decoded message: drop zero `omitempty`
/// scalars, add zero values for absent non-`omitempty` fields, recurse into structs.
pub(super) fn finalize(
    schema: &'static Schema,
    name: &str,
    obj: &mut Map<String, Value>,
) -> Result<(), ProtoError> {
    for f in fields_of(schema, name)? {
        if f.inline {
            if let Ty::Msg(sub) = f.ty {
                finalize(schema, sub, obj)?;
            }
            continue;
        }
        match (obj.get_mut(f.json), f.card) {
            (Some(v), Card::Value | Card::Ptr) => {
                if let (Ty::Msg(sub), Value::Object(m)) = (f.ty, &mut *v) {
                    finalize(schema, sub, m)?;
                } else if f.card == Card::Value && f.omit_empty && is_scalar(f.ty) && is_zero(v) {
                    obj.remove(f.json);
                }
            }
            (Some(Value::Array(items)), Card::List) => {
                if let Ty::Msg(sub) = f.ty {
                    for item in items.iter_mut() {
                        if let Value::Object(m) = item {
                            finalize(schema, sub, m)?;
                        }
                    }
                }
            }
            (Some(Value::Object(entries)), Card::Map) => {
                if let Ty::Msg(sub) = f.ty {
                    for item in entries.values_mut() {
                        if let Value::Object(m) = item {
                            finalize(schema, sub, m)?;
                        }
                    }
                }
            }
            (Some(_), _) => {}
            (None, Card::Value) => {
                let zero = match f.ty {
                    // Structs ignore omitempty in encoding/json.
                    Ty::Msg(_) | Ty::Time | Ty::MicroTime | Ty::Quantity | Ty::IntOrString => {
                        Some(zero_value(schema, f.ty)?)
                    }
                    // A nil []byte, nil slice or nil RawMessage-like value.
                    Ty::Bytes | Ty::StrList | Ty::FieldsV1 => (!f.omit_empty).then_some(Value::Null),
                    Ty::Str | Ty::Bool | Ty::I32 | Ty::I64 => {
                        (!f.omit_empty).then(|| zero_value(schema, f.ty)).transpose()?
                    }
                };
                if let Some(zero) = zero {
                    obj.insert(f.json.to_string(), zero);
                }
            }
            (None, _) => {
                if !f.omit_empty {
                    obj.insert(f.json.to_string(), Value::Null);
                }
            }
        }
    }
    Ok(())
}

/// The JSON of a Go zero value of type `ty`.
pub(super) fn zero_value(schema: &'static Schema, ty: Ty) -> Result<Value, ProtoError> {
    Ok(match ty {
        Ty::Str => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::I32 | Ty::I64 | Ty::IntOrString => Value::from(0),
        Ty::Quantity => Value::String("0".into()),
        Ty::Bytes => Value::String(String::new()),
        Ty::Time | Ty::MicroTime | Ty::FieldsV1 | Ty::StrList => Value::Null,
        Ty::Msg(name) => {
            let mut m = Map::new();
            finalize(schema, name, &mut m)?;
            Value::Object(m)
        }
    })
}

/// Types whose Go zero value `omitempty` drops (structs are never dropped).
pub(super) fn is_scalar(ty: Ty) -> bool {
    matches!(ty, Ty::Str | Ty::Bool | Ty::I32 | Ty::I64 | Ty::Bytes)
}

pub(super) fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Null => true,
        _ => false,
    }
}

/// Standard base64 with padding, as Go's JSON encoder writes `[]byte`.
pub(super) fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `metav1.Time` / `MicroTime`: a `Timestamp{1: seconds, 2: nanos}`; empty means the zero
/// time, which marshals as `null`.
pub(super) fn decode_time(buf: &[u8], micro: bool) -> Result<Value, ProtoError> {
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let (mut secs, mut nanos) = (0i64, 0i32);
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.tag("Timestamp")? {
            (1, VARINT) => secs = r.varint()? as i64,
            (2, VARINT) => nanos = r.varint()? as u32 as i32,
            (1, w) => return Err(wrong_wire("seconds", w)),
            (2, w) => return Err(wrong_wire("nanos", w)),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(format_time(secs, nanos, micro)?.map_or(Value::Null, Value::String))
}

/// Format Unix `secs` + `nanos` as Go's `t.UTC().Format(RFC3339)` (or the RFC 3339
/// microsecond layout); `None` for Go's zero time (0001-01-01T00:00:00Z).
pub(super) fn format_time(secs: i64, nanos: i32, micro: bool) -> Result<Option<String>, ProtoError> {
    // time.Unix normalises nanoseconds into [0, 1e9); so does jiff.
    let out_of_range = || ProtoError::TimeOutOfRange { seconds: secs, nanos };
    let t = jiff::Timestamp::from_second(secs)
        .and_then(|t| t.checked_add(jiff::SignedDuration::from_nanos(i64::from(nanos))))
        .map_err(|_| out_of_range())?;
    if t.as_second() == -62_135_596_800 && t.subsec_nanosecond() == 0 {
        return Ok(None);
    }
    let dt = t.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    // Go pads a negative year to four digits after the sign (`-0001`); jiff's `%Y` counts
    // the sign as one of the four.
    let year = i32::from(dt.year());
    let year = if year < 0 { format!("-{:04}", -year) } else { format!("{year:04}") };
    let frac = if micro { format!(".{:06}", dt.subsec_nanosecond() / 1000) } else { String::new() };
    Ok(Some(format!(
        "{year}-{:02}-{:02}T{:02}:{:02}:{:02}{frac}Z",
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )))
}

/// `resource.Quantity{1: string}`. The string is validated like `ParseQuantity` and passed
/// through; clients send the canonical form (`Quantity.String()`). Empty means zero, `"0"`.
pub(super) fn decode_quantity(buf: &[u8]) -> Result<Value, ProtoError> {
    let mut r = Reader::new(buf);
    let mut out = None;
    while !r.done() {
        match r.tag("Quantity")? {
            (1, LEN) => {
                let s = go_string(r.bytes()?);
                check_quantity(&s)?;
                out = Some(s);
            }
            (1, w) => return Err(wrong_wire("string", w)),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(Value::String(out.unwrap_or_else(|| "0".into())))
}

/// Check a quantity string: `[+-]digits[.digits]suffix` with a known suffix.
pub(super) fn check_quantity(s: &str) -> Result<(), ProtoError> {
    let format = || ProtoError::QuantityFormat(s.to_string());
    let b = s.as_bytes();
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut pos = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if pos == b.len() && pos > 0 {
        // "+" or "-" alone parses as zero in Go.
        return Ok(());
    }
    if b.is_empty() {
        return Err(format());
    }
    pos = digits(pos);
    if b.get(pos) == Some(&b'.') {
        pos = digits(pos + 1);
    }
    let suffix = &s[pos..];
    let letters = suffix.bytes().take_while(|c| b"eEinumkKMGTP".contains(c)).count();
    let mut end = pos + letters;
    if matches!(b.get(end), Some(b'+' | b'-')) {
        end += 1;
    }
    if digits(end) != b.len() {
        return Err(format());
    }
    let ok = match suffix {
        "" | "n" | "u" | "m" | "k" | "M" | "G" | "T" | "P" | "E" => true,
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => true,
        exp => {
            let digits = exp.strip_prefix(['e', 'E']).unwrap_or("");
            let digits = digits.strip_prefix(['+', '-']).unwrap_or(digits);
            !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
        }
    };
    if ok { Ok(()) } else { Err(ProtoError::QuantitySuffix(s.to_string())) }
}

/// `intstr.IntOrString{1: type, 2: intVal, 3: strVal}` → number (type 0) or string (type 1).
pub(super) fn decode_int_or_string(buf: &[u8]) -> Result<Value, ProtoError> {
    let (mut ty, mut int_val, mut str_val) = (0i64, 0i32, String::new());
    let mut r = Reader::new(buf);
    while !r.done() {
        match r.tag("IntOrString")? {
            (1, VARINT) => ty = r.varint()? as i64,
            (2, VARINT) => int_val = r.varint()? as u32 as i32,
            (3, LEN) => str_val = go_string(r.bytes()?),
            (n @ 1..=3, w) => {
                return Err(wrong_wire(["type", "intVal", "strVal"][n as usize - 1], w));
            }
            (_, w) => r.skip(w)?,
        }
    }
    match ty {
        0 => Ok(Value::from(int_val)),
        1 => Ok(Value::String(str_val)),
        other => Err(ProtoError::IntOrStringType(other)),
    }
}

/// `metav1.FieldsV1{1: Raw}`: the raw bytes are the JSON itself.
pub(super) fn decode_fields_v1(buf: &[u8]) -> Result<Value, ProtoError> {
    let mut r = Reader::new(buf);
    let mut raw = None;
    while !r.done() {
        match r.tag("FieldsV1")? {
            (1, LEN) => raw = Some(r.bytes()?),
            (1, w) => return Err(wrong_wire("Raw", w)),
            (_, w) => r.skip(w)?,
        }
    }
    match raw {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_slice(raw).map_err(|e| ProtoError::FieldsV1(e.to_string())),
    }
}
