//! From a parsed [`Operator`] to the [`OperatorSpec`] ctop runs: one controller whose
//! primary is the `Operator` object itself (only this one, by a field selector), the
//! source kinds read and watched (any event queues the Operator), the Updater targets
//! managed, the Patcher targets read and patched; the `Operator` CRD and one CRD per view
//! kind (namespaced, any fields), so that views are real objects `kubectl` reads.

use ctop_core::{
    ControllerSpec, KindRef, OperatorSpec, PolicyRule, PrinterColumn, ResourceSpec, Scope, WatchSpec,
};
use serde_json::{Value, json};

use super::error::OperatorError;
use super::model::{OPERATOR_API_VERSION, Operator, SourceType, TargetType, VIEW_VERSION};

/// The `Operator` kind.
pub fn operator_kind() -> KindRef {
    KindRef { api_version: OPERATOR_API_VERSION.to_string(), kind: "Operator".to_string() }
}

/// The spec ctop runs for `op`.
pub fn operator_spec(op: &Operator) -> Result<OperatorSpec, OperatorError> {
    let mut c = ControllerSpec {
        index: 0,
        name: op.name.clone(),
        for_: operator_kind(),
        field_selector: Some(format!("metadata.name={}", op.name)),
        handlers: vec!["reconcile".to_string(), "onStart".to_string()],
        ..ControllerSpec::default()
    };
    let push = |list: &mut Vec<KindRef>, k: &KindRef| {
        if !list.contains(k) {
            list.push(k.clone());
        }
    };
    for ctl in op.controllers.iter().filter(|c| c.broken.is_none()) {
        for s in &ctl.sources {
            match s.type_ {
                SourceType::Watcher => {
                    push(&mut c.reads, &s.kind);
                    let w = WatchSpec {
                        kind: s.kind.clone(),
                        namespace: s.namespace.clone(),
                        label_selector: s.label_selector.as_ref().map(|(text, _)| text.clone()),
                        predicate: s.predicate.clone(),
                        mapper: true,
                    };
                    if !c.watches.contains(&w) {
                        c.watches.push(w);
                    }
                }
                SourceType::Periodic => {
                    c.always_run = true;
                    c.every = match (c.every, s.period) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                SourceType::OneShot => {}
            }
        }
        let Some(t) = &ctl.target else { continue };
        match t.type_ {
            TargetType::Updater => push(&mut c.manages, &t.kind),
            TargetType::Patcher => {
                push(&mut c.reads, &t.kind);
                // A target object that appears (or loses what was applied) is patched then.
                let w = WatchSpec { kind: t.kind.clone(), mapper: true, ..WatchSpec::default() };
                if !c.watches.contains(&w) {
                    c.watches.push(w);
                }
                let rule = PolicyRule {
                    api_groups: vec![t.kind.group().to_string()],
                    resources: vec![plural(&t.kind.kind)],
                    verbs: vec!["patch".to_string()],
                    resource_names: Vec::new(),
                };
                if !c.permissions.contains(&rule) {
                    c.permissions.push(rule);
                }
            }
        }
    }
    // `ctop run op.yaml` applies the Operator itself (onStart): server-side apply creates it.
    c.permissions.push(PolicyRule {
        api_groups: vec!["dcontroller.io".to_string()],
        resources: vec!["operators".to_string()],
        verbs: vec!["create".to_string()],
        resource_names: Vec::new(),
    });
    let mut resources = vec![operator_resource()?];
    let mut views: Vec<&KindRef> = Vec::new();
    for ctl in op.controllers.iter().filter(|c| c.broken.is_none()) {
        let kinds = ctl.sources.iter().filter(|s| s.view && s.type_ == SourceType::Watcher).map(|s| &s.kind);
        for k in kinds.chain(ctl.target.iter().filter(|t| t.view).map(|t| &t.kind)) {
            if k.group() == op.view_group() && !views.contains(&k) {
                views.push(k);
            }
        }
    }
    resources.extend(views.into_iter().map(view_resource));
    Ok(OperatorSpec { resources, controllers: vec![c] })
}

/// The `Operator` CRD: Δ-controller's schema, with `status.conditions` for ctop's
/// `Reconciled` and `Ready`.
pub fn operator_resource() -> Result<ResourceSpec, OperatorError> {
    let schema: Value = serde_json::from_str(include_str!("operator.schema.json"))
        .map_err(|e| OperatorError::Schema(e.to_string()))?;
    Ok(ResourceSpec {
        api_version: OPERATOR_API_VERSION.to_string(),
        group: "dcontroller.io".to_string(),
        version: "v1alpha1".to_string(),
        kind: "Operator".to_string(),
        plural: "operators".to_string(),
        singular: "operator".to_string(),
        scope: Scope::Cluster,
        short_names: Vec::new(),
        printer_columns: vec![PrinterColumn {
            name: "Ready".to_string(),
            type_: "string".to_string(),
            json_path: ".status.conditions[?(@.type==\"Ready\")].status".to_string(),
            description: None,
            priority: None,
        }],
        schema,
        status_subresource: true,
        deprecated: None,
        versions: Vec::new(),
    })
}

/// A view kind's CRD: namespaced, any fields.
fn view_resource(k: &KindRef) -> ResourceSpec {
    ResourceSpec {
        api_version: k.api_version.clone(),
        group: k.group().to_string(),
        version: VIEW_VERSION.to_string(),
        kind: k.kind.clone(),
        plural: plural(&k.kind),
        singular: k.kind.to_lowercase(),
        scope: Scope::Namespaced,
        short_names: Vec::new(),
        printer_columns: Vec::new(),
        schema: json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        status_subresource: false,
        deprecated: None,
        versions: Vec::new(),
    }
}

/// The resource name of a kind, as Kubernetes names its built-in ones (`Ingress` →
/// `ingresses`, `NetworkPolicy` → `networkpolicies`, `Endpoints` → `endpoints`).
fn plural(kind: &str) -> String {
    match kind {
        "Endpoints" => "endpoints".to_string(),
        _ => ctop_core::guess_plural(kind),
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
    - name: health
      sources: [{apiGroup: "", kind: Pod, namespace: web}, {kind: Tick, type: Periodic, parameters: {period: 1m}}]
      pipeline: [{"@project": {metadata: {name: "$.metadata.name"}}}]
      target: {kind: PodView}
    - name: annotate
      sources: [{kind: PodView}]
      pipeline: [{"@project": {metadata: {name: "$.metadata.name"}}}]
      target: {apiGroup: apps, kind: Deployment, type: Patcher}
    - name: broken
      sources: [{apiGroup: nowhere.io, kind: Thing}]
      pipeline: []
      target: {apiGroup: "", kind: Secret}
"#;

    #[test]
    fn one_controller_reconciles_the_operator_object_alone() {
        let op = Operator::from_yaml(OP).expect("an operator");
        let spec = operator_spec(&op).expect("a spec");
        let [c] = spec.controllers.as_slice() else { panic!("one controller") };
        assert_eq!(
            (c.for_.kind.as_str(), c.field_selector.as_deref()),
            ("Operator", Some("metadata.name=demo"))
        );
        let keys = |l: &[KindRef]| l.iter().map(KindRef::key).collect::<Vec<_>>();
        assert_eq!(keys(&c.manages), ["demo.view.dcontroller.io/v1alpha1/PodView"]);
        assert_eq!(
            keys(&c.reads),
            ["v1/Pod", "demo.view.dcontroller.io/v1alpha1/PodView", "apps/v1/Deployment"]
        );
        assert_eq!(c.watches.len(), 3, "the sources' and the Patcher target's");
        assert!(c.watches.iter().all(|w| w.mapper));
        assert_eq!(c.watches[0].namespace.as_deref(), Some("web"));
        assert_eq!((c.every, c.always_run), (Some(ctop_core::Duration::from_secs(60)), true));
        assert_eq!(c.permissions[0].resources, ["deployments"]);
        assert_eq!(c.permissions[0].verbs, ["patch"]);
        // The broken controller declares nothing.
        assert!(!c.manages.iter().any(|k| k.kind == "Secret"));
        let kinds: Vec<_> = spec.resources.iter().map(|r| (r.kind.as_str(), r.scope)).collect();
        assert_eq!(kinds, [("Operator", Scope::Cluster), ("PodView", Scope::Namespaced)]);
        assert_eq!(spec.resources[1].plural, "podviews");
    }

    #[test]
    fn plurals_of_built_in_kinds() {
        for (k, p) in
            [("Ingress", "ingresses"), ("NetworkPolicy", "networkpolicies"), ("Endpoints", "endpoints")]
        {
            assert_eq!(plural(k), p);
        }
    }
}
