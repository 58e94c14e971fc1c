//! The inspector over HTTP, as JSON (the types of the parent module, camelCase):
//!
//! - `GET /api/objects`: every controller's objects at a glance ([`Overview`]);
//! - `GET /api/object?controller=C&namespace=N&name=X`: one object in full ([`Detail`]:
//!   its history, the tree of its children read from the API server, its events);
//! - `GET /api/history?controller=C&namespace=N&name=X`: its history alone
//!   ([`HistoryAnswer`], no request to the API server);
//! - `GET /api/stream`: server-sent events, one `changed` event ([`Changed`]) whenever a
//!   reconcile of an object ends.
//!
//! An unknown controller or object answers 404 with `{"message": ...}`.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{Stream, StreamExt as _};
use serde::{Deserialize, Serialize};

use super::{Changed, Detail, Inspector, Overview};
use crate::history::Reconcile;

/// Every route of the module docs: for the operator's page, on its own port (loopback by
/// default: `/api/object` reads the cluster with the operator's rights).
pub fn router(inspector: Inspector) -> Router {
    history_router(inspector.clone()).merge(
        Router::new()
            .route("/api/object", get(object))
            .route("/api/stream", get(stream))
            .with_state(inspector),
    )
}

/// `/api/objects` and `/api/history` alone: what the operator remembers, without a request
/// to the API server (the health port serves these).
pub fn history_router(inspector: Inspector) -> Router {
    Router::new()
        .route("/api/objects", get(objects))
        .route("/api/history", get(history))
        .with_state(inspector)
}

/// Which object a request is about.
#[derive(Debug, Deserialize)]
struct Which {
    controller: String,
    #[serde(default)]
    namespace: Option<String>,
    name: String,
}

/// The answer of `GET /api/history`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryAnswer {
    /// The object's last reconciles, oldest first.
    pub history: Vec<Reconcile>,
    /// Reconciles skipped (nothing they would read had changed).
    pub skipped: u64,
}

async fn objects(State(inspector): State<Inspector>) -> axum::Json<Overview> {
    axum::Json(inspector.overview())
}

fn not_found(w: &Which) -> Response {
    let object = match &w.namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", w.name),
        _ => w.name.clone(),
    };
    let message = format!("controller {:?} has no object {object} in its cache", w.controller);
    (StatusCode::NOT_FOUND, axum::Json(serde_json::json!({ "message": message }))).into_response()
}

async fn object(State(inspector): State<Inspector>, Query(w): Query<Which>) -> Response {
    let namespace = w.namespace.as_deref().filter(|n| !n.is_empty());
    match inspector.detail(&w.controller, namespace, &w.name).await {
        Some(detail) => axum::Json::<Detail>(detail).into_response(),
        None => not_found(&w),
    }
}

async fn history(State(inspector): State<Inspector>, Query(w): Query<Which>) -> Response {
    let namespace = w.namespace.as_deref().filter(|n| !n.is_empty());
    match inspector.history(&w.controller, namespace, &w.name) {
        Some((history, skipped)) => axum::Json(HistoryAnswer { history, skipped }).into_response(),
        None => not_found(&w),
    }
}

async fn stream(State(inspector): State<Inspector>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let changes = tokio_stream::wrappers::BroadcastStream::new(inspector.subscribe()).map(|c| {
        Ok(match c {
            Ok(changed) => {
                Event::default().event("changed").json_data::<&Changed>(&changed).unwrap_or_default()
            }
            // Some were dropped: the page reads everything again.
            Err(_) => Event::default().event("lagged").data("{}"),
        })
    });
    Sse::new(changes).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
