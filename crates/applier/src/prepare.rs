//! Before a child is sent: the desired object checked, resolved and made ready ([`Prepared`]:
//! owner reference or owner label, ApplySet labels, fingerprint), and what applying it will
//! do to the live object ([`Claim`]: a child, one made again, or one taken over).

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::adopt::{ChildError, holder};
use crate::apply::{Applier, Live, Prepared};
use crate::applyset::{OWNER_ANNOTATION, PART_OF_LABEL};
use crate::cache::Meta;
use crate::discovery::is_missing;
use crate::error::ApplyError;
use crate::fingerprint::fingerprint;
use crate::memory::Tie;
use crate::object::{ChildRef, ObjectInfo};

/// What applying a child will do to its live object.
pub(crate) enum Claim {
    /// Create it, or apply to a child of the owner.
    Child,
    /// Create it again: this applier made it before, and it is gone.
    Again,
    /// Take over an object that is not a child yet.
    Adopted,
}

/// What is known of a child's live object before it is applied.
pub(crate) enum Found {
    /// It exists; who holds it when the owner does not.
    Object(Option<(String, bool)>),
    /// It does not exist.
    Nothing,
}

/// A Secret's `stringData` moved into `data`, base64-encoded, as the API server stores it
/// (a key in both takes `stringData`'s value). The apply then sends the field the object has,
/// so the field manager owns `data.<key>` rather than a `stringData` that is never stored, a
/// later apply of the same value as `data` (read back from the cache) is the same apply and
/// is skipped, and a key dropped from the desired Secret is removed from it. Left as it is
/// when a value is not a string, for the API server to refuse in its own words.
fn fold_string_data(body: &mut Map<String, Value>) {
    let Some(Value::Object(text)) = body.get("stringData") else { return };
    let data_fits = matches!(body.get("data"), None | Some(Value::Null | Value::Object(_)));
    if !data_fits || !text.values().all(Value::is_string) {
        return;
    }
    let Some(Value::Object(text)) = body.remove("stringData") else { return };
    let mut data = match body.remove("data") {
        Some(Value::Object(data)) => data,
        _ => Map::new(),
    };
    for (key, value) in text {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_str().unwrap_or_default());
        data.insert(key, Value::String(encoded));
    }
    body.insert("data".into(), Value::Object(data));
}

impl Applier {
    /// Check one desired child and build the apply body: namespace defaulted, server-set
    /// metadata dropped, the `part-of` label and the controller owner reference added.
    pub(crate) async fn prepare(
        &self,
        index: usize,
        object: Value,
        owner: &ObjectInfo,
        set_id: &str,
    ) -> Result<Prepared, ApplyError> {
        let invalid = |child: String, reason: &str| ApplyError::InvalidChild {
            index,
            child,
            reason: reason.to_owned(),
        };
        let Value::Object(mut body) = object else {
            return Err(invalid("<not an object>".into(), "it is not a JSON object"));
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
        let api_version = text(body.get("apiVersion"));
        let kind = text(body.get("kind"));
        let name = text(body.get("metadata").and_then(|m| m.get("name")));
        let describe =
            format!("{} {}", kind.as_deref().unwrap_or("<no kind>"), name.as_deref().unwrap_or("<no name>"));
        if api_version.as_deref() == Some("v1") && kind.as_deref() == Some("Secret") {
            fold_string_data(&mut body);
        }
        let Some(api_version) = api_version else { return Err(invalid(describe, "it has no apiVersion")) };
        let Some(kind) = kind else { return Err(invalid(describe, "it has no kind")) };
        let Some(Value::Object(meta)) = body.get_mut("metadata") else {
            return Err(invalid(describe, "it has no metadata object"));
        };
        let Some(name) = name else {
            let reason = if meta.contains_key("generateName") {
                "generateName is not supported: give it a fixed metadata.name so it can be applied again and pruned"
            } else {
                "it has no metadata.name"
            };
            return Err(invalid(describe, reason));
        };
        let child_namespace = match meta.get("namespace") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(invalid(describe, "metadata.namespace is not a string")),
        };

        let resolved = match self.discovery.kind(&api_version, &kind).await {
            Ok(r) => r,
            Err(source) if is_missing(&source) => {
                return Err(ApplyError::UnknownKind { api_version, kind, error: source });
            }
            Err(source) => {
                return Err(ApplyError::Discovery { what: format!("{api_version} {kind}"), error: source });
            }
        };
        let mut child = ChildRef { api_version, kind, namespace: child_namespace.clone(), name };
        let cannot = |child: &ChildRef, reason: String| ApplyError::CannotOwn {
            owner: owner.describe(),
            child: Box::new(child.clone()),
            reason,
        };
        let mut tie = Tie::Reference;
        let namespace = match (resolved.namespaced, owner.namespace.as_deref()) {
            (true, Some(owner_ns)) => match child_namespace {
                None => owner_ns.to_owned(),
                Some(ns) if ns == owner_ns => ns,
                // Owner references cannot cross namespaces: tied by label (see `Tie`).
                Some(ns) => {
                    tie = Tie::Label;
                    ns
                }
            },
            (true, None) => match child_namespace {
                Some(ns) => ns,
                None => {
                    return Err(cannot(
                        &child,
                        "the owner is cluster-scoped, so a namespaced child must set metadata.namespace"
                            .into(),
                    ));
                }
            },
            (false, Some(owner_ns)) => {
                return Err(cannot(
                    &child,
                    format!(
                        "it is cluster-scoped and the owner is namespaced (in {owner_ns}); a cluster-scoped object cannot have a namespaced owner"
                    ),
                ));
            }
            (false, None) => {
                if child_namespace.is_some() {
                    return Err(invalid(
                        child.to_string(),
                        "its kind is cluster-scoped but it sets metadata.namespace",
                    ));
                }
                String::new()
            }
        };
        if resolved.namespaced {
            meta.insert("namespace".into(), Value::String(namespace.clone()));
            child.namespace = Some(namespace);
        }
        for server_set in ctop_core::SERVER_SET_METADATA {
            meta.remove(server_set);
        }

        let labels = meta.entry("labels").or_insert_with(|| Value::Object(Map::new()));
        if labels.is_null() {
            *labels = Value::Object(Map::new());
        }
        let Value::Object(labels) = labels else {
            return Err(invalid(child.to_string(), "metadata.labels is not an object"));
        };
        labels.insert(PART_OF_LABEL.into(), Value::String(set_id.to_owned()));
        for (k, v) in &self.config.child_labels {
            labels.insert(k.clone(), Value::String(v.clone()));
        }
        if tie == Tie::Label {
            let annotations = meta.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
            if annotations.is_null() {
                *annotations = Value::Object(Map::new());
            }
            let Value::Object(annotations) = annotations else {
                return Err(invalid(child.to_string(), "metadata.annotations is not an object"));
            };
            annotations.insert(OWNER_ANNOTATION.into(), Value::String(owner.describe()));
            let body = Value::Object(body);
            let hash = fingerprint(&body);
            return Ok(Prepared { key: child.key(), child, kind: resolved, body, hash, adopt: false, tie });
        }

        let refs = meta.entry("ownerReferences").or_insert_with(|| Value::Array(Vec::new()));
        if refs.is_null() {
            *refs = Value::Array(Vec::new());
        }
        let Value::Array(refs) = refs else {
            return Err(invalid(child.to_string(), "metadata.ownerReferences is not an array"));
        };
        if let Some(other) = refs.iter().find(|r| {
            r.get("controller") == Some(&Value::Bool(true))
                && r.get("uid").and_then(Value::as_str) != Some(&owner.uid)
        }) {
            let named = format!(
                "{} {}",
                other.get("kind").and_then(Value::as_str).unwrap_or("?"),
                other.get("name").and_then(Value::as_str).unwrap_or("?")
            );
            return Err(cannot(&child, format!("it already names another controller ({named})")));
        }
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(&owner.uid));
        refs.push(json!({
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }));

        let body = Value::Object(body);
        let hash = fingerprint(&body);
        Ok(Prepared { key: child.key(), child, kind: resolved, body, hash, adopt: false, tie })
    }

    /// Whether `owner` still exists, as the API server says (same uid).
    pub(crate) async fn owner_exists(&self, owner: &ObjectInfo) -> Result<bool, kube::Error> {
        let resolved = self.discovery.kind(&owner.api_version, &owner.kind).await?;
        let live =
            resolved.api(&self.client, owner.namespace.as_deref()).get_metadata_opt(&owner.name).await?;
        Ok(live.is_some_and(|o| o.metadata.uid.as_deref() == Some(&owner.uid)))
    }

    /// Whether `p` may be applied (see [`Claim`]), or [`ChildError::NotOurs`] when its
    /// object is someone else's (see `adopt`).
    pub(crate) async fn claim(
        &self,
        owner: &ObjectInfo,
        set_id: &str,
        p: &Prepared,
        live: Live<'_>,
    ) -> Result<Claim, ChildError> {
        let known = match live {
            Live::Cached(cache) => match cache.get(&p.child) {
                Some(meta) => Some(Found::Object(holder(&*meta, &owner.uid, set_id))),
                None if cache.knows_all(&p.child) => Some(Found::Nothing),
                None => None,
            },
            Live::Cache(observed) => {
                observed(&p.child).map(|meta| Found::Object(holder(&Meta(&meta), &owner.uid, set_id)))
            }
            Live::Server => None,
        };
        let found = match known {
            Some(found) => found,
            None => match p
                .kind
                .api(&self.client, p.child.namespace.as_deref())
                .get_metadata_opt(&p.child.name)
                .await
            {
                Ok(Some(o)) => Found::Object(holder(&Meta(&o.metadata), &owner.uid, set_id)),
                Ok(None) => Found::Nothing,
                Err(e) => return Err(ChildError::Api(e)),
            },
        };
        match found {
            Found::Nothing => {
                let made = self.memory.lock().get(&owner.uid).is_some_and(|m| m.applied.contains_key(&p.key));
                Ok(if made { Claim::Again } else { Claim::Child })
            }
            Found::Object(None) => Ok(Claim::Child),
            Found::Object(Some((_, false))) if p.adopt => {
                tracing::info!(owner = %owner.describe(), child = %p.child, "adopting an existing object");
                Ok(Claim::Adopted)
            }
            Found::Object(Some((holder, controlled))) => {
                Err(ChildError::NotOurs { owner: owner.describe(), holder, controlled })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::fold_string_data;

    fn folded(secret: serde_json::Value) -> serde_json::Value {
        let serde_json::Value::Object(mut body) = secret else { panic!("not an object") };
        fold_string_data(&mut body);
        serde_json::Value::Object(body)
    }

    #[test]
    fn string_data_is_sent_as_data_as_the_server_stores_it() {
        let secret =
            json!({"data": {"a": "QQ==", "b": "Qg=="}, "stringData": {"b": "bee", "token": "héllo"}});
        assert_eq!(folded(secret), json!({"data": {"a": "QQ==", "b": "YmVl", "token": "aMOpbGxv"}}));
        assert_eq!(folded(json!({"stringData": {"k": ""}, "data": null})), json!({"data": {"k": ""}}));
        assert_eq!(folded(json!({"data": {"k": "dg=="}})), json!({"data": {"k": "dg=="}}));
    }

    #[test]
    fn what_the_server_refuses_is_left_for_it_to_refuse() {
        let not_text = json!({"stringData": {"n": 1}});
        assert_eq!(folded(not_text.clone()), not_text);
        let bad_data = json!({"data": ["x"], "stringData": {"k": "v"}});
        assert_eq!(folded(bad_data.clone()), bad_data);
        let bad_string_data = json!({"stringData": "v"});
        assert_eq!(folded(bad_string_data.clone()), bad_string_data);
    }
}
