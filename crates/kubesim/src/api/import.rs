//! Imports: a live cluster's object put into the store as it is, for an overlay that a
//! mirror fills, and taken out again.
//!
//! An import skips everything a write does (admission, defaulting, validation, generation,
//! managedFields): the object keeps its uid, creationTimestamp, generation, managedFields,
//! owner references, finalizers, deletionTimestamp, labels, annotations and status. It
//! gets the store's next resourceVersion, and watchers see ADDED or MODIFIED (DELETED
//! then ADDED when the live object was recreated under another uid). A custom resource is
//! converted to its CRD's storage version; its CRD's schema is checked on a copy only, to
//! tell the caller what the overlay would have refused. An import into a namespace that is
//! not there first makes a stub Namespace.
//!
//! Neither an import nor an unimport is logged as a request write, nor gives the cleanup
//! controllers work: the live cluster's controllers own the live objects, and the
//! overlay's only act on what requests do.

use serde_json::{Value, json};

use crate::kinds::meta::str_at_pointer;

use super::{Api, WriteOpts, obj_key};
use crate::api::convert;
use crate::error::ApiError;
use crate::kinds::meta;
use crate::kinds::registry::ResourceType;
use crate::store::{object_rv, set_rv, uid_of};

/// What an import did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// The object's resourceVersion in the overlay.
    pub resource_version: u64,
    /// What watchers saw.
    pub event: ImportEvent,
    /// What the caller may want to print: the reasons the overlay would have refused the
    /// object (its CRD's schema: validation errors, fields pruning would drop), and what
    /// the import made up (a namespace, a uid).
    pub notes: Vec<String>,
}

/// The watch events an import made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportEvent {
    /// ADDED: the object was not there.
    Added,
    /// MODIFIED: the object was there with the same uid.
    Modified,
    /// DELETED then ADDED: an object of that name was there with another uid.
    Replaced,
    /// None: the object was there exactly so (but for its resourceVersion).
    Unchanged,
}

/// `Object 'Kind' is missing in '{...}'`, as the API server's decoder says it (the object
/// cut short).
fn missing(field: &str, obj: &Value) -> ApiError {
    let text = obj.to_string();
    let shown: String = text.chars().take(200).collect();
    let more = if shown.len() < text.len() { "..." } else { "" };
    ApiError::bad_request(format!("Object '{field}' is missing in '{shown}{more}'"))
}

/// `no matches for kind "Widget" in version "example.com/v1"`, kubectl's words for a kind
/// the server does not serve.
fn no_kind(api_version: &str, kind: &str) -> ApiError {
    let mut e = ApiError::no_route();
    e.message = format!(
        "no matches for kind \"{kind}\" in version \"{api_version}\": ensure CRDs are installed first"
    );
    e
}

impl Api {
    /// Resolve the type of a live object's `apiVersion` and `kind`.
    fn import_type(&self, api_version: &str, kind: &str) -> Result<std::sync::Arc<ResourceType>, ApiError> {
        let rt = self.registry.by_kind(api_version, kind).ok_or_else(|| no_kind(api_version, kind))?;
        if rt.is_review() {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{api_version}\" cannot be imported: the server does not store it"
            )));
        }
        Ok(rt)
    }

    /// Put a live object into the store as it is (see the module's documentation).
    pub async fn import(&self, mut obj: Value) -> Result<Imported, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the imported object must be a JSON object"));
        }
        let api_version = str_at_pointer(&obj, "/apiVersion").to_owned();
        let kind = str_at_pointer(&obj, "/kind").to_owned();
        if kind.is_empty() {
            return Err(missing("Kind", &obj));
        }
        if api_version.is_empty() {
            return Err(missing("apiVersion", &obj));
        }
        let rt = self.import_type(&api_version, &kind)?;
        let name = str_at_pointer(&obj, "/metadata/name").to_owned();
        if name.is_empty() {
            return Err(ApiError::invalid_field(
                rt.gr(),
                &rt.kind_group(),
                "",
                "FieldValueRequired",
                "metadata.name",
                "Required value: name is required",
            ));
        }
        let ns = str_at_pointer(&obj, "/metadata/namespace").to_owned();
        let mut notes = Vec::new();
        if rt.namespaced && ns.is_empty() {
            return Err(ApiError::invalid_field(
                rt.gr(),
                &rt.kind_group(),
                &name,
                "FieldValueRequired",
                "metadata.namespace",
                "Required value: a namespaced object is imported into its namespace",
            ));
        }
        let key = obj_key(&rt, &ns, &name);
        let live = self.store.get(&rt.store, &key);
        let meta = super::meta_mut(&mut obj);
        if !rt.namespaced {
            meta.remove("namespace");
        }
        if meta.get("uid").and_then(Value::as_str).is_none_or(str::is_empty) {
            // Imported again without one, an object keeps the uid it was given.
            let uid = live.as_deref().and_then(uid_of).map_or_else(meta::new_uid, str::to_owned);
            meta.insert("uid".into(), json!(uid));
            notes.push("metadata.uid was empty: the overlay gave it one".to_owned());
        }
        notes.extend(self.import_notes(&rt, &obj, live.as_deref()));
        let stored = self.to_storage(&rt, convert::to_stored(&rt, obj)).await?;
        if rt.namespaced && self.ensure_namespace(&ns) {
            notes.push(format!("namespace \"{ns}\" was not in the overlay: a stub Namespace was made"));
        }
        let event = match &live {
            None => ImportEvent::Added,
            Some(live) if uid_of(live) != uid_of(&stored) => ImportEvent::Replaced,
            Some(live) => {
                let mut same = stored.clone();
                set_rv(&mut same, object_rv(live));
                if same == **live {
                    return Ok(Imported {
                        resource_version: object_rv(live),
                        event: ImportEvent::Unchanged,
                        notes,
                    });
                }
                ImportEvent::Modified
            }
        };
        let replaced = event == ImportEvent::Replaced
            && self.store.take(&rt.store, &key).map(|change| self.after_store(&rt, &change)).is_some();
        let change = self.store.put(&rt.store, key, stored);
        self.after_store(&rt, &change);
        let event = match (replaced, &change.old) {
            (true, _) => ImportEvent::Replaced,
            (false, Some(_)) => ImportEvent::Modified,
            (false, None) => ImportEvent::Added,
        };
        Ok(Imported { resource_version: change.rv, event, notes })
    }

    /// Make namespace `ns` as a stub when it is not there; whether it was made.
    fn ensure_namespace(&self, ns: &str) -> bool {
        let Some(rt) = self.registry.get("", "v1", "namespaces") else { return false };
        let key = (String::new(), ns.to_owned());
        if self.store.get(&rt.store, &key).is_some() {
            return false;
        }
        let stub = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {
                "name": ns, "uid": meta::new_uid(), "creationTimestamp": meta::now(),
                "labels": {"kubernetes.io/metadata.name": ns},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        // Unattributed: no request made it. Another import may have made it meanwhile.
        match self.store.create(&rt.store, key, stub, None) {
            Ok(change) => {
                self.after_store(&rt, &change);
                true
            }
            Err(_) => false,
        }
    }

    /// What the overlay would have said of a custom resource written as `obj` (in `rt`'s
    /// version) over `live`: its schema's validation errors and the unknown fields pruning
    /// would drop. Checked on a copy: the import stores the object as it is.
    fn import_notes(&self, rt: &ResourceType, obj: &Value, live: Option<&Value>) -> Vec<String> {
        if rt.crd.is_none() {
            return Vec::new();
        }
        let mut copy = obj.clone();
        let mut warnings = Vec::new();
        // Ratcheting compares with the stored object only when it is in the same version.
        let old = live.filter(|l| l.get("apiVersion") == obj.get("apiVersion"));
        let refused = self.validate(rt, &mut copy, old, None, &WriteOpts::default(), &mut warnings);
        let mut notes: Vec<String> =
            warnings.into_iter().map(|w| format!("{w} (the schema would prune it)")).collect();
        if let Err(e) = refused {
            if e.causes.is_empty() {
                notes.push(e.message.clone());
            }
            for c in &e.causes {
                notes.push(if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                });
            }
        }
        notes
    }

    /// Remove an object as it is (a live deletion mirrored): whether it was there. A kind
    /// the overlay does not serve has nothing to remove.
    pub fn unimport(
        &self,
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        name: &str,
    ) -> Result<bool, ApiError> {
        let Ok(rt) = self.import_type(api_version, kind) else { return Ok(false) };
        let ns = ns.unwrap_or_default();
        if rt.namespaced && ns.is_empty() {
            return Err(ApiError::invalid_field(
                rt.gr(),
                &rt.kind_group(),
                name,
                "FieldValueRequired",
                "metadata.namespace",
                "Required value: a namespaced object is removed from its namespace",
            ));
        }
        match self.store.take(&rt.store, &obj_key(&rt, ns, name)) {
            Some(change) => {
                self.after_store(&rt, &change);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
