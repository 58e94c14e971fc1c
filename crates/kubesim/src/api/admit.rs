//! Admission: the attributes a webhook sees, the mutating then validating chains, and the
//! OwnerReferencesPermissionEnforcement plugin.

use serde_json::{Value, json};

use super::{Api, WriteOpts};
use crate::api::admission::{self, Operation};
use crate::api::conversion::{Converter, TIMEOUT};
use crate::api::convert;
use crate::error::ApiError;
use crate::kinds::registry::ResourceType;

impl Api {
    fn webhook_configs(&self, kind: &str) -> Vec<Value> {
        let Some(rt) = self.registry.get("admissionregistration.k8s.io", "v1", kind) else {
            return Vec::new();
        };
        let (_, table) = self.store.snapshot(&rt.store, false);
        table.values().map(|v| (**v).clone()).collect()
    }

    fn admission_attrs(
        &self,
        rt: &ResourceType,
        req: &Admit<'_>,
        object: Option<Value>,
    ) -> admission::Attributes {
        let is_ns = rt.group.is_empty() && rt.kind == "Namespace";
        let ns_name = if is_ns { req.name } else { req.ns };
        let namespace_labels = self.store.get("/namespaces", &(String::new(), ns_name.to_owned())).map(|n| {
            n.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        });
        admission::Attributes {
            operation: req.op,
            group: rt.group.clone(),
            version: rt.version.clone(),
            kind: rt.kind.clone(),
            resource: rt.plural.clone(),
            subresource: req.sub.unwrap_or_default().to_owned(),
            namespace: if is_ns { req.name.to_owned() } else { req.ns.to_owned() },
            name: req.name.to_owned(),
            object: object.map(|o| convert::to_served(rt, &o)),
            old_object: req.old.map(|o| convert::to_served(rt, o)),
            dry_run: req.dry_run,
            options: match req.op {
                Operation::Delete => json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}),
                Operation::Update => json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}),
                _ => json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}),
            },
            user: req.user.clone(),
            namespace_labels,
            equivalent_versions: rt
                .crd
                .as_ref()
                .map(|c| c.definition.versions.iter().map(|(v, _)| v.clone()).collect())
                .unwrap_or_default(),
        }
    }

    /// The create pipeline after defaulting: mutating webhooks, validation, validating
    /// webhooks. Returns the object to store.
    pub(super) async fn admit_create(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        mut obj: Value,
        opts: &WriteOpts,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let req = Admit {
            op: Operation::Create,
            ns,
            name,
            sub: None,
            old: None,
            dry_run: opts.dry_run,
            user: &opts.user,
        };
        if let Some(mutated) = self.admit_mutate(rt, &req, Some(obj.clone()), warnings).await? {
            obj = mutated;
        }
        // A POST has no name in its URL; server-side apply's PATCH (the one other way to
        // create) has.
        let url_name = if opts.from_apply { name } else { "" };
        self.rbac_escalation_permitted(rt, ns, url_name, None, &obj, opts)?;
        self.validate(rt, &mut obj, None, None, opts, warnings)?;
        self.admit_validate(rt, &req, Some(&obj), warnings).await?;
        self.owner_references_permitted(rt, ns, name, None, &obj, opts)?;
        Ok(obj)
    }

    /// The OwnerReferencesPermissionEnforcement admission plugin (run when the server
    /// authorizes): changing an object's `ownerReferences` on update needs `delete` on the
    /// object, and a reference that newly sets `blockOwnerDeletion` needs `update` on the
    /// owner's `finalizers` subresource.
    pub(super) fn owner_references_permitted(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        old: Option<&Value>,
        new: &Value,
        opts: &WriteOpts,
    ) -> Result<(), ApiError> {
        let Some(user) = &opts.authz_user else { return Ok(()) };
        let refs = |o: Option<&Value>| -> Vec<Value> {
            o.and_then(|o| o.pointer("/metadata/ownerReferences"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (before, after) = (refs(old), refs(Some(new)));
        if before == after {
            return Ok(());
        }
        let in_ns = |a: crate::auth::authz::Attributes| if rt.namespaced { a.in_namespace(ns) } else { a };
        let forbidden = |why: String| {
            ApiError::forbidden(rt.gr(), name, format!("{} \"{name}\" is forbidden: {why}", rt.gr()))
        };
        if old.is_some() {
            let attrs =
                in_ns(crate::auth::authz::Attributes::resource("delete", &rt.group, &rt.plural).named(name));
            if !crate::auth::authz::authorize(user, &attrs, self) {
                return Err(forbidden(format!(
                    "cannot set an ownerRef on a resource you can't delete: {}",
                    crate::auth::authz::forbidden_message(user, &attrs)
                )));
            }
        }
        let blocking = |r: &Value| r["blockOwnerDeletion"] == json!(true);
        for r in after.iter().filter(|r| blocking(r)) {
            let was_blocking = before.iter().any(|b| b["uid"] == r["uid"] && blocking(b));
            if was_blocking {
                continue;
            }
            let (api_version, kind) =
                (r["apiVersion"].as_str().unwrap_or(""), r["kind"].as_str().unwrap_or(""));
            let Some(owner) = self.registry.by_kind(api_version, kind) else {
                return Err(forbidden(format!(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}"
                )));
            };
            let resource = format!("{}/finalizers", owner.plural);
            let mut attrs = crate::auth::authz::Attributes::resource("update", &owner.group, &owner.plural)
                .with_subresource("finalizers")
                .named(r["name"].as_str().unwrap_or(""));
            if owner.namespaced {
                attrs = attrs.in_namespace(ns);
            }
            if !crate::auth::authz::authorize(user, &attrs, self) {
                return Err(forbidden(format!(
                    "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: {}",
                    crate::auth::authz::forbidden_message(user, &attrs)
                )));
            }
            tracing::trace!(resource, "blockOwnerDeletion permitted");
        }
        Ok(())
    }

    /// Run the mutating admission webhooks; returns the (possibly changed) object.
    pub(super) async fn admit_mutate(
        &self,
        rt: &ResourceType,
        req: &Admit<'_>,
        object: Option<Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Option<Value>, ApiError> {
        let configs = self.webhook_configs("mutatingwebhookconfigurations");
        if configs.is_empty() {
            return Ok(object);
        }
        let attrs = self.admission_attrs(rt, req, object);
        let caller = self.webhooks.read().clone();
        let converter = AdmissionConverter { rt, service_hosts: caller.service_hosts() };
        let out = caller
            .mutate_converting(&configs, &attrs, &converter, warnings)
            .await
            .map_err(admission_error)?;
        Ok(out.map(|o| convert::to_stored(rt, o)))
    }

    /// Run the validating admission webhooks.
    pub(super) async fn admit_validate(
        &self,
        rt: &ResourceType,
        req: &Admit<'_>,
        object: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let configs = self.webhook_configs("validatingwebhookconfigurations");
        if configs.is_empty() {
            return Ok(());
        }
        let attrs = self.admission_attrs(rt, req, object.cloned());
        let caller = self.webhooks.read().clone();
        let converter = AdmissionConverter { rt, service_hosts: caller.service_hosts() };
        caller.validate_converting(&configs, &attrs, &converter, warnings).await.map_err(admission_error)
    }
}

/// How admission converts a custom resource for a webhook matched through an equivalent
/// version: with the CRD's converter, not pruned (the request scope's converter, which the
/// dispatchers use, is the bare CRD converter: apiserver `admission.ConvertToGVK`).
struct AdmissionConverter<'a> {
    rt: &'a ResourceType,
    service_hosts: &'a std::collections::HashMap<String, String>,
}

impl admission::VersionConverter for AdmissionConverter<'_> {
    fn convert<'a>(
        &'a self,
        object: &'a Value,
        version: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, String>> + Send + 'a>> {
        Box::pin(async move {
            let Some(crd) = &self.rt.crd else { return Ok(object.clone()) };
            let converter = Converter {
                definition: &crd.definition,
                service_hosts: self.service_hosts,
                timeout: TIMEOUT,
            };
            converter.one(object.clone(), version).await.map_err(|e| e.0)
        })
    }
}

/// What admission needs to know about a request besides the objects.
pub(super) struct Admit<'a> {
    pub(super) op: Operation,
    pub(super) ns: &'a str,
    pub(super) name: &'a str,
    pub(super) sub: Option<&'a str>,
    pub(super) old: Option<&'a Value>,
    pub(super) dry_run: bool,
    pub(super) user: &'a admission::UserInfo,
}

fn admission_error(e: admission::AdmissionError) -> ApiError {
    let status = e.status();
    let mut err = ApiError::internal(status["message"].as_str().unwrap_or_default());
    err.code = e.code();
    err.reason = match status["reason"].as_str().unwrap_or_default() {
        "" => "",
        "Forbidden" => "Forbidden",
        "BadRequest" => "BadRequest",
        "NotFound" => "NotFound",
        "Invalid" => "Invalid",
        "InternalError" => "InternalError",
        "Conflict" => "Conflict",
        "TooManyRequests" => "TooManyRequests",
        _ => "",
    };
    err
}
