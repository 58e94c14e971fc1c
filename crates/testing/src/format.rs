//! The test file format: [`TestFile::read`] turns `tests/NAME.yaml` into steps, each an
//! [`Action`] and its [`Expectation`]s, or a [`FormatError`] that names the file and line.
//! `crates/testing/README.md` is the reference an author reads; this module is its parser.
//!
//! The YAML is read with ctop's rules (`ctop_core::yaml`). The top level and each step are
//! typed (`deny_unknown_fields`, so a misspelled key is an error at its line); objects,
//! references and expectations are read from their values here, with the line of the step
//! or expectation they came from.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use crate::oracles::Oracle;

/// Why a test file cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The file could not be read.
    #[error("{}: cannot read the test file", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid YAML, or does not have the shape of a test.
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line (1-based; 0 when unknown).
        line: u64,
        /// What is wrong.
        message: String,
    },
}

/// A parsed test file.
#[derive(Clone, Debug)]
pub struct TestFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its name: `name:`, else the file name without `.yaml`.
    pub name: String,
    /// The script's `Values` (`values:`); `None` reads the operator's `values.yaml`.
    pub values: Option<Value>,
    /// The script's `Env` (`env:`); `None` gives it the process's `CTOP_ENV_*` variables,
    /// as `ctop run` does.
    pub env: Option<BTreeMap<String, String>>,
    /// How the cluster runs workloads; `None` is a bare API server.
    pub workloads: Option<ctop_kubesim::WorkloadConfig>,
    /// How long nothing may happen before a step counts as done.
    pub quiet: Duration,
    /// Virtual time a step may take to become quiet.
    pub timeout: Duration,
    /// Oracles turned off, with the reason given.
    pub oracles_off: BTreeMap<Oracle, String>,
    /// Compare with (or, with `--update`, write) the golden file.
    pub golden: bool,
    /// CustomResourceDefinitions installed before the operator starts (`crds:`, files of
    /// the operator's directory): the kinds of other operators it reads.
    pub crds: Vec<Value>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step: an action, then the operator is let run until quiet, then the expectations.
#[derive(Clone, Debug)]
pub struct Step {
    /// The line the step starts on.
    pub line: u64,
    /// Its `name:`, else a description of its action.
    pub name: String,
    /// What the step does.
    pub action: Action,
    /// What must hold once the operator is quiet.
    pub expect: Vec<Expectation>,
}

/// What a step does to the cluster.
#[derive(Clone, Debug)]
pub enum Action {
    /// Nothing: only let the operator run and check.
    Check,
    /// Server-side apply these objects (field manager `ctop-test`, forced).
    Apply(Vec<Value>),
    /// Delete these objects (background propagation).
    Delete(Vec<ObjectRef>),
    /// A JSON merge patch of an object, or of its status subresource.
    Patch {
        /// The object.
        target: ObjectRef,
        /// The merge patch.
        body: Value,
        /// Patch the `status` subresource (the body is the status itself).
        status: bool,
    },
    /// Let this much virtual time pass.
    Advance(Duration),
    /// Pod stages from now on (`SELECTOR:ACTION`, as `ctop sim --pod-stage`); the running
    /// Pods they pick are deleted, so that their controllers start them again under it.
    Pods(Vec<ctop_kubesim::PodStage>),
    /// Inject an API fault (kubesim's `FaultRule`).
    Fault(ctop_kubesim::FaultRule),
    /// Remove every injected fault.
    ClearFaults,
    /// Fill the cluster with the last version of every object a recording saw
    /// (the `seed` module).
    Seed(RecordingPath),
    /// Run a recording's calls again against a script, without the cluster
    /// ([`crate::replay::step`]; the runner does it, [`crate::World::act`] does nothing).
    Replay(ReplayStep),
}

/// What must hold after a step.
#[derive(Clone, Debug, PartialEq)]
pub enum Expectation {
    /// An object exists and partially matches this one (see [`crate::matching`]).
    Object {
        /// The line of the expectation.
        line: u64,
        /// Which object.
        target: ObjectRef,
        /// The fields it must have.
        fields: Value,
    },
    /// The object does not exist.
    Absent {
        /// The line of the expectation.
        line: u64,
        /// Which object.
        target: ObjectRef,
    },
    /// An event was recorded.
    Event {
        /// The line of the expectation.
        line: u64,
        /// What it must say.
        event: EventMatch,
    },
    /// The step's action was refused with a message containing this text.
    Error {
        /// The line of the expectation.
        line: u64,
        /// The text.
        contains: String,
    },
}

impl Expectation {
    /// The line it was written on.
    pub fn line(&self) -> u64 {
        match self {
            Expectation::Object { line, .. }
            | Expectation::Absent { line, .. }
            | Expectation::Event { line, .. }
            | Expectation::Error { line, .. } => *line,
        }
    }
}

/// The fields of an event an expectation names (each optional).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventMatch {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: Option<String>,
    /// The reason, exactly.
    pub reason: Option<String>,
    /// Text the message (the event's `note`) contains.
    pub message: Option<String>,
    /// The object it is about (`Kind/name`).
    #[serde(default, deserialize_with = "object_ref_opt")]
    pub regarding: Option<ObjectRef>,
}

fn object_ref_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ObjectRef>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    v.map(|v| ObjectRef::from_value(&v).map_err(serde::de::Error::custom)).transpose()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<String>,
    values: Option<Value>,
    env: Option<BTreeMap<String, Spanned<Value>>>,
    workloads: Option<Value>,
    quiet: Option<String>,
    timeout: Option<String>,
    #[serde(default)]
    oracles: BTreeMap<String, Spanned<String>>,
    golden: Option<bool>,
    #[serde(default)]
    crds: Vec<String>,
    steps: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Option<String>,
    apply: Option<Value>,
    delete: Option<Value>,
    patch: Option<Value>,
    merge: Option<Value>,
    status: Option<Value>,
    advance: Option<String>,
    pods: Option<Value>,
    fault: Option<Value>,
    seed: Option<String>,
    replay: Option<String>,
    script: Option<String>,
    allow: Option<String>,
    #[serde(default)]
    expect: Vec<Spanned<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawWorkloads {
    nodes: Option<usize>,
    pod_start: Option<String>,
    job_duration: Option<String>,
    #[serde(default)]
    stages: Vec<String>,
}

/// The default of `quiet:`: not a round number, so that a `Result.requeue("1s")` or a
/// backoff of 1s or 2s never ends just as the quiet period does.
pub const DEFAULT_QUIET: Duration = Duration::from_millis(1500);
/// The default of `timeout:`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

impl TestFile {
    /// Read and check the test file at `path`; `operator_dir` resolves the files an `apply`
    /// names.
    pub fn read(path: &Path, operator_dir: &Path) -> Result<Self, FormatError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| FormatError::Read { path: path.to_owned(), source })?;
        Self::parse(path, &text, operator_dir)
    }

    /// Parse `text` as the test file `path`.
    pub fn parse(path: &Path, text: &str, operator_dir: &Path) -> Result<Self, FormatError> {
        let invalid =
            |line: u64, message: String| FormatError::Invalid { path: path.to_owned(), line, message };
        let raw: RawFile = serde_saphyr::from_str_with_options(text, ctop_core::yaml::options(None))
            .map_err(|e| {
                let line = e.location().map_or(0, |l| l.line());
                // The position goes in front, as `file:line:`.
                let text = e.to_string();
                let text = text.rfind(" at line ").map_or(text.as_str(), |i| &text[..i]).to_owned();
                invalid(line, text)
            })?;
        let duration = |what: &str, v: Option<&String>, default: Duration| -> Result<Duration, FormatError> {
            v.map_or(Ok(default), |s| {
                s.parse::<ctop_core::Duration>()
                    .map(Into::into)
                    .map_err(|e| invalid(0, format!("{what}: {e}")))
            })
        };
        let quiet = duration("quiet", raw.quiet.as_ref(), DEFAULT_QUIET)?;
        let timeout = duration("timeout", raw.timeout.as_ref(), DEFAULT_TIMEOUT)?;
        let workloads = workloads(raw.workloads).map_err(|m| invalid(0, format!("workloads: {m}")))?;
        let env = match raw.env {
            None => None,
            Some(vars) => {
                let mut env = BTreeMap::new();
                for (name, value) in vars {
                    let line = value.referenced.line();
                    let text = env::variable(&name, value.value).map_err(|m| invalid(line, m))?;
                    env.insert(name, text);
                }
                Some(env)
            }
        };
        let mut oracles_off = BTreeMap::new();
        for (name, reason) in raw.oracles {
            let line = reason.referenced.line();
            let oracle: Oracle = name.parse().map_err(|m| invalid(line, m))?;
            if reason.value.trim().is_empty() {
                return Err(invalid(
                    line,
                    format!("oracles: {name}: say why it is off (a reason is required)"),
                ));
            }
            oracles_off.insert(oracle, reason.value);
        }
        if raw.steps.is_empty() {
            return Err(invalid(0, "steps: a test needs at least one step".into()));
        }
        let mut steps = Vec::with_capacity(raw.steps.len());
        let dirs = Dirs { operator: operator_dir, test: path.parent().unwrap_or(Path::new("")) };
        for spanned in raw.steps {
            let line = spanned.referenced.line();
            let mut s = step(spanned.value, &dirs).map_err(|(l, m)| invalid(l.unwrap_or(line), m))?;
            s.line = line;
            steps.push(s);
        }
        let mut crds = Vec::new();
        for file in raw.crds {
            let objects = apply_objects(Value::String(file.clone()), operator_dir)
                .map_err(|m| invalid(0, format!("crds: {}", m.trim_start_matches("apply: "))))?;
            if let Some(o) = objects.iter().find(|o| o["kind"] != "CustomResourceDefinition") {
                let what = ObjectRef::of(o).map_or_else(|m| m, |r| r.to_string());
                return Err(invalid(
                    0,
                    format!("crds: {file} holds {what}, which is no CustomResourceDefinition"),
                ));
            }
            crds.extend(objects);
        }
        let name = raw.name.unwrap_or_else(|| {
            path.file_stem().map_or_else(|| "test".into(), |s| s.to_string_lossy().into_owned())
        });
        Ok(Self {
            path: path.to_owned(),
            name,
            values: raw.values,
            env,
            workloads,
            quiet,
            timeout,
            oracles_off,
            golden: raw.golden.unwrap_or(true),
            crds,
            steps,
        })
    }
}

/// `workloads:` absent or `true` (the default cluster), `false` (a bare API server), or a
/// mapping of settings.
fn workloads(v: Option<Value>) -> Result<Option<ctop_kubesim::WorkloadConfig>, String> {
    let mut config = ctop_kubesim::WorkloadConfig::default();
    match v {
        None | Some(Value::Bool(true)) => Ok(Some(config)),
        Some(Value::Bool(false)) => Ok(None),
        Some(v @ Value::Object(_)) => {
            let raw: RawWorkloads = serde_json::from_value(v).map_err(|e| e.to_string())?;
            let duration =
                |s: &str| s.parse::<ctop_core::Duration>().map(Into::into).map_err(|e| e.to_string());
            if let Some(n) = raw.nodes {
                config.nodes = n.max(1);
            }
            if let Some(s) = &raw.pod_start {
                config.pod_start = duration(s)?;
            }
            if let Some(s) = &raw.job_duration {
                config.job_duration = duration(s)?;
            }
            config.stages = raw.stages.iter().map(|s| s.parse()).collect::<Result<_, String>>()?;
            Ok(Some(config))
        }
        Some(_) => Err("true, false or a mapping (nodes, podStart, jobDuration, stages)".into()),
    }
}

type StepError = (Option<u64>, String);

/// Where a step's files are: `apply:` files in the operator's directory, recordings and
/// `script:` beside the test file.
struct Dirs<'a> {
    operator: &'a Path,
    test: &'a Path,
}

fn step(raw: RawStep, dirs: &Dirs<'_>) -> Result<Step, StepError> {
    let no_line = |m: String| (None, m);
    let actions = [
        raw.apply.is_some(),
        raw.delete.is_some(),
        raw.patch.is_some(),
        raw.advance.is_some(),
        raw.pods.is_some(),
        raw.fault.is_some(),
        raw.seed.is_some(),
        raw.replay.is_some(),
    ];
    if actions.iter().filter(|a| **a).count() > 1 {
        return Err(no_line(
            "a step does one thing: apply, delete, patch, advance, pods, fault, seed or replay (split it into steps)"
                .into(),
        ));
    }
    if raw.patch.is_none() && (raw.merge.is_some() || raw.status.is_some()) {
        return Err(no_line("merge: and status: go with patch:".into()));
    }
    if raw.replay.is_none() && (raw.script.is_some() || raw.allow.is_some()) {
        return Err(no_line("script: and allow: go with replay:".into()));
    }
    let (action, what) = if let Some(v) = raw.apply {
        let objects = apply_objects(v, dirs.operator).map_err(no_line)?;
        let what = objects
            .iter()
            .map(|o| ObjectRef::of(o).map(|r| r.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(no_line)?;
        (Action::Apply(objects), format!("apply {}", what.join(", ")))
    } else if let Some(v) = raw.delete {
        let refs = match &v {
            Value::Array(items) => items.iter().map(ObjectRef::from_value).collect::<Result<Vec<_>, _>>(),
            one => ObjectRef::from_value(one).map(|r| vec![r]),
        }
        .map_err(|m| no_line(format!("delete: {m}")))?;
        let what = refs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        (Action::Delete(refs), format!("delete {what}"))
    } else if let Some(v) = raw.patch {
        let target = ObjectRef::from_value(&v).map_err(|m| no_line(format!("patch: {m}")))?;
        let (body, status) = match (raw.merge, raw.status) {
            (Some(b), None) => (b, false),
            (None, Some(s)) => (serde_json::json!({ "status": s }), true),
            _ => {
                return Err(no_line(
                    "patch: give exactly one of merge: (the object) or status: (its status)".into(),
                ));
            }
        };
        let what = format!("patch {}{target}", if status { "the status of " } else { "" });
        (Action::Patch { target, body, status }, what)
    } else if let Some(s) = raw.advance {
        let d: Duration =
            s.parse::<ctop_core::Duration>().map_err(|e| no_line(format!("advance: {e}")))?.into();
        (Action::Advance(d), format!("advance {s}"))
    } else if let Some(v) = raw.pods {
        let texts: Vec<String> = match v {
            Value::String(s) => vec![s],
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| no_line("pods: a stage SELECTOR:ACTION, or a list of them".into()))?,
            _ => return Err(no_line("pods: a stage SELECTOR:ACTION, or a list of them".into())),
        };
        let stages = texts
            .iter()
            .map(|t| t.parse::<ctop_kubesim::PodStage>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| no_line(format!("pods: {m}")))?;
        (Action::Pods(stages), format!("pods {}", texts.join("; ")))
    } else if let Some(v) = raw.fault {
        if v.as_str() == Some("clear") {
            (Action::ClearFaults, "clear the faults".to_owned())
        } else {
            let rule: ctop_kubesim::FaultRule = serde_json::from_value(v).map_err(|e| {
                no_line(format!("fault: {e} (verb, resource, code, count, latencyMs; or \"clear\")"))
            })?;
            let what = format!(
                "fault {} {} → {}",
                rule.verb.as_deref().unwrap_or("*"),
                rule.resource.as_deref().unwrap_or("*"),
                rule.code
            );
            (Action::Fault(rule), what)
        }
    } else if let Some(file) = raw.seed {
        let recording = recorded::seed(&file, dirs.test).map_err(no_line)?;
        let what = format!("seed {recording}");
        (Action::Seed(recording), what)
    } else if let Some(file) = raw.replay {
        let r = recorded::replay(&file, raw.script.as_deref(), raw.allow.as_deref(), dirs.test)
            .map_err(no_line)?;
        let what = match &r.script {
            Some(dir) => format!("replay {} against {dir}", r.recording),
            None => format!("replay {}", r.recording),
        };
        (Action::Replay(r), what)
    } else {
        if raw.expect.is_empty() {
            return Err(no_line(
                "a step needs an action (apply, delete, patch, advance, pods, fault, seed, replay) or an expect"
                    .into(),
            ));
        }
        (Action::Check, "check".to_owned())
    };
    let mut expect = Vec::with_capacity(raw.expect.len());
    for e in raw.expect {
        let line = e.referenced.line();
        expect.push(expectation(e.value, line).map_err(|m| (Some(line), m))?);
    }
    if expect.iter().any(|e| matches!(e, Expectation::Error { .. }))
        && !matches!(action, Action::Apply(_) | Action::Delete(_) | Action::Patch { .. })
    {
        return Err(no_line("expect error: goes with apply, delete or patch (the action refused)".into()));
    }
    Ok(Step { line: 0, name: raw.name.unwrap_or(what), action, expect })
}

/// An `apply:` value: one object, a list, or a file (relative to the operator directory)
/// of `---`-separated objects.
fn apply_objects(v: Value, operator_dir: &Path) -> Result<Vec<Value>, String> {
    let objects = match v {
        Value::String(file) => {
            let path = operator_dir.join(&file);
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("apply: cannot read {file}: {e}"))?;
            ctop_core::yaml::documents::<Value>(&text)
                .map_err(|e| format!("apply: {file}: {e}"))?
                .into_iter()
                .filter(|d| !d.is_null())
                .collect()
        }
        Value::Array(items) => items,
        one @ Value::Object(_) => vec![one],
        _ => return Err("apply: an object, a list of objects, or a file name".into()),
    };
    if objects.is_empty() {
        return Err("apply: nothing to apply".into());
    }
    for o in &objects {
        if o["apiVersion"].as_str().is_none() {
            return Err(format!(
                "apply: every object needs apiVersion, kind and metadata.name ({} has no apiVersion)",
                ObjectRef::of(o).map_or_else(|m| m, |r| r.to_string())
            ));
        }
        ObjectRef::of(o).map_err(|m| format!("apply: {m}"))?;
    }
    Ok(objects)
}

/// One `expect:` item.
fn expectation(v: Value, line: u64) -> Result<Expectation, String> {
    if let Value::Object(m) = &v
        && m.len() == 1
    {
        let (key, value) = m.iter().next().ok_or("an empty expectation")?;
        match key.as_str() {
            "absent" => return Ok(Expectation::Absent { line, target: ObjectRef::from_value(value)? }),
            "event" => {
                let event: EventMatch =
                    serde_json::from_value(value.clone()).map_err(|e| format!("event: {e}"))?;
                return Ok(Expectation::Event { line, event });
            }
            "error" => {
                let contains = value.as_str().ok_or("error: the text the refusal must contain")?.to_owned();
                return Ok(Expectation::Error { line, contains });
            }
            _ => {}
        }
    }
    if !v.is_object() {
        return Err(
            "an expectation is an object (kind, metadata.name, fields), absent:, event: or error:".into()
        );
    }
    let target = ObjectRef::of(&v).map_err(|m| {
        format!(
            "{m}: an object expectation names its kind and metadata.name (or use absent:, event:, error:)"
        )
    })?;
    let mut fields = v;
    if let Some(m) = fields.as_object_mut() {
        m.remove("kind");
        m.remove("apiVersion");
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("name");
            meta.remove("namespace");
            if meta.is_empty() {
                m.remove("metadata");
            }
        }
    }
    Ok(Expectation::Object { line, target, fields })
}

pub mod env;
mod object_ref;
pub mod recorded;

pub use object_ref::ObjectRef;
pub use recorded::{RecordingPath, ReplayStep};

#[cfg(test)]
mod tests;
