//! Drawing the next step: [`Planner::next`]. Everything random comes from the seed; what
//! the planner knows of the cluster is its own belief (the objects it wrote, as it wrote
//! them) plus the children seen at the last checkpoint, so the same seed draws the same
//! steps as long as the operator settles the same way.
//!
//! What it writes ([`Writable`]): the kinds the script defines, with specs generated from
//! their schemas ([`super::generate`]) or taken from the operator's `samples/*.yaml` and
//! changed; and the built-in kinds its controllers are `for`, read or watch, from those
//! samples or a small template. It never writes the kinds the operator manages: it only
//! deletes or changes the operator's children behind its back.

use std::collections::BTreeMap;
use std::time::Duration;

use ctop_kubesim::FaultRule;
use serde_json::{Value, json};

use super::generate;
use super::rng::Rng;
use super::step::{Action, Step, Then};
use crate::format::ObjectRef;

/// A kind the fuzzer writes.
#[derive(Clone, Debug)]
pub struct Writable {
    /// `group/version`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// The schema of `spec`, for the kinds the script defines.
    pub spec_schema: Option<Value>,
    /// Objects of the kind from the operator's samples.
    pub samples: Vec<Value>,
    /// Whether a controller is `for` it (it gets most of the writes).
    pub primary: bool,
}

impl Writable {
    /// The names the planner uses: the samples' (objects often name each other), then
    /// `<kind>-a`, `<kind>-b` to make four.
    fn names(&self) -> Vec<(Option<String>, String)> {
        let mut out: Vec<(Option<String>, String)> = Vec::new();
        for s in &self.samples {
            let name = s["metadata"]["name"].as_str().unwrap_or_default().to_owned();
            let ns =
                self.namespaced.then(|| s["metadata"]["namespace"].as_str().unwrap_or("default").to_owned());
            if !name.is_empty() && !out.iter().any(|(n, m)| *n == ns && *m == name) {
                out.push((ns, name));
            }
        }
        let lower = self.kind.to_ascii_lowercase();
        for (i, suffix) in ["a", "b", "c", "d"].iter().enumerate() {
            if out.len() >= 4 {
                break;
            }
            // One generated name lives in a namespace of its own.
            let ns =
                self.namespaced.then(|| if i == 1 { super::OTHER_NAMESPACE } else { "default" }.to_owned());
            out.push((ns, format!("{lower}-{suffix}")));
        }
        out
    }

    fn reference(&self, ns: Option<String>, name: String) -> ObjectRef {
        ObjectRef {
            api_version: Some(self.api_version.clone()),
            kind: self.kind.clone(),
            namespace: ns,
            name,
        }
    }
}

/// What the planner is told of the world at a checkpoint.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// The operator's children, sorted.
    pub children: Vec<ObjectRef>,
}

/// Draws steps from a seed.
pub struct Planner {
    rng: Rng,
    kinds: Vec<Writable>,
    /// Plural resources faults are injected into.
    fault_resources: Vec<String>,
    faults: bool,
    /// The step (1-based) at which the operator crashes, with `faults`.
    restart_at: u64,
    drawn: u64,
    /// What the planner wrote and did not delete since, as it wrote it.
    written: BTreeMap<ObjectRef, Value>,
}

/// Labels and annotations the planner sets: a few keys and values, so that changes
/// collide and flip back.
const META_KEYS: [&str; 3] = ["fuzz.ctop.dev/a", "fuzz.ctop.dev/b", "team"];
const META_VALUES: [&str; 3] = ["x", "y", "z"];

impl Planner {
    /// A planner of `steps` steps over `kinds`.
    pub fn new(
        seed: u64,
        kinds: Vec<Writable>,
        fault_resources: Vec<String>,
        faults: bool,
        steps: u64,
    ) -> Self {
        Self {
            rng: Rng::new(seed),
            kinds,
            fault_resources,
            faults,
            restart_at: steps.div_ceil(2).max(1),
            drawn: 0,
            written: BTreeMap::new(),
        }
    }

    /// The next step.
    pub fn next(&mut self, seen: &Seen) -> Step {
        self.drawn += 1;
        let action =
            if self.faults && self.drawn == self.restart_at { Action::Restart } else { self.action(seen) };
        let then = if self.rng.chance(70) {
            Then::Settle
        } else {
            Then::Pause(Duration::from_millis(self.rng.below(300)))
        };
        Step { action, then }
    }

    fn action(&mut self, seen: &Seen) -> Action {
        loop {
            let roll = self.rng.below(100);
            let drawn = match roll {
                0..40 => Some(self.apply()),
                40..48 => self.invalid(),
                48..60 => self.delete(),
                60..70 => self.meta(),
                70..78 => self.pick_child(seen).map(|target| Action::DeleteChild { target }),
                78..84 => self.pick_child(seen).map(|target| Action::DriftChild {
                    target,
                    key: (*self.rng.pick(&META_KEYS)).to_owned(),
                    value: (*self.rng.pick(&META_VALUES)).to_owned(),
                }),
                84..96 if self.faults => self.fault(),
                96..100 if self.faults => Some(Action::DropWatches),
                _ => Some(self.apply()),
            };
            if let Some(a) = drawn {
                return a;
            }
        }
    }

    /// A kind to write, primaries three times as likely.
    fn kind(&mut self) -> Writable {
        let weights: Vec<u64> = self.kinds.iter().map(|k| if k.primary { 3 } else { 1 }).collect();
        let mut roll = self.rng.below(weights.iter().sum());
        for (k, w) in self.kinds.iter().zip(&weights) {
            if roll < *w {
                return k.clone();
            }
            roll -= w;
        }
        self.kinds[0].clone()
    }

    fn apply(&mut self) -> Action {
        let kind = self.kind();
        let names = kind.names();
        let (ns, name) = self.rng.pick(&names).clone();
        let target = kind.reference(ns.clone(), name.clone());
        let (object, what) = match self.written.get(&target).cloned() {
            Some(current) if self.rng.chance(70) => self.changed(&kind, current),
            _ => self.fresh(&kind, ns, &name),
        };
        self.written.insert(target.clone(), object.clone());
        Action::Apply { target, object, what }
    }

    /// A new object of `kind`: a sample's (renamed), or generated.
    fn fresh(&mut self, kind: &Writable, ns: Option<String>, name: &str) -> (Value, String) {
        let same = kind.samples.iter().find(|s| s["metadata"]["name"] == name).cloned();
        let sample =
            same.or_else(|| (!kind.samples.is_empty()).then(|| self.rng.pick(&kind.samples).clone()));
        let from_schema = kind.spec_schema.is_some() && (sample.is_none() || self.rng.chance(50));
        let mut object = match (sample, from_schema) {
            (Some(s), false) => s,
            _ => template(kind),
        };
        // Whether the object is new is the API server's to say when the step runs (the trace
        // says so then); here it is only what the object is made of.
        let what = if from_schema {
            if let Some(schema) = &kind.spec_schema {
                object["spec"] = generate::valid(schema, &mut self.rng);
            }
            "spec generated from the schema"
        } else {
            "from the samples"
        };
        object["apiVersion"] = json!(kind.api_version);
        object["kind"] = json!(kind.kind);
        let meta = object["metadata"].as_object_mut().map(std::mem::take).unwrap_or_default();
        let mut keep = serde_json::Map::new();
        for field in ["labels", "annotations"] {
            if let Some(v) = meta.get(field) {
                keep.insert(field.to_owned(), v.clone());
            }
        }
        keep.insert("name".into(), json!(name));
        if let Some(ns) = ns {
            keep.insert("namespace".into(), json!(ns));
        }
        object["metadata"] = Value::Object(keep);
        (object, what.to_owned())
    }

    /// `current` with its spec changed: one field, by the schema, or a sample's spec.
    fn changed(&mut self, kind: &Writable, mut current: Value) -> (Value, String) {
        if let Some(schema) = &kind.spec_schema {
            let before = current["spec"].clone();
            current["spec"] = generate::mutate(schema, &before, &mut self.rng);
            let changed = crate::oracles::changed_paths(&before, &current["spec"], 3);
            let shown: Vec<String> = changed
                .iter()
                .map(|path| match path.split('.').try_fold(&current["spec"], |v, k| v.get(k)) {
                    Some(v) => format!("{path}={}", short(v)),
                    None => format!("{path} removed"),
                })
                .collect();
            let what = if shown.is_empty() {
                "unchanged spec".to_owned()
            } else {
                format!("spec changed: {}", shown.join(", "))
            };
            return (current, what);
        }
        // A built-in kind: a change the API accepts on any of them.
        let key = (*self.rng.pick(&META_KEYS)).to_owned();
        let value = (*self.rng.pick(&META_VALUES)).to_owned();
        current["metadata"]["labels"][&key] = json!(value);
        (current, format!("label {key}={value}"))
    }

    fn invalid(&mut self) -> Option<Action> {
        let with_schema: Vec<Writable> =
            self.kinds.iter().filter(|k| k.spec_schema.is_some()).cloned().collect();
        if with_schema.is_empty() {
            return None;
        }
        let kind = self.rng.pick(&with_schema).clone();
        let schema = kind.spec_schema.clone()?;
        let broken = generate::invalid(&schema, "spec", &mut self.rng)?;
        let names = kind.names();
        let (ns, name) = self.rng.pick(&names).clone();
        let target = kind.reference(ns.clone(), name.clone());
        let (mut object, _) = match self.written.get(&target).cloned() {
            Some(current) => (current, String::new()),
            None => self.fresh(&kind, ns, &name),
        };
        object["spec"] = broken.value;
        Some(Action::Invalid { target, object, path: broken.path, rule: broken.rule })
    }

    fn written_refs(&self) -> Vec<ObjectRef> {
        self.written.keys().cloned().collect()
    }

    fn delete(&mut self) -> Option<Action> {
        let refs = self.written_refs();
        if refs.is_empty() {
            return None;
        }
        let target = self.rng.pick(&refs).clone();
        // Gone in every version it was written in.
        self.written.retain(|r, _| !r.same_object(&target));
        Some(Action::Delete { target })
    }

    fn meta(&mut self) -> Option<Action> {
        let refs = self.written_refs();
        if refs.is_empty() {
            return None;
        }
        let target = self.rng.pick(&refs).clone();
        let field = if self.rng.chance(50) { "labels" } else { "annotations" };
        let key = (*self.rng.pick(&META_KEYS)).to_owned();
        let value = self.rng.chance(75).then(|| (*self.rng.pick(&META_VALUES)).to_owned());
        if let Some(o) = self.written.get_mut(&target) {
            match &value {
                Some(v) => o["metadata"][field][&key] = json!(v),
                None => {
                    if let Some(m) = o["metadata"][field].as_object_mut() {
                        m.remove(&key);
                    }
                }
            }
        }
        Some(Action::Meta { target, field, key, value })
    }

    fn pick_child(&mut self, seen: &Seen) -> Option<ObjectRef> {
        (!seen.children.is_empty()).then(|| self.rng.pick(&seen.children).clone())
    }

    fn fault(&mut self) -> Option<Action> {
        if self.fault_resources.is_empty() {
            return None;
        }
        let resource = self.rng.pick(&self.fault_resources).clone();
        let rule = if self.rng.chance(70) {
            let verb = *self.rng.pick(&["get", "list", "watch", "create", "update", "patch", "delete"]);
            FaultRule {
                verb: Some(verb.to_owned()),
                resource: Some(resource),
                code: *self.rng.pick(&[500u16, 503, 429, 409]),
                count: u32::try_from(self.rng.range(1, 3)).unwrap_or(1),
                latency_ms: 0,
            }
        } else {
            FaultRule {
                verb: None,
                resource: Some(resource),
                code: 0,
                count: u32::try_from(self.rng.range(1, 10)).unwrap_or(1),
                latency_ms: self.rng.range(5, 200),
            }
        };
        Some(Action::Fault(rule))
    }
}

/// `v` as compact JSON, cut at 40 characters (a trace line stays a line).
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(40) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// A minimal valid object of a kind with no sample: the API server's required fields.
fn template(kind: &Writable) -> Value {
    let labels = json!({"app": kind.kind.to_ascii_lowercase()});
    let pod_spec = json!({"containers": [{"name": "main", "image": "nginx:1.27"}]});
    let spec = match (kind.api_version.as_str(), kind.kind.as_str()) {
        (_, _) if kind.spec_schema.is_some() => json!({}),
        ("v1", "Pod") => pod_spec,
        ("v1", "Service") => json!({"ports": [{"port": 80}], "selector": labels}),
        ("apps/v1", "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet") => json!({
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        }),
        ("batch/v1", "Job") => json!({"template": {"spec": {
            "containers": [{"name": "main", "image": "busybox:1.36"}], "restartPolicy": "Never"}}}),
        _ => Value::Null,
    };
    let mut o = json!({"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"labels": labels}});
    match (kind.api_version.as_str(), kind.kind.as_str()) {
        ("v1", "ConfigMap") => o["data"] = json!({"key": "value"}),
        ("v1", "Secret") => o["stringData"] = json!({"key": "value"}),
        _ if !spec.is_null() => o["spec"] = spec,
        _ => {}
    }
    o
}

/// Whether `template` knows `kind` (the script's own kinds always have one).
pub fn has_template(kind: &Writable) -> bool {
    kind.spec_schema.is_some()
        || matches!(
            (kind.api_version.as_str(), kind.kind.as_str()),
            ("v1", "Pod" | "Service" | "ConfigMap" | "Secret")
                | ("apps/v1", "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet")
                | ("batch/v1", "Job")
        )
}
