//! The `metav1.StatusCause`s of a 422 Invalid response and how apimachinery's
//! `field.Error` words them (`field/errors.go`): [`Cause`], the cause-type constants and
//! [`invalid_message`], which joins causes into the Status message as
//! `apierrors.NewInvalid` does. Start at the constructors (`invalid`, `required`, ...),
//! which every rule module uses.

use serde::Serialize;
use serde_json::Value;

use crate::access::{Num, num};
use crate::go::{float as go_float, quote as go_quote, sharp_v as go_sharp_v};

/// `metav1.CauseType` of a malformed value.
pub const FIELD_VALUE_INVALID: &str = "FieldValueInvalid";
/// `metav1.CauseType` of a value whose JSON type does not match the schema.
pub const FIELD_VALUE_TYPE_INVALID: &str = "FieldValueTypeInvalid";
/// `metav1.CauseType` of a missing required value.
pub const FIELD_VALUE_REQUIRED: &str = "FieldValueRequired";
/// `metav1.CauseType` of a value outside an enum.
pub const FIELD_VALUE_NOT_SUPPORTED: &str = "FieldValueNotSupported";
/// `metav1.CauseType` of a value not allowed here.
pub const FIELD_VALUE_FORBIDDEN: &str = "FieldValueForbidden";
/// `metav1.CauseType` of a repeated set element or map-list key.
pub const FIELD_VALUE_DUPLICATE: &str = "FieldValueDuplicate";
/// `metav1.CauseType` of a string over `maxLength`.
pub const FIELD_VALUE_TOO_LONG: &str = "FieldValueTooLong";
/// `metav1.CauseType` of a list or map over `maxItems` / `maxProperties`.
pub const FIELD_VALUE_TOO_MANY: &str = "FieldValueTooMany";
/// `metav1.CauseType` of a reference to something that does not exist.
pub const FIELD_VALUE_NOT_FOUND: &str = "FieldValueNotFound";

/// One `metav1.StatusCause` of a 422 Invalid response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// The cause type, e.g. [`FIELD_VALUE_INVALID`].
    pub reason: String,
    /// The error body, e.g. `Invalid value: -1: spec.replicas in body should be ...`.
    pub message: String,
    /// The field path, e.g. `spec.replicas` (`<nil>` for errors about the whole object).
    pub field: String,
}

impl Cause {
    /// `field: message`, the form used in the Status message.
    #[must_use]
    pub fn error_string(&self) -> String {
        format!("{}: {}", self.field, self.message)
    }
}

/// A Go `BadValue`, rendered as `field.Error.ErrorBody` does: strings quoted (`%q`),
/// numbers and booleans plain (`%v`), anything else in Go syntax (`%#v`).
#[derive(Clone, Debug, PartialEq)]
pub enum Bad {
    /// A Go string (or named string type): `"x"`.
    Str(String),
    /// A Go integer: `5`.
    Int(i64),
    /// A Go float64: `%v`.
    Float(f64),
    /// A Go bool: `true`.
    Bool(bool),
    /// Unstructured data, `%#v` of `interface{}` values (`map[string]interface {}{...}`).
    Data(Value),
    /// A Go `[]string`: `[]string{"a", "b"}`.
    StrList(Vec<String>),
    /// A value already in Go's `%#v` form (a struct, a typed map).
    Raw(String),
}

impl Bad {
    /// The Go value a JSON value decodes to in an unstructured object.
    #[must_use]
    pub fn of(v: &Value) -> Bad {
        match v {
            Value::String(s) => Bad::Str(s.clone()),
            Value::Bool(b) => Bad::Bool(*b),
            Value::Number(_) => match num(v) {
                Some(Num::I(i)) => Bad::Int(i),
                Some(Num::F(f)) => Bad::Float(f),
                None => Bad::Data(v.clone()),
            },
            _ => Bad::Data(v.clone()),
        }
    }

    fn render(&self) -> String {
        match self {
            Bad::Str(s) => go_quote(s),
            Bad::Int(i) => i.to_string(),
            Bad::Float(f) => go_float(*f),
            Bad::Bool(b) => b.to_string(),
            // A nil BadValue renders as the string "null", quoted.
            Bad::Data(Value::Null) => go_quote("null"),
            Bad::Data(v) => go_sharp_v(v),
            Bad::Raw(s) => s.clone(),
            Bad::StrList(l) => {
                let items: Vec<String> = l.iter().map(|s| go_quote(s)).collect();
                format!("[]string{{{}}}", items.join(", "))
            }
        }
    }
}

/// A cause of `reason` at `field` whose message is `head`, then `: detail` when there is one.
#[must_use]
pub fn cause(reason: &str, field: &str, head: String, detail: &str) -> Cause {
    let message = if detail.is_empty() { head } else { format!("{head}: {detail}") };
    Cause { reason: reason.to_owned(), message, field: field.to_owned() }
}

/// `field.Invalid`: `Invalid value: <bad>: <detail>`.
#[must_use]
pub fn invalid(field: &str, bad: Bad, detail: &str) -> Cause {
    cause(FIELD_VALUE_INVALID, field, format!("Invalid value: {}", bad.render()), detail)
}

/// `field.TypeInvalid`: `Invalid value: <bad>: <detail>`.
#[must_use]
pub fn type_invalid(field: &str, bad: Bad, detail: &str) -> Cause {
    cause(FIELD_VALUE_TYPE_INVALID, field, format!("Invalid value: {}", bad.render()), detail)
}

/// `field.Required`: `Required value[: <detail>]`.
#[must_use]
pub fn required(field: &str, detail: &str) -> Cause {
    cause(FIELD_VALUE_REQUIRED, field, "Required value".to_owned(), detail)
}

/// `field.Forbidden`: `Forbidden[: <detail>]`.
#[must_use]
pub fn forbidden(field: &str, detail: &str) -> Cause {
    cause(FIELD_VALUE_FORBIDDEN, field, "Forbidden".to_owned(), detail)
}

/// `field.NotSupported`: `Unsupported value: <bad>: supported values: "a", "b"`.
#[must_use]
pub fn not_supported(field: &str, bad: Bad, valid: &[String]) -> Cause {
    let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
    let detail =
        if quoted.is_empty() { String::new() } else { format!("supported values: {}", quoted.join(", ")) };
    cause(FIELD_VALUE_NOT_SUPPORTED, field, format!("Unsupported value: {}", bad.render()), &detail)
}

/// `field.Duplicate`: `Duplicate value: <bad>`.
#[must_use]
pub fn duplicate(field: &str, bad: Bad) -> Cause {
    cause(FIELD_VALUE_DUPLICATE, field, format!("Duplicate value: {}", bad.render()), "")
}

/// `field.TooLong` as the CRD validator words it (`may not be more than N bytes`).
#[must_use]
pub fn too_long(field: &str, max: i64) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    let detail =
        if max >= 0 { format!("may not be more than {max} {unit}") } else { "value is too long".to_owned() };
    cause(FIELD_VALUE_TOO_LONG, field, "Too long".to_owned(), &detail)
}

/// `field.TooMany` as the CRD validator words it (`Too many: N: must have at most M items`).
#[must_use]
pub fn too_many(field: &str, actual: i64, max: i64) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    cause(
        FIELD_VALUE_TOO_MANY,
        field,
        format!("Too many: {actual}"),
        &format!("must have at most {max} {unit}"),
    )
}

/// `field.NotFound`: `Not found: <bad>`.
#[must_use]
pub fn not_found(field: &str, bad: Bad) -> Cause {
    cause(FIELD_VALUE_NOT_FOUND, field, format!("Not found: {}", bad.render()), "")
}

/// The message of a 422 Invalid Status, as `apierrors.NewInvalid` builds it:
/// `<Kind>.<group> "<name>" is invalid: <field>: <message>`, with the
/// `[a, b]` list form (duplicates dropped) when there are several causes.
#[must_use]
pub fn invalid_message(kind_group: &str, name: &str, causes: &[Cause]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for c in causes {
        let s = c.error_string();
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    let head = format!("{kind_group} {} is invalid", go_quote(name));
    match seen.len() {
        0 => head,
        1 => format!("{head}: {}", seen[0]),
        _ => format!("{head}: [{}]", seen.join(", ")),
    }
}
