//! The Operator's status as Δ-controller writes it: `status.controllers[]` with each
//! controller's `name`, `Ready` condition and `lastErrors`.
//!
//! | Ready | reason | when |
//! |---|---|---|
//! | `True` | `Ready` | the controller runs and its last evaluation had no error |
//! | `False` | `NotReady` | it cannot run (its YAML does not parse); the message says why |
//! | `Unknown` | `ReconciliationFailed` | it runs, and its last evaluation failed somewhere |

use ctop_core::ConditionStatus;
use serde_json::{Value, json};

/// What one controller's status says.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ControllerStatus {
    pub(super) name: String,
    pub(super) ready: ConditionStatus,
    pub(super) message: String,
    pub(super) errors: Vec<String>,
}

impl ControllerStatus {
    /// The `Ready` reason Δ-controller gives the status.
    pub(super) fn reason(&self) -> &'static str {
        match self.ready {
            ConditionStatus::True => "Ready",
            ConditionStatus::False => "NotReady",
            ConditionStatus::Unknown => "ReconciliationFailed",
        }
    }
}

/// `status.controllers`, keeping each condition's `lastTransitionTime` from `previous` (the
/// object's current status) while its status stays the same, else `now()`.
pub(super) fn controllers(
    list: &[ControllerStatus],
    previous: &Value,
    now: &mut dyn FnMut() -> String,
) -> Value {
    let items: Vec<Value> = list
        .iter()
        .map(|c| {
            let status = match c.ready {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
                ConditionStatus::Unknown => "Unknown",
            };
            let before = previous["controllers"]
                .as_array()
                .and_then(|l| l.iter().find(|p| p["name"].as_str() == Some(c.name.as_str())))
                .and_then(|p| p["conditions"].as_array())
                .and_then(|l| l.iter().find(|x| x["type"] == "Ready"));
            let since = match before {
                Some(b) if b["status"] == status => b["lastTransitionTime"].as_str().map(str::to_owned),
                _ => None,
            };
            let message = if c.message.is_empty() { c.reason().to_string() } else { c.message.clone() };
            json!({
                "name": c.name,
                "conditions": [{
                    "type": "Ready",
                    "status": status,
                    "reason": c.reason(),
                    "message": message,
                    "lastTransitionTime": since.unwrap_or_else(&mut *now),
                }],
                "lastErrors": c.errors,
            })
        })
        .collect();
    Value::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_keeps_its_time_while_its_status_stays() {
        let list = [
            ControllerStatus {
                name: "a".into(),
                ready: ConditionStatus::True,
                message: String::new(),
                errors: vec![],
            },
            ControllerStatus {
                name: "b".into(),
                ready: ConditionStatus::False,
                message: "controller \"b\": pipeline[0]: unknown stage \"@nope\"".into(),
                errors: vec!["x".into()],
            },
        ];
        let previous = json!({"controllers": [
            {"name": "a", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]},
            {"name": "b", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]},
        ]});
        let out = controllers(&list, &previous, &mut || "NOW".to_string());
        assert_eq!(out[0]["conditions"][0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(out[0]["conditions"][0]["reason"], "Ready");
        assert_eq!(out[1]["conditions"][0]["lastTransitionTime"], "NOW");
        assert_eq!(out[1]["conditions"][0]["reason"], "NotReady");
        assert_eq!(out[1]["lastErrors"], json!(["x"]));
    }
}
