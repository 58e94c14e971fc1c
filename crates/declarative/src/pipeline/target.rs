//! The target view: the pipeline's output documents by namespace and name, and the
//! target deltas a change of them makes.
//!
//! Several documents may carry the same name (two rows projecting to one object); the
//! view shows the one that came last among those still there, so removing one of them
//! shows the other instead of deleting the object.

use std::collections::BTreeMap;

use serde_json::Value;

use super::zset::{ZSet, key_of};
use super::{Delta, DeltaType, ObjKey};
use crate::error::{Error, Result};
use crate::jsonpath::kind;

/// The documents under one name: canonical JSON, document, count; the last is shown.
type Entries = Vec<(String, Value, i64)>;

#[derive(Debug, Default)]
pub(super) struct Target {
    /// `(apiVersion, kind)` stamped on every output.
    pub(super) type_meta: Option<(String, String)>,
    objects: BTreeMap<ObjKey, Entries>,
}

/// What a change does to the view, to be committed once the whole event succeeded.
pub(super) type Staged = Vec<(ObjKey, Entries)>;

impl Target {
    /// The target deltas of an output change, and the view as it will be.
    pub(super) fn apply(&self, change: ZSet) -> Result<(Vec<Delta>, Staged)> {
        let mut touched: BTreeMap<ObjKey, Entries> = BTreeMap::new();
        for (doc, count) in change.into_iter() {
            let doc = self.normalize(doc)?;
            let key = super::object_key(&doc)
                .map_err(|message| Error::Stage { path: "pipeline".to_string(), message })?;
            let entries = touched
                .entry(key.clone())
                .or_insert_with(|| self.objects.get(&key).cloned().unwrap_or_default());
            let json = key_of(&doc);
            match entries.iter().position(|(j, _, _)| *j == json) {
                Some(i) => {
                    entries[i].2 += count;
                    if entries[i].2 <= 0 {
                        entries.remove(i);
                    }
                }
                None if count > 0 => entries.push((json, doc, count)),
                None => {}
            }
        }
        let (mut deleted, mut upserted) = (Vec::new(), Vec::new());
        for (key, entries) in &touched {
            let before = self.objects.get(key).and_then(|e| e.last());
            match (before, entries.last()) {
                (Some((_, old, _)), None) => {
                    deleted.push(Delta { kind: DeltaType::Deleted, object: old.clone() })
                }
                (Some((a, _, _)), Some((b, _, _))) if a == b => {}
                (_, Some((_, new, _))) => {
                    upserted.push(Delta { kind: DeltaType::Upserted, object: new.clone() })
                }
                (None, None) => {}
            }
        }
        deleted.extend(upserted);
        Ok((deleted, touched.into_iter().collect()))
    }

    pub(super) fn commit(&mut self, staged: Staged) {
        for (key, entries) in staged {
            if entries.is_empty() {
                self.objects.remove(&key);
            } else {
                self.objects.insert(key, entries);
            }
        }
    }

    /// The objects of the view, in namespace/name order.
    pub(super) fn objects(&self) -> impl Iterator<Item = &Value> {
        self.objects.values().filter_map(|e| e.last().map(|(_, v, _)| v))
    }

    /// Checks the name and namespace, drops an empty namespace, stamps the type.
    fn normalize(&self, mut doc: Value) -> Result<Value> {
        let err = |message: String| Error::Stage {
            path: "pipeline".to_string(),
            message: format!("the result {message}"),
        };
        let Some(meta) = doc.get_mut("metadata") else {
            return Err(err("has no metadata".to_string()));
        };
        let Value::Object(meta) = meta else {
            return Err(err(format!("has metadata that is {}, expected a map", kind(meta))));
        };
        match meta.get("name") {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(Value::String(_)) => return Err(err("has an empty metadata.name".to_string())),
            Some(other) => {
                return Err(err(format!("has a metadata.name that is {}, expected a string", kind(other))));
            }
            None => return Err(err("has no metadata.name".to_string())),
        }
        match meta.get("namespace") {
            Some(Value::String(s)) if s.is_empty() => {
                meta.remove("namespace");
            }
            None | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(err(format!(
                    "has a metadata.namespace that is {}, expected a string",
                    kind(other)
                )));
            }
        }
        if let (Some((api_version, kind)), Value::Object(map)) = (&self.type_meta, &mut doc) {
            map.insert("apiVersion".to_string(), Value::String(api_version.clone()));
            map.insert("kind".to_string(), Value::String(kind.clone()));
        }
        Ok(doc)
    }
}
