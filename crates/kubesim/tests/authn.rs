//! Authentication as kube-apiserver does it, through kube-rs against an `authz` kubesim:
//! the authenticated group every user gets, the 401 of a failed credential, TokenReview,
//! the access reviews and `system:auth-delegator`, and client certificates.

mod common;

use common::{api_err, client_for, start_with};
use ctop_kubesim::{Config, KubeSim, ServingCert};
use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

async fn authz() -> (KubeSim, kube::Client) {
    start_with(Config { authz: true, ..Config::default() }).await
}

/// The admin kubeconfig with `token` in place of the admin token.
async fn client_with_token(sim: &KubeSim, token: &str) -> kube::Client {
    client_for(&sim.kubeconfig().replace(sim.admin_token(), token)).await
}

async fn whoami(client: &kube::Client) -> (String, Vec<String>) {
    let api: Api<SelfSubjectReview> = Api::all(client.clone());
    let review: SelfSubjectReview = serde_json::from_value(
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .expect("review");
    let answer = api.create(&PostParams::default(), &review).await.expect("selfsubjectreview");
    let info = answer.status.and_then(|s| s.user_info).expect("userInfo");
    (info.username.unwrap_or_default(), info.groups.unwrap_or_default())
}

/// `staging/src/k8s.io/apiserver/pkg/authentication/group/authenticated_group_adder.go`:
/// every authenticated user but `system:anonymous` gets `system:authenticated`, so a token
/// user given no groups may use discovery (`system:discovery` is bound to that group).
#[tokio::test(flavor = "multi_thread")]
async fn a_token_user_is_in_the_authenticated_group() {
    let (sim, _) = authz().await;
    sim.add_token("alice-token", "alice", &["dev"]);
    let alice = client_with_token(&sim, "alice-token").await;
    assert_eq!(
        whoami(&alice).await,
        ("alice".to_owned(), vec!["dev".to_owned(), "system:authenticated".to_owned()])
    );
    let groups = alice.list_api_groups().await.expect("discovery as alice");
    assert!(groups.groups.iter().any(|g| g.name == "apps"));
    // RBAC still decides the rest (`pkg/registry/rbac/validation` message through
    // `authorization/authorizer`'s forbidden body).
    let cms: Api<ConfigMap> = Api::namespaced(alice, "default");
    let denied = api_err(cms.list(&Default::default()).await);
    assert_eq!(
        (denied.code, denied.message.as_str()),
        (
            403,
            r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
        )
    );
}

/// A token the server does not know fails authentication, which
/// `staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go` (`Unauthorized`)
/// answers with `apierrors.NewUnauthorized("Unauthorized")`: 401, reason and message
/// `Unauthorized`. No credentials at all is the anonymous user (anonymous auth is on in
/// kind), which may read `/version` (`system:public-info-viewer`) and nothing else.
#[tokio::test(flavor = "multi_thread")]
async fn a_bad_token_is_401_and_no_token_is_anonymous() {
    let (sim, _) = authz().await;
    let bad = client_with_token(&sim, "not-a-token").await;
    let err = api_err(bad.apiserver_version().await);
    assert_eq!((err.code, err.reason.as_str(), err.message.as_str()), (401, "Unauthorized", "Unauthorized"));
    let anonymous =
        client_for(&sim.kubeconfig().replace(&format!("token: {}", sim.admin_token()), "{}")).await;
    anonymous.apiserver_version().await.expect("/version is public");
    let cms: Api<ConfigMap> = Api::namespaced(anonymous, "default");
    let denied = api_err(cms.list(&Default::default()).await);
    assert_eq!(
        denied.message,
        r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
}

fn token_review(token: &str, audiences: &[&str]) -> TokenReview {
    serde_json::from_value(json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token, "audiences": audiences}
    }))
    .expect("token review")
}

/// `pkg/registry/authentication/tokenreview/storage.go`: the review runs the request
/// authenticator on the token; a good one is `authenticated` with the user (a
/// ServiceAccount's uid and credential id, the groups with `system:authenticated`) and the
/// audiences it is good for; a bad one carries the authenticator's error
/// (`bearertoken.go`'s `invalid bearer token`, or `serviceaccount/jwt.go`'s `token
/// audiences ... is invalid for the target audiences ...`); an empty one is the
/// registry's 400.
#[tokio::test(flavor = "multi_thread")]
async fn token_reviews_answer_from_the_authenticators() {
    let (_sim, admin) = authz().await;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": "bot"}})).expect("sa");
    let sa = accounts.create(&PostParams::default(), &sa).await.expect("service account");
    let request = serde_json::from_value(json!({"spec": {"audiences": ["vault"]}})).expect("token request");
    let token = accounts.create_token_request("bot", &PostParams::default(), &request).await.expect("token");
    let token = token.status.expect("status").token;

    let reviews: Api<TokenReview> = Api::all(admin.clone());
    let good =
        reviews.create(&PostParams::default(), &token_review(&token, &["vault"])).await.expect("review");
    let status = serde_json::to_value(good.status.expect("status")).expect("json");
    assert_eq!(status["authenticated"], true);
    assert_eq!(status["audiences"], json!(["vault"]));
    assert_eq!(status["user"]["username"], "system:serviceaccount:default:bot");
    assert_eq!(status["user"]["uid"], json!(sa.metadata.uid));
    assert_eq!(
        status["user"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"])
    );
    assert!(status["user"]["extra"]["authentication.kubernetes.io/credential-id"][0].as_str().is_some());

    let other = reviews.create(&PostParams::default(), &token_review(&token, &[])).await.expect("review");
    assert_eq!(
        serde_json::to_value(other.status).expect("json"),
        json!({"user": {}, "error": r#"token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc"]"#})
    );
    let unknown = reviews.create(&PostParams::default(), &token_review("nope", &[])).await.expect("review");
    assert_eq!(
        serde_json::to_value(unknown.status).expect("json"),
        json!({"user": {}, "error": "invalid bearer token"})
    );
    let empty = api_err(reviews.create(&PostParams::default(), &token_review("", &[])).await);
    assert_eq!(
        (empty.code, empty.reason.as_str(), empty.message.as_str()),
        (400, "BadRequest", "token is required for TokenReview in authentication")
    );
}

fn subject_access_review(spec: Value) -> SubjectAccessReview {
    serde_json::from_value(
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}),
    )
    .expect("subject access review")
}

/// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`: `system:auth-delegator`
/// may create TokenReviews and SubjectAccessReviews, what kube-rbac-proxy and aggregated
/// API servers need. `pkg/apis/authorization/validation/validation.go` refuses a review
/// without attributes or subject, as a 422 with a cause per error.
#[tokio::test(flavor = "multi_thread")]
async fn the_auth_delegator_role_reviews_tokens_and_access() {
    let (sim, admin) = authz().await;
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let delegator = roles.get("system:auth-delegator").await.expect("bootstrap role");
    let rules = serde_json::to_value(delegator.rules).expect("json");
    assert_eq!(
        rules,
        json!([
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}
        ])
    );
    sim.add_token("proxy-token", "proxy", &[]);
    let proxy = client_with_token(&sim, "proxy-token").await;
    let sars: Api<SubjectAccessReview> = Api::all(proxy.clone());
    let spec = json!({"user": "alice", "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}});
    let denied = api_err(sars.create(&PostParams::default(), &subject_access_review(spec.clone())).await);
    assert_eq!(denied.code, 403);
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "proxy-delegates"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "proxy"}]
    });
    let bindings: Api<k8s_openapi::api::rbac::v1::ClusterRoleBinding> = Api::all(admin);
    bindings
        .create(&PostParams::default(), &serde_json::from_value(binding).expect("binding"))
        .await
        .expect("bind");

    let alice = sars.create(&PostParams::default(), &subject_access_review(spec)).await.expect("review");
    assert!(!alice.status.expect("status").allowed);
    let masters = json!({"user": "root", "groups": ["system:masters"], "resourceAttributes": {"verb": "delete", "resource": "nodes"}});
    let root = sars.create(&PostParams::default(), &subject_access_review(masters)).await.expect("review");
    assert!(root.status.expect("status").allowed);
    let reviews: Api<TokenReview> = Api::all(proxy);
    let review =
        reviews.create(&PostParams::default(), &token_review("proxy-token", &[])).await.expect("review");
    assert!(review.status.and_then(|s| s.authenticated).unwrap_or_default());

    let invalid = api_err(sars.create(&PostParams::default(), &subject_access_review(json!({}))).await);
    assert_eq!(invalid.code, 422);
    assert_eq!(
        invalid.message,
        r#"SubjectAccessReview.authorization.k8s.io "" is invalid: [spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: "": at least one of user or group must be specified]"#
    );
}

/// `staging/src/k8s.io/apiserver/pkg/authentication/request/x509/x509.go`: a client
/// certificate signed by the client CA authenticates as its CN in the groups of its O
/// (`CommonNameUserConversion`), then `system:authenticated`; one the CA did not sign fails
/// the request with 401 (the TLS handshake accepts it, as Go's `RequestClientCert` does).
#[tokio::test(flavor = "multi_thread")]
async fn client_certificates_signed_by_the_ca_authenticate() {
    let (sim, _) = authz().await;
    let admin_kubeconfig = sim.kubeconfig_with_client_cert().expect("TLS is on").expect("client cert");
    assert!(!admin_kubeconfig.contains("token:"), "{admin_kubeconfig}");
    let admin = client_for(&admin_kubeconfig).await;
    assert_eq!(
        whoami(&admin).await,
        ("kubesim-admin".to_owned(), vec!["system:masters".to_owned(), "system:authenticated".to_owned()])
    );
    let cms: Api<ConfigMap> = Api::namespaced(admin, "default");
    cms.list(&Default::default()).await.expect("the administrator lists");

    let cert = sim.client_cert("alice", &["dev"]).expect("TLS is on").expect("client cert");
    let kubeconfig =
        ctop_kubesim::kubeconfig_yaml_with_client_cert(&sim.url(), sim.ca_pem(), &cert, "default");
    let alice = client_for(&kubeconfig).await;
    assert_eq!(
        whoami(&alice).await,
        ("alice".to_owned(), vec!["dev".to_owned(), "system:authenticated".to_owned()])
    );

    let stranger = ServingCert::issue(&["localhost".to_owned()]).expect("another CA");
    let foreign = stranger.client_cert("mallory", &["system:masters"]).expect("client cert");
    let kubeconfig =
        ctop_kubesim::kubeconfig_yaml_with_client_cert(&sim.url(), sim.ca_pem(), &foreign, "default");
    let mallory = client_for(&kubeconfig).await;
    let err = api_err(mallory.apiserver_version().await);
    assert_eq!((err.code, err.message.as_str()), (401, "Unauthorized"));
}
