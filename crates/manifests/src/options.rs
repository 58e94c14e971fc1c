//! What the generator is given besides the operator description: the bundle, the values
//! and the choices of the person deploying (names, image, scope, replicas, resources, the
//! runtime's pool and limits, extra fetch destinations).

use ctop_core::{ByteSize, EgressRule};

use crate::Error;

/// The operator image `ctop manifests` puts in the Deployment unless told otherwise: the
/// release of this very ctop, tagged with its version without a `v` (`…/ct-operator:0.1.0`),
/// so the manifests run the runtime they were generated for and never move under a
/// floating `latest`.
pub const DEFAULT_IMAGE: &str = concat!("ghcr.io/cloudticon/ct-operator:", env!("CARGO_PKG_VERSION"));

/// Script runtimes for reconciles, as `ctop run --concurrency` defaults to.
pub const DEFAULT_CONCURRENCY: u16 = 4;
/// Script runtimes for admission and conversion calls, as `ctop run --webhook-concurrency`
/// defaults to.
pub const DEFAULT_WEBHOOK_CONCURRENCY: u16 = 4;
/// QuickJS memory of one script runtime, as `ctop run --script-memory` defaults to.
pub const DEFAULT_SCRIPT_MEMORY: ByteSize = ByteSize::mib(64);
/// Rust heap the output of one call may take, as `ctop run --max-output` defaults to.
pub const DEFAULT_MAX_OUTPUT: ByteSize = ByteSize::mib(16);

/// Port of the `/metrics` endpoint of `ctop run`.
pub const METRICS_PORT: u16 = 8080;
/// Port of the `/healthz` and `/readyz` endpoints of `ctop run`.
pub const HEALTH_PORT: u16 = 8081;
/// Port of the webhook server of `ctop run --webhook-port` (scripts with `validate`/`mutate`
/// handlers or resources with several versions).
pub const WEBHOOK_PORT: u16 = 9443;

/// Where the ConfigMap is mounted in the operator's container.
pub const MOUNT_DIR: &str = "/etc/ctop";
/// File name of the bundle in the ConfigMap (`binaryData`) and the mount.
pub const BUNDLE_FILE: &str = "bundle.js.gz";
/// File name of the values in the ConfigMap (`data`) and the mount.
pub const VALUES_FILE: &str = "values.yaml";

/// Pod-template annotation carrying the bundle's SHA-256: a changed script changes the pod
/// template, so the Deployment rolls; an unchanged one leaves it as it is.
pub const BUNDLE_HASH_ANNOTATION: &str = "ctop.dev/bundle-sha256";
/// Pod-template annotation carrying the SHA-256 of the values file, for the same reason.
pub const VALUES_HASH_ANNOTATION: &str = "ctop.dev/values-sha256";

/// Longest operator name: `<name>-manager` and `<name>-system` must stay DNS labels.
const MAX_NAME_LEN: usize = 55;

/// The script bundle as the ConfigMap carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptBundle {
    /// The deterministic `bundle.js.gz` bytes (`ctop_runtime::Bundle::to_gz`).
    pub gz: Vec<u8>,
    /// Lowercase hex SHA-256 of the bundle (`ctop_runtime::Bundle::sha256_hex`).
    pub sha256: String,
}

/// Which objects the operator watches, and so which RBAC objects grant its rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum WatchScope {
    /// Every namespace: a ClusterRole and ClusterRoleBinding.
    #[default]
    Cluster,
    /// One namespace (`ctop run --namespace NS`): rules on namespaced kinds go into a Role
    /// and RoleBinding there; only cluster-scoped kinds still need a ClusterRole.
    Namespace(String),
}

/// CPU and memory of the operator's container. CPU is a Kubernetes quantity; memory is
/// sized by the formula of [`crate::memory()`] from the pool and limits in [`Options`] unless
/// given here, and a value given here wins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerResources {
    /// `requests.cpu`.
    pub cpu_request: String,
    /// `requests.memory`; `None`: base + one runtime (see [`crate::memory()`]).
    pub memory_request: Option<ByteSize>,
    /// `limits.cpu`; `None` leaves the container unthrottled.
    pub cpu_limit: Option<String>,
    /// `limits.memory`; `None`: base + every runtime (see [`crate::memory()`]).
    pub memory_limit: Option<ByteSize>,
}

impl Default for ContainerResources {
    fn default() -> Self {
        Self {
            cpu_request: "50m".into(),
            memory_request: None,
            cpu_limit: Some("500m".into()),
            memory_limit: None,
        }
    }
}

/// How to deploy the operator. Build with [`Options::new`] and set fields as needed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The operator's name: names the ServiceAccount, Deployment, ConfigMap (`<name>-bundle`)
    /// and RBAC objects (`<name>-manager`). A DNS label of at most 55 characters.
    pub name: String,
    /// Where the operator runs; `None` means `<name>-system`.
    pub namespace: Option<String>,
    /// The operator image.
    pub image: String,
    /// Pod replicas (more than one only makes sense with leader election, which `ctop run`
    /// does by default, or with `sharding`).
    pub replicas: u32,
    /// Spread the objects over the replicas (`ctop run --sharding`): every replica
    /// reconciles its share, and the RBAC lets each list and watch the ring's Leases.
    pub sharding: bool,
    /// Which namespaces the operator watches.
    pub watch: WatchScope,
    /// The values file's text, carried as is (comments kept).
    pub values_yaml: String,
    /// The container's requests and limits.
    pub resources: ContainerResources,
    /// `failurePolicy` of the generated admission webhooks (and of the operator's answer
    /// when a handler fails).
    pub webhook_failure_policy: ctop_webhook::FailurePolicy,
    /// Script runtimes for reconciles (`ctop run --concurrency`); at least 1.
    pub concurrency: u16,
    /// Script runtimes for admission and conversion calls (`ctop run --webhook-concurrency`),
    /// for scripts with `validate`/`mutate` handlers or resources with several versions; at
    /// least 1.
    pub webhook_concurrency: u16,
    /// QuickJS memory of one script runtime (`ctop run --script-memory`).
    pub script_memory: ByteSize,
    /// Rust heap the output of one call may take (`ctop run --max-output`).
    pub max_output: ByteSize,
    /// Fetch destinations the deployer allows on top of the script's `.egress(...)`
    /// (`ctop run --egress`, e.g. a URL that comes from the values); the NetworkPolicy
    /// plugin opens them too.
    pub egress: Vec<EgressRule>,
    /// Migrate the stored objects of every resource with several versions to its storage
    /// version (`ctop run --migrate-storage`): the leader rewrites each object with a no-op
    /// update, then removes the other versions from the CRD's `status.storedVersions`, so
    /// that a later script may drop them. The RBAC gains what that takes (see
    /// [`crate::rbac`]); nothing when the script converts no resource.
    pub migrate_storage: bool,
}

impl Options {
    /// Defaults for an operator called `name`: namespace `<name>-system`, the default image,
    /// one replica, cluster-wide, empty values, the runtime's default pool and limits, no
    /// extra egress, no storage migration.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            namespace: None,
            image: DEFAULT_IMAGE.into(),
            replicas: 1,
            sharding: false,
            watch: WatchScope::Cluster,
            values_yaml: "{}\n".into(),
            resources: ContainerResources::default(),
            webhook_failure_policy: ctop_webhook::FailurePolicy::Fail,
            concurrency: DEFAULT_CONCURRENCY,
            webhook_concurrency: DEFAULT_WEBHOOK_CONCURRENCY,
            script_memory: DEFAULT_SCRIPT_MEMORY,
            max_output: DEFAULT_MAX_OUTPUT,
            egress: Vec::new(),
            migrate_storage: false,
        }
    }

    /// Whether the operator migrates stored objects: asked for, and the script has
    /// resources with several versions.
    pub(crate) fn migrates(&self, spec: &ctop_core::OperatorSpec) -> bool {
        self.migrate_storage && spec.converting().next().is_some()
    }

    /// The namespace the operator runs in.
    #[must_use]
    pub fn namespace(&self) -> String {
        self.namespace.clone().unwrap_or_else(|| format!("{}-system", self.name))
    }

    /// Whether the namespace is the generated `<name>-system`, which the manifests own.
    #[must_use]
    pub fn owns_namespace(&self) -> bool {
        self.namespace.is_none()
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        if !is_dns_label(&self.name) || self.name.len() > MAX_NAME_LEN {
            return Err(Error::BadName { field: "name", value: self.name.clone(), max: MAX_NAME_LEN });
        }
        for (field, ns) in [
            ("namespace", self.namespace.as_deref()),
            (
                "watch namespace",
                match &self.watch {
                    WatchScope::Namespace(ns) => Some(ns.as_str()),
                    WatchScope::Cluster => None,
                },
            ),
        ] {
            if let Some(ns) = ns
                && !is_dns_label(ns)
            {
                return Err(Error::BadName { field, value: ns.to_owned(), max: 63 });
            }
        }
        if self.image.trim().is_empty() || self.image.chars().any(char::is_whitespace) {
            return Err(Error::BadImage { image: self.image.clone() });
        }
        if self.replicas == 0 {
            return Err(Error::NoReplicas);
        }
        for (flag, n) in
            [("concurrency", self.concurrency), ("webhook concurrency", self.webhook_concurrency)]
        {
            if n == 0 {
                return Err(Error::NoRuntimes { flag });
            }
        }
        ctop_core::yaml::from_str::<serde_json::Value>(&self.values_yaml)
            .map_err(|e| Error::BadValues { message: e.to_string() })?;
        Ok(())
    }
}

pub use ctop_core::is_dns_label;

/// A usable operator name from free text such as a directory name: lowercased, runs of
/// other characters turned into one `-`, trimmed to 55 characters. `None` when nothing is
/// left (`"/"`, `"..."`).
#[must_use]
pub fn name_from(text: &str) -> Option<String> {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(MAX_NAME_LEN);
    let out = out.trim_end_matches('-').to_owned();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_directories() {
        assert_eq!(name_from("my-operator").as_deref(), Some("my-operator"));
        assert_eq!(name_from("My_Operator v2").as_deref(), Some("my-operator-v2"));
        assert_eq!(name_from("--x--").as_deref(), Some("x"));
        assert_eq!(name_from("..."), None);
        assert_eq!(name_from(&"a".repeat(80)).map(|s| s.len()), Some(55));
    }

    #[test]
    fn options_are_checked() {
        assert!(Options::new("ok").check().is_ok());
        assert!(matches!(Options::new("Bad").check(), Err(Error::BadName { .. })));
        let mut o = Options::new("ok");
        o.watch = WatchScope::Namespace("No".into());
        assert!(matches!(o.check(), Err(Error::BadName { field: "watch namespace", .. })));
        let mut o = Options::new("ok");
        o.values_yaml = "a: [".into();
        assert!(matches!(o.check(), Err(Error::BadValues { .. })));
        // What `ctop run` accepts passes: empty values, a repeated key, a merge key.
        for ok in ["", "# nothing\n", "a: 1\na: 2\n", "base: &b {x: 1}\nd:\n  <<: *b\n", "mode: 0755\n"] {
            o.values_yaml = ok.into();
            assert!(o.check().is_ok(), "{ok:?}: {:?}", o.check());
        }
        o.values_yaml = "a: 1\n---\nb: 2\n".into();
        assert!(matches!(o.check(), Err(Error::BadValues { .. })), "one document only");
        let mut o = Options::new("ok");
        o.replicas = 0;
        assert!(matches!(o.check(), Err(Error::NoReplicas)));
        let mut o = Options::new("ok");
        o.webhook_concurrency = 0;
        assert_eq!(
            o.check().map_err(|e| e.to_string()),
            Err("webhook concurrency must be at least 1".into())
        );
        assert_eq!(Options::new("ok").namespace(), "ok-system");
    }
}
