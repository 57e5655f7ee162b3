//! Issue 33: who is calling and may they. The typed `TokenReview`, `SubjectAccessReview`,
//! `SelfSubjectReview` and `TokenRequest` calls against the test server (which answers them
//! as `src/testing/reviews.rs` states), and, with the `metrics` feature, a manager's secure
//! `/metrics` over TLS behind them, scraped over real sockets.

mod common;

use common::*;
use kube_informer::api::{
    ApiResource, SelfSubjectReview, SubjectAccessReviewSpec, TokenRequest, UserInfo,
};
use kube_informer::testing::{ApiServer, API_AUDIENCE};
use kube_informer::Client;

fn service_accounts() -> ApiResource {
    ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true)
}

#[test]
fn token_reviews_say_whose_token_and_for_which_audiences() {
    let server = ApiServer::builder()
        .token("admin-token")
        .user_token("alice-token", "alice", &["devs"])
        .start();
    let client = Client::new(server.client_config()).unwrap();

    let alice = client.token_review("alice-token", &[]).unwrap();
    assert!(alice.status.authenticated);
    assert_eq!(alice.status.user.username, "alice");
    assert_eq!(alice.status.user.groups, ["devs", "system:authenticated"]);
    assert_eq!(alice.status.audiences, [API_AUDIENCE]);
    assert_eq!(alice.kind, "TokenReview");

    let bad = client.token_review("made-up", &[]).unwrap();
    assert!(!bad.status.authenticated);
    assert_eq!(bad.status.error, "invalid bearer token");

    // A service-account token for an audience of its own: valid for that audience only.
    let vault = server.issue_token("lab", "builder", &["vault"]);
    let r = client.token_review(&vault, &["vault", "other"]).unwrap();
    assert!(r.status.authenticated);
    assert_eq!(r.status.audiences, ["vault"]);
    assert_eq!(r.status.user.username, "system:serviceaccount:lab:builder");
    assert!(r
        .status
        .user
        .groups
        .contains(&"system:serviceaccounts:lab".to_string()));
    assert!(
        !client
            .token_review(&vault, &[])
            .unwrap()
            .status
            .authenticated
    );
}

#[test]
fn subject_access_reviews_allow_masters_and_what_the_rule_says() {
    let server = ApiServer::start();
    let client = Client::new(server.client_config()).unwrap();
    let user = |name: &str, groups: &[&str]| UserInfo {
        username: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    };
    let ask = |u: &UserInfo, verb: &str, path: &str| {
        client
            .subject_access_review(SubjectAccessReviewSpec::non_resource(u, verb, path))
            .unwrap()
            .status
            .allowed
    };
    assert!(ask(&user("root", &["system:masters"]), "get", "/metrics"));
    let prom = user("system:serviceaccount:monitoring:prometheus", &[]);
    assert!(!ask(&prom, "get", "/metrics"), "no rule: denied");
    server.set_authorizer(|spec| {
        spec.user == "system:serviceaccount:monitoring:prometheus"
            && spec
                .non_resource_attributes
                .as_ref()
                .is_some_and(|a| a.verb == "get" && a.path == "/metrics")
    });
    assert!(ask(&prom, "get", "/metrics"));
    assert!(!ask(&prom, "post", "/metrics"));
    assert!(!ask(&prom, "get", "/debug"));
    // Neither user nor group: the real server's 400.
    let err = client
        .subject_access_review(SubjectAccessReviewSpec::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("at least one of user or group"),
        "{err}"
    );
}

#[test]
fn self_subject_review_answers_like_the_capture() {
    let captured: SelfSubjectReview =
        serde_json::from_slice(&fixture("selfsubjectreview-token-admin.json")).unwrap();
    let server = ApiServer::builder().token("admin-token").start();
    let me = Client::new(server.client_config())
        .unwrap()
        .self_subject_review()
        .unwrap();
    // The capture's admin is `lab-admin`; ours is `kube-admin`, in the same groups.
    assert_eq!(me.groups, captured.status.user_info.groups);
    assert_eq!(me.username, "kube-admin");

    // With a client certificate, as the cert capture.
    let server = ApiServer::builder().tls().client_certificates().start();
    let me = Client::new(server.client_config())
        .unwrap()
        .self_subject_review()
        .unwrap();
    assert!(me.groups.contains(&"system:masters".to_string()), "{me:?}");
}

#[test]
fn token_requests_mint_tokens_the_server_accepts() {
    let server = ApiServer::builder().token("admin-token").start();
    let admin = Client::new(server.client_config()).unwrap();
    // The service account must exist, as on a real server.
    let err = admin
        .request_token("lab", "builder", &TokenRequest::new(&[], None))
        .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    server
        .create(
            &service_accounts(),
            serde_json::json!({"metadata": {"name": "builder", "namespace": "lab"}}),
        )
        .unwrap();
    let short = admin
        .request_token("lab", "builder", &TokenRequest::new(&[], Some(60)))
        .unwrap_err();
    assert!(
        short.to_string().contains("less than 10 minutes"),
        "{short}"
    );

    let issued = admin
        .request_token("lab", "builder", &TokenRequest::new(&[], Some(900)))
        .unwrap();
    assert_eq!(issued.kind, "TokenRequest");
    assert_eq!(issued.spec.expiration_seconds, Some(900));
    assert_eq!(issued.spec.audiences, [API_AUDIENCE]);
    assert!(!issued.status.expiration_timestamp.is_empty());
    assert!(!format!("{issued:?}").contains(&issued.status.token));

    // The token works for API calls, and says whose it is.
    let mut config = server.client_config();
    config.auth = kube_informer::client::Auth::Bearer(kube_informer::client::Secret::new(
        issued.status.token.as_str(),
    ));
    let me = Client::new(config).unwrap().self_subject_review().unwrap();
    assert_eq!(me.username, "system:serviceaccount:lab:builder");
    assert!(!me.uid.is_empty(), "the service account's uid");
}

/// The manager's secure `/metrics`: TLS from certificate files, a scraper's token checked
/// with a TokenReview and its right with a SubjectAccessReview, both cached.
#[cfg(feature = "metrics")]
#[test]
fn secure_metrics_answer_only_authorised_scrapers_and_cache_the_reviews() {
    use kube_informer::manager::Manager;
    use kube_informer::serve::TlsFiles;
    use kube_informer::testing::{CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM};

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), SERVER_CERT_PEM).unwrap();
    std::fs::write(dir.path().join("tls.key"), SERVER_KEY_PEM).unwrap();
    let server = ApiServer::builder().resource(&pods()).start();
    server.set_authorizer(|spec| spec.user == "system:serviceaccount:monitoring:prometheus");
    let client = Client::new(server.client_config()).unwrap();
    let manager = Manager::builder(client)
        .secure_metrics("127.0.0.1:0", TlsFiles::new(dir.path()))
        .start()
        .unwrap();
    let addr = manager.secure_metrics_addr().unwrap();
    let url = format!("https://localhost:{}/metrics", addr.port());
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::new_with_certs(&[
            ureq::tls::Certificate::from_pem(CA_PEM.as_bytes()).unwrap(),
        ]))
        .build();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .tls_config(tls)
        .http_status_as_error(false)
        .ip_family(ureq::config::IpFamily::Ipv4Only)
        .build()
        .into();
    let scrape = |token: Option<&str>| {
        let mut req = agent.get(&url);
        if let Some(t) = token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let mut res = req.call().unwrap();
        let status = res.status().as_u16();
        (status, res.body_mut().read_to_string().unwrap())
    };
    let reviews = || {
        server
            .requests()
            .iter()
            .filter(|r| r.contains("tokenreviews") || r.contains("subjectaccessreviews"))
            .count()
    };

    let prometheus = server.issue_token("monitoring", "prometheus", &[]);
    let (status, body) = scrape(Some(&prometheus));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("rest_client_requests_total"), "{body}");
    assert_eq!(reviews(), 2, "one TokenReview, one SubjectAccessReview");
    assert_eq!(scrape(Some(&prometheus)).0, 200);
    assert_eq!(reviews(), 2, "the second scrape is answered from the cache");

    assert_eq!(scrape(None).0, 401);
    assert_eq!(scrape(Some("made-up")).0, 401);
    let other = server.issue_token("lab", "nosy", &[]);
    let (status, body) = scrape(Some(&other));
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("may not get /metrics"), "{body}");
    // Plain HTTP on the TLS port gets no answer.
    let plain = format!("http://127.0.0.1:{}/metrics", addr.port());
    assert!(ureq::get(&plain).call().is_err());
    manager.stop().unwrap();
}
