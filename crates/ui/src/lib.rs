//! `ctop-ui`: the operator's web page. It lists the primary objects of every running
//! controller with their `Ready` condition and health; one object's view draws the tree of
//! its children coloured by health, the timeline of its last reconciles (trigger, time
//! taken, children created, configured and pruned, the status diff, events, the result, a
//! failure's code frame), its events and what could not be read. It follows the operator
//! live: the page listens to `/api/stream` and fetches again only the object that changed.
//! Under `ctop run --shadow`, whose router answers `/api/shadow` (a 404 anywhere else), the
//! page also shows what the shadow would write: a banner naming the live cluster nothing is
//! written to, the report's summary on the overview, a count on each object's row, and each
//! object's would-be creates, changes (field by field) and deletes in its view.
//!
//! Start with [`router`]: the page's four files at `/` merged with the inspector's JSON API
//! ([`ctop_controller::inspect::api`]), for an [`Inspector`] the controllers register with
//! (`RunOptions::inspector`). `ctop dev` serves it on a loopback port and prints its URL;
//! `ctop run --ui-port` serves it on request.
//!
//! The page is plain HTML, CSS and JavaScript in `assets/`, compiled into the binary: no
//! build step, no framework, nothing loaded from elsewhere (its Content-Security-Policy
//! allows this origin only). The script builds every element with `textContent`, never
//! `innerHTML`, so no name, message or status value can become markup.
//!
//! `/api/object` reads the cluster with the operator's rights, so the page is meant for
//! loopback and `kubectl port-forward`. Requests naming any other host than an IP address or
//! `localhost` are refused, so a web site cannot reach it by DNS rebinding.

use std::net::IpAddr;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
pub use ctop_controller::inspect::Inspector;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_CSS: &str = include_str!("../assets/app.css");
const APP_JS: &str = include_str!("../assets/app.js");
/// What a shadow would write (`/api/shadow`); loaded before `app.js`, whose helpers it uses.
const SHADOW_JS: &str = include_str!("../assets/shadow.js");

const HTML: &str = "text/html; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

/// The page's files may change with every build of the binary: the browser asks again
/// each time (they are small, and a stale script would misread a newer API).
const CACHE_CONTROL: &str = "no-cache";

/// This origin only: no inline script or style, nothing from elsewhere, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page at `/` (`index.html`, `app.css`, `shadow.js`, `app.js`) and the inspector's API
/// under `/api/` for `inspector`; requests naming a host other than an IP address or
/// `localhost` are answered 421 (see the crate docs).
pub fn router(inspector: Inspector) -> Router {
    router_with(inspector, Router::new())
}

/// [`router`] with `more` routes beside the page's (the shadow's `/api/shadow`), behind the
/// same check of the `Host`.
pub fn router_with(inspector: Inspector, more: Router) -> Router {
    Router::new()
        .route("/", get(|| async { asset(HTML, INDEX_HTML) }))
        .route("/index.html", get(|| async { asset(HTML, INDEX_HTML) }))
        .route("/app.css", get(|| async { asset(CSS, APP_CSS) }))
        .route("/app.js", get(|| async { asset(JAVASCRIPT, APP_JS) }))
        .route("/shadow.js", get(|| async { asset(JAVASCRIPT, SHADOW_JS) }))
        .merge(ctop_controller::inspect::api::router(inspector))
        .merge(more)
        .layer(middleware::from_fn(local_names_only))
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// Refuse a request whose `Host` is a name other than `localhost`: a page of another site
/// whose name was made to resolve to this address would otherwise read the operator's
/// objects with the browser's access to loopback.
async fn local_names_only(request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).map(HeaderValue::to_str);
    match host {
        None => next.run(request).await,
        Some(Ok(host)) if local_host(host) => next.run(request).await,
        _ => (
            StatusCode::MISDIRECTED_REQUEST,
            "the operator's page answers only to an IP address or localhost \
             (e.g. http://127.0.0.1:PORT/ through kubectl port-forward)\n",
        )
            .into_response(),
    }
}

/// Whether `host` (a `Host` header: a name or address, maybe with a port) is an IP address,
/// `localhost` or a name under `.localhost` (which browsers resolve to loopback themselves).
fn local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // `[::1]:8090`
        Some(v6) => v6.split_once(']').map_or("", |(address, _)| address),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name.parse::<IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    use super::*;

    struct Answer {
        status: StatusCode,
        content_type: String,
        cache_control: String,
        body: String,
    }

    async fn get(host: &str, path: &str) -> Answer {
        let request = Request::get(path).header(header::HOST, host).body(Body::empty()).expect("a request");
        let response = router(Inspector::default()).oneshot(request).await.expect("an answer");
        let header = |name| {
            response.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok()).unwrap_or("").to_owned()
        };
        let (content_type, cache_control) = (header(header::CONTENT_TYPE), header(header::CACHE_CONTROL));
        let status = response.status();
        let bytes = response.into_body().collect().await.expect("a body").to_bytes();
        Answer { status, content_type, cache_control, body: String::from_utf8_lossy(&bytes).into_owned() }
    }

    #[tokio::test]
    async fn the_page_and_its_files_are_served_with_their_types() {
        for (path, content_type, needle) in [
            ("/", HTML, "<script src=\"app.js\""),
            ("/", HTML, "<script src=\"shadow.js\""),
            ("/index.html", HTML, "<link rel=\"stylesheet\" href=\"app.css\">"),
            ("/app.css", CSS, ".health-Current"),
            ("/app.js", JAVASCRIPT, "new EventSource("),
            ("/shadow.js", JAVASCRIPT, "\"api/shadow\""),
        ] {
            let answer = get("127.0.0.1:8090", path).await;
            assert_eq!(answer.status, StatusCode::OK, "{path}");
            assert_eq!(answer.content_type, content_type, "{path}");
            assert_eq!(answer.cache_control, CACHE_CONTROL, "{path}");
            assert!(answer.body.contains(needle), "{path} lacks {needle:?}");
        }
    }

    #[tokio::test]
    async fn the_inspector_api_is_merged_in() {
        let answer = get("localhost:8090", "/api/objects").await;
        assert_eq!(answer.status, StatusCode::OK);
        assert!(answer.content_type.starts_with("application/json"), "{}", answer.content_type);
        assert_eq!(answer.body, r#"{"controllers":[]}"#);
        let missing = get("localhost", "/api/object?controller=webapp&namespace=default&name=shop").await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        assert!(missing.body.contains("has no object default/shop"), "{}", missing.body);
    }

    #[tokio::test]
    async fn a_host_name_other_than_localhost_is_refused() {
        assert_eq!(get("evil.example:8090", "/").await.status, StatusCode::MISDIRECTED_REQUEST);
        assert_eq!(get("evil.example", "/api/objects").await.status, StatusCode::MISDIRECTED_REQUEST);
        assert_eq!(get("[::1]:8090", "/").await.status, StatusCode::OK);
    }

    #[tokio::test]
    async fn more_routes_are_behind_the_same_host_check() {
        let more = Router::new().route("/api/shadow", axum::routing::get(|| async { "{}" }));
        let ask = |host: &str| {
            let request = Request::get("/api/shadow").header(header::HOST, host).body(Body::empty());
            router_with(Inspector::default(), more.clone()).oneshot(request.expect("a request"))
        };
        assert_eq!(ask("localhost:8082").await.expect("an answer").status(), StatusCode::OK);
        assert_eq!(ask("evil.example").await.expect("an answer").status(), StatusCode::MISDIRECTED_REQUEST);
    }

    #[test]
    fn local_hosts_are_addresses_and_localhost() {
        for host in
            ["127.0.0.1", "127.0.0.1:80", "[::1]:8090", "[::1]", "localhost", "LOCALHOST:1", "ui.localhost"]
        {
            assert!(local_host(host), "{host}");
        }
        for host in ["example.com", "localhost.example.com:8090", "127.0.0.1.nip.io", "", "[::1"] {
            assert!(!local_host(host), "{host}");
        }
    }

    #[test]
    fn the_script_never_writes_markup() {
        // Every string shown comes from the cluster: elements are built with textContent.
        for (file, script) in [("app.js", APP_JS), ("shadow.js", SHADOW_JS)] {
            for forbidden in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("] {
                assert!(!script.contains(forbidden), "{file} uses {forbidden}");
            }
        }
        // Nothing is loaded from elsewhere.
        for text in [INDEX_HTML, APP_CSS, APP_JS, SHADOW_JS] {
            assert!(!text.contains("http://") && !text.contains("https://"), "an external resource");
        }
    }
}
