//! # ctop-applier: apply a desired set of children under an owner
//!
//! A library with no knowledge of JavaScript, usable from any kube-rs program. It will own
//! server-side apply of each desired child with a controller owner reference, the ApplySet
//! labels and annotations, skipping applies whose content is unchanged, pruning children
//! that left the desired set (only ours, never after a failed apply, with uid
//! preconditions), and status writes through the status subresource.
//!
//! It is filled by the `ctop run` issue.
