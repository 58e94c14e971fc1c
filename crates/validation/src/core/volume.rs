//! Pod volumes (`ValidateVolumes`, `validateVolumeSource` and the sources operators use:
//! emptyDir, hostPath, secret, configMap, persistentVolumeClaim, downwardAPI, projected,
//! nfs, csi, ephemeral) and the PersistentVolumeClaim spec they share with PVCs
//! (`ValidatePersistentVolumeClaimSpec`), from core/validation/validation.go. The other
//! in-tree sources count as a source; their own fields are not checked.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::core::container::{local_descending_path, no_backsteps, validate_object_field_selector};
use crate::enums;
use crate::field::{
    Bad, Cause, Path, forbid, int, invalid, invalid_int, invalid_str, list, req, set, sorted, string,
    unsupported,
};
use crate::names;
use crate::quantity::Quantity;

/// The JSON key of each VolumeSource member in the order `validateVolumeSource` checks
/// them, with the path it names in "may not specify more than 1 volume type" (two are
/// misspelt there: `cephFS`, `downwarAPI`).
const SOURCES: [(&str, &str); 30] = [
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

const FILE_MODE_MSG: &str = "must be a number between 0 and 0777 (octal), both inclusive";
const VOLUME_FIELD_PATHS: [&str; 5] =
    ["metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid"];

/// `ValidateVolumes`: the causes, and the names of the volumes that passed (what
/// volumeMounts may refer to).
pub(crate) fn validate_volumes(spec: &Value, p: &Path) -> (Vec<Cause>, BTreeSet<String>) {
    let mut out = Vec::new();
    let mut valid = BTreeSet::new();
    for (i, vol) in list(spec, "volumes").iter().enumerate() {
        let ip = p.index(i);
        let name = string(vol, "name");
        let mut errs = validate_source(vol, &ip);
        if name.is_empty() {
            errs.push(req(&ip.child("name"), ""));
        } else {
            errs.extend(names::dns1123_label(name).iter().map(|m| invalid_str(&ip.child("name"), name, m)));
        }
        if valid.contains(name) {
            errs.push(crate::field::duplicate(ip.child("name").as_str(), Bad::Str(name.to_owned())));
        }
        if errs.is_empty() {
            valid.insert(name.to_owned());
        } else {
            out.extend(errs);
        }
    }
    (out, valid)
}

fn validate_source(vol: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut count = 0;
    for (key, named) in SOURCES {
        let Some(src) = set(vol, key) else { continue };
        if count > 0 {
            out.push(forbid(&p.child(named), "may not specify more than 1 volume type"));
            continue;
        }
        count += 1;
        let sp = p.child(key);
        match key {
            "emptyDir" => {
                if let Some(q) = src.get("sizeLimit").and_then(Value::as_str).and_then(Quantity::parse)
                    && q.is_negative()
                {
                    out.push(forbid(
                        &sp.child("sizeLimit"),
                        "SizeLimit field must be a valid resource quantity",
                    ));
                }
            }
            "hostPath" => {
                let path = string(src, "path");
                if path.is_empty() {
                    out.push(req(&sp.child("path"), ""));
                } else {
                    out.extend(no_backsteps(path, &sp.child("path")));
                    if let Some(t) = src.get("type").and_then(Value::as_str)
                        && !enums::HOST_PATH_TYPE.contains(&t)
                    {
                        out.push(unsupported(&sp.child("type"), t, &sorted(enums::HOST_PATH_TYPE)));
                    }
                }
            }
            "secret" | "configMap" => {
                let name_key = if key == "secret" { "secretName" } else { "name" };
                if string(src, name_key).is_empty() {
                    out.push(req(&sp.child(name_key), ""));
                }
                out.extend(file_mode(src, "defaultMode", &sp));
                for (j, item) in list(src, "items").iter().enumerate() {
                    out.extend(key_to_path(item, &sp.child("items").index(j)));
                }
            }
            "persistentVolumeClaim" if string(src, "claimName").is_empty() => {
                out.push(req(&sp.child("claimName"), ""));
            }
            "nfs" => {
                if string(src, "server").is_empty() {
                    out.push(req(&sp.child("server"), ""));
                }
                let path = string(src, "path");
                if path.is_empty() {
                    out.push(req(&sp.child("path"), ""));
                }
                if !path.starts_with('/') {
                    out.push(invalid_str(&sp.child("path"), path, "must be an absolute path"));
                }
            }
            "downwardAPI" => {
                out.extend(file_mode(src, "defaultMode", &sp));
                for item in list(src, "items") {
                    out.extend(downward_api_file(item, &sp));
                }
            }
            "projected" => out.extend(projected(src, &sp)),
            "csi" => out.extend(csi_driver(string(src, "driver"), &sp.child("driver"))),
            "ephemeral" => match set(src, "volumeClaimTemplate") {
                None => out.push(req(&sp.child("volumeClaimTemplate"), "")),
                Some(t) => {
                    let tp = sp.child("volumeClaimTemplate");
                    out.extend(crate::meta::validate_template_object_meta(
                        t.get("metadata").unwrap_or(&Value::Null),
                        &tp.child("metadata"),
                    ));
                    out.extend(validate_pvc_spec(t.get("spec").unwrap_or(&Value::Null), &tp.child("spec")));
                }
            },
            _ => {}
        }
    }
    if count == 0 {
        out.push(req(p, "must specify a volume type"));
    }
    out
}

fn file_mode(src: &Value, key: &str, p: &Path) -> Option<Cause> {
    let mode = int(src, key)?;
    (!(0..=0o777).contains(&mode)).then(|| invalid_int(&p.child(key), mode, FILE_MODE_MSG))
}

/// `validateKeyToPath`.
fn key_to_path(kp: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if string(kp, "key").is_empty() {
        out.push(req(&p.child("key"), ""));
    }
    let path = string(kp, "path");
    if path.is_empty() {
        out.push(req(&p.child("path"), ""));
    }
    out.extend(local_non_reserved_path(path, &p.child("path")));
    out.extend(file_mode(kp, "mode", p));
    out
}

/// `ValidateLocalNonReservedPath`.
fn local_non_reserved_path(path: &str, p: &Path) -> Vec<Cause> {
    let mut out = local_descending_path(path, p);
    if path.starts_with("..") && !path.starts_with("../") {
        out.push(invalid_str(p, path, "must not start with '..'"));
    }
    out
}

/// `validateDownwardAPIVolumeFile` (errors at the volume's path, as the server words them).
fn downward_api_file(file: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let path = string(file, "path");
    if path.is_empty() {
        out.push(req(&p.child("path"), ""));
    }
    out.extend(local_non_reserved_path(path, &p.child("path")));
    match (set(file, "fieldRef"), set(file, "resourceFieldRef")) {
        (Some(fr), rr) => {
            out.extend(validate_object_field_selector(fr, &VOLUME_FIELD_PATHS, &p.child("fieldRef")));
            if rr.is_some() {
                out.push(invalid_str(
                    p,
                    "resource",
                    "fieldRef and resourceFieldRef can not be specified simultaneously",
                ));
            }
        }
        (None, Some(rr)) => {
            if string(rr, "containerName").is_empty() {
                out.push(req(&p.child("resourceFieldRef").child("containerName"), ""));
            }
        }
        (None, None) => out.push(req(p, "one of fieldRef and resourceFieldRef is required")),
    }
    out.extend(file_mode(file, "mode", p));
    out
}

/// `validateProjectedVolumeSource` / `validateProjectionSources` (secret, configMap,
/// downwardAPI and serviceAccountToken sources).
fn projected(src: &Value, p: &Path) -> Vec<Cause> {
    let mut out: Vec<Cause> = file_mode(src, "defaultMode", p).into_iter().collect();
    let mut paths = BTreeSet::new();
    for (i, source) in list(src, "sources").iter().enumerate() {
        let sp = p.child("sources").index(i);
        let mut kinds = 0;
        for kind in ["secret", "configMap"] {
            let Some(s) = set(source, kind) else { continue };
            kinds += 1;
            let kp = sp.child(kind);
            let name = string(s, "name");
            if name.is_empty() {
                out.push(req(&kp.child("name"), ""));
            }
            for (j, item) in list(s, "items").iter().enumerate() {
                out.extend(key_to_path(item, &kp.child("items").index(j)));
                let path = string(item, "path");
                if !path.is_empty() && !paths.insert(path.to_owned()) {
                    out.push(invalid_str(p, name, "conflicting duplicate paths"));
                }
            }
        }
        if let Some(d) = set(source, "downwardAPI") {
            kinds += 1;
            for item in list(d, "items") {
                out.extend(downward_api_file(item, &sp.child("downwardAPI")));
                let path = string(item, "path");
                if !path.is_empty() && !paths.insert(path.to_owned()) {
                    out.push(invalid_str(p, path, "conflicting duplicate paths"));
                }
            }
        }
        if let Some(t) = set(source, "serviceAccountToken") {
            kinds += 1;
            let tp = sp.child("serviceAccountToken");
            // The server defaults expirationSeconds to 3600.
            let expiration = int(t, "expirationSeconds").unwrap_or(3600);
            if expiration < 600 {
                out.push(invalid_int(
                    &tp.child("expirationSeconds"),
                    expiration,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if expiration > 1 << 32 {
                out.push(invalid_int(
                    &tp.child("expirationSeconds"),
                    expiration,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            let path = string(t, "path");
            if path.is_empty() {
                out.push(req(&p.child("path"), ""));
            } else {
                out.extend(local_non_reserved_path(path, &p.child("path")));
            }
        }
        if set(source, "clusterTrustBundle").is_some() {
            kinds += 1;
        }
        if kinds > 1 {
            out.push(forbid(&sp, "may not specify more than 1 volume type per source"));
        }
    }
    out
}

/// `ValidateCSIDriverName`.
fn csi_driver(driver: &str, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    if driver.is_empty() {
        out.push(req(p, ""));
    }
    if driver.len() > 63 {
        out.push(ctop_schema::causes::cause(
            ctop_schema::FIELD_VALUE_TOO_LONG,
            p.as_str(),
            "Too long".to_owned(),
            "may not be more than 63 bytes",
        ));
    }
    out.extend(names::dns1123_subdomain(&driver.to_lowercase()).iter().map(|m| invalid_str(p, driver, m)));
    out
}

/// `ValidatePersistentVolumeClaimSpec`.
pub(crate) fn validate_pvc_spec(spec: &Value, p: &Path) -> Vec<Cause> {
    let mut out = Vec::new();
    let modes: Vec<&str> = list(spec, "accessModes").iter().filter_map(Value::as_str).collect();
    if modes.is_empty() {
        out.push(req(&p.child("accessModes"), "at least 1 access mode is required"));
    }
    if let Some(sel) = set(spec, "selector") {
        out.extend(crate::meta::validate_label_selector(sel, &p.child("selector")));
    }
    let (mut once_pod, mut other) = (false, false);
    for mode in &modes {
        if !enums::PERSISTENT_VOLUME_ACCESS_MODE.contains(mode) {
            out.push(unsupported(
                &p.child("accessModes"),
                mode,
                &sorted(enums::PERSISTENT_VOLUME_ACCESS_MODE),
            ));
        } else if *mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            other = true;
        }
    }
    if once_pod && other {
        out.push(forbid(&p.child("accessModes"), "may not use ReadWriteOncePod with other access modes"));
    }
    let storage_path = p.child("resources").key("storage");
    match spec.pointer("/resources/requests/storage") {
        None => out.push(req(&storage_path, "")),
        Some(q) => {
            if let Some(q) = q.as_str().and_then(Quantity::parse)
                && (q.is_negative() || q.is_zero())
            {
                out.push(invalid_str(&storage_path, &q.canonical(), "must be greater than zero"));
            }
        }
    }
    if let Some(class) = spec.get("storageClassName").and_then(Value::as_str).filter(|c| !c.is_empty()) {
        out.extend(
            names::subdomain_name(class).iter().map(|m| invalid_str(&p.child("storageClassName"), class, m)),
        );
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str)
        && !enums::PERSISTENT_VOLUME_MODE.contains(&mode)
    {
        out.push(unsupported(&p.child("volumeMode"), mode, &sorted(enums::PERSISTENT_VOLUME_MODE)));
    }
    for key in ["dataSource", "dataSourceRef"] {
        let Some(ds) = set(spec, key) else { continue };
        let dp = p.child(key);
        if string(ds, "name").is_empty() {
            out.push(req(&dp.child("name"), ""));
        }
        let kind = string(ds, "kind");
        if kind.is_empty() {
            out.push(req(&dp.child("kind"), ""));
        }
        let group = string(ds, "apiGroup");
        if group.is_empty() && kind != "PersistentVolumeClaim" {
            out.push(invalid_str(
                &dp,
                kind,
                "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
            ));
        }
        if !group.is_empty() {
            out.extend(
                names::dns1123_subdomain(group).iter().map(|m| invalid_str(&dp.child("apiGroup"), group, m)),
            );
        }
    }
    let _ = invalid;
    out
}
