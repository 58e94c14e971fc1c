//! Values that break exactly one rule of a schema at one place. Start at [`invalid`]: it
//! draws a valid value (optional properties present more often, so there is more to
//! break), lists every place and rule that value could break ([`Rule`]), and tries them
//! in random order; a broken value is kept only when the server's pipeline refuses it
//! with exactly one cause, at the place broken. The rules and the fields their causes
//! name are kube-openapi's (`pkg/validation/validate/{type,object,slice,string,number,
//! format}_validator.go`) and apiextensions' list types
//! (`apiextensions-apiserver/pkg/apiserver/schema/listtype/validation.go`).

use serde_json::{Map, Value};

use super::place::{ROOT, Seg, Server, Style, at, at_mut, children, field};
use super::strings::{format_of, lengths};
use super::{Gen, Kind, counts, get, kind, list, map_values, props};
use crate::fuzz::rng::Rng;

/// A value that breaks exactly one rule of a schema, and what it breaks.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// The whole value (of the schema given to [`super::invalid`]).
    pub value: Value,
    /// The field path the 422's cause names, e.g. `spec.items[1].name`.
    pub path: String,
    /// What is broken, e.g. "below the minimum 1".
    pub rule: String,
}

/// A rule a value can break at one place.
#[derive(Clone, Debug)]
enum Rule {
    Type,
    Enum,
    Minimum,
    Maximum,
    MultipleOf,
    MinLength,
    MaxLength,
    Pattern,
    Format(String),
    MinItems,
    MaxItems,
    Duplicate,
    MinProperties,
    MaxProperties,
    Required(String),
}

/// A place in the value, its schema node, and a rule to break there.
struct Spot<'s> {
    at: Vec<Seg>,
    s: &'s Value,
    rule: Rule,
}

/// A broken node: its new value, where the cause points (below the node's place) and in
/// which style, and the rule's words.
struct Broken {
    node: Value,
    below: Vec<Seg>,
    style: Style,
    rule: String,
}

pub(super) fn invalid(schema: &Value, root: &str, rng: &mut Rng) -> Option<Invalid> {
    let base = Gen { rng: &mut *rng, optional: 80 }.value(schema);
    let mut spots = Vec::new();
    collect(&base, schema, Vec::new(), &mut spots);
    rng.shuffle(&mut spots);
    let server = Server::new(schema);
    for spot in &spots {
        let Some(current) = at(&base, &spot.at) else { continue };
        for b in breaks(spot, current, &mut Gen { rng: &mut *rng, optional: 50 }) {
            let mut value = base.clone();
            let Some(node) = at_mut(&mut value, &spot.at) else { continue };
            *node = b.node;
            let mut place = spot.at.clone();
            place.extend(b.below);
            let expected = field(ROOT, &place, b.style);
            if server.refusals(&value) == [expected] {
                return Some(Invalid { value, path: field(root, &place, b.style), rule: b.rule });
            }
        }
    }
    None
}

/// Every place and rule `v` (a value of `s`, at `at`) could break.
fn collect<'s>(v: &Value, s: &'s Value, here: Vec<Seg>, out: &mut Vec<Spot<'s>>) {
    let mut push = |rule| out.push(Spot { at: here.clone(), s, rule });
    if kind(s) != Kind::Any && list(s, "enum").is_empty() {
        push(Rule::Type);
    }
    if !list(s, "enum").is_empty() {
        push(Rule::Enum);
    }
    let has = |k: &str| get(s, k).is_some();
    match v {
        Value::Number(_) => {
            for (k, r) in
                [("minimum", Rule::Minimum), ("maximum", Rule::Maximum), ("multipleOf", Rule::MultipleOf)]
            {
                if has(k) {
                    push(r);
                }
            }
        }
        Value::String(_) => {
            let (min, _) = lengths(s);
            if min > 0 {
                push(Rule::MinLength);
            }
            if has("maxLength") {
                push(Rule::MaxLength);
            }
            if has("pattern") {
                push(Rule::Pattern);
            }
            if let Some(f) = format_of(s) {
                push(Rule::Format(f));
            }
        }
        Value::Array(_) => {
            if counts(s, "minItems", "maxItems").0 > 0 {
                push(Rule::MinItems);
            }
            if has("maxItems") {
                push(Rule::MaxItems);
            }
            if get(s, ctop_schema::LIST_TYPE).is_some_and(|t| t == "set" || t == "map") || has("uniqueItems")
            {
                push(Rule::Duplicate);
            }
        }
        Value::Object(m) => {
            let ps = props(s);
            for k in list(s, "required").iter().filter_map(Value::as_str) {
                let defaulted = ps.and_then(|p| p.get(k)).is_some_and(|p| get(p, "default").is_some());
                if m.contains_key(k) && !defaulted {
                    push(Rule::Required(k.to_owned()));
                }
            }
            if map_values(s).is_some() {
                if counts(s, "minProperties", "maxProperties").0 > 0 {
                    push(Rule::MinProperties);
                }
                if has("maxProperties") {
                    push(Rule::MaxProperties);
                }
            }
        }
        _ => {}
    }
    for (seg, x, cs) in children(v, s) {
        let mut at = here.clone();
        at.push(seg);
        collect(x, cs, at, out);
    }
}

/// Ways to break `spot.rule` in `v` (the current value at the spot), best first.
fn breaks(spot: &Spot<'_>, v: &Value, g: &mut Gen<'_>) -> Vec<Broken> {
    let s = spot.s;
    let here = |node: Value, rule: String| Broken { node, below: Vec::new(), style: Style::Schema, rule };
    let shown = |k: &str| get(s, k).map(Value::to_string).unwrap_or_default();
    let f64_of = |k: &str| get(s, k).and_then(Value::as_f64).unwrap_or(0.0);
    let is_int = v.is_i64() || v.is_u64();
    match &spot.rule {
        Rule::Type => {
            let (node, got, want) = match kind(s) {
                Kind::Integer => (Value::from("7"), "a string", "an integer"),
                Kind::Number => (Value::from("7.5"), "a string", "a number"),
                Kind::String => (Value::from(7), "an integer", "a string"),
                Kind::Boolean => (Value::from("yes"), "a string", "a boolean"),
                Kind::Object => (Value::from("text"), "a string", "an object"),
                Kind::Array => (Value::from("text"), "a string", "an array"),
                Kind::IntOrString => (Value::from(true), "a boolean", "an integer or a string"),
                Kind::Any => return Vec::new(),
            };
            vec![here(node, format!("{got} where {want} is required"))]
        }
        Rule::Enum => {
            let values = list(s, "enum");
            let mut out: Vec<Value> = match values.first() {
                Some(Value::String(first)) => {
                    vec![format!("{first}-other").into(), "not-an-enum-value".into(), "x".into()]
                }
                Some(Value::Bool(b)) => vec![(!b).into()],
                _ => {
                    let top = values.iter().filter_map(Value::as_i64).max().unwrap_or(0);
                    vec![top.saturating_add(1).into()]
                }
            };
            out.retain(|x| !values.contains(x));
            out.into_iter().map(|x| here(x, "not one of the enum values".into())).collect()
        }
        Rule::Minimum | Rule::Maximum => {
            let low = matches!(spot.rule, Rule::Minimum);
            let (k, ex) = if low { ("minimum", "exclusiveMinimum") } else { ("maximum", "exclusiveMaximum") };
            let (bound, exclusive) = (f64_of(k), super::flag(s, ex));
            let sign = if low { -1.0 } else { 1.0 };
            let step = get(s, "multipleOf").and_then(Value::as_f64).unwrap_or(1.0).max(1.0);
            let at_or_past = if exclusive { 0.0 } else { sign };
            let candidates: Vec<Value> = if is_int {
                // Integer data is compared with the bound truncated (number_validator.go).
                let b = bound as i64;
                [at_or_past, at_or_past + sign * step]
                    .iter()
                    .map(|d| Value::from(b.saturating_add(*d as i64)))
                    .collect()
            } else {
                [bound + at_or_past, bound + sign * step].iter().map(|x| Value::from(*x)).collect()
            };
            let rule = match (low, exclusive) {
                (true, false) => format!("below the minimum {}", shown(k)),
                (true, true) => format!("not above the exclusive minimum {}", shown(k)),
                (false, false) => format!("above the maximum {}", shown(k)),
                (false, true) => format!("not below the exclusive maximum {}", shown(k)),
            };
            candidates.into_iter().map(|x| here(x, rule.clone())).collect()
        }
        Rule::MultipleOf => {
            let m = f64_of("multipleOf");
            let candidates: Vec<Value> = if let Some(i) = v.as_i64() {
                vec![i.saturating_add(1).into(), i.saturating_sub(1).into()]
            } else {
                let x = v.as_f64().unwrap_or(0.0);
                vec![(x + m / 2.0).into(), (x - m / 2.0).into()]
            };
            let rule = format!("not a multiple of {}", shown("multipleOf"));
            candidates.into_iter().map(|x| here(x, rule.clone())).collect()
        }
        Rule::MinLength | Rule::MaxLength | Rule::Pattern | Rule::Format(_) => strings(spot, v, &here),
        Rule::MinItems | Rule::MaxItems | Rule::Duplicate => items(spot, v, g),
        Rule::MinProperties | Rule::MaxProperties => {
            let mut m = v.as_object().cloned().unwrap_or_default();
            let (lo, hi) = counts(s, "minProperties", "maxProperties");
            let rule = if matches!(spot.rule, Rule::MinProperties) {
                let keep = usize::try_from(lo.saturating_sub(1)).unwrap_or(0);
                let keys: Vec<String> = m.keys().skip(keep).cloned().collect();
                for k in keys {
                    m.remove(&k);
                }
                format!("fewer entries than the minimum {lo}")
            } else {
                let Some(a) = map_values(s) else { return Vec::new() };
                let mut n = 0;
                while (m.len() as u64) <= hi && n < 64 + hi {
                    let k = format!("{}-{n}", super::strings::map_key(g.rng, n as usize));
                    let x = g.value(a);
                    m.entry(k).or_insert(x);
                    n += 1;
                }
                format!("more entries than the maximum {hi}")
            };
            vec![here(Value::Object(m), rule)]
        }
        Rule::Required(k) => {
            let mut m: Map<String, Value> = v.as_object().cloned().unwrap_or_default();
            m.remove(k);
            vec![Broken {
                node: Value::Object(m),
                below: vec![Seg::Prop(k.clone())],
                style: Style::Schema,
                rule: "required field missing".into(),
            }]
        }
    }
}

/// Breaking a string's length, pattern or format: strings that keep the other bounds
/// where they can.
fn strings(spot: &Spot<'_>, v: &Value, here: &dyn Fn(Value, String) -> Broken) -> Vec<Broken> {
    let s = spot.s;
    let cur = v.as_str().unwrap_or("");
    let (min, max) = lengths(s);
    let fit = |x: String, pad: char| -> Value {
        let mut x: String = x.chars().take(max).collect();
        while x.chars().count() < min {
            x.push(pad);
        }
        x.into()
    };
    match &spot.rule {
        Rule::MinLength => {
            let short: String = cur.chars().take(min.saturating_sub(1)).collect();
            vec![here(short.into(), format!("shorter than the minimum length {min}"))]
        }
        Rule::MaxLength => {
            let mut long = cur.to_owned();
            while long.chars().count() <= max {
                long.push('a');
            }
            vec![here(long.into(), format!("longer than the maximum length {max}"))]
        }
        Rule::Pattern => {
            let p = get(s, "pattern").and_then(Value::as_str).unwrap_or("");
            let tries = [
                format!("!{cur}"),
                format!("{cur}!"),
                "!".into(),
                " ".into(),
                String::new(),
                "A".into(),
                "0".into(),
                "a".into(),
            ];
            tries
                .into_iter()
                .flat_map(|t| [fit(t.clone(), '!'), fit(t, ' ')])
                .map(|x| here(x, format!("does not match the pattern {p}")))
                .collect()
        }
        Rule::Format(f) => {
            let tries = [format!("not a {f}!"), "!".into(), "x".into(), String::new()];
            tries.into_iter().map(|t| here(fit(t, '!'), format!("not a valid {f}"))).collect()
        }
        _ => Vec::new(),
    }
}

/// Breaking an array's item count or uniqueness.
fn items(spot: &Spot<'_>, v: &Value, g: &mut Gen<'_>) -> Vec<Broken> {
    let s = spot.s;
    let a = v.as_array().cloned().unwrap_or_default();
    let (lo, hi) = counts(s, "minItems", "maxItems");
    let whole = |node: Vec<Value>, rule: String| Broken {
        node: node.into(),
        below: Vec::new(),
        style: Style::Schema,
        rule,
    };
    match spot.rule {
        Rule::MinItems => {
            let keep = usize::try_from(lo.saturating_sub(1)).unwrap_or(0);
            vec![whole(a.into_iter().take(keep).collect(), format!("fewer items than the minimum {lo}"))]
        }
        Rule::MaxItems => {
            let more = g.items(s, a, Some(hi.saturating_add(1)));
            vec![whole(more, format!("more items than the maximum {hi}"))]
        }
        Rule::Duplicate => {
            let mut a = if a.is_empty() { g.items(s, a, Some(1)) } else { a };
            let Some(first) = a.first().cloned() else { return Vec::new() };
            // The second of two equal items is the one reported.
            let dup = if (a.len() as u64) < hi || a.len() < 2 {
                a.push(first);
                a.len() - 1
            } else {
                let last = a.len() - 1;
                a[last] = first;
                last
            };
            let list_type = get(s, ctop_schema::LIST_TYPE).and_then(Value::as_str);
            let (below, style, rule) = match list_type {
                Some("map") => (vec![Seg::Item(dup)], Style::ListType, "a duplicate key in a map list"),
                Some("set") => (vec![Seg::Item(dup)], Style::ListType, "a duplicate item in a set list"),
                // uniqueItems names the array itself (slice_validator.go).
                _ => (Vec::new(), Style::Schema, "a duplicate item where items are unique"),
            };
            vec![Broken { node: a.into(), below, style, rule: rule.into() }]
        }
        _ => Vec::new(),
    }
}
