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
