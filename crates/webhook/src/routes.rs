//! Which URL paths the server answers, derived from the operator description.
//!
//! Every controller that declares a `validate` handler gets `/validate/<group>/<version>/<plural>`
//! and every one with a `mutate` handler gets `/mutate/<group>/<version>/<plural>`, where
//! `<group>` is `core` for the core API group (a path segment cannot be empty). The plural
//! is the script resource's own plural; for built-in kinds it is guessed like the SDK does
//! (lowercase kind plus `s`, `es` or `ies`). When two controllers of one kind declare the
//! same handler, the later ones get `/<controller name>` appended. `ctop manifests` and `ctop dev` use [`routes`]
//! too, so the paths in the webhook configurations always match the server's.

use ctop_core::{ControllerSpec, OperatorSpec, Scope};

/// Which kind of admission handler a route calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HandlerKind {
    /// `.validate(fn)`: allowed or denied, with a message and warnings.
    Validate,
    /// `.mutate(fn)`: the changed object, answered as a JSONPatch.
    Mutate,
}

impl HandlerKind {
    /// The handler's name in the script (`validate` or `mutate`), also the first path segment.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            HandlerKind::Validate => "validate",
            HandlerKind::Mutate => "mutate",
        }
    }
}

/// One served path and the handler behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// Validate or mutate.
    pub handler: HandlerKind,
    /// The URL path, e.g. `/validate/apps.example.com/v1/webapps`.
    pub path: String,
    /// The controller's index in the script (what the script dispatches with).
    pub controller: u32,
    /// The controller's name (for logs and webhook names).
    pub controller_name: String,
    /// API group of the kind (empty for core).
    pub group: String,
    /// API version of the kind.
    pub version: String,
    /// The kind, e.g. `WebApp`.
    pub kind: String,
    /// Resource name (plural), e.g. `webapps`.
    pub plural: String,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
    /// Set when another controller of the same kind declares the same handler: this
    /// controller's name, appended to the path (`…/<plural>/<name>`) and the webhook name.
    pub qualifier: Option<String>,
}

impl Route {
    /// A webhook name for this route, unique per route and fully qualified as the API
    /// server requires: `<handler>.<plural>.<group>`, or `<handler>.<plural>.core.ctop.dev`
    /// for the core group. It is what `kubectl` shows in a denial.
    #[must_use]
    pub fn webhook_name(&self) -> String {
        let group = if self.group.is_empty() { "core.ctop.dev" } else { self.group.as_str() };
        match &self.qualifier {
            Some(q) => format!("{}.{q}.{}.{group}", self.handler.as_str(), self.plural),
            None => format!("{}.{}.{group}", self.handler.as_str(), self.plural),
        }
    }
}

/// The routes `spec` asks for, validate routes first, each in controller order.
#[must_use]
pub fn routes(spec: &OperatorSpec) -> Vec<Route> {
    let mut out: Vec<Route> = Vec::new();
    for handler in [HandlerKind::Validate, HandlerKind::Mutate] {
        for ctl in &spec.controllers {
            if ctl.handlers.iter().any(|h| h == handler.as_str()) {
                let mut r = route(spec, ctl, handler);
                // A second controller of the same kind gets its own path (and webhook name).
                if out.iter().any(|o| o.path == r.path) {
                    r.path = format!("{}/{}", r.path, ctl.name);
                    r.qualifier = Some(ctl.name.clone());
                }
                out.push(r);
            }
        }
    }
    out
}

fn route(spec: &OperatorSpec, ctl: &ControllerSpec, handler: HandlerKind) -> Route {
    let (group, version) = (ctl.for_.group().to_owned(), ctl.for_.version().to_owned());
    let own =
        spec.resources.iter().find(|r| r.api_version == ctl.for_.api_version && r.kind == ctl.for_.kind);
    let (plural, namespaced) = match own {
        Some(r) => (r.plural.clone(), r.scope == Scope::Namespaced),
        None => (guess_plural(&ctl.for_.kind), true),
    };
    let path_group = if group.is_empty() { "core" } else { group.as_str() };
    Route {
        handler,
        path: format!("/{}/{path_group}/{version}/{plural}", handler.as_str()),
        controller: ctl.index,
        controller_name: ctl.name.clone(),
        group,
        version,
        kind: ctl.for_.kind.clone(),
        plural,
        namespaced,
        qualifier: None,
    }
}

/// `Deployment` → `deployments`, `Ingress` → `ingresses`, `NetworkPolicy` → `networkpolicies`.
fn guess_plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'i', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") || lower.ends_with("sh") {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctop_core::{KindRef, ResourceSpec};

    fn controller(index: u32, api_version: &str, kind: &str, handlers: &[&str]) -> ControllerSpec {
        ControllerSpec {
            index,
            name: kind.to_ascii_lowercase(),
            for_: KindRef { api_version: api_version.into(), kind: kind.into() },
            handlers: handlers.iter().map(|h| (*h).to_owned()).collect(),
            ..ControllerSpec::default()
        }
    }

    #[test]
    fn paths_come_from_the_script() {
        let spec = OperatorSpec {
            resources: vec![ResourceSpec {
                api_version: "apps.example.com/v1".into(),
                group: "apps.example.com".into(),
                version: "v1".into(),
                kind: "WebApp".into(),
                plural: "webapps".into(),
                singular: "webapp".into(),
                scope: Scope::Cluster,
                schema: serde_json::json!({"type": "object"}),
                ..ResourceSpec::default()
            }],
            controllers: vec![
                controller(0, "apps.example.com/v1", "WebApp", &["reconcile", "validate", "mutate"]),
                controller(1, "v1", "ConfigMap", &["validate"]),
                controller(2, "networking.k8s.io/v1", "NetworkPolicy", &["reconcile"]),
            ],
        };
        let r = routes(&spec);
        let paths: Vec<&str> = r.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/validate/apps.example.com/v1/webapps",
                "/validate/core/v1/configmaps",
                "/mutate/apps.example.com/v1/webapps"
            ]
        );
        assert!(!r[0].namespaced);
        assert!(r[1].namespaced);
        assert_eq!(r[1].group, "");
        assert_eq!(r[2].webhook_name(), "mutate.webapps.apps.example.com");
        assert_eq!(r[1].webhook_name(), "validate.configmaps.core.ctop.dev");
    }

    #[test]
    fn two_controllers_of_one_kind_get_their_own_paths() {
        let spec = OperatorSpec {
            resources: vec![],
            controllers: vec![
                controller(0, "v1", "ConfigMap", &["validate"]),
                ControllerSpec { name: "second".into(), ..controller(1, "v1", "ConfigMap", &["validate"]) },
            ],
        };
        let r = routes(&spec);
        assert_eq!(r[0].path, "/validate/core/v1/configmaps");
        assert_eq!(r[1].path, "/validate/core/v1/configmaps/second");
        assert_eq!(r[1].controller, 1);
        assert_ne!(r[0].webhook_name(), r[1].webhook_name());
        assert_eq!(r[1].webhook_name(), "validate.second.configmaps.core.ctop.dev");
    }

    #[test]
    fn plurals_of_builtin_kinds() {
        assert_eq!(guess_plural("Deployment"), "deployments");
        assert_eq!(guess_plural("Ingress"), "ingresses");
        assert_eq!(guess_plural("NetworkPolicy"), "networkpolicies");
        assert_eq!(guess_plural("Gateway"), "gateways");
    }
}
