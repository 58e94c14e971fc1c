//! Fault injection for tests: fail the next N requests of a verb and resource with a
//! status code, add latency, or drop every open watch connection.
//!
//! Reach it from Rust through [`crate::KubeSim::faults`] or over HTTP:
//! `POST /kubesim/faults` with a [`FaultRule`] as JSON, `POST /kubesim/faults/drop-watches`,
//! `DELETE /kubesim/faults`.

use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// A request carrying this header (any value) is exempt from every injected fault: a test
/// harness marks its own requests with it (`ctop test` does), so that a fault injected
/// for the operator under test does not refuse the test's own writes.
pub const EXEMPT_HEADER: &str = "x-kubesim-fault-exempt";

/// One injected fault.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct FaultRule {
    /// The Kubernetes verb it applies to (`get`, `list`, `watch`, `create`, `update`,
    /// `patch`, `apply`, `delete`); `None` for all. `patch` also matches server-side apply.
    pub verb: Option<String>,
    /// The plural resource it applies to (`deployments`); `None` for all.
    pub resource: Option<String>,
    /// Answer with this HTTP status instead of serving (e.g. 500, 429); `0` to only delay.
    pub code: u16,
    /// How many matching requests it affects; `0` means every one until cleared.
    pub count: u32,
    /// Delay added before serving or failing, in milliseconds.
    pub latency_ms: u64,
}

/// What a fault check decided for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Injected {
    /// Wait this long first.
    pub delay: Duration,
    /// Then fail with this code, if any.
    pub fail: Option<u16>,
}

/// The set of active faults. Shared by the server and the test that controls it.
#[derive(Debug)]
pub struct Faults {
    rules: Mutex<Vec<FaultRule>>,
    epoch: watch::Sender<u64>,
    stages: Mutex<Vec<crate::PodStage>>,
}

impl Default for Faults {
    fn default() -> Self {
        Self { rules: Mutex::new(Vec::new()), epoch: watch::channel(0).0, stages: Mutex::new(Vec::new()) }
    }
}

impl Faults {
    /// Pod stages that apply from now on, ahead of those kubesim started with (with
    /// workloads on; each Pod is staged when the kubelet starts it).
    pub fn set_pod_stages(&self, stages: Vec<crate::PodStage>) {
        *self.stages.lock() = stages;
    }

    /// The stages set with [`Faults::set_pod_stages`].
    pub fn pod_stages(&self) -> Vec<crate::PodStage> {
        self.stages.lock().clone()
    }

    /// Add a fault.
    pub fn add(&self, rule: FaultRule) {
        self.rules.lock().push(rule);
    }

    /// Fail the next `count` requests of `verb` on `resource` with `code`.
    pub fn fail(&self, verb: &str, resource: &str, code: u16, count: u32) {
        self.add(FaultRule {
            verb: Some(verb.into()),
            resource: Some(resource.into()),
            code,
            count,
            latency_ms: 0,
        });
    }

    /// Delay every request of `verb` on `resource` (either may be `"*"`).
    pub fn delay(&self, verb: &str, resource: &str, latency: Duration) {
        let any = |s: &str| (s != "*").then(|| s.to_owned());
        self.add(FaultRule {
            verb: any(verb),
            resource: any(resource),
            code: 0,
            count: 0,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
        });
    }

    /// Close every open watch connection now (clients see the stream end).
    pub fn drop_watches(&self) {
        self.epoch.send_modify(|e| *e += 1);
    }

    /// Remove every fault.
    pub fn clear(&self) {
        self.rules.lock().clear();
        self.stages.lock().clear();
    }

    /// The active faults.
    pub fn rules(&self) -> Vec<FaultRule> {
        self.rules.lock().clone()
    }

    /// A receiver that changes whenever watches must be dropped.
    pub fn watch_epoch(&self) -> watch::Receiver<u64> {
        self.epoch.subscribe()
    }

    /// Decide for one request and use up counted faults.
    pub fn check(&self, verb: &str, is_apply: bool, resource: &str) -> Injected {
        let mut rules = self.rules.lock();
        let mut out = Injected::default();
        let mut i = 0;
        while i < rules.len() {
            let r = &mut rules[i];
            let verb_ok = match r.verb.as_deref() {
                None => true,
                Some("apply") => is_apply,
                Some(v) => v == verb,
            };
            let res_ok = r.resource.as_deref().is_none_or(|x| x == resource);
            if verb_ok && res_ok {
                out.delay += Duration::from_millis(r.latency_ms);
                if r.code != 0 && out.fail.is_none() {
                    out.fail = Some(r.code);
                }
                if r.count > 0 {
                    r.count -= 1;
                    if r.count == 0 {
                        rules.remove(i);
                        continue;
                    }
                }
            }
            i += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_faults_run_out() {
        let f = Faults::default();
        f.fail("patch", "deployments", 500, 2);
        assert_eq!(f.check("get", false, "deployments").fail, None);
        assert_eq!(f.check("patch", true, "deployments").fail, Some(500));
        assert_eq!(f.check("patch", false, "deployments").fail, Some(500));
        assert_eq!(f.check("patch", false, "deployments").fail, None);
        f.add(FaultRule { verb: Some("apply".into()), code: 429, ..FaultRule::default() });
        assert_eq!(f.check("patch", false, "x").fail, None);
        assert_eq!(f.check("patch", true, "x").fail, Some(429));
        f.clear();
        f.delay("*", "*", Duration::from_millis(5));
        assert_eq!(f.check("list", false, "pods").delay, Duration::from_millis(5));
    }
}
