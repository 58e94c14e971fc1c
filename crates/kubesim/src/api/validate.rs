//! What every write must satisfy before it is stored: the namespace exists and is not
//! terminating, the identity fields are consistent, and the object passes its checks
//! (metadata rules; built-in objects decoded like the Go types and checked by
//! `ctop_validation` as `pkg/apis/*/validation` checks them; custom resources pruned,
//! defaulted and validated by `ctop_schema`, CEL included; CRDs checked as the API server
//! checks them).

use ctop_schema as schema;
use serde_json::{Value, json};

use super::crd::{stored_versions_causes, validate_crd};
use super::{Api, FieldValidation, WriteOpts, meta_mut, status_cause};
use crate::error::ApiError;
use crate::kinds::meta::{self, deleting};
use crate::kinds::registry::ResourceType;

impl Api {
    pub(super) fn check_namespace(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<(), ApiError> {
        if !rt.namespaced {
            return Ok(());
        }
        let ns_key = (String::new(), ns.to_owned());
        match self.store.get("/namespaces", &ns_key) {
            None => Err(ApiError::not_found(
                crate::error::GroupResource { group: "", resource: "namespaces" },
                ns,
            )),
            Some(n) if deleting(&n) => Err(ApiError::forbidden(
                rt.gr(),
                name,
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    rt.gr()
                ),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Type, namespace and name checks of a body against the URL.
    pub(super) fn check_identity(
        &self,
        rt: &ResourceType,
        ns: &str,
        url_name: Option<&str>,
        body: &mut Value,
    ) -> Result<(), ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request("the body of the request must be a JSON object"));
        }
        let av = body["apiVersion"].as_str().unwrap_or_default().to_owned();
        let kind = body["kind"].as_str().unwrap_or_default().to_owned();
        let expected_av = rt.api_version();
        if !av.is_empty() && av != expected_av {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({expected_av})"
            )));
        }
        if !kind.is_empty() && kind != rt.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                rt.kind
            )));
        }
        body["apiVersion"] = json!(expected_av);
        body["kind"] = json!(rt.kind);
        let meta = meta_mut(body);
        if rt.namespaced {
            match meta.get("namespace").and_then(Value::as_str) {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => {
                    meta.insert("namespace".into(), json!(ns));
                }
            }
        } else {
            meta.remove("namespace");
        }
        if let Some(url_name) = url_name {
            match meta.get("name").and_then(Value::as_str) {
                Some(n) if !n.is_empty() && n != url_name => {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({n}) does not match the name on the URL ({url_name})"
                    )));
                }
                _ => {
                    meta.insert("name".into(), json!(url_name));
                }
            }
        }
        Ok(())
    }

    /// A server-side applied custom resource as it is stored: as a read gives it back. The
    /// real server validates the applied object with the nulls its pruning left (a typed
    /// field refuses them in [`Self::validate`]), counts them in the generation
    /// (registry/customresource/strategy.go, PrepareForUpdate), and stores them; its
    /// storage decoder drops the non-nullable ones and defaults again on every read, the
    /// read of the write's own answer included (apiextensions-apiserver
    /// pkg/apiserver/customresource_handler.go: crdConversionRESTOptionsGetter,
    /// schemaCoercingDecoder with repairGeneration, unstructuredSchemaCoercer.apply). Kept,
    /// such a null would make the next decoded write (a merge patch of an annotation)
    /// change the spec and bump the generation. Call it after the generation is counted.
    pub(super) fn as_read_back(rt: &ResourceType, obj: &mut Value, opts: &WriteOpts) {
        if let (true, Some(schema)) = (opts.from_apply, rt.crd.as_ref().and_then(|c| c.schema.as_ref())) {
            schema::drop_nulls(obj, schema);
            schema::apply_defaults(obj, schema);
        }
    }

    /// Prune, default and validate a custom resource against its schema; metadata rules
    /// for every kind. `sub` is the subresource written (`status`), if any.
    pub(super) fn validate(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        old: Option<&Value>,
        sub: Option<&str>,
        opts: &WriteOpts,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut causes = meta::validate_metadata(&obj["metadata"], meta::name_rule(&rt.group, &rt.kind));
        if rt.crd.is_none() && sub != Some(super::BINDING) {
            // The kind's own rules (pkg/apis/*/validation), on the decoded, defaulted object.
            let kind = ctop_validation::KindKey::new(&rt.group, &rt.kind);
            let found = match (old, sub) {
                (None, _) => ctop_validation::validate(&kind, obj),
                (Some(old), None) => ctop_validation::validate_update(&kind, obj, old),
                (Some(old), Some(_)) => ctop_validation::validate_status_update(&kind, obj, old),
            };
            causes.extend(found.into_iter().map(status_cause));
        }
        if let Some((schema, crd)) = rt.crd.as_ref().and_then(|c| Some((c.schema.as_ref()?, c))) {
            let removed = schema::prune(obj, schema);
            if !removed.is_empty() {
                match opts.field_validation {
                    FieldValidation::Strict => {
                        let list: Vec<String> =
                            removed.iter().map(|p| format!("unknown field \"{p}\"")).collect();
                        return Err(ApiError::bad_request(format!(
                            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                            list.join(", "),
                            kind = rt.kind,
                            version = rt.version,
                        )));
                    }
                    FieldValidation::Warn => {
                        warnings.extend(removed.iter().map(|p| format!("unknown field \"{p}\"")));
                    }
                    FieldValidation::Ignore => {}
                }
            }
            if !opts.from_apply {
                schema::drop_nulls(obj, schema);
            }
            schema::apply_defaults(obj, schema);
            let found = match old {
                Some(old) => schema::validate_update(obj, old, schema),
                None => schema::validate(obj, schema),
            };
            causes.extend(found.into_iter().map(status_cause));
            // x-kubernetes-validations run after the OpenAPI validation, and not at all
            // when it found a type, required, enum or size error (registry/customresource/strategy.go).
            if !crd.cel.is_empty() {
                match schema::CelRules::blocking_cause(causes.iter().map(|c| c.reason.as_str())) {
                    Some(c) => causes.push(status_cause(c)),
                    None => {
                        let cel = crd.cel.validate(obj, old);
                        causes.extend(cel.causes.into_iter().map(status_cause));
                        warnings.extend(cel.warnings);
                    }
                }
            }
        }
        if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
            if let Some(message) = ctop_schema::decode_error(obj) {
                return Err(ApiError::bad_request(message));
            }
            // The status strategy checks only the status's accepted names (which kubesim
            // sets itself), not the spec nor the stored versions.
            if sub.is_none() {
                causes.extend(validate_crd(obj, old));
                causes.extend(stored_versions_causes(obj, old.is_none()));
            }
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(rt.gr(), &rt.kind_group(), &name, causes))
        }
    }
}
