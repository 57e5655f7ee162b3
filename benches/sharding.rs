//! Sharding benchmark: prints figures, asserts nothing.
//!
//! 1. Memory per replica: `testing::ApiServer` (in this process) serves N ConfigMaps
//!    (~1 KiB of data each) already labelled for a ring of 1, 2 or 4 shards (the rendezvous
//!    assignment); one shard runs in a child process (a sharded `Controller` with its
//!    informer on its shard label, reconciling every object once) and reports its peak RSS
//!    once all its objects were reconciled. The sharder (a metadata-only informer of all N)
//!    is measured the same way, in a child of its own.
//! 2. Join to balance: 3 replicas (sharder + sharded controller each) in this process with M
//!    objects spread over them; a 4th joins; the time until every object is labelled as the
//!    assignment over 4 says and each replica caches exactly its share, and the fraction of
//!    objects that moved.
//!
//! `cargo bench --bench sharding` (N = 100000, M = 10000); `cargo bench --bench sharding --
//! 20000 5000` for other sizes. Clients run without a client-side rate limit (qps 0).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::SharedInformerFactory;
use kube_informer::controller::sharding::{shard_for, Ring, ShardConfig, Sharder, SharderConfig};
use kube_informer::controller::{Action, Controller, LeaderElectionConfig};
use kube_informer::testing::ApiServer;
use kube_informer::{Client, ClientConfig};

fn configmaps() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

fn ring() -> Ring {
    Ring::new("bench", "default").unwrap()
}

fn shard_ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("replica-{i}")).collect()
}

/// Peak resident memory of this process (VmHWM), in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn unlimited(mut c: ClientConfig) -> ClientConfig {
    c.qps = 0.0;
    c
}

fn timings(c: LeaderElectionConfig) -> LeaderElectionConfig {
    c.lease_duration(Duration::from_secs(4))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(500))
}

fn shard_config(id: &str) -> ShardConfig {
    ShardConfig::new(ring(), id)
        .unwrap()
        .lease_duration(Duration::from_secs(4))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_millis(500))
}

fn object(i: usize, shard: Option<&str>) -> serde_json::Value {
    let name = format!("cm-{i:06}");
    let mut labels = serde_json::json!({"app": "bench"});
    if let Some(s) = shard {
        labels[ring().shard_label()] = s.into();
    }
    serde_json::json!({"metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": {"payload": "x".repeat(1000)}})
}

/// Child: one shard; prints its object count and peak RSS once all were reconciled.
fn replica_child(url_config: ClientConfig, id: &str, expect: usize) {
    let client = Client::new(unlimited(url_config)).unwrap();
    let shard = shard_config(id);
    let factory = SharedInformerFactory::with_options(client.clone(), shard.factory_options());
    let informer = factory.dynamic_informer(&configmaps());
    let done = Arc::new(AtomicUsize::new(0));
    let d = Arc::clone(&done);
    let started = Instant::now();
    let controller = Controller::builder("bench", informer.clone())
        .workers(4)
        .sharded(client, shard)
        .run(move |_key: &str| -> Result<Action, kube_informer::Error> {
            d.fetch_add(1, Ordering::SeqCst);
            Ok(Action::Done)
        })
        .unwrap();
    while done.load(Ordering::SeqCst) < expect {
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "RESULT {} {:.1} {:.2}",
        informer.store().len(),
        peak_rss_mib(),
        started.elapsed().as_secs_f64()
    );
    controller.stop();
}

/// Child: the sharder over every object; prints its peak RSS once it has looked at all.
fn sharder_child(config: ClientConfig, n: usize) {
    let client = Client::new(unlimited(config)).unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = Arc::clone(&seen);
    let started = Instant::now();
    let sharder = Sharder::start(
        client,
        SharderConfig::new(ring(), &configmaps(), "bench-sharder")
            .leader_election(timings(LeaderElectionConfig::new(
                "default",
                &ring().sharder_lease(),
                "bench-sharder",
            )))
            .on_event(move |_| {
                s.fetch_add(1, Ordering::SeqCst);
            }),
    )
    .unwrap();
    // The first event is the ring as judged after its caches synced (all objects listed).
    while seen.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "RESULT {n} {:.1} {:.2}",
        peak_rss_mib(),
        started.elapsed().as_secs_f64()
    );
    sharder.stop();
}

fn run_child(args: &[String]) -> Vec<f64> {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut result = None;
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(r) = line.strip_prefix("RESULT ") {
            result = Some(r.split_whitespace().map(|x| x.parse().unwrap()).collect());
        }
    }
    let _ = child.wait();
    result.expect("the child exited without a result")
}

fn memory(n: usize) {
    println!(
        "memory per replica: {n} ConfigMaps (~1 KiB each), one shard measured in a child process"
    );
    println!(
        "{:>9} {:>16} {:>18} {:>22}",
        "replicas", "objects cached", "peak RSS (MiB)", "sync + reconcile (s)"
    );
    for replicas in [1usize, 2, 4] {
        let server = ApiServer::start();
        let ids = shard_ids(replicas);
        let mut mine = 0;
        for i in 0..n {
            let key = format!("default/cm-{i:06}");
            let shard = shard_for(&key, &ids);
            if shard == Some("replica-0") {
                mine += 1;
            }
            server.create(&configmaps(), object(i, shard)).unwrap();
        }
        let r = run_child(&[
            "--replica".into(),
            server.url(),
            "replica-0".into(),
            mine.to_string(),
        ]);
        println!("{replicas:>9} {:>16} {:>18.0} {:>22.1}", r[0], r[1], r[2]);
        if replicas == 4 {
            let r = run_child(&["--sharder".into(), server.url(), n.to_string()]);
            println!(
                "  the sharder (metadata-only informer of all {n}, one replica at a time): peak RSS {:.0} MiB, synced in {:.1} s",
                r[1], r[2]
            );
        }
        server.stop();
    }
}

struct Replica {
    sharder: Sharder,
    controller: Controller<DynamicObject>,
    factory: SharedInformerFactory,
    informer: kube_informer::cache::SharedIndexInformer<DynamicObject>,
}

fn start_replica(server: &ApiServer, id: &str) -> Replica {
    let client = Client::new(unlimited(server.client_config())).unwrap();
    let sharder = Sharder::start(
        client.clone(),
        SharderConfig::new(ring(), &configmaps(), id)
            .fence_duration(Duration::from_secs(4))
            .leader_election(timings(LeaderElectionConfig::new(
                "default",
                &ring().sharder_lease(),
                id,
            ))),
    )
    .unwrap();
    let shard = shard_config(id);
    let factory = SharedInformerFactory::with_options(client.clone(), shard.factory_options());
    let informer = factory.dynamic_informer(&configmaps());
    let controller = Controller::builder(&format!("bench-{id}"), informer.clone())
        .workers(4)
        .sharded(client, shard)
        .run(|_key: &str| -> Result<Action, kube_informer::Error> { Ok(Action::Done) })
        .unwrap();
    Replica {
        sharder,
        controller,
        factory,
        informer,
    }
}

fn balanced(server: &ApiServer, ids: &[String], replicas: &[Replica]) -> bool {
    let label = ring().shard_label();
    let mut per = vec![0usize; ids.len()];
    for o in server.list(&configmaps(), Some("default")) {
        let key = format!("default/{}", o["metadata"]["name"].as_str().unwrap_or(""));
        let want = shard_for(&key, ids);
        if o["metadata"]["labels"][&label].as_str() != want
            || !o["metadata"]["labels"][ring().drain_label()].is_null()
        {
            return false;
        }
        if let Some(i) = ids.iter().position(|s| Some(s.as_str()) == want) {
            per[i] += 1;
        }
    }
    replicas
        .iter()
        .zip(&per)
        .all(|(r, n)| r.informer.store().len() == *n)
}

fn join(m: usize) {
    println!("join to balance: {m} ConfigMaps on 3 replicas (in this process), a 4th joins");
    let server = ApiServer::start();
    let three = shard_ids(3);
    for i in 0..m {
        let key = format!("default/cm-{i:06}");
        server
            .create(&configmaps(), object(i, shard_for(&key, &three)))
            .unwrap();
    }
    let mut replicas: Vec<Replica> = three.iter().map(|id| start_replica(&server, id)).collect();
    while !balanced(&server, &three, &replicas) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let before: Vec<Option<String>> = server
        .list(&configmaps(), Some("default"))
        .iter()
        .map(|o| {
            o["metadata"]["labels"][ring().shard_label()]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    let requests = server.request_count();
    let t0 = Instant::now();
    replicas.push(start_replica(&server, "replica-3"));
    let four = shard_ids(4);
    while !balanced(&server, &four, &replicas) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = t0.elapsed();
    let after: Vec<Option<String>> = server
        .list(&configmaps(), Some("default"))
        .iter()
        .map(|o| {
            o["metadata"]["labels"][ring().shard_label()]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    println!(
        "  balanced after {:.2} s: {moved} of {m} objects moved ({:.1}%; 1/4 = 25% expected), {} requests to the server meanwhile",
        took.as_secs_f64(),
        100.0 * moved as f64 / m as f64,
        server.request_count() - requests
    );
    for r in replicas {
        r.controller.stop();
        r.sharder.stop();
        r.factory.shutdown();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--replica") => {
            let config = ClientConfig::new(&args[2]);
            return replica_child(config, &args[3], args[4].parse().unwrap());
        }
        Some("--sharder") => {
            return sharder_child(ClientConfig::new(&args[2]), args[3].parse().unwrap());
        }
        _ => {}
    }
    let sizes: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = sizes.first().copied().unwrap_or(100_000);
    let m = sizes.get(1).copied().unwrap_or(10_000);
    memory(n);
    join(m);
}
