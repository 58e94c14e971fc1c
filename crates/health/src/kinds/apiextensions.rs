//! `apiextensions.k8s.io`: CustomResourceDefinition.

use crate::Health;
use crate::read::{Malformed, Object};

/// A CRD is `Current` once `Established`; `Failed` when its names were refused or it
/// cannot be established for another reason than still installing; `InProgress` before.
/// The API server's own reason and message are kept.
pub(super) fn custom_resource_definition(o: &Object<'_>) -> Result<Health, Malformed> {
    for c in o.conditions()? {
        match (c.type_, c.status) {
            ("NamesAccepted", "False") => {
                return Ok(Health::failed(
                    c.reason_or("NamesNotAccepted"),
                    c.message_or("names not accepted"),
                ));
            }
            ("Established", "False") if c.reason != "Installing" => {
                return Ok(Health::failed(c.reason_or("NotEstablished"), c.message_or("not established")));
            }
            ("Established", "True") => return Ok(Health::current("Established", "established")),
            _ => {}
        }
    }
    Ok(Health::in_progress("Installing", "not established yet"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::Status::{Current, Failed, InProgress};
    use crate::testing::{Case, check, malformed, object};

    fn crd(conditions: Value) -> Value {
        object(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            json!({"status": {"conditions": conditions}}),
        )
    }

    #[test]
    fn a_crd_by_its_names_and_establishment() {
        let names_accepted = json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"});
        let installing =
            |name, object| Case::new(name, object, InProgress, "Installing", "not established yet");
        let established = |name, object| Case::new(name, object, Current, "Established", "established");
        check(&[
            // kstatus: crdNoConditions, crdInstalling.
            installing(
                "no conditions",
                object("apiextensions.k8s.io/v1", "CustomResourceDefinition", json!({})),
            ),
            installing(
                "installing",
                crd(
                    json!([names_accepted, {"type": "Established", "status": "False", "reason": "Installing"}]),
                ),
            ),
            installing("Established Unknown", crd(json!([{"type": "Established", "status": "Unknown"}]))),
            // kstatus: crdEstablished.
            established(
                "established",
                crd(
                    json!([names_accepted, {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"}]),
                ),
            ),
            established(
                "apiextensions.k8s.io/v1beta1 is judged alike",
                object(
                    "apiextensions.k8s.io/v1beta1",
                    "CustomResourceDefinition",
                    json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}}),
                ),
            ),
            // kstatus: crdNamesNotAccepted: the API server's own reason and message.
            Case::new(
                "names not accepted",
                crd(json!([{"type": "NamesAccepted", "status": "False", "reason": "MultipleConflicts",
                            "message": "\"widgets\" is already in use."},
                           {"type": "Established", "status": "False", "reason": "NotAccepted"}])),
                Failed,
                "MultipleConflicts",
                "\"widgets\" is already in use",
            ),
            Case::new(
                "names not accepted, no reason or message",
                crd(json!([{"type": "NamesAccepted", "status": "False"}])),
                Failed,
                "NamesNotAccepted",
                "names not accepted",
            ),
            Case::new(
                "not established for another reason than installing",
                crd(
                    json!([names_accepted, {"type": "Established", "status": "False", "reason": "NotAccepted",
                                            "message": "not all names are accepted"}]),
                ),
                Failed,
                "NotAccepted",
                "not all names are accepted",
            ),
            Case::new(
                "not established, no reason or message",
                crd(json!([{"type": "Established", "status": "False"}])),
                Failed,
                "NotEstablished",
                "not established",
            ),
            // As in kstatus, the conditions are read in their order and the first that
            // decides wins.
            established(
                "Established before NamesAccepted False",
                crd(
                    json!([{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "False"}]),
                ),
            ),
        ]);
    }

    #[test]
    fn malformed_crd_fields() {
        check(&[
            malformed(
                "a condition's reason",
                crd(json!([{"type": "Established", "status": "False", "reason": 1}])),
                "status.conditions[0].reason is not a string",
            ),
            malformed("the conditions", crd(json!("Established")), "status.conditions is not a list"),
        ]);
    }
}
