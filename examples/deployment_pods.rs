//! For each Deployment: its current ReplicaSet (owned by it, highest
//! `deployment.kubernetes.io/revision`) and that ReplicaSet's pods — found through an index,
//! not a scan — with phase, readiness (the ContainersReady condition and every readiness
//! gate) and the latest Event message of each pod (also through an index).
//!
//! Four shared informers (Deployments, ReplicaSets, Pods, Events) from one factory; the report
//! is printed after the caches sync and again whenever something changed. With no cluster
//! configured (or `--demo`) it runs against the embedded test API server with a small rollout.
//!
//! Flags: `--namespace NS`, `--kubeconfig PATH`, `--context NAME`, `--demo`, `--once` (print
//! one report and exit), `--duration SECS`. Ctrl-C stops it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kube_informer::api::{ApiResource, Meta, Object};
use kube_informer::cache::{FactoryOptions, IndexFn, Lister, SharedInformerFactory};
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::testing::ApiServer;
use kube_informer::Client;
use serde::Deserialize;

const REVISION: &str = "deployment.kubernetes.io/revision";
const BY_OWNER: &str = "by-controller-uid";
const BY_OBJECT: &str = "by-involved-object-uid";

// Each kind is declared with `kube_informer::resource!`: metadata plus the fields this tool
// reads. Everything else in the objects is skipped while decoding and never stored.
kube_informer::resource! {
    #[resource(group = "apps", version = "v1", kind = "Deployment", plural = "deployments", namespaced)]
    struct Deployment {}
}

kube_informer::resource! {
    #[resource(group = "apps", version = "v1", kind = "ReplicaSet", plural = "replicasets", namespaced)]
    struct ReplicaSet {}
}

kube_informer::resource! {
    #[resource(group = "", version = "v1", kind = "Pod", plural = "pods", namespaced)]
    struct Pod {
        spec: PodSpec,
        status: PodStatus,
    }
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    readiness_gates: Vec<ReadinessGate>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct ReadinessGate {
    condition_type: String,
}

#[derive(Deserialize, Clone, Debug, Default)]
struct PodStatus {
    phase: Option<String>,
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Deserialize, Clone, Debug)]
struct Condition {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

kube_informer::resource! {
    #[resource(group = "", version = "v1", kind = "Event", plural = "events", namespaced)]
    struct Event {
        involved_object: ObjectRef,
        message: String,
        last_timestamp: Option<String>,
        event_time: Option<String>,
    }
}

#[derive(Deserialize, Clone, Debug, Default)]
struct ObjectRef {
    uid: Option<String>,
}

impl Pod {
    fn condition(&self, t: &str) -> bool {
        self.status
            .conditions
            .iter()
            .any(|c| c.type_ == t && c.status == "True")
    }

    /// Ready: containers ready and every readiness gate's condition true.
    fn ready(&self) -> bool {
        self.condition("ContainersReady")
            && self
                .spec
                .readiness_gates
                .iter()
                .all(|g| self.condition(&g.condition_type))
    }
}

impl Event {
    fn when(&self) -> &str {
        self.last_timestamp
            .as_deref()
            .or(self.event_time.as_deref())
            .or(self.metadata.creation_timestamp.as_deref())
            .unwrap_or("")
    }
}

/// Index: the UID of an object's controlling owner.
fn by_controller_uid<K: Object>() -> IndexFn<K> {
    Arc::new(|o: &K| {
        Ok(o.metadata()
            .controller()
            .map(|r| r.uid.to_owned())
            .into_iter()
            .collect())
    })
}

struct Listers {
    deployments: Lister<Deployment>,
    replicasets: Lister<ReplicaSet>,
    pods: Lister<Pod>,
    events: Lister<Event>,
}

fn report(l: &Listers) {
    let revision = |rs: &ReplicaSet| {
        rs.metadata
            .annotation(REVISION)
            .and_then(|r| r.parse::<u64>().ok())
            .unwrap_or(0)
    };
    println!("---");
    for d in l.deployments.list_all() {
        let uid = d.metadata.uid.clone().unwrap_or_default();
        let owned = l.replicasets.by_index(BY_OWNER, &uid).unwrap_or_default();
        let Some(current) = owned.iter().max_by_key(|rs| revision(rs)) else {
            println!("DEPLOYMENT {} (no ReplicaSet yet)", d.metadata.key());
            continue;
        };
        let rs_uid = current.metadata.uid.clone().unwrap_or_default();
        let mut pods = l.pods.by_index(BY_OWNER, &rs_uid).unwrap_or_default();
        pods.sort_by_key(|p| p.metadata.key());
        let ready = pods.iter().filter(|p| p.ready()).count();
        println!(
            "DEPLOYMENT {} revision={} replicaset={} ready={ready}/{}",
            d.metadata.key(),
            revision(current),
            current.metadata.name(),
            pods.len()
        );
        for p in pods {
            let pod_uid = p.metadata.uid.clone().unwrap_or_default();
            let events = l.events.by_index(BY_OBJECT, &pod_uid).unwrap_or_default();
            let latest = events
                .iter()
                .max_by(|a, b| a.when().cmp(b.when()))
                .map(|e| e.message.as_str())
                .unwrap_or("-");
            println!(
                "  POD {} phase={} ready={} event={latest:?}",
                p.metadata.key(),
                p.status.phase.as_deref().unwrap_or("Unknown"),
                p.ready()
            );
        }
    }
}

fn main() {
    // `RUST_LOG=info` (or `debug`, or `kube_informer=debug`) shows the library's log lines on
    // stderr; without it, errors only.
    env_logger::init();
    let mut args = std::env::args().skip(1);
    let (mut namespace, mut kubeconfig, mut context) = (None, None, None);
    let (mut demo, mut once, mut duration) = (false, false, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--namespace" | "-n" => namespace = args.next(),
            "--kubeconfig" => kubeconfig = args.next(),
            "--context" => context = args.next(),
            "--demo" => demo = true,
            "--once" => once = true,
            "--duration" => {
                duration = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .map(Duration::from_secs)
            }
            other => {
                eprintln!("deployment_pods: unknown argument {other:?}");
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
    let mut _demo_server = None;
    let client = match loaded {
        Some(Ok(c)) => {
            println!("deployment_pods: reading {}", c.source);
            c.client().unwrap_or_else(|e| fail(&e))
        }
        Some(Err(e)) => fail(&e),
        None => {
            println!("deployment_pods: no cluster configured (or --demo); running against the embedded test API server (demo)");
            let server = demo_cluster();
            let client = Client::new(server.client_config()).unwrap_or_else(|e| fail(&e));
            _demo_server = Some(server);
            client
        }
    };

    let factory = SharedInformerFactory::with_options(
        client,
        match &namespace {
            Some(ns) => FactoryOptions::new().namespace(ns),
            None => FactoryOptions::new(),
        }
        .strip_managed_fields(true),
    );
    let deployments = factory.informer::<Deployment>();
    let replicasets = factory.informer::<ReplicaSet>();
    let pods = factory.informer::<Pod>();
    let events = factory.informer::<Event>();
    replicasets
        .add_indexers([(BY_OWNER.to_string(), by_controller_uid::<ReplicaSet>())])
        .unwrap_or_else(|e| fail(&e));
    pods.add_indexers([(BY_OWNER.to_string(), by_controller_uid::<Pod>())])
        .unwrap_or_else(|e| fail(&e));
    let by_object: IndexFn<Event> =
        Arc::new(|e: &Event| Ok(e.involved_object.uid.iter().cloned().collect()));
    events
        .add_indexers([(BY_OBJECT.to_string(), by_object)])
        .unwrap_or_else(|e| fail(&e));

    // Any change marks the report stale; the main loop reprints it at most once a second.
    let dirty = Arc::new(AtomicBool::new(true));
    macro_rules! mark {
        ($informer:expr) => {{
            let (a, u, d) = (dirty.clone(), dirty.clone(), dirty.clone());
            $informer
                .add_event_handler(
                    $informer
                        .handler_fns()
                        .on_add(move |_, _| a.store(true, Ordering::SeqCst))
                        .on_update(move |_, _| u.store(true, Ordering::SeqCst))
                        .on_delete(move |_| d.store(true, Ordering::SeqCst)),
                )
                .unwrap_or_else(|e| fail(&e));
        }};
    }
    mark!(deployments);
    mark!(replicasets);
    mark!(pods);
    mark!(events);
    factory.start().unwrap_or_else(|e| fail(&e));
    let sync = factory.wait_for_cache_sync(Duration::from_secs(60));
    if !sync.all_synced() {
        eprintln!("deployment_pods: {sync}");
        std::process::exit(1);
    }
    let listers = Listers {
        deployments: deployments.lister(),
        replicasets: replicasets.lister(),
        pods: pods.lister(),
        events: events.lister(),
    };
    if once {
        report(&listers);
        factory.shutdown();
        return;
    }
    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    ctrlc::set_handler(move || {
        let _ = tx.try_send(());
    })
    .expect("install the Ctrl-C handler");
    let deadline = duration.map(|d| std::time::Instant::now() + d);
    loop {
        if dirty.swap(false, Ordering::SeqCst) {
            report(&listers);
        }
        if rx.recv_timeout(Duration::from_secs(1)).is_ok()
            || deadline.is_some_and(|d| std::time::Instant::now() >= d)
        {
            break;
        }
        if let Some(server) = &_demo_server {
            demo_step(server);
        }
    }
    factory.shutdown();
}

fn fail(e: &kube_informer::Error) -> ! {
    eprintln!("deployment_pods: {e}");
    std::process::exit(1)
}

fn owner(kind: &str, obj: &serde_json::Value) -> serde_json::Value {
    serde_json::json!([{
        "apiVersion": if kind == "Deployment" || kind == "ReplicaSet" { "apps/v1" } else { "v1" },
        "kind": kind, "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true
    }])
}

/// A Deployment mid-rollout: an old and a new ReplicaSet, their pods, and events.
fn demo_cluster() -> ApiServer {
    let server = ApiServer::start();
    let (deps, rss, pods, events) = (
        ApiResource::of::<Deployment>(),
        ApiResource::of::<ReplicaSet>(),
        ApiResource::of::<Pod>(),
        ApiResource::of::<Event>(),
    );
    let dep = server
        .create(&deps, serde_json::json!({"metadata": {"name": "web", "namespace": "lab"}, "spec": {"replicas": 3}}))
        .expect("demo deployment");
    for (rev, hash, count) in [(1, "5c6d7", 1), (2, "7d9f8", 3)] {
        let rs = server
            .create(&rss, serde_json::json!({"metadata": {"name": format!("web-{hash}"), "namespace": "lab",
                "annotations": {REVISION: rev.to_string()}, "ownerReferences": owner("Deployment", &dep)}}))
            .expect("demo replicaset");
        for i in 0..count {
            let name = format!("web-{hash}-{i}");
            let ready = if rev == 2 && i == 2 { "False" } else { "True" };
            let pod = server
                .create(&pods, serde_json::json!({
                    "metadata": {"name": name, "namespace": "lab", "ownerReferences": owner("ReplicaSet", &rs)},
                    "spec": {"readinessGates": [{"conditionType": "example.com/load-balancer-ready"}]},
                    "status": {"phase": "Running", "conditions": [
                        {"type": "ContainersReady", "status": "True"},
                        {"type": "example.com/load-balancer-ready", "status": ready}]}}))
                .expect("demo pod");
            for (n, msg) in [(0, "Pulled image \"web:v2\""), (1, "Started container app")] {
                server
                    .create(&events, serde_json::json!({
                        "metadata": {"name": format!("{name}.{n}"), "namespace": "lab"},
                        "involvedObject": {"kind": "Pod", "name": name, "namespace": "lab", "uid": pod["metadata"]["uid"]},
                        "reason": "Demo", "message": msg, "lastTimestamp": format!("2026-11-22T10:00:0{n}Z")}))
                    .expect("demo event");
            }
        }
    }
    server
}

/// One step of the demo: the last pod's load balancer becomes ready, with an event.
fn demo_step(server: &ApiServer) {
    let pods = ApiResource::of::<Pod>();
    let name = "web-7d9f8-2";
    let Ok(pod) = server.get(&pods, Some("lab"), name) else {
        return;
    };
    let gate_ready = pod["status"]["conditions"][1]["status"] == "True";
    if gate_ready {
        return;
    }
    let _ = server.patch(
        &pods,
        Some("lab"),
        name,
        &serde_json::json!({"status": {"conditions": [
        {"type": "ContainersReady", "status": "True"},
        {"type": "example.com/load-balancer-ready", "status": "True"}]}}),
    );
    let _ = server.create(&ApiResource::of::<Event>(), serde_json::json!({
        "metadata": {"name": format!("{name}.lb"), "namespace": "lab"},
        "involvedObject": {"kind": "Pod", "name": name, "namespace": "lab", "uid": pod["metadata"]["uid"]},
        "reason": "Demo", "message": "Registered with the load balancer", "lastTimestamp": "2026-11-22T10:00:09Z"}));
}
