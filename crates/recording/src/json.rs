//! Small JSON helpers: the items of a list answer as the very text that arrived, an
//! object's identity without parsing it into a `Value`, and numbers that read back to the
//! same bits.

use serde::Deserialize;

/// The top-level items of a JSON array text, each exactly as written (trimmed of the
/// whitespace around it); `None` when `text` is not one array.
pub(crate) fn split_array(text: &str) -> Option<Vec<&str>> {
    let bytes = text.as_bytes();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut start = i;
    while let Some(&b) = bytes.get(i) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => depth += 1,
                b']' if depth == 0 => {
                    let last = text[start..i].trim();
                    if !last.is_empty() {
                        items.push(last);
                    } else if !items.is_empty() {
                        return None;
                    }
                    return (skip_ws(bytes, i + 1) == bytes.len()).then_some(items);
                }
                b']' | b'}' => depth = depth.checked_sub(1)?,
                b',' if depth == 0 => {
                    let item = text[start..i].trim();
                    if item.is_empty() {
                        return None;
                    }
                    items.push(item);
                    start = i + 1;
                }
                _ => {}
            }
        }
        i += 1;
    }
    None
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// `[` the items joined by `,` `]`: the list answer [`split_array`] took apart.
pub(crate) fn join_array<S: AsRef<str>>(items: &[S]) -> String {
    let len = items.iter().map(|s| s.as_ref().len() + 1).sum::<usize>() + 2;
    let mut out = String::with_capacity(len);
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item.as_ref());
    }
    out.push(']');
    out
}

/// Who an object is: `apiVersion/kind`, namespace, name, resourceVersion.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Ident {
    /// `apiVersion/kind` (`kind` alone without an apiVersion).
    pub kind: String,
    /// `metadata.namespace`.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.resourceVersion`.
    pub rv: Option<String>,
}

#[derive(Deserialize)]
struct Head {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: HeadMeta,
}

#[derive(Default, Deserialize)]
struct HeadMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
}

impl Ident {
    /// The identity of the object `text`; the default (all empty) when it is not an object
    /// with string metadata.
    pub(crate) fn of(text: &str) -> Self {
        let Ok(h) = serde_json::from_str::<Head>(text) else { return Self::default() };
        let kind =
            if h.api_version.is_empty() { h.kind } else { ctop_core::kind_key(&h.api_version, &h.kind) };
        Self { kind, namespace: h.metadata.namespace, name: h.metadata.name, rv: h.metadata.resource_version }
    }

    /// Whether this is the object `namespace`/`name` (a missing namespace matches only a
    /// cluster-scoped object).
    pub(crate) fn is(&self, namespace: Option<&str>, name: &str) -> bool {
        self.name == name && self.namespace.as_deref().filter(|n| !n.is_empty()) == namespace
    }
}

/// A number as a recording stores it: a whole number of at most 2^53 as itself, anything
/// else (fractions, -0, NaN, infinities) as the hex of its IEEE-754 bits, since serde_json
/// (built without `float_roundtrip`) may read a decimal back one ulp off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    /// Exact as an integer.
    Int(i64),
    /// `f64::to_bits`, in hex.
    Bits(u64),
}

impl Num {
    pub(crate) fn of(x: f64) -> Self {
        const LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53
        if x.is_finite() && x.fract() == 0.0 && x.abs() <= LIMIT && !(x == 0.0 && x.is_sign_negative()) {
            #[allow(clippy::cast_possible_truncation)] // whole and within ±2^53: exact
            Num::Int(x as i64)
        } else {
            Num::Bits(x.to_bits())
        }
    }

    pub(crate) fn value(self) -> f64 {
        match self {
            #[allow(clippy::cast_precision_loss)] // written only for |x| ≤ 2^53: exact
            Num::Int(n) => n as f64,
            Num::Bits(b) => f64::from_bits(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_arrays_verbatim() {
        let text = r#" [ {"a":[1,2],"b":"x,]}\"y"} , {"c":{}},3,"s" ] "#;
        assert_eq!(
            split_array(text),
            Some(vec![r#"{"a":[1,2],"b":"x,]}\"y"}"#, r#"{"c":{}}"#, "3", r#""s""#])
        );
        assert_eq!(split_array("[]"), Some(vec![]));
        assert_eq!(split_array(" [ ] "), Some(vec![]));
        for bad in ["", "{}", "[1,]", "[,1]", "[1 2", "[1]x", "[}]"] {
            assert_eq!(split_array(bad), None, "{bad}");
        }
        assert_eq!(join_array(&["1", "{}"]), "[1,{}]");
    }

    #[test]
    fn identity_of_an_object() {
        let id = Ident::of(
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"},"spec":{}}"#,
        );
        assert_eq!(id.kind, "apps/v1/Deployment");
        assert!(id.is(Some("ns"), "a"));
        assert!(!id.is(None, "a"));
        assert_eq!(id.rv.as_deref(), Some("7"));
        assert_eq!(Ident::of("[1]"), Ident::default());
    }

    #[test]
    fn numbers_keep_their_bits() {
        for x in [0.0, -0.0, 1.0, 1_700_000_000_123.0, 0.1 + 0.2, f64::MIN_POSITIVE, f64::NAN, 9e15, 1e300] {
            assert_eq!(Num::of(x).value().to_bits(), x.to_bits(), "{x}");
        }
        assert_eq!(Num::of(42.0), Num::Int(42));
        assert!(matches!(Num::of(0.5), Num::Bits(_)));
    }
}
