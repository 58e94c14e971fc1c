//! Selector grammars as the API server parses them: a field selector skips empty terms,
//! a label selector refuses them.

mod common;

use std::collections::BTreeMap;

use common::{api_err, start};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams, PostParams};

async fn seeded(client: kube::Client) -> Api<ConfigMap> {
    let api: Api<ConfigMap> = Api::default_namespaced(client);
    for name in ["a", "b"] {
        let cm = ConfigMap {
            metadata: kube::api::ObjectMeta {
                name: Some(name.into()),
                labels: Some(BTreeMap::from([("app".into(), name.into())])),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm).await.expect("create");
    }
    api
}

/// `staging/src/k8s.io/apimachinery/pkg/fields/selector.go` `parseSelector`: `if part == ""
/// { continue }`, so `metadata.name=a,` selects `a`; a term without an operator is
/// `invalid selector: '<selector>'; can't understand '<term>'`, which the list handler
/// (`apiserver/pkg/endpoints/handlers/get.go`, `DecodeParameters`) answers as 400
/// BadRequest; so is an unescaped `=` in a value (`UnescapedRune`, the rune printed as a
/// number).
#[tokio::test(flavor = "multi_thread")]
async fn field_selector_skips_empty_terms() {
    let (_sim, client) = start().await;
    let api = seeded(client).await;
    let names =
        |l: kube::core::ObjectList<ConfigMap>| l.items.iter().map(|c| c.name_any()).collect::<Vec<_>>();
    for selector in ["metadata.name=a,", ",metadata.name=a", "metadata.name=a,,metadata.namespace=default"] {
        let list = api.list(&ListParams::default().fields(selector)).await.expect(selector);
        assert_eq!(names(list), ["a"], "{selector}");
    }
    let bad = api_err(api.list(&ListParams::default().fields("metadata.name=a,nope")).await);
    assert_eq!(
        (bad.code, bad.reason.as_str(), bad.message.as_str()),
        (400, "BadRequest", "invalid selector: 'metadata.name=a,nope'; can't understand 'nope'")
    );
    let bad = api_err(api.list(&ListParams::default().fields("metadata.name=a=b")).await);
    assert_eq!(bad.message, "invalid field selector: unescaped character in value: 61");
    let escaped = api.list(&ListParams::default().fields(r"metadata.name!=a\,b")).await.expect("escaped");
    assert_eq!(names(escaped), ["a", "b"]);
}

/// `staging/src/k8s.io/apimachinery/pkg/labels/selector.go` `(*Parser).parse`: after a
/// comma the next token must be an identifier or `!`, else `found '<literal>', expected:
/// identifier after ','` (the end of the string's literal is empty); 400 BadRequest from
/// the same list handler.
#[tokio::test(flavor = "multi_thread")]
async fn label_selector_refuses_empty_terms() {
    let (_sim, client) = start().await;
    let api = seeded(client).await;
    let bad = api_err(api.list(&ListParams::default().labels("app=a,")).await);
    assert_eq!(
        (bad.code, bad.reason.as_str(), bad.message.as_str()),
        (400, "BadRequest", "found '', expected: identifier after ','")
    );
    let bad = api_err(api.list(&ListParams::default().labels("app=a,,app=b")).await);
    assert_eq!(bad.message, "found ',', expected: identifier after ','");
    let ok = api.list(&ListParams::default().labels("app in (a,b)")).await.expect("set");
    assert_eq!(ok.items.len(), 2);
}
