//! `ctop manifests --shadow`: the deployment of an operator's *shadow*, a new version of its
//! script run by `ctop run --shadow` against the real objects with read-only rights, every
//! write going to an in-process overlay instead of the cluster.
//!
//! Everything is named `<name>-shadow` (ServiceAccount, RBAC, the bundle's ConfigMap, the
//! Deployment), so it sits beside the operator it shadows without touching it; the container
//! still runs under the operator's own `--name`, so its field manager and ApplySet ownership
//! are the operator's and an unchanged script reads as unchanged. No CRDs, webhook
//! configurations, Leases, NetworkPolicy or Namespace (it goes into the operator's): the shadow installs its CRDs into its overlay
//! only, and elects no leader. Its page (what it would write) is on port
//! [`SHADOW_UI_PORT`] on the Pod's loopback, for `kubectl port-forward`.

use serde_json::{Value, json};

use crate::options::{Options, ScriptBundle};
use crate::rbac::read_permissions;
use crate::{Error, Manifests, common_labels, selector_labels, sizing, workload};

/// Port of the shadow's page (its report of what it would write).
pub const SHADOW_UI_PORT: u16 = 8082;

/// The documents that deploy the shadow of the operator `spec` describes (see the module
/// docs); `options` are the operator's own.
pub fn generate_shadow(
    spec: &ctop_core::OperatorSpec,
    bundle: &ScriptBundle,
    options: &Options,
) -> Result<Manifests, Error> {
    options.check()?;
    if spec.controllers.is_empty() {
        return Err(Error::NoController);
    }
    crate::check_config_map_size(bundle.gz.len(), options.values_yaml.len())?;
    let mut shadow = options.clone();
    shadow.name = format!("{}-shadow", options.name);
    // Beside the operator it shadows.
    shadow.namespace = Some(options.namespace());
    shadow.replicas = 1;
    shadow.sharding = false;
    let labels = common_labels(&shadow);
    let selector = selector_labels(&shadow);
    let perms = read_permissions(spec, options);
    // No Namespace: the operator's exists, and applying one here would move its labels.
    let mut docs = vec![workload::service_account(&shadow, &labels)];
    docs.extend(crate::rbac::documents(&perms, &shadow, &labels));
    docs.push(workload::config_map(&shadow, bundle, &labels));
    let memory = sizing::memory(spec, &shadow)?;
    let mut deployment = workload::deployment(&shadow, false, bundle, &memory, &labels, &selector);
    if let Some(args) =
        deployment.pointer_mut("/spec/template/spec/containers/0/args").and_then(Value::as_array_mut)
    {
        shadow_args(args, &options.name);
    }
    docs.push(deployment);
    Ok(Manifests { documents: docs, notes: perms.notes })
}

/// `ctop run`'s arguments for the shadow: the operator's own `--name` (the shadow's objects
/// are named `<name>-shadow`, its writes are the operator's), `--shadow`, no leader election,
/// the page on [`SHADOW_UI_PORT`].
fn shadow_args(args: &mut Vec<Value>, operator: &str) {
    if let Some(i) = args.iter().position(|a| a == "--name")
        && let Some(name) = args.get_mut(i + 1)
    {
        *name = json!(operator);
    }
    for arg in ["--shadow", "--leader-elect=false", "--ui-port", &SHADOW_UI_PORT.to_string()] {
        args.push(json!(arg));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ctop_core::OperatorSpec {
        serde_json::from_value(json!({
            "resources": [{
                "apiVersion": "apps.example.com/v1", "group": "apps.example.com", "version": "v1",
                "kind": "WebApp", "plural": "webapps", "singular": "webapp", "scope": "Namespaced",
                "schema": {"type": "object"}, "statusSubresource": true,
            }],
            "controllers": [{
                "index": 0, "name": "webapp",
                "for": {"apiVersion": "apps.example.com/v1", "kind": "WebApp"},
                "manages": [{"apiVersion": "apps/v1", "kind": "Deployment"}, {"apiVersion": "v1", "kind": "Secret"}],
                "reads": [{"apiVersion": "db.example.com/v1", "kind": "Database"}],
                "watches": [], "handlers": ["reconcile"],
                "permissions": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "delete"]}],
            }],
        }))
        .expect("a spec")
    }

    #[test]
    fn the_shadow_may_only_read_and_runs_under_the_operators_name() {
        let options = Options::new("webapp");
        let bundle = ScriptBundle { gz: vec![1, 2, 3], sha256: "a".repeat(64) };
        let m = generate_shadow(&spec(), &bundle, &options).expect("generates");
        let kinds: Vec<String> = m
            .documents
            .iter()
            .map(|d| {
                format!(
                    "{} {}",
                    d["kind"].as_str().unwrap_or(""),
                    d["metadata"]["name"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount webapp-shadow",
                "ClusterRole webapp-shadow-manager",
                "ClusterRoleBinding webapp-shadow-manager",
                "ConfigMap webapp-shadow-bundle",
                "Deployment webapp-shadow",
            ]
        );
        for doc in &m.documents {
            for rule in doc["rules"].as_array().into_iter().flatten() {
                for verb in rule["verbs"].as_array().into_iter().flatten() {
                    assert!(["get", "list", "watch"].contains(&verb.as_str().unwrap_or("")), "{rule}");
                }
                for resource in rule["resources"].as_array().into_iter().flatten() {
                    assert!(!resource.as_str().unwrap_or("").contains('/'), "no subresource: {rule}");
                }
            }
        }
        let role = &m.documents[1]["rules"];
        let crd_rule = role
            .as_array()
            .and_then(|r| r.iter().find(|r| r["resources"][0] == "customresourcedefinitions"))
            .expect("a CRD rule");
        assert_eq!(crd_rule["resourceNames"], json!(["databases.db.example.com"]));
        assert_eq!(crd_rule["verbs"], json!(["get"]));
        let args = &m.documents[4]["spec"]["template"]["spec"]["containers"][0]["args"];
        let args: Vec<&str> = args.as_array().expect("args").iter().filter_map(Value::as_str).collect();
        let name = args.iter().position(|a| *a == "--name").expect("--name");
        assert_eq!(args[name + 1], "webapp");
        assert!(args.contains(&"--shadow") && args.contains(&"--leader-elect=false"), "{args:?}");
    }
}
