//! What the mirror copies from the live cluster: exactly what the operator's controllers
//! would cache, so that the shadow reads what the operator would and no Secret more
//! ([`watched`]).

use ctop_core::{KindRef, OperatorSpec};

/// The ApplySet label every child carries (`.manages(kind, { childrenOnly: true })` watches
/// only objects that have it), as `ctop-applier` names it.
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";

/// One watch of the mirror.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Watched {
    /// The kind.
    pub kind: KindRef,
    /// Only this namespace (`None`: every namespace; ignored for cluster-scoped kinds).
    pub namespace: Option<String>,
    /// Only objects with these labels (a label selector).
    pub selector: Option<String>,
}

/// The watches that copy what the controllers of `spec` cache when run in `namespace`
/// (`ctop run --namespace`): each controller's primary kind (in its namespace, with its label
/// selector), managed kinds (children only where the controller watches children only),
/// read kinds and `.watches()` kinds; a kind watched twice in the same scope once, and a
/// narrow watch dropped where a wider one of its kind covers it.
#[must_use]
pub fn watched(spec: &OperatorSpec, namespace: Option<&str>) -> Vec<Watched> {
    let mut out: Vec<Watched> = Vec::new();
    let scope = |own: Option<&str>| own.or(namespace).map(str::to_owned);
    for ctl in &spec.controllers {
        out.push(Watched {
            kind: ctl.for_.clone(),
            namespace: scope(ctl.namespace.as_deref()),
            selector: ctl.label_selector.clone(),
        });
        for k in &ctl.manages {
            let children_only = ctl.children_only.contains(k) && !ctl.reads.contains(k);
            out.push(Watched {
                kind: k.clone(),
                namespace: scope(None),
                selector: children_only.then(|| PART_OF_LABEL.to_owned()),
            });
        }
        for k in &ctl.reads {
            out.push(Watched { kind: k.clone(), namespace: scope(None), selector: None });
        }
        for w in &ctl.watches {
            out.push(Watched {
                kind: w.kind.clone(),
                namespace: scope(w.namespace.as_deref()),
                selector: w.label_selector.clone(),
            });
        }
    }
    out.sort();
    out.dedup();
    let covered = |w: &Watched, by: &Watched| {
        by != w
            && by.kind == w.kind
            && (by.namespace.is_none() || by.namespace == w.namespace)
            && by.selector.is_none()
    };
    out.iter().filter(|w| !out.iter().any(|by| covered(w, by))).cloned().collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(controllers: serde_json::Value) -> OperatorSpec {
        serde_json::from_value(json!({"resources": [], "controllers": controllers})).expect("a spec")
    }

    fn kind(api_version: &str, kind: &str) -> KindRef {
        KindRef { api_version: api_version.into(), kind: kind.into() }
    }

    #[test]
    fn the_mirror_watches_what_the_controllers_cache() {
        let s = spec(json!([{
            "index": 0, "name": "webapp", "for": {"apiVersion": "example.com/v1", "kind": "WebApp"},
            "labelSelector": "tier=web",
            "manages": [{"apiVersion": "apps/v1", "kind": "Deployment"}, {"apiVersion": "v1", "kind": "Secret"}],
            "childrenOnly": [{"apiVersion": "v1", "kind": "Secret"}],
            "reads": [{"apiVersion": "v1", "kind": "ConfigMap"}],
            "watches": [{"kind": {"apiVersion": "v1", "kind": "ConfigMap"}, "labelSelector": "a=b"},
                        {"kind": {"apiVersion": "v1", "kind": "Node"}}],
            "handlers": ["reconcile"],
        }]));
        let w = watched(&s, Some("prod"));
        let shown: Vec<String> = w
            .iter()
            .map(|w| {
                format!(
                    "{}/{} ns={} sel={}",
                    w.kind.api_version,
                    w.kind.kind,
                    w.namespace.as_deref().unwrap_or("*"),
                    w.selector.as_deref().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                "apps/v1/Deployment ns=prod sel=-",
                // The read covers the narrower `.watches()` of ConfigMaps.
                "example.com/v1/WebApp ns=prod sel=tier=web",
                "v1/ConfigMap ns=prod sel=-",
                "v1/Node ns=prod sel=-",
                "v1/Secret ns=prod sel=applyset.kubernetes.io/part-of",
            ]
        );
        assert_eq!(w[0].kind, kind("apps/v1", "Deployment"));
    }
}
