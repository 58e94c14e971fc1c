//! # ctop-applier: apply a desired set of children under an owner
//!
//! A library with no knowledge of JavaScript, usable from any kube-rs program: hand it an
//! owner object and the complete set of children it should have, and it makes the cluster
//! match — server-side apply of each child with a controller owner reference, ApplySet
//! (KEP-3659) labels and annotations, no write for children that did not change, and safe
//! pruning of children that left the set. [`StatusWriter`] merge-patches the owner's status
//! through the status subresource, only when that changes it.
//!
//! Start here: [`Applier::new`] with an [`ApplierConfig`], then [`Applier::apply`] once per
//! reconcile; it returns an [`ApplyReport`] or an [`ApplyError`] that says what to do.
//!
//! ```no_run
//! use ctop_applier::{Applier, ApplierConfig, StatusPatch, StatusWrite};
//! use serde_json::json;
//!
//! # async fn reconcile(client: kube::Client, owner: kube::api::DynamicObject) -> Result<(), Box<dyn std::error::Error>> {
//! let applier = Applier::new(client, ApplierConfig::new("my-operator"));
//! let name = owner.metadata.name.clone().unwrap_or_default();
//! let report = applier
//!     .apply(&owner, [json!({
//!         "apiVersion": "v1",
//!         "kind": "ConfigMap",
//!         "metadata": {"name": format!("{name}-config")},   // namespace: the owner's
//!         "data": {"greeting": "hello"},
//!     })])
//!     .await?;
//! println!("applied {}, unchanged {}, pruned {}", report.applied.len(), report.skipped.len(), report.pruned.len());
//!
//! let status = StatusPatch::default()
//!     .with_field("phase", json!("Ready"))
//!     .with_condition(json!({"type": "Ready", "status": "True", "reason": "Applied"}))
//!     .with_observed_generation(owner.metadata.generation.unwrap_or_default());
//! if let StatusWrite::Written { resource_version } = applier.status_writer().write(&owner, status).await? {
//!     println!("status updated, now at resourceVersion {resource_version:?}");
//! }
//! # Ok(()) }
//! ```
//!
//! ## What one pass guarantees
//!
//! - **All or nothing before the first write.** Every child is checked first: well-formed,
//!   a kind the API server serves (discovery, cached), ownable by the owner (never
//!   cluster-scoped under a namespaced owner), no duplicates.
//! - **Ownership before adoption.** An object that exists under a child's name and is not
//!   already a child of the owner (its owner uid or its ApplySet label) is not taken over:
//!   that child fails with [`ChildError::NotOurs`], naming who holds the object, unless the
//!   caller marks it [`Desired::adopt`] (see `adopt`).
//! - **Owner references and labels.** Each child gets a controller owner reference
//!   (`controller: true`, `blockOwnerDeletion: true`), so deleting the owner
//!   garbage-collects it, and the label `applyset.kubernetes.io/part-of=<ApplySet id>`.
//!   The owner gets the label `applyset.kubernetes.io/id` and the annotations
//!   `applyset.kubernetes.io/tooling` and `applyset.kubernetes.io/contains-group-kinds`
//!   (plus `additional-namespaces` for the namespaces of its children besides its own); see
//!   [`applyset`].
//! - **Children in other namespaces.** Owner references cannot cross namespaces, so a child
//!   of a namespaced owner in another namespace gets no owner reference: the `part-of` label
//!   and the annotation `ctop.dev/owner: Kind.group namespace/name`
//!   ([`applyset::OWNER_ANNOTATION`]) tie it to the owner. Pruning finds it like any other;
//!   the garbage collector does not know it, so deleting it with its owner is the caller's
//!   job (the ctop controller holds a finalizer on such an owner, and applies an empty set).
//! - **No write when nothing changed.** A child is skipped when its desired content hashes
//!   the same as at this applier's last successful apply *and* the live object is still
//!   the one that apply produced (same uid; same `generation` for kinds with a status
//!   subresource, else same `resourceVersion`; our labels, annotations and owner reference
//!   still there). This memory is in-process: after a restart every child is applied once
//!   more, which server-side apply makes harmless. A hash annotation on the child could
//!   survive restarts but could not tell that someone edited the child since.
//! - **A Secret's `stringData` is sent as `data`.** Base64-encoded, as the API server
//!   stores it (a key in both takes `stringData`'s value). The field manager then owns the
//!   `data` keys the Secret has, a value generated once as text and later copied back from
//!   the cache as `data` is the same apply (skipped), and a key the caller drops is removed.
//! - **Safe pruning.** Only after every apply of the pass succeeded; only objects found by
//!   label-selected lists of the recorded kinds that carry our `part-of` label *and* an
//!   owner reference to the owner's uid (in another namespace: the `ctop.dev/owner`
//!   annotation naming it); never one annotated `ctop.dev/prune: "false"`
//!   ([`applyset::PRUNE_ANNOTATION`]); deletes with a uid precondition and background
//!   propagation.
//! - **Versions to recognise its own writes.** [`ApplyReport::versions`] holds the
//!   `resourceVersion` the API server answered each apply with, so a controller can drop
//!   the watch events of its own writes.
//!
//! ## Status
//!
//! [`StatusWriter::write`] sends a [`StatusPatch`] as a JSON merge patch (RFC 7386) of the
//! status subresource, not as a server-side apply: a reconcile names the fields it knows
//! about, and a field set by an earlier reconcile and not repeated stays instead of silently
//! disappearing. `null` deletes a field; conditions are merged into the live list by
//! `type`, keeping `lastTransitionTime` while their `status` does not change;
//! `status.observedGeneration` moves only when the patch says so. Nothing is sent when the
//! patch changes nothing, and [`StatusWrite::Written`] carries the new `resourceVersion`.
//! [`StatusWriter::write_to`] does the same for a caller that holds the object's identity
//! and status apart ([`StatusTarget`], e.g. a cache of JSON text), without serializing it;
//! [`StatusWriter::write_to_noting`] also tells the caller the status before and after the
//! patch, for a record of what each write changed. Likewise [`Applier::apply_cached_to`]
//! takes the owner as such a cache holds it ([`Owner`]).
//!
//! ## Errors
//!
//! Errors say what to do ([`ApplyError::is_invalid_input`]) and render API answers the
//! way kubectl does (`Secret default/x: 422 Invalid: Secret "x" is invalid: ...`);
//! [`api_error_text`] does the same for a caller's own API calls.
//!
//! ## What the caller must provide
//!
//! RBAC for the operator: `get`, `list`, `patch` and `delete` on every child kind; `patch`
//! on the owner's kind (for the ApplySet label and annotations) and on its `status`
//! subresource; `update` on `<owner plural>/finalizers` where the
//! `OwnerReferencesPermissionEnforcement` admission plugin is on (it guards
//! `blockOwnerDeletion`). Custom resources used as owners should have the label
//! `applyset.kubernetes.io/is-parent-type: "true"` on their CRD for kubectl to accept them
//! as ApplySet parents.

mod adopt;
mod answer;
mod apply;
pub mod applyset;
mod cache;
mod delete;
mod discovery;
mod error;
mod fingerprint;
mod memory;
mod object;
mod prepare;
mod prune;
mod status;

pub use adopt::{ChildError, Desired};
pub use apply::{Applier, ApplierConfig, ApplyReport};
pub use cache::{CachedMeta, ChildCache};
pub use delete::{Deletion, delete_as_read};
pub use error::{ApplyError, ChildFailure, StatusError, api_error_text};
pub use object::{ChildRef, Owner};
pub use status::{StatusPatch, StatusTarget, StatusWrite, StatusWriter};
