//! Strings for a schema node: DNS-1123 labels by default ([`label`]), a realistic value
//! per `format` ([`format_value`]), and strings matching a `pattern` ([`from_pattern`]).
//! Start at [`string`]. Whatever is drawn here is checked afterwards with the server's
//! validator (see the parent module), so a value here only needs to be right most of
//! the time.

use std::cell::RefCell;
use std::collections::HashMap;

use base64::Engine as _;
use rand::distr::Distribution as _;
use regex_syntax::hir::{self, Hir, HirKind};
use serde_json::Value;

use super::{flag, get};
use crate::fuzz::rng::Rng;

/// Words for labels: names an operator's children can carry (and valid image names).
const WORDS: [&str; 20] = [
    "web", "api", "app", "demo", "nginx", "redis", "cache", "db", "worker", "front", "backend", "blue",
    "green", "alpha", "beta", "prod", "dev", "edge", "store", "queue",
];

/// Keys of generated maps (labels, annotations, settings).
const KEYS: [&str; 8] = ["app", "tier", "env", "team", "zone", "role", "owner", "track"];

/// A string for string node `s`: its `format`, else a DNS-1123 label within
/// `minLength`/`maxLength` when that matches the node's `pattern` (the most realistic
/// value), else a string generated from the pattern.
pub(super) fn string(rng: &mut Rng, s: &Value) -> String {
    let (min, max) = lengths(s);
    if let Some(f) = format_of(s)
        && let Some(v) = format_value(rng, &f)
    {
        return v;
    }
    let l = label(rng, min, max);
    if let Some(p) = get(s, "pattern").and_then(Value::as_str).filter(|p| !p.is_empty())
        && !super::accepts(s, &Value::String(l.clone()))
        && let Some(v) = from_pattern(rng, p, min, max)
    {
        return v;
    }
    l
}

/// The string side of an `x-kubernetes-int-or-string` node: a percentage (what such
/// fields hold, like `maxUnavailable: 25%`) unless a pattern or format says otherwise.
pub(super) fn int_or_string(rng: &mut Rng, s: &Value) -> String {
    if format_of(s).is_some() || get(s, "pattern").is_some() {
        return string(rng, s);
    }
    format!("{}%", rng.pick(&[10, 25, 50, 75, 100]))
}

/// A node's `minLength` and `maxLength` (in characters, as the validator counts).
pub(super) fn lengths(s: &Value) -> (usize, usize) {
    let n = |k: &str| get(s, k).and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok());
    let min = n("minLength").unwrap_or(0);
    (min, n("maxLength").unwrap_or(usize::MAX).max(min))
}

/// The node's `format` normalized as the server compares it (dashes dropped), when the
/// server checks it: kube-apiserver strips the formats CRDs do not support
/// (`apiextensions-apiserver/pkg/apiserver/validation/formats.go`, `StripUnsupportedFormatsPostProcess`),
/// and keeps string formats on string (or untyped, or int-or-string) nodes only.
pub(super) fn format_of(s: &Value) -> Option<String> {
    let f = get(s, "format").and_then(Value::as_str)?.replace('-', "");
    let t = get(s, "type").and_then(Value::as_str).unwrap_or("");
    let stringy = t.is_empty() || t == "string" || flag(s, ctop_schema::INT_OR_STRING);
    // The formats `format_value` knows are the ones the server keeps (`SUPPORTED_FORMATS`
    // in ctop_schema, which does not export it): asking it avoids a third copy of the list.
    (stringy && format_value(&mut Rng::new(0), &f).is_some()).then_some(f)
}

/// A realistic value of a (normalized) string format the server checks for CRDs (the
/// formats of kube-openapi's `pkg/validation/strfmt` registry, `default.go` and the files
/// beside it, that `StripUnsupportedFormatsPostProcess` keeps); `None` for any other.
pub(super) fn format_value(rng: &mut Rng, format: &str) -> Option<String> {
    let mut hex = |n: usize| (0..n).map(|_| char::from(*rng.pick(b"0123456789abcdef"))).collect::<String>();
    let h = hex(32);
    let uuid = |version: char, variant: bool| {
        let variant = if variant { "a" } else { &h[16..17] };
        format!("{}-{}-{version}{}-{variant}{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..32])
    };
    Some(match format {
        "datetime" => format!(
            "2024-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            rng.range(1, 12),
            rng.range(1, 28),
            rng.range(0, 23),
            rng.range(0, 59),
            rng.range(0, 59)
        ),
        "date" => format!("2024-{:02}-{:02}", rng.range(1, 12), rng.range(1, 28)),
        "email" => format!("{}@example.com", label(rng, 1, 20)),
        "uri" => format!("https://{}.example.com/{}", label(rng, 1, 20), label(rng, 1, 20)),
        "hostname" => format!("{}.example.com", label(rng, 1, 30)),
        "ipv4" => format!("10.{}.{}.{}", rng.below(256), rng.below(256), rng.range(1, 254)),
        "ipv6" => format!("fd00::{:x}", rng.range(1, 0xffff)),
        "cidr" => format!("10.{}.0.0/16", rng.below(256)),
        "mac" => {
            let b: Vec<String> = (0..5).map(|_| format!("{:02x}", rng.below(256))).collect();
            format!("02:{}", b.join(":"))
        }
        "uuid" => uuid(h.as_bytes()[12].into(), false),
        "uuid3" => uuid('3', false),
        "uuid4" => uuid('4', true),
        "uuid5" => uuid('5', true),
        "bsonobjectid" => h[..24].to_owned(),
        // Real numbers with their check digits (ISBN-10 mod 11, ISBN-13 mod 10, Luhn).
        "isbn10" => (*rng.pick(&["0306406152", "0131103628"])).to_owned(),
        "isbn13" => (*rng.pick(&["9780306406157", "9780131103627"])).to_owned(),
        "isbn" => (*rng.pick(&["0306406152", "9780131103627"])).to_owned(),
        "creditcard" => (*rng.pick(&["4111111111111111", "5555555555554444", "378282246310005"])).to_owned(),
        "ssn" => format!("{:03}-{:02}-{:04}", rng.range(100, 665), rng.range(10, 99), rng.range(1000, 9999)),
        "hexcolor" => format!("#{}", &h[..6]),
        "rgbcolor" => format!("rgb({}, {}, {})", rng.below(256), rng.below(256), rng.below(256)),
        "byte" => base64::engine::general_purpose::STANDARD.encode(label(rng, 1, 24)),
        "password" => format!("{}-{}", label(rng, 4, 12), rng.range(1000, 9999)),
        "duration" => (*rng.pick(&["30s", "5m", "1h", "90s", "2h30m"])).to_owned(),
        "quantity" => (*rng.pick(&["100m", "1", "250Mi", "1Gi", "2"])).to_owned(),
        _ => return None,
    })
}

/// A DNS-1123 label (lowercase letters, digits and `-`, starting with a letter, ending
/// with a letter or digit) of `min..=max` characters, made of words when it can be;
/// longer than 63 characters only when `min` asks for it.
pub(crate) fn label(rng: &mut Rng, min: usize, max: usize) -> String {
    let mut s = (*rng.pick(&WORDS)).to_owned();
    match rng.below(3) {
        0 => {}
        1 => s = format!("{s}-{}", rng.pick(&WORDS)),
        _ => s = format!("{s}-{}", rng.below(10)),
    }
    let max = max.max(min);
    if s.len() > max {
        s.truncate(max);
        while s.ends_with('-') {
            s.pop();
        }
    }
    while s.len() < min {
        let c = char::from(*rng.pick(b"abcdefghijklmnopqrstuvwxyz0123456789"));
        s.push(if s.is_empty() { 'a' } else { c });
    }
    s
}

/// A map key, distinct for distinct `n` when the word list runs out.
pub(super) fn map_key(rng: &mut Rng, n: usize) -> String {
    let k = *rng.pick(&KEYS);
    if rng.chance(80) { k.to_owned() } else { format!("{k}-{n}") }
}

thread_local! {
    /// Compiled generators by pattern (`None`: the pattern does not parse).
    static GENERATORS: RefCell<HashMap<String, Option<rand_regex::Regex>>> = RefCell::new(HashMap::new());
}

/// A string matching `pattern` (Go RE2 syntax, as the server's `regexp`), preferably within
/// `min..=max` characters; `None` when the pattern cannot be generated from.
///
/// `rand_regex` draws from the parsed pattern. Two changes first: assertions (`^`, `$`,
/// `\b`) are dropped, because `rand_regex` refuses them and a string generated from
/// the rest matches an anchored pattern anyway (a `\b` in the middle is checked after,
/// with the rest of the node); and every character class is narrowed to printable ASCII
/// where it has some (so `.` and `\w` give realistic text, and Go's ASCII-only `\d`,
/// `\w` and `\s` are met though `regex-syntax` reads them as Unicode classes).
pub(super) fn from_pattern(rng: &mut Rng, pattern: &str, min: usize, max: usize) -> Option<String> {
    let re = GENERATORS.with(|g| {
        g.borrow_mut()
            .entry(pattern.to_owned())
            .or_insert_with(|| {
                let parsed = regex_syntax::ParserBuilder::new().build().parse(pattern).ok()?;
                rand_regex::Regex::with_hir(narrow(parsed), 4).ok()
            })
            .clone()
    })?;
    let mut last = None;
    for _ in 0..8 {
        let s: Result<String, _> = re.sample(rng);
        let Ok(s) = s else { continue };
        if (min..=max).contains(&s.chars().count()) {
            return Some(s);
        }
        last = Some(s);
    }
    last
}

/// The parsed pattern without assertions, its classes narrowed to printable ASCII.
fn narrow(h: Hir) -> Hir {
    match h.into_kind() {
        HirKind::Empty | HirKind::Look(_) => Hir::empty(),
        HirKind::Literal(hir::Literal(bytes)) => Hir::literal(bytes),
        HirKind::Class(hir::Class::Unicode(c)) => {
            let mut n = c.clone();
            n.intersect(&hir::ClassUnicode::new([hir::ClassUnicodeRange::new(' ', '~')]));
            Hir::class(hir::Class::Unicode(if n.ranges().is_empty() { c } else { n }))
        }
        HirKind::Class(hir::Class::Bytes(c)) => {
            let mut n = c.clone();
            n.intersect(&hir::ClassBytes::new([hir::ClassBytesRange::new(b' ', b'~')]));
            Hir::class(hir::Class::Bytes(if n.ranges().is_empty() { c } else { n }))
        }
        HirKind::Repetition(r) => Hir::repetition(hir::Repetition { sub: Box::new(narrow(*r.sub)), ..r }),
        HirKind::Capture(c) => Hir::capture(hir::Capture { sub: Box::new(narrow(*c.sub)), ..c }),
        HirKind::Concat(hs) => Hir::concat(hs.into_iter().map(narrow).collect()),
        HirKind::Alternation(hs) => Hir::alternation(hs.into_iter().map(narrow).collect()),
    }
}
