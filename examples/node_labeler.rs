//! A controller that labels nodes: every Node whose name starts with `gpu-` (or that carries
//! the label `accelerator`) gets `example.com/pool=gpu` through server-side apply, as the
//! field manager `node-labeler`: the label is recorded as ours in `managedFields`, other
//! managers' labels are untouched, and a label another manager owns is taken over (`force`,
//! the usual choice of a controller that is the authority for its field). Failed applies are
//! retried with rate-limited back-off; a node already labelled is left alone.
//!
//! Runs against your cluster (kubeconfig or in-cluster) — it will really patch nodes there —
//! or, with no cluster configured or `--demo`, against the embedded test API server where
//! nodes join over time and some patches fail on purpose.
//!
//! With `--leader-elect`, the workers run only while this replica holds the Lease
//! `node-labeler` (in the client's default namespace; the identity is `$POD_NAME` or
//! `$HOSTNAME`, with a random suffix): run two or three replicas, one labels. In demo mode it
//! runs two replicas in one process, prints `LEADER replica-a` (or `-b`) when one starts
//! leading, stops the leader half way through, and shows the other take over.
//!
//! For each label it sets it records an Event (`events.k8s.io/v1`, reason `Labelled`,
//! action `Label`) about the node, without ever waiting on it (see `EventRecorder`); the
//! demo prints the Events the test API server holds at the end (`EVENT Labelled Node/gpu-3
//! ...`).
//!
//! It runs under a `Manager` (one informer factory, the leader election, a clean stop): with
//! `--probe-addr HOST:PORT` it serves `/healthz`, `/readyz` and, built with the `metrics`
//! feature (`cargo run --example node_labeler --features metrics -- --demo --probe-addr
//! 127.0.0.1:8081`), `/metrics` there (in the two-replica demo, replica b serves them).
//!
//! Flags: `--kubeconfig PATH`, `--context NAME`, `--demo`, `--duration SECS`,
//! `--leader-elect`, `--probe-addr HOST:PORT`. Ctrl-C or SIGTERM stops it within the
//! manager's grace period (10 s).

use std::sync::Arc;
use std::time::Duration;

use kube_informer::api::{ApiResource, Object, ObjectMeta, Resource};
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::controller::{
    Action, Controller, EventRecorder, EventRecorderConfig, EventType, LeaderElectionConfig,
    ObjectReference,
};
use kube_informer::manager::Manager;
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client};
use kube_informer::{Patch, PatchParams};
use serde::Deserialize;

const LABEL: &str = "example.com/pool";

/// Who this controller is in `managedFields`.
const FIELD_MANAGER: &str = "node-labeler";

/// Who this controller is in its Events (`reportingController`).
const REPORTING_CONTROLLER: &str = "example.com/node-labeler";

#[derive(Deserialize)]
struct Node {
    metadata: ObjectMeta,
}

impl Object for Node {
    type Meta = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Resource for Node {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Node";
    const PLURAL: &'static str = "nodes";
    const NAMESPACED: bool = false;
}

/// The rule: which nodes get the label.
fn wants_label(node: &Node) -> bool {
    node.metadata.name().starts_with("gpu-") || node.metadata.label("accelerator").is_some()
}

fn main() {
    // `RUST_LOG=info` (or `debug`, or `kube_informer=debug`) shows the library's log lines on
    // stderr; without it, errors only.
    env_logger::init();
    let mut args = std::env::args().skip(1);
    let (mut kubeconfig, mut context, mut demo, mut duration) = (None, None, false, None);
    let (mut leader_elect, mut probe_addr) = (false, None::<String>);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--kubeconfig" => kubeconfig = args.next(),
            "--context" => context = args.next(),
            "--demo" => demo = true,
            "--leader-elect" => leader_elect = true,
            "--probe-addr" => probe_addr = args.next(),
            "--duration" => {
                duration = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .map(Duration::from_secs)
            }
            other => {
                eprintln!("node_labeler: unknown argument {other:?}");
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
    let mut demo_server = None;
    let mut demo_api = None;
    let client = match loaded {
        Some(Ok(c)) => {
            println!("node_labeler: labelling nodes through {}", c.source);
            c.client().unwrap_or_else(|e| fail(&e))
        }
        Some(Err(e)) => fail(&e),
        None => {
            println!("node_labeler: no cluster configured (or --demo); running against the embedded test API server (demo)");
            let server = Arc::new(
                ApiServer::builder()
                    .resource(&ApiResource::of::<Node>())
                    .start(),
            );
            let client = Client::new(server.client_config()).unwrap_or_else(|e| fail(&e));
            demo_server = Some(Demo::start(Arc::clone(&server)));
            demo_api = Some(server);
            client
        }
    };

    let mut recorders = Vec::new();
    let replicas = match (leader_elect, demo_server.is_some()) {
        (false, _) => vec![run_replica(
            client,
            None,
            &mut recorders,
            probe_addr.as_deref(),
        )],
        (true, false) => {
            let id = std::env::var("POD_NAME")
                .or_else(|_| std::env::var("HOSTNAME"))
                .unwrap_or_else(|_| "node-labeler".into());
            let id = format!("{id}_{:08x}", std::process::id() ^ random_u32());
            let ns = client.default_namespace().to_owned();
            let election = LeaderElectionConfig::new(&ns, "node-labeler", &id);
            vec![run_replica(
                client,
                Some(election),
                &mut recorders,
                probe_addr.as_deref(),
            )]
        }
        (true, true) => {
            // Two replicas in one process, each with its own cache and elector; short
            // timings so the demo shows a hand-over in seconds.
            let election = |id: &str| {
                LeaderElectionConfig::new("default", "node-labeler", id)
                    .lease_duration(Duration::from_secs(4))
                    .renew_deadline(Duration::from_secs(2))
                    .retry_period(Duration::from_millis(500))
            };
            vec![
                // The probes go with replica b, which runs to the end of the demo (replica a
                // may be the leader that is stopped half way).
                run_replica(
                    client.clone(),
                    Some(election("replica-a")),
                    &mut recorders,
                    None,
                ),
                run_replica(
                    client,
                    Some(election("replica-b")),
                    &mut recorders,
                    probe_addr.as_deref(),
                ),
            ]
        }
    };

    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    ctrlc::set_handler(move || {
        let _ = tx.try_send(());
    })
    .expect("install the Ctrl-C handler");
    let mut replicas = replicas;
    if replicas.len() == 2 {
        // Demo hand-over: let the first leader work for half the time, stop it, and let
        // the other take over for the rest.
        let half = duration.map(|d| d / 2);
        let leader = wait_for_leader(&replicas, &rx);
        let wait = half.map_or_else(|| rx.recv().is_ok(), |h| rx.recv_timeout(h).is_ok());
        if let (Some(i), false) = (leader, wait) {
            let manager = replicas.remove(i);
            println!("node_labeler: stopping the leader (it releases the lease)");
            if let Err(e) = manager.stop() {
                eprintln!("node_labeler: {e}");
            }
            wait_for_leader(&replicas, &rx);
            duration = half;
        } else {
            duration = Some(Duration::ZERO);
        }
    }
    match duration {
        Some(d) => {
            let _ = rx.recv_timeout(d);
        }
        None => {
            let _ = rx.recv();
        }
    }
    for manager in replicas {
        // Within the grace period: the workers finish their keys, the lease is released.
        if let Err(e) = manager.stop() {
            eprintln!("node_labeler: {e}");
        }
    }
    for r in recorders {
        let s = r.stats();
        r.stop();
        println!(
            "node_labeler: events queued={} created={} patched={} dropped={} rate_limited={} failed={}",
            s.queued,
            s.created,
            s.patched,
            s.dropped_queue_full,
            s.rate_limited,
            s.failed
        );
    }
    drop(demo_server);
    if let Some(server) = demo_api {
        // What a `kubectl get events` would show in the demo cluster.
        let events = ApiResource::new("events.k8s.io", "v1", "Event", "events", true);
        for e in server.list(&events, Some("default")) {
            let s = |p: &str| {
                e.pointer(p)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_owned()
            };
            println!(
                "EVENT {} {}/{} by {}: {}",
                s("/reason"),
                s("/regarding/kind"),
                s("/regarding/name"),
                s("/reportingInstance"),
                s("/note")
            );
        }
    }
}

/// Waits (at most 30 s, or until Ctrl-C) for one of the replicas to lead; its index.
fn wait_for_leader(
    replicas: &[Manager],
    ctrl_c: &crossbeam_channel::Receiver<()>,
) -> Option<usize> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if let Some(i) = replicas.iter().position(Manager::is_leader) {
            return Some(i);
        }
        if ctrl_c.recv_timeout(Duration::from_millis(50)).is_ok() {
            return None;
        }
    }
    None
}

fn random_u32() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

/// One replica: a manager with its own informer factory and the controller (under leader
/// election when given), serving probes (and, with the `metrics` feature, `/metrics`) on
/// `probe_addr`.
fn run_replica(
    client: Client,
    election: Option<LeaderElectionConfig>,
    recorders: &mut Vec<EventRecorder>,
    probe_addr: Option<&str>,
) -> Manager {
    let instance = election
        .as_ref()
        .map_or_else(|| "node-labeler".to_owned(), |e| e.identity.clone());
    let recorder = EventRecorder::start(
        client.clone(),
        EventRecorderConfig::new(REPORTING_CONTROLLER, &instance),
    )
    .unwrap_or_else(|e| fail(&e));
    recorders.push(recorder.clone());
    let mut manager = Manager::builder(client.clone()).grace_period(Duration::from_secs(10));
    let informer = manager.factory().informer::<Node>();
    let lister = informer.lister();
    let nodes: Api<Node> = Api::all(client);
    if let Some(election) = election {
        let id = election.identity.clone();
        manager = manager
            .leader_election(election)
            .on_leadership(move |leading| match leading {
                true => println!("LEADER {id}"),
                false => println!("FOLLOWER {id}"),
            });
    }
    if let Some(addr) = probe_addr {
        manager = manager.probe_addr(addr);
    }
    let controller = Controller::builder("node-labeler", informer).workers(2);
    let recorder2 = recorder.clone();
    let manager = manager
        .controller(
            controller,
            move |name: &str| -> Result<Action, kube_informer::Error> {
                let Some(node) = lister.get(None, name) else {
                    return Ok(Action::Done); // deleted meanwhile
                };
                if !wants_label(&node) || node.metadata.label(LABEL) == Some("gpu") {
                    return Ok(Action::Done);
                }
                // Only the fields this controller owns: apiVersion, kind, name, and its label.
                let mine = serde_json::json!({
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {LABEL: "gpu"}}
                });
                let params = PatchParams::apply(FIELD_MANAGER).force();
                match nodes.patch(name, &params, &Patch::Apply(mine)) {
                    Ok(_) => {
                        println!("LABELED {name} {LABEL}=gpu");
                        // Queued, never waited on: a slow or absent events API costs nothing here.
                        recorder2.record(
                            &ObjectReference::from_object(&ApiResource::of::<Node>(), &*node),
                            EventType::Normal,
                            "Labelled",
                            "Label",
                            &format!("set {LABEL}=gpu (server-side apply as {FIELD_MANAGER})"),
                        );
                        Ok(Action::Done)
                    }
                    Err(e) => {
                        println!("RETRY {name}: {e}");
                        Err(e)
                    }
                }
            },
        )
        .start()
        .unwrap_or_else(|e| fail(&e));
    #[cfg(feature = "metrics")]
    manager.metrics().register_event_recorder(&recorder);
    if let Some(addr) = manager.probe_addr() {
        println!("node_labeler: probes on http://{addr}/healthz, /readyz, /metrics");
    }
    manager
}

fn fail(e: &kube_informer::Error) -> ! {
    eprintln!("node_labeler: {e}");
    std::process::exit(1)
}

/// Nodes join the demo cluster one by one; now and then a patch fails.
struct Demo {
    stop: Arc<kube_informer::cache::StopSignal>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Demo {
    fn start(server: Arc<ApiServer>) -> Demo {
        let stop = Arc::new(kube_informer::cache::StopSignal::new());
        let st = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("node_labeler/demo".into())
            .spawn(move || {
                let nodes = ApiResource::of::<Node>();
                let mut i = 0;
                while !st.sleep(Duration::from_millis(500)) {
                    i += 1;
                    let (name, labels) = match i % 3 {
                        0 => (format!("gpu-{i}"), serde_json::json!({})),
                        1 => (format!("cpu-{i}"), serde_json::json!({})),
                        _ => (
                            format!("edge-{i}"),
                            serde_json::json!({"accelerator": "tpu"}),
                        ),
                    };
                    if i % 4 == 0 {
                        server.inject(Target::Write, Fault::status(503));
                    }
                    println!("JOINED {name}");
                    let _ = server.create(
                        &nodes,
                        serde_json::json!({"metadata": {"name": name, "labels": labels}}),
                    );
                }
            })
            .expect("spawn the demo");
        Demo {
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
