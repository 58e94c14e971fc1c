//! CustomResourceDefinitions as objects: what the API server checks and sets when one is
//! written (names, versions, the structural schema; the `Established` and `NamesAccepted`
//! conditions).

use base64::Engine as _;
use ctop_schema as schema;
use serde_json::{Value, json};

use super::{Api, status_cause};
use crate::error::StatusCause;
use crate::kinds::meta::{self, deleting};

impl Api {
    pub(super) fn crd_terminating(&self, crd_name: &str) -> bool {
        self.store
            .get("apiextensions.k8s.io/customresourcedefinitions", &(String::new(), crd_name.to_owned()))
            .is_some_and(|c| deleting(&c))
    }
}

/// Fill a CRD's status: accepted names, stored versions, Established.
pub(super) fn establish_crd(crd: &mut Value) {
    let mut names = crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({}));
    let kind = names["kind"].as_str().unwrap_or_default().to_owned();
    if names.get("singular").is_none() {
        names["singular"] = json!(kind.to_lowercase());
    }
    if names.get("listKind").is_none() {
        names["listKind"] = json!(format!("{kind}List"));
    }
    crd["spec"]["names"] = names.clone();
    let storage: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .map(|v| v["name"].clone())
        .collect();
    let mut stored: Vec<Value> =
        crd.pointer("/status/storedVersions").and_then(Value::as_array).cloned().unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let previous: Vec<Value> =
        crd.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let since = |t: &str| {
        previous
            .iter()
            .find(|c| c["type"] == t && c["status"] == "True")
            .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_owned))
            .unwrap_or_else(meta::now)
    };
    let terminating = deleting(crd);
    let mut conditions = vec![
        json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")}),
        json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": since("Established")}),
    ];
    if terminating {
        conditions.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress", "lastTransitionTime": since("Terminating")}));
    }
    crd["status"] = json!({"acceptedNames": names, "storedVersions": stored, "conditions": conditions});
}

/// What the `apiextensions.k8s.io/v1` decoder defaults in every CRD it reads
/// (`pkg/apis/apiextensions/v1/defaults.go`): `spec.conversion` is `{strategy: None}` when
/// absent, a conversion webhook's service `port` is 443, and empty
/// `status.storedVersions` get the storage version. (Names are defaulted with the status, in
/// [`establish_crd`].)
pub(super) fn default_crd(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let conversion = spec.entry("conversion").or_insert_with(|| json!({"strategy": "None"}));
    if let Some(service) =
        conversion.pointer_mut("/webhook/clientConfig/service").and_then(Value::as_object_mut)
    {
        service.entry("port").or_insert(json!(443));
    }
    let storage = storage_version(crd);
    if let (Some(storage), Some(status)) = (storage, crd.get_mut("status").and_then(Value::as_object_mut))
        && status.get("storedVersions").and_then(Value::as_array).is_none_or(Vec::is_empty)
    {
        status.insert("storedVersions".into(), json!([storage]));
    }
}

/// The name of the version marked `storage: true` (the first, should there be several).
pub(crate) fn storage_version(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str().map(str::to_owned))
}

/// The checks the API server makes on a CRD body; `old` is the stored CRD on an update.
pub(super) fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let cause = |reason: &str, field: &str, message: String| StatusCause {
        reason: reason.into(),
        message,
        field: field.into(),
    };
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec.pointer("/names/plural").and_then(Value::as_str).unwrap_or_default();
    let name = crd.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    if group.is_empty() {
        causes.push(cause("FieldValueRequired", "spec.group", "Required value".into()));
    } else if !group.contains('.') {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.group",
            format!("Invalid value: {}: should be a domain with at least one dot", json!(group)),
        ));
    }
    if plural.is_empty() {
        causes.push(cause("FieldValueRequired", "spec.names.plural", "Required value".into()));
    }
    if spec.pointer("/names/kind").and_then(Value::as_str).is_none_or(str::is_empty) {
        causes.push(cause("FieldValueRequired", "spec.names.kind", "Required value".into()));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(cause(
            "FieldValueInvalid",
            "metadata.name",
            format!("Invalid value: {}: must be spec.names.plural+\".\"+spec.group", json!(name)),
        ));
    }
    match spec["scope"].as_str() {
        Some("Namespaced" | "Cluster") => {}
        Some(other) => causes.push(cause(
            "FieldValueNotSupported",
            "spec.scope",
            format!("Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"", json!(other)),
        )),
        None => causes.push(cause("FieldValueRequired", "spec.scope", "Required value".into())),
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.versions",
            "Invalid value: null: must have exactly one version marked as storage version".into(),
        ));
    } else if versions.iter().filter(|v| v["storage"].as_bool() == Some(true)).count() != 1 {
        causes.push(cause(
            "FieldValueInvalid",
            "spec.versions",
            format!(
                "Invalid value: {}: must have exactly one version marked as storage version",
                json!(versions)
            ),
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        causes.extend(deprecation_warning_causes(v, i));
        let base = format!("spec.versions[{i}].schema.openAPIV3Schema");
        match v.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => {
                causes.push(cause("FieldValueRequired", &base, "Required value: schemas are required".into()))
            }
            Some(s) => causes.extend(schema::check_structural(s, &base).into_iter().map(status_cause)),
        }
    }
    causes.extend(conversion_causes(spec, old.map(|o| &o["spec"]), old.is_some_and(established)));
    causes
}

fn established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
}

/// A `FieldValueInvalid` cause with the value as Go's `field.Invalid` prints it.
fn invalid(field: &str, value: &str, detail: &str) -> StatusCause {
    StatusCause {
        reason: "FieldValueInvalid".into(),
        message: format!("Invalid value: {value}: {detail}"),
        field: field.into(),
    }
}

fn required(field: &str, detail: &str) -> StatusCause {
    let message =
        if detail.is_empty() { "Required value".to_owned() } else { format!("Required value: {detail}") };
    StatusCause { reason: "FieldValueRequired".into(), message, field: field.into() }
}

fn forbidden(field: &str, detail: &str) -> StatusCause {
    StatusCause {
        reason: "FieldValueForbidden".into(),
        message: format!("Forbidden: {detail}"),
        field: field.into(),
    }
}

/// A string as Go's `%q` prints it.
fn quoted(s: &str) -> String {
    schema::go::quote(s)
}

/// A `[]string` as Go's `%#v` prints it: `[]string{"v1", "v2"}`.
fn go_strings(items: &[&str]) -> String {
    format!("[]string{{{}}}", items.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(", "))
}

/// A version's `deprecationWarning` (validation.go, `validateDeprecationWarning`).
fn deprecation_warning_causes(version: &Value, i: usize) -> Vec<StatusCause> {
    let Some(warning) = version.get("deprecationWarning").and_then(Value::as_str) else { return Vec::new() };
    let field = format!("spec.versions[{i}].deprecationWarning");
    let value = quoted(warning);
    if version["deprecated"].as_bool() != Some(true) {
        return vec![invalid(&field, &value, "can only be set for deprecated versions")];
    }
    let mut details = Vec::new();
    if warning.len() > 256 {
        details.push("must be <= 256 characters long".to_owned());
    }
    if warning.is_empty() {
        details.push("must not be an empty string".to_owned());
    }
    // Go ranges over a string by byte offset: the index is the character's first byte. A
    // control character is not printable either, so the first check catches it.
    if let Some((at, _)) = warning.char_indices().find(|(_, c)| !is_printable(*c)) {
        details.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {at}"
        ));
    }
    details.iter().map(|d| invalid(&field, &value, d)).collect()
}

/// Go's `unicode.IsPrint`, as far as `ctop_schema::go::quote` (Go's `strconv.Quote`,
/// which escapes exactly the characters that are not printable) knows it.
fn is_printable(c: char) -> bool {
    matches!(c, '"' | '\\') || schema::go::quote(c.encode_utf8(&mut [0; 4])).chars().count() == 3
}

/// `spec.conversion` as the API server checks it (validation.go,
/// `validateCustomResourceDefinitionSpec` and `validateCustomResourceConversion`). Its
/// messages name the fields of the internal type, which holds `webhookClientConfig` and
/// `conversionReviewVersions` right under `conversion` (v1's `conversion.webhook.*`), as the
/// real server's do. On an update (`old` spec given) a list of review versions needs a known
/// one only if the old list had one (or none), and the `caBundle` is checked only when the
/// old CRD is established and its own bundle was valid or absent.
fn conversion_causes(spec: &Value, old: Option<&Value>, old_established: bool) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let Some(conversion) = spec.get("conversion").filter(|c| c.is_object()) else { return causes };
    let strategy = conversion["strategy"].as_str().unwrap_or_default();
    let base = "spec.conversion";
    if strategy != "None" && spec["preserveUnknownFields"].as_bool() == Some(true) {
        causes.push(invalid(
            &format!("{base}.strategy"),
            &quoted(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match strategy {
        "" => causes.push(required(&format!("{base}.strategy"), "")),
        "None" | "Webhook" => {}
        other => causes.push(StatusCause {
            reason: "FieldValueNotSupported".into(),
            message: format!("Unsupported value: {}: supported values: \"None\", \"Webhook\"", quoted(other)),
            field: format!("{base}.strategy"),
        }),
    }
    let client_config = conversion.pointer("/webhook/clientConfig").filter(|c| !c.is_null());
    let review_versions: Vec<&str> = conversion
        .pointer("/webhook/conversionReviewVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let cc_field = format!("{base}.webhookClientConfig");
    if strategy != "Webhook" {
        if client_config.is_some() {
            causes.push(forbidden(&cc_field, "should not be set when strategy is not set to Webhook"));
        }
        if !review_versions.is_empty() {
            causes.push(forbidden(
                &format!("{base}.conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return causes;
    }
    match client_config {
        None => causes.push(required(&cc_field, "required when strategy is set to Webhook")),
        Some(cc) => {
            match (cc.get("url").and_then(Value::as_str), cc.get("service").filter(|s| !s.is_null())) {
                (Some(url), None) => causes.extend(webhook_url_causes(&format!("{cc_field}.url"), url)),
                (None, Some(service)) => {
                    causes.extend(webhook_service_causes(&format!("{cc_field}.service"), service));
                }
                _ => causes.push(required(&cc_field, "exactly one of url or service is required")),
            }
            let bundle = cc["caBundle"].as_str().unwrap_or_default();
            let bundle = base64::engine::general_purpose::STANDARD.decode(bundle).unwrap_or_default();
            let old_bundle = old
                .and_then(|o| o.pointer("/conversion/webhook/clientConfig/caBundle"))
                .and_then(Value::as_str)
                .map(|b| base64::engine::general_purpose::STANDARD.decode(b).unwrap_or_default())
                .unwrap_or_default();
            let allow_invalid = old.is_none()
                || !old_established
                || (!old_bundle.is_empty() && crate::api::webhook::check_ca_bundle(&old_bundle).is_err());
            if !bundle.is_empty()
                && !allow_invalid
                && let Err(e) = crate::api::webhook::check_ca_bundle(&bundle)
            {
                causes.push(invalid(&format!("{cc_field}.caBundle"), &go_bytes(&bundle), &e));
            }
        }
    }
    let field = format!("{base}.conversionReviewVersions");
    if review_versions.is_empty() {
        causes.push(required(&field, ""));
        return causes;
    }
    let known = |v: &&str| matches!(*v, "v1" | "v1beta1");
    let mut seen = std::collections::HashSet::new();
    for (i, v) in review_versions.iter().enumerate() {
        let at = format!("{field}[{i}]");
        if !seen.insert(*v) {
            causes.push(invalid(&at, &quoted(v), "duplicate version"));
            continue;
        }
        for e in meta::dns1035_label_errors(v) {
            causes.push(invalid(&at, &quoted(v), &e));
        }
    }
    let old_versions: Vec<&str> = old
        .and_then(|o| o.pointer("/conversion/webhook/conversionReviewVersions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let require_known = old_versions.is_empty() || old_versions.iter().any(known);
    if require_known && !review_versions.iter().any(known) {
        causes.push(invalid(
            &field,
            &go_strings(&review_versions),
            "must include at least one of v1, v1beta1",
        ));
    }
    causes
}

/// A `[]byte` as Go's `%#v` prints it: `[]byte{0x6e, 0x6f}`.
fn go_bytes(bytes: &[u8]) -> String {
    format!("[]byte{{{}}}", bytes.iter().map(|b| format!("{b:#x}")).collect::<Vec<_>>().join(", "))
}

/// `ValidateWebhookURL` with `forceHttps` (k8s.io/apiserver `pkg/util/webhook/validation.go`),
/// over a URL split as Go's `url.Parse` splits it.
fn webhook_url_causes(field: &str, url: &str) -> Vec<StatusCause> {
    const FORM: &str = "; desired format: https://host[/path]";
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once("://") {
        Some((scheme, rest)) if !scheme.is_empty() && !scheme.contains('/') => (scheme, rest),
        _ => ("", ""),
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    let mut causes = Vec::new();
    if scheme != "https" {
        causes.push(invalid(
            field,
            &quoted(scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        causes.push(invalid(field, &quoted(host), &format!("host must be specified{FORM}")));
    }
    if let Some(user) = user {
        causes.push(invalid(field, &quoted(user), "user information is not permitted in the URL"));
    }
    if !fragment.is_empty() {
        causes.push(invalid(field, &quoted(fragment), "fragments are not permitted in the URL"));
    }
    if !query.is_empty() {
        causes.push(invalid(field, &quoted(query), "query parameters are not permitted in the URL"));
    }
    causes
}

/// `ValidateWebhookService` (k8s.io/apiserver `pkg/util/webhook/validation.go`) as
/// apiextensions calls it: with the service's name and namespace in each other's place
/// (`ValidateWebhookService(path, cc.Service.Name, cc.Service.Namespace, ...)` against the
/// signature `(fldPath, namespace, name, ...)`), so a missing name is reported on
/// `service.namespace` and a missing namespace on `service.name`, as on a real cluster.
fn webhook_service_causes(field: &str, service: &Value) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    if service["namespace"].as_str().is_none_or(str::is_empty) {
        causes.push(required(&format!("{field}.name"), ""));
    }
    if service["name"].as_str().is_none_or(str::is_empty) {
        causes.push(required(&format!("{field}.namespace"), ""));
    }
    let port = service["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        causes.push(invalid(
            &format!("{field}.port"),
            &port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = service.get("path").and_then(Value::as_str) else { return causes };
    let path_field = format!("{field}.path");
    if path.is_empty() || path == "/" {
        return causes;
    }
    if path == "//" {
        causes.push(invalid(&path_field, &quoted(path), "segment[0] may not be empty"));
        return causes;
    }
    if !path.starts_with('/') {
        causes.push(invalid(&path_field, &quoted(path), "must start with a '/'"));
    }
    let steps = path.get(1..).unwrap_or_default();
    let steps = steps.strip_suffix('/').unwrap_or(steps);
    for (i, step) in steps.split('/').enumerate() {
        if step.is_empty() {
            causes.push(invalid(&path_field, &quoted(path), &format!("segment[{i}] may not be empty")));
            continue;
        }
        for e in meta::dns1123_subdomain_errors(step) {
            causes.push(invalid(&path_field, &quoted(path), &format!("segment[{i}]: {e}")));
        }
    }
    causes
}

/// `ValidateCustomResourceDefinitionStoredVersions` (validation.go): at least one stored
/// version, the storage version among them, and each of them still in `spec.versions`. The
/// API server runs it on creates (`creating`: the strategy has just set the stored versions
/// to the storage version alone) and on updates of the CRD itself, not on `/status` writes.
pub(super) fn stored_versions_causes(crd: &Value, creating: bool) -> Vec<StatusCause> {
    let field = "status.storedVersions";
    let storage = storage_version(crd);
    let stored: Vec<&str> = if creating {
        storage.as_deref().into_iter().collect()
    } else {
        crd.pointer("/status/storedVersions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    };
    if stored.is_empty() {
        // The create strategy starts from an empty status: a nil list.
        let value = if creating { "[]string(nil)".to_owned() } else { go_strings(&stored) };
        return vec![invalid(field, &value, "must have at least one stored version")];
    }
    let mut causes = Vec::new();
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut missing: Vec<(usize, &str)> = Vec::new();
    // The last index of each stored version, as Go's map from version to index keeps it.
    for (i, v) in stored.iter().enumerate() {
        missing.retain(|(_, m)| m != v);
        missing.push((i, v));
    }
    for v in &versions {
        let name = v["name"].as_str().unwrap_or_default();
        let listed = missing.iter().any(|(_, m)| *m == name);
        if v["storage"].as_bool() == Some(true) && !listed {
            causes.push(invalid(
                field,
                &go_strings(&stored),
                &format!("must have the storage version {name}"),
            ));
        }
        missing.retain(|(_, m)| *m != name);
    }
    // Go ranges over that map in random order; kubesim reports by index.
    missing.sort_unstable();
    for (i, v) in missing {
        causes.push(invalid(
            &format!("{field}[{i}]"),
            &quoted(v),
            &format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            ),
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(conversion: Value) -> Value {
        json!({
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "kind": "CronTab"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                ],
                "conversion": conversion,
            }
        })
    }

    fn messages(causes: &[StatusCause]) -> Vec<String> {
        causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect()
    }

    fn check(conversion: Value) -> Vec<String> {
        messages(&validate_crd(&crd(conversion), None))
    }

    #[test]
    fn a_webhook_strategy_needs_a_client_config_and_known_review_versions() {
        assert_eq!(check(json!({"strategy": "None"})), Vec::<String>::new());
        let cc = json!({"url": "https://conv.example.com/convert"});
        assert_eq!(
            check(
                json!({"strategy": "Webhook", "webhook": {"clientConfig": cc, "conversionReviewVersions": ["v1"]}})
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            check(json!({"strategy": "Webhook"})),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        assert_eq!(
            check(
                json!({"strategy": "Webhook", "webhook": {"clientConfig": cc, "conversionReviewVersions": ["v2", "v2", "V3"]}})
            ),
            [
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                format!(
                    "spec.conversion.conversionReviewVersions[2]: Invalid value: \"V3\": {}",
                    meta::dns1035_label_errors("V3")[0]
                )
                .as_str(),
                "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\", \"v2\", \"V3\"}: must include at least one of v1, v1beta1",
            ]
        );
        assert_eq!(
            check(json!({"strategy": "Other"})),
            [
                "spec.conversion.strategy: Unsupported value: \"Other\": supported values: \"None\", \"Webhook\""
            ]
        );
        assert_eq!(
            check(
                json!({"strategy": "None", "webhook": {"clientConfig": cc, "conversionReviewVersions": ["v1"]}})
            ),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
            ]
        );
        let mut preserving = crd(
            json!({"strategy": "Webhook", "webhook": {"clientConfig": cc, "conversionReviewVersions": ["v1"]}}),
        );
        preserving["spec"]["preserveUnknownFields"] = json!(true);
        assert_eq!(
            messages(&validate_crd(&preserving, None)),
            [
                "spec.conversion.strategy: Invalid value: \"Webhook\": must be None if spec.preserveUnknownFields is true"
            ]
        );
    }

    #[test]
    fn urls_and_services_follow_the_webhook_rules() {
        let with = |cc: Value| {
            check(
                json!({"strategy": "Webhook", "webhook": {"clientConfig": cc, "conversionReviewVersions": ["v1"]}}),
            )
        };
        let form = "; desired format: https://host[/path]";
        assert_eq!(
            with(json!({"url": "http://u@conv.example.com/x?a=b#f"})),
            [
                format!("spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme{form}"),
                "spec.conversion.webhookClientConfig.url: Invalid value: \"u\": user information is not permitted in the URL".to_owned(),
                "spec.conversion.webhookClientConfig.url: Invalid value: \"f\": fragments are not permitted in the URL".to_owned(),
                "spec.conversion.webhookClientConfig.url: Invalid value: \"a=b\": query parameters are not permitted in the URL".to_owned(),
            ]
        );
        assert_eq!(
            with(json!({"url": "https:///x"})),
            [format!(
                "spec.conversion.webhookClientConfig.url: Invalid value: \"\": host must be specified{form}"
            )]
        );
        assert_eq!(
            with(json!({})),
            [
                "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"
            ]
        );
        // apiextensions passes name and namespace in each other's place.
        assert_eq!(
            with(json!({"service": {"name": "conv", "port": 0, "path": "/a//B"}})),
            [
                "spec.conversion.webhookClientConfig.service.name: Required value".to_owned(),
                "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive".to_owned(),
                "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B\": segment[1] may not be empty".to_owned(),
                format!("spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B\": segment[2]: {}", meta::dns1123_subdomain_errors("B")[0]),
            ]
        );
        assert_eq!(
            with(json!({"service": {"namespace": "ns", "port": 443}})),
            ["spec.conversion.webhookClientConfig.service.namespace: Required value"]
        );
    }

    #[test]
    fn a_ca_bundle_is_checked_on_updates_of_an_established_crd() {
        let bad = base64::engine::general_purpose::STANDARD.encode("no");
        let conversion = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://c.example.com", "caBundle": bad}, "conversionReviewVersions": ["v1"]}});
        let new = crd(conversion);
        assert!(validate_crd(&new, None).is_empty(), "a new CRD may carry any caBundle");
        let mut old = crd(json!({"strategy": "None"}));
        establish_crd(&mut old);
        assert_eq!(
            messages(&validate_crd(&new, Some(&old))),
            [
                "spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0x6e, 0x6f}: unable to load root certificates: unable to parse bytes as PEM block"
            ]
        );
    }

    #[test]
    fn deprecation_warnings_need_a_deprecated_version() {
        let mut c = crd(json!({"strategy": "None"}));
        c["spec"]["versions"][0]["deprecationWarning"] = json!("old");
        c["spec"]["versions"][1]["deprecated"] = json!(true);
        c["spec"]["versions"][1]["deprecationWarning"] = json!("bad\u{7}bell");
        assert_eq!(
            messages(&validate_crd(&c, None)),
            [
                "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions",
                "spec.versions[1].deprecationWarning: Invalid value: \"bad\\abell\": must only contain printable UTF-8 characters; non-printable character found at index 3",
            ]
        );
    }

    #[test]
    fn stored_versions_must_stay_in_spec_versions() {
        let mut c = crd(json!({"strategy": "None"}));
        establish_crd(&mut c);
        assert!(stored_versions_causes(&c, false).is_empty());
        c["status"]["storedVersions"] = json!(["v0", "v1", "v9"]);
        let missing = |v: &str, i: usize| {
            format!(
                "status.storedVersions[{i}]: Invalid value: \"{v}\": missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            )
        };
        assert_eq!(messages(&stored_versions_causes(&c, false)), [missing("v0", 0), missing("v9", 2)]);
        c["status"]["storedVersions"] = json!(["v2"]);
        assert_eq!(
            messages(&stored_versions_causes(&c, false)),
            ["status.storedVersions: Invalid value: []string{\"v2\"}: must have the storage version v1"]
        );
        c["spec"]["versions"][0]["storage"] = json!(false);
        assert_eq!(
            messages(&stored_versions_causes(&c, true)),
            ["status.storedVersions: Invalid value: []string(nil): must have at least one stored version"]
        );
    }

    #[test]
    fn defaults_of_the_v1_decoder() {
        let mut c = crd(Value::Null);
        c["spec"].as_object_mut().map(|s| s.remove("conversion"));
        c["status"] = json!({"storedVersions": []});
        default_crd(&mut c);
        assert_eq!(c["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
        let mut c = crd(
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": "n", "name": "s"}}}}),
        );
        default_crd(&mut c);
        assert_eq!(c.pointer("/spec/conversion/webhook/clientConfig/service/port"), Some(&json!(443)));
    }
}
