//! How every part of ctop reads YAML (values files, manifests, API request bodies): one
//! library (serde-saphyr) with one set of rules, so a document means the same everywhere.
//!
//! YAML 1.2 scalars, as Kubernetes' own reader: `yes`, `on` and `0755` stay strings; a
//! repeated key keeps its last value; `<<` is an ordinary key; `.nan` and `.inf` become
//! null; `!!binary` is kept as text; nesting is limited to 128; errors are one line.

/// Why a text is not YAML (one line, with the position).
pub use serde_saphyr::Error;

/// The reading rules; `max_nodes` raises the node budget for large bodies (the default
/// budget allows 250,000 nodes).
#[must_use]
pub fn options(max_nodes: Option<usize>) -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.underscored_numbers_as_strings = true;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::PassThrough;
    options.merge_keys = serde_saphyr::MergeKeyPolicy::AsOrdinary;
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::PassThrough;
    options.ignore_binary_tag_for_string = true;
    options.with_snippet = false;
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = 128;
    if let Some(n) = max_nodes {
        budget.max_nodes = n;
    }
    options.budget = Some(budget);
    options
}

/// Read one YAML document with [`options`].
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    serde_saphyr::from_str_with_options(text, options(None))
}

/// Read every document of a `---`-separated stream with [`options`] (empty documents are
/// left out).
pub fn documents<T: serde::de::DeserializeOwned>(text: &str) -> Result<Vec<T>, Error> {
    serde_saphyr::from_multiple_with_options(text, options(None))
}

/// Why a value could not be written as YAML.
pub use serde_saphyr::SerializeError;

/// Write `value` as block YAML, multi-line strings quoted rather than as block scalars
/// (what `ctop manifests` prints and golden files keep), so that YAML 1.1 readers such as
/// kubectl's read back the same value.
pub fn to_string<T: serde::Serialize>(value: &T) -> Result<String, SerializeError> {
    let mut options = serde_saphyr::SerializerOptions::default();
    options.prefer_block_scalars = false;
    serde_saphyr::to_string_with_options(value, options)
}

/// [`to_string`] with multi-line strings as literal block scalars (`|`) where their text
/// allows it, for documents whose strings are meant to be read in place, such as a script
/// in a ConfigMap. A block scalar is always a string, to YAML 1.1 readers too; a string a
/// block cannot hold as it is (trailing spaces on a line, say) is still quoted.
pub fn to_string_with_blocks<T: serde::Serialize>(value: &T) -> Result<String, SerializeError> {
    serde_saphyr::to_string_with_options(value, serde_saphyr::SerializerOptions::default())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    #[test]
    fn scalars_read_as_yaml_1_2() {
        let v: Value = super::from_str("a: yes\nb: on\nc: 0755\nd: 1_000\ne: true\nf: 3\n").expect("reads");
        assert_eq!(v, json!({"a": "yes", "b": "on", "c": "0755", "d": "1_000", "e": true, "f": 3}));
        let v: Value = super::from_str("a: 1\na: 2\n").expect("a repeated key");
        assert_eq!(v, json!({"a": 2}));
    }

    #[test]
    fn blocks_hold_multi_line_strings_that_read_back_the_same() {
        let v = json!({"script": "-- a: b\nreturn {}\n", "trailing": "x  \ny\n", "word": "on"});
        let yaml = super::to_string_with_blocks(&v).expect("writes");
        assert!(yaml.contains("script: |\n  -- a: b\n  return {}\n"), "{yaml}");
        assert!(yaml.contains("word: 'on'") || yaml.contains("word: \"on\""), "{yaml}");
        assert_eq!(super::from_str::<Value>(&yaml).expect("reads"), v);
    }

    #[test]
    fn a_stream_reads_document_by_document() {
        let docs: Vec<Value> = super::documents("a: 1\n---\n# nothing\n---\nb: on\n").expect("reads");
        assert_eq!(docs.iter().filter(|d| !d.is_null()).count(), 2, "{docs:?}");
        assert_eq!(docs.last(), Some(&json!({"b": "on"})));
    }
}
