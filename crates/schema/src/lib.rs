//! `ctop-schema`: what kube-apiserver does with a CustomResourceDefinition's
//! `openAPIV3Schema`, in one implementation that kubesim (the API server of every ctop
//! test) and `ctop manifests` (which writes the CRDs a cluster receives) both use, so a
//! CRD one accepts the other accepts too.
//!
//! Schemas and objects are plain [`serde_json::Value`]s: the v1 JSON form of
//! `JSONSchemaProps` and of the custom resource. Where to start:
//!
//! * **A CRD is written.** [`decode_error`] first: a schema field of the wrong JSON type
//!   is refused with the decoder's 400 before anything else. Then [`check_structural`]
//!   gives the schema's 422 causes (structural-schema invariants, defaults that do not
//!   validate or would be pruned, list/map-type rules, unsupported keywords, CEL rules
//!   that do not compile) with fields below a base such as
//!   `spec.versions[0].schema.openAPIV3Schema`.
//! * **A CRD is stored.** [`CelRules::compile`] compiles its `x-kubernetes-validations`
//!   once; keep it beside the schema.
//! * **A custom resource is written.** Run the server's pipeline in its order:
//!   [`prune`] (unknown fields; the paths for warnings or strict errors), [`drop_nulls`],
//!   [`apply_defaults`], [`validate`] (or [`validate_update`], which ratchets errors in
//!   unchanged values), then [`CelRules::validate`] (CEL, with `oldSelf` on update).
//!   [`invalid_message`] joins the causes into the 422 message.
//!
//! Messages are the server's, byte for byte: kube-openapi's and apiextensions' texts in
//! apimachinery `field.Error` bodies, with Go's value rendering ([`go`]). Each module
//! names the Go source its rules come from.
//!
//! Not covered: CEL cost estimation and runtime cost limits (no rule is refused for its
//! cost), CEL type checking beyond parsing (a rule that parses but would not type-check
//! is found only when it runs), and the `apiVersion`/`kind`/`metadata` CEL variables of
//! embedded resources beyond their plain values.

mod access;
mod cause;
mod cel;
mod decode;
mod defaults;
mod formats;
pub mod go;
mod listtype;
mod openapi_rules;
mod pattern;
mod prune;
mod structural;
mod validate;

pub use access::{
    EMBEDDED, INT_OR_STRING, LIST_MAP_KEYS, LIST_TYPE, MAP_TYPE, PRESERVE, field_schema, items,
};
pub use cause::{
    Bad, Cause, FIELD_VALUE_DUPLICATE, FIELD_VALUE_FORBIDDEN, FIELD_VALUE_INVALID, FIELD_VALUE_NOT_FOUND,
    FIELD_VALUE_NOT_SUPPORTED, FIELD_VALUE_REQUIRED, FIELD_VALUE_TOO_LONG, FIELD_VALUE_TOO_MANY,
    FIELD_VALUE_TYPE_INVALID, invalid_message,
};
/// The cause constructors, one per apimachinery `field.Error` type, for other crates that
/// word 422 causes as the API server does (`ctop-validation`).
pub mod causes {
    pub use crate::cause::{
        cause, duplicate, forbidden, invalid, not_found, not_supported, required, too_long, too_many,
        type_invalid,
    };
}
pub use cel::{CelOutcome, CelRules};
pub use decode::decode_error;
pub use defaults::{apply_defaults, drop_nulls};
pub use prune::prune;
pub use structural::check_structural;
pub use validate::{validate, validate_update};

#[cfg(test)]
mod test_util {
    use serde_json::{Value, json};

    use crate::Cause;

    pub(crate) fn msgs(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::error_string).collect()
    }

    pub(crate) fn one(causes: &[Cause]) -> &Cause {
        assert_eq!(causes.len(), 1, "expected one cause, got {causes:#?}");
        &causes[0]
    }

    pub(crate) fn spec_schema(spec: Value) -> Value {
        json!({"type": "object", "properties": {"spec": spec}})
    }
}
