//! Logs every pod event of a cluster, one greppable line per event; an update says what
//! changed:
//!
//! ```text
//! ADD lab/web-1 phase=Pending node=-
//! UPDATE lab/web-1 phase=Pending->Running ready=false->true node=node-a
//! UPDATE lab/web-1 labels+=tier=front labels~=app=web->shop annotations+=note node=node-a
//! UPDATE lab/web-1 deleting node=node-a
//! UPDATE lab/web-3 changed=status node=node-b
//! DELETE lab/web-1
//! DELETE lab/web-2 (tombstone)
//! ```
//!
//! An object delivered again unchanged (a relist, a resync) gets no line: it is not an event.
//!
//! With a kubeconfig (`$KUBECONFIG`, `~/.kube/config`) or inside a pod it watches that
//! cluster. With no cluster configured (or `--demo`) it says so on its first line and runs
//! against the embedded `testing::ApiServer` with a simulated workload: pods are created,
//! scheduled, become ready, restart, get deleted, and now and then the connection drops while
//! pods are deleted, so missed deletions show up as tombstones.
//!
//! In demo mode the network blips are simulated: each is announced on one line
//! (`pod_logger: demo: simulated network blip ...`) and the errors it causes are not printed;
//! any other error is.
//!
//! Flags: `--namespace NS`, `--selector SEL`, `--kubeconfig PATH`, `--context NAME`, `--demo`,
//! `--duration SECS` (stop by itself), `--stats` (a `STATS` line every 5 seconds: the
//! informer's health and counters, the handler's). Ctrl-C stops it cleanly, all threads
//! joined.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, LabelSelector, Object, ObjectMeta, Resource, StringMap};
use kube_informer::cache::{
    DeletedObject, EventHandler, InformerConfig, ReflectorConfig, SharedIndexInformer,
};
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client};
use serde::Deserialize;

/// Only the fields this program prints; everything else is skipped while decoding.
#[derive(Deserialize)]
struct Pod {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: PodSpec,
    #[serde(default)]
    status: PodStatus,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    node_name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodStatus {
    phase: Option<String>,
    #[serde(default)]
    container_statuses: Vec<ContainerStatus>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ContainerStatus {
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    restart_count: u32,
}

impl Object for Pod {
    type Meta = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for Pod {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Pod";
    const PLURAL: &'static str = "pods";
    const NAMESPACED: bool = true;
}

impl Pod {
    fn phase(&self) -> &str {
        self.status.phase.as_deref().unwrap_or("Unknown")
    }
    fn node(&self) -> &str {
        self.spec.node_name.as_deref().unwrap_or("-")
    }
    fn ready(&self) -> bool {
        !self.status.container_statuses.is_empty()
            && self.status.container_statuses.iter().all(|c| c.ready)
    }
    fn restarts(&self) -> u32 {
        self.status
            .container_statuses
            .iter()
            .map(|c| c.restart_count)
            .sum()
    }
}

struct Logger;

impl EventHandler<Pod> for Logger {
    fn on_add(&mut self, pod: Arc<Pod>, _initial: bool) {
        println!(
            "ADD {} phase={} node={}",
            pod.metadata.key(),
            pod.phase(),
            pod.node()
        );
    }

    fn on_update(&mut self, old: Arc<Pod>, new: Arc<Pod>) {
        if old.metadata.resource_version() == new.metadata.resource_version() {
            // Delivered again unchanged (a relist or a resync): not an event.
            return;
        }
        let mut changes = Vec::new();
        map_changes(
            "labels",
            &old.metadata.labels,
            &new.metadata.labels,
            true,
            &mut changes,
        );
        map_changes(
            "annotations",
            &old.metadata.annotations,
            &new.metadata.annotations,
            false,
            &mut changes,
        );
        if old.metadata.deletion_timestamp.is_none() && new.metadata.deletion_timestamp.is_some() {
            changes.push("deleting".to_owned());
        }
        if old.metadata.finalizers != new.metadata.finalizers {
            changes.push("finalizers".to_owned());
        }
        if old.phase() != new.phase() {
            changes.push(format!("phase={}->{}", old.phase(), new.phase()));
        }
        if old.ready() != new.ready() {
            changes.push(format!("ready={}->{}", old.ready(), new.ready()));
        }
        if old.restarts() != new.restarts() {
            changes.push(format!("restarts={}->{}", old.restarts(), new.restarts()));
        }
        let node_moved = old.node() != new.node();
        if changes.is_empty() && !node_moved {
            // Nothing this program decodes changed: say where the change was.
            let what = if old.metadata.generation != new.metadata.generation {
                "spec"
            } else {
                "status"
            };
            changes.push(format!("changed={what}"));
        }
        let node = if node_moved {
            format!("{}->{}", old.node(), new.node())
        } else {
            new.node().to_owned()
        };
        changes.push(format!("node={node}"));
        println!("UPDATE {} {}", new.metadata.key(), changes.join(" "));
    }

    fn on_delete(&mut self, gone: DeletedObject<Pod>) {
        let tomb = if gone.is_tombstone() {
            " (tombstone)"
        } else {
            ""
        };
        println!("DELETE {}{tomb}", gone.object().metadata.key());
    }
}

/// Label or annotation changes: `labels+=k=v`, `labels-=k`, `labels~=k=old->new`
/// (annotations by key only: their values can be long).
fn map_changes(
    what: &str,
    old: &Option<StringMap>,
    new: &Option<StringMap>,
    values: bool,
    out: &mut Vec<String>,
) {
    let empty = StringMap::new();
    let (old, new) = (
        old.as_ref().unwrap_or(&empty),
        new.as_ref().unwrap_or(&empty),
    );
    for (k, v) in new.iter() {
        match old.get(k) {
            None if values => out.push(format!("{what}+={k}={v}")),
            None => out.push(format!("{what}+={k}")),
            Some(was) if was != v && values => out.push(format!("{what}~={k}={was}->{v}")),
            Some(was) if was != v => out.push(format!("{what}~={k}")),
            Some(_) => {}
        }
    }
    for k in old.keys().filter(|k| !new.contains_key(k)) {
        out.push(format!("{what}-={k}"));
    }
}

#[derive(Default)]
struct Args {
    namespace: Option<String>,
    selector: Option<String>,
    kubeconfig: Option<String>,
    context: Option<String>,
    demo: bool,
    duration: Option<Duration>,
    stats: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match a.as_str() {
            "--namespace" | "-n" => args.namespace = Some(value("--namespace")?),
            "--selector" | "-l" => args.selector = Some(value("--selector")?),
            "--kubeconfig" => args.kubeconfig = Some(value("--kubeconfig")?),
            "--context" => args.context = Some(value("--context")?),
            "--demo" => args.demo = true,
            "--stats" => args.stats = true,
            "--duration" => {
                let v = value("--duration")?;
                let secs: u64 = v
                    .parse()
                    .map_err(|_| format!("--duration {v:?}: not a number of seconds"))?;
                args.duration = Some(Duration::from_secs(secs));
            }
            "--help" | "-h" => {
                println!("usage: pod_logger [--namespace NS] [--selector SEL] [--kubeconfig PATH] [--context NAME] [--demo] [--duration SECS] [--stats]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    if let Some(sel) = &args.selector {
        LabelSelector::parse(sel).map_err(|e| e.to_string())?;
    }
    Ok(args)
}

fn main() {
    // `RUST_LOG=info` (or `debug`, or `kube_informer=debug`) shows the library's log lines on
    // stderr; without it, errors only.
    env_logger::init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pod_logger: {e}");
            std::process::exit(2);
        }
    };
    let mut options = KubeconfigOptions::new();
    if let Some(v) = &args.kubeconfig {
        options = options.kubeconfig(v);
    }
    if let Some(v) = &args.context {
        options = options.context(v);
    }
    if let Some(v) = &args.namespace {
        options = options.namespace(v);
    }
    let loaded = if args.demo {
        None
    } else {
        Config::infer_if_configured(&options).transpose()
    };
    let (client, _demo) = match loaded {
        Some(Ok(config)) => {
            println!("pod_logger: watching pods through {}", config.source);
            match config.client() {
                Ok(c) => (c, None),
                Err(e) => {
                    eprintln!("pod_logger: {e}");
                    std::process::exit(1);
                }
            }
        }
        Some(Err(e)) => {
            eprintln!("pod_logger: {e}");
            std::process::exit(1);
        }
        None => {
            let why = if args.demo {
                "--demo given"
            } else {
                "no cluster configured"
            };
            println!("pod_logger: {why}; running against the embedded test API server with a simulated workload (demo)");
            let demo = Demo::start();
            (
                Client::new(demo.server.client_config()).expect("demo client"),
                Some(demo),
            )
        }
    };

    let api: Api<Pod> = match args.namespace.as_deref() {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    };
    let mut reflector = ReflectorConfig::new();
    if let Some(selector) = &args.selector {
        reflector = reflector.labels(selector);
    }
    let config = InformerConfig::new()
        .reflector(reflector)
        .transform(kube_informer::cache::strip_managed_fields());
    let simulated = _demo.as_ref().map(|d| Arc::clone(&d.blip));
    let config = config.on_watch_error(move |e| {
        // The demo's own blips were announced when they were made; real errors show.
        if !simulated.as_ref().is_some_and(|b| b.covers_now()) {
            eprintln!("pod_logger: watch: {e}");
        }
    });
    let informer = SharedIndexInformer::new(api, config);
    informer
        .add_event_handler(Logger)
        .expect("register the handler");
    informer.start().expect("start the informer");
    let _stats = args.stats.then(|| {
        let (informer, stop) = (informer.clone(), Arc::new(kube_informer::cache::StopSignal::new()));
        let s = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("pod_logger/stats".into())
            .spawn(move || {
                while !s.sleep(Duration::from_secs(5)) {
                    let h = informer.health();
                    let r = &h.reflector;
                    let relists: u64 = r.relists.values().sum();
                    let errors: u64 = r.errors.values().sum();
                    let handler = h.handlers.first().cloned().unwrap_or_default();
                    println!(
                        "STATS {} synced={} watching={} cached={} lists={} relists={relists} watch_restarts={} events={} bookmarks={} errors={errors} rv={} delivered={} coalesced={} backlog={} panics={}",
                        h.name, h.synced, h.watching, h.cached, r.lists, r.watch_restarts, r.events, r.bookmarks,
                        r.last_resource_version, handler.delivered, handler.coalesced, handler.backlog, handler.panics
                    );
                }
            })
            .expect("spawn the stats thread");
        StopOnDrop(stop, Some(thread))
    });

    let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(1);
    ctrlc::set_handler(move || {
        let _ = stop_tx.try_send(());
    })
    .expect("install the Ctrl-C handler");
    match args.duration {
        Some(d) => {
            let _ = stop_rx.recv_timeout(d);
        }
        None => {
            let _ = stop_rx.recv();
        }
    }
    let t = Instant::now();
    drop(_stats);
    informer.stop();
    drop(_demo);
    eprintln!("pod_logger: stopped in {:?}", t.elapsed());
}

/// Stops and joins a helper thread when dropped.
struct StopOnDrop(
    Arc<kube_informer::cache::StopSignal>,
    Option<std::thread::JoinHandle<()>>,
);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
        if let Some(t) = self.1.take() {
            let _ = t.join();
        }
    }
}

/// When the demo last simulated a network blip: the watch errors that follow for a few
/// seconds are its own doing, announced already.
#[derive(Default)]
struct Blip(parking_lot::Mutex<Option<Instant>>);

impl Blip {
    fn start(&self) {
        *self.0.lock() = Some(Instant::now());
    }
    fn covers_now(&self) -> bool {
        self.0
            .lock()
            .is_some_and(|at| at.elapsed() < Duration::from_secs(5))
    }
}

/// The embedded API server and a thread that plays a workload on it.
struct Demo {
    /// Stopped and joined first when the demo is dropped.
    _workload: StopOnDrop,
    server: Arc<ApiServer>,
    blip: Arc<Blip>,
}

impl Demo {
    fn start() -> Demo {
        let pods = ApiResource::of::<Pod>();
        let server = Arc::new(
            ApiServer::builder()
                .resource(&pods)
                .history_limit(50)
                .start(),
        );
        let stop = Arc::new(kube_informer::cache::StopSignal::new());
        let blip = Arc::new(Blip::default());
        let (s, st, b) = (Arc::clone(&server), Arc::clone(&stop), Arc::clone(&blip));
        let thread = std::thread::Builder::new()
            .name("pod_logger/demo-workload".into())
            .spawn(move || workload(&s, &pods, &st, &b))
            .expect("spawn the demo workload");
        Demo {
            _workload: StopOnDrop(stop, Some(thread)),
            server,
            blip,
        }
    }
}

fn pod_body(ns: &str, name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        "status": {"phase": "Pending"}
    })
}

/// Creates, schedules, readies, restarts and deletes pods; every tenth round the watch is
/// cut while two pods are deleted, so they come back as tombstones after the relist.
fn workload(
    server: &ApiServer,
    pods: &ApiResource,
    stop: &kube_informer::cache::StopSignal,
    blip: &Blip,
) {
    let nodes = ["node-a", "node-b", "node-c"];
    // (namespace, name, scheduled)
    let mut live: Vec<(String, String, bool)> = Vec::new();
    let mut n = 0u32;
    let mut round = 0u32;
    while !stop.sleep(Duration::from_millis(400)) {
        round += 1;
        let ns = if round % 2 == 0 { "shop" } else { "lab" };
        n += 1;
        let name = format!("web-{n}");
        if server.create(pods, pod_body(ns, &name)).is_ok() {
            live.push((ns.to_owned(), name, false));
        }
        let pending = live.len().saturating_sub(2);
        if let Some((ns, name, false)) = live.get(pending).cloned() {
            live[pending].2 = true;
            let node = nodes[(n as usize) % nodes.len()];
            let patch = serde_json::json!({
                "spec": {"nodeName": node},
                "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0}]}
            });
            let _ = server.patch(pods, Some(&ns), &name, &patch);
        }
        if round % 3 == 0 {
            if let Some((ns, name, _)) = live.first().cloned() {
                let patch = serde_json::json!({"status": {"containerStatuses": [{"name": "app", "ready": false, "restartCount": round / 3}]}});
                let _ = server.patch(pods, Some(&ns), &name, &patch);
            }
        }
        if round % 4 == 0 {
            // `kubectl label` / `kubectl annotate`: metadata-only updates.
            if let Some((ns, name, _)) = live.last().cloned() {
                let patch = serde_json::json!({"metadata": {
                    "labels": {"tier": "front", "app": if round % 8 == 0 { "shop" } else { "web" }},
                    "annotations": {"example.com/note": format!("round {round}")}
                }});
                let _ = server.patch(pods, Some(&ns), &name, &patch);
            }
        }
        if live.len() > 6 {
            let (ns, name, _) = live.remove(0);
            let _ = server.delete(pods, Some(&ns), &name);
        }
        if round % 10 == 0 && live.len() >= 2 {
            // A network blip: the watch drops, and while it is down two pods go away and the
            // server's history moves on, so the informer relists and infers the deletions.
            println!("pod_logger: demo: simulated network blip (watch cut, 503 on reconnect, 2 pods deleted meanwhile)");
            blip.start();
            server.inject(Target::Watch, Fault::status(503));
            server.disconnect_all();
            for _ in 0..2 {
                let (ns, name, _) = live.remove(0);
                let _ = server.delete(pods, Some(&ns), &name);
            }
            server.compact();
        }
    }
}
