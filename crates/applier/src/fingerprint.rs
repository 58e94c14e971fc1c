//! A stable digest of JSON content, independent of object key order.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// A SHA-256 digest of JSON content.
pub(crate) type Fingerprint = [u8; 32];

/// Digest `value` with object keys sorted, so that two equal documents built in a different
/// key order (or with `serde_json`'s `preserve_order` feature on) hash the same.
pub(crate) fn fingerprint(value: &Value) -> Fingerprint {
    let mut hasher = Sha256::new();
    feed(&mut hasher, value);
    hasher.finalize().into()
}

fn feed(h: &mut Sha256, value: &Value) {
    match value {
        Value::Null => h.update(b"n"),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            h.update(b"#");
            str_(h, &n.to_string());
        }
        Value::String(s) => {
            h.update(b"s");
            str_(h, s);
        }
        Value::Array(items) => {
            h.update(b"[");
            h.update((items.len() as u64).to_le_bytes());
            for item in items {
                feed(h, item);
            }
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            h.update(b"{");
            h.update((keys.len() as u64).to_le_bytes());
            for k in keys {
                str_(h, k);
                if let Some(v) = map.get(k) {
                    feed(h, v);
                }
            }
        }
    }
}

/// Strings are length-prefixed so that no two different documents share a byte stream.
fn str_(h: &mut Sha256, s: &str) {
    h.update((s.len() as u64).to_le_bytes());
    h.update(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_does_not_matter_but_content_does() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":{"x":[1,"2"],"y":null}}"#).expect("json");
        let b: Value = serde_json::from_str(r#"{"b":{"y":null,"x":[1,"2"]},"a":1}"#).expect("json");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&json!({"a": "1"})), fingerprint(&json!({"a": 1})));
        assert_ne!(fingerprint(&json!(["ab", "c"])), fingerprint(&json!(["a", "bc"])));
        assert_ne!(fingerprint(&json!({"a": [1]})), fingerprint(&json!({"a": [[1]]})));
    }
}
