//! Security contexts (`ValidateSecurityContext` of a container, the seccomp part of
//! `validatePodSpecSecurityContext`) in core/validation/validation.go: user and group ids,
//! `seccompProfile` (`validateSeccompProfileField`), and `allowPrivilegeEscalation: false`
//! against `privileged: true` or an added `CAP_SYS_ADMIN`.
//!
//! Those two conflicts print the whole `*core.SecurityContext` with `%#v` (pointer
//! addresses included); the causes here keep field and reason and show the three fields
//! that conflict. `runAsNonRoot` with `runAsUser: 0` is the kubelet's check, not the API
//! server's, and capability names are not validated there, so neither is here. Left out:
//! `privileged` against `--allow-privileged`, procMount, AppArmor and Windows options.

use serde_json::Value;

use crate::core::container::local_descending_path;
use crate::field::{
    Bad, Cause, Path, int, invalid, invalid_int, listed, req, set, str_at, string, unsupported,
};
use crate::names;

/// A container's `ValidateSecurityContext`.
pub(crate) fn validate_container_security_context(sc: &Value, p: &Path) -> Vec<Cause> {
    let mut out = ids(sc, &["runAsUser", "runAsGroup"], p);
    if let Some(profile) = set(sc, "seccompProfile") {
        out.extend(validate_seccomp_profile(profile, &p.child("seccompProfile")));
    }
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        let shown = || {
            Bad::Raw(format!(
                "core.SecurityContext{{Privileged:{}, AllowPrivilegeEscalation:false, Capabilities:{}}}",
                sc.get("privileged").and_then(Value::as_bool).map_or("nil".to_owned(), |b| b.to_string()),
                crate::field::go_string_list(sc.pointer("/capabilities/add")),
            ))
        };
        if sc.get("privileged").and_then(Value::as_bool) == Some(true) {
            out.push(invalid(
                p.as_str(),
                shown(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let added = sc.pointer("/capabilities/add").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        for _ in added.iter().filter(|c| c.as_str() == Some("CAP_SYS_ADMIN")) {
            out.push(invalid(
                p.as_str(),
                shown(),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    out
}

/// The id checks (`IsValidUserID`, `IsValidGroupID`) of the given keys.
pub(crate) fn ids(sc: &Value, keys: &[&str], p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    for key in keys {
        if let Some(id) = int(sc, key) {
            out.extend(names::unix_id(id).iter().map(|m| invalid_int(&p.child(key), id, m)));
        }
    }
    out
}

/// `validateSeccompProfileField`.
pub(crate) fn validate_seccomp_profile(sp: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let ty = string(sp, "type");
    match ty {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => out.push(req(&p.child("type"), "type is required when seccompProfile is set")),
        other => out.push(unsupported(
            &p.child("type"),
            other,
            &listed(&["Localhost", "RuntimeDefault", "Unconfined"]),
        )),
    }
    let local = str_at(sp, "localhostProfile");
    if ty == "Localhost" {
        match local {
            None => out.push(req(&p.child("localhostProfile"), "must be set when seccomp type is Localhost")),
            Some(path) => out.extend(local_descending_path(path, &p.child("localhostProfile"))),
        }
    } else if local.is_some() {
        out.push(invalid(
            p.child("localhostProfile").as_str(),
            Bad::Raw(format!(
                "core.SeccompProfile{{Type:{}, LocalhostProfile:{}}}",
                ctop_schema::go::quote(ty),
                ctop_schema::go::quote(local.unwrap_or_default())
            )),
            "can only be set when seccomp type is Localhost",
        ));
    }
    out
}
