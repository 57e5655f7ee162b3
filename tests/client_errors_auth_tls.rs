//! The client against the test API server: writes and their failure Statuses, retries on
//! 429/503 with Retry-After, bearer/basic/client-certificate auth, TLS verification, and
//! secrets kept out of Debug output and error messages.

mod common;

use common::*;
use kube_informer::api::{DynamicObject, Resource};
use kube_informer::client::{Auth, Identity, Secret};
use kube_informer::testing::{self, ApiServer, Fault, Target};
use kube_informer::{Api, Client, DeleteParams, Error, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn api(server: &ApiServer) -> Api<DynamicObject> {
    Api::namespaced_with(Client::new(server.client_config()).unwrap(), "lab", &pods())
}

#[test]
fn writes_and_their_failure_statuses_match_the_captures() {
    let server = ApiServer::start();
    let api = api(&server);
    let created = api
        .create(&PostParams::default(), &pod("lab", "pod-00", "Pending"))
        .unwrap();
    assert_eq!(created.metadata.namespace(), "lab");
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    assert_eq!(created.metadata.generation, Some(1));

    let err = api
        .create(&PostParams::default(), &pod("lab", "pod-00", "Pending"))
        .unwrap_err();
    let want: kube_informer::api::Status =
        serde_json::from_slice(&fixture("status-409-already-exists.json")).unwrap();
    assert_eq!(*err.status().unwrap(), want, "{err}");

    // Replace with a stale resourceVersion: 409 Conflict, as captured.
    let mut stale = serde_json::to_value(&created).unwrap();
    stale["metadata"]["resourceVersion"] = json!("1");
    let err = api
        .replace("pod-00", &PostParams::default(), &stale)
        .unwrap_err();
    let want: kube_informer::api::Status =
        serde_json::from_slice(&fixture("status-409-conflict.json")).unwrap();
    assert_eq!(*err.status().unwrap(), want, "{err}");
    assert!(err.is_conflict());

    // Replace with the current one works and bumps generation when spec changes.
    let mut current = serde_json::to_value(&created).unwrap();
    current["spec"]["containers"][0]["image"] = json!("busybox:1.37");
    let replaced = api
        .replace("pod-00", &PostParams::default(), &current)
        .unwrap();
    assert_eq!(replaced.metadata.generation, Some(2));

    let patched = api
        .patch(
            "pod-00",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"extra": "yes"}}, "status": {"phase": "Running"}}),
            ),
        )
        .unwrap();
    assert_eq!(patched.metadata.label("extra"), Some("yes"));
    assert_eq!(
        patched.metadata.label("app"),
        Some("lab"),
        "merge keeps other labels"
    );
    #[derive(serde::Deserialize)]
    struct St {
        phase: String,
    }
    // Pods have the status subresource: a patch of the main resource leaves status as it
    // was, as on a real server.
    assert_eq!(
        patched.decode_field::<St>("status").unwrap().unwrap().phase,
        "Pending"
    );

    api.delete("pod-00", &DeleteParams::default()).unwrap();
    let err = api.get("pod-00").unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.status().unwrap().message, "pods \"pod-00\" not found");
    let (code, body) = raw_get(
        &format!("{}/api/v1/namespaces/lab/pods/does-not-exist", server.url()),
        None,
    );
    assert_eq!(code, 404);
    assert_eq!(
        body.as_bytes(),
        &fixture("status-404-pod.json")[..],
        "byte for byte like the capture"
    );
}

#[test]
fn too_many_requests_with_retry_after_is_retried() {
    let server = ApiServer::start();
    let api = api(&server);
    server.inject(Target::List, Fault::too_many_requests(1));
    server.inject(
        Target::List,
        Fault::Status {
            code: 503,
            retry_after: Some(0),
        },
    );
    let list = api.list(&ListParams::default()).unwrap();
    assert!(list.items.is_empty());
    assert_eq!(server.requests().len(), 3, "two refusals, then the answer");

    // Without Retry-After, a 500 is the caller's to handle (the reflector backs off).
    server.inject(Target::List, Fault::status(500));
    let err = api.list(&ListParams::default()).unwrap_err();
    assert_eq!(err.code(), Some(500));
    assert!(err.is_transient());

    // Retries are bounded.
    let mut config = server.client_config();
    config.max_retries = 2;
    let bounded: Api<DynamicObject> =
        Api::namespaced_with(Client::new(config).unwrap(), "lab", &pods());
    for _ in 0..3 {
        server.inject(
            Target::List,
            Fault::Status {
                code: 429,
                retry_after: Some(0),
            },
        );
    }
    let err = bounded.list(&ListParams::default()).unwrap_err();
    assert_eq!(err.code(), Some(429));
    server.clear_faults();
}

#[test]
fn bearer_token_is_required_and_never_shown() {
    let server = ApiServer::builder().token("s3cr3t-token").start();
    let good = api(&server);
    assert!(good.list(&ListParams::default()).is_ok());

    let mut config = server.client_config();
    config.auth = Auth::Bearer(Secret::new("wrong-token"));
    assert!(!format!("{config:?}").contains("wrong-token"));
    let client = Client::new(config).unwrap();
    assert!(!format!("{client:?}").contains("wrong-token"));
    let bad: Api<DynamicObject> = Api::namespaced_with(client, "lab", &pods());
    let err = bad.list(&ListParams::default()).unwrap_err();
    let want: kube_informer::api::Status =
        serde_json::from_slice(&fixture("status-401.json")).unwrap();
    assert_eq!(*err.status().unwrap(), want);
    assert!(!err.to_string().contains("wrong-token"));
    let (code, body) = raw_get(&format!("{}/api/v1/pods", server.url()), None);
    assert_eq!(code, 401);
    assert_eq!(body.as_bytes(), &fixture("status-401.json")[..]);
}

#[test]
fn basic_auth_reaches_the_server() {
    let server = ApiServer::builder().basic_auth("admin", "pa55").start();
    assert!(api(&server).list(&ListParams::default()).is_ok());
    let mut config = server.client_config();
    config.auth = Auth::Basic {
        username: "admin".into(),
        password: Secret::new("nope"),
    };
    assert!(!format!("{config:?}").contains("nope"));
    let err = Api::<DynamicObject>::namespaced_with(Client::new(config).unwrap(), "lab", &pods())
        .list(&ListParams::default())
        .unwrap_err();
    assert_eq!(err.code(), Some(401));
}

#[test]
fn tls_with_the_right_ca_works_and_the_wrong_ca_fails() {
    let server = ApiServer::builder().tls().token("t").start();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    server.create(&pods(), pod("lab", "p", "Pending")).unwrap();
    assert_eq!(
        api(&server)
            .list(&ListParams::default())
            .unwrap()
            .items
            .len(),
        1
    );

    let mut wrong = server.client_config();
    wrong.ca_pem = Some(testing::OTHER_CA_PEM.as_bytes().to_vec());
    let err = Api::<DynamicObject>::namespaced_with(Client::new(wrong).unwrap(), "lab", &pods())
        .list(&ListParams::default())
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );

    // Skipping verification (no CA at all) reaches it anyway.
    let mut insecure = server.client_config();
    insecure.ca_pem = None;
    insecure.insecure_skip_tls_verify = true;
    let api2 =
        Api::<DynamicObject>::namespaced_with(Client::new(insecure).unwrap(), "lab", &pods());
    assert_eq!(api2.list(&ListParams::default()).unwrap().items.len(), 1);

    // A CA bundle with no certificate is a configuration error, not a panic.
    let mut broken = server.client_config();
    broken.ca_pem = Some(b"not a pem".to_vec());
    let err = Client::new(broken).unwrap_err();
    assert!(err.to_string().contains("certificate authority"), "{err}");
}

#[test]
fn client_certificates_authenticate() {
    let server = ApiServer::builder().client_certificates().start();
    let config = server.client_config();
    assert!(config.identity.is_some());
    assert!(!format!("{config:?}").contains("PRIVATE KEY"));
    let watch_ok = api(&server);
    assert!(watch_ok.list(&ListParams::default()).is_ok());

    // No certificate and no token: 401.
    let mut none = server.client_config();
    none.identity = None;
    let err = Api::<DynamicObject>::namespaced_with(Client::new(none).unwrap(), "lab", &pods())
        .list(&ListParams::default())
        .unwrap_err();
    assert_eq!(err.code(), Some(401), "{err}");

    // A certificate from an unrelated CA is refused during the handshake.
    let mut stranger = server.client_config();
    stranger.identity = Some(Identity {
        cert_pem: testing::STRANGER_CERT_PEM.as_bytes().to_vec(),
        key_pem: Secret::new(testing::STRANGER_KEY_PEM),
    });
    let err = Api::<DynamicObject>::namespaced_with(Client::new(stranger).unwrap(), "lab", &pods())
        .list(&ListParams::default())
        .unwrap_err();
    assert!(
        matches!(err, Error::Transport { .. } | Error::Io { .. }),
        "{err:?}"
    );
}

#[test]
fn typed_resources_and_custom_resources_share_one_client() {
    #[derive(Debug, serde::Deserialize)]
    struct Widget {
        metadata: kube_informer::api::ObjectMeta,
        spec: WidgetSpec,
    }
    #[derive(Debug, serde::Deserialize)]
    struct WidgetSpec {
        color: String,
    }
    impl kube_informer::api::Object for Widget {
        type Meta = kube_informer::api::ObjectMeta;
        fn metadata(&self) -> &kube_informer::api::ObjectMeta {
            &self.metadata
        }
        fn metadata_mut(&mut self) -> &mut kube_informer::api::ObjectMeta {
            &mut self.metadata
        }
    }
    impl Resource for Widget {
        const GROUP: &'static str = "lab.example.com";
        const VERSION: &'static str = "v1";
        const KIND: &'static str = "Widget";
        const PLURAL: &'static str = "widgets";
        const NAMESPACED: bool = true;
    }
    let server = ApiServer::builder().resource(&widgets()).start();
    let client = Client::new(server.client_config()).unwrap();
    let typed: Api<Widget> = Api::namespaced(client.clone(), "lab");
    typed
        .create(&PostParams::default(), &json!({"apiVersion": "lab.example.com/v1", "kind": "Widget", "metadata": {"name": "w-00"}, "spec": {"color": "blue"}}))
        .unwrap();
    assert_eq!(typed.get("w-00").unwrap().spec.color, "blue");
    let dynamic: Api<DynamicObject> = Api::all_with(client, &widgets());
    let list = dynamic.list_all(&ListParams::default()).unwrap();
    assert_eq!(list.kind.as_deref(), Some("WidgetList"));
    // Custom resource list items carry apiVersion and kind, like the capture.
    assert_eq!(
        list.items[0].api_version.as_deref(),
        Some("lab.example.com/v1")
    );
    assert_eq!(list.items[0].kind.as_deref(), Some("Widget"));
    let err = Api::<Widget>::all(Client::new(server.client_config()).unwrap())
        .get("w-00")
        .unwrap_err();
    assert!(
        matches!(err, Error::InvalidInput(_)),
        "needs a namespace: {err}"
    );
}

#[test]
fn connection_refused_is_a_transient_transport_error() {
    let server = ApiServer::start();
    let config = server.client_config();
    drop(server);
    let err = Api::<DynamicObject>::namespaced_with(Client::new(config).unwrap(), "lab", &pods())
        .list(&ListParams::default())
        .unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("GET /api/v1/namespaces/lab/pods"),
        "{err}"
    );
}

#[test]
fn a_refreshable_credential_is_refreshed_once_after_401() {
    use kube_informer::client::AuthProvider;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, Default)]
    struct Rotating {
        invalidated: AtomicUsize,
    }
    impl AuthProvider for Rotating {
        fn authorization(&self) -> kube_informer::Result<Option<Secret>> {
            let token = if self.invalidated.load(Ordering::SeqCst) == 0 {
                "expired"
            } else {
                "fresh"
            };
            Ok(Some(Secret::new(format!("Bearer {token}"))))
        }
        fn invalidate(&self) {
            self.invalidated.fetch_add(1, Ordering::SeqCst);
        }
    }
    let server = ApiServer::builder().token("fresh").start();
    let provider = std::sync::Arc::new(Rotating::default());
    let mut config = server.client_config();
    config.auth = Auth::Provider(provider.clone());
    let api = Api::<DynamicObject>::namespaced_with(Client::new(config).unwrap(), "lab", &pods());
    assert!(api.list(&ListParams::default()).is_ok());
    assert_eq!(provider.invalidated.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests().len(), 2);
}

/// A closed port on loopback: bound, then released.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Connection errors name the server (scheme, host, port) once, and the kubeconfig and
/// context the settings came from; API errors are left as the server said them.
#[test]
fn a_refused_connection_names_the_server_and_where_it_came_from() {
    let port = closed_port();
    let client = Client::new(kube_informer::ClientConfig::new(format!(
        "http://127.0.0.1:{port}"
    )))
    .unwrap();
    let api: Api<DynamicObject> = Api::all_with(client, &pods());
    let err = api.list(&ListParams::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("GET /api/v1/pods to http://127.0.0.1:{port}: ")),
        "{text}"
    );
    assert_eq!(text.matches("127.0.0.1").count(), 1, "once: {text}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\ncontexts:\n- name: lab\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: tok-never-shown\n"
        ),
    )
    .unwrap();
    let config = kube_informer::config::Config::from_kubeconfig(&path).unwrap();
    let api: Api<DynamicObject> = Api::all_with(config.client().unwrap(), &pods());
    let text = api.list(&ListParams::default()).unwrap_err().to_string();
    assert!(text.contains(&format!("http://127.0.0.1:{port}")), "{text}");
    assert!(text.contains("\"lab\""), "the context: {text}");
    assert!(
        text.contains(&path.display().to_string()),
        "the file: {text}"
    );
    assert!(!text.contains("tok-never-shown"), "{text}");
}
