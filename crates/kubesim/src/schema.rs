//! CRD structural schemas: what kube-apiserver does with a CustomResourceDefinition
//! version's `openAPIV3Schema`.
//!
//! Schemas and objects are plain [`serde_json::Value`]s (the v1 JSON form of
//! `JSONSchemaProps` and of the custom resource). Where to start:
//!
//! * On a CRD create/update, [`check_structural`] gives the schema errors the server
//!   reports (structural-schema invariants, defaults, list/map-type rules, unsupported
//!   keywords), with fields relative to a base such as
//!   `spec.versions[0].schema.openAPIV3Schema`.
//! * On every custom-resource write, run the server's pipeline in its order:
//!   [`prune`] (unknown fields; returns the paths for warnings / strict errors),
//!   [`drop_nulls`], [`apply_defaults`], then [`validate`] (or [`validate_update`],
//!   which ratchets errors in unchanged values). Turn the causes into the 422 message
//!   with [`invalid_message`].
//! * [`SchemaShape`] answers server-side-apply list/map questions from the schema's
//!   `x-kubernetes-list-type` / `x-kubernetes-list-map-keys` / `x-kubernetes-map-type`.
//! * [`json_path`] and [`column_cell`] evaluate `additionalPrinterColumns`.
//!
//! Messages follow the real server: kube-openapi's validation messages wrapped in
//! apimachinery `field.Error` bodies, with Go's value rendering (`%q` strings, `%v`
//! numbers, Go-syntax `%#v` for maps and lists as Kubernetes 1.33 prints them).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::shape::{ListType, MergeStrategy, MetadataOnlyShape, Shape};

// ---------------------------------------------------------------------------
// Errors and causes
// ---------------------------------------------------------------------------

/// Errors of this module's parsers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A printer-column JSONPath could not be parsed (the server rejects such a
    /// column with `unrecognized column definition`).
    #[error("unrecognized JSONPath {path:?}: {reason}")]
    JsonPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

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

/// A Go `BadValue`, rendered as `field.Error.ErrorBody` does.
enum Bad {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Data(Value),
    StrList(Vec<String>),
}

impl Bad {
    fn of(v: &Value) -> Bad {
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
            Bad::StrList(l) => {
                let items: Vec<String> = l.iter().map(|s| go_quote(s)).collect();
                format!("[]string{{{}}}", items.join(", "))
            }
        }
    }
}

fn cause(reason: &str, field: &str, head: String, detail: &str) -> Cause {
    let message = if detail.is_empty() { head } else { format!("{head}: {detail}") };
    Cause { reason: reason.to_owned(), message, field: field.to_owned() }
}

fn invalid(field: &str, bad: Bad, detail: &str) -> Cause {
    cause(FIELD_VALUE_INVALID, field, format!("Invalid value: {}", bad.render()), detail)
}

fn type_invalid(field: &str, bad: Bad, detail: &str) -> Cause {
    cause(FIELD_VALUE_TYPE_INVALID, field, format!("Invalid value: {}", bad.render()), detail)
}

fn required(field: &str, detail: &str) -> Cause {
    cause(FIELD_VALUE_REQUIRED, field, "Required value".to_owned(), detail)
}

fn forbidden(field: &str, detail: &str) -> Cause {
    cause(FIELD_VALUE_FORBIDDEN, field, "Forbidden".to_owned(), detail)
}

fn not_supported(field: &str, bad: Bad, valid: &[String]) -> Cause {
    let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
    let detail =
        if quoted.is_empty() { String::new() } else { format!("supported values: {}", quoted.join(", ")) };
    cause(FIELD_VALUE_NOT_SUPPORTED, field, format!("Unsupported value: {}", bad.render()), &detail)
}

fn duplicate(field: &str, bad: Bad) -> Cause {
    cause(FIELD_VALUE_DUPLICATE, field, format!("Duplicate value: {}", bad.render()), "")
}

fn too_long(field: &str, max: i64) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    let detail =
        if max >= 0 { format!("may not be more than {max} {unit}") } else { "value is too long".to_owned() };
    cause(FIELD_VALUE_TOO_LONG, field, "Too long".to_owned(), &detail)
}

fn too_many(field: &str, actual: i64, max: i64) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    cause(
        FIELD_VALUE_TOO_MANY,
        field,
        format!("Too many: {actual}"),
        &format!("must have at most {max} {unit}"),
    )
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

// ---------------------------------------------------------------------------
// Go value rendering
// ---------------------------------------------------------------------------

/// Go's `strconv.Quote`.
pub(crate) fn go_quote(s: &str) -> String {
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
fn go_float(f: f64) -> String {
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
fn go_json_float(f: f64) -> String {
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
fn go_json(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => match num(v) {
            Some(Num::I(i)) => i.to_string(),
            Some(Num::F(f)) => go_json_float(f),
            None => v.to_string(),
        },
        Value::String(s) => go_json_string(s),
        Value::Array(a) => format!("[{}]", a.iter().map(go_json).collect::<Vec<_>>().join(",")),
        Value::Object(m) => {
            let parts: Vec<String> =
                m.iter().map(|(k, v)| format!("{}:{}", go_json_string(k), go_json(v))).collect();
            format!("{{{}}}", parts.join(","))
        }
    }
}

fn go_json_string(s: &str) -> String {
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

/// Go's `%#v` of an unstructured value (`map[string]interface {}{...}`).
fn go_sharp_v(v: &Value) -> String {
    fn inner(v: &Value) -> String {
        match v {
            Value::Null => "interface {}(nil)".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Number(_) => match num(v) {
                Some(Num::I(i)) => i.to_string(),
                Some(Num::F(f)) => go_float(f),
                None => v.to_string(),
            },
            Value::String(s) => go_quote(s),
            Value::Array(a) => {
                format!("[]interface {{}}{{{}}}", a.iter().map(inner).collect::<Vec<_>>().join(", "))
            }
            Value::Object(m) => {
                let parts: Vec<String> =
                    m.iter().map(|(k, v)| format!("{}:{}", go_quote(k), inner(v))).collect();
                format!("map[string]interface {{}}{{{}}}", parts.join(", "))
            }
        }
    }
    inner(v)
}

// ---------------------------------------------------------------------------
// Schema and data accessors
// ---------------------------------------------------------------------------

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
const LIST_TYPE: &str = "x-kubernetes-list-type";
const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";
const MAP_TYPE: &str = "x-kubernetes-map-type";
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

fn is_meta(k: &str) -> bool {
    META_FIELDS.contains(&k)
}

fn get<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    s.as_object()?.get(k)
}

fn s_str<'a>(s: &'a Value, k: &str) -> Option<&'a str> {
    get(s, k).and_then(Value::as_str)
}

fn s_type(s: &Value) -> &str {
    s_str(s, "type").unwrap_or("")
}

fn flag(s: &Value, k: &str) -> bool {
    get(s, k).and_then(Value::as_bool).unwrap_or(false)
}

fn props(s: &Value) -> Option<&Map<String, Value>> {
    get(s, "properties")?.as_object()
}

fn prop<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    props(s)?.get(k)
}

fn items(s: &Value) -> Option<&Value> {
    get(s, "items").filter(|v| v.is_object())
}

fn list<'a>(s: &'a Value, k: &str) -> &'a [Value] {
    get(s, k).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `additionalProperties`: absent, a boolean, or a schema.
enum Addl<'a> {
    Absent,
    Bool(bool),
    Schema(&'a Value),
}

fn addl(s: &Value) -> Addl<'_> {
    match get(s, "additionalProperties") {
        None | Some(Value::Null) => Addl::Absent,
        Some(Value::Bool(b)) => Addl::Bool(*b),
        Some(v) => Addl::Schema(v),
    }
}

fn addl_schema(s: &Value) -> Option<&Value> {
    match addl(s) {
        Addl::Schema(v) => Some(v),
        _ => None,
    }
}

fn has_addl(s: &Value) -> bool {
    !matches!(addl(s), Addl::Absent)
}

fn default_of(s: &Value) -> Option<&Value> {
    get(s, "default").filter(|v| !v.is_null())
}

fn f64_of(s: &Value, k: &str) -> Option<f64> {
    get(s, k).and_then(Value::as_f64)
}

fn i64_of(s: &Value, k: &str) -> Option<i64> {
    get(s, k).and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
}

/// A JSON number as the apiserver's decoder holds it: int64 when it fits, else float64.
#[derive(Clone, Copy, Debug)]
enum Num {
    I(i64),
    F(f64),
}

fn num(v: &Value) -> Option<Num> {
    let n = v.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(Num::I(i));
    }
    n.as_f64().map(Num::F)
}

fn child(path: &str, k: &str) -> String {
    if path.is_empty() { k.to_owned() } else { format!("{path}.{k}") }
}

fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

// ---------------------------------------------------------------------------
// Pruning, nulls, defaulting
// ---------------------------------------------------------------------------

/// Fields of `metav1.ObjectMeta`, and of the list items inside it.
const OBJECT_META: [&str; 15] = [
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];
const OWNER_REFERENCE: [&str; 6] = ["apiVersion", "blockOwnerDeletion", "controller", "kind", "name", "uid"];
const MANAGED_FIELDS_ENTRY: [&str; 7] =
    ["apiVersion", "fieldsType", "fieldsV1", "manager", "operation", "subresource", "time"];

/// Removes the fields the schema does not specify, as the server does on every write
/// (before defaulting and validation). At the root, and in objects marked
/// `x-kubernetes-embedded-resource`, `apiVersion`, `kind` and `metadata` are kept;
/// `metadata` is reduced to the fields of `ObjectMeta`. `x-kubernetes-preserve-unknown-fields`
/// keeps unknown fields (specified fields below are still pruned) and
/// `additionalProperties` lets any key through to its schema.
///
/// Returns the removed paths in the server's order (unknown `metadata.*` fields first,
/// then the schema's, sorted, then those in embedded resources' metadata), e.g.
/// `spec.foo`, `spec.items[0].bar`: the text of `unknown field "<path>"` warnings.
pub fn prune(obj: &mut Value, schema: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    if let Some(meta) = obj.get_mut("metadata") {
        prune_object_meta(meta, "metadata", &mut paths);
    }
    let mut pruned = Vec::new();
    prune_value(obj, Some(schema), true, "", &mut pruned);
    pruned.sort();
    paths.extend(pruned);
    coerce_embedded(obj, schema, "", &mut paths);
    paths
}

fn prune_value(x: &mut Value, s: Option<&Value>, resource_root: bool, path: &str, out: &mut Vec<String>) {
    if let Some(s) = s.filter(|s| flag(s, PRESERVE)) {
        skip_prune(x, s, resource_root, path, out);
        return;
    }
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                out.extend(map.keys().map(|k| child(path, k)));
                map.clear();
                return;
            };
            let embedded = resource_root || flag(s, EMBEDDED);
            let mut remove = Vec::new();
            for (k, v) in map.iter_mut() {
                if embedded && is_meta(k) {
                    continue;
                }
                if let Some(p) = prop(s, k) {
                    prune_value(v, Some(p), false, &child(path, k), out);
                } else if has_addl(s) {
                    prune_value(v, addl_schema(s), false, &child(path, k), out);
                } else {
                    if !is_meta(k) || !path.is_empty() {
                        out.push(child(path, k));
                    }
                    remove.push(k.clone());
                }
            }
            for k in remove {
                map.remove(&k);
            }
        }
        Value::Array(a) => {
            let item_schema = s.and_then(items);
            for (i, v) in a.iter_mut().enumerate() {
                prune_value(v, item_schema, false, &index(path, i), out);
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Value, resource_root: bool, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            let embedded = resource_root || flag(s, EMBEDDED);
            for (k, v) in map.iter_mut() {
                if embedded && is_meta(k) {
                    continue;
                }
                if let Some(p) = prop(s, k) {
                    prune_value(v, Some(p), false, &child(path, k), out);
                } else if has_addl(s) {
                    prune_value(v, addl_schema(s), false, &child(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(is) = items(s) {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(v, is, false, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

/// Drops unknown `ObjectMeta` fields (what the strict decode into `ObjectMeta` reports).
fn prune_object_meta(meta: &mut Value, prefix: &str, out: &mut Vec<String>) {
    let Some(map) = meta.as_object_mut() else {
        return;
    };
    let mut remove = Vec::new();
    for (k, v) in map.iter_mut() {
        if !OBJECT_META.contains(&k.as_str()) {
            out.push(format!("{prefix}.{k}"));
            remove.push(k.clone());
            continue;
        }
        let known: &[&str] = match k.as_str() {
            "ownerReferences" => &OWNER_REFERENCE,
            "managedFields" => &MANAGED_FIELDS_ENTRY,
            _ => continue,
        };
        let Some(entries) = v.as_array_mut() else {
            continue;
        };
        for (i, item) in entries.iter_mut().enumerate() {
            if let Some(entry) = item.as_object_mut() {
                let unknown: Vec<String> =
                    entry.keys().filter(|f| !known.contains(&f.as_str())).cloned().collect();
                for f in unknown {
                    out.push(format!("{prefix}.{k}[{i}].{f}"));
                    entry.remove(&f);
                }
            }
        }
    }
    for k in remove {
        map.remove(&k);
    }
}

/// The metadata of embedded resources below the root (`objectmeta.Coerce`).
fn coerce_embedded(x: &mut Value, s: &Value, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(map) => {
            let resource = path.is_empty() || flag(s, EMBEDDED);
            for (k, v) in map.iter_mut() {
                if resource && is_meta(k) {
                    continue;
                }
                if let Some(sub) = field_schema(s, k) {
                    visit_embedded(v, sub, &child(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(is) = items(s) {
                for (i, item) in a.iter_mut().enumerate() {
                    visit_embedded(item, is, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

fn visit_embedded(v: &mut Value, s: &Value, path: &str, out: &mut Vec<String>) {
    if flag(s, EMBEDDED)
        && let Some(meta) = v.get_mut("metadata")
    {
        prune_object_meta(meta, &child(path, "metadata"), out);
    }
    coerce_embedded(v, s, path, out);
}

fn field_schema<'a>(s: &'a Value, k: &str) -> Option<&'a Value> {
    prop(s, k).or_else(|| addl_schema(s))
}

/// Drops `null` values of fields whose schema is neither `nullable` nor has a
/// `default` (nulls with a default are left for [`apply_defaults`]). Runs after
/// [`prune`]. Fields without a schema keep their nulls.
pub fn drop_nulls(obj: &mut Value, schema: &Value) {
    drop_nulls_in(obj, Some(schema));
}

fn drop_nulls_in(x: &mut Value, s: Option<&Value>) {
    match x {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let sub = s.and_then(|s| field_schema(s, &k));
                let drop = map.get(&k).is_some_and(Value::is_null)
                    && sub.is_some_and(|ss| !flag(ss, "nullable") && default_of(ss).is_none());
                if drop {
                    map.remove(&k);
                } else if let Some(v) = map.get_mut(&k) {
                    drop_nulls_in(v, sub);
                }
            }
        }
        Value::Array(a) => {
            let sub = s.and_then(items);
            for v in a {
                drop_nulls_in(v, sub);
            }
        }
        _ => {}
    }
}

/// Applies schema `default`s as the server does after pruning: a property with a
/// default is set when it is absent (or `null` and not nullable) inside an object
/// that is present; defaulting then descends into every value, including the ones
/// just defaulted, so nested defaults apply; `null` array items and map values with a
/// non-nullable schema take the items' / `additionalProperties`' default. Default
/// values are deep-copied and pruned to their schema first.
pub fn apply_defaults(obj: &mut Value, schema: &Value) {
    default_in(obj, schema, true);
}

fn pruned_default(d: &Value, s: &Value) -> Value {
    let mut v = d.clone();
    prune_value(&mut v, Some(s), false, "", &mut Vec::new());
    v
}

fn default_in(x: &mut Value, s: &Value, resource_root: bool) {
    match x {
        Value::Object(map) => {
            let embedded = resource_root || flag(s, EMBEDDED);
            if let Some(ps) = props(s) {
                for (k, p) in ps {
                    let Some(d) = default_of(p) else { continue };
                    let missing = match map.get(k) {
                        None => true,
                        Some(Value::Null) => !flag(p, "nullable"),
                        Some(_) => false,
                    };
                    if missing {
                        let v = if embedded && is_meta(k) { d.clone() } else { pruned_default(d, p) };
                        map.insert(k.clone(), v);
                    }
                }
            }
            let a = addl_schema(s);
            for (k, v) in map.iter_mut() {
                if let Some(p) = prop(s, k) {
                    default_in(v, p, false);
                } else if let Some(a) = a {
                    if v.is_null()
                        && !flag(a, "nullable")
                        && let Some(d) = default_of(a)
                    {
                        *v = pruned_default(d, a);
                    }
                    default_in(v, a, false);
                }
            }
        }
        Value::Array(arr) => {
            let Some(is) = items(s) else { return };
            for v in arr {
                if v.is_null()
                    && !flag(is, "nullable")
                    && let Some(d) = default_of(is)
                {
                    *v = pruned_default(d, is);
                }
                default_in(v, is, false);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------
// Value validation (kube-openapi validate + apiextensions listtype)
// ---------------------------------------------------------------------------

/// Validates a pruned and defaulted custom resource against its schema, returning the
/// causes in the server's order: the OpenAPI schema errors (type, required, enum,
/// bounds, lengths, pattern, items, properties, format, nullable, allOf/anyOf/oneOf/not,
/// `additionalProperties` schemas), then the `x-kubernetes-list-type` `set` / `map`
/// uniqueness errors. Object properties are visited in sorted order (Go visits them
/// in map order).
#[must_use]
pub fn validate(obj: &Value, schema: &Value) -> Vec<Cause> {
    let v = Validator { base: None };
    let mut out = Res::default();
    v.node(obj, schema, "", None, &mut out);
    let mut causes = out.causes;
    if let Some(m) = obj.as_object() {
        list_sets_and_maps(None, schema, m, &mut causes);
    }
    causes
}

/// Validates an update like [`validate`], with the server's ratcheting (on by default
/// since 1.30, GA in 1.33): schema errors inside any value equal to its correlated old
/// value are dropped. Values correlate through object keys, `additionalProperties` keys
/// and `x-kubernetes-list-type: map` keys, never through other list items; so an
/// unchanged `spec` keeps an object that became invalid under a tightened schema
/// writable. List-type uniqueness errors are reported only when `old` had none.
#[must_use]
pub fn validate_update(new: &Value, old: &Value, schema: &Value) -> Vec<Cause> {
    let v = Validator { base: None };
    let mut out = Res::default();
    v.node(new, schema, "", Some(old), &mut out);
    let mut causes = out.causes;
    if let Some(m) = new.as_object() {
        let mut list_errs = Vec::new();
        list_sets_and_maps(None, schema, m, &mut list_errs);
        if !list_errs.is_empty() {
            let mut old_errs = Vec::new();
            if let Some(o) = old.as_object() {
                list_sets_and_maps(None, schema, o, &mut old_errs);
            }
            if old_errs.is_empty() {
                causes.extend(list_errs);
            }
        }
    }
    causes
}

/// The old item of a `x-kubernetes-list-type: map` list with the same keys as `item`.
fn correlate_item<'a>(s: &Value, item: &Value, old: Option<&'a Value>) -> Option<&'a Value> {
    if s_str(s, LIST_TYPE) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = list(s, LIST_MAP_KEYS).iter().filter_map(Value::as_str).collect();
    let key_of = |v: &Value| keys.iter().map(|k| get(v, k).cloned()).collect::<Vec<_>>();
    let wanted = key_of(item);
    old?.as_array()?.iter().find(|o| o.is_object() && key_of(o) == wanted)
}

#[derive(Default)]
struct Res {
    causes: Vec<Cause>,
    /// kube-openapi's MatchCount: how many checks ran (picks anyOf/oneOf's best failure).
    count: usize,
}

impl Res {
    fn merge(&mut self, other: Res) {
        self.causes.extend(other.causes);
        self.count += other.count;
    }
}

/// A kube-openapi `SchemaValidator` rooted at a field path (`None` for a whole object).
struct Validator<'a> {
    base: Option<&'a str>,
}

const SUPPORTED_FORMATS: [&str; 25] = [
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
fn effective_format(s: &Value) -> &str {
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

fn schema_types(s: &Value) -> Vec<&str> {
    if flag(s, INT_OR_STRING) {
        return vec!["integer", "string"];
    }
    match s_type(s) {
        "" => vec![],
        t => vec![t],
    }
}

/// Go's `swag.IsFloat64AJSONInteger`.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f == f.trunc() {
        return true;
    }
    let g = f.trunc();
    if f < 0.0 || g == 0.0 {
        return false;
    }
    (f - g).abs() / (f.abs() + g.abs()) < 1e-9
}

impl Validator<'_> {
    /// The field of an error whose kube-openapi name is `name`.
    fn field(&self, name: &str) -> String {
        let n = name.strip_prefix('.').unwrap_or(name);
        match (n.is_empty() || name == ".", self.base) {
            (true, Some(b)) => b.to_owned(),
            (true, None) => "<nil>".to_owned(),
            (false, Some(b)) => format!("{b}.{n}"),
            (false, None) => n.to_owned(),
        }
    }

    /// A composite (allOf/anyOf/oneOf/not) error, reported at the validator's root.
    fn composite(&self, msg: String) -> Cause {
        invalid(&self.field(""), Bad::Str(String::new()), &msg)
    }

    /// Validates `x` at `path`; with ratcheting, a node equal to its correlated `old`
    /// value drops its errors (and its descendants').
    fn node(&self, x: &Value, s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        let mut r = Res::default();
        self.node_checks(x, s, path, old, &mut r);
        if old == Some(x) {
            r.causes.clear();
        }
        out.merge(r);
    }

    fn node_checks(&self, x: &Value, s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        let types = schema_types(s);
        let format = effective_format(s);
        if x.is_null() {
            if !types.is_empty() && !flag(s, "nullable") {
                let t = types.join(",");
                let msg = format!("{path} in body must be of type {t}: \"null\"");
                out.causes.push(type_invalid(&self.field(path), Bad::Str("null".into()), &msg));
            }
            self.check_enum(x, s, path, out);
            out.count += 1;
            return;
        }
        if !types.is_empty() || !format.is_empty() {
            self.check_type(x, &types, format, path, out);
            out.count += 1;
        }
        self.check_junctors(x, s, path, old, out);
        out.count += 1;
        if let Value::String(st) = x {
            self.check_string(st, s, path, out);
            out.count += 1;
            if SUPPORTED_FORMATS.contains(&format.replace('-', "").as_str()) {
                if !format_ok(&format.replace('-', ""), st) {
                    let msg = format!("{path} in body must be of type {format}: {}", go_quote(st));
                    out.causes.push(type_invalid(&self.field(path), Bad::Str(st.clone()), &msg));
                }
                out.count += 1;
            }
        }
        if let Some(n) = num(x) {
            self.check_number(n, s, path, out);
            out.count += 1;
        }
        if let Value::Array(a) = x {
            self.check_array(a, s, path, old, out);
            out.count += 1;
        }
        self.check_enum(x, s, path, out);
        out.count += 1;
        if let Value::Object(m) = x {
            self.check_object(m, s, path, old, out);
            out.count += 1;
        }
        out.count += 1;
    }

    fn type_error(&self, path: &str, type_name: &str, value: &str, out: &mut Res) {
        let msg = format!("{path} in body must be of type {type_name}: {}", go_quote(value));
        out.causes.push(type_invalid(&self.field(path), Bad::Str(value.to_owned()), &msg));
    }

    fn check_type(&self, x: &Value, types: &[&str], format: &str, path: &str, out: &mut Res) {
        let (sch, fmt, str_or_slice) = match x {
            Value::Bool(_) => ("boolean", "", false),
            Value::String(_) => ("string", "", true),
            Value::Array(_) => ("array", "", true),
            Value::Object(_) => ("object", "", false),
            _ => match num(x) {
                Some(Num::I(_)) => ("integer", "int64", false),
                _ => ("number", "float64", false),
            },
        };
        let has = |t: &str| types.contains(&t);
        let float_int = sch == "number" && x.as_f64().is_some_and(is_json_integer) && has("integer");
        let int_float = sch == "integer" && has("number");
        if !(str_or_slice || format.is_empty() || has(sch) || fmt == format || float_int || int_float) {
            self.type_error(path, format, fmt, out);
            return;
        }
        if str_or_slice && !(has("number") || has("integer") || format.is_empty()) {
            return;
        }
        if !(has(sch) || float_int || int_float) {
            self.type_error(path, &types.join(","), sch, out);
        }
    }

    fn check_junctors(&self, x: &Value, s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        let any_of = list(s, "anyOf");
        if !any_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut success: Option<Res> = None;
            for sub in any_of {
                let mut r = Res::default();
                self.node(x, sub, path, old, &mut r);
                if r.causes.is_empty() {
                    success = Some(r);
                    best = None;
                    break;
                }
                if best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if success.is_none() {
                let msg = format!("{} must validate at least one schema (anyOf)", go_quote(path));
                out.causes.push(self.composite(msg));
            }
            if let Some(r) = best.or(success) {
                out.merge(r);
            }
        }
        let one_of = list(s, "oneOf");
        if !one_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            let mut valid = 0;
            for sub in one_of {
                let mut r = Res::default();
                self.node(x, sub, path, old, &mut r);
                if r.causes.is_empty() {
                    valid += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(r);
                    }
                    continue;
                }
                if valid == 0 && best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if valid != 1 {
                let extra = if valid == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                let msg =
                    format!("{} must validate one and only one schema (oneOf). {extra}", go_quote(path));
                out.causes.push(self.composite(msg));
                if let Some(b) = best {
                    out.merge(b);
                }
            } else if let Some(r) = first_success {
                out.merge(r);
            }
        }
        let all_of = list(s, "allOf");
        if !all_of.is_empty() {
            let mut valid = 0;
            for sub in all_of {
                let mut r = Res::default();
                self.node(x, sub, path, old, &mut r);
                if r.causes.is_empty() {
                    valid += 1;
                }
                out.merge(r);
            }
            if valid != all_of.len() {
                let extra = if valid == 0 { ". None validated" } else { "" };
                let msg = format!("{} must validate all the schemas (allOf){extra}", go_quote(path));
                out.causes.push(self.composite(msg));
            }
        }
        if let Some(not) = get(s, "not").filter(|v| v.is_object()) {
            let mut r = Res::default();
            self.node(x, not, path, old, &mut r);
            if r.causes.is_empty() {
                let msg = format!("{} must not validate the schema (not)", go_quote(path));
                out.causes.push(self.composite(msg));
            }
        }
    }

    fn check_string(&self, st: &str, s: &Value, path: &str, out: &mut Res) {
        let len = i64::try_from(st.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = i64_of(s, "maxLength")
            && len > max
        {
            out.causes.push(too_long(&self.field(path), max));
            return;
        }
        if let Some(min) = i64_of(s, "minLength")
            && len < min
        {
            let msg = format!("{path} in body should be at least {min} chars long");
            out.causes.push(invalid(&self.field(path), Bad::Str(st.to_owned()), &msg));
            return;
        }
        if let Some(p) = s_str(s, "pattern").filter(|p| !p.is_empty()) {
            let shown = match with_regex(p, |re| re.is_match(st)) {
                Ok(true) => return,
                Ok(false) => p.to_owned(),
                Err(e) => format!("{p}, but pattern is invalid: {e}"),
            };
            let msg = format!("{path} in body should match '{shown}'");
            out.causes.push(invalid(&self.field(path), Bad::Str(st.to_owned()), &msg));
        }
    }

    fn check_number(&self, n: Num, s: &Value, path: &str, out: &mut Res) {
        let field = self.field(path);
        let bad = || match n {
            Num::I(i) => Bad::Int(i),
            Num::F(f) => Bad::Float(f),
        };
        if let Some(factor) = f64_of(s, "multipleOf") {
            let failed = if factor < 0.0 {
                Some(format!("factor MultipleOf declared for {path} must be positive: {}", go_float(factor)))
            } else {
                match n {
                    // Integer data is checked against the truncated factor.
                    Num::I(i) if factor as i64 != 0 => {
                        let fi = factor as i64;
                        (i % fi != 0).then(|| format!("{path} in body should be a multiple of {fi}"))
                    }
                    _ => {
                        let d = match n {
                            Num::I(i) => i as f64,
                            Num::F(f) => f,
                        };
                        let mult = if factor < 1.0 { 1.0 / factor * d } else { d / factor };
                        (!is_json_integer(mult))
                            .then(|| format!("{path} in body should be a multiple of {}", go_float(factor)))
                    }
                }
            };
            if let Some(msg) = failed {
                out.causes.push(invalid(&field, bad(), &msg));
            }
        }
        for (kw, excl_kw, is_min) in
            [("minimum", "exclusiveMinimum", true), ("maximum", "exclusiveMaximum", false)]
        {
            let Some(bound) = f64_of(s, kw) else { continue };
            let excl = flag(s, excl_kw);
            // Integer data is compared with the bound truncated to an integer.
            let (fails, shown) = match n {
                Num::I(i) => {
                    let b = bound as i64;
                    let fails = if is_min { i < b || excl && i == b } else { i > b || excl && i == b };
                    (fails, b.to_string())
                }
                Num::F(f) => {
                    let fails = if is_min {
                        f < bound || excl && f == bound
                    } else {
                        f > bound || excl && f == bound
                    };
                    (fails, go_float(bound))
                }
            };
            if fails {
                let rel = match (is_min, excl) {
                    (true, false) => "greater than or equal to",
                    (true, true) => "greater than",
                    (false, false) => "less than or equal to",
                    (false, true) => "less than",
                };
                let msg = format!("{path} in body should be {rel} {shown}");
                out.causes.push(invalid(&field, bad(), &msg));
            }
        }
    }

    fn check_array(&self, a: &[Value], s: &Value, path: &str, old: Option<&Value>, out: &mut Res) {
        if let Some(is) = items(s) {
            for (i, v) in a.iter().enumerate() {
                let mut r = Res::default();
                self.node(v, is, &index(path, i), correlate_item(s, v, old), &mut r);
                out.merge(r);
            }
        }
        let size = i64::try_from(a.len()).unwrap_or(i64::MAX);
        if let Some(min) = i64_of(s, "minItems")
            && size < min
        {
            let msg = format!("{path} in body should have at least {min} items");
            out.causes.push(invalid(&self.field(path), Bad::Int(size), &msg));
        }
        if let Some(max) = i64_of(s, "maxItems")
            && size > max
        {
            out.causes.push(too_many(&self.field(path), size, max));
        }
        if flag(s, "uniqueItems") && a.iter().enumerate().any(|(i, v)| a[..i].contains(v)) {
            let msg = format!("{path} in body shouldn't contain duplicates");
            out.causes.push(invalid(&self.field(path), Bad::Str(String::new()), &msg));
        }
    }

    fn check_enum(&self, x: &Value, s: &Value, path: &str, out: &mut Res) {
        let values = list(s, "enum");
        if values.is_empty() || values.iter().any(|e| enum_matches(x, e)) {
            return;
        }
        let shown: Vec<String> = values
            .iter()
            .map(|e| match e {
                Value::String(st) => st.clone(),
                other => go_json(other),
            })
            .collect();
        out.causes.push(not_supported(&self.field(path), Bad::of(x), &shown));
    }

    fn check_object(
        &self,
        m: &Map<String, Value>,
        s: &Value,
        path: &str,
        old: Option<&Value>,
        out: &mut Res,
    ) {
        let old_at = |k: &str| old.and_then(|o| o.get(k));
        let n = i64::try_from(m.len()).unwrap_or(i64::MAX);
        if let Some(min) = i64_of(s, "minProperties")
            && n < min
        {
            let msg = format!("{path} in body should have at least {min} properties");
            out.causes.push(invalid(&self.field(path), Bad::Int(n), &msg));
            return;
        }
        if let Some(max) = i64_of(s, "maxProperties")
            && n > max
        {
            out.causes.push(too_many(&self.field(path), n, max));
            return;
        }
        match addl(s) {
            Addl::Bool(false) => {
                for k in m.keys().filter(|k| prop(s, k).is_none()) {
                    let msg = format!("{path}.{k} in body is a forbidden property");
                    out.causes.push(invalid(&self.field(path), Bad::Str(k.clone()), &msg));
                }
            }
            Addl::Schema(a) => {
                for (k, v) in m.iter().filter(|(k, _)| prop(s, k).is_none()) {
                    let mut r = Res::default();
                    self.node(v, a, &format!("{path}.{k}"), old_at(k), &mut r);
                    out.merge(r);
                }
            }
            _ => {}
        }
        if let Some(ps) = props(s) {
            for (k, p) in ps {
                if let Some(v) = m.get(k) {
                    let mut r = Res::default();
                    self.node(v, p, &child(path, k), old_at(k), &mut r);
                    out.merge(r);
                }
            }
        }
        for k in list(s, "required").iter().filter_map(Value::as_str) {
            if !m.contains_key(k) {
                out.causes.push(required(&self.field(&format!("{path}.{k}")), ""));
            }
        }
    }
}

/// kube-openapi's enum match: equal after converting the data to the enum value's type.
fn enum_matches(x: &Value, e: &Value) -> bool {
    match (num(x), num(e)) {
        (Some(Num::I(a)), Some(Num::I(b))) => a == b,
        (Some(Num::F(a)), Some(Num::I(b))) => a as i64 == b,
        (Some(Num::I(a)), Some(Num::F(b))) => a as f64 == b,
        (Some(Num::F(a)), Some(Num::F(b))) => a == b,
        (Some(Num::I(a)), None) => match e {
            // Go converts an integer to the string of that code point.
            Value::String(st) => {
                let c = u32::try_from(a).ok().and_then(char::from_u32).unwrap_or('\u{FFFD}');
                st.chars().eq(std::iter::once(c))
            }
            _ => false,
        },
        _ => !x.is_null() && !e.is_null() && x == e,
    }
}

// --- x-kubernetes-list-type -------------------------------------------------

fn list_sets_and_maps(path: Option<&str>, s: &Value, obj: &Map<String, Value>, out: &mut Vec<Cause>) {
    if let Some(a) = addl_schema(s) {
        for (k, v) in obj {
            list_sets_and_maps_value(&key(path.unwrap_or(""), k), a, v, out);
        }
    }
    if let Some(ps) = props(s) {
        for (k, v) in obj {
            if let Some(p) = ps.get(k) {
                let f = path.map_or_else(|| k.clone(), |p| child(p, k));
                list_sets_and_maps_value(&f, p, v, out);
            }
        }
    }
}

fn list_sets_and_maps_value(path: &str, s: &Value, v: &Value, out: &mut Vec<Cause>) {
    match v {
        Value::Array(a) => {
            match s_str(s, LIST_TYPE) {
                Some("set") => {
                    for i in non_unique(a.iter().map(scalar_key)) {
                        out.push(duplicate(&index(path, i), Bad::of(&a[i])));
                    }
                }
                Some("map") => list_map(path, s, a, out),
                _ => {}
            }
            if let Some(is) = items(s) {
                for (i, item) in a.iter().enumerate() {
                    list_sets_and_maps_value(&index(path, i), is, item, out);
                }
            }
        }
        Value::Object(m) => list_sets_and_maps(Some(path), s, m, out),
        _ => {}
    }
}

/// A key with Go's equality for unstructured values (int64 1 != float64 1).
fn scalar_key(v: &Value) -> String {
    match v {
        Value::Null => "n".into(),
        Value::Bool(b) => format!("b{b}"),
        Value::String(s) => format!("s{s}"),
        Value::Number(_) => match num(v) {
            Some(Num::I(i)) => format!("i{i}"),
            Some(Num::F(f)) => format!("f{}", if f == 0.0 { 0.0 } else { f }),
            None => format!("?{v}"),
        },
        _ => format!("c{}", go_json(v)),
    }
}

/// Indices of the second appearance of each repeated key.
fn non_unique(keys: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.enumerate() {
        let n = seen.entry(k).or_insert(0);
        *n += 1;
        if *n == 2 {
            out.push(i);
        }
    }
    out
}

fn list_map(path: &str, s: &Value, a: &[Value], out: &mut Vec<Cause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(invalid(&index(path, i), Bad::of(x), "must be an object for an array of list-type map"));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let keys: Vec<&str> = list(s, LIST_MAP_KEYS).iter().filter_map(Value::as_str).collect();
    let key_maps: Vec<Map<String, Value>> = a
        .iter()
        .map(|x| {
            keys.iter()
                .filter_map(|k| Some(((*k).to_owned(), get(x, k)?.clone())))
                .collect::<Map<String, Value>>()
        })
        .collect();
    let ids = key_maps.iter().map(|m| {
        if keys.len() == 1 {
            m.values().next().map_or_else(|| "unspecified".to_owned(), scalar_key)
        } else {
            go_json(&Value::Object(m.clone()))
        }
    });
    for i in non_unique(ids) {
        out.push(duplicate(&index(path, i), Bad::Data(Value::Object(key_maps[i].clone()))));
    }
}

// --- formats ----------------------------------------------------------------

/// Checks a string against a (normalized) format; formats not implemented here pass.
fn format_ok(format: &str, s: &str) -> bool {
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

fn uuid_ok(s: &str, version: Option<char>) -> bool {
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

fn cidr_ok(s: &str) -> bool {
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

fn mac_ok(s: &str) -> bool {
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
fn hostname_ok(s: &str) -> bool {
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

fn date_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| s.get(r).filter(|p| p.bytes().all(|c| c.is_ascii_digit()));
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let (y, m, d): (u32, u32, u32) = (y.parse().unwrap_or(0), m.parse().unwrap_or(0), d.parse().unwrap_or(0));
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// strfmt's date-time: a date, a `t`, `hh:mm:ss`, an optional fraction, and `z` or an
/// offset (case-insensitive).
fn datetime_ok(s: &str) -> bool {
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

fn base64_ok(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let body = b.len() - b.iter().rev().take_while(|c| **c == b'=').count();
    b.len() - body <= 2 && b[..body].iter().all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

// --- patterns (Go RE2 syntax) -------------------------------------------------

thread_local! {
    static REGEXES: RefCell<HashMap<String, Result<Regex, String>>> = RefCell::new(HashMap::new());
}

/// Runs `f` with the pattern compiled with Go's semantics, or returns Go's parse error.
fn with_regex<T>(pattern: &str, f: impl FnOnce(&Regex) -> T) -> Result<T, String> {
    REGEXES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let entry = cache.entry(pattern.to_owned()).or_insert_with(|| compile_go_regex(pattern));
        match entry {
            Ok(re) => Ok(f(re)),
            Err(e) => Err(e.clone()),
        }
    })
}

/// Go's ASCII-only Perl classes as bracket classes (nested inside a class).
fn perl_class(c: char) -> Option<&'static str> {
    Some(match c {
        'd' => "[0-9]",
        'D' => "[^0-9]",
        'w' => "[0-9A-Za-z_]",
        'W' => "[^0-9A-Za-z_]",
        's' => "[\\t\\n\\x0C\\r ]",
        'S' => "[^\\t\\n\\x0C\\r ]",
        _ => return None,
    })
}

/// Rewrites a Go (RE2) pattern for the regex crate: Go's `\d`, `\w`, `\s` and `\b` are
/// ASCII-only, and a `[`, `&&` or `~~` inside a class is literal in Go.
fn go_to_rust_pattern(p: &str) -> String {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 16);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            match chars.get(i + 1) {
                None => out.push('\\'),
                Some(&n) => match (n, perl_class(n)) {
                    ('b' | 'B', _) if !in_class => out.push_str(&format!("(?-u:\\{n})")),
                    (_, Some(class)) => out.push_str(class),
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                },
            }
            i += 2;
            continue;
        }
        if !in_class && c == '[' {
            in_class = true;
            out.push('[');
            i += 1;
            if chars.get(i) == Some(&'^') {
                out.push('^');
                i += 1;
            }
            if chars.get(i) == Some(&']') {
                out.push_str("\\]");
                i += 1;
            }
            continue;
        }
        if in_class {
            match c {
                '[' if chars.get(i + 1) == Some(&':') => {
                    let rest: String = chars[i..].iter().collect();
                    let len = rest.find(":]").map_or(rest.len(), |e| e + 2);
                    out.push_str(&rest[..len]);
                    i += rest[..len].chars().count();
                    continue;
                }
                '[' | '&' | '~' => out.push('\\'),
                ']' => in_class = false,
                _ => {}
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

fn compile_go_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(&go_to_rust_pattern(pattern)).map_err(|e| {
        let text = e.to_string();
        let (code, frag) = if text.contains("unclosed group") {
            ("missing closing )", pattern.to_owned())
        } else if text.contains("unopened group") {
            ("unexpected )", pattern.to_owned())
        } else if text.contains("unclosed character class") {
            ("missing closing ]", pattern.find('[').map_or(pattern, |i| &pattern[i..]).to_owned())
        } else if text.contains("repetition operator missing expression") {
            ("missing argument to repetition operator", pattern.to_owned())
        } else if text.contains("escape sequence") {
            ("invalid escape sequence", pattern.to_owned())
        } else if text.contains("repetition") {
            ("invalid repeat count", pattern.to_owned())
        } else {
            ("invalid regular expression", pattern.to_owned())
        };
        format!("error parsing regexp: {code}: `{frag}`")
    })
}

// ---------------------------------------------------------------------------
// CRD-time schema checks
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// The schema errors of one CRD version's `openAPIV3Schema`, as the server reports them
/// on a CRD create/update, with fields below `base` (e.g.
/// `spec.versions[0].schema.openAPIV3Schema`). Order as the server's: `nullable` at the
/// root; then the structural-schema errors (missing `type`s, `additionalProperties` at
/// the root, embedded-resource and metadata rules, junctor rules, invalid patterns,
/// completeness) sorted by text, or — when the schema is structural — the `default`
/// errors (defaults must validate and have no unknown fields); then the OpenAPI rules
/// (valid `type`s, unsupported keywords, `uniqueItems`, `properties` with
/// `additionalProperties`, defaults in top-level metadata, list/map-type rules).
/// `x-kubernetes-validations` (CEL) rules are not checked.
#[must_use]
pub fn check_structural(schema: &Value, base: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if flag(schema, "nullable") {
        errs.push(forbidden(&child(base, "nullable"), "nullable cannot be true at the root"));
    }
    if !has_unsupported(schema) {
        let mut structural = Vec::new();
        invariants(schema, Level::Root, base, &mut structural);
        vv_completeness(schema, schema, base, base, &mut structural);
        structural.sort_by_cached_key(Cause::error_string);
        if structural.is_empty() {
            defaults_check(schema, base, true, &mut errs);
        } else {
            errs.extend(structural);
        }
    }
    openapi_check(schema, base, &Ssv::default(), true, &mut errs);
    errs
}

/// Keywords `NewStructural` refuses (then only the OpenAPI errors are shown).
fn has_unsupported(s: &Value) -> bool {
    let Some(m) = s.as_object() else { return false };
    if m.get("id").and_then(Value::as_str).is_some_and(|v| !v.is_empty())
        || m.get("$schema").and_then(Value::as_str).is_some_and(|v| !v.is_empty())
        || m.get("$ref").is_some_and(|v| !v.is_null())
        || m.get("additionalItems").is_some_and(|v| !v.is_null())
        || m.get("items").is_some_and(Value::is_array)
        || ["definitions", "patternProperties", "dependencies"]
            .iter()
            .any(|k| m.get(*k).and_then(Value::as_object).is_some_and(|o| !o.is_empty()))
    {
        return true;
    }
    let mut subs: Vec<&Value> = Vec::new();
    subs.extend(props(s).into_iter().flat_map(|p| p.values()));
    subs.extend(items(s));
    subs.extend(addl_schema(s));
    subs.extend(get(s, "not"));
    for k in ["allOf", "anyOf", "oneOf"] {
        subs.extend(list(s, k));
    }
    subs.into_iter().any(has_unsupported)
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// `anyOf: [{type: integer}, {type: string}]`, exactly.
fn is_int_or_string_any_of(any_of: &[Value]) -> bool {
    let only_type = |v: &Value, t: &str| {
        v.as_object().is_some_and(|o| o.iter().all(|(k, v)| if k == "type" { v == t } else { is_zero(v) }))
    };
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

fn invariants(s: &Value, lvl: Level, path: &str, out: &mut Vec<Cause>) {
    let t = s_type(s);
    if t == "array" && items(s).is_none() {
        out.push(required(&child(path, "items"), "must be specified"));
    }
    if let Some(is) = items(s) {
        invariants(is, Level::Item, &child(path, "items"), out);
    }
    for (k, p) in props(s).into_iter().flatten() {
        invariants(p, Level::Field, &key(&child(path, "properties"), k), out);
    }
    if has_addl(s) {
        if lvl == Level::Root {
            out.push(forbidden(&child(path, "additionalProperties"), "must not be used at the root"));
        }
        if let Some(a) = addl_schema(s) {
            invariants(a, Level::Field, &child(path, "additionalProperties"), out);
        }
    }
    let (ios, pres, emb) = (flag(s, INT_OR_STRING), flag(s, PRESERVE), flag(s, EMBEDDED));
    if ios && pres {
        let msg = "must be false if x-kubernetes-int-or-string is true";
        out.push(invalid(&child(path, PRESERVE), Bad::Bool(true), msg));
    }
    if ios && emb {
        let msg = "must be false if x-kubernetes-int-or-string is true";
        out.push(invalid(&child(path, EMBEDDED), Bad::Bool(true), msg));
    }
    let skip_any = is_int_or_string_any_of(list(s, "anyOf"));
    let skip_first_all = list(s, "allOf").first().is_some_and(|a| is_int_or_string_any_of(list(a, "anyOf")));
    value_validation(s, skip_any, skip_first_all, lvl, path, out);

    let check_meta = lvl == Level::Root || emb;
    if emb && t != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if t.is_empty() {
            out.push(required(&child(path, "type"), msg));
        } else {
            out.push(invalid(&child(path, "type"), Bad::Str(t.into()), msg));
        }
    } else if t.is_empty() && !ios && !pres {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(required(&child(path, "type"), msg));
    }
    if emb && has_addl(s) {
        let msg = "must not be used if x-kubernetes-embedded-resource is set";
        out.push(forbidden(&child(path, "additionalProperties"), msg));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        out.push(invalid(&child(path, "type"), Bad::Str(t.into()), "must be object at the root"));
    }
    for k in ["kind", "apiVersion"] {
        if let Some(p) = prop(s, k).filter(|_| check_meta)
            && s_type(p) != "string"
        {
            let f = child(&key(&child(path, "properties"), k), "type");
            out.push(invalid(&f, Bad::Str(s_type(p).into()), "must be string"));
        }
    }
    if let Some(m) = prop(s, "metadata") {
        let f = key(&child(path, "properties"), "metadata");
        if check_meta && s_type(m) != "object" {
            out.push(invalid(&child(&f, "type"), Bad::Str(s_type(m).into()), "must be object"));
        }
        if lvl == Level::Root && !metadata_only_names(m) {
            let msg = "must not specify anything other than name and generateName, but metadata is implicitly specified";
            out.push(forbidden(&f, msg));
        }
    }
    if emb && !pres && props(s).is_none_or(Map::is_empty) {
        let msg = "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields";
        out.push(required(&child(path, "properties"), msg));
    }
}

/// Whether a root `metadata` schema restricts only `name` / `generateName`.
fn metadata_only_names(m: &Value) -> bool {
    let Some(o) = m.as_object() else { return true };
    const IGNORED: [&str; 5] = ["type", "default", "example", "externalDocs", "$schema"];
    o.iter().all(|(k, v)| match k.as_str() {
        k if IGNORED.contains(&k) => true,
        "properties" => v.as_object().is_none_or(|ps| {
            let names = ps.keys().all(|k| k == "name" || k == "generateName");
            ps.is_empty() || names && ps.len() <= 2
        }),
        _ => is_zero(v),
    })
}

fn value_validation(
    s: &Value,
    skip_any: bool,
    skip_first_all: bool,
    lvl: Level,
    path: &str,
    out: &mut Vec<Cause>,
) {
    if !skip_any {
        for (i, a) in list(s, "anyOf").iter().enumerate() {
            nested_vv(a, false, lvl, &index(&child(path, "anyOf"), i), out);
        }
    }
    for (i, a) in list(s, "allOf").iter().enumerate() {
        nested_vv(a, skip_first_all && i == 0, lvl, &index(&child(path, "allOf"), i), out);
    }
    for (i, a) in list(s, "oneOf").iter().enumerate() {
        nested_vv(a, false, lvl, &index(&child(path, "oneOf"), i), out);
    }
    if let Some(n) = get(s, "not").filter(|v| v.is_object()) {
        nested_vv(n, false, lvl, &child(path, "not"), out);
    }
    if let Some(p) = s_str(s, "pattern").filter(|p| !p.is_empty())
        && let Err(e) = with_regex(p, |_| ())
    {
        let msg = format!("must be a valid regular expression, but isn't: {e}");
        out.push(invalid(&child(path, "pattern"), Bad::Str(p.into()), &msg));
    }
}

fn nested_vv(v: &Value, skip_any: bool, lvl: Level, path: &str, out: &mut Vec<Cause>) {
    value_validation(v, skip_any, false, lvl, path, out);
    if let Some(is) = items(v) {
        nested_vv(is, false, lvl, &child(path, "items"), out);
    }
    for (k, p) in props(v).into_iter().flatten() {
        nested_vv(p, false, Level::Field, &key(&child(path, "properties"), k), out);
    }
    let f = |k: &str| child(path, k);
    if !s_type(v).is_empty() {
        out.push(forbidden(&f("type"), "must be empty to be structural"));
    }
    if has_addl(v) {
        out.push(forbidden(&f("additionalProperties"), "must be undefined to be structural"));
    }
    if default_of(v).is_some() {
        out.push(forbidden(&f("default"), "must be undefined to be structural"));
    }
    for k in ["title", "description"] {
        if s_str(v, k).is_some_and(|t| !t.is_empty()) {
            out.push(forbidden(&f(k), "must be empty to be structural"));
        }
    }
    for k in ["nullable", PRESERVE, EMBEDDED, INT_OR_STRING] {
        if flag(v, k) {
            out.push(forbidden(&f(k), "must be false to be structural"));
        }
    }
    if !list(v, LIST_MAP_KEYS).is_empty() {
        out.push(forbidden(&f(LIST_MAP_KEYS), "must be empty to be structural"));
    }
    for k in [LIST_TYPE, MAP_TYPE] {
        if get(v, k).is_some_and(|x| !x.is_null()) {
            out.push(forbidden(&f(k), "must be undefined to be structural"));
        }
    }
    if !list(v, "x-kubernetes-validations").is_empty() {
        out.push(forbidden(&f("x-kubernetes-validations"), "must be empty to be structural"));
    }
    if prop(v, "metadata").is_some() {
        let msg = "must not be specified in a nested context";
        out.push(forbidden(&key(&f("properties"), "metadata"), msg));
    }
}

/// Specifications in allOf/anyOf/oneOf/not must also exist outside of them (checked for
/// the root's junctors and everything nested in them, as the server does).
fn vv_completeness(v: &Value, s: &Value, spath: &str, vpath: &str, out: &mut Vec<Cause>) {
    if let Some(n) = get(v, "not").filter(|n| n.is_object()) {
        nested_completeness(n, Some(s), spath, &child(vpath, "not"), out);
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        for (i, a) in list(v, k).iter().enumerate() {
            nested_completeness(a, Some(s), spath, &index(&child(vpath, k), i), out);
        }
    }
}

fn nested_completeness(v: &Value, s: Option<&Value>, spath: &str, vpath: &str, out: &mut Vec<Cause>) {
    let Some(s) = s else {
        out.push(required(spath, &format!("because it is defined in {vpath}")));
        return;
    };
    vv_completeness(v, s, spath, vpath, out);
    if let Some(vi) = items(v) {
        nested_completeness(vi, items(s), &child(spath, "items"), &child(vpath, "items"), out);
    }
    for (k, vf) in props(v).into_iter().flatten() {
        let sp = key(&child(spath, "properties"), k);
        let vp = key(&child(vpath, "properties"), k);
        match prop(s, k) {
            Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, out),
            None => out.push(required(&sp, &format!("because it is defined in {vp}"))),
        }
    }
}

/// Defaults must be pruned and must validate against their schema.
fn defaults_check(s: &Value, path: &str, resource_root: bool, out: &mut Vec<Cause>) {
    if let Some(d) = default_of(s) {
        let f = child(path, "default");
        let mut pruned = d.clone();
        prune_value(&mut pruned, Some(s), resource_root, "", &mut Vec::new());
        if &pruned != d {
            out.push(invalid(&f, Bad::of(d), "must not have unknown fields"));
        }
        let v = Validator { base: Some(&f) };
        let mut r = Res::default();
        v.node(d, s, "", None, &mut r);
        out.extend(r.causes);
    }
    if let Some(is) = items(s) {
        defaults_check(is, &child(path, "items"), false, out);
    }
    for (k, p) in props(s).into_iter().flatten() {
        defaults_check(p, &key(&child(path, "properties"), k), false, out);
    }
}

/// The state of the server's `specStandardValidatorV3`.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
}

impl Default for Ssv {
    fn default() -> Self {
        Ssv { allow_defaults: true, disallow_reason: String::new(), inside_meta: false }
    }
}

impl Ssv {
    fn forbid_defaults(&self, reason: String) -> Ssv {
        Ssv { allow_defaults: false, disallow_reason: reason, ..self.clone() }
    }
}

fn openapi_check(s: &Value, path: &str, ssv: &Ssv, is_root: bool, out: &mut Vec<Cause>) {
    let f = |k: &str| child(path, k);
    let t = s_type(s);
    let emb = flag(s, EMBEDDED);
    // specStandardValidatorV3.validate
    if !t.is_empty() && !OPENAPI_TYPES.contains(&t) {
        let valid: Vec<String> = OPENAPI_TYPES.iter().map(|v| (*v).to_owned()).collect();
        out.push(not_supported(&f("type"), Bad::Str(t.into()), &valid));
    }
    if default_of(s).is_some() && !ssv.allow_defaults {
        let mut detail = "must not be set".to_owned();
        if !ssv.disallow_reason.is_empty() {
            detail = format!("{detail} {}", ssv.disallow_reason);
        }
        out.push(forbidden(&f("default"), &detail));
    }
    if s_str(s, "id").is_some_and(|v| !v.is_empty()) {
        out.push(forbidden(&f("id"), "id is not supported"));
    }
    if get(s, "additionalItems").is_some_and(|v| !v.is_null()) {
        out.push(forbidden(&f("additionalItems"), "additionalItems is not supported"));
    }
    for k in ["patternProperties", "definitions"] {
        if get(s, k).and_then(Value::as_object).is_some_and(|o| !o.is_empty()) {
            out.push(forbidden(&f(k), &format!("{k} is not supported")));
        }
    }
    if get(s, "dependencies").is_some_and(|v| !v.is_null()) {
        out.push(forbidden(&f("dependencies"), "dependencies is not supported"));
    }
    if get(s, "$ref").is_some_and(|v| !v.is_null()) {
        out.push(forbidden(&f("$ref"), "$ref is not supported"));
    }
    if t == "null" {
        out.push(forbidden(&f("type"), "type cannot be set to null, use nullable as an alternative"));
    }
    if get(s, "items").and_then(Value::as_array).is_some_and(|a| !a.is_empty()) {
        out.push(forbidden(&f("items"), "items must be a schema object and not an array"));
    }
    if ssv.inside_meta && emb {
        out.push(forbidden(&f(EMBEDDED), "must not be used inside of resource meta"));
    }

    if flag(s, "uniqueItems") {
        let msg = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic";
        out.push(forbidden(&f("uniqueItems"), msg));
    }
    let has_props = props(s).is_some_and(|p| !p.is_empty());
    match addl(s) {
        Addl::Absent => {}
        a => {
            if has_props && matches!(a, Addl::Bool(false) | Addl::Schema(_)) {
                let msg = "additionalProperties and properties are mutual exclusive";
                out.push(forbidden(&f("additionalProperties"), msg));
            }
            if let Addl::Schema(sub) = a {
                let sub_ssv = if ssv.inside_meta {
                    ssv.forbid_defaults("inside additionalProperties applying to object metadata".into())
                } else {
                    ssv.clone()
                };
                openapi_check(sub, &f("additionalProperties"), &sub_ssv, false, out);
            }
        }
    }
    for (k, p) in props(s).into_iter().flatten() {
        let mut sub = ssv.clone();
        if (is_root || emb) && is_meta(k) {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbid_defaults(format!("in top-level {k}"));
            }
        }
        openapi_check(p, &key(&f("properties"), k), &sub, false, out);
    }
    if let Some(n) = get(s, "not").filter(|v| v.is_object()) {
        openapi_check(n, &f("not"), ssv, false, out);
    }
    for k in ["allOf", "oneOf", "anyOf"] {
        for (i, sub) in list(s, k).iter().enumerate() {
            openapi_check(sub, &index(&f(k), i), ssv, false, out);
        }
    }
    for (k, d) in get(s, "definitions").and_then(Value::as_object).into_iter().flatten() {
        openapi_check(d, &key(&f("definitions"), k), ssv, false, out);
    }
    match get(s, "items") {
        Some(is @ Value::Object(_)) => openapi_check(is, &f("items"), ssv, false, out),
        Some(Value::Array(a)) => {
            for (i, is) in a.iter().enumerate() {
                openapi_check(is, &index(&f("items"), i), ssv, false, out);
            }
        }
        _ => {}
    }

    if get(s, PRESERVE) == Some(&Value::Bool(false)) {
        out.push(invalid(&f(PRESERVE), Bad::Bool(false), "must be true or undefined"));
    }
    let map_type = get(s, MAP_TYPE).filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or(""));
    if let Some(mt) = map_type {
        let msg = "must be object if x-kubernetes-map-type is specified";
        if t.is_empty() {
            out.push(required(&f("type"), msg));
        } else if t != "object" {
            out.push(invalid(&f("type"), Bad::Str(t.into()), msg));
        }
        if mt != "atomic" && mt != "granular" {
            let valid = ["atomic".to_owned(), "granular".to_owned()];
            out.push(not_supported(&f(MAP_TYPE), Bad::Str(mt.into()), &valid));
        }
    }
    let list_type = get(s, LIST_TYPE).filter(|v| !v.is_null()).map(|v| v.as_str().unwrap_or(""));
    let item_schema = items(s);
    if list_type.is_some() && t != "array" {
        let msg = "must be array if x-kubernetes-list-type is specified";
        if t.is_empty() {
            out.push(required(&f("type"), msg));
        } else {
            out.push(invalid(&f("type"), Bad::Str(t.into()), msg));
        }
    } else if list_type == Some("set")
        && let Some(is) = item_schema
    {
        let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let item_list_type = s_str(is, LIST_TYPE);
        match s_type(is) {
            "array" => {
                if let Some(ilt) = item_list_type.filter(|l| *l != "atomic") {
                    out.push(invalid(&child(&f("items"), LIST_TYPE), Bad::Str(ilt.into()), msg));
                }
            }
            "object" if s_str(is, MAP_TYPE) != Some("atomic") => {
                let shown = item_list_type.unwrap_or("null").to_owned();
                out.push(invalid(&child(&f("items"), MAP_TYPE), Bad::Str(shown), msg));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type
        && !["atomic", "set", "map"].contains(&lt)
    {
        let valid: Vec<String> = ["atomic", "set", "map"].iter().map(|v| (*v).to_owned()).collect();
        out.push(not_supported(&f(LIST_TYPE), Bad::Str(lt.into()), &valid));
    }
    let keys: Vec<String> =
        list(s, LIST_MAP_KEYS).iter().filter_map(Value::as_str).map(str::to_owned).collect();
    if !keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => out.push(required(&f(LIST_TYPE), msg)),
            Some(lt) if lt != "map" => out.push(invalid(&f(LIST_TYPE), Bad::Str(lt.into()), msg)),
            _ => {}
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            out.push(required(&f(LIST_MAP_KEYS), "must not be empty if x-kubernetes-list-type is map"));
        }
        if get(s, "items").is_none_or(Value::is_null) {
            out.push(required(&f("items"), "must have a schema if x-kubernetes-list-type is map"));
        }
        if let Some(is) = item_schema {
            let it = s_type(is);
            if it != "object" {
                let msg = "must be object if parent array's x-kubernetes-list-type is map";
                out.push(invalid(&child(&f("items"), "type"), Bad::Str(it.into()), msg));
            } else {
                let mut seen = BTreeSet::new();
                for k in &keys {
                    match prop(is, k) {
                        Some(kp) if matches!(s_type(kp), "array" | "object") => {
                            let fp = child(&key(&child(&f("items"), "properties"), k), "type");
                            let msg = "must be a scalar type if parent array's x-kubernetes-list-type is map";
                            out.push(invalid(&fp, Bad::Str(it.into()), msg));
                        }
                        Some(_) => {}
                        None => {
                            let msg = "entries must all be names of item properties";
                            out.push(invalid(&f(LIST_MAP_KEYS), Bad::StrList(keys.clone()), msg));
                        }
                    }
                    if !seen.insert(k.as_str()) {
                        let msg = "must not contain duplicate entries";
                        out.push(invalid(&f(LIST_MAP_KEYS), Bad::StrList(keys.clone()), msg));
                    }
                }
            }
        }
    }
    if let (Some(lt @ ("set" | "map")), Some(is)) = (list_type, item_schema) {
        if flag(is, "nullable") {
            let msg = format!("cannot be nullable when x-kubernetes-list-type is {lt}");
            out.push(forbidden(&child(&f("items"), "nullable"), &msg));
        }
        if lt == "map" {
            let req: Vec<&str> = list(is, "required").iter().filter_map(Value::as_str).collect();
            for k in &keys {
                let Some(kp) = prop(is, k) else { continue };
                let base = key(&child(&f("items"), "properties"), k);
                if !req.contains(&k.as_str()) && default_of(kp).is_none() {
                    let msg = "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property";
                    out.push(required(&child(&base, "default"), msg));
                }
                if flag(kp, "nullable") {
                    let msg = "this property is in x-kubernetes-list-map-keys, so it cannot be nullable";
                    out.push(forbidden(&child(&base, "nullable"), msg));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Shape
// ---------------------------------------------------------------------------

/// The merge shape of a custom resource, read from its schema: lists are atomic unless
/// `x-kubernetes-list-type` says `set` or `map` (keys from `x-kubernetes-list-map-keys`);
/// maps are granular unless `x-kubernetes-map-type: atomic`. Paths into `metadata` (at
/// the root or of an embedded resource) follow the built-in `ObjectMeta` rules.
/// Strategic merge patch is not available for custom resources, so
/// [`Shape::merge_strategy`] is `Replace` outside metadata.
#[derive(Debug, Clone)]
pub struct SchemaShape {
    schema: Value,
}

impl SchemaShape {
    /// The shape of the objects `schema` (an `openAPIV3Schema`) describes.
    #[must_use]
    pub fn new(schema: &Value) -> Self {
        SchemaShape { schema: schema.clone() }
    }

    /// The schema at `path` (list levels skipped), or where a metadata path starts.
    fn lookup<'a>(&'a self, path: &[&str]) -> Lookup<'a> {
        let mut s = &self.schema;
        let mut resource = true;
        for (i, seg) in path.iter().enumerate() {
            while let Some(is) = items(s) {
                s = is;
            }
            if (resource || flag(s, EMBEDDED)) && *seg == "metadata" {
                return Lookup::Meta(i);
            }
            match field_schema(s, seg) {
                Some(next) => s = next,
                None => return Lookup::Unknown,
            }
            resource = false;
        }
        Lookup::Schema(s)
    }
}

enum Lookup<'a> {
    Schema(&'a Value),
    Meta(usize),
    Unknown,
}

impl Shape for SchemaShape {
    fn list_type(&self, path: &[&str]) -> ListType {
        match self.lookup(path) {
            Lookup::Meta(i) => MetadataOnlyShape.list_type(&path[i..]),
            Lookup::Schema(s) => match s_str(s, LIST_TYPE) {
                Some("set") => ListType::Set,
                Some("map") => ListType::Map(
                    list(s, LIST_MAP_KEYS).iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                ),
                _ => ListType::Atomic,
            },
            Lookup::Unknown => ListType::Atomic,
        }
    }

    fn merge_strategy(&self, path: &[&str]) -> MergeStrategy {
        match self.lookup(path) {
            Lookup::Meta(i) => MetadataOnlyShape.merge_strategy(&path[i..]),
            _ => MergeStrategy::Replace,
        }
    }

    fn atomic_map(&self, path: &[&str]) -> bool {
        match self.lookup(path) {
            Lookup::Schema(mut s) => {
                while let Some(is) = items(s) {
                    s = is;
                }
                s_str(s, MAP_TYPE) == Some("atomic")
            }
            _ => false,
        }
    }
}

// ---------------------------------------------------------------------------
// Printer columns
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Field(String),
    Wildcard,
    Index(i64),
    Filter { lhs: Vec<String>, cmp: Option<(String, Value)> },
}

/// A parsed printer-column JSONPath (`client-go/util/jsonpath` subset): `.a.b`, `['a']`,
/// `[0]` (negative counts from the end), `[*]`, `.*`, `\.` escapes in names, and
/// filters `[?(@.x.y == "v")]` (`==`, `!=`, `<`, `<=`, `>`, `>=`, or bare existence).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    segs: Vec<Seg>,
}

impl JsonPath {
    /// Parses `path`, with or without the surrounding `{}` and a leading `$`.
    ///
    /// # Errors
    /// [`SchemaError::JsonPath`] when the path uses unsupported syntax (recursive
    /// descent, slices, unions) or is malformed.
    pub fn parse(path: &str) -> Result<JsonPath, SchemaError> {
        let err = |reason: &str| SchemaError::JsonPath { path: path.to_owned(), reason: reason.to_owned() };
        let mut p = path.trim();
        if let Some(inner) = p.strip_prefix('{') {
            p = inner.strip_suffix('}').ok_or_else(|| err("unclosed {"))?.trim();
        }
        p = p.strip_prefix('$').unwrap_or(p);
        let chars: Vec<char> = p.chars().collect();
        let mut segs = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    match chars.get(i) {
                        Some('.') => return Err(err("recursive descent (..) is not supported")),
                        Some('*') => {
                            segs.push(Seg::Wildcard);
                            i += 1;
                        }
                        _ => {
                            let mut name = String::new();
                            while let Some(&c) = chars.get(i) {
                                if c == '.' || c == '[' {
                                    break;
                                }
                                if c == '\\' && chars.get(i + 1).is_some() {
                                    name.push(chars[i + 1]);
                                    i += 2;
                                    continue;
                                }
                                name.push(c);
                                i += 1;
                            }
                            if !name.is_empty() {
                                segs.push(Seg::Field(name));
                            }
                        }
                    }
                }
                '[' => {
                    let start = i + 1;
                    let mut depth = 0;
                    let mut quote: Option<char> = None;
                    let mut end = None;
                    for (j, &c) in chars.iter().enumerate().skip(start) {
                        match (quote, c) {
                            (Some(q), c) if c == q => quote = None,
                            (Some(_), _) => {}
                            (None, '\'' | '"') => quote = Some(c),
                            (None, '(') => depth += 1,
                            (None, ')') => depth -= 1,
                            (None, ']') if depth == 0 => {
                                end = Some(j);
                                break;
                            }
                            _ => {}
                        }
                    }
                    let end = end.ok_or_else(|| err("unclosed ["))?;
                    let inner: String = chars[start..end].iter().collect();
                    segs.push(parse_bracket(inner.trim()).map_err(|r| err(&r))?);
                    i = end + 1;
                }
                c if c.is_whitespace() => i += 1,
                _ => return Err(err("expected . or [")),
            }
        }
        Ok(JsonPath { segs })
    }

    /// All values the path selects, in order (missing keys select nothing).
    #[must_use]
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        eval_segs(&self.segs, vec![obj])
    }
}

fn parse_bracket(inner: &str) -> Result<Seg, String> {
    if inner == "*" {
        return Ok(Seg::Wildcard);
    }
    if let Some(q) = unquote(inner) {
        return Ok(Seg::Field(q));
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Ok(Seg::Index(i));
    }
    let Some(expr) = inner.strip_prefix('?').map(str::trim) else {
        return Err(format!("unsupported subscript [{inner}]"));
    };
    let expr = expr
        .strip_prefix('(')
        .and_then(|e| e.strip_suffix(')'))
        .ok_or_else(|| "filter must be ?(...)".to_owned())?
        .trim();
    let rest = expr.strip_prefix('@').ok_or_else(|| "filter must start with @".to_owned())?;
    let op_at = rest.find(['=', '!', '<', '>']);
    let (lhs, cmp) = match op_at {
        None => (rest.trim(), None),
        Some(at) => {
            let (l, r) = rest.split_at(at);
            let op_len = if r[1..].starts_with('=') { 2 } else { 1 };
            let (op, lit) = r.split_at(op_len);
            if !matches!(op, "==" | "!=" | "<" | "<=" | ">" | ">=") {
                return Err(format!("unsupported operator {op}"));
            }
            let lit = lit.trim();
            let value = match unquote(lit) {
                Some(s) => Value::String(s),
                None => serde_json::from_str(lit).map_err(|_| format!("bad literal {lit}"))?,
            };
            (l.trim(), Some((op.to_owned(), value)))
        }
    };
    let lhs: Vec<String> = lhs.split('.').filter(|s| !s.is_empty()).map(str::to_owned).collect();
    Ok(Seg::Filter { lhs, cmp })
}

fn unquote(s: &str) -> Option<String> {
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    s.strip_prefix(q)?.strip_suffix(q).map(str::to_owned)
}

fn eval_segs<'a>(segs: &[Seg], mut cur: Vec<&'a Value>) -> Vec<&'a Value> {
    for seg in segs {
        let mut next = Vec::new();
        for v in cur {
            match (seg, v) {
                (Seg::Field(f), Value::Object(m)) => next.extend(m.get(f)),
                (Seg::Wildcard, Value::Object(m)) => next.extend(m.values()),
                (Seg::Wildcard, Value::Array(a)) => next.extend(a.iter()),
                (Seg::Index(i), Value::Array(a)) => {
                    let len = i64::try_from(a.len()).unwrap_or(i64::MAX);
                    let at = if *i < 0 { len + i } else { *i };
                    if let Ok(at) = usize::try_from(at) {
                        next.extend(a.get(at));
                    }
                }
                (Seg::Filter { lhs, cmp }, Value::Array(a)) => {
                    next.extend(a.iter().filter(|item| filter_matches(item, lhs, cmp.as_ref())));
                }
                _ => {}
            }
        }
        cur = next;
    }
    cur
}

fn filter_matches(item: &Value, lhs: &[String], cmp: Option<&(String, Value)>) -> bool {
    let segs: Vec<Seg> = lhs.iter().map(|s| Seg::Field(s.clone())).collect();
    let found = eval_segs(&segs, vec![item]);
    let Some(v) = found.first() else { return false };
    let Some((op, lit)) = cmp else { return true };
    let ord = match (v, lit) {
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Number(_), Value::Number(_)) => {
            v.as_f64().zip(lit.as_f64()).and_then(|(a, b)| a.partial_cmp(&b))
        }
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    };
    match (op.as_str(), ord) {
        ("==", Some(o)) => o.is_eq(),
        ("!=", Some(o)) => o.is_ne(),
        ("!=", None) => true,
        ("<", Some(o)) => o.is_lt(),
        ("<=", Some(o)) => o.is_le(),
        (">", Some(o)) => o.is_gt(),
        (">=", Some(o)) => o.is_ge(),
        _ => false,
    }
}

/// The first value a printer-column JSONPath (e.g. `.spec.replicas` or
/// `.status.conditions[?(@.type=="Ready")].status`) selects in `obj`, as the server's
/// table convertor takes it; `None` when nothing matches or the path is invalid.
#[must_use]
pub fn json_path(obj: &Value, path: &str) -> Option<Value> {
    JsonPath::parse(path).ok()?.find(obj).first().map(|v| (*v).clone())
}

/// The table cell for a column of `column_type` holding `value` (from [`json_path`]),
/// as the server's table convertor renders it: `string` columns print the value as
/// kubectl's JSONPath printer does (strings raw, lists and maps as JSON, numbers with
/// Go's `%v`), `integer` truncates floats, `number` widens integers, `boolean` keeps
/// bools; other JSON types give `None` (an empty cell). `date` columns return the raw
/// timestamp string: turning it into an age needs the current time, left to the caller.
#[must_use]
pub fn column_cell(column_type: &str, value: &Value) -> Option<Value> {
    match (column_type, value) {
        (_, Value::Null) => None,
        ("string", Value::String(s)) => Some(Value::String(s.clone())),
        ("string", Value::Array(_) | Value::Object(_)) => Some(Value::String(go_json(value))),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("string", Value::Number(_)) => Some(Value::String(match num(value)? {
            Num::I(i) => i.to_string(),
            Num::F(f) => go_float(f),
        })),
        ("integer", Value::Number(_)) => Some(Value::from(match num(value)? {
            Num::I(i) => i,
            Num::F(f) => f as i64,
        })),
        ("number", Value::Number(_)) => value.as_f64().map(Value::from),
        ("boolean", Value::Bool(_)) | ("date", Value::String(_)) => Some(value.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::error_string).collect()
    }

    fn one(causes: &[Cause]) -> &Cause {
        assert_eq!(causes.len(), 1, "expected one cause, got {:#?}", causes);
        &causes[0]
    }

    fn spec_schema(spec: Value) -> Value {
        json!({"type": "object", "properties": {"spec": spec}})
    }

    // --- rendering -------------------------------------------------------------

    #[test]
    fn go_float_matches_strconv_g() {
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(-1.5), "-1.5");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_json_float(3.0), "3");
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1e-7), "1e-7");
        assert_eq!(go_json_float(1e6), "1000000");
    }

    #[test]
    fn go_quote_and_json_escape_like_go() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\x01é""#);
        assert_eq!(
            go_json(&json!({"b": "<&>", "a": [1, 1.5, null]})),
            r#"{"a":[1,1.5,null],"b":"\u003c\u0026\u003e"}"#
        );
        assert_eq!(
            go_sharp_v(&json!({"name": "a", "n": 1, "l": ["x"], "z": null})),
            r#"map[string]interface {}{"l":[]interface {}{"x"}, "n":1, "name":"a", "z":interface {}(nil)}"#
        );
    }

    // --- validation ----------------------------------------------------------

    #[test]
    fn type_mismatch_reports_the_json_type() {
        let s = spec_schema(json!({"type": "object", "properties": {"replicas": {"type": "integer"}}}));
        let c = validate(&json!({"spec": {"replicas": "3"}}), &s);
        let c = one(&c);
        assert_eq!(c.reason, FIELD_VALUE_TYPE_INVALID);
        assert_eq!(c.field, "spec.replicas");
        assert_eq!(
            c.message,
            r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
        // A float with an integral value is an integer; 1.5 is not.
        assert!(validate(&json!({"spec": {"replicas": 3.0}}), &s).is_empty());
        let c = validate(&json!({"spec": {"replicas": 1.5}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "number": spec.replicas in body must be of type integer: "number""#
        );
        // number accepts integers
        let n = spec_schema(json!({"type": "number"}));
        assert!(validate(&json!({"spec": 3}), &n).is_empty());
    }

    #[test]
    fn root_type_errors_have_nil_field() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
        let c = validate(&json!([1]), &json!({"type": "object"}));
        assert_eq!(one(&c).field, "<nil>");
        assert_eq!(one(&c).message, r#"Invalid value: "array":  in body must be of type object: "array""#);
        assert!(validate(&json!({"spec": {}}), &s).is_empty());
    }

    #[test]
    fn minimum_maximum_and_exclusive() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true, "maximum": 1e6, "exclusiveMaximum": true}
        }}));
        let c = validate(&json!({"spec": {"replicas": -1}}), &s);
        let c = one(&c);
        assert_eq!(c.reason, FIELD_VALUE_INVALID);
        assert_eq!(c.field, "spec.replicas");
        assert_eq!(
            c.message,
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 1"
        );
        let c = validate(&json!({"spec": {"replicas": 11}}), &s);
        assert_eq!(
            one(&c).message,
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        );
        let c = validate(&json!({"spec": {"ratio": 0.5}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 0.5: spec.ratio in body should be greater than 0.5");
        let c = validate(&json!({"spec": {"ratio": 2e6}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 2e+06: spec.ratio in body should be less than 1e+06");
        assert!(validate(&json!({"spec": {"replicas": 1, "ratio": 0.75}}), &s).is_empty());
    }

    #[test]
    fn integer_data_is_checked_against_truncated_bounds() {
        // kube-openapi converts the float bound to int64 for integer data.
        let s = spec_schema(json!({"type": "integer", "minimum": 1.5, "multipleOf": 2}));
        assert!(validate(&json!({"spec": 2}), &s).is_empty());
        let c = validate(&json!({"spec": 1}), &s);
        assert_eq!(one(&c).message, "Invalid value: 1: spec in body should be a multiple of 2");
        let c = validate(&json!({"spec": 0}), &s);
        assert_eq!(one(&c).message, "Invalid value: 0: spec in body should be greater than or equal to 1");
        let f = spec_schema(json!({"type": "number", "multipleOf": 0.1}));
        assert!(validate(&json!({"spec": 0.3}), &f).is_empty());
        let c = validate(&json!({"spec": 0.35}), &f);
        assert_eq!(one(&c).message, "Invalid value: 0.35: spec in body should be a multiple of 0.1");
    }

    #[test]
    fn required_fields_at_root_nested_and_in_lists() {
        let s = json!({"type": "object", "required": ["spec"], "properties": {"spec": {
        "type": "object", "required": ["name", "items"], "properties": {
            "name": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}}}
        }}}});
        let c = validate(&json!({}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.field.as_str(), c.message.as_str()),
            (FIELD_VALUE_REQUIRED, "spec", "Required value")
        );
        let c = validate(&json!({"spec": {"items": [{"id": "a"}, {}]}}), &s);
        assert_eq!(msgs(&c), vec!["spec.items[1].id: Required value", "spec.name: Required value"]);
    }

    #[test]
    fn enum_values() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "level": {"type": "integer", "enum": [1, 2]},
        }}));
        let c = validate(&json!({"spec": {"mode": "x"}}), &s);
        let c = one(&c);
        assert_eq!(c.reason, FIELD_VALUE_NOT_SUPPORTED);
        assert_eq!(c.message, r#"Unsupported value: "x": supported values: "a", "b""#);
        let c = validate(&json!({"spec": {"level": 3}}), &s);
        assert_eq!(one(&c).message, r#"Unsupported value: 3: supported values: "1", "2""#);
        assert!(validate(&json!({"spec": {"mode": "b", "level": 2.0}}), &s).is_empty());
    }

    #[test]
    fn string_lengths_and_pattern() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
            "one": {"type": "string", "maxLength": 1},
            "digits": {"type": "string", "pattern": "^\\d+$"},
        }}));
        let c = validate(&json!({"spec": {"name": "toolongname"}}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.message.as_str()),
            (FIELD_VALUE_TOO_LONG, "Too long: may not be more than 5 bytes")
        );
        let c = validate(&json!({"spec": {"one": "ab"}}), &s);
        assert_eq!(one(&c).message, "Too long: may not be more than 1 byte");
        let c = validate(&json!({"spec": {"name": "ab"}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "ab": spec.name in body should be at least 3 chars long"#
        );
        let c = validate(&json!({"spec": {"name": "ABCD"}}), &s);
        assert_eq!(one(&c).message, r#"Invalid value: "ABCD": spec.name in body should match '^[a-z]+$'"#);
        // maxLength counts characters, not bytes
        assert!(validate(&json!({"spec": {"name": "ééé"}}), &s).len() == 1); // fails pattern only
        // Go's \d is ASCII only.
        assert!(validate(&json!({"spec": {"digits": "123"}}), &s).is_empty());
        assert_eq!(validate(&json!({"spec": {"digits": "١٢٣"}}), &s).len(), 1);
    }

    #[test]
    fn item_and_property_counts() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "l": {"type": "array", "minItems": 2, "maxItems": 3, "items": {"type": "string"}},
            "one": {"type": "array", "maxItems": 1, "items": {"type": "string"}},
            "u": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}},
            "m": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}},
        }}));
        let c = validate(&json!({"spec": {"l": ["a"]}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 1: spec.l in body should have at least 2 items");
        let c = validate(&json!({"spec": {"l": ["a", "b", "c", "d"]}}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.message.as_str()),
            (FIELD_VALUE_TOO_MANY, "Too many: 4: must have at most 3 items")
        );
        let c = validate(&json!({"spec": {"one": ["a", "b"]}}), &s);
        assert_eq!(one(&c).message, "Too many: 2: must have at most 1 item");
        let c = validate(&json!({"spec": {"u": [1, 2, 1]}}), &s);
        assert_eq!(one(&c).message, r#"Invalid value: "": spec.u in body shouldn't contain duplicates"#);
        assert!(validate(&json!({"spec": {"u": [1, 1.0]}}), &s).is_empty());
        let c = validate(&json!({"spec": {"m": {}}}), &s);
        assert_eq!(one(&c).message, "Invalid value: 0: spec.m in body should have at least 1 properties");
        let c = validate(&json!({"spec": {"m": {"a": "1", "b": "2", "c": "3"}}}), &s);
        assert_eq!(one(&c).error_string(), "spec.m: Too many: 3: must have at most 2 items");
    }

    #[test]
    fn additional_properties_schema_and_false() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
            "closed": {"type": "object", "additionalProperties": false},
        }}));
        let c = validate(&json!({"spec": {"labels": {"a": "ok", "b": 5, "c": "long"}}}), &s);
        assert_eq!(
            msgs(&c),
            vec![
                r#"spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer""#,
                "spec.labels.c: Too long: may not be more than 3 bytes",
            ]
        );
        let c = validate(&json!({"spec": {"closed": {"x": 1}}}), &s);
        assert_eq!(
            one(&c).error_string(),
            r#"spec.closed: Invalid value: "x": spec.closed.x in body is a forbidden property"#
        );
    }

    #[test]
    fn nullable_and_nulls() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"type": "string"},
        }}));
        assert!(validate(&json!({"spec": {"a": null}}), &s).is_empty());
        let c = validate(&json!({"spec": {"b": null}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "null": spec.b in body must be of type string: "null""#
        );
    }

    #[test]
    fn int_or_string() {
        let s = spec_schema(
            json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
        );
        assert!(validate(&json!({"spec": {"port": 80}}), &s).is_empty());
        assert!(validate(&json!({"spec": {"port": "http"}}), &s).is_empty());
        let c = validate(&json!({"spec": {"port": true}}), &s);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
        );
    }

    #[test]
    fn formats() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "t": {"type": "string", "format": "date-time"},
            "d": {"type": "string", "format": "date"},
            "u": {"type": "string", "format": "uuid"},
            "ip": {"type": "string", "format": "ipv4"},
            "h": {"type": "string", "format": "hostname"},
            "odd": {"type": "string", "format": "made-up"},
            "i32": {"type": "integer", "format": "int32"},
        }}));
        let good = json!({"spec": {"t": "2024-01-02T03:04:05Z", "d": "2024-02-29", "u": "123e4567-e89b-12d3-a456-426614174000",
            "ip": "10.0.0.1", "h": "my-host.example.com", "odd": "anything", "i32": 5}});
        assert!(validate(&good, &s).is_empty(), "{:?}", validate(&good, &s));
        let c = validate(&json!({"spec": {"t": "yesterday"}}), &s);
        assert_eq!(
            one(&c).error_string(),
            r#"spec.t: Invalid value: "yesterday": spec.t in body must be of type date-time: "yesterday""#
        );
        assert_eq!(one(&c).reason, FIELD_VALUE_TYPE_INVALID);
        for bad in [
            json!({"d": "2023-02-29"}),
            json!({"u": "nope"}),
            json!({"ip": "1.2.3"}),
            json!({"h": "-bad"}),
            json!({"t": "2024-01-02T25:00:00Z"}),
        ] {
            assert_eq!(validate(&json!({"spec": bad}), &s).len(), 1, "{bad}");
        }
        // An integer format applies to the type check of non-integers.
        let c = validate(&json!({"spec": {"i32": true}}), &s);
        assert_eq!(one(&c).message, r#"Invalid value: "": spec.i32 in body must be of type int32: """#);
    }

    #[test]
    fn patterns_use_go_semantics() {
        let m = |p: &str, t: &str| with_regex(p, |re| re.is_match(t)).unwrap();
        assert!(m(r"^\d+$", "123") && !m(r"^\d+$", "١٢٣"));
        assert!(m(r"^\D+$", "é-x") && !m(r"^\D+$", "a1"));
        assert!(m(r"^[\w.-]+$", "a_b.c-d") && !m(r"^[\w]+$", "é"));
        assert!(m(r"^\S+\s\S+$", "a b") && !m(r"^\s$", "\u{a0}"));
        assert!(m(r"\bfoo\b", "a foo b") && m(r"^[]a]+$", "]a") && m(r"^[a[]+$", "[a"));
        assert!(m("a.c", "a\u{e9}c"));
        let e = with_regex("[abc", |_| ()).unwrap_err();
        assert_eq!(e, "error parsing regexp: missing closing ]: `[abc`");
    }

    #[test]
    fn format_checkers() {
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

    #[test]
    fn junctors_report_composite_errors_at_nil() {
        let s = spec_schema(json!({"type": "object", "properties": {"v": {
            "type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]}}}));
        assert!(validate(&json!({"spec": {"v": "bee"}}), &s).is_empty());
        let c = validate(&json!({"spec": {"v": "cat"}}), &s);
        assert_eq!(
            c[0].error_string(),
            r#"<nil>: Invalid value: "": "spec.v" must validate at least one schema (anyOf)"#
        );
        assert_eq!(c[1].error_string(), r#"spec.v: Invalid value: "cat": spec.v in body should match '^a'"#);
        let one_of = spec_schema(json!({"type": "integer", "oneOf": [{"minimum": 1}, {"minimum": 2}]}));
        let c = validate(&json!({"spec": 5}), &one_of);
        assert_eq!(
            one(&c).message,
            r#"Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        );
        let not = spec_schema(json!({"type": "string", "not": {"enum": ["x"]}}));
        let c = validate(&json!({"spec": "x"}), &not);
        assert_eq!(one(&c).message, r#"Invalid value: "": "spec" must not validate the schema (not)"#);
    }

    #[test]
    fn list_type_set_and_map_duplicates() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "byName": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
            "byTwo": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}},
        }}));
        let c = validate(&json!({"spec": {"set": ["x", "y", "x", "x"]}}), &s);
        let c = one(&c);
        assert_eq!(
            (c.reason.as_str(), c.field.as_str(), c.message.as_str()),
            (FIELD_VALUE_DUPLICATE, "spec.set[2]", r#"Duplicate value: "x""#)
        );
        let c = validate(
            &json!({"spec": {"byName": [{"name": "a", "v": 1}, {"name": "a", "v": 2}, {"v": 3}, {}]}}),
            &s,
        );
        assert_eq!(
            msgs(&c),
            vec![
                r#"spec.byName[1]: Duplicate value: map[string]interface {}{"name":"a"}"#,
                r#"spec.byName[3]: Duplicate value: map[string]interface {}{}"#,
            ]
        );
        let c = validate(
            &json!({"spec": {"byTwo": [{"a": "x", "b": 1}, {"a": "x", "b": 2}, {"b": 1, "a": "x"}]}}),
            &s,
        );
        assert_eq!(
            one(&c).error_string(),
            r#"spec.byTwo[2]: Duplicate value: map[string]interface {}{"a":"x", "b":1}"#
        );
        let c = validate(&json!({"spec": {"byName": ["str"]}}), &s);
        assert!(
            msgs(&c).contains(
                &r#"spec.byName[0]: Invalid value: "str": must be an object for an array of list-type map"#
                    .to_owned()
            )
        );
    }

    #[test]
    fn update_ratchets_unchanged_values() {
        let s = spec_schema(json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "replicas": {"type": "integer", "minimum": 1},
            "note": {"type": "string"},
            "byName": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer", "minimum": 0}}}},
            "atomic": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        }}));
        let old = json!({"spec": {"name": "n", "replicas": 0, "note": "a"}});
        // replicas unchanged: its error is ratcheted away even though spec changed.
        assert!(
            validate_update(&json!({"spec": {"name": "n", "replicas": 0, "note": "b"}}), &old, &s).is_empty()
        );
        let c = validate_update(&json!({"spec": {"name": "n", "replicas": -1}}), &old, &s);
        assert_eq!(one(&c).field, "spec.replicas");
        // required: kept when the parent changed, dropped when it did not
        let old = json!({"spec": {"note": "a"}});
        assert!(validate_update(&old, &old, &s).is_empty());
        assert_eq!(
            msgs(&validate_update(&json!({"spec": {"note": "b"}}), &old, &s)),
            vec!["spec.name: Required value"]
        );
        // map lists correlate by key, other lists do not
        let old = json!({"spec": {"name": "n", "byName": [{"name": "a", "v": -1}], "atomic": [-1]}});
        let new = json!({"spec": {"name": "n", "byName": [{"name": "b", "v": 1}, {"name": "a", "v": -1}], "atomic": [-1, 2]}});
        assert_eq!(
            msgs(&validate_update(&new, &old, &s)),
            vec![
                "spec.atomic[0]: Invalid value: -1: spec.atomic[0] in body should be greater than or equal to 0"
            ]
        );
        // list-type errors only when the old object had none
        let dup = json!({"spec": {"name": "n", "set": ["x", "x"]}});
        assert!(
            validate_update(&json!({"spec": {"name": "n", "set": ["x", "x", "y"]}}), &dup, &s).is_empty()
        );
        let clean = json!({"spec": {"name": "n", "set": ["x"]}});
        assert_eq!(validate_update(&dup, &clean, &s).len(), 1);
    }

    // --- pruning, nulls, defaults --------------------------------------------

    #[test]
    fn prune_removes_unknown_fields_and_reports_paths() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": {"type": "object", "properties": {}}}},
        }}));
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "bogus": 1, "ownerReferences": [{"uid": "u", "extra": 1}]},
            "spec": {"foo": 1, "items": [{"name": "a", "bar": 2}], "labels": {"k": "v"},
                     "free": {"anything": {"deep": 1}, "known": {"x": 1}}},
            "status": {"phase": "x"}
        });
        let paths = prune(&mut obj, &s);
        assert_eq!(
            paths,
            vec![
                "metadata.bogus",
                "metadata.ownerReferences[0].extra",
                "spec.foo",
                "spec.free.known.x",
                "spec.items[0].bar",
                "status"
            ]
        );
        assert_eq!(
            obj,
            json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a", "ownerReferences": [{"uid": "u"}]},
                   "spec": {"items": [{"name": "a"}], "labels": {"k": "v"}, "free": {"anything": {"deep": 1}, "known": {}}}})
        );
    }

    #[test]
    fn prune_keeps_embedded_resource_meta() {
        let s = spec_schema(json!({"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}));
        let mut obj = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "junk": true}, "spec": {"a": "x", "b": "y"}, "other": 1}}});
        let paths = prune(&mut obj, &s);
        assert_eq!(paths, vec!["spec.template.other", "spec.template.spec.b", "spec.template.metadata.junk"]);
        assert_eq!(
            obj,
            json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "x"}}}})
        );
        // Without the marker, apiVersion/kind/metadata below the root are pruned like anything else.
        let plain = spec_schema(
            json!({"type": "object", "properties": {"template": {"type": "object", "properties": {}}}}),
        );
        let mut obj = json!({"spec": {"template": {"kind": "Pod"}}});
        assert_eq!(prune(&mut obj, &plain), vec!["spec.template.kind"]);
    }

    #[test]
    fn prune_with_preserve_unknown_at_root() {
        let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut obj = json!({"apiVersion": "a/v1", "kind": "K", "spec": {"x": 1}});
        assert!(prune(&mut obj, &s).is_empty());
        assert_eq!(obj["spec"]["x"], 1);
    }

    #[test]
    fn drop_nulls_keeps_nullable_and_defaulted() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"type": "string"},
            "c": {"type": "string", "default": "x"},
            "l": {"type": "array", "items": {"type": "object", "properties": {"z": {"type": "string"}}}},
        }}));
        let mut obj = json!({"spec": {"a": null, "b": null, "c": null, "l": [{"z": null}]}, "unknown": null});
        drop_nulls(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"a": null, "c": null, "l": [{}]}, "unknown": null}));
        apply_defaults(&mut obj, &s);
        assert_eq!(obj["spec"]["c"], "x");
        assert_eq!(obj["spec"]["a"], Value::Null);
    }

    #[test]
    fn defaults_apply_inside_present_parents_only() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1},
            "nested": {"type": "object", "properties": {"x": {"type": "string", "default": "dx"}}},
        }}));
        let mut none = json!({"apiVersion": "a/v1"});
        apply_defaults(&mut none, &s);
        assert_eq!(none, json!({"apiVersion": "a/v1"}));
        let mut obj = json!({"spec": {"replicas": 3}});
        apply_defaults(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"replicas": 3}}));
        let mut obj = json!({"spec": {"nested": {}}});
        apply_defaults(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"replicas": 1, "nested": {"x": "dx"}}}));
    }

    #[test]
    fn defaults_of_objects_are_pruned_and_defaulted() {
        let s = spec_schema(json!({"type": "object", "default": {}, "properties": {
            "conf": {"type": "object", "default": {"a": 1, "unknown": true},
                "properties": {"a": {"type": "integer"}, "b": {"type": "string", "default": "bee"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {
                "port": {"type": "integer", "default": 80}, "proto": {"type": "string", "default": "TCP"}}}},
            "map": {"type": "object", "additionalProperties": {"type": "string", "default": "dv"}},
        }}));
        let mut obj = json!({});
        apply_defaults(&mut obj, &s);
        assert_eq!(obj, json!({"spec": {"conf": {"a": 1, "b": "bee"}}}));
        let mut obj = json!({"spec": {"list": [{"port": 8080}, {}, null], "map": {"k": null, "j": "x"}}});
        apply_defaults(&mut obj, &s);
        assert_eq!(
            obj["spec"]["list"],
            json!([{"port": 8080, "proto": "TCP"}, {"port": 80, "proto": "TCP"}, null])
        );
        assert_eq!(obj["spec"]["map"], json!({"k": "dv", "j": "x"}));
    }

    #[test]
    fn full_pipeline_and_message() {
        let s = spec_schema(json!({"type": "object", "required": ["replicas"], "properties": {
            "replicas": {"type": "integer", "minimum": 1},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
        }}));
        let mut obj = json!({"apiVersion": "ex.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"replicas": 0, "extra": 1, "mode": "z"}});
        let unknown = prune(&mut obj, &s);
        drop_nulls(&mut obj, &s);
        apply_defaults(&mut obj, &s);
        assert_eq!(unknown, vec!["spec.extra"]);
        let causes = validate(&obj, &s);
        assert_eq!(
            invalid_message("Foo.ex.com", "f", &causes),
            r#"Foo.ex.com "f" is invalid: [spec.mode: Unsupported value: "z": supported values: "a", "b", spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1]"#
        );
        assert_eq!(
            invalid_message("Foo.ex.com", "f", &causes[1..]),
            r#"Foo.ex.com "f" is invalid: spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"#
        );
        let dup = vec![causes[1].clone(), causes[1].clone()];
        assert!(!invalid_message("Foo.ex.com", "f", &dup).contains('['));
        assert_eq!(invalid_message("Foo", "f", &[]), r#"Foo "f" is invalid"#);
    }

    // --- CRD-time checks -------------------------------------------------------

    const BASE: &str = "spec.versions[0].schema.openAPIV3Schema";

    #[test]
    fn structural_missing_types() {
        let s = json!({"properties": {"spec": {"properties": {"l": {"type": "array"}, "x": {"type": "array", "items": {}}}}}});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!("{BASE}.properties[spec].properties[l].items: Required value: must be specified"),
                format!(
                    "{BASE}.properties[spec].properties[x].items.type: Required value: must not be empty for specified array items"
                ),
                format!(
                    "{BASE}.properties[spec].type: Required value: must not be empty for specified object fields"
                ),
                format!("{BASE}.type: Required value: must not be empty at the root"),
            ]
        );
        assert!(
            check_structural(
                &spec_schema(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
                BASE
            )
            .is_empty()
        );
    }

    #[test]
    fn structural_additional_properties_rules() {
        let s = json!({"type": "object", "additionalProperties": {"type": "string"}, "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!("{BASE}.additionalProperties: Forbidden: must not be used at the root"),
                format!(
                    "{BASE}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
                ),
                format!(
                    "{BASE}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
                ),
            ]
        );
    }

    #[test]
    fn structural_root_and_metadata_rules() {
        let s = json!({"type": "string", "nullable": true});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!("{BASE}.nullable: Forbidden: nullable cannot be true at the root"),
                format!(r#"{BASE}.type: Invalid value: "string": must be object at the root"#),
            ]
        );
        let ok_meta = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}});
        assert!(check_structural(&ok_meta, BASE).is_empty());
        let bad_meta = json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}, "default": {"name": "x"}}}});
        assert_eq!(
            msgs(&check_structural(&bad_meta, BASE)),
            vec![
                format!(
                    "{BASE}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
                ),
                format!(
                    "{BASE}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
                ),
            ]
        );
    }

    #[test]
    fn structural_embedded_resource_rules() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "a": {"x-kubernetes-embedded-resource": true},
            "b": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"kind": {"type": "integer"}}},
        }}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    "{BASE}.properties[spec].properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
                ),
                format!(
                    "{BASE}.properties[spec].properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true"
                ),
                format!(
                    r#"{BASE}.properties[spec].properties[b].properties[kind].type: Invalid value: "integer": must be string"#
                ),
            ]
        );
    }

    #[test]
    fn structural_junctor_rules_and_completeness() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "v": {"type": "string", "allOf": [{"type": "string", "description": "d"}]}}}},
            "anyOf": [{"properties": {"spec": {"properties": {"missing": {"maxLength": 1}}}}}]});
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    "{BASE}.properties[spec].properties[missing]: Required value: because it is defined in {BASE}.anyOf[0].properties[spec].properties[missing]"
                ),
                format!(
                    "{BASE}.properties[spec].properties[v].allOf[0].description: Forbidden: must be empty to be structural"
                ),
                format!(
                    "{BASE}.properties[spec].properties[v].allOf[0].type: Forbidden: must be empty to be structural"
                ),
            ]
        );
    }

    #[test]
    fn structural_invalid_pattern() {
        let s = spec_schema(json!({"type": "string", "pattern": "(abc"}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![format!(
                r#"{BASE}.properties[spec].pattern: Invalid value: "(abc": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(abc`"#
            )]
        );
    }

    #[test]
    fn defaults_must_validate_and_be_pruned() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 1, "default": 0},
            "conf": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}},
        }}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    r#"{BASE}.properties[spec].properties[conf].default: Invalid value: map[string]interface {{}}{{"a":"x", "b":1}}: must not have unknown fields"#
                ),
                format!(
                    "{BASE}.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1"
                ),
            ]
        );
    }

    #[test]
    fn openapi_keyword_rules() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "u": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "t": {"type": "thing"},
            "p": {"type": "object", "x-kubernetes-preserve-unknown-fields": false},
        }}));
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    r#"{BASE}.properties[spec].properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"#
                ),
                format!(
                    r#"{BASE}.properties[spec].properties[t].type: Unsupported value: "thing": supported values: "array", "boolean", "integer", "number", "object", "string""#
                ),
                format!(
                    "{BASE}.properties[spec].properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
                ),
            ]
        );
    }

    #[test]
    fn list_type_schema_rules() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "nope"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "n": {"type": "string", "x-kubernetes-list-type": "set"},
            "k": {"type": "array", "x-kubernetes-list-map-keys": ["a"], "items": {"type": "string"}},
        }}));
        let p = format!("{BASE}.properties[spec].properties");
        assert_eq!(
            msgs(&check_structural(&s, BASE)),
            vec![
                format!(
                    "{p}[k].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
                ),
                format!(
                    r#"{p}[m].x-kubernetes-list-map-keys: Invalid value: []string{{"name", "nope"}}: entries must all be names of item properties"#
                ),
                format!(
                    "{p}[m].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    r#"{p}[n].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified"#
                ),
                format!(
                    r#"{p}[s].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set"#
                ),
            ]
        );
    }

    #[test]
    fn valid_real_world_schema_has_no_errors() {
        let s = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["image"], "properties": {
                "image": {"type": "string"},
                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "default": 1},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort"],
                    "items": {"type": "object", "required": ["containerPort"], "properties": {
                        "containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            }},
            "status": {"type": "object", "properties": {"conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"type": {"type": "string"}}}, "x-kubernetes-list-type": "set"}}},
        }});
        assert_eq!(check_structural(&s, BASE), vec![]);
    }

    // --- shape and printer columns ---------------------------------------------

    #[test]
    fn schema_shape_reads_extensions() {
        let s = spec_schema(json!({"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
            "plain": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
            "tmpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        }}));
        let shape = SchemaShape::new(&s);
        assert_eq!(
            shape.list_type(&["spec", "ports"]),
            ListType::Map(vec!["port".into(), "protocol".into()])
        );
        assert_eq!(shape.list_type(&["spec", "ports", "tags"]), ListType::Set);
        assert_eq!(shape.list_type(&["spec", "plain"]), ListType::Atomic);
        assert_eq!(shape.list_type(&["spec", "nowhere"]), ListType::Atomic);
        assert!(shape.atomic_map(&["spec", "selector"]));
        assert!(!shape.atomic_map(&["spec"]));
        assert_eq!(shape.list_type(&["metadata", "finalizers"]), ListType::Set);
        assert_eq!(shape.list_type(&["metadata", "ownerReferences"]), ListType::Map(vec!["uid".into()]));
        assert_eq!(shape.merge_strategy(&["metadata", "finalizers"]), MergeStrategy::MergePrimitives);
        assert_eq!(shape.list_type(&["spec", "tmpl", "metadata", "finalizers"]), ListType::Set);
        assert_eq!(shape.merge_strategy(&["spec", "ports"]), MergeStrategy::Replace);
    }

    #[test]
    fn json_path_for_printer_columns() {
        let obj = json!({"spec": {"replicas": 3, "a.b": "dotted", "list": [1, 2, 3]},
            "status": {"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(json_path(&obj, ".spec.replicas"), Some(json!(3)));
        assert_eq!(json_path(&obj, "{.spec.replicas}"), Some(json!(3)));
        assert_eq!(json_path(&obj, r#".status.conditions[?(@.type=="Ready")].status"#), Some(json!("True")));
        assert_eq!(json_path(&obj, ".status.conditions[?(@.type=='Gone')].status"), None);
        assert_eq!(json_path(&obj, ".spec.list[-1]"), Some(json!(3)));
        assert_eq!(json_path(&obj, ".spec.list[*]"), Some(json!(1)));
        assert_eq!(json_path(&obj, r".spec.a\.b"), Some(json!("dotted")));
        assert_eq!(json_path(&obj, ".spec['a.b']"), Some(json!("dotted")));
        assert_eq!(json_path(&obj, ".spec.missing.deeper"), None);
        assert_eq!(json_path(&obj, ".status.conditions[?(@.status)].type"), Some(json!("Synced")));
        assert!(matches!(JsonPath::parse("..spec"), Err(SchemaError::JsonPath { .. })));
        assert!(JsonPath::parse(".spec[1:2]").is_err());
    }

    #[test]
    fn column_cells_render_like_the_table_convertor() {
        assert_eq!(column_cell("string", &json!("x")), Some(json!("x")));
        assert_eq!(
            column_cell("string", &json!({"b": 1, "a": [true]})),
            Some(json!(r#"{"a":[true],"b":1}"#))
        );
        assert_eq!(column_cell("string", &json!(1e6)), Some(json!("1e+06")));
        assert_eq!(column_cell("string", &json!(7)), Some(json!("7")));
        assert_eq!(column_cell("integer", &json!(2.9)), Some(json!(2)));
        assert_eq!(column_cell("number", &json!(2)), Some(json!(2.0)));
        assert_eq!(column_cell("integer", &json!("2")), None);
        assert_eq!(column_cell("boolean", &json!(true)), Some(json!(true)));
        assert_eq!(column_cell("string", &Value::Null), None);
    }
}
