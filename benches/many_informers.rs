//! The cost of many informers: a controller that watches 50 resource types of 100 objects
//! each (a platform operator, a backup tool), as `SharedInformerFactory` runs them with one
//! handler each. Prints the threads (in all, and the library's `ki/...` threads per
//! informer), the open connections, the resident memory after sync, and the CPU the process
//! uses over 10 idle seconds (after sync, nothing changing; the server sends a bookmark a
//! minute, as kube-apiserver does). Asserts nothing about time.
//!
//! Run: `cargo bench --bench many_informers` (`BENCH_TYPES=50 BENCH_OBJECTS=100
//! BENCH_IDLE_SECS=10` are the defaults).
//!
//! The API server (`testing::ApiServer`) runs in a child process (this binary with the
//! `serve` role), so every figure is the client's alone.

#[path = "support/process_cpu.rs"]
mod process_cpu;
use process_cpu::cpu_seconds;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::cache::SharedInformerFactory;
use kube_informer::Client;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resource type `i`: a namespaced custom resource of its own group.
fn resource(i: usize) -> ApiResource {
    ApiResource::new(
        &format!("t{i}.bench.example.com"),
        "v1",
        &format!("Thing{i}"),
        &format!("things{i}"),
        true,
    )
}

/// Child process: serve `types` resource types of `objects` objects each until stdin closes.
fn serve(types: usize, objects: usize) {
    let mut builder =
        kube_informer::testing::ApiServer::builder().bookmark_interval(Duration::from_secs(60));
    for i in 0..types {
        builder = builder.resource(&resource(i));
    }
    let server = builder.start();
    for i in 0..types {
        let ar = resource(i);
        for j in 0..objects {
            let object = serde_json::json!({
                "apiVersion": ar.api_version(),
                "kind": ar.kind,
                "metadata": {"name": format!("thing-{j}"), "namespace": "bench",
                             "labels": {"app": "bench"}},
                "spec": {"size": j, "note": "a few bytes of spec"},
            });
            server.create(&ar, object).unwrap();
        }
    }
    println!("{}", server.url());
    std::io::stdout().flush().unwrap();
    // Until the parent closes stdin.
    for _ in std::io::stdin().lock().lines() {}
}

/// VmRSS of this process, MiB.
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// This process's threads by name.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
                .map(|n| n.trim().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Open sockets of this process.
fn sockets() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    std::fs::read_link(e.path())
                        .is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
                })
                .count()
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let types = env_number("BENCH_TYPES", 50);
    let objects = env_number("BENCH_OBJECTS", 100);
    if args.get(1).map(String::as_str) == Some("serve") {
        return serve(types, objects);
    }
    let idle = Duration::from_secs(env_number("BENCH_IDLE_SECS", 10) as u64);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let mut config = kube_informer::ClientConfig::new(url.trim().to_owned());
    config.qps = 0.0;
    let client = Client::new(config).unwrap();

    let (threads_before, rss_before) = (thread_names().len(), rss_mib());
    let factory = SharedInformerFactory::new(client);
    let seen = Arc::new(AtomicU64::new(0));
    for i in 0..types {
        let informer = factory.informer_for::<DynamicObject>(&resource(i));
        let s = Arc::clone(&seen);
        informer
            .add_event_handler(informer.handler_fns().on_add(move |_, _| {
                s.fetch_add(1, Ordering::Relaxed);
            }))
            .unwrap();
    }
    let t0 = Instant::now();
    factory.start().unwrap();
    let report = factory.wait_for_cache_sync(Duration::from_secs(300));
    let sync = t0.elapsed();
    assert!(report.all_synced(), "not synced: {report:?}");
    // Every handler has been told of every object.
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.load(Ordering::Relaxed) < (types * objects) as u64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Let the watches open.
    std::thread::sleep(Duration::from_secs(1));
    let names = thread_names();
    let library = names.iter().filter(|n| n.starts_with("ki/")).count();
    let mut roles: std::collections::BTreeMap<String, usize> = Default::default();
    for n in names.iter().filter(|n| n.starts_with("ki/")) {
        let role = n.rsplit('/').next().unwrap_or("?");
        let role: String = role
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .to_owned();
        *roles.entry(role).or_default() += 1;
    }
    let rss_synced = rss_mib();
    let cpu_before = cpu_seconds();
    std::thread::sleep(idle);
    let idle_cpu = cpu_seconds() - cpu_before;

    println!("many informers: {types} resource types x {objects} objects, one handler each");
    println!("  sync of all: {:.2} s", sync.as_secs_f64());
    println!(
        "  threads: {} in all ({} before), {library} of the library's = {:.1} per informer; by role: {roles:?}",
        names.len(),
        threads_before,
        library as f64 / types as f64
    );
    println!(
        "  open sockets: {} ({:.1} per informer)",
        sockets(),
        sockets() as f64 / types as f64
    );
    println!(
        "  resident memory after sync: {rss_synced:.1} MiB ({:.1} MiB before the informers; {:.2} MiB per informer)",
        rss_before,
        (rss_synced - rss_before) / types as f64
    );
    println!(
        "  CPU over {:.0} idle seconds: {idle_cpu:.2} s ({:.2}% of one core)",
        idle.as_secs_f64(),
        100.0 * idle_cpu / idle.as_secs_f64()
    );
    factory.shutdown();
    drop(child.stdin.take());
    let _ = child.wait();
}
