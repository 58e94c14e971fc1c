//! ConfigMaps, Secrets and PersistentVolumeClaims: `ValidateConfigMap(Update)`,
//! `ValidateSecret(Update)` with the type-specific keys, and
//! `ValidatePersistentVolumeClaim(Update)` of core/validation/validation.go.

use base64::Engine as _;
use serde_json::Value;

use crate::core::volume::validate_pvc_spec;
use crate::field::{Bad, Cause, Path, forbid, invalid, invalid_str, object, req, set, string};
use crate::names;
use crate::quantity::Quantity;

/// `core.MaxSecretSize`: 1 MiB.
const MAX_SIZE: usize = 1024 * 1024;

fn too_long(field: &str) -> Cause {
    ctop_schema::causes::cause(
        ctop_schema::FIELD_VALUE_TOO_LONG,
        field,
        "Too long".to_owned(),
        "may not be more than 1048576 bytes",
    )
}

/// `ValidateConfigMap`.
pub(crate) fn validate_config_map(cm: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut total = 0;
    let binary = object(cm, "binaryData");
    for (key, value) in object(cm, "data").into_iter().flatten() {
        let p = Path::new("data").key(key);
        out.extend(names::config_map_key(key).iter().map(|m| invalid_str(&p, key, m)));
        if binary.is_some_and(|b| b.contains_key(key)) {
            out.push(invalid_str(&p, key, "duplicate of key present in binaryData"));
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary.into_iter().flatten() {
        let p = Path::new("binaryData").key(key);
        out.extend(names::config_map_key(key).iter().map(|m| invalid_str(&p, key, m)));
        total += value.as_str().map_or(0, |v| decode(v).len());
    }
    if total > MAX_SIZE {
        out.push(too_long(""));
    }
    out
}

/// `ValidateConfigMapUpdate`.
pub(crate) fn validate_config_map_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if old.get("immutable").and_then(Value::as_bool) == Some(true) {
        if new.get("immutable").and_then(Value::as_bool) != Some(true) {
            out.push(forbid(&Path::new("immutable"), "field is immutable when `immutable` is set"));
        }
        for key in ["data", "binaryData"] {
            if empty_as_none(new.get(key)) != empty_as_none(old.get(key)) {
                out.push(forbid(&Path::new(key), "field is immutable when `immutable` is set"));
            }
        }
    }
    out.extend(validate_config_map(new));
    out
}

/// A map field as Go's `reflect.DeepEqual` sees it after decoding (an absent map and a
/// `null` are both nil; an empty object is an empty, non-nil map).
fn empty_as_none(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// `ValidateSecret`: data keys, the 1 MiB total, and what each type requires.
pub(crate) fn validate_secret(secret: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let data = object(secret, "data");
    let data_path = Path::new("data");
    let mut total = 0;
    for (key, value) in data.into_iter().flatten() {
        let p = data_path.key(key);
        out.extend(names::config_map_key(key).iter().map(|m| invalid_str(&p, key, m)));
        total += value.as_str().map_or(0, |v| decode(v).len());
    }
    if total > MAX_SIZE {
        out.push(too_long("data"));
    }
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let bytes = |k: &str| data.and_then(|d| d.get(k)).and_then(Value::as_str).map(decode).unwrap_or_default();
    match string(secret, "type") {
        "kubernetes.io/service-account-token" => {
            let name = secret.pointer("/metadata/annotations/kubernetes.io~1service-account.name");
            if name.and_then(Value::as_str).unwrap_or_default().is_empty() {
                out.push(req(
                    &Path::new("metadata").child("annotations").key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => {
            out.extend(json_key(&data_path, ".dockercfg", has(".dockercfg"), &bytes(".dockercfg")))
        }
        "kubernetes.io/dockerconfigjson" => {
            out.extend(json_key(
                &data_path,
                ".dockerconfigjson",
                has(".dockerconfigjson"),
                &bytes(".dockerconfigjson"),
            ));
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            out.push(req(&data_path.key("username"), ""));
            out.push(req(&data_path.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if bytes("ssh-privatekey").is_empty() => {
            out.push(req(&data_path.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    out.push(req(&data_path.key(key), ""));
                }
            }
        }
        _ => {}
    }
    out
}

/// A dockercfg key: present, and well-formed JSON that decodes into a map. Only the two
/// `json.Unmarshal` errors this can word like Go are reported; other malformed JSON is
/// let through (listed in the crate docs).
fn json_key(data_path: &Path, key: &str, present: bool, bytes: &[u8]) -> Option<Cause> {
    let p = data_path.key(key);
    if !present {
        return Some(req(&p, ""));
    }
    let detail = match serde_json::from_slice::<Value>(bytes) {
        _ if bytes.iter().all(u8::is_ascii_whitespace) => "unexpected end of JSON input".to_owned(),
        Ok(Value::Object(_) | Value::Null) => return None,
        Ok(other) => format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            }
        ),
        Err(_) => return None,
    };
    Some(invalid(p.as_str(), Bad::Str("<secret contents redacted>".to_owned()), &detail))
}

/// `ValidateSecretUpdate`.
pub(crate) fn validate_secret_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let (nt, ot) = (string(new, "type"), string(old, "type"));
    if nt != ot {
        out.push(invalid_str(&Path::new("type"), nt, "field is immutable"));
    }
    if old.get("immutable").and_then(Value::as_bool) == Some(true) {
        if new.get("immutable").and_then(Value::as_bool) != Some(true) {
            out.push(forbid(&Path::new("immutable"), "field is immutable when `immutable` is set"));
        }
        if empty_as_none(new.get("data")) != empty_as_none(old.get("data")) {
            out.push(forbid(&Path::new("data"), "field is immutable when `immutable` is set"));
        }
    }
    out.extend(validate_secret(new));
    out
}

/// `ValidatePersistentVolumeClaim`.
pub(crate) fn validate_pvc(pvc: &Value) -> Vec<Cause> {
    validate_pvc_spec(pvc.get("spec").unwrap_or(&Value::Null), &Path::new("spec"))
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is fixed but for a volumeName set once
/// and the storage request (which may not shrink). The server appends a `cmp.Diff` of the
/// two specs to the Forbidden message; this one ends after the sentence.
pub(crate) fn validate_pvc_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = validate_pvc(new);
    let (ns, os) =
        (new.get("spec").cloned().unwrap_or(Value::Null), old.get("spec").cloned().unwrap_or(Value::Null));
    let mut new_clone = ns.clone();
    let mut old_clone = os.clone();
    if string(&os, "volumeName").is_empty()
        && let (Some(o), Some(n)) = (old_clone.as_object_mut(), ns.get("volumeName"))
    {
        o.insert("volumeName".to_owned(), n.clone());
    }
    // A nil storageClassName may be set once (validateStorageClassUpgradeFromNil).
    if set(&os, "storageClassName").is_none()
        && let (Some(o), Some(n)) = (old_clone.as_object_mut(), set(&ns, "storageClassName"))
    {
        o.insert("storageClassName".to_owned(), n.clone());
    }
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound {
        for spec in [&mut new_clone, &mut old_clone] {
            if let Some(requests) = spec.pointer_mut("/resources/requests").and_then(Value::as_object_mut) {
                requests.remove("storage");
            }
            if let Some(m) = spec.as_object_mut() {
                m.remove("volumeAttributesClassName");
            }
        }
    }
    if new_clone != old_clone {
        out.push(forbid(
            &Path::new("spec"),
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |s: &Value| {
        s.pointer("/resources/requests/storage").and_then(Value::as_str).and_then(Quantity::parse)
    };
    if let (Some(n), Some(o)) = (size(&ns), size(&os))
        && n.cmp_value(&o).is_lt()
    {
        let status =
            old.pointer("/status/capacity/storage").and_then(Value::as_str).and_then(Quantity::parse);
        let p = Path::new("spec").child("resources").child("requests").child("storage");
        // RecoverVolumeExpansionFailure (beta, on in 1.33): shrinking is allowed down to
        // just above the recorded capacity (zero when there is none).
        let above = status.map_or(!n.is_negative() && !n.is_zero(), |cap| n.cmp_value(&cap).is_gt());
        if !above {
            out.push(forbid(&p, "field can not be less than status.capacity"));
        }
    }
    out
}

/// The bytes of a base64 data value (empty when it is not base64: the decoder refused it).
fn decode(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).unwrap_or_default()
}
