//! `policy`: PodDisruptionBudget.

use super::count;
use crate::Health;
use crate::read::{Malformed, Object};

/// A PodDisruptionBudget whose generation its controller observed (the generic rule) has
/// its allowed disruptions computed, so it is `Current`.
pub(super) fn pod_disruption_budget(o: &Object<'_>) -> Result<Health, Malformed> {
    Ok(match o.int("status.disruptionsAllowed")? {
        Some(n) => Health::current("Current", format!("{} allowed", count(n, "disruption"))),
        None => Health::current("Current", "nothing to wait for"),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::Status::{Current, InProgress};
    use crate::testing::{Case, check, malformed, object};

    fn pdb(api_version: &str, generation: i64, status: Value) -> Value {
        object(
            api_version,
            "PodDisruptionBudget",
            json!({"metadata": {"name": "x", "generation": generation}, "status": status}),
        )
    }

    #[test]
    fn a_pod_disruption_budget_is_current_once_observed() {
        check(&[
            // kstatus: pdbObserved: the disruption controller computed the allowed disruptions.
            Case::new(
                "observed",
                pdb(
                    "policy/v1",
                    1,
                    json!({"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 3}),
                ),
                Current,
                "Current",
                "1 disruption allowed",
            ),
            Case::new(
                "observed, none allowed",
                pdb("policy/v1", 1, json!({"observedGeneration": 1, "disruptionsAllowed": 0})),
                Current,
                "Current",
                "0 disruptions allowed",
            ),
            Case::new(
                "no status",
                pdb("policy/v1", 1, json!(null)),
                Current,
                "Current",
                "nothing to wait for",
            ),
            // kstatus: pdbNotObserved (the generic rule); policy/v1beta1 is judged alike.
            Case::new(
                "a newer generation",
                pdb("policy/v1beta1", 2, json!({"observedGeneration": 1, "disruptionsAllowed": 1})),
                InProgress,
                "GenerationNotObserved",
                "generation 2 not yet observed, the status is of generation 1",
            ),
        ]);
    }

    #[test]
    fn malformed_pod_disruption_budget_fields() {
        check(&[malformed(
            "status.disruptionsAllowed",
            pdb("policy/v1", 1, json!({"disruptionsAllowed": "1"})),
            "status.disruptionsAllowed is not an integer",
        )]);
    }
}
