//! The overlay's public face: a kubesim started with [`Config::overlay`](crate::Config)
//! that a read-only mirror fills with a live cluster's objects ([`KubeSim::import`],
//! [`KubeSim::unimport`]) while an operator under test writes to it; what its requests
//! wrote is then [`KubeSim::request_writes`].
//!
//! The parts live where their concern does: imports in `api::import` (objects stored as
//! they are, no admission, defaulting, validation nor managedFields; a stub Namespace when
//! needed), the uids deleted here and raw puts in `store::overlay`, the bounded log in
//! `store::writes`, and the garbage collector's rule for absent owners in `gc`. An overlay
//! runs no workload controllers and allocates no Service cluster IPs.

use serde_json::Value;

use crate::KubeSim;
use crate::api::Imported;
use crate::error::ApiError;
use crate::store::RequestWrite;

impl KubeSim {
    /// Put a live cluster's object into this kubesim as it is: its type comes from its
    /// `apiVersion` and `kind` (a custom resource's CRD must be here already, imported or
    /// created), and it keeps its uid, creationTimestamp, generation, managedFields, owner
    /// references, finalizers, deletionTimestamp, labels, annotations and status. It gets
    /// this kubesim's next resourceVersion and watchers see ADDED or MODIFIED (DELETED then
    /// ADDED when an object of that name had another uid); an object that is here exactly
    /// so already is left alone ([`crate::ImportEvent::Unchanged`]). A missing namespace
    /// is made as a stub Namespace.
    ///
    /// Nothing is admitted, defaulted, validated or tracked in managedFields, and the
    /// import is not a request write. [`Imported::notes`] says what the overlay would have
    /// refused (a custom resource's schema) and what the import made up.
    ///
    /// # Errors
    ///
    /// `404 NotFound` (`no matches for kind "Widget" in version "example.com/v1"`) when the
    /// kind is not served here; `400`/`422` for an object without kind, apiVersion, name or
    /// (namespaced) namespace; a conversion webhook's failure.
    pub async fn import(&self, obj: Value) -> Result<Imported, ApiError> {
        self.api.import(obj).await
    }

    /// Remove an object as it is, as the live cluster deleted it: watchers see DELETED.
    /// Whether it was here (a kind not served here has nothing to remove). It is not a
    /// request write, and its uid does not count as deleted here: the garbage collector
    /// leaves its dependents alone.
    ///
    /// # Errors
    ///
    /// `422 Invalid` when a namespaced kind is named without a namespace.
    pub fn unimport(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, ApiError> {
        self.api.unimport(api_version, kind, namespace, name)
    }

    /// The changes an overlay's API requests committed, oldest first: creates, updates,
    /// patches, applies, status and finalizer writes, deletions (a deletion waiting for
    /// finalizers is a MODIFIED), and what kubesim's garbage collector, namespace and CRD
    /// cleanup did because of them ([`crate::WriteCause`]). Imports are not in it, nor anything
    /// outside an overlay. The newest [`crate::REQUEST_WRITES_KEPT`] are kept (see
    /// [`KubeSim::dropped_request_writes`]).
    pub fn request_writes(&self) -> Vec<RequestWrite> {
        self.request_writes_since(0)
    }

    /// The request writes with a [`RequestWrite::seq`] above `seq`, oldest first: read
    /// them as they come by passing the last `seq` seen.
    pub fn request_writes_since(&self, seq: u64) -> Vec<RequestWrite> {
        self.api.store.request_writes_since(seq)
    }

    /// How many request writes were dropped from the log to keep it within
    /// [`crate::REQUEST_WRITES_KEPT`].
    pub fn dropped_request_writes(&self) -> u64 {
        self.api.store.dropped_request_writes()
    }
}
