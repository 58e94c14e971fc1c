//! What a request addresses: the route of a path (discovery, OpenAPI, kubesim's own
//! endpoints, or a resource with its namespace, name and subresource), the query, and the
//! verb the API server's authorizer sees.

use std::collections::HashMap;

use axum::http::Method;

/// A parsed resource path.
#[derive(Debug, Default, Clone)]
pub(super) struct ResPath {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) namespace: Option<String>,
    pub(super) resource: String,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

pub(super) enum Route {
    Version,
    Health,
    Api,
    Apis,
    Group(String),
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3,
    OpenApiV3Doc(String),
    Faults(Vec<String>),
    Stats,
    Resource(ResPath),
}

pub(super) fn parse_route(path: &str) -> Option<Route> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let owned = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    Some(match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::Api,
        ["apis"] => Route::Apis,
        ["apis", g] => Route::Group((*g).to_owned()),
        ["api", "v1"] => Route::GroupVersion(String::new(), "v1".into()),
        ["apis", g, v] => Route::GroupVersion((*g).to_owned(), (*v).to_owned()),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3,
        ["openapi", "v3", rest @ ..] => Route::OpenApiV3Doc(rest.join("/")),
        ["kubesim", "faults", rest @ ..] => Route::Faults(owned(rest)),
        ["kubesim", "stats"] => Route::Stats,
        ["api", "v1", rest @ ..] => Route::Resource(parse_rest(String::new(), "v1".into(), rest)?),
        ["apis", g, v, rest @ ..] => Route::Resource(parse_rest((*g).to_owned(), (*v).to_owned(), rest)?),
        _ => return None,
    })
}

pub(super) fn parse_rest(group: String, version: String, rest: &[&str]) -> Option<ResPath> {
    let s = |x: &str| Some(x.to_owned());
    let mut p = ResPath { group, version, ..ResPath::default() };
    match rest {
        ["namespaces", ns, "status" | "finalize"] if p.group.is_empty() => {
            p.resource = "namespaces".into();
            p.name = s(ns);
            p.sub = s(rest[2]);
        }
        ["namespaces", ns, res, tail @ ..] => {
            p.namespace = s(ns);
            p.resource = (*res).to_owned();
            match tail {
                [] => {}
                [name] => p.name = s(name),
                [name, sub] => {
                    p.name = s(name);
                    p.sub = s(sub);
                }
                _ => return None,
            }
        }
        [res] => p.resource = (*res).to_owned(),
        [res, name] => {
            p.resource = (*res).to_owned();
            p.name = s(name);
        }
        [res, name, sub] => {
            p.resource = (*res).to_owned();
            p.name = s(name);
            p.sub = s(sub);
        }
        _ => return None,
    }
    Some(p)
}

pub(super) type Query = HashMap<String, String>;

pub(super) fn parse_query(q: Option<&str>) -> Query {
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
        if !k.is_empty() {
            out.insert(k.into_owned(), v.into_owned());
        }
    }
    out
}

pub(super) fn truthy(q: &Query, k: &str) -> bool {
    q.get(k).is_some_and(|v| v == "true" || v == "1")
}

pub(super) fn verb_of(method: &Method, p: &ResPath, query: &Query) -> &'static str {
    match (method, &p.name) {
        (&Method::GET, None) if truthy(query, "watch") => "watch",
        (&Method::GET, Some(_)) if truthy(query, "watch") => "watch",
        (&Method::GET, None) => "list",
        (&Method::GET, Some(_)) => "get",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, None) => "deletecollection",
        (&Method::DELETE, Some(_)) => "delete",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse_like_the_api_server() {
        let Some(Route::Resource(p)) = parse_route("/apis/apps/v1/namespaces/ns/deployments/web/status")
        else {
            panic!("resource")
        };
        assert_eq!(
            (
                p.group.as_str(),
                p.namespace.as_deref(),
                p.resource.as_str(),
                p.name.as_deref(),
                p.sub.as_deref()
            ),
            ("apps", Some("ns"), "deployments", Some("web"), Some("status"))
        );
        let Some(Route::Resource(p)) = parse_route("/api/v1/namespaces/ns") else { panic!("resource") };
        assert_eq!(
            (p.resource.as_str(), p.name.as_deref(), p.namespace.as_deref()),
            ("namespaces", Some("ns"), None)
        );
        let Some(Route::Resource(p)) = parse_route("/api/v1/namespaces/ns/finalize") else {
            panic!("resource")
        };
        assert_eq!(p.sub.as_deref(), Some("finalize"));
        let Some(Route::Resource(p)) = parse_route("/api/v1/namespaces/ns/configmaps") else {
            panic!("resource")
        };
        assert_eq!((p.resource.as_str(), p.namespace.as_deref()), ("configmaps", Some("ns")));
        assert!(matches!(parse_route("/apis/apps"), Some(Route::Group(g)) if g == "apps"));
        assert!(parse_route("/nope").is_none());
    }
}
