//! Golden states: what each step left in the cluster, rendered as YAML that stays the same
//! from run to run, written beside the test by `ctop test --update` and compared otherwise.
//! Start with [`render_step`] (one step's objects) and [`Golden::text`] (the file).
//!
//! What is rendered: every object of the kinds the script defines (spec and status), every
//! child of a primary object (the objects it applied, found by their owner reference or
//! ApplySet label) in full, and the other objects the test applied as their identity and
//! metadata only. What changes from run to run without meaning anything is replaced: the
//! server's bookkeeping (`uid`, `resourceVersion`, `creationTimestamp`, `managedFields`,
//! owner references' `uid`) is dropped, any RFC 3339 time becomes `<time>`, any UUID
//! `<uid>` and a container id (`kubesim://…`) `<container-id>`, a Service's allocated addresses and node ports become `<allocated>`, and a
//! Secret's values become `<redacted: N bytes>` (a golden file is committed; a secret has
//! no place in it, and generated ones differ on every run).
//!
//! A `replay:` step's document also has its findings under `replay:` (exit, summary, the
//! objects whose calls differ), without the recording's id, times and uids masked.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Serialize;
use serde_json::{Map, Value};

/// How much of an object a golden file shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Everything but the volatile fields.
    Full,
    /// `apiVersion`, `kind` and the metadata (labels, annotations, finalizers, owners).
    Metadata,
}

/// One step's part of a golden file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepState {
    /// The step's number (1-based).
    pub step: usize,
    /// The step's name.
    pub name: String,
    /// The objects, sorted by kind, namespace and name.
    pub objects: Vec<Value>,
    /// A `replay:` step's findings ([`crate::replay::step::golden`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<Value>,
}

/// A whole golden file: the state after each step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Golden {
    /// The steps, in order.
    pub steps: Vec<StepState>,
}

/// Where the golden file of the test file `test` lives: `tests/NAME.yaml` →
/// `tests/NAME.golden.yaml`.
pub fn path_of(test: &Path) -> PathBuf {
    let stem = test.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    test.with_file_name(format!("{stem}.golden.yaml"))
}

/// Whether `path` is a golden file rather than a test.
pub fn is_golden(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".golden.yaml"))
}

impl Golden {
    /// The file's text: a header comment, then one YAML document per step.
    pub fn text(&self, test_file: &str) -> String {
        let mut out = format!(
            "# The state after each step of {test_file}, written by `ctop test --update`.\n\
             # `ctop test` fails on any difference: review changes to this file like code.\n"
        );
        for s in &self.steps {
            out.push_str("---\n");
            // A serde_json::Value always serializes; the fallback only keeps the file whole.
            out.push_str(
                &ctop_core::yaml::to_string(s).unwrap_or_else(|e| format!("# cannot render: {e}\n")),
            );
        }
        out
    }
}

/// The state of one step: `objects` with their detail, normalized and sorted.
pub fn render_step(step: usize, name: &str, objects: &[(Value, Detail)]) -> StepState {
    let mut rendered: Vec<Value> = objects.iter().map(|(o, d)| normalize(o, *d)).collect();
    rendered.sort_by_key(sort_key);
    rendered.dedup();
    StepState { step, name: name.to_owned(), objects: rendered, replay: None }
}

fn sort_key(o: &Value) -> (String, String, String, String) {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (s(&o["apiVersion"]), s(&o["kind"]), s(&o["metadata"]["namespace"]), s(&o["metadata"]["name"]))
}

/// `obj` without what changes from run to run (see the module docs).
pub fn normalize(obj: &Value, detail: Detail) -> Value {
    let mut out = Map::new();
    for key in ["apiVersion", "kind"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    if let Some(Value::Object(meta)) = obj.get("metadata") {
        out.insert("metadata".into(), Value::Object(metadata(meta)));
    }
    if detail == Detail::Full
        && let Some(m) = obj.as_object()
    {
        for (k, v) in m {
            if !["apiVersion", "kind", "metadata"].contains(&k.as_str()) {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    let mut value = Value::Object(out);
    if detail == Detail::Full {
        match (obj["apiVersion"].as_str(), obj["kind"].as_str()) {
            (Some("v1"), Some("Secret")) => redact_secret(&mut value),
            (Some("v1"), Some("Service")) => mask_allocations(&mut value),
            _ => {}
        }
    }
    mask_volatile(&mut value);
    value
}

/// The metadata a golden file keeps.
fn metadata(meta: &Map<String, Value>) -> Map<String, Value> {
    const KEEP: [&str; 8] = [
        "name",
        "namespace",
        "generateName",
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "generation",
    ];
    let mut out = Map::new();
    for key in KEEP {
        let Some(v) = meta.get(key) else { continue };
        let v = match key {
            "ownerReferences" => Value::Array(
                v.as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| {
                        let mut r = r.clone();
                        if let Some(m) = r.as_object_mut() {
                            m.remove("uid");
                        }
                        r
                    })
                    .collect(),
            ),
            "annotations" => {
                let mut a = v.clone();
                if let Some(m) = a.as_object_mut() {
                    m.remove("kubectl.kubernetes.io/last-applied-configuration");
                    // ctop's version: a release would change every golden file.
                    m.remove(ctop_applier::applyset::TOOLING_ANNOTATION);
                    if m.is_empty() {
                        continue;
                    }
                }
                a
            }
            _ => v.clone(),
        };
        out.insert(key.to_owned(), v);
    }
    if meta.contains_key("deletionTimestamp") {
        out.insert("deletionTimestamp".into(), Value::from("<time>"));
    }
    out
}

fn redact_secret(v: &mut Value) {
    for field in ["data", "stringData"] {
        if let Some(Value::Object(m)) = v.get_mut(field) {
            for value in m.values_mut() {
                let bytes = match (field, value.as_str()) {
                    ("data", Some(s)) => {
                        base64::engine::general_purpose::STANDARD.decode(s).map_or(s.len(), |b| b.len())
                    }
                    (_, Some(s)) => s.len(),
                    _ => 0,
                };
                *value = Value::from(format!("<redacted: {bytes} bytes>"));
            }
        }
    }
}

fn mask_allocations(v: &mut Value) {
    let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let allocated = || Value::from("<allocated>");
    if spec.get("clusterIP").and_then(Value::as_str).is_some_and(|ip| ip != "None") {
        spec.insert("clusterIP".into(), allocated());
    }
    if let Some(Value::Array(ips)) = spec.get_mut("clusterIPs") {
        for ip in ips.iter_mut().filter(|ip| ip.as_str() != Some("None")) {
            *ip = allocated();
        }
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            if p.contains_key("nodePort") {
                p.insert("nodePort".into(), allocated());
            }
        }
    }
}

/// Times and UUIDs anywhere in `v` become `<time>` and `<uid>`.
pub(crate) fn mask_volatile(v: &mut Value) {
    match v {
        Value::String(s) => {
            if is_time(s) {
                *s = "<time>".into();
            } else if is_uuid(s) {
                *s = "<uid>".into();
            } else if is_container_id(s) {
                *s = "<container-id>".into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_volatile),
        Value::Object(m) => m.values_mut().for_each(mask_volatile),
        _ => {}
    }
}

/// An RFC 3339 time as the API server writes one (`2024-05-01T10:00:00Z`, fractions and
/// offsets allowed).
fn is_time(s: &str) -> bool {
    s.len() >= 20
        && s.len() <= 35
        && s.as_bytes().get(10) == Some(&b'T')
        && s.parse::<jiff::Timestamp>().is_ok()
}

/// A container's id as a kubelet reports it: `runtime://` and 32 or more hex digits.
fn is_container_id(s: &str) -> bool {
    s.split_once("://").is_some_and(|(runtime, id)| {
        !runtime.is_empty()
            && runtime.bytes().all(|c| c.is_ascii_lowercase())
            && id.len() >= 32
            && id.bytes().all(|c| c.is_ascii_hexdigit())
    })
}

/// A UUID in its 8-4-4-4-12 hex form.
fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A unified diff of the golden file's text (`expected`) against this run's (`actual`),
/// with three lines of context; empty when they are equal.
pub fn diff(expected: &str, actual: &str, golden_name: &str) -> String {
    if expected == actual {
        return String::new();
    }
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{golden_name} (golden)"), &format!("{golden_name} (this run)"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn volatile_fields_are_dropped_or_masked() {
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {
                "name": "shop", "namespace": "default", "uid": "0b7e0a8e-8f7d-4c1e-9d7a-3f5e0c2b1a00",
                "resourceVersion": "42", "creationTimestamp": "2025-01-01T00:00:00Z", "generation": 1,
                "managedFields": [{"manager": "ctop"}],
                "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "shop",
                    "uid": "0b7e0a8e-8f7d-4c1e-9d7a-3f5e0c2b1a00", "controller": true}],
            },
            "spec": {"replicas": 2},
            "status": {"conditions": [{"type": "Available", "lastUpdateTime": "2025-01-01T00:00:01.123Z"}]},
        });
        let n = normalize(&obj, Detail::Full);
        assert_eq!(
            n,
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "shop", "namespace": "default", "generation": 1,
                    "ownerReferences": [{"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "shop", "controller": true}]},
                "spec": {"replicas": 2},
                "status": {"conditions": [{"type": "Available", "lastUpdateTime": "<time>"}]},
            })
        );
        let m = normalize(&obj, Detail::Metadata);
        assert!(m.get("spec").is_none() && m["metadata"]["name"] == "shop");
    }

    #[test]
    fn secrets_are_redacted_and_services_masked() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"},
            "data": {"token": "aGVsbG8="}, "stringData": {"x": "abc"}});
        let n = normalize(&secret, Detail::Full);
        assert_eq!(n["data"]["token"], "<redacted: 5 bytes>");
        assert_eq!(n["stringData"]["x"], "<redacted: 3 bytes>");
        let pod = json!({"kind": "Pod", "status": {"containerStatuses": [{"containerID": "kubesim://561c631bd46a4917a86759a3f3e029fa"}]}});
        assert_eq!(
            normalize(&pod, Detail::Full)["status"]["containerStatuses"][0]["containerID"],
            "<container-id>"
        );
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"clusterIP": "10.96.0.12", "clusterIPs": ["10.96.0.12"], "ports": [{"port": 80, "nodePort": 30001}]}});
        let n = normalize(&svc, Detail::Full);
        assert_eq!(
            n["spec"],
            json!({"clusterIP": "<allocated>", "clusterIPs": ["<allocated>"], "ports": [{"port": 80, "nodePort": "<allocated>"}]})
        );
        let headless = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "h"}, "spec": {"clusterIP": "None"}});
        assert_eq!(normalize(&headless, Detail::Full)["spec"]["clusterIP"], "None");
    }

    #[test]
    fn steps_render_sorted_and_diff_by_line() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}});
        let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let step = render_step(1, "create", &[(a, Detail::Full), (b, Detail::Full)]);
        assert_eq!(step.objects[0]["metadata"]["name"], "a");
        let golden = Golden { steps: vec![step] };
        let text = golden.text("tests/basic.yaml");
        assert!(text.starts_with("# The state after each step of tests/basic.yaml"), "{text}");
        assert!(text.contains("---\nstep: 1\nname: create\nobjects:\n"), "{text}");
        let changed = text.replace("name: b", "name: c");
        let d = diff(&text, &changed, "basic.golden.yaml");
        assert!(d.contains("-    name: b\n+    name: c\n"), "{d}");
        assert!(diff(&text, &text, "x").is_empty());
        assert_eq!(path_of(Path::new("op/tests/basic.yaml")), Path::new("op/tests/basic.golden.yaml"));
        assert!(
            is_golden(Path::new("op/tests/basic.golden.yaml"))
                && !is_golden(Path::new("op/tests/basic.yaml"))
        );
    }
}
