//! Deleting an object only as it was read: [`delete_as_read`] sends the delete with the uid
//! and resourceVersion it was read at as preconditions, so neither an object re-created
//! under the same name nor one changed since (its owner reference removed by an orphaning
//! delete, say) is deleted on stale grounds. Pruning and the controller's `remove()` both
//! delete children this way.

use kube::api::{Api, DeleteParams, Preconditions, PropagationPolicy};

use crate::discovery::code;

/// What became of a delete sent with [`delete_as_read`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    /// Deleted (or its deletion started: dependents go in the background).
    Deleted,
    /// It was gone already.
    Gone,
    /// It was replaced or changed since it was read: left alone, for the next look.
    Changed,
}

/// Deletes `name` through `api` with background propagation, only if its uid and
/// resourceVersion are still `uid` and `resource_version` (each checked when given).
///
/// # Errors
///
/// The API server refused the delete for another reason than 404 or 409.
pub async fn delete_as_read<K>(
    api: &Api<K>,
    name: &str,
    uid: Option<&str>,
    resource_version: Option<&str>,
) -> Result<Deletion, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: Some(Preconditions {
            uid: uid.map(str::to_owned),
            resource_version: resource_version.map(str::to_owned),
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(Deletion::Deleted),
        Err(e) if code(&e) == Some(404) => Ok(Deletion::Gone),
        Err(e) if code(&e) == Some(409) => Ok(Deletion::Changed),
        Err(e) => Err(e),
    }
}
