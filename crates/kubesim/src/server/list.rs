//! Lists: label and field selection over a consistent snapshot, `limit`/`continue`
//! paging, and the shape the client negotiated (objects, a `Table`, or
//! `PartialObjectMetadata`).

use std::sync::Arc;

use axum::response::Response;
use base64::Engine as _;
use serde_json::{Value, json};

use super::path::Query;
use super::wire::{Shape, json_response};
use crate::api::Api;
use crate::error::ApiError;
use crate::kinds::registry::ResourceType;
use crate::kinds::selector::{FieldSelector, LabelSelector};
use crate::server::table::{self, Include};
use crate::store::ObjKey;

pub(super) fn render_one(rt: &ResourceType, obj: Value, shape: Shape, query: &Query) -> Value {
    match shape {
        Shape::Full => obj,
        Shape::Partial(p) => table::partial(&obj, &p.api_version()),
        Shape::Table => table::table(rt, &[obj], json!({}), include(query)),
    }
}

pub(super) fn include(query: &Query) -> Include {
    match query.get("includeObject").map(String::as_str) {
        Some("None") => Include::None,
        Some("Object") => Include::Object,
        _ => Include::Metadata,
    }
}

/// The `labelSelector` and `fieldSelector` of a list, watch or deletecollection (400 when
/// either does not parse).
pub(super) fn selectors(
    query: &Query,
    rt: &ResourceType,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = crate::kinds::selector::parse_labels(query.get("labelSelector").map_or("", String::as_str))
        .map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(query.get("fieldSelector").map_or("", String::as_str), &rt.kind)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((labels, fields))
}

/// The objects a list or deletecollection selects, in the served version, and the RV.
/// Selectors see the objects as served: a conversion webhook may change labels.
pub(super) async fn select(
    api: &Api,
    rt: &ResourceType,
    ns: Option<&str>,
    query: &Query,
) -> Result<(Vec<Value>, u64), ApiError> {
    let (labels, fields) = selectors(query, rt)?;
    let (rv, table) = api.store.snapshot(&rt.store, false);
    let stored: Vec<Arc<Value>> =
        table.iter().filter(|((n, _), _)| ns.is_none_or(|ns| n == ns)).map(|(_, o)| o.clone()).collect();
    let items = api
        .served_all(rt, &stored)
        .await?
        .into_iter()
        .filter(|o| labels.matches(o.pointer("/metadata/labels")) && fields.matches(o))
        .collect();
    Ok((items, rv))
}

#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Continue {
    rv: u64,
    start: (String, String),
}

pub(super) async fn list(
    api: &Api,
    rt: &ResourceType,
    ns: Option<&str>,
    query: &Query,
    shape: Shape,
) -> Result<Response, ApiError> {
    let (labels, fields) = selectors(query, rt)?;
    let limit: usize = match query.get("limit") {
        None => 0,
        Some(l) => l.parse().map_err(|_| ApiError::bad_request(format!("invalid limit: {l:?}")))?,
    };
    if let Some(rv) = query.get("resourceVersion").filter(|s| !s.is_empty())
        && rv.parse::<u64>().is_err()
    {
        return Err(ApiError::invalid_field(
            rt.gr(),
            "",
            "",
            "FieldValueInvalid",
            "resourceVersion",
            &format!("Invalid value: {rv:?}: must be a valid resource version"),
        ));
    }
    let (rv, table, start) = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let c: Continue = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .ok_or_else(|| ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
            let table = api.store.remembered(&rt.store, c.rv).ok_or_else(|| {
                ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
            })?;
            (c.rv, table, Some(c.start))
        }
        None => {
            let (rv, table) = api.store.snapshot(&rt.store, limit > 0);
            (rv, table, None)
        }
    };
    type Entries<'a> = Box<dyn Iterator<Item = (&'a (String, String), &'a Arc<Value>)> + 'a>;
    let iter: Entries<'_> = match &start {
        Some(s) => Box::new(table.range(s.clone()..)),
        None => Box::new(table.iter()),
    };
    let candidates: Vec<(ObjKey, Arc<Value>)> =
        iter.filter(|(k, _)| ns.is_none_or(|ns| k.0 == ns)).map(|(k, o)| (k.clone(), o.clone())).collect();
    // Objects are served (converted) as many at a time as the page still needs, and all
    // those of one such chunk that a webhook converts go to it in one review. A full page has
    // a continue token when objects remain, whether or not they match, as etcd's list has.
    let mut items = Vec::new();
    let mut next = None;
    let mut rest = candidates.as_slice();
    while !rest.is_empty() {
        if limit > 0 && items.len() == limit {
            next = Some(rest[0].0.clone());
            break;
        }
        let size = if limit > 0 { limit - items.len() } else { rest.len() };
        let (chunk, after) = rest.split_at(size.min(rest.len()));
        rest = after;
        let stored: Vec<Arc<Value>> = chunk.iter().map(|(_, o)| o.clone()).collect();
        let served = api.served_all(rt, &stored).await?;
        items.extend(
            served.into_iter().filter(|o| labels.matches(o.pointer("/metadata/labels")) && fields.matches(o)),
        );
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(start) = next {
        let token = serde_json::to_vec(&Continue { rv, start }).unwrap_or_default();
        meta["continue"] = json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token));
    }
    // The server lists first, then transforms the list into what the client named.
    if let Shape::Partial(p) = shape
        && let Some(refused) = p.refuse(rt, true)
    {
        return Err(refused);
    }
    let body = match shape {
        Shape::Table => table::table(rt, &items, meta, include(query)),
        Shape::Partial(p) => {
            let api_version = p.api_version();
            json!({
                "kind": "PartialObjectMetadataList", "apiVersion": api_version, "metadata": meta,
                "items": items.iter().map(|o| table::partial(o, &api_version)).collect::<Vec<_>>(),
            })
        }
        Shape::Full => {
            json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(), "metadata": meta, "items": items})
        }
    };
    Ok(json_response(200, &body))
}
