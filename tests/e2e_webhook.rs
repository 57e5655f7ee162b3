//! A real kube-apiserver calling the example's admission hooks, opt-in:
//!
//! ```text
//! KUBE_E2E=1 KUBE_E2E_WEBHOOK_URL=https://172.18.0.1:9443 \
//! KUBE_E2E_WEBHOOK_CERT_DIR=/path/with/tls.crt+tls.key KUBE_E2E_WEBHOOK_CA=/path/ca.pem \
//!   cargo test --features webhook --test e2e_webhook -- --ignored --nocapture
//! ```
//!
//! The hooks are served on this machine, on the port of `KUBE_E2E_WEBHOOK_URL`, which must
//! reach this process from kube-apiserver (for kind: the docker bridge's gateway address);
//! the certificate in `KUBE_E2E_WEBHOOK_CERT_DIR` must be valid for its host and signed by
//! `KUBE_E2E_WEBHOOK_CA`. Without all four variables the `real_` test prints `skipped: ...`.
//!
//! It touches only what it creates: a namespace `kube-informer-e2e-<random>` and two webhook
//! configurations of the same name whose `namespaceSelector` selects that namespace only
//! (no other write in the cluster is sent to the hooks), all deleted at the end by a guard,
//! also when the test fails. The same body runs in every `cargo test --features webhook`
//! against `testing::ApiServer` (`fake_`).
#![cfg(feature = "webhook")]

use base64::Engine as _;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::serve::{Router, Server, TlsFiles};
use kube_informer::testing::{ApiServer, CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM};
use kube_informer::webhook::{AdmissionHook, Verdict};
use kube_informer::{Api, Client, DeleteParams, PostParams};
use serde_json::{json, Value};

const DENIED: &str = "denied by kube-informer's example webhook";

/// The example's hooks (examples/admission_webhook.rs).
fn router() -> Router {
    Router::new()
        .route(
            "/validate",
            AdmissionHook::validating(|req| {
                let deny = req
                    .object
                    .as_ref()
                    .and_then(|o| o.pointer("/metadata/labels/deny"));
                if deny.is_some_and(|v| v == "true") {
                    Verdict::deny(DENIED)
                } else {
                    Verdict::allow()
                }
            }),
        )
        .route(
            "/mutate",
            AdmissionHook::mutating(|_req, object: &mut Value| {
                if !object["metadata"]["labels"].is_object() {
                    object["metadata"]["labels"] = json!({});
                }
                object["metadata"]["labels"]["mutated-by"] = json!("kube-informer");
                Verdict::allow()
            }),
        )
}

fn configs(mutating: bool) -> ApiResource {
    let (kind, plural) = if mutating {
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        )
    } else {
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        )
    };
    ApiResource::new("admissionregistration.k8s.io", "v1", kind, plural, false)
}

/// Deletes what the test made, whatever happens.
struct Guard {
    client: Client,
    name: String,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for mutating in [true, false] {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &configs(mutating));
            let _ = api.delete(&self.name, &DeleteParams::default());
        }
        let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ns);
        let _ = api.delete(&self.name, &DeleteParams::default());
    }
}

/// The scenario: the hooks registered for one namespace, a ConfigMap admitted and
/// labelled, one labelled `deny=true` refused with the hook's message.
fn scenario(client: Client, base_url: &str, ca_pem: &str, namespace: &str) {
    let _guard = Guard {
        client: client.clone(),
        name: namespace.to_owned(),
    };
    let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
    Api::<DynamicObject>::all_with(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        )
        .unwrap();
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    for (mutating, path) in [(true, "/mutate"), (false, "/validate")] {
        let ar = configs(mutating);
        let body = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": ar.kind,
            "metadata": {"name": namespace},
            "webhooks": [{
                "name": format!("{}.kube-informer.test", &path[1..]),
                "clientConfig": {"url": format!("{base_url}{path}"), "caBundle": ca_bundle},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                    "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "Namespaced"}],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail", "timeoutSeconds": 10,
            }],
        });
        Api::<DynamicObject>::all_with(client.clone(), &ar)
            .create(&PostParams::default(), &body)
            .unwrap();
    }
    let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let api: Api<DynamicObject> = Api::namespaced_with(client, namespace, &cms);
    let cm = |name: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
    };
    // A new configuration may take a moment to reach every API server replica: retry the
    // first write until the label shows it was seen (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let made = loop {
        let made = api.create(&PostParams::default(), &cm("settings", json!({})));
        match made {
            Ok(m) if m.metadata.label("mutated-by") == Some("kube-informer") => break m,
            Ok(_) => {
                api.delete("settings", &DeleteParams::default()).unwrap();
            }
            Err(e) => panic!("create: {e}"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the mutating webhook was never called"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert_eq!(made.metadata.label("mutated-by"), Some("kube-informer"));
    let err = api
        .create(
            &PostParams::default(),
            &cm("blocked", json!({"deny": "true"})),
        )
        .unwrap_err();
    let st = err.status().expect("a Status");
    assert_eq!(st.code, 403);
    assert_eq!(
        st.message,
        format!("admission webhook \"validate.kube-informer.test\" denied the request: {DENIED}")
    );
}

fn random_suffix() -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{:08x}", n ^ std::process::id().rotate_left(16))
}

#[test]
#[ignore]
fn real_apiserver_calls_the_example_hooks() {
    if std::env::var("KUBE_E2E").as_deref() != Ok("1") {
        println!("skipped: set KUBE_E2E=1 (and the KUBE_E2E_WEBHOOK_* variables) to run it");
        return;
    }
    let vars: Vec<Option<String>> = [
        "KUBE_E2E_WEBHOOK_URL",
        "KUBE_E2E_WEBHOOK_CERT_DIR",
        "KUBE_E2E_WEBHOOK_CA",
    ]
    .iter()
    .map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
    .collect();
    let [Some(url), Some(cert_dir), Some(ca)] = &vars[..] else {
        println!("skipped: needs KUBE_E2E_WEBHOOK_URL, KUBE_E2E_WEBHOOK_CERT_DIR and KUBE_E2E_WEBHOOK_CA (see the file's docs)");
        return;
    };
    let port = url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse::<u16>().ok())
        .expect("KUBE_E2E_WEBHOOK_URL ends with :PORT");
    let ca_pem = std::fs::read_to_string(ca).expect("KUBE_E2E_WEBHOOK_CA is readable");
    let config = Config::infer_if_configured(&KubeconfigOptions::default())
        .expect("the kubeconfig loads")
        .expect("KUBE_E2E=1 but no kubeconfig was found");
    let client = config.client().unwrap();
    let hooks = Server::builder("e2e-hooks")
        .tls(TlsFiles::new(cert_dir))
        .bind(&format!("0.0.0.0:{port}"), router())
        .unwrap();
    scenario(
        client,
        url.trim_end_matches('/'),
        &ca_pem,
        &format!("kube-informer-e2e-{}", random_suffix()),
    );
    hooks.stop();
}

#[test]
fn fake_apiserver_calls_the_example_hooks() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), SERVER_CERT_PEM).unwrap();
    std::fs::write(dir.path().join("tls.key"), SERVER_KEY_PEM).unwrap();
    let hooks = Server::builder("e2e-hooks")
        .tls(TlsFiles::new(dir.path()))
        .bind("127.0.0.1:0", router())
        .unwrap();
    let server = ApiServer::builder().tls().start();
    let client = Client::new(server.client_config()).unwrap();
    scenario(
        client,
        &format!("https://{}", hooks.addr()),
        CA_PEM,
        "kube-informer-e2e-fake",
    );
    hooks.stop();
}
