//! Pipelines: from events on source objects to events on target objects.
//!
//! Start at [`Pipeline::new`] (a controller's `pipeline` value and its source kinds) and
//! [`Pipeline::evaluate`] (one source [`Delta`] in, the target [`Delta`]s out). The stages
//! ([`Stage`]) are an optional `@join` first ([`join`]), then any of `@select`
//! ([`select`]), `@project` ([`project`]), `@unwind` ([`unwind`]) and `@gather`
//! ([`gather`]); [`spec`] parses both serialisations, [`zset`] is the multiset the stages
//! exchange changes in, and [`target`] turns the output into target deltas.
//!
//! The pipeline keeps what it needs to be incremental: each source's objects, each
//! `@gather`'s groups and the target view. An event is applied all or nothing: when
//! any stage fails, the error is returned and no state changes.

mod gather;
mod join;
mod project;
mod select;
mod spec;
mod target;
mod unwind;
mod zset;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::jsonpath::{JsonPath, kind};
use zset::ZSet;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// It was created.
    Added,
    /// It changed.
    Updated,
    /// It was replaced (as after a relist).
    Replaced,
    /// It was created or changed; the pipeline emits this for every target change.
    Upserted,
    /// It was removed.
    Deleted,
}

/// An event: what happened, and the object (for a delete, as it was last seen).
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// What happened.
    pub kind: DeltaType,
    /// The object.
    pub object: Value,
}

/// A stage of a pipeline.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Stage {
    /// `@join`: the condition of the inner join of the sources.
    Join(Expr),
    /// `@select`: keep the documents the condition holds for.
    Select(Expr),
    /// `@project`: build a new document (or several, merged).
    Project(Expr),
    /// `@unwind`/`@demux`: one document per item of the list at the path.
    Unwind(Expr),
    /// `@gather`/`@mux`: one document per key, with the values at the path listed.
    Gather {
        /// The grouping key.
        key: Expr,
        /// The path of the value, where the list of values is written.
        value: Expr,
    },
}

/// A source object's identity: namespace and name.
pub(crate) type ObjKey = (String, String);

/// Each source's objects.
pub(crate) type Sources = Vec<BTreeMap<ObjKey, Value>>;

/// A running pipeline: parsed stages and the state that makes it incremental.
#[derive(Debug)]
pub struct Pipeline {
    stages: Vec<Stage>,
    names: Vec<String>,
    sources: Sources,
    join: Option<join::Join>,
    /// The state of each `@gather` stage, by stage index.
    gathers: BTreeMap<usize, gather::Gather>,
    target: target::Target,
}

/// The namespace and name of an object.
pub(crate) fn object_key(v: &Value) -> Result<ObjKey, String> {
    let meta = v.get("metadata");
    let name = match meta.and_then(|m| m.get("name")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(format!("metadata.name is {}, expected a string", kind(other))),
        None => return Err("the object has no metadata.name".to_string()),
    };
    let namespace = meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or_default();
    Ok((namespace.to_string(), name))
}

impl Pipeline {
    /// Parses `spec` (the `pipeline` of a controller) for the given source kinds, which
    /// name the sources in `@join` rows (`$.Pod…`) and in [`Pipeline::evaluate`].
    pub fn new(spec: &Value, sources: &[&str]) -> Result<Pipeline> {
        let names: Vec<String> = sources.iter().map(|s| s.to_string()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(Error::Parse {
                    path: "sources".to_string(),
                    message: format!("source {n:?} is listed twice"),
                });
            }
        }
        let stages = spec::parse(spec, &names)?;
        let join = match stages.first() {
            Some(Stage::Join(e)) => Some(join::Join::new(e.clone(), &names)),
            _ => None,
        };
        let gathers = stages
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Stage::Gather { .. }))
            .map(|(i, _)| (i, gather::Gather::default()))
            .collect();
        Ok(Pipeline {
            sources: vec![BTreeMap::new(); names.len()],
            stages,
            names,
            join,
            gathers,
            target: target::Target::default(),
        })
    }

    /// Stamps `apiVersion` and `kind` on every target object.
    pub fn with_target(mut self, api_version: &str, kind: &str) -> Pipeline {
        self.target.type_meta = Some((api_version.to_string(), kind.to_string()));
        self
    }

    /// The parsed stages.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The target objects as they stand, in namespace/name order.
    pub fn target_objects(&self) -> impl Iterator<Item = &Value> {
        self.target.objects()
    }

    /// Applies one event of source `source` and returns the target deltas it makes:
    /// [`DeltaType::Deleted`] ones first, then [`DeltaType::Upserted`] ones, each in
    /// namespace/name order. `metadata.uid` is ignored; an update that changes nothing
    /// else makes no delta.
    pub fn evaluate(&mut self, source: &str, delta: Delta) -> Result<Vec<Delta>> {
        let event_err = |message: String| Error::Event { input: source.to_string(), message };
        let s = self.names.iter().position(|n| n == source).ok_or_else(|| {
            event_err(format!("not a source of this pipeline (sources: {})", self.names.join(", ")))
        })?;
        let mut object = delta.object;
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("uid");
        }
        let key = object_key(&object).map_err(event_err)?;
        let old = self.sources[s].get(&key).cloned();
        let new = match delta.kind {
            DeltaType::Deleted => {
                if old.is_none() {
                    return Err(event_err(format!(
                        "delete of {}/{}, which the pipeline never saw",
                        key.0, key.1
                    )));
                }
                None
            }
            _ => Some(object),
        };
        if old == new {
            return Ok(Vec::new());
        }

        let mut change = ZSet::default();
        for (obj, sign) in [(&old, -1), (&new, 1)] {
            let Some(obj) = obj else { continue };
            match &self.join {
                Some(j) => {
                    for row in j.rows(&self.sources, s, obj)? {
                        change.add(row, sign);
                    }
                }
                None => change.add(obj.clone(), sign),
            }
        }

        let first = usize::from(self.join.is_some());
        let mut staged_gathers = Vec::new();
        let empty = gather::Gather::default();
        for (i, stage) in self.stages.iter().enumerate().skip(first) {
            if change.is_empty() {
                break;
            }
            change = match stage {
                Stage::Gather { key, value } => {
                    let path = stage_path(value)?;
                    let state = self.gathers.get(&i).unwrap_or(&empty);
                    let (out, staged) = state.apply(key, value, path, change)?;
                    staged_gathers.push((i, staged));
                    out
                }
                _ => linear(stage, change)?,
            };
        }
        let (deltas, staged_target) = self.target.apply(change)?;

        // Everything succeeded: commit.
        for (i, staged) in staged_gathers {
            self.gathers.entry(i).or_default().commit(staged);
        }
        self.target.commit(staged_target);
        if let Some(j) = &mut self.join {
            j.update_index(s, &key, old.as_ref(), new.as_ref());
        }
        match new {
            Some(obj) => self.sources[s].insert(key, obj),
            None => self.sources[s].remove(&key),
        };
        Ok(deltas)
    }
}

/// The parsed JSONPath of an `@unwind`/`@gather` path argument (checked at parse time).
fn stage_path(e: &Expr) -> Result<&JsonPath> {
    e.as_path().and_then(|p| p.parsed.as_ref().ok()).ok_or_else(|| Error::Stage {
        path: e.path().to_string(),
        message: "expected a JSONPath".to_string(),
    })
}

/// A stage that maps each document on its own.
fn linear(stage: &Stage, input: ZSet) -> Result<ZSet> {
    let mut out = ZSet::default();
    for (doc, count) in input.into_iter() {
        let docs = match stage {
            Stage::Select(e) => select::apply(e, doc)?,
            Stage::Project(e) => vec![project::apply(e, &doc)?],
            Stage::Unwind(e) => unwind::apply(e, stage_path(e)?, &doc)?,
            Stage::Join(e) | Stage::Gather { key: e, .. } => {
                return Err(Error::Stage {
                    path: e.path().to_string(),
                    message: "not a per-document stage".to_string(),
                });
            }
        };
        for d in docs {
            out.add(d, count);
        }
    }
    Ok(out)
}
