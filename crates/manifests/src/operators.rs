//! `ctop manifests --operators`: the documents that deploy `ctop run --operators`, the
//! manager that runs every Δ-controller `Operator` object of the cluster.
//!
//! The kinds the Operators will read and write are not known when it is deployed, so the
//! deployer names them ([`ManagerRules`]); nothing beyond them is granted, and `*` is
//! granted only when asked for. What the manager itself always gets:
//!
//! | resource | verbs | why |
//! |---|---|---|
//! | `dcontroller.io` `operators` | get, list, watch, update, patch | the Operators, the controller's finalizer |
//! | `operators/status` | get, update, patch | `status.controllers`, conditions, the manager's errors |
//! | `apiextensions.k8s.io` `customresourcedefinitions` | get, list, watch, create, patch | the Operator CRD when missing, each Operator's view CRDs |
//! | events, Leases, ControllerStatuses | as for any operator | |
//!
//! An Operator's views (`<operator>.view.dcontroller.io`) are kinds like others: name them
//! in the write list (`<operator>.view.dcontroller.io/*`).

use ctop_core::{ControllerSpec, KindRef, OperatorSpec, PolicyRule, ResourceSpec};
use serde_json::{Value, json};

use crate::options::{BUNDLE_HASH_ANNOTATION, ScriptBundle, VALUES_HASH_ANNOTATION, WatchScope};
use crate::{Error, Manifests, Options, crd, permissions, rbac, sizing, workload};

/// Verbs on what the Operators read (their sources, Patcher targets, the views they read).
pub const READ_VERBS: &[&str] = &["get", "list", "watch"];
/// Verbs on what the Operators write (Updater targets, Patcher targets, views).
pub const WRITE_VERBS: &[&str] = &["get", "list", "watch", "create", "update", "patch", "delete"];

/// The resources the deployer lets the Operators use, each `group/resource` (`resource`
/// alone for the core group; `*` for any group or resource).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagerRules {
    /// Resources read ([`READ_VERBS`]).
    pub read: Vec<String>,
    /// Resources read and written ([`WRITE_VERBS`]).
    pub write: Vec<String>,
}

impl ManagerRules {
    /// The policy rules granted, one per resource.
    #[must_use]
    pub fn rules(&self) -> Vec<PolicyRule> {
        let rule = |res: &String, verbs: &[&str]| {
            let (group, resource) = res.rsplit_once('/').unwrap_or(("", res.as_str()));
            PolicyRule {
                api_groups: vec![group.to_string()],
                resources: vec![resource.to_string()],
                verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
                resource_names: Vec::new(),
            }
        };
        let read = self.read.iter().map(|r| rule(r, READ_VERBS));
        read.chain(self.write.iter().map(|r| rule(r, WRITE_VERBS))).collect()
    }
}

/// The documents of `ctop run --operators` deployed with `options`: the Namespace, the
/// `Operator` CRD (`operator_crd`, Δ-controller's schema as `ctop-declarative` ships it),
/// the ControllerStatus CRD, a ServiceAccount, RBAC (the manager's own and `rules`), and
/// the Deployment.
///
/// # Errors
///
/// A bad name or namespace, or a CRD that the API server's checks refuse.
pub fn generate_operators(
    operator_crd: &ResourceSpec,
    rules: &ManagerRules,
    options: &Options,
) -> Result<Manifests, Error> {
    options.check()?;
    let spec = manager_spec(operator_crd, rules);
    let labels = crate::common_labels(options);
    let selector = crate::selector_labels(options);
    let mut docs = vec![workload::namespace(options, &labels)];
    docs.push(crd::crd(operator_crd, &labels)?);
    docs.push(ctop_core::controller_status::crd());
    docs.push(workload::service_account(options, &labels));
    let perms = permissions(&spec, options);
    let mut notes = perms.notes.clone();
    if rules.read.is_empty() && rules.write.is_empty() {
        notes.push(
            "no --operators-read or --operators-write: the Operators may use no kind but Operator itself; name \
             the resources their sources and targets use (and <operator>.view.dcontroller.io/* for their views)"
                .to_owned(),
        );
    }
    if rules.read.iter().chain(&rules.write).any(|r| r == "*" || r.starts_with("*/")) {
        notes.push("the RBAC grants every resource of some group (`*`), as asked".to_owned());
    }
    docs.extend(rbac::documents(&perms, options, &labels));
    let memory = sizing::memory(&spec, options)?;
    // The script's Deployment, without the script: no bundle to mount.
    let none = ScriptBundle { gz: Vec::new(), sha256: "0".repeat(64) };
    let mut deployment = workload::deployment(options, false, &none, &memory, &labels, &selector);
    without_bundle(&mut deployment, options);
    docs.push(deployment);
    Ok(Manifests { documents: docs, notes })
}

/// The manager as one controller of Operators, for the RBAC and sizing of a script's.
fn manager_spec(operator_crd: &ResourceSpec, rules: &ManagerRules) -> OperatorSpec {
    let mut permissions = vec![PolicyRule {
        api_groups: vec!["apiextensions.k8s.io".to_string()],
        resources: vec!["customresourcedefinitions".to_string()],
        verbs: ["get", "list", "watch", "create", "patch"].iter().map(|v| (*v).to_string()).collect(),
        resource_names: Vec::new(),
    }];
    permissions.extend(rules.rules());
    let controller = ControllerSpec {
        name: "operators".to_string(),
        for_: KindRef { api_version: operator_crd.api_version.clone(), kind: operator_crd.kind.clone() },
        permissions,
        ..ControllerSpec::default()
    };
    OperatorSpec { resources: vec![operator_crd.clone()], controllers: vec![controller] }
}

/// The Deployment's container runs `ctop run --operators`, with nothing mounted for a
/// script.
fn without_bundle(deployment: &mut Value, options: &Options) {
    let mut args =
        vec!["run".to_owned(), "--operators".to_owned(), "--name".to_owned(), options.name.clone()];
    if let WatchScope::Namespace(ns) = &options.watch {
        args.extend(["--namespace".to_owned(), ns.clone()]);
    }
    args.extend(["--log-format".to_owned(), "json".to_owned()]);
    let pod = &mut deployment["spec"]["template"];
    if let Some(a) = pod["metadata"]["annotations"].as_object_mut() {
        a.remove(BUNDLE_HASH_ANNOTATION);
        a.remove(VALUES_HASH_ANNOTATION);
    }
    if let Some(v) = pod["spec"]["volumes"].as_array_mut() {
        v.retain(|v| v["name"] != "bundle");
    }
    if let Some(c) = pod["spec"]["containers"].get_mut(0) {
        c["args"] = json!(args);
        if let Some(m) = c["volumeMounts"].as_array_mut() {
            m.retain(|m| m["name"] != "bundle");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operator_crd() -> ResourceSpec {
        ResourceSpec {
            api_version: "dcontroller.io/v1alpha1".into(),
            group: "dcontroller.io".into(),
            version: "v1alpha1".into(),
            kind: "Operator".into(),
            plural: "operators".into(),
            singular: "operator".into(),
            scope: ctop_core::Scope::Cluster,
            schema: json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            status_subresource: true,
            ..Default::default()
        }
    }

    #[test]
    fn resources_read_as_rules_of_their_group() {
        let rules =
            ManagerRules { read: vec!["pods".into()], write: vec!["demo.view.dcontroller.io/*".into()] };
        let rules = rules.rules();
        assert_eq!(
            (rules[0].api_groups.as_slice(), rules[0].resources.as_slice()),
            (&["".to_string()][..], &["pods".to_string()][..])
        );
        assert_eq!(rules[0].verbs, READ_VERBS);
        assert_eq!(rules[1].api_groups, ["demo.view.dcontroller.io"]);
        assert_eq!(rules[1].resources, ["*"]);
        assert_eq!(rules[1].verbs, WRITE_VERBS);
    }

    #[test]
    fn the_manager_runs_without_a_bundle_and_gets_only_what_is_named() {
        let options = Options::new("ctop-operators");
        let none = ManagerRules::default();
        let m = generate_operators(&operator_crd(), &none, &options).expect("manifests");
        let kinds: Vec<&str> = m.documents.iter().filter_map(|d| d["kind"].as_str()).collect();
        assert!(!kinds.contains(&"ConfigMap"), "{kinds:?}");
        let deployment = m.documents.iter().find(|d| d["kind"] == "Deployment").expect("a Deployment");
        let pod = &deployment["spec"]["template"];
        let args = &pod["spec"]["containers"][0]["args"];
        assert_eq!((&args[0], &args[1]), (&json!("run"), &json!("--operators")));
        assert!(!pod.to_string().contains("bundle"), "{pod}");
        let role = m.documents.iter().find(|d| d["kind"] == "ClusterRole").expect("a ClusterRole");
        let groups: Vec<&str> = role["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["apiGroups"][0].as_str())
            .collect();
        assert_eq!(
            groups,
            ["apiextensions.k8s.io", "dcontroller.io", "dcontroller.io", "dcontroller.io", "events.k8s.io"]
        );
        assert!(m.notes.iter().any(|n| n.contains("--operators-read")), "{:?}", m.notes);
    }
}
