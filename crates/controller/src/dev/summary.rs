//! `ctop dev`'s live view: one line per primary object whenever its phase, readiness or
//! number of children changed.

use std::collections::BTreeMap;

use ctop_core::{KindRef, OperatorSpec};
use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt as _};
use serde_json::Value;

use crate::cluster::resolve;

/// The last line printed per object; [`Summary::update`] says what changed since.
#[derive(Debug, Default)]
pub struct Summary {
    last: BTreeMap<String, String>,
}

impl Summary {
    /// Read every primary object of `spec`'s controllers and their children, and return the
    /// lines that changed: `Kind ns/name: phase/ready, N children` (the status's `phase` and
    /// `ready`, `-` when absent; the children are the objects of the managed kinds it
    /// controls), and `Kind ns/name: deleted` for an object gone since. A kind that cannot
    /// be listed counts as empty.
    pub async fn update(&mut self, client: &Client, spec: &OperatorSpec) -> Vec<String> {
        let mut now = BTreeMap::new();
        for controller in &spec.controllers {
            let mut children = Vec::new();
            for k in &controller.manages {
                children.extend(list(client, k).await);
            }
            for cr in list(client, &controller.for_).await {
                let uid = cr.uid().unwrap_or_default();
                let count = children
                    .iter()
                    .filter(|c| {
                        c.owner_references().iter().any(|o| o.uid == uid && o.controller == Some(true))
                    })
                    .count();
                let status = &cr.data["status"];
                let key = format!(
                    "{} {}/{}",
                    controller.for_.kind,
                    cr.namespace().unwrap_or_default(),
                    cr.name_any()
                );
                let line = format!("{}/{}, {count} children", text(&status["phase"]), text(&status["ready"]));
                now.insert(key, line);
            }
        }
        let mut changed: Vec<String> = now
            .iter()
            .filter(|(key, line)| self.last.get(*key) != Some(*line))
            .map(|(key, line)| format!("{key}: {line}"))
            .collect();
        changed.extend(self.last.keys().filter(|k| !now.contains_key(*k)).map(|k| format!("{k}: deleted")));
        self.last = now;
        changed
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

async fn list(client: &Client, k: &KindRef) -> Vec<DynamicObject> {
    let Ok((ar, _)) = resolve(client, k).await else { return Vec::new() };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    api.list(&ListParams::default()).await.map(|l| l.items).unwrap_or_default()
}
