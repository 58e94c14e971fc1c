//! Which webhooks a request goes to: exempt requests, `namespaceSelector`, `objectSelector`
//! and `rules` (apiserver `webhook/predicates`).

use super::*;

/// Requests for admission configuration objects never go to webhooks.
pub(super) fn is_exempt(attrs: &Attributes) -> bool {
    attrs.group == "admissionregistration.k8s.io"
        && matches!(
            attrs.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

/// Whether a webhook applies to the request (apiserver `generic.Webhook.ShouldCallHook`).
pub(super) fn should_call(
    spec: &Value,
    attrs: &Attributes,
    object: Option<&Value>,
) -> Result<Option<String>, AdmissionError> {
    let ns_match = namespace_matches(spec, attrs, object);
    if matches!(ns_match, Ok(false)) {
        return Ok(None);
    }
    let selector = spec.get("objectSelector").unwrap_or(&Value::Null);
    let obj_match = if is_empty_selector(selector) {
        Ok(true)
    } else {
        [object, attrs.old_object.as_ref()]
            .into_iter()
            .flatten()
            .map(|o| selector_matches(selector, &labels_of(o)))
            .try_fold(false, |any, m| m.map(|m| any || m))
            .map_err(|message| AdmissionError::Internal { message })
    };
    if matches!(obj_match, Ok(false)) {
        return Ok(None);
    }
    let rules: Vec<&Value> = spec.get("rules").and_then(Value::as_array).into_iter().flatten().collect();
    let exact = rules.iter().any(|r| rule_matches(r, attrs, &attrs.version)).then(|| attrs.version.clone());
    // matchPolicy defaults to Equivalent: the earliest rule that matches another version of
    // the resource, in the order of the equivalents.
    let equivalent = || {
        if str_at(spec, "matchPolicy") == "Exact" {
            return None;
        }
        rules.iter().find_map(|r| {
            let mut others = attrs.equivalent_versions.iter().filter(|v| **v != attrs.version);
            others.find(|v| rule_matches(r, attrs, v)).cloned()
        })
    };
    let Some(version) = exact.or_else(equivalent) else { return Ok(None) };
    ns_match?;
    obj_match?;
    Ok(Some(version))
}

pub(super) fn namespace_matches(
    spec: &Value,
    attrs: &Attributes,
    object: Option<&Value>,
) -> Result<bool, AdmissionError> {
    if attrs.namespace.is_empty() && attrs.resource != "namespaces" {
        return Ok(true);
    }
    let selector = spec.get("namespaceSelector").unwrap_or(&Value::Null);
    if is_empty_selector(selector) {
        return Ok(true);
    }
    let own = attrs.resource == "namespaces"
        && attrs.subresource.is_empty()
        && matches!(attrs.operation, Operation::Create | Operation::Update);
    let labels = match (own, object, &attrs.namespace_labels) {
        (true, Some(obj), _) => labels_of(obj),
        (_, _, Some(labels)) => labels.clone(),
        _ => {
            let namespace = if attrs.namespace.is_empty() { &attrs.name } else { &attrs.namespace };
            return Err(AdmissionError::NamespaceNotFound { namespace: namespace.clone() });
        }
    };
    selector_matches(selector, &labels).map_err(|message| AdmissionError::Internal { message })
}

/// Whether one `rules[]` entry matches the request in `version` (apiserver
/// `predicates/rules.Matcher`).
pub(super) fn rule_matches(rule: &Value, attrs: &Attributes, version: &str) -> bool {
    let is_namespace = attrs.group.is_empty() && version == "v1" && attrs.resource == "namespaces";
    let scope = match rule.get("scope").and_then(Value::as_str) {
        None | Some("*") => true,
        Some("Namespaced") => !is_namespace && !attrs.namespace.is_empty(),
        Some("Cluster") => is_namespace || attrs.namespace.is_empty(),
        Some(_) => false,
    };
    let listed = |key: &str, wanted: &str| {
        let items = rule.get(key).and_then(Value::as_array);
        items.into_iter().flatten().filter_map(Value::as_str).any(|i| i == "*" || i == wanted)
    };
    let resources = rule.get("resources").and_then(Value::as_array);
    let resource = resources.into_iter().flatten().filter_map(Value::as_str).any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == attrs.resource) && (sub == "*" || sub == attrs.subresource)
    });
    scope
        && listed("operations", attrs.operation.as_str())
        && listed("apiGroups", &attrs.group)
        && listed("apiVersions", version)
        && resource
}

pub(super) fn is_empty_selector(selector: &Value) -> bool {
    let count = |key: &str| match selector.get(key) {
        Some(Value::Object(map)) => map.len(),
        Some(Value::Array(list)) => list.len(),
        _ => 0,
    };
    count("matchLabels") + count("matchExpressions") == 0
}

/// Evaluates a `metav1.LabelSelector`; an invalid requirement is an error.
pub(super) fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    let selector = crate::kinds::selector::LabelSelector::from_object(selector)?;
    Ok(selector.matches_with(|k| labels.get(k).map(String::as_str)))
}

pub(super) fn labels_of(object: &Value) -> BTreeMap<String, String> {
    let labels = object.pointer("/metadata/labels").and_then(Value::as_object);
    labels.into_iter().flatten().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
}
