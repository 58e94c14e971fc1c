//! The plugin interface (after cloudticon's `pkg/plugin`): a step that sees every generated
//! document and may add, change or remove documents. Plugins run in the order given, after
//! the built-in documents exist, so they can adjust anything ctop generates.
//!
//! Two plugins ship: [`PodDisruptionBudget`] (here) and [`NetworkPolicy`](crate::NetworkPolicy)
//! (in `netpol.rs`).

use ctop_core::{EgressRule, OperatorSpec};
use serde_json::{Map, Value, json};

use crate::options::{HEALTH_PORT, METRICS_PORT, Options};

/// A step that adds or changes documents.
///
/// ```
/// use ctop_manifests::{Context, Plugin, PluginError};
///
/// /// Pins the operator to Linux nodes.
/// struct LinuxOnly;
///
/// impl Plugin for LinuxOnly {
///     fn name(&self) -> &str {
///         "linux-only"
///     }
///     fn apply(&self, ctx: &Context<'_>, docs: &mut Vec<serde_json::Value>) -> Result<(), PluginError> {
///         let deployment = ctx.find_mut(docs, "Deployment", ctx.name())?;
///         deployment["spec"]["template"]["spec"]["nodeSelector"] =
///             serde_json::json!({"kubernetes.io/os": "linux"});
///         Ok(())
///     }
/// }
/// ```
pub trait Plugin {
    /// A short name for errors and logs, e.g. `pdb`.
    fn name(&self) -> &str;
    /// Add or change documents. `docs` holds everything generated so far, in output order.
    fn apply(&self, ctx: &Context<'_>, docs: &mut Vec<Value>) -> Result<(), PluginError>;
}

/// Why a plugin failed.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The plugin changes a document that is not in the set: it was not generated with
    /// these options, or an earlier plugin removed it. Reorder or drop one of the plugins.
    #[error("there is no {kind} named {name:?} to change")]
    Missing {
        /// The kind looked for.
        kind: String,
        /// The name looked for.
        name: String,
    },
    /// The plugin cannot work with these options; the message says what to change.
    #[error("{0}")]
    Invalid(String),
}

/// A port of the operator's container that other pods may connect to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedPort {
    /// The container port's name, e.g. `metrics`.
    pub name: &'static str,
    /// The port number.
    pub port: u16,
}

/// What a plugin may read: the operator description, the options and the names and labels
/// the built-in documents use.
#[derive(Debug)]
pub struct Context<'a> {
    pub(crate) spec: &'a OperatorSpec,
    pub(crate) options: &'a Options,
    pub(crate) labels: Map<String, Value>,
    pub(crate) selector: Map<String, Value>,
}

impl Context<'_> {
    /// What the script declares.
    #[must_use]
    pub fn spec(&self) -> &OperatorSpec {
        self.spec
    }

    /// The options the manifests are generated with.
    #[must_use]
    pub fn options(&self) -> &Options {
        self.options
    }

    /// The operator's name: the Deployment and ServiceAccount are called this.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.options.name
    }

    /// The namespace the operator runs in.
    #[must_use]
    pub fn namespace(&self) -> String {
        self.options.namespace()
    }

    /// Labels every generated document carries.
    #[must_use]
    pub fn labels(&self) -> &Map<String, Value> {
        &self.labels
    }

    /// Labels selecting the operator's pods (the Deployment's `matchLabels`).
    #[must_use]
    pub fn selector(&self) -> &Map<String, Value> {
        &self.selector
    }

    /// The ports the operator's pods serve: metrics, health probes, and the webhook when
    /// the script declares `validate`/`mutate` handlers or resources with several versions.
    #[must_use]
    pub fn ports(&self) -> Vec<ServedPort> {
        let mut ports = vec![
            ServedPort { name: "metrics", port: METRICS_PORT },
            ServedPort { name: "health", port: HEALTH_PORT },
        ];
        if crate::webhook::served(self.spec) {
            ports.push(ServedPort { name: "webhook", port: crate::options::WEBHOOK_PORT });
        }
        ports
    }

    /// Every destination the operator's `fetch` may reach: each controller's `.egress(...)`
    /// and then the deployer's ([`Options::egress`]), in that order, without repeats.
    #[must_use]
    pub fn egress(&self) -> Vec<&EgressRule> {
        let mut out: Vec<&EgressRule> = Vec::new();
        for rule in self.spec.controllers.iter().flat_map(|c| &c.egress).chain(&self.options.egress) {
            if !out.contains(&rule) {
                out.push(rule);
            }
        }
        out
    }

    /// Metadata for a new namespaced document of the operator called `name`.
    #[must_use]
    pub fn metadata(&self, name: &str) -> Value {
        json!({"name": name, "namespace": self.namespace(), "labels": self.labels})
    }

    /// The document of `kind` named `name`, to change it.
    pub fn find_mut<'d>(
        &self,
        docs: &'d mut [Value],
        kind: &str,
        name: &str,
    ) -> Result<&'d mut Value, PluginError> {
        docs.iter_mut()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
            .ok_or_else(|| PluginError::Missing { kind: kind.to_owned(), name: name.to_owned() })
    }
}

/// Adds a `policy/v1` PodDisruptionBudget for the operator's pods: with several replicas at
/// least one stays up during voluntary disruptions (node drains); with one replica it
/// allows the eviction, so a drain is never blocked by the operator.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodDisruptionBudget;

impl Plugin for PodDisruptionBudget {
    fn name(&self) -> &str {
        "pdb"
    }

    fn apply(&self, ctx: &Context<'_>, docs: &mut Vec<Value>) -> Result<(), PluginError> {
        let mut spec = json!({
            "selector": {"matchLabels": ctx.selector()},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        });
        if ctx.options().replicas > 1 {
            spec["minAvailable"] = json!(1);
        } else {
            spec["maxUnavailable"] = json!(1);
        }
        docs.push(json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": ctx.metadata(ctx.name()),
            "spec": spec,
        }));
        Ok(())
    }
}
