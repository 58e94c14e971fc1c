//! An `Operator` document read into types: its controllers, each with its sources, its
//! pipeline (kept as the YAML value, parsed by [`crate::Pipeline::new`]) and its target.
//!
//! A controller that does not read is kept with its error ([`Controller::broken`]) so that
//! the others still run and the status can name it; only a document that is no `Operator`
//! at all, or has no name, is an error of the whole.

use ctop_core::{KindRef, LabelSelector, NamedPredicate, Predicate, is_dns_label};
use serde_json::Value;

use super::error::OperatorError;

/// `dcontroller.io/v1alpha1`, the API version of `Operator` objects.
pub const OPERATOR_API_VERSION: &str = "dcontroller.io/v1alpha1";

/// The version of every view kind (`<operator>.view.dcontroller.io/v1alpha1`).
pub const VIEW_VERSION: &str = "v1alpha1";

/// A parsed `Operator`.
#[derive(Clone, Debug)]
pub struct Operator {
    /// `metadata.name`.
    pub name: String,
    /// The controllers, in the order of `spec.controllers`.
    pub controllers: Vec<Controller>,
    /// The document as it was read (applied by `ctop run` so the cluster has it).
    pub object: Value,
}

/// One controller of an Operator.
#[derive(Clone, Debug)]
pub struct Controller {
    /// Its name (`controllers[i]` when it has none).
    pub name: String,
    /// Its sources; empty when it is broken.
    pub sources: Vec<Source>,
    /// The `pipeline` value.
    pub pipeline: Value,
    /// Its target; `None` when it is broken.
    pub target: Option<Target>,
    /// Why the controller cannot run, naming the controller and the field.
    pub broken: Option<String>,
}

/// Watcher, OneShot or Periodic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceType {
    /// Objects of a kind, watched.
    Watcher,
    /// One trigger object (`one-shot-trigger`) at start.
    OneShot,
    /// A periodic re-evaluation of the whole state.
    Periodic,
}

/// One source of a controller.
#[derive(Clone, Debug)]
pub struct Source {
    /// Its type.
    pub type_: SourceType,
    /// Its kind, resolved to an API version (a view's is the operator's view group).
    pub kind: KindRef,
    /// Whether it is a view of the operator.
    pub view: bool,
    /// Only objects of this namespace.
    pub namespace: Option<String>,
    /// Only objects these labels select, as `a=b,c in (d)` (for the watch) and parsed.
    pub label_selector: Option<(String, LabelSelector)>,
    /// Which events trigger (`None` also when the predicate has a `Not`, which ctop's
    /// watches cannot express: then every event triggers, see `DIVERGENCES.md`).
    pub predicate: Option<Predicate>,
    /// A Periodic source's period.
    pub period: Option<ctop_core::Duration>,
}

/// Where a controller writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetType {
    /// Create or update whole objects (children of the Operator in ctop).
    Updater,
    /// Merge the output into existing objects.
    Patcher,
}

/// The target of a controller.
#[derive(Clone, Debug)]
pub struct Target {
    /// Its kind.
    pub kind: KindRef,
    /// Whether it is a view of the operator.
    pub view: bool,
    /// Its type.
    pub type_: TargetType,
}

impl Operator {
    /// Reads an `Operator` from its YAML text.
    pub fn from_yaml(text: &str) -> Result<Operator, OperatorError> {
        let value: Value = ctop_core::yaml::from_str(text).map_err(|e| OperatorError::Yaml(e.to_string()))?;
        Operator::from_value(value)
    }

    /// Reads an `Operator` from its JSON value.
    pub fn from_value(object: Value) -> Result<Operator, OperatorError> {
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        if kind != "Operator" || api_version != OPERATOR_API_VERSION {
            return Err(OperatorError::NotAnOperator {
                found: format!("{api_version}/{kind}").trim_matches('/').to_string(),
            });
        }
        let name = match object.pointer("/metadata/name") {
            Some(Value::String(s)) if is_dns_label(s) => s.clone(),
            Some(Value::String(s)) => return Err(OperatorError::BadName(s.clone())),
            _ => return Err(OperatorError::NoName),
        };
        let controllers = match object.pointer("/spec/controllers") {
            Some(Value::Array(items)) if !items.is_empty() => {
                items.iter().enumerate().map(|(i, c)| controller(&name, i, c)).collect()
            }
            _ => return Err(OperatorError::NoControllers { operator: name }),
        };
        let mut op = Operator { name, controllers, object };
        op.refuse_duplicate_names();
        Ok(op)
    }

    /// The view group of this operator, `<name>.view.dcontroller.io`.
    pub fn view_group(&self) -> String {
        view_group(&self.name)
    }

    /// A second controller of a name already taken is broken.
    fn refuse_duplicate_names(&mut self) {
        for i in 1..self.controllers.len() {
            let name = self.controllers[i].name.clone();
            if self.controllers[..i].iter().any(|c| c.name == name) && self.controllers[i].broken.is_none() {
                self.controllers[i].broken = Some(format!(
                    "controller {name:?}: name: another controller of this operator has this name"
                ));
            }
        }
    }
}

/// `<operator>.view.dcontroller.io`.
pub fn view_group(operator: &str) -> String {
    format!("{operator}.view.dcontroller.io")
}

fn controller(operator: &str, i: usize, c: &Value) -> Controller {
    let name = c.get("name").and_then(Value::as_str).map(str::to_owned);
    let shown = name.clone().unwrap_or_else(|| format!("controllers[{i}]"));
    let mut out = Controller {
        name: shown.clone(),
        sources: Vec::new(),
        pipeline: c.get("pipeline").cloned().unwrap_or(Value::Null),
        target: None,
        broken: None,
    };
    let fail = |field: &str, message: String| Some(format!("controller {shown:?}: {field}: {message}"));
    if name.is_none() {
        out.broken = fail("name", "a controller needs a name".into());
        return out;
    }
    if c.get("pipeline").is_none() {
        out.broken = fail("pipeline", "a controller needs a pipeline".into());
        return out;
    }
    let sources = match c.get("sources") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        _ => {
            out.broken = fail("sources", "a controller needs at least one source".into());
            return out;
        }
    };
    for (j, s) in sources.iter().enumerate() {
        match source(operator, s) {
            Ok(s) => out.sources.push(s),
            Err(e) => {
                out.broken = fail(&format!("sources[{j}]"), e);
                return out;
            }
        }
    }
    match c
        .get("target")
        .ok_or_else(|| "a controller needs a target".to_string())
        .and_then(|t| target(operator, t))
    {
        Ok(t) => out.target = Some(t),
        Err(e) => out.broken = fail("target", e),
    }
    out
}

fn source(operator: &str, s: &Value) -> Result<Source, String> {
    let type_ = match s.get("type").and_then(Value::as_str).unwrap_or("Watcher") {
        "Watcher" | "" => SourceType::Watcher,
        "OneShot" => SourceType::OneShot,
        "Periodic" => SourceType::Periodic,
        other => return Err(format!("type: unknown source type {other:?} (Watcher, OneShot or Periodic)")),
    };
    let (kind, view) = resource(operator, s)?;
    let namespace = s.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).map(str::to_owned);
    let label_selector = match s.get("labelSelector") {
        None | Some(Value::Null) => None,
        Some(sel) => {
            let parsed = LabelSelector::from_object(sel).map_err(|e| format!("labelSelector: {e}"))?;
            Some((selector_text(sel), parsed)).filter(|(t, _)| !t.is_empty())
        }
    };
    let predicate = match s.get("predicate") {
        None | Some(Value::Null) => None,
        Some(p) => predicate(p).map_err(|e| format!("predicate: {e}"))?,
    };
    let period = match (type_, s.pointer("/parameters/period")) {
        (SourceType::Periodic, None) => Some(ctop_core::Duration::from_secs(300)),
        (SourceType::Periodic, Some(Value::String(p))) => {
            Some(p.parse().map_err(|e| format!("parameters.period: {p:?}: {e}"))?)
        }
        (SourceType::Periodic, Some(other)) => {
            return Err(format!("parameters.period: {other} is not a duration such as \"5m\""));
        }
        _ => None,
    };
    Ok(Source { type_, kind, view, namespace, label_selector, predicate, period })
}

fn target(operator: &str, t: &Value) -> Result<Target, String> {
    let type_ = match t.get("type").and_then(Value::as_str).unwrap_or("Updater") {
        "Updater" | "" => TargetType::Updater,
        "Patcher" => TargetType::Patcher,
        other => return Err(format!("type: unknown target type {other:?} (Updater or Patcher)")),
    };
    let (kind, view) = resource(operator, t)?;
    Ok(Target { kind, view, type_ })
}

/// The kind of a source or target: a view when `apiGroup` is missing.
fn resource(operator: &str, r: &Value) -> Result<(KindRef, bool), String> {
    let kind = match r.get("kind") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        _ => return Err("kind: a kind is required".into()),
    };
    let version = r.get("version").and_then(Value::as_str).filter(|v| !v.is_empty());
    match r.get("apiGroup") {
        None | Some(Value::Null) => Ok((
            KindRef {
                api_version: format!("{}/{}", view_group(operator), version.unwrap_or(VIEW_VERSION)),
                kind,
            },
            true,
        )),
        Some(Value::String(group)) => {
            let version = match version.or_else(|| preferred_version(group)) {
                Some(v) => v,
                None => {
                    return Err(format!(
                        "version: the API group {group:?} needs a version (ctop knows the preferred version \
                         of the built-in groups only)"
                    ));
                }
            };
            let api_version =
                if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
            Ok((KindRef { api_version, kind }, group.ends_with(".view.dcontroller.io")))
        }
        Some(other) => Err(format!("apiGroup: {other} is not a string")),
    }
}

/// The version a source or target without one gets: the preferred version of the built-in
/// API groups (Kubernetes 1.33), and of `dcontroller.io`.
fn preferred_version(group: &str) -> Option<&'static str> {
    Some(match group {
        ""
        | "apps"
        | "batch"
        | "policy"
        | "networking.k8s.io"
        | "rbac.authorization.k8s.io"
        | "coordination.k8s.io"
        | "discovery.k8s.io"
        | "storage.k8s.io"
        | "apiextensions.k8s.io"
        | "admissionregistration.k8s.io"
        | "scheduling.k8s.io"
        | "node.k8s.io"
        | "certificates.k8s.io"
        | "events.k8s.io"
        | "apiregistration.k8s.io" => "v1",
        "autoscaling" => "v2",
        "dcontroller.io" => "v1alpha1",
        g if g.ends_with(".view.dcontroller.io") => VIEW_VERSION,
        _ => return None,
    })
}

/// A `metav1.LabelSelector` as the `labelSelector` query parameter writes it.
fn selector_text(sel: &Value) -> String {
    let mut parts = Vec::new();
    for (k, v) in sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten() {
        parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        });
    }
    parts.join(",")
}

/// A Δ-controller predicate as ctop's; `Ok(None)` when it has a `Not`.
fn predicate(p: &Value) -> Result<Option<Predicate>, String> {
    match p {
        Value::String(name) => {
            let named = match name.as_str() {
                "GenerationChanged" => NamedPredicate::GenerationChanged,
                "ResourceVersionChanged" => NamedPredicate::ResourceVersionChanged,
                "LabelChanged" | "LabelsChanged" => NamedPredicate::LabelChanged,
                "AnnotationChanged" | "AnnotationsChanged" => NamedPredicate::AnnotationChanged,
                other => return Err(format!("unknown predicate {other:?}")),
            };
            Ok(Some(Predicate::Named(named)))
        }
        Value::Object(map) if map.len() == 1 => {
            let Some((op, arg)) = map.iter().next() else { return Err("an empty predicate".into()) };
            let items: Vec<&Value> = match arg {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            let mut parsed = Vec::new();
            for item in items {
                parsed.push(predicate(item)?);
            }
            match op.to_ascii_lowercase().as_str() {
                "not" => Ok(None),
                "and" | "or" if parsed.iter().any(Option::is_none) => Ok(None),
                "and" => Ok(Some(Predicate::And { and: parsed.into_iter().flatten().collect() })),
                "or" => Ok(Some(Predicate::Or { or: parsed.into_iter().flatten().collect() })),
                other => Err(format!("unknown predicate operator {other:?} (And, Or, Not)")),
            }
        }
        other => Err(format!("{other} is not a predicate")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OP: &str = r#"
apiVersion: dcontroller.io/v1alpha1
kind: Operator
metadata: {name: demo}
spec:
  controllers:
    - name: copy
      sources:
        - apiGroup: ""
          kind: ConfigMap
          namespace: apps
          labelSelector: {matchLabels: {copy: "yes"}, matchExpressions: [{key: tier, operator: In, values: [a, b]}]}
          predicate: {or: [GenerationChanged, LabelChanged]}
      pipeline:
        - "@project": {metadata: {name: "$.metadata.name"}}
      target: {kind: Copy}
    - name: bad
      sources: [{apiGroup: example.com, kind: Widget}]
      pipeline: []
      target: {apiGroup: apps, kind: Deployment, type: Patcher}
    - name: tick
      sources: [{kind: Tick, type: Periodic, parameters: {period: 30s}}, {kind: Once, type: OneShot}]
      pipeline: []
      target: {apiGroup: apps, kind: Deployment, type: Patcher}
"#;

    #[test]
    fn reads_sources_targets_and_views() {
        let op = Operator::from_yaml(OP).expect("an operator");
        assert_eq!(op.name, "demo");
        let c = &op.controllers[0];
        assert!(c.broken.is_none(), "{:?}", c.broken);
        let s = &c.sources[0];
        assert_eq!((s.kind.api_version.as_str(), s.view), ("v1", false));
        assert_eq!(s.namespace.as_deref(), Some("apps"));
        assert_eq!(s.label_selector.as_ref().map(|l| l.0.as_str()), Some("copy=yes,tier in (a,b)"));
        assert!(matches!(s.predicate, Some(Predicate::Or { .. })));
        let t = c.target.as_ref().expect("a target");
        assert_eq!(
            (t.kind.api_version.as_str(), t.view, t.type_),
            ("demo.view.dcontroller.io/v1alpha1", true, TargetType::Updater)
        );
        let tick = &op.controllers[2];
        assert_eq!(tick.sources[0].period, Some(ctop_core::Duration::from_secs(30)));
        assert_eq!(tick.sources[1].type_, SourceType::OneShot);
    }

    #[test]
    fn a_bad_controller_is_broken_alone_and_names_itself() {
        let op = Operator::from_yaml(OP).expect("an operator");
        let bad = op.controllers[1].broken.as_deref().expect("broken");
        assert!(
            bad.starts_with("controller \"bad\": sources[0]: version: the API group \"example.com\""),
            "{bad}"
        );
        assert!(op.controllers[2].broken.is_none());
    }

    #[test]
    fn a_document_that_is_no_operator_is_refused() {
        let e = Operator::from_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
            .expect_err("no operator");
        assert_eq!(e.to_string(), "the document is a v1/ConfigMap, not a dcontroller.io/v1alpha1 Operator");
        let e = Operator::from_yaml(
            "apiVersion: dcontroller.io/v1alpha1\nkind: Operator\nmetadata: {name: Demo}\n",
        )
        .expect_err("bad name");
        assert!(e.to_string().contains("\"Demo\""), "{e}");
    }

    #[test]
    fn predicates_with_not_trigger_on_everything() {
        assert_eq!(predicate(&serde_json::json!({"Not": "LabelChanged"})), Ok(None));
        assert!(predicate(&serde_json::json!("Sometimes")).is_err());
    }
}
