//! What the opt-in end-to-end suites (`tests/e2e*.rs`) share: where they run — a real
//! cluster from the kubeconfig when `KUBE_E2E=1` ([`Env::real`], through
//! [`super::real_cluster`]), or its fake twin over `testing::ApiServer` ([`Env::fake`]) in
//! every `cargo test` — what they create and must clean up ([`Owned`], [`namespace`],
//! [`open_crd`]), and how they wait ([`wait_until`]).
//!
//! Why here: each suite once wrote this setup again; one copy keeps the real and the fake
//! runs of every suite set up alike.

use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::config::Config;
use kube_informer::testing::{ApiServer, ApiServerBuilder};
use kube_informer::{Api, Client, ClientConfig, DeleteParams, PostParams};
use serde_json::{json, Value};

/// A cluster to test against: a real one, or the test API server playing one.
pub struct Env {
    pub config: ClientConfig,
    pub client: Client,
    /// Set when the "cluster" is `testing::ApiServer`.
    pub fake: Option<ApiServer>,
}

impl Env {
    /// The real cluster, or `None` (after saying why) when the suite is not enabled.
    pub fn real() -> Option<Env> {
        let config = super::real_cluster()?;
        Some(Env::from_config(&config, None))
    }

    /// A client for `config`; `fake` is the test server behind it, when it is one.
    pub fn from_config(config: &Config, fake: Option<ApiServer>) -> Env {
        let client = config
            .client()
            .expect("a client for the configured cluster");
        Env {
            config: config.client_config.clone(),
            client,
            fake,
        }
    }

    /// `testing::ApiServer` over TLS, bookmarks every 200 ms ([`fake_server`]).
    pub fn fake() -> Env {
        Env::fake_from(fake_server())
    }

    /// The test server `builder` makes, and a client for it.
    pub fn fake_from(builder: ApiServerBuilder) -> Env {
        let server = builder.start();
        let config = server.client_config();
        Env {
            client: Client::new(config.clone()).unwrap(),
            config,
            fake: Some(server),
        }
    }
}

/// The fake cluster's server: TLS, as a real one, and bookmarks every 200 ms (a real
/// cluster's minute would slow the tests).
pub fn fake_server() -> ApiServerBuilder {
    ApiServer::builder()
        .tls()
        .bookmark_interval(Duration::from_millis(200))
}

/// Waits until `cond` holds; panics with `what` after `patience` (a bound: a real cluster
/// can be slow; never a timing assertion).
pub fn wait_until(what: &str, patience: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + patience;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out ({patience:?}) waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the CRD `name` says `Established` (`api`: `customresourcedefinitions`).
pub fn established(api: &Api<DynamicObject>, name: &str) -> bool {
    let Ok(crd) = api.get(name) else {
        return false;
    };
    let status: Option<Value> = crd.decode_field("status").unwrap_or(None);
    status
        .and_then(|s| s.get("conditions").cloned())
        .and_then(|c| c.as_array().cloned())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

/// Something the test created (a namespace, a CRD), deleted on drop, also when the test
/// panics. One that is already gone is no error.
pub struct Owned {
    pub what: &'static str,
    pub name: String,
    pub api: Api<DynamicObject>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        match self.api.delete(&self.name, &DeleteParams::default()) {
            Ok(_) => println!("e2e: {} {} deleted", self.what, self.name),
            Err(e) if e.code() == Some(404) => {}
            Err(e) => eprintln!("e2e: deleting {} {}: {e}", self.what, self.name),
        }
    }
}

/// Eight random hex digits, to keep one run's names apart from another's.
pub fn random_suffix() -> String {
    format!("{:08x}", super::random_u64() as u32)
}

/// Creates a namespace `<prefix>-<random>` of the test's own (labelled as created by the
/// suite), deleted on drop.
pub fn namespace(client: &Client, prefix: &str) -> Owned {
    let name = format!("{prefix}-{}", random_suffix());
    let api = Api::all_with(
        client.clone(),
        &ApiResource::new("", "v1", "Namespace", "namespaces", false),
    );
    api.create(&PostParams::default(), &json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/created-by": "kube-informer-e2e"}}
    }))
    .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
    println!("e2e: namespace {name} created");
    Owned {
        what: "namespace",
        name,
        api,
    }
}

/// A CRD of `ar` (version `v1` only) whose schema keeps whatever it is given
/// (`x-kubernetes-preserve-unknown-fields`).
pub fn open_crd_object(ar: &ApiResource) -> Value {
    let kind = &ar.kind;
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", ar.plural, ar.group)},
        "spec": {
            "group": ar.group,
            "names": {"plural": ar.plural, "singular": kind.to_lowercase(), "kind": kind,
                      "listKind": format!("{kind}List")},
            "scope": if ar.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

/// Creates [`open_crd_object`] of `ar`, deleted on drop. On the fake cluster it is then
/// marked `Established`, as the real API server's CRD controller does.
pub fn open_crd(env: &Env, ar: &ApiResource) -> Owned {
    let crd = open_crd_object(ar);
    let name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let api: Api<DynamicObject> = Api::all_with(env.client.clone(), &super::crds());
    api.create(&PostParams::default(), &crd)
        .unwrap_or_else(|e| panic!("creating CRD {name}: {e}"));
    let owned = Owned {
        what: "CRD",
        name,
        api,
    };
    println!("e2e: CRD {} created", owned.name);
    if let Some(server) = &env.fake {
        server
            .patch(
                &super::crds(),
                None,
                &owned.name,
                &json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}}),
            )
            .unwrap();
    }
    owned
}
