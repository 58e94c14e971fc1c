//! What the applier reads of the API server's answer to its writes.
//!
//! An apply or a status patch is answered with the whole object, `managedFields` included.
//! Decoding it into a `DynamicObject` built a `serde_json::Value` tree of everything only to
//! read a few metadata fields: it was half of the CPU of a write's round trip in the
//! benchmark's profile (bench/README.md). [`Answer`] names what is read; serde skips the rest
//! without building it.

use std::collections::BTreeMap;

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::Resource as _;
use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};

/// The answer to a write: the object's metadata and, when `S` asks for it, its status.
#[derive(Debug, Deserialize)]
#[serde(bound = "S: Deserialize<'de>")]
pub(crate) struct Answer<S = IgnoredAny> {
    #[serde(default)]
    pub(crate) metadata: AnswerMeta,
    pub(crate) status: Option<S>,
}

/// The metadata fields the applier reads back.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AnswerMeta {
    pub(crate) uid: Option<String>,
    pub(crate) resource_version: Option<String>,
    pub(crate) generation: Option<i64>,
    pub(crate) labels: Option<BTreeMap<String, String>>,
    pub(crate) annotations: Option<BTreeMap<String, String>>,
}

/// Send a patch of `name` (of the kind `resource`, in `namespace` when namespaced), or of its
/// `subresource`, and read the answer as `T`. The request is what `Api::patch` and
/// `Api::patch_status` send, with the same verb noted for kube's tracing.
pub(crate) async fn patch<T: DeserializeOwned, P: serde::Serialize + std::fmt::Debug>(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    subresource: Option<&str>,
    name: &str,
    params: &PatchParams,
    patch: &Patch<P>,
) -> Result<T, kube::Error> {
    let request = kube::core::Request::new(DynamicObject::url_path(resource, namespace));
    let mut req = match subresource {
        Some(sub) => request.patch_subresource(sub, name, params, patch),
        None => request.patch(name, params, patch),
    }
    .map_err(kube::Error::BuildRequest)?;
    req.extensions_mut().insert(if subresource.is_some() { "patch_status" } else { "patch" });
    client.request::<T>(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_reads_metadata_and_skips_the_rest() {
        let text = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","uid":"u1",
            "resourceVersion":"7","generation":2,"labels":{"x":"y"},
            "managedFields":[{"manager":"ctop","fieldsV1":{"f:spec":{}}}]},
            "spec":{"replicas":1},"status":{"replicas":1}}"#;
        let a: Answer = serde_json::from_str(text).unwrap();
        assert_eq!(a.metadata.uid.as_deref(), Some("u1"));
        assert_eq!(a.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(a.metadata.generation, Some(2));
        assert_eq!(a.metadata.labels.unwrap().get("x").map(String::as_str), Some("y"));
        assert!(a.metadata.annotations.is_none());
        let s: Answer<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(text).unwrap();
        assert_eq!(s.status.unwrap()["replicas"], 1);
        let bare: Answer<serde_json::Value> = serde_json::from_str(r#"{"kind":"Status"}"#).unwrap();
        assert!(bare.metadata.uid.is_none() && bare.status.is_none());
    }
}
