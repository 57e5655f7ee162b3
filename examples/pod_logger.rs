//! Logs every pod event of a cluster, one greppable line per event:
//!
//! ```text
//! ADD lab/web-1 phase=Pending node=-
//! UPDATE lab/web-1 phase=Pending->Running ready=false->true node=node-a
//! DELETE lab/web-1
//! DELETE lab/web-2 (tombstone)
//! ```
//!
//! With a kubeconfig (`$KUBECONFIG`, `~/.kube/config`) or inside a pod it watches that
//! cluster. With no cluster configured (or `--demo`) it says so on its first line and runs
//! against the embedded `testing::ApiServer` with a simulated workload: pods are created,
//! scheduled, become ready, restart, get deleted, and now and then the connection drops while
//! pods are deleted, so missed deletions show up as tombstones.
//!
//! Flags: `--namespace NS`, `--selector SEL`, `--kubeconfig PATH`, `--context NAME`, `--demo`,
//! `--duration SECS` (stop by itself). Ctrl-C stops it cleanly, all threads joined.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, LabelSelector, Object, ObjectMeta, Resource};
use kube_informer::cache::{DeletedObject, EventHandler, InformerConfig, SharedIndexInformer};
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
        let mut changes = Vec::new();
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
            // Metadata-only changes and resyncs are not worth a line.
            return;
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

#[derive(Default)]
struct Args {
    namespace: Option<String>,
    selector: Option<String>,
    kubeconfig: Option<String>,
    context: Option<String>,
    demo: bool,
    duration: Option<Duration>,
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
            "--duration" => {
                let v = value("--duration")?;
                let secs: u64 = v
                    .parse()
                    .map_err(|_| format!("--duration {v:?}: not a number of seconds"))?;
                args.duration = Some(Duration::from_secs(secs));
            }
            "--help" | "-h" => {
                println!("usage: pod_logger [--namespace NS] [--selector SEL] [--kubeconfig PATH] [--context NAME] [--demo] [--duration SECS]");
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
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pod_logger: {e}");
            std::process::exit(2);
        }
    };
    let options = KubeconfigOptions {
        context: args.context.clone(),
        namespace: args.namespace.clone(),
        ..Default::default()
    };
    let loaded = if args.demo {
        None
    } else if let Some(path) = &args.kubeconfig {
        Some(Config::from_kubeconfig_with(path, &options))
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
    let mut config = InformerConfig::default();
    config.reflector.label_selector = args.selector.clone();
    config.transform = Some(kube_informer::cache::strip_managed_fields());
    let config = config.on_watch_error(|e| eprintln!("pod_logger: watch: {e}"));
    let informer = SharedIndexInformer::new(api, config);
    informer
        .add_event_handler(Logger)
        .expect("register the handler");
    informer.start().expect("start the informer");

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
    informer.stop();
    drop(_demo);
    eprintln!("pod_logger: stopped in {:?}", t.elapsed());
}

/// The embedded API server and a thread that plays a workload on it.
struct Demo {
    server: Arc<ApiServer>,
    stop: Arc<kube_informer::cache::StopSignal>,
    thread: Option<std::thread::JoinHandle<()>>,
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
        let (s, st) = (Arc::clone(&server), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("pod_logger/demo-workload".into())
            .spawn(move || workload(&s, &pods, &st))
            .expect("spawn the demo workload");
        Demo {
            server,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
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
fn workload(server: &ApiServer, pods: &ApiResource, stop: &kube_informer::cache::StopSignal) {
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
        if live.len() > 6 {
            let (ns, name, _) = live.remove(0);
            let _ = server.delete(pods, Some(&ns), &name);
        }
        if round % 10 == 0 && live.len() >= 2 {
            // A network blip: the watch drops, and while it is down two pods go away and the
            // server's history moves on, so the informer relists and infers the deletions.
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
