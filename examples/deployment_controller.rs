//! A controller over Deployments that owns their ReplicaSets and keeps a finalizer on them.
//!
//! - `owns`: a change of a ReplicaSet whose controller is a Deployment (its `ownerReferences`
//!   entry with `controller: true`) reconciles that Deployment; the reconcile prints what it
//!   sees of its ReplicaSets (`RECONCILE lab/web replicasets=web-7d9f8 ready=2/3`), so a
//!   ReplicaSet whose readiness moved shows up as a new line for its Deployment even though
//!   the Deployment itself did not change.
//! - a filter on the Deployments: only updates that change their generation (the spec),
//!   labels or finalizers, or start their deletion, reconcile; status-only writes (the
//!   Deployment controller's own, every few seconds on a real cluster) do not
//!   (`FILTERED lab/web ...`). The owned ReplicaSets are not filtered: their status is what
//!   the reconcile reports.
//! - `finalizer`: before the first reconcile of a managed Deployment the finalizer
//!   `example.com/deployment-controller` is added (`FINALIZER lab/web ...`); when it is
//!   deleted, the server keeps it until the cleanup ran (`CLEANUP lab/web ...`, where a real
//!   controller releases what it made outside the cluster) and the finalizer was removed;
//!   then it is gone (`GONE lab/web`).
//!
//! Against a cluster (kubeconfig or in-cluster) it manages only Deployments labelled
//! `example.com/deployment-controller=enabled` (it adds a finalizer to them: delete them
//! while it runs, or remove the finalizer by hand). With no cluster configured, or `--demo`,
//! it runs against the embedded test API server: a Deployment with one ReplicaSet whose pods
//! become ready one by one, then the Deployment is deleted; the program ends when the
//! Deployment is gone.
//!
//! It runs under a `Manager`: with `--probe-addr HOST:PORT` it serves `/healthz`, `/readyz`
//! and (built with the `metrics` feature) `/metrics` there.
//!
//! `RUST_LOG=info` (or `debug`) prints the library's log lines on stderr (a failing
//! reconcile is logged as a warning).
//!
//! Flags: `--kubeconfig PATH`, `--context NAME`, `--namespace NS`, `--demo`,
//! `--duration SECS`, `--probe-addr HOST:PORT`. Ctrl-C or SIGTERM stops it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, Object, ObjectMeta, Resource};
use kube_informer::cache::{FactoryOptions, Lister};
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::controller::{
    finalizer, split_key, Action, Controller, EventFilter, FinalizerError, FinalizerEvent,
};
use kube_informer::manager::Manager;
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client};
use parking_lot::Mutex;
use serde::Deserialize;

const FINALIZER: &str = "example.com/deployment-controller";
const MANAGED: &str = "example.com/deployment-controller";

#[derive(Deserialize)]
struct Deployment {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Replicas,
}

#[derive(Deserialize)]
struct ReplicaSet {
    metadata: ObjectMeta,
    #[serde(default)]
    status: ReadyReplicas,
}

#[derive(Deserialize, Default)]
struct Replicas {
    #[serde(default)]
    replicas: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ReadyReplicas {
    #[serde(default)]
    ready_replicas: Option<i64>,
}

macro_rules! resource {
    ($t:ident, $kind:expr, $plural:expr) => {
        impl Object for $t {
            type Meta = ObjectMeta;
            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
        impl Resource for $t {
            const GROUP: &'static str = "apps";
            const VERSION: &'static str = "v1";
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            const NAMESPACED: bool = true;
        }
    };
}
resource!(Deployment, "Deployment", "deployments");
resource!(ReplicaSet, "ReplicaSet", "replicasets");

/// What the controller last printed per Deployment (the demo waits on it).
type Seen = Arc<Mutex<HashMap<String, String>>>;

fn main() {
    // `RUST_LOG=info` (or `debug`, or `kube_informer=debug`) shows the library's log lines on
    // stderr; without it, errors only.
    env_logger::init();
    let mut args = std::env::args().skip(1);
    let (mut kubeconfig, mut context, mut namespace, mut demo, mut duration) =
        (None, None, None, false, None);
    let mut probe_addr = None::<String>;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--kubeconfig" => kubeconfig = args.next(),
            "--context" => context = args.next(),
            "--namespace" => namespace = args.next(),
            "--demo" => demo = true,
            "--probe-addr" => probe_addr = args.next(),
            "--duration" => {
                duration = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .map(Duration::from_secs)
            }
            other => {
                eprintln!("deployment_controller: unknown argument {other:?}");
                std::process::exit(2);
            }
        }
    }
    let mut options = KubeconfigOptions::new();
    if let Some(v) = &kubeconfig {
        options = options.kubeconfig(v);
    }
    if let Some(v) = &context {
        options = options.context(v);
    }
    let loaded = if demo {
        None
    } else {
        Config::infer_if_configured(&options).transpose()
    };
    let mut server = None;
    let client = match loaded {
        Some(Ok(c)) => {
            println!(
                "deployment_controller: managing Deployments labelled {MANAGED}=enabled through {}",
                c.source
            );
            c.client().unwrap_or_else(|e| fail(&e))
        }
        Some(Err(e)) => fail(&e),
        None => {
            println!("deployment_controller: no cluster configured (or --demo); running against the embedded test API server (demo)");
            let s = Arc::new(
                ApiServer::builder()
                    .resource(&ApiResource::of::<Deployment>())
                    .resource(&ApiResource::of::<ReplicaSet>())
                    .start(),
            );
            namespace.get_or_insert_with(|| "lab".to_owned());
            let client = Client::new(s.client_config()).unwrap_or_else(|e| fail(&e));
            demo_seed(&s);
            server = Some(s);
            client
        }
    };

    // One manager: its factory's informers, the controller, probes, a clean stop.
    let mut manager = Manager::builder_with_options(
        client.clone(),
        match &namespace {
            Some(ns) => FactoryOptions::new().namespace(ns),
            None => FactoryOptions::new(),
        },
    );
    if let Some(addr) = &probe_addr {
        manager = manager.probe_addr(addr);
    }
    let deployments = manager.factory().informer::<Deployment>();
    let replicasets = manager.factory().informer::<ReplicaSet>();
    let seen: Seen = Arc::default();
    let reconciler = Reconciler {
        deployments: deployments.lister(),
        replicasets: replicasets.lister(),
        api: Api::all(client),
        seen: Arc::clone(&seen),
        require_label: server.is_none(),
    };
    let manager = manager
        .controller(
            Controller::builder("deployment-controller", deployments)
                .filter(
                    EventFilter::generation_changed()
                        .or(EventFilter::labels_changed())
                        .or(EventFilter::finalizers_changed())
                        .or(EventFilter::deletion_started()),
                )
                .owns(replicasets),
            move |key: &str| reconciler.reconcile(key),
        )
        .start()
        .unwrap_or_else(|e| fail(&e));
    if let Some(addr) = manager.probe_addr() {
        println!("deployment_controller: probes on http://{addr}/healthz, /readyz, /metrics");
    }

    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    ctrlc::set_handler(move || {
        let _ = tx.try_send(());
    })
    .expect("install the Ctrl-C handler");
    let deadline = duration.map(|d| Instant::now() + d);
    match &server {
        Some(server) => {
            let filtered = || {
                manager
                    .controllers_health()
                    .first()
                    .map_or(0, |h| h.stats.filtered)
            };
            demo_script(server, &seen, &filtered, &rx, deadline)
        }
        None => match deadline {
            Some(d) => {
                let _ = rx.recv_deadline(d);
            }
            None => {
                let _ = rx.recv();
            }
        },
    }
    // Within the grace period: workers finish their keys, handlers and informers stop.
    if let Err(e) = manager.stop() {
        eprintln!("deployment_controller: {e}");
    }
}

struct Reconciler {
    deployments: Lister<Deployment>,
    replicasets: Lister<ReplicaSet>,
    api: Api<Deployment>,
    seen: Seen,
    /// Against a real cluster: only Deployments that carry the label (or our finalizer).
    require_label: bool,
}

impl Reconciler {
    fn reconcile(&self, key: &str) -> Result<Action, FinalizerError<String>> {
        // Keys are `namespace/name` (Deployments are namespaced); a malformed key (none of
        // ours) is dropped.
        let Ok((ns, name)) = split_key(key) else {
            return Ok(Action::Done);
        };
        let Some(deployment) = self.deployments.get(ns, name) else {
            if self.seen.lock().remove(key).is_some() {
                println!("GONE {key}");
            }
            return Ok(Action::Done);
        };
        let meta = &deployment.metadata;
        let ours = meta.finalizers.iter().flatten().any(|f| f == FINALIZER);
        if self.require_label && meta.label(MANAGED) != Some("enabled") && !ours {
            return Ok(Action::Done);
        }
        finalizer(&self.api, FINALIZER, deployment, |event| match event {
            FinalizerEvent::Apply(d) => {
                self.apply(key, &d);
                Ok(Action::Done)
            }
            FinalizerEvent::Cleanup(d) => {
                let owned = self.owned(&d);
                println!(
                    "CLEANUP {key} (it controls {} ReplicaSet(s); the finalizer is removed next)",
                    owned.len()
                );
                Ok(Action::Done)
            }
        })
    }

    fn apply(&self, key: &str, d: &Deployment) {
        let mut seen = self.seen.lock();
        if !seen.contains_key(key) {
            let finalizers = d.metadata.finalizers.clone().unwrap_or_default();
            println!("FINALIZER {key} {}", finalizers.join(","));
        }
        let owned = self.owned(d);
        let names: Vec<&str> = owned.iter().map(|r| r.metadata.name()).collect();
        let ready: i64 = owned.iter().filter_map(|r| r.status.ready_replicas).sum();
        let line = format!(
            "RECONCILE {key} replicasets={} ready={ready}/{}",
            if names.is_empty() {
                "-".to_owned()
            } else {
                names.join(",")
            },
            d.spec.replicas.unwrap_or(1)
        );
        if seen.get(key) != Some(&line) {
            println!("{line}");
            seen.insert(key.to_owned(), line);
        }
    }

    /// The ReplicaSets this Deployment controls (same namespace, controller reference).
    fn owned(&self, d: &Deployment) -> Vec<Arc<ReplicaSet>> {
        let mut owned: Vec<_> = self
            .replicasets
            .list_all()
            .into_iter()
            .filter(|rs| {
                rs.metadata.namespace() == d.metadata.namespace()
                    && rs.metadata.owner_references.iter().flatten().any(|o| {
                        o.controller == Some(true)
                            && o.kind == "Deployment"
                            && o.uid == d.metadata.uid.as_deref().unwrap_or("")
                    })
            })
            .collect();
        owned.sort_by(|a, b| a.metadata.name().cmp(b.metadata.name()));
        owned
    }
}

/// The demo, after [`demo_seed`]: the ReplicaSet's pods become ready one by one (only the
/// ReplicaSet changes), the Deployment's status is written (filtered: no reconcile), then
/// the Deployment is deleted. Each step waits (bounded) until the
/// controller printed what it should, so the output is the same on a slow machine.
fn demo_script(
    server: &ApiServer,
    seen: &Seen,
    filtered: &dyn Fn() -> u64,
    ctrl_c: &crossbeam_channel::Receiver<()>,
    deadline: Option<Instant>,
) {
    let deployments = ApiResource::of::<Deployment>();
    let replicasets = ApiResource::of::<ReplicaSet>();
    let key = "lab/web";
    let wait = |what: &str, cond: &dyn Fn(Option<&String>) -> bool| -> bool {
        let limit = Instant::now() + Duration::from_secs(30);
        loop {
            if cond(seen.lock().get(key)) {
                return true;
            }
            let now = Instant::now();
            if now >= limit || deadline.is_some_and(|d| now >= d) {
                println!("deployment_controller: demo: gave up waiting for {what}");
                return false;
            }
            if ctrl_c.recv_timeout(Duration::from_millis(20)).is_ok() {
                return false;
            }
        }
    };
    for ready in 1..=3 {
        if ready > 1 {
            println!("DEMO replicaset lab/web-7d9f8 readyReplicas={ready} (the Deployment itself is unchanged)");
            let _ = server.patch(
                &replicasets,
                Some("lab"),
                "web-7d9f8",
                &serde_json::json!({"status": {"readyReplicas": ready}}),
            );
        }
        let want = format!("ready={ready}/3");
        if !wait(&want, &|line| line.is_some_and(|l| l.ends_with(&want))) {
            return;
        }
    }
    // A status-only write, as the Deployment controller makes: no new generation, so the
    // filter keeps it from the queue.
    let before = filtered();
    let _ = server.patch(
        &deployments,
        Some("lab"),
        "web",
        &serde_json::json!({"status": {"readyReplicas": 3}}),
    );
    let limit = Instant::now() + Duration::from_secs(30);
    while filtered() == before && Instant::now() < limit {
        if ctrl_c.recv_timeout(Duration::from_millis(20)).is_ok() {
            return;
        }
    }
    if filtered() > before {
        println!("FILTERED {key} status-only write (no new generation): not reconciled");
    }
    println!("DEMO delete deployment lab/web");
    let _ = server.delete(&deployments, Some("lab"), "web");
    wait("the Deployment to be gone", &|line| line.is_none());
}

/// The demo's starting point, made before the controller starts (so its first reconcile
/// sees both): a Deployment of 3 replicas and its ReplicaSet with one ready.
fn demo_seed(server: &ApiServer) {
    let deployments = ApiResource::of::<Deployment>();
    let replicasets = ApiResource::of::<ReplicaSet>();
    let created = server.create(
        &deployments,
        serde_json::json!({"metadata": {"name": "web", "namespace": "lab",
            "labels": {MANAGED: "enabled"}}, "spec": {"replicas": 3}}),
    );
    let uid = created
        .ok()
        .and_then(|d| d["metadata"]["uid"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let _ = server.create(
        &replicasets,
        serde_json::json!({"metadata": {"name": "web-7d9f8", "namespace": "lab",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                 "uid": uid, "controller": true}]},
            "spec": {"replicas": 3}, "status": {"readyReplicas": 1}}),
    );
}

fn fail(e: &kube_informer::Error) -> ! {
    eprintln!("deployment_controller: {e}");
    std::process::exit(1)
}
