//! Pod stages, after KWOK's: what the simulated kubelet does with the Pods a label
//! selector picks, so an operator's readiness and failure paths can be exercised. Written
//! `SELECTOR:ACTION[;ACTION…]` (`ctop sim --pod-stage`), e.g. `app=flaky:fail`,
//! `tier=db:start=5s`, `app=stuck:never-ready`, `job-name=backup:complete=3s`,
//! `app=slow-exit:stop=45s` (its containers take 45s to stop once the Pod is deleted: killed
//! at the end of its grace period). The first stage whose selector matches a Pod applies to
//! it.

use std::time::Duration;

use ctop_core::LabelSelector;
use serde_json::Value;

/// What happens to the Pods a stage picks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    /// They run and become Ready (the default).
    #[default]
    Ready,
    /// They run but never become Ready (a readiness probe that keeps failing).
    NeverReady,
    /// Their containers fail: `Failed` with exit code 1 when the Pod does not restart them,
    /// else `CrashLoopBackOff` and not Ready.
    Fail,
}

/// One stage.
#[derive(Clone, Debug)]
pub struct PodStage {
    /// Which Pods (a label selector, `""` for all).
    pub selector: LabelSelector,
    /// The stage as written (`SELECTOR:ACTION…`).
    pub text: String,
    /// How long they stay `Pending` once scheduled (else the cluster's `pod_start`).
    pub start: Option<Duration>,
    /// How long a Pod that does not restart its containers (a Job's) runs before it
    /// succeeds (else the cluster's `job_duration`).
    pub complete: Option<Duration>,
    /// How long its containers take to stop once the Pod is deleted (else the cluster's
    /// `pod_start`); past the Pod's grace period they are killed.
    pub stop: Option<Duration>,
    /// Ready, never ready, or failing.
    pub outcome: Outcome,
}

impl PodStage {
    /// Whether the stage picks `pod`.
    pub fn picks(&self, pod: &Value) -> bool {
        self.selector.matches(pod.pointer("/metadata/labels"))
    }
}

impl std::str::FromStr for PodStage {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (selector, actions) = s.rsplit_once(':').ok_or_else(|| {
            format!("{s:?}: expected SELECTOR:ACTION, e.g. app=flaky:fail or app=slow:start=5s")
        })?;
        let parsed = LabelSelector::parse(selector)
            .map_err(|e| format!("{s:?}: the selector {selector:?} is invalid: {e}"))?;
        let mut stage = PodStage {
            selector: parsed,
            text: s.to_owned(),
            start: None,
            complete: None,
            stop: None,
            outcome: Outcome::Ready,
        };
        let duration = |v: &str| -> Result<Duration, String> {
            v.parse::<ctop_core::Duration>()
                .map(Into::into)
                .map_err(|e| format!("{s:?}: {v:?} is not a duration: {e}"))
        };
        for action in actions.split(';').map(str::trim).filter(|a| !a.is_empty()) {
            match action.split_once('=') {
                Some(("start", v)) => stage.start = Some(duration(v)?),
                Some(("complete", v)) => stage.complete = Some(duration(v)?),
                Some(("stop", v)) => stage.stop = Some(duration(v)?),
                None if action == "fail" => stage.outcome = Outcome::Fail,
                None if action == "never-ready" => stage.outcome = Outcome::NeverReady,
                None if action == "ready" => stage.outcome = Outcome::Ready,
                _ => {
                    return Err(format!(
                        "{s:?}: unknown action {action:?}; use fail, never-ready, ready, start=DURATION, complete=DURATION or stop=DURATION"
                    ));
                }
            }
        }
        Ok(stage)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::{Outcome, PodStage};

    #[test]
    fn stages_parse_and_pick_by_labels() {
        let s: PodStage = "app=flaky,tier!=db:fail;start=2s".parse().expect("parses");
        assert_eq!((s.outcome.clone(), s.start), (Outcome::Fail, Some(Duration::from_secs(2))));
        assert!(s.picks(&json!({"metadata": {"labels": {"app": "flaky"}}})));
        assert!(!s.picks(&json!({"metadata": {"labels": {"app": "flaky", "tier": "db"}}})));
        let all: PodStage = ":never-ready".parse().expect("parses");
        assert!(all.picks(&json!({"metadata": {}})));
        assert!("app=x".parse::<PodStage>().is_err());
        assert!("app=x:explode".parse::<PodStage>().unwrap_err().contains("unknown action"));
    }
}
