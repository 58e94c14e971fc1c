//! The triggers of a managed kind's watch: a child's change or deletion reconciles its
//! controlling owner of the primary kind, unless the change is the echo of the owner's own
//! apply. A deletion also makes the owner's next reconcile check that the owner itself
//! still exists (the garbage collector deletes the children of an owner already gone).

use std::sync::Arc;

use futures::StreamExt as _;
use kube::api::ApiResource;
use kube::runtime::watcher;

use super::ECHO_CHECKS;
use crate::context::Ctx;
use crate::history::Trigger;
use crate::object::{Object, label_owner};
use crate::queue::{Priority, WorkQueue};

/// The keys of the primaries an owned child triggers: its controller owner of the primary
/// kind, or the primary a child in another namespace is tied to by label.
pub(crate) fn owner_keys(child: &Object, primary: &ApiResource, namespaced: bool) -> Vec<String> {
    if namespaced && let Some(key) = label_owner(child, primary) {
        return vec![key];
    }
    child
        .owner_references()
        .iter()
        .filter(|r| {
            r.controller == Some(true) && r.kind == primary.kind && r.api_version == primary.api_version
        })
        .map(|r| {
            let ns = if namespaced { child.namespace().unwrap_or_default() } else { "" };
            format!("{ns}/{}", r.name)
        })
        .collect()
}

/// Queue the owners of the children of kind `kind` (`apiVersion/kind`) that `events`
/// report, until the stream ends.
pub(crate) async fn children<S>(ctx: Arc<Ctx>, queue: Arc<WorkQueue>, kind: String, events: S)
where
    S: futures::Stream<Item = Result<watcher::Event<Object>, watcher::Error>> + Send + 'static,
{
    let name = ctx.spec.name.clone();
    crate::informer::without_errors(events, name)
        .filter_map(|e| {
            std::future::ready(match e {
                Ok(watcher::Event::Apply(o)) => Some((o, Priority::Change, false)),
                Ok(watcher::Event::Delete(o)) => Some((o, Priority::Change, true)),
                Ok(watcher::Event::InitApply(o)) => Some((o, Priority::Background, false)),
                _ => None,
            })
        })
        .map(move |(o, priority, deleted)| {
            let (ctx, kind) = (ctx.clone(), kind.clone());
            async move {
                let owners = owner_keys(&o, &ctx.primary, ctx.namespaced);
                if deleted {
                    for owner in &owners {
                        ctx.memory.child_deleted(owner, &kind, &o);
                    }
                }
                match owners.last() {
                    Some(owner) if !deleted && ctx.memory.is_echo(&kind, &o, owner).await => Vec::new(),
                    _ => {
                        for owner in &owners {
                            ctx.memory.triggered(owner, || Trigger::Child {
                                kind: kind.clone(),
                                namespace: o.namespace().map(str::to_owned),
                                name: o.name().to_owned(),
                                deleted,
                            });
                        }
                        owners.into_iter().map(|k| (k, priority)).collect()
                    }
                }
            }
        })
        .buffer_unordered(ECHO_CHECKS)
        .for_each(move |keys| {
            keys.into_iter().for_each(|(k, p)| queue.add(k, p));
            std::future::ready(())
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::GroupVersionKind;
    use serde_json::json;

    #[test]
    fn children_trigger_their_controlling_owner_only() {
        let primary = ApiResource::from_gvk(&GroupVersionKind::gvk("apps.example.com", "v1", "WebApp"));
        let child: Object = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "t", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "shop", "uid": "1", "controller": true},
                {"apiVersion": "apps.example.com/v1", "kind": "WebApp", "name": "other", "uid": "2"},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "3", "controller": true}
            ]}
        }))
        .expect("object");
        assert_eq!(owner_keys(&child, &primary, true), vec!["ns/shop".to_owned()]);
        assert_eq!(owner_keys(&child, &primary, false), vec!["/shop".to_owned()]);
    }

    #[test]
    fn a_child_elsewhere_triggers_the_primary_its_label_and_annotation_name() {
        use ctop_applier::applyset::applyset_id;
        let primary = ApiResource::from_gvk(&GroupVersionKind::gvk("apps.example.com", "v1", "WebApp"));
        let child = |set: &str, named: &str| -> Object {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "t", "namespace": "team-a",
                    "labels": {"applyset.kubernetes.io/part-of": set},
                    "annotations": {"ctop.dev/owner": named}}
            }))
            .expect("object")
        };
        let set = applyset_id("shop", "ns", "WebApp", "apps.example.com");
        let tied = child(&set, "WebApp.apps.example.com ns/shop");
        assert_eq!(owner_keys(&tied, &primary, true), vec!["ns/shop".to_owned()]);
        // An annotation that does not match the label (copied, or edited) ties nothing.
        assert!(owner_keys(&child(&set, "WebApp.apps.example.com ns/other"), &primary, true).is_empty());
        assert!(
            owner_keys(&child("applyset-x-v1", "WebApp.apps.example.com ns/shop"), &primary, true).is_empty()
        );
    }
}
