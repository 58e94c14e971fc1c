//! How the printers format cells: ages and durations (`duration.HumanDuration` of
//! `k8s.io/apimachinery/pkg/util/duration`), label selectors and label maps as
//! `k8s.io/apimachinery/pkg/labels` prints them, containers, booleans and the small
//! readers of optional fields the printers share.

use serde_json::Value;

/// `duration.HumanDuration` of a duration in whole seconds, as the printers show ages.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let (m, h) = (s / 60, s / 3600);
    let d = h / 24;
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 { format!("{m}m") } else { format!("{m}m{}s", s % 60) }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 { format!("{h}h") } else { format!("{h}h{}m", m % 60) }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 { format!("{d}d") } else { format!("{d}d{}h", h % 24) }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else if h < 24 * 365 * 8 {
        if d % 365 == 0 { format!("{}y", d / 365) } else { format!("{}y{}d", d / 365, d % 365) }
    } else {
        format!("{}y", d / 365)
    }
}

/// A timestamp field, when set and well formed.
pub(super) fn time(o: &Value, pointer: &str) -> Option<jiff::Timestamp> {
    o.pointer(pointer).and_then(Value::as_str).and_then(|t| t.parse().ok())
}

/// `translateTimestampSince`: how long ago `t` was, `<unknown>` for a zero time.
pub(super) fn since(t: Option<jiff::Timestamp>) -> String {
    match t {
        Some(t) => human_duration(seconds_between(t, crate::clock::timestamp())),
        None => "<unknown>".into(),
    }
}

/// Whole seconds from `from` to `to` (truncated towards zero, like Go's `int(d.Seconds())`).
pub(super) fn seconds_between(from: jiff::Timestamp, to: jiff::Timestamp) -> i64 {
    to.duration_since(from).as_secs()
}

/// The Age cell.
pub(super) fn age(o: &Value) -> Value {
    Value::String(since(time(o, "/metadata/creationTimestamp")))
}

/// The Name cell.
pub(super) fn name(o: &Value) -> Value {
    Value::String(text(o, "/metadata/name"))
}

/// The Created At cell of the default table: RFC 3339 in UTC, Go's zero time when unset.
pub(super) fn created_at(o: &Value) -> Value {
    let t = time(o, "/metadata/creationTimestamp");
    Value::String(
        t.map_or_else(|| "0001-01-01T00:00:00Z".to_owned(), |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
    )
}

/// A string field, empty when unset.
pub(super) fn text(o: &Value, pointer: &str) -> String {
    o.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// A string field, `placeholder` when unset or empty.
pub(super) fn text_or(o: &Value, pointer: &str, placeholder: &str) -> String {
    let s = text(o, pointer);
    if s.is_empty() { placeholder.to_owned() } else { s }
}

/// An integer field, 0 when unset.
pub(super) fn int(o: &Value, pointer: &str) -> i64 {
    o.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The items of a list field.
pub(super) fn items<'a>(o: &'a Value, pointer: &str) -> &'a [Value] {
    o.pointer(pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The number of entries of a map or list field.
pub(super) fn len(o: &Value, pointer: &str) -> i64 {
    let n = match o.pointer(pointer) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Whether the object is being deleted.
pub(super) fn deleting(o: &Value) -> bool {
    o.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// `printBool`: `True` or `False`.
pub(super) fn go_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// `layoutContainerCells`: the containers' names and images, each joined with commas.
pub(super) fn containers(o: &Value, pointer: &str) -> [Value; 2] {
    let list = items(o, pointer);
    let join = |field: &str| {
        list.iter().map(|c| c[field].as_str().unwrap_or_default()).collect::<Vec<_>>().join(",")
    };
    [Value::String(join("name")), Value::String(join("image"))]
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, `<none>` for none.
pub(super) fn labels(o: &Value, pointer: &str) -> String {
    let Some(map) = o.pointer(pointer).and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    // serde_json's maps keep their keys sorted, like Go's sorted output.
    map.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())).collect::<Vec<_>>().join(",")
}

/// `metav1.LabelSelectorAsSelector(...).String()`: the requirements sorted by key
/// (`k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`), empty for a selector that selects
/// everything (or nothing, when unset); `None` for an operator the API does not know.
pub(super) fn selector(sel: Option<&Value>) -> Option<String> {
    let Some(sel) = sel.filter(|s| s.is_object()) else { return Some(String::new()) };
    let mut reqs: Vec<(String, String)> = Vec::new();
    for (k, v) in sel["matchLabels"].as_object().into_iter().flatten() {
        reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
    }
    for e in sel["matchExpressions"].as_array().into_iter().flatten() {
        let key = e["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> =
            e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        values.sort_unstable();
        let text = match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        };
        reqs.push((key.to_owned(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Some(reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(","))
}

/// `metav1.FormatLabelSelector`: the selector, `<none>` when empty, `<error>` when invalid.
pub(super) fn format_selector(sel: Option<&Value>) -> String {
    match selector(sel) {
        None => "<error>".into(),
        Some(s) if s.is_empty() => "<none>".into(),
        Some(s) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn human_durations_match_go() {
        let day = 86400;
        for (secs, want) in [
            (-5, "<invalid>"),
            (-1, "0s"),
            (5, "5s"),
            (119, "119s"),
            (150, "2m30s"),
            (180, "3m"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600 + 60, "3h1m"),
            (30 * 3600, "30h"),
            (3 * day, "3d"),
            (3 * day + 3600, "3d1h"),
            (400 * day, "400d"),
            (730 * day, "2y"),
            (800 * day, "2y70d"),
            (3000 * day, "8y"),
        ] {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }

    #[test]
    fn selectors_print_like_the_labels_package() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
            {"key": "c", "operator": "In", "values": ["y", "x"]},
            {"key": "0", "operator": "DoesNotExist"},
            {"key": "d", "operator": "Exists"},
        ]});
        assert_eq!(selector(Some(&sel)).as_deref(), Some("!0,a=1,b=2,c in (x,y),d"));
        assert_eq!(format_selector(Some(&json!({}))), "<none>");
        assert_eq!(format_selector(None), "<none>");
        assert_eq!(
            format_selector(Some(&json!({"matchExpressions": [{"key": "a", "operator": "Is"}]}))),
            "<error>"
        );
        assert_eq!(labels(&json!({"l": {"z": "1", "a": "2"}}), "/l"), "a=2,z=1");
        assert_eq!(labels(&json!({}), "/l"), "<none>");
    }
}
