//! A controller that scales out: ConfigMaps labelled `example.com/sharded=true` are spread
//! over the live replicas ("shards") of a ring, each replica caching and reconciling only
//! its part (see `kube_informer::controller::sharding`). The reconcile writes the annotation
//! `example.com/reconciled-by: <shard>` when it differs.
//!
//! Every replica runs a `Sharder` (one at a time, the leader, acts: it labels each object
//! with its shard) and a sharded `Controller` holding its own shard Lease.
//!
//! **Demo mode** (no cluster configured, or `--demo`): three replicas in one process against
//! the embedded test API server. It creates 30 objects, waits until they are spread, stops
//! one replica cleanly, adds another, and prints every change of the ring and every move
//! (`ASSIGN`, `DRAIN`, `MOVE`, `FENCE`), each replica's object count after each step
//! (`COUNT`), how many objects the join moved (`MOVED`), and at the end the `EXCLUSIVE` line:
//! every reconcile is instrumented with enter/exit, and no object was ever inside two
//! shards' reconciles at once.
//!
//! **Against a cluster**, one replica per process:
//! `cargo run --example sharded_controller -- --shard-id replica-0 --namespace lab`
//! (the id defaults to `$POD_NAME` or `$HOSTNAME`; the ring `sharded-demo`; the shard
//! Leases, the sharder's Lease and the ConfigMaps in `--namespace`, default the
//! kubeconfig's namespace). Start two or three, create ConfigMaps with the label, stop and
//! start replicas, and watch them move. It prints `RECONCILE <key> by <shard>` and a
//! `COUNT` line every 10 s. Needs (RBAC): configmaps get/list/watch/patch, leases
//! get/list/watch/create/update/patch in the namespace.
//!
//! Flags: `--kubeconfig PATH`, `--context NAME`, `--demo`, `--shard-id ID`,
//! `--namespace NS`, `--ring NAME`, `--duration SECS`. Ctrl-C stops it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::{SharedIndexInformer, SharedInformerFactory};
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::controller::sharding::{
    shard_for, Ring, ShardConfig, Sharder, SharderConfig, ShardingEvent,
};
use kube_informer::controller::{Action, Controller, LeaderElectionConfig};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, Patch, PatchParams};
use parking_lot::Mutex;

const SELECTOR: &str = "example.com/sharded=true";

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn fail(e: &dyn std::fmt::Display) -> ! {
    eprintln!("sharded_controller: error: {e}");
    std::process::exit(1)
}

/// Who is inside which object's reconcile, to prove exclusivity.
#[derive(Default)]
struct Exclusivity {
    inside: Mutex<HashMap<String, String>>,
    reconciles: AtomicUsize,
    overlaps: Mutex<Vec<String>>,
    max_inside: AtomicUsize,
}

impl Exclusivity {
    fn enter(&self, key: &str, shard: &str) {
        let mut inside = self.inside.lock();
        if let Some(other) = inside.insert(key.to_owned(), shard.to_owned()) {
            self.overlaps
                .lock()
                .push(format!("{key}: {shard} while {other}"));
            self.max_inside.store(2, Ordering::SeqCst);
        } else {
            self.max_inside.fetch_max(1, Ordering::SeqCst);
        }
    }

    fn exit(&self, key: &str, shard: &str) {
        let mut inside = self.inside.lock();
        if inside.get(key).map(String::as_str) == Some(shard) {
            inside.remove(key);
        }
        self.reconciles.fetch_add(1, Ordering::SeqCst);
    }
}

struct Replica {
    id: String,
    sharder: Sharder,
    controller: Controller<DynamicObject>,
    informer: SharedIndexInformer<DynamicObject>,
    factory: SharedInformerFactory,
}

impl Replica {
    fn stop(self) {
        self.controller.stop();
        self.sharder.stop();
        self.factory.shutdown();
    }
}

struct Settings {
    ring: Ring,
    namespace: String,
    demo: bool,
    verbose: bool,
}

/// Whether sharder events are printed (the demo stops printing them while it shuts down).
static PRINT_EVENTS: AtomicBool = AtomicBool::new(true);

fn print_event(e: &ShardingEvent) {
    if !PRINT_EVENTS.load(Ordering::SeqCst) {
        return;
    }
    match e {
        ShardingEvent::Membership { live } => println!("RING live={}", live.join(",")),
        ShardingEvent::Assigned { key, shard } => println!("ASSIGN {key} -> {shard}"),
        ShardingEvent::Draining { key, from, to } => println!("DRAIN {key} {from} -> {to}"),
        ShardingEvent::Moved { key, from, to } => {
            println!(
                "MOVE {key} {from} -> {} (fenced)",
                to.as_deref().unwrap_or("-")
            )
        }
        ShardingEvent::Fenced { shard } => println!("FENCE {shard}"),
        ShardingEvent::Unfenced { shard } => println!("UNFENCE {shard}"),
    }
}

fn start_replica(
    client: Client,
    id: &str,
    settings: &Settings,
    exclusivity: &Arc<Exclusivity>,
) -> kube_informer::Result<Replica> {
    let timings = |c: LeaderElectionConfig| {
        if settings.demo {
            c.lease_duration(Duration::from_secs(4))
                .renew_deadline(Duration::from_secs(2))
                .retry_period(Duration::from_millis(500))
        } else {
            c
        }
    };
    let ring = settings.ring.clone();
    let mut sharder_config = SharderConfig::new(ring.clone(), &configmaps(), id)
        .namespace(&settings.namespace)
        .selector(SELECTOR)
        .leader_election(timings(LeaderElectionConfig::new(
            ring.namespace(),
            &ring.sharder_lease(),
            id,
        )))
        .on_event(print_event);
    if settings.demo {
        sharder_config = sharder_config.fence_duration(Duration::from_secs(4));
    }
    let sharder = Sharder::start(client.clone(), sharder_config)?;

    // The controller as it would be unsharded, plus the shard: a few lines.
    let mut shard = ShardConfig::new(ring, id)?;
    if settings.demo {
        shard = shard
            .lease_duration(Duration::from_secs(4))
            .renew_deadline(Duration::from_secs(2))
            .retry_period(Duration::from_millis(500));
    }
    let options = shard.factory_options().namespace(&settings.namespace);
    let factory = SharedInformerFactory::with_options(client.clone(), options);
    let informer = factory.dynamic_informer(&configmaps());
    let lister = informer.lister();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &settings.namespace, &configmaps());
    let (me, exclusivity, verbose) = (id.to_owned(), Arc::clone(exclusivity), settings.verbose);
    let controller = Controller::builder(&format!("sharded-{id}"), informer.clone())
        .sharded(client, shard)
        .run(move |key: &str| -> kube_informer::Result<Action> {
            exclusivity.enter(key, &me);
            let result = reconcile(key, &me, &lister, &api, verbose);
            exclusivity.exit(key, &me);
            result
        })?;
    Ok(Replica {
        id: id.to_owned(),
        sharder,
        controller,
        informer,
        factory,
    })
}

/// The controller's job: say who reconciled the object, in an annotation.
fn reconcile(
    key: &str,
    me: &str,
    lister: &kube_informer::cache::Lister<DynamicObject>,
    api: &Api<DynamicObject>,
    verbose: bool,
) -> kube_informer::Result<Action> {
    let (ns, name) = kube_informer::controller::split_key(key)?;
    let Some(cm) = lister.get(ns, name) else {
        return Ok(Action::Done);
    };
    if verbose {
        println!("RECONCILE {key} by {me}");
    }
    if cm.metadata.annotation("example.com/reconciled-by") != Some(me) {
        let patch =
            serde_json::json!({"metadata": {"annotations": {"example.com/reconciled-by": me}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch))?;
    }
    Ok(Action::Done)
}

fn counts(replicas: &[Replica]) -> String {
    replicas
        .iter()
        .map(|r| format!("{}={}", r.id, r.informer.store().len()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every object labelled as the assignment over `live` says, and each replica caching
/// exactly its share.
fn converged(server: &ApiServer, ring: &Ring, live: &[&str], replicas: &[Replica]) -> bool {
    let objects = server.list(&configmaps(), Some("lab"));
    let mut per_shard: HashMap<String, usize> = HashMap::new();
    for o in &objects {
        let key = format!("lab/{}", o["metadata"]["name"].as_str().unwrap_or(""));
        let labels = &o["metadata"]["labels"];
        let want = shard_for(&key, live);
        if labels[ring.shard_label()].as_str() != want || !labels[ring.drain_label()].is_null() {
            return false;
        }
        *per_shard.entry(want.unwrap_or("").to_owned()).or_default() += 1;
    }
    replicas
        .iter()
        .all(|r| r.informer.store().len() == per_shard.get(&r.id).copied().unwrap_or(0))
}

fn wait_converged(server: &ApiServer, ring: &Ring, live: &[&str], replicas: &[Replica]) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !converged(server, ring, live, replicas) {
        if Instant::now() > deadline {
            fail(&format!("the ring {live:?} did not converge within 120 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("COUNT {} (converged)", counts(replicas));
}

fn demo(exclusivity: &Arc<Exclusivity>) {
    println!("sharded_controller: no cluster configured (or --demo); running three replicas against the embedded test API server (demo)");
    let server = ApiServer::start();
    let settings = Settings {
        ring: Ring::new("sharded-demo", "lab").unwrap_or_else(|e| fail(&e)),
        namespace: "lab".into(),
        demo: true,
        verbose: false,
    };
    let replica = |id: &str| {
        let client = Client::new(server.client_config()).unwrap_or_else(|e| fail(&e));
        let r = start_replica(client, id, &settings, exclusivity).unwrap_or_else(|e| fail(&e));
        println!("JOIN {id}");
        r
    };
    let mut replicas = vec![
        replica("replica-a"),
        replica("replica-b"),
        replica("replica-c"),
    ];
    for i in 0..30 {
        let cm = serde_json::json!({"metadata": {"name": format!("item-{i:02}"), "namespace": "lab",
            "labels": {"example.com/sharded": "true"}}, "data": {"n": i.to_string()}});
        server
            .create(&configmaps(), cm)
            .unwrap_or_else(|e| fail(&format!("{e:?}")));
    }
    let ring = settings.ring.clone();
    wait_converged(
        &server,
        &ring,
        &["replica-a", "replica-b", "replica-c"],
        &replicas,
    );

    let b = replicas.remove(1);
    println!("STOP replica-b (clean: it releases its Lease)");
    b.stop();
    wait_converged(&server, &ring, &["replica-a", "replica-c"], &replicas);

    let before: HashMap<String, Option<String>> = server
        .list(&configmaps(), Some("lab"))
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap_or("").to_owned();
            let shard = o["metadata"]["labels"][ring.shard_label()]
                .as_str()
                .map(str::to_owned);
            (name, shard)
        })
        .collect();
    replicas.push(replica("replica-d"));
    wait_converged(
        &server,
        &ring,
        &["replica-a", "replica-c", "replica-d"],
        &replicas,
    );
    let moved = server
        .list(&configmaps(), Some("lab"))
        .iter()
        .filter(|o| {
            let name = o["metadata"]["name"].as_str().unwrap_or("");
            let now = o["metadata"]["labels"][ring.shard_label()].as_str();
            before.get(name).and_then(|s| s.as_deref()) != now
        })
        .count();
    println!(
        "MOVED {moved} of {} objects to replica-d ({:.0}%, 1/3 expected)",
        before.len(),
        100.0 * moved as f64 / before.len().max(1) as f64
    );
    PRINT_EVENTS.store(false, Ordering::SeqCst);
    for r in replicas {
        r.stop();
    }
}

fn main() {
    // `RUST_LOG=info` (or `debug`, or `kube_informer=debug`) shows the library's log lines on
    // stderr; without it, errors only.
    env_logger::init();
    let mut args = std::env::args().skip(1);
    let (mut kubeconfig, mut context, mut demo_mode, mut duration) = (None, None, false, None);
    let (mut shard_id, mut namespace, mut ring_name) = (None, None, "sharded-demo".to_owned());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--kubeconfig" => kubeconfig = args.next(),
            "--context" => context = args.next(),
            "--demo" => demo_mode = true,
            "--shard-id" => shard_id = args.next(),
            "--namespace" => namespace = args.next(),
            "--ring" => ring_name = args.next().unwrap_or(ring_name),
            "--duration" => {
                duration = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .map(Duration::from_secs)
            }
            other => {
                eprintln!("sharded_controller: unknown argument {other:?}");
                std::process::exit(2);
            }
        }
    }
    let exclusivity = Arc::new(Exclusivity::default());
    let mut options = KubeconfigOptions::new();
    if let Some(v) = &kubeconfig {
        options = options.kubeconfig(v);
    }
    if let Some(v) = &context {
        options = options.context(v);
    }
    let loaded = if demo_mode {
        None
    } else {
        Config::infer_if_configured(&options).transpose()
    };
    match loaded {
        None => demo(&exclusivity),
        Some(Err(e)) => fail(&e),
        Some(Ok(config)) => {
            let client = config.client().unwrap_or_else(|e| fail(&e));
            let namespace = namespace.unwrap_or_else(|| client.default_namespace().to_owned());
            let id = shard_id
                .or_else(|| std::env::var("POD_NAME").ok())
                .or_else(|| std::env::var("HOSTNAME").ok())
                .unwrap_or_else(|| fail(&"no --shard-id (and no $POD_NAME or $HOSTNAME)"));
            let settings = Settings {
                ring: Ring::new(&ring_name, &namespace).unwrap_or_else(|e| fail(&e)),
                namespace,
                demo: false,
                verbose: true,
            };
            println!(
                "sharded_controller: shard {id} of ring {} through {}",
                settings.ring.name(),
                config.source
            );
            let replica =
                start_replica(client, &id, &settings, &exclusivity).unwrap_or_else(|e| fail(&e));
            let (tx, rx) = crossbeam_channel::bounded::<()>(1);
            ctrlc::set_handler(move || {
                let _ = tx.try_send(());
            })
            .unwrap_or_else(|e| fail(&e));
            let end = duration.map(|d| Instant::now() + d);
            loop {
                let left = end.map_or(Duration::from_secs(10), |e| {
                    e.saturating_duration_since(Instant::now())
                        .min(Duration::from_secs(10))
                });
                if rx.recv_timeout(left).is_ok() || end.is_some_and(|e| Instant::now() >= e) {
                    break;
                }
                println!(
                    "COUNT {} live={}",
                    counts(std::slice::from_ref(&replica)),
                    replica.controller.is_leader()
                );
            }
            replica.stop();
        }
    }
    let overlaps = exclusivity.overlaps.lock();
    if overlaps.is_empty() {
        println!(
            "EXCLUSIVE {} reconciles, at most {} shard inside any object's reconcile at once",
            exclusivity.reconciles.load(Ordering::SeqCst),
            exclusivity.max_inside.load(Ordering::SeqCst)
        );
    } else {
        println!("OVERLAP {} times: {overlaps:?}", overlaps.len());
        std::process::exit(1);
    }
}
