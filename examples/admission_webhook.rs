//! An admission webhook server: on `/validate` it denies ConfigMaps labelled `deny=true`
//! (`denied by kube-informer's example webhook`), on `/mutate` it adds the label
//! `mutated-by=kube-informer` to every ConfigMap it admits.
//!
//! It serves HTTPS on `--port` (default 9443, all interfaces) with the certificate and key
//! of `--cert-dir` (default `/tmp/k8s-webhook-server/serving-certs`): `tls.crt` and
//! `tls.key`, as cert-manager or a mounted `kubernetes.io/tls` Secret gives them. They are
//! read again when they change (a rotation needs no restart; a broken new pair leaves the
//! old one serving and is logged). Register it in a cluster with a
//! MutatingWebhookConfiguration for `/mutate` and a ValidatingWebhookConfiguration for
//! `/validate` (rules: `CREATE` and `UPDATE` of `configmaps`, `sideEffects: None`), their
//! `caBundle` the CA that signed the certificate.
//!
//! With `--demo` it runs against the embedded test API server instead: the webhook serves
//! the test certificates (for `127.0.0.1`), both configurations are created through the test
//! server's API, and two ConfigMaps are created over HTTP; the test server calls the hooks
//! as kube-apiserver would:
//!
//! ```text
//! ADMITTED lab/settings labels: mutated-by=kube-informer
//! DENIED lab/blocked: admission webhook "validate.kube-informer.example" denied the request: denied by kube-informer's example webhook
//! ```
//!
//! Build it with the `webhook` feature: `cargo run --example admission_webhook --features
//! webhook -- --demo`. Flags: `--cert-dir DIR`, `--port PORT`, `--demo`. Ctrl-C or SIGTERM
//! stops it.

use std::path::PathBuf;

use base64::Engine as _;
use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::serve::{Router, Server, TlsFiles};
use kube_informer::testing::{ApiServer, CA_PEM, SERVER_CERT_PEM, SERVER_KEY_PEM};
use kube_informer::webhook::{AdmissionHook, Verdict};
use kube_informer::{Api, Client, PostParams};
use serde_json::{json, Value};

const DENIED: &str = "denied by kube-informer's example webhook";

/// The two hooks on their paths.
fn router() -> Router {
    Router::new()
        .route(
            "/validate",
            AdmissionHook::validating(|req| {
                let deny = req
                    .object
                    .as_ref()
                    .and_then(|o| o.pointer("/metadata/labels/deny"));
                if req.kind.kind == "ConfigMap" && deny.is_some_and(|v| v == "true") {
                    Verdict::deny(DENIED)
                } else {
                    Verdict::allow()
                }
            }),
        )
        .route(
            "/mutate",
            AdmissionHook::mutating(|req, object: &mut Value| {
                if req.kind.kind == "ConfigMap" {
                    let meta = &mut object["metadata"];
                    if !meta["labels"].is_object() {
                        meta["labels"] = json!({});
                    }
                    meta["labels"]["mutated-by"] = json!("kube-informer");
                }
                Verdict::allow()
            }),
        )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut cert_dir, mut port, mut demo) = (None, None, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--cert-dir" => cert_dir = args.next().map(PathBuf::from),
            "--port" => {
                port = Some(
                    args.next()
                        .and_then(|p| p.parse::<u16>().ok())
                        .unwrap_or_else(|| usage("--port takes a port number")),
                )
            }
            "--demo" => demo = true,
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    if demo {
        return run_demo(cert_dir, port.unwrap_or(0));
    }
    let cert_dir =
        cert_dir.unwrap_or_else(|| PathBuf::from("/tmp/k8s-webhook-server/serving-certs"));
    let addr = format!("0.0.0.0:{}", port.unwrap_or(9443));
    let server = Server::builder("webhook")
        .tls(TlsFiles::new(&cert_dir))
        .bind(&addr, router())
        .unwrap_or_else(|e| {
            eprintln!("admission_webhook: cannot serve on {addr}: {e}");
            std::process::exit(1)
        });
    println!(
        "admission_webhook: serving https://{} (/validate, /mutate), certificates from {}",
        server.addr(),
        cert_dir.display()
    );
    let (tx, rx) = std::sync::mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = tx.send(());
    })
    .expect("signal handler");
    let _ = rx.recv();
    println!("admission_webhook: stopping");
    server.stop();
}

fn usage(why: &str) -> ! {
    eprintln!("admission_webhook: {why}\nusage: admission_webhook [--cert-dir DIR] [--port PORT] [--demo]");
    std::process::exit(2)
}

/// The demo: the hooks with the test certificates, the test API server calling them.
fn run_demo(cert_dir: Option<PathBuf>, port: u16) {
    println!("admission_webhook: --demo given; the embedded test API server calls the hooks");
    let temp = tempfile::tempdir().expect("a temporary directory");
    let cert_dir = cert_dir.unwrap_or_else(|| {
        std::fs::write(temp.path().join("tls.crt"), SERVER_CERT_PEM).expect("write tls.crt");
        std::fs::write(temp.path().join("tls.key"), SERVER_KEY_PEM).expect("write tls.key");
        temp.path().to_owned()
    });
    let hooks = Server::builder("webhook")
        .tls(TlsFiles::new(&cert_dir))
        .bind(&format!("127.0.0.1:{port}"), router())
        .expect("serve the hooks");
    let base = format!("https://{}", hooks.addr());
    println!("admission_webhook: serving {base} (/validate, /mutate)");

    let api_server = ApiServer::start();
    let client = Client::new(api_server.client_config()).expect("client");
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(CA_PEM);
    for (kind, plural, name, path) in [
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "mutate.kube-informer.example",
            "/mutate",
        ),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "validate.kube-informer.example",
            "/validate",
        ),
    ] {
        let ar = ApiResource::new("admissionregistration.k8s.io", "v1", kind, plural, false);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let config = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name},
            "webhooks": [{
                "name": name,
                "clientConfig": {"url": format!("{base}{path}"), "caBundle": ca_bundle},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                    "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail", "timeoutSeconds": 5,
            }],
        });
        api.create(&PostParams::default(), &config)
            .expect("register the webhook");
    }

    let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    let api: Api<DynamicObject> = Api::namespaced_with(client, "lab", &cms);
    for (name, labels) in [
        ("settings", json!({})),
        ("blocked", json!({"deny": "true"})),
    ] {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"mode": "demo"}});
        match api.create(&PostParams::default(), &cm) {
            Ok(made) => {
                let labels: Vec<String> = made
                    .metadata
                    .labels
                    .iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                println!("ADMITTED lab/{name} labels: {}", labels.join(","));
            }
            Err(e) => match e.status() {
                Some(st) => println!("DENIED lab/{name}: {}", st.message),
                None => println!("ERROR lab/{name}: {e}"),
            },
        }
    }
    hooks.stop();
}
