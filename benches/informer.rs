//! Informer throughput and memory: time to initial sync, watch events per second through to a
//! handler, and peak memory, for 10,000 and 100,000 realistic pods (about 4 KB of JSON each,
//! shaped like a Deployment's pod: labels, ownerReferences, managedFields, conditions), both
//! as `DynamicObject` (full objects), as a slim user-defined type, and as
//! `PartialObjectMetadata` (metadata-only lists and watches: the server sends no spec or
//! status), and with the `k8s-openapi` feature as k8s-openapi's `Pod`.
//!
//! The test API server runs in a child process, so the figures are the client's alone. Its
//! objects are serialised once when created; list pages and events are byte copies; the
//! watch events come from `ApiServer::touch` (a MODIFIED that is a string copy), so the
//! server is never the bottleneck.
//!
//! Run: `cargo bench --bench informer` (optionally `-- 10000` to pick sizes), and with
//! `RUSTFLAGS="--cfg bench_mimalloc"` for the same figures with mimalloc as the allocator.
//! The client uses the library's default settings, its client-side rate limit included, so
//! the sync time is what a user gets; `BENCH_QPS=0` turns the limiter off for comparison
//! (`BENCH_QPS=5 BENCH_BURST=10`: client-go's historical defaults). Each sync prints how many
//! requests it took against the limiter's burst (the bucket starts full, so a sync within the
//! burst waited for no token).
//! `BENCH_KINDS=slim` (a comma-separated subset of `dynamic,slim,metadata`) runs only those.
//! With `--features k8s-openapi,k8s-openapi/v1_35,protobuf`, `k8s-openapi` is the typed `Pod`
//! over protobuf and `k8s-openapi-json` the same type over JSON (the protobuf figures).
//! `BENCH_STREAMING=1` makes the initial list a streaming list (`sendInitialEvents`);
//! `BENCH_STRIP=1` skips `managedFields` while decoding (`strip_managed_fields`);
//! `BENCH_COMPACT=1` keeps k8s-openapi `Pod`s' `managedFields` as text
//! (`cache::compact_managed_fields`);
//! `BENCH_RUNS=N` runs each client N times. With `--cfg bench_count_allocs` it also prints
//! the heap bytes in use per cached object at sync.
//!
//! The scaling curve: `cargo bench --bench informer -- --curve` syncs 1k, 10k, 50k, 100k and
//! 200k pods (each client twice, the faster sync kept), writes `benches/scaling.csv`, prints
//! the growth exponents and draws `benches/scaling.svg` (the README's picture);
//! `-- --draw [file.csv]` redraws from saved figures.
//! This prints figures; it asserts nothing about time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_informer::api::{ApiResource, DynamicObject, Object, PartialObjectMetadata};
use kube_informer::cache::{InformerConfig, ReflectorConfig, SharedIndexInformer};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client, ClientConfig};
use serde::Deserialize;

#[path = "support/realistic_pod.rs"]
mod realistic_pod;
#[path = "support/scaling.rs"]
mod scaling;

const UPDATES: usize = 100_000;

// The allocator matters: with glibc's malloc, objects decoded on the reflector thread and
// freed on the informer and handler threads contend for malloc's arena locks. Build with
// `RUSTFLAGS="--cfg bench_mimalloc"` to measure with mimalloc instead.
#[cfg(bench_mimalloc)]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

// `RUSTFLAGS="--cfg bench_count_allocs"` counts the client's allocations (at sync, per pod;
// during the watch, per event): a figure the machine's noise does not move.
#[cfg(bench_count_allocs)]
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicU64, Ordering};

    pub static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
    /// Bytes allocated and not yet freed (as asked for, without the allocator's own overhead).
    pub static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

    pub struct Counting;

    // SAFETY: every call is passed on unchanged to the system allocator.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            LIVE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
            unsafe { System.realloc(ptr, layout, size) }
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;
}

/// Heap bytes in use (with `--cfg bench_count_allocs`; otherwise not counted).
fn live_heap_bytes() -> Option<u64> {
    #[cfg(bench_count_allocs)]
    return Some(counting::LIVE_BYTES.load(std::sync::atomic::Ordering::Relaxed));
    #[cfg(not(bench_count_allocs))]
    None
}

/// Allocations so far (with `--cfg bench_count_allocs`; otherwise none are counted).
fn allocations() -> Option<u64> {
    #[cfg(bench_count_allocs)]
    return Some(counting::ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed));
    #[cfg(not(bench_count_allocs))]
    None
}

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

kube_informer::resource! {
    /// The slim type: what a pod-watching tool typically reads.
    #[resource(group = "", version = "v1", kind = "Pod", plural = "pods", namespaced)]
    struct SlimPod {
        #[allow(dead_code)] // decoded like a real tool would, not read by the benchmark
        status: SlimStatus,
    }
}

#[derive(Deserialize, Clone, Debug, Default)]
struct SlimStatus {
    #[allow(dead_code)]
    phase: Option<String>,
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

/// What a `/proc/.../stat` file says about a process or thread, for profiling.
struct ProcStat {
    name: String,
    /// User and system CPU seconds (a process's include its exited threads).
    cpu_seconds: f64,
    minor_faults: u64,
}

impl ProcStat {
    fn read(path: &std::path::Path) -> ProcStat {
        let stat = std::fs::read_to_string(path).unwrap_or_default();
        let name = stat
            .split('(')
            .nth(1)
            .and_then(|r| r.split(')').next())
            .unwrap_or("?")
            .to_owned();
        // The fields after the command name: minflt is the 8th, utime and stime the 12th and 13th.
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let number = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        ProcStat {
            name,
            cpu_seconds: (number(11) + number(12)) as f64 / 100.0, // USER_HZ on Linux
            minor_faults: number(7),
        }
    }

    fn this_process() -> ProcStat {
        ProcStat::read(std::path::Path::new("/proc/self/stat"))
    }
}

/// CPU time and minor page faults of each thread of this process so far.
fn thread_cpu() -> String {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let t = ProcStat::read(&e.path().join("stat"));
            out.push(format!(
                "{}={:.2}s/{}flt",
                t.name, t.cpu_seconds, t.minor_faults
            ));
        }
    }
    out.join(" ")
}

/// Child process: serve `n` pods; on "touch U" apply U MODIFIED events and answer "done".
fn serve(n: usize) {
    let server = ApiServer::builder()
        .resource(&pods())
        .history_limit(2 * UPDATES + 10)
        .start();
    let mut keys = Vec::with_capacity(n);
    let mut bytes = 0usize;
    for i in 0..n {
        let v = realistic_pod::realistic_pod(i);
        bytes += v.to_string().len();
        let ns = v["metadata"]["namespace"].as_str().unwrap().to_owned();
        let name = v["metadata"]["name"].as_str().unwrap().to_owned();
        server.create(&pods(), v).unwrap();
        keys.push((ns, name));
    }
    let mut out = std::io::stdout();
    writeln!(out, "{} {}", server.url(), bytes / n.max(1)).unwrap();
    out.flush().unwrap();
    let mut next = 0usize;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if let Some(ms) = line.strip_prefix("stall-watch ") {
            let ms: u64 = ms.parse().unwrap();
            server.inject(Target::Watch, Fault::Stall(Duration::from_millis(ms)));
            writeln!(out, "done").unwrap();
            out.flush().unwrap();
        } else if line == "requests" {
            writeln!(out, "{}", server.requests().len()).unwrap();
            out.flush().unwrap();
        } else if let Some(u) = line.strip_prefix("touch ") {
            let u: usize = u.parse().unwrap();
            for _ in 0..u {
                let (ns, name) = &keys[next % keys.len()];
                server.touch(&pods(), Some(ns), name).unwrap();
                next += 1;
            }
            writeln!(out, "done").unwrap();
            out.flush().unwrap();
        }
    }
}

/// Child process: sync an informer of type `K`, then count `UPDATES` watch events.
/// k8s-openapi's `Pod` read as JSON in a build with `protobuf`: the same type in a wrapper
/// that has no protobuf message, so one binary gives both figures (`BENCH_KINDS=
/// k8s-openapi,k8s-openapi-json` with `--features k8s-openapi,k8s-openapi/v1_35,protobuf`).
#[cfg(all(feature = "k8s-openapi", feature = "protobuf"))]
#[derive(Deserialize)]
#[serde(transparent)]
struct JsonPod(k8s_openapi::api::core::v1::Pod);

#[cfg(all(feature = "k8s-openapi", feature = "protobuf"))]
impl Object for JsonPod {
    type Meta = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    fn metadata(&self) -> &Self::Meta {
        &self.0.metadata
    }
    fn metadata_mut(&mut self) -> &mut Self::Meta {
        &mut self.0.metadata
    }
}

fn client<K: Object>(
    url: &str,
    n: usize,
    ctl: &mut dyn FnMut(&str) -> String,
    transform: Option<kube_informer::cache::Transform<K>>,
) -> Figures {
    let config = client_config(url);
    let kube_client = Client::new(config).unwrap();
    // With the `metrics` feature, everything the feature would export for this informer is
    // registered (the client's requests, the informer's figures) and scraped at the end: the
    // overhead figure of issue 22 compares this build with one without the feature.
    #[cfg(feature = "metrics")]
    let metrics = {
        let m = kube_informer::metrics::Metrics::new();
        m.register_client(&kube_client);
        m
    };
    let api: Api<K> = Api::all_with(kube_client, &pods());
    if std::env::var_os("BENCH_LIST_ONLY").is_some() {
        let t = Instant::now();
        let list = api
            .list_all(&kube_informer::ListParams::default().limit(500))
            .unwrap();
        eprintln!(
            "  paged list of {} items alone: {:?}",
            list.items.len(),
            t.elapsed()
        );
    }
    if std::env::var_os("BENCH_WATCH_ONLY").is_some() {
        // Diagnostic: the watch stream alone (read and decode), no informer.
        let list = api
            .list_all(&kube_informer::ListParams::default().limit(500))
            .unwrap();
        let rv = list.metadata.resource_version.clone().unwrap_or_default();
        drop(list);
        assert_eq!(ctl(&format!("touch {UPDATES}")), "done");
        let mut t = Instant::now();
        let mut seen = 0;
        for event in api
            .watch(&kube_informer::WatchParams::from_version(&rv))
            .unwrap()
        {
            if let Ok(kube_informer::api::WatchEvent::Modified(_)) = event {
                if seen == 0 {
                    t = Instant::now(); // after the server's stall
                }
                seen += 1;
                if seen == UPDATES {
                    break;
                }
            }
        }
        let rate = (UPDATES - 1) as f64 / t.elapsed().as_secs_f64();
        eprintln!("  watch stream alone: {rate:.0} events/s; {}", thread_cpu());
        let cpu = ProcStat::this_process().cpu_seconds;
        return Figures {
            sync: Duration::ZERO,
            events_per_second: rate,
            rss_synced: peak_rss_mib(),
            peak: peak_rss_mib(),
            cpu_at_sync: 0.0,
            cpu_total: cpu,
        };
    }
    let config = InformerConfig::new().reflector(
        ReflectorConfig::new()
            // `BENCH_STREAMING=1`: the initial list as a streaming list (`sendInitialEvents`).
            .streaming_list(std::env::var_os("BENCH_STREAMING").is_some())
            // `BENCH_STRIP=1`: `managedFields` skipped while decoding.
            .strip_managed_fields(std::env::var_os("BENCH_STRIP").is_some()),
    );
    let config = match transform {
        Some(t) => config.transform(t),
        None => config,
    };
    let informer = SharedIndexInformer::new(api, config);
    #[cfg(feature = "metrics")]
    metrics.register_informer(&informer);
    let updates = Arc::new(AtomicU64::new(0));
    let first_update: Arc<std::sync::OnceLock<Instant>> = Arc::default();
    // The handler tells the bench when the last update arrived (one wake-up), so the bench's
    // waiting costs no CPU: the figures are the library's.
    let all_arrived: Arc<(std::sync::Mutex<bool>, std::sync::Condvar)> = Arc::default();
    let (u, f, done) = (updates.clone(), first_update.clone(), all_arrived.clone());
    let registration = informer
        .add_event_handler(informer.handler_fns().on_update(move |_old, _new| {
            f.get_or_init(Instant::now);
            if u.fetch_add(1, Ordering::Relaxed) + 1 == UPDATES as u64 {
                *done.0.lock().unwrap() = true;
                done.1.notify_all();
            }
        }))
        .unwrap();
    let requests_before_sync: usize = ctl("requests").parse().unwrap();
    let allocs_before_sync = allocations();
    let heap_before_sync = live_heap_bytes();
    let cpu_before_sync = ProcStat::this_process().cpu_seconds;
    let t0 = Instant::now();
    informer.start().unwrap();
    assert!(informer.wait_for_cache_sync(Duration::from_secs(600)));
    let sync = t0.elapsed();
    // The client-side rate limiter's bucket starts full: if the sync took no more requests
    // than its burst, none of them waited for a token.
    let requests: usize = ctl("requests").parse::<usize>().unwrap() - requests_before_sync;
    let config = client_config(url);
    eprintln!(
        "  requests to sync: {requests}; {}",
        if config.qps <= 0.0 {
            "rate limiter off".to_owned()
        } else if requests <= config.burst as usize {
            format!(
                "within the limiter's burst of {}: none waited",
                config.burst
            )
        } else {
            format!(
                "{} past the limiter's burst of {}",
                requests - config.burst as usize,
                config.burst
            )
        }
    );
    assert_eq!(informer.store().len(), n);
    let cpu_at_sync = ProcStat::this_process().cpu_seconds - cpu_before_sync;
    let rss_after_sync = peak_rss_mib();
    let allocs_at_sync = allocations();
    if let (Some(a), Some(b)) = (heap_before_sync, live_heap_bytes()) {
        eprintln!(
            "  heap in use per cached object at sync: {:.0} bytes (as requested from the allocator)",
            (b - a) as f64 / n as f64
        );
    }
    if let (Some(a), Some(b)) = (allocs_before_sync, allocs_at_sync) {
        eprintln!(
            "  allocations per pod listed: {:.1}",
            (b - a) as f64 / n as f64
        );
    }
    if std::env::var_os("BENCH_THREADS").is_some() {
        eprintln!(
            "  at sync: {} minor page faults, {:.2} CPU seconds; by thread: {}",
            ProcStat::this_process().minor_faults,
            ProcStat::this_process().cpu_seconds,
            thread_cpu()
        );
    }
    if std::env::var_os("BENCH_SYNC_ONLY").is_some() {
        let peak = peak_rss_mib();
        informer.stop();
        return Figures {
            sync,
            events_per_second: f64::NAN,
            rss_synced: rss_after_sync,
            peak,
            cpu_at_sync,
            cpu_total: ProcStat::this_process().cpu_seconds - cpu_before_sync,
        };
    }
    // The watch request is held by the server while it records the burst, so the events
    // then stream at the client's pace, not the server's.
    let reply = ctl(&format!("touch {UPDATES}"));
    assert_eq!(reply, "done");
    // With `BENCH_THREADS`, the handler's backlog is sampled every millisecond meanwhile.
    let sample_backlog = std::env::var_os("BENCH_THREADS").is_some();
    let mut max_backlog = 0;
    let mut arrived = all_arrived.0.lock().unwrap();
    while !*arrived {
        if sample_backlog {
            max_backlog = max_backlog.max(registration.backlog());
            arrived = all_arrived
                .1
                .wait_timeout(arrived, Duration::from_millis(1))
                .unwrap()
                .0;
        } else {
            arrived = all_arrived.1.wait(arrived).unwrap();
        }
    }
    drop(arrived);
    if sample_backlog {
        eprintln!("  largest handler backlog seen: {max_backlog}");
    }
    if let (Some(a), Some(b)) = (allocs_at_sync, allocations()) {
        eprintln!(
            "  allocations per watch event: {:.1}",
            (b - a) as f64 / UPDATES as f64
        );
    }
    let t1 = *first_update.get().unwrap();
    let rate = (UPDATES - 1) as f64 / t1.elapsed().as_secs_f64();
    let peak = peak_rss_mib();
    if std::env::var_os("BENCH_THREADS").is_some() {
        eprintln!("  CPU seconds by thread: {}", thread_cpu());
    }
    #[cfg(feature = "metrics")]
    {
        let t = Instant::now();
        let text = metrics.encode();
        eprintln!(
            "  metrics: one scrape of {} bytes in {:?}",
            text.len(),
            t.elapsed()
        );
    }
    let cpu_total = ProcStat::this_process().cpu_seconds - cpu_before_sync;
    informer.stop();
    Figures {
        sync,
        events_per_second: rate,
        rss_synced: rss_after_sync,
        peak,
        cpu_at_sync,
        cpu_total,
    }
}

/// What one client run measured.
struct Figures {
    /// From `start()` to a synced cache.
    sync: Duration,
    /// Watch events per second to one handler (NaN with `BENCH_SYNC_ONLY`).
    events_per_second: f64,
    /// Peak resident memory at sync and at the end, MiB.
    rss_synced: f64,
    peak: f64,
    /// CPU seconds (user + system, every thread) to sync, and to sync and take the events.
    cpu_at_sync: f64,
    cpu_total: f64,
}

/// The library's default client settings (its client-side rate limit included), except
/// for `BENCH_QPS` (`0`: the limiter off) and `BENCH_BURST` when set.
fn client_config(url: &str) -> ClientConfig {
    let mut config = ClientConfig::new(url);
    if let Some(qps) = env_number("BENCH_QPS") {
        config.qps = qps as f32;
    }
    if let Some(burst) = env_number("BENCH_BURST") {
        config.burst = burst as u32;
    }
    config
}

fn env_number(name: &str) -> Option<f64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        return serve(args[2].parse().unwrap());
    }
    if args.get(1).map(String::as_str) == Some("--client") {
        let (url, kind, n) = (&args[2], &args[3], args[4].parse::<usize>().unwrap());
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        let mut ctl = |cmd: &str| {
            println!("CMD {cmd}");
            std::io::stdout().flush().unwrap();
            lines.next().unwrap().unwrap()
        };
        let r = match kind.as_str() {
            "dynamic" => client::<DynamicObject>(url, n, &mut ctl, None),
            "metadata" => client::<PartialObjectMetadata>(url, n, &mut ctl, None),
            // `BENCH_COMPACT=1`: `managedFields` kept, each `fieldsV1` as its JSON text.
            #[cfg(feature = "k8s-openapi")]
            "k8s-openapi" => client::<k8s_openapi::api::core::v1::Pod>(
                url,
                n,
                &mut ctl,
                std::env::var_os("BENCH_COMPACT")
                    .map(|_| kube_informer::cache::compact_managed_fields()),
            ),
            #[cfg(all(feature = "k8s-openapi", feature = "protobuf"))]
            "k8s-openapi-json" => client::<JsonPod>(url, n, &mut ctl, None),
            _ => client::<SlimPod>(url, n, &mut ctl, None),
        };
        println!(
            "RESULT {} {} {} {} {} {}",
            r.sync.as_secs_f64(),
            r.events_per_second,
            r.rss_synced,
            r.peak,
            r.cpu_at_sync,
            r.cpu_total
        );
        return;
    }
    if args.get(1).map(String::as_str) == Some("--draw") {
        let csv = args.get(2).map_or(scaling::CSV, String::as_str);
        let text = std::fs::read_to_string(csv).unwrap_or_else(|e| panic!("{csv}: {e}"));
        let rows = scaling::parse_csv(&text);
        scaling::report(&rows);
        scaling::write_svg(&rows, scaling::SVG);
        return;
    }
    let curve = args.get(1).map(String::as_str) == Some("--curve");
    let sizes: Vec<usize> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = match (sizes.is_empty(), curve) {
        (false, _) => sizes,
        (true, true) => scaling::SIZES.to_vec(),
        (true, false) => vec![10_000, 100_000],
    };
    let exe = std::env::current_exe().unwrap();
    println!("informer benchmark: {UPDATES} watch events per run; server in a separate process");
    let limits = client_config("http://127.0.0.1");
    if limits.qps > 0.0 {
        println!(
            "client-side rate limit: {} requests/s, burst {}{}",
            limits.qps,
            limits.burst,
            if std::env::var_os("BENCH_QPS").is_some() || std::env::var_os("BENCH_BURST").is_some()
            {
                " (BENCH_QPS/BENCH_BURST)"
            } else {
                " (the library's defaults)"
            }
        );
    } else {
        println!("client-side rate limit: off (BENCH_QPS=0)");
    }
    if std::env::var_os("BENCH_STREAMING").is_some() {
        println!("initial list: streaming (BENCH_STREAMING)");
    }
    if curve {
        // The curve is about the sync: no watch events.
        std::env::set_var("BENCH_SYNC_ONLY", "1");
        println!("scaling curve: sync only, sizes {sizes:?}");
    }
    println!(
        "{:>8} {:>15} {:>9} {:>9} {:>12} {:>10} {:>10} {:>10}",
        "pods", "type", "sync (s)", "events/s", "synced MiB", "peak MiB", "CPU sync", "CPU all"
    );
    // `BENCH_RUNS=N` runs each client N times (the curve: 2 by default) and keeps, for the
    // curve, the run with the fastest sync: on a VM, a process that first touches memory the
    // host has not yet given the guest runs up to twice slower than the same work later.
    let runs = env_number("BENCH_RUNS").map_or(if curve { 2 } else { 1 }, |r| r.max(1.0) as usize);
    let mut rows = Vec::new();
    for n in sizes {
        let mut server = Command::new(&exe)
            .args(["--serve", &n.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut server_out = BufReader::new(server.stdout.take().unwrap());
        let mut server_in = server.stdin.take().unwrap();
        let mut first = String::new();
        server_out.read_line(&mut first).unwrap();
        let mut parts = first.split_whitespace();
        let url = parts.next().unwrap().to_owned();
        let avg = parts.next().unwrap_or("?").to_owned();
        println!("         ({n} pods served, {avg} bytes of JSON each on average)");
        // k8s-openapi's `Pod` too when built with the feature (`cargo bench --bench informer
        // --features k8s-openapi,k8s-openapi/v1_35`). `BENCH_KINDS=slim,dynamic` runs some of
        // them (for a profiler, say).
        let all = if cfg!(all(feature = "k8s-openapi", feature = "protobuf")) && !curve {
            "dynamic,slim,metadata,k8s-openapi,k8s-openapi-json"
        } else if cfg!(feature = "k8s-openapi") && !curve {
            "dynamic,slim,metadata,k8s-openapi"
        } else {
            "dynamic,slim,metadata"
        };
        let kinds = std::env::var("BENCH_KINDS").unwrap_or_else(|_| all.into());
        for kind in kinds.split(',') {
            let mut best: Option<scaling::Row> = None;
            for _ in 0..runs {
                // The watch is held while the server records the burst of events (below); a
                // streaming list is a watch, so it is not held: its events come at the
                // server's pace.
                if std::env::var_os("BENCH_STREAMING").is_none() {
                    writeln!(server_in, "stall-watch 4000").unwrap();
                    let mut ack = String::new();
                    server_out.read_line(&mut ack).unwrap();
                }
                let mut c = Command::new(&exe)
                    .args(["--client", &url, kind, &n.to_string()])
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap();
                let mut c_out = BufReader::new(c.stdout.take().unwrap());
                let mut c_in = c.stdin.take().unwrap();
                let mut line = String::new();
                loop {
                    line.clear();
                    if c_out.read_line(&mut line).unwrap() == 0 {
                        panic!("client exited early");
                    }
                    if let Some(cmd) = line.trim().strip_prefix("CMD ") {
                        writeln!(server_in, "{cmd}").unwrap();
                        let mut reply = String::new();
                        server_out.read_line(&mut reply).unwrap();
                        writeln!(c_in, "{}", reply.trim()).unwrap();
                    } else if let Some(r) = line.trim().strip_prefix("RESULT ") {
                        let v: Vec<f64> =
                            r.split_whitespace().map(|x| x.parse().unwrap()).collect();
                        let label = match kind {
                            "dynamic" => "DynamicObject",
                            "metadata" => "metadata only",
                            "k8s-openapi" if cfg!(feature = "protobuf") => "Pod protobuf",
                            "k8s-openapi" => "k8s-openapi Pod",
                            "k8s-openapi-json" => "Pod JSON",
                            _ => "slim type",
                        };
                        println!(
                        "{n:>8} {label:>15} {:>9.3} {:>9.0} {:>12.0} {:>10.0} {:>10.2} {:>10.2}",
                        v[0], v[1], v[2], v[3], v[4], v[5]
                    );
                        let row = scaling::Row {
                            pods: n,
                            kind: label.to_owned(),
                            sync_seconds: v[0],
                            peak_mib: v[3],
                            cpu_seconds: v[4],
                        };
                        if best
                            .as_ref()
                            .is_none_or(|b| row.sync_seconds < b.sync_seconds)
                        {
                            best = Some(row);
                        }
                        break;
                    }
                }
                let _ = c.wait();
            }
            rows.extend(best);
        }
        drop(server_in);
        let _ = server.wait();
    }
    if curve {
        std::fs::write(scaling::CSV, scaling::to_csv(&rows)).unwrap();
        scaling::report(&rows);
        scaling::write_svg(&rows, scaling::SVG);
        println!("wrote {} and {}", scaling::CSV, scaling::SVG);
    }
}
