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
