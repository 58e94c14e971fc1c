//! Writes: create, replace (PUT), the four patch types and server-side apply, each from the
//! request body to the committed change (admission, checks, generation, managedFields).

use serde_json::{Value, json};

use super::admit::Admit;
use super::crd::establish_crd;
use super::{
    Api, Current, PatchKind, SYSTEM_FIELDS, WriteOpts, Written, manager, meta_mut, obj_key, rt_scope,
    spec_part, ssa_error,
};
use crate::api::admission::Operation;
use crate::api::convert;
use crate::error::ApiError;
use crate::kinds::builtin;
use crate::kinds::meta::{self, deleting, finalizers};
use crate::kinds::registry::ResourceType;
use crate::merge::ssa;
use crate::store::{CommitError, object_rv};

impl Api {
    /// `POST`.
    pub async fn create(
        &self,
        rt: &ResourceType,
        ns: &str,
        mut body: Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let mut warnings = builtin::writes::decode_body(rt, &mut body, opts.field_validation)?;
        self.check_identity(rt, ns, None, &mut body)?;
        body = convert::to_stored(rt, body);
        let meta = meta_mut(&mut body);
        for f in SYSTEM_FIELDS {
            meta.remove(*f);
        }
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => n.to_owned(),
            _ => match meta.get("generateName").and_then(Value::as_str) {
                Some(prefix) if !prefix.is_empty() => {
                    // As the API server's name generator: a base over 58 characters is cut
                    // there, so that base and suffix fit a 63-character label.
                    let base = prefix.get(..58).unwrap_or(prefix);
                    let n = format!("{base}{}", meta::name_suffix());
                    meta.insert("name".into(), json!(n));
                    n
                }
                _ => {
                    return Err(ApiError::invalid_field(
                        rt.gr(),
                        &rt.kind_group(),
                        "",
                        "FieldValueRequired",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    ));
                }
            },
        };
        self.check_namespace(rt, ns, &name)?;
        if let Some(crd) = &rt.crd
            && self.crd_terminating(&crd.crd_name)
        {
            let mut e = ApiError::method_not_allowed("create");
            e.message = "create not allowed while custom resource definition is terminating".to_owned();
            return Err(e);
        }
        if rt.status
            && let Some(m) = body.as_object_mut()
        {
            m.remove("status");
        }
        Self::normalize(rt, &mut body);
        body = self.admit_create(rt, ns, &name, body, opts, &mut warnings).await?;
        let now = meta::now();
        self.stamp_new(rt, &name, &mut body, opts, &now)?;
        let mgr = opts.manager();
        let body =
            ssa::update(None, body, &manager(&mgr, rt, None, &now), rt.shape.as_ref(), ssa::Scope::All)
                .map_err(|e| ssa_error(rt, &name, e))?;
        self.commit_create(rt, ns, &name, body, opts, warnings).await
    }

    /// What the server sets on every object it creates, whatever the verb: a Service's
    /// cluster IP and node ports (when the cluster hands them out), the uid, the creation
    /// time, `generation: 1`, and a new CRD's conditions and cleanup finalizer.
    fn stamp_new(
        &self,
        rt: &ResourceType,
        name: &str,
        obj: &mut Value,
        opts: &WriteOpts,
        now: &str,
    ) -> Result<(), ApiError> {
        if rt.group.is_empty()
            && rt.kind == "Service"
            && !opts.dry_run
            && let Some(ips) = self.service_ips.lock().as_mut()
        {
            ips.allocate(obj).map_err(|message| {
                ApiError::invalid_field(
                    rt.gr(),
                    &rt.kind_group(),
                    name,
                    "FieldValueInvalid",
                    "spec.clusterIPs",
                    &message,
                )
            })?;
        }
        let meta = meta_mut(obj);
        meta.insert("uid".into(), json!(meta::new_uid()));
        meta.insert("creationTimestamp".into(), json!(now));
        if rt.generation {
            meta.insert("generation".into(), json!(1));
        }
        if rt.kind == "CustomResourceDefinition" {
            establish_crd(obj);
            meta_mut(obj).insert("finalizers".into(), json!(["customresourcecleanup.apiextensions.k8s.io"]));
        }
        if rt.group == "batch"
            && rt.kind == "Job"
            && obj.pointer("/spec/manualSelector") != Some(&json!(true))
        {
            generate_job_selector(obj);
        }
        Ok(())
    }

    /// Store a new object (in the storage version) and answer with it as stored, read
    /// back in the request's version (a dry run makes the same round trip).
    async fn commit_create(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        mut body: Value,
        opts: &WriteOpts,
        warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        meta::omit_empty(&mut body);
        let stored = self.to_storage(rt, body).await?;
        if opts.dry_run {
            return Ok(Written { object: self.served(rt, &stored).await?, code: 201, warnings });
        }
        let change = self
            .store
            .create(&rt.store, obj_key(rt, ns, name), stored, opts.attribution().as_ref())
            .map_err(|_| ApiError::already_exists(rt.gr(), name))?;
        self.after_commit(rt, &change);
        Ok(Written { object: self.served(rt, &change.object).await?, code: 201, warnings })
    }

    /// `PUT` on an object or its `/status`.
    pub async fn replace(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        mut body: Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let warnings = builtin::writes::decode_body(rt, &mut body, opts.field_validation)?;
        self.check_identity(rt, ns, Some(name), &mut body)?;
        body = convert::to_stored(rt, body);
        let live = self.live(rt, ns, name).ok_or_else(|| ApiError::not_found(rt.gr(), name))?;
        match body.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|rv| !rv.is_empty()) {
            Some(rv) if rv.parse::<u64>().ok() != Some(object_rv(&live)) => {
                return Err(ApiError::stale(rt.gr(), name));
            }
            Some(_) => {}
            None if rt.crd.is_some() => {
                return Err(ApiError::invalid_field(
                    rt.gr(),
                    &rt.kind_group(),
                    name,
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                ));
            }
            _ => {}
        }
        let mgr = opts.manager();
        let current = self.current(rt, live).await?;
        self.write_over(rt, ns, name, sub, &current, body, opts, &mgr, true, warnings).await
    }

    /// The shared tail of PUT and PATCH: carry system fields over from the current object,
    /// separate spec and status, track managedFields, validate, commit in the storage
    /// version (a write that changes nothing there commits nothing).
    #[allow(clippy::too_many_arguments)]
    async fn write_over(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        current: &Current,
        mut new: Value,
        opts: &WriteOpts,
        mgr: &str,
        track: bool,
        mut warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        let live = &current.object;
        // System metadata always comes from the live object.
        {
            let live_meta = live["metadata"].as_object().cloned().unwrap_or_default();
            let meta = meta_mut(&mut new);
            for f in SYSTEM_FIELDS.iter().chain(["name", "namespace"].iter()) {
                match live_meta.get(*f) {
                    Some(v) => meta.insert((*f).to_owned(), v.clone()),
                    None => meta.remove(*f),
                };
            }
        }
        match sub {
            Some("status") => {
                // Only status changes through /status; metadata changes other than
                // managedFields are ignored.
                let mut merged = live.clone();
                merged["status"] = new.get("status").cloned().unwrap_or(Value::Null);
                if merged["status"].is_null()
                    && let Some(m) = merged.as_object_mut()
                {
                    m.remove("status");
                }
                if let Some(mf) = new.pointer("/metadata/managedFields") {
                    merged["metadata"]["managedFields"] = mf.clone();
                }
                new = merged;
            }
            _ if rt.status => match live.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Some(m) = new.as_object_mut() {
                        m.remove("status");
                    }
                }
            },
            _ => {}
        }
        Self::normalize(rt, &mut new);
        let req = Admit {
            op: Operation::Update,
            ns,
            name,
            sub,
            old: Some(live),
            dry_run: opts.dry_run,
            user: &opts.user,
        };
        if let Some(mutated) = self.admit_mutate(rt, &req, Some(new.clone()), &mut warnings).await? {
            new = mutated;
        }
        self.rbac_escalation_permitted(rt, ns, name, Some(live), &new, opts)?;
        // The CRD strategy's PrepareForUpdate: the status stays the stored one, with the
        // storage version added to storedVersions, before validation sees it (and after
        // managedFields tracking, which puts back the stored status).
        let crd_status = (rt.kind == "CustomResourceDefinition" && sub.is_none()).then(|| {
            if let Some(status) = live.get("status") {
                new["status"] = status.clone();
            }
            establish_crd(&mut new);
            new["status"].clone()
        });
        self.validate(rt, &mut new, Some(live), sub, opts, &mut warnings)?;
        self.admit_validate(rt, &req, Some(&new), &mut warnings).await?;
        self.owner_references_permitted(rt, ns, name, Some(live), &new, opts)?;
        if deleting(live) {
            let before = finalizers(live);
            let added: Vec<String> = finalizers(&new).into_iter().filter(|f| !before.contains(f)).collect();
            if !added.is_empty() {
                let list = added.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ");
                return Err(ApiError::invalid_field(
                    rt.gr(),
                    &rt.kind_group(),
                    name,
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    &format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
                    ),
                ));
            }
        }
        if rt.generation && spec_part(live, rt.status) != spec_part(&new, rt.status) {
            let g = live.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
            meta_mut(&mut new).insert("generation".into(), json!(g + 1));
        }
        Self::as_read_back(rt, &mut new, opts);
        if track {
            let now = meta::now();
            new = ssa::update(
                Some(live),
                new,
                &manager(mgr, rt, sub, &now),
                rt.shape.as_ref(),
                rt_scope(rt, sub),
            )
            .map_err(|e| ssa_error(rt, name, e))?;
        }
        if let Some(status) = crd_status {
            new["status"] = status;
        }
        meta::omit_empty(&mut new);
        // `ShouldDeleteDuringUpdate`: the write that takes the last finalizer off an object
        // whose deletion is due (grace period 0) removes it; a Pod in its grace period
        // stays for the kubelet.
        let removed = deleting(&new)
            && finalizers(&new).is_empty()
            && !finalizers(&current.stored).is_empty()
            && current.stored["metadata"]["deletionGracePeriodSeconds"].as_i64().unwrap_or(0) == 0;
        let new = self.to_storage(rt, new).await?;
        if new == *current.stored {
            return Ok(Written { object: convert::to_served(rt, live), code: 200, warnings });
        }
        if opts.dry_run {
            return Ok(Written { object: self.served(rt, &new).await?, code: 200, warnings });
        }
        let key = obj_key(rt, ns, name);
        let expected = object_rv(&current.stored);
        let by = opts.attribution();
        let change = if removed {
            self.store.remove(&rt.store, &key, expected, by.as_ref())
        } else {
            self.store.update(&rt.store, &key, expected, new, by.as_ref())
        };
        let change = change.map_err(|e| match e {
            CommitError::Missing => ApiError::not_found(rt.gr(), name),
            _ => ApiError::stale(rt.gr(), name),
        })?;
        self.after_commit(rt, &change);
        Ok(Written { object: self.served(rt, &change.object).await?, code: 200, warnings })
    }

    /// `PATCH` in any of the four formats, on an object or its `/status`. Apply creates
    /// the object when it is missing.
    #[allow(clippy::too_many_arguments)]
    pub async fn patch(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        kind: PatchKind,
        body: &Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        if kind == PatchKind::Strategic && rt.crd.is_some() {
            return Err(ApiError::unsupported_patch_type());
        }
        if kind == PatchKind::Apply && opts.field_manager.as_deref().is_none_or(str::is_empty) {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml requires fieldManager parameter",
            ));
        }
        // Optimistic retries when another writer commits between our read and our write.
        for _ in 0..16 {
            let live = self.live(rt, ns, name);
            let result = match (kind, live) {
                (PatchKind::Apply, None) => {
                    if sub.is_some() {
                        return Err(ApiError::not_found(rt.gr(), name));
                    }
                    self.apply_create(rt, ns, name, body, opts).await
                }
                (_, None) => return Err(ApiError::not_found(rt.gr(), name)),
                (PatchKind::Apply, Some(live)) => {
                    let current = self.current(rt, live).await?;
                    self.apply_update(rt, ns, name, sub, &current, body, opts).await
                }
                (_, Some(live)) => {
                    let current = self.current(rt, live).await?;
                    let served = convert::to_served(rt, &current.object);
                    let mut patched = apply_patch(rt, &served, kind, body)?;
                    let warnings =
                        builtin::writes::check_patched(rt, kind, body, &mut patched, opts.field_validation)?;
                    if let Some(rv) = body.pointer("/metadata/resourceVersion").and_then(Value::as_str)
                        && rv.parse::<u64>().ok() != Some(object_rv(&current.stored))
                    {
                        return Err(ApiError::stale(rt.gr(), name));
                    }
                    self.check_identity(rt, ns, Some(name), &mut patched)?;
                    let patched = convert::to_stored(rt, patched);
                    let mgr = opts.manager();
                    self.write_over(rt, ns, name, sub, &current, patched, opts, &mgr, true, warnings).await
                }
            };
            match result {
                Err(e) if e.code == 409 && e.reason == "Conflict" && e.causes.is_empty() => continue,
                Err(e) if e.code == 409 && e.reason == "AlreadyExists" && kind == PatchKind::Apply => {
                    continue;
                }
                other => return other,
            }
        }
        Err(ApiError::stale(rt.gr(), name))
    }

    fn apply_config(&self, rt: &ResourceType, ns: &str, name: &str, body: &Value) -> Result<Value, ApiError> {
        let mut config = body.clone();
        if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        self.check_identity(rt, ns, Some(name), &mut config)?;
        builtin::writes::check_apply(rt, &config)?;
        let mut config = convert::to_stored(rt, config);
        Self::normalize_apply(rt, &mut config);
        Ok(config)
    }

    async fn apply_create(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        body: &Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let config = self.apply_config(rt, ns, name, body)?;
        self.check_namespace(rt, ns, name)?;
        let opts = &WriteOpts { from_apply: true, ..opts.clone() };
        let mgr = opts.manager();
        let now = meta::now();
        let scope = if rt.status { ssa::Scope::NoStatus } else { ssa::Scope::All };
        let mut obj =
            ssa::apply(None, &config, &manager(&mgr, rt, None, &now), opts.force, rt.shape.as_ref(), scope)
                .map_err(|e| ssa_error(rt, name, e))?;
        if rt.status
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        Self::normalize(rt, &mut obj);
        let mut warnings = Vec::new();
        obj = self.admit_create(rt, ns, name, obj, opts, &mut warnings).await?;
        Self::as_read_back(rt, &mut obj, opts);
        let meta = meta_mut(&mut obj);
        for f in SYSTEM_FIELDS {
            meta.remove(*f);
        }
        self.stamp_new(rt, name, &mut obj, opts, &now)?;
        self.commit_create(rt, ns, name, obj, opts, warnings).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn apply_update(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        current: &Current,
        body: &Value,
        opts: &WriteOpts,
    ) -> Result<Written, ApiError> {
        let config = self.apply_config(rt, ns, name, body)?;
        let opts = &WriteOpts { from_apply: true, ..opts.clone() };
        let mgr = opts.manager();
        let now = meta::now();
        let new = ssa::apply(
            Some(&current.object),
            &config,
            &manager(&mgr, rt, sub, &now),
            opts.force,
            rt.shape.as_ref(),
            rt_scope(rt, sub),
        )
        .map_err(|e| ssa_error(rt, name, e))?;
        self.write_over(rt, ns, name, sub, current, new, opts, &mgr, false, Vec::new()).await
    }
}

/// Apply a merge, JSON or strategic patch to the served form of an object.
fn apply_patch(rt: &ResourceType, served: &Value, kind: PatchKind, body: &Value) -> Result<Value, ApiError> {
    let mut doc = served.clone();
    match kind {
        PatchKind::Merge => {
            if !body.is_object() {
                return Err(ApiError::bad_request(
                    "json: cannot unmarshal array into Go value of type map[string]interface {}",
                ));
            }
            json_patch::merge(&mut doc, body);
        }
        PatchKind::Json => {
            let ops = body.as_array().ok_or_else(|| {
                ApiError::bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
            })?;
            // A `test` for null passes on a missing path, as in the API server.
            let ops: Vec<Value> = ops
                .iter()
                .filter(|op| {
                    !(op["op"] == "test"
                        && op["value"].is_null()
                        && op["path"].as_str().is_some_and(|p| doc.pointer(p).is_none()))
                })
                .cloned()
                .collect();
            let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).map_err(|e| {
                ApiError::bad_request(format!(
                    "the server rejected our request due to an error in our request: {e}"
                ))
            })?;
            json_patch::patch(&mut doc, &patch).map_err(|e| {
                tracing::debug!(error = %e, "JSON patch failed");
                ApiError::rejected()
            })?;
        }
        PatchKind::Strategic => {
            doc = crate::merge::smp::strategic_merge(&doc, body, rt.shape.as_ref()).map_err(|e| {
                let mut err = ApiError::internal(e.status_message());
                err.code = e.code();
                err.reason = match e.reason() {
                    "" => "InternalError",
                    r => r,
                };
                err
            })?;
        }
        PatchKind::Apply => {}
    }
    Ok(doc)
}

/// A new Job without `manualSelector: true` selects its own Pods by its uid, and its Pod
/// template carries the job-name and controller-uid labels (the Job strategy's
/// `generateSelector` in `pkg/registry/batch/job/strategy.go`; labels the user set stay).
fn generate_job_selector(job: &mut Value) {
    let name = job.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
    let uid = job.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let template = spec.entry("template").or_insert_with(|| json!({}));
    if let Some(meta) = template.as_object_mut().map(|t| t.entry("metadata").or_insert_with(|| json!({})))
        && let Some(labels) = meta.as_object_mut().map(|m| m.entry("labels").or_insert_with(|| json!({})))
        && let Some(labels) = labels.as_object_mut()
    {
        for (key, value) in [
            ("job-name", &name),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("batch.kubernetes.io/controller-uid", &uid),
        ] {
            labels.entry(key).or_insert_with(|| value.clone());
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if let Some(match_labels) =
        selector.as_object_mut().map(|s| s.entry("matchLabels").or_insert_with(|| json!({})))
        && let Some(match_labels) = match_labels.as_object_mut()
    {
        match_labels.entry("batch.kubernetes.io/controller-uid").or_insert(uid);
    }
}
