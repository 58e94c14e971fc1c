//! How a write's body becomes the new object: server-side apply and `managedFields`
//! ([`ssa`]), strategic merge patch ([`smp`]), and the list and map types both follow
//! ([`shape`] for built-in kinds, [`crd_shape`] for a CRD's schema). Pure functions over
//! JSON; the request logic in `crate::api` calls them.

pub(crate) mod crd_shape;
pub(crate) mod shape;
pub(crate) mod smp;
pub(crate) mod ssa;
