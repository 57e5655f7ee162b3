//! kube-informer against kube-rs (`kube::runtime::watcher` + `reflector`) on the same pods
//! from the same test server, with the same figures for both: time to initial sync, watch
//! events per second delivered to one handler, peak memory (VmHWM) and CPU (user + system).
//!
//! Run (from the repository's root; 3 runs of each size by default, then the medians):
//!
//! ```text
//! cargo run --release --manifest-path benches/peer/Cargo.toml -- 10000 100000
//! ```
//!
//! Options: `--runs N` (default 3), `--kinds dynamic,pod` (default both: `DynamicObject`, and
//! k8s-openapi's `Pod` on both sides), `--http` (plain HTTP instead of HTTPS),
//! `--strip-managed-fields` (both clients drop `metadata.managedFields` as each library's
//! users do: kube-informer while decoding, `ReflectorConfig::strip_managed_fields`; kube-rs
//! after decoding, with `.modify()` on the watcher stream clearing them, as its docs show).
//!
//! How it works, as `benches/informer.rs` (whose helpers are copied here, not shared):
//! - The test API server (`kube_informer::testing::ApiServer`) runs in a child process (this
//!   binary with the `serve` role), so the figures are the client's alone. It serves HTTPS
//!   with the library's test certificates (a real cluster's transport) and holds `n` realistic
//!   pods (~4.7 KB of JSON each, like a Deployment's pod) in 20 namespaces; lists come in
//!   pages of 500 (both clients' default page size). Objects are serialised once when
//!   created; list pages and events are byte copies; the watch events come from
//!   `ApiServer::touch` (a MODIFIED that is a string copy), so the server is never the
//!   bottleneck.
//! - Each client runs in a process of its own (this binary with the `kube-informer` or
//!   `kube-rs` role), so each one's peak memory and CPU are its own: VmHWM from
//!   `/proc/self/status`, user + system time from `getrusage(RUSAGE_SELF)`. Both clients
//!   are built from the same kubeconfig file (the server's URL and the test CA), with no
//!   client-side rate limit (kube-rs has none; the library's is turned off).
//! - Sync: from starting the informer (kube-rs: polling `reflector(watcher(..))`) until its
//!   store holds all `n` pods (kube-informer: `wait_for_cache_sync`; kube-rs: the store's
//!   `wait_until_ready`, after `InitDone`); both then check the store's size.
//! - Events: the server holds the client's first watch for 4 s while it records 100,000
//!   MODIFIED events (every pod once at 100,000 pods; each of 10,000 pods ten times), so the
//!   events then stream at the client's pace. The rate is timed from the first event the
//!   handler sees to the last (kube-informer: an `on_update` handler; kube-rs: the code
//!   consuming the reflector's stream, counting `Event::Apply`).
//! - CPU and memory are the whole client process's, from its start to the last event (sync
//!   included); the sync columns are the figures at sync.
//!
//! Both clients use the system allocator (glibc's malloc). This prints figures; it asserts
//! nothing about time.

use std::fmt::Debug;
use std::hash::Hash;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{reflector, watcher, WatchStreamExt as _};
use serde::de::DeserializeOwned;

/// Watch events per client run (as in `benches/informer.rs`).
/// The same pods as `cargo bench --bench informer`: one generator for both.
#[path = "../../support/realistic_pod.rs"]
mod realistic_pod;
use realistic_pod::realistic_pod;

const UPDATES: usize = 100_000;

/// How long the server holds the first watch while it records the events.
const STALL_MS: u64 = 4000;

fn pods() -> kube_informer::api::ApiResource {
    kube_informer::api::ApiResource::new("", "v1", "Pod", "pods", true)
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

/// User + system CPU seconds of this process so far (all its threads, live and exited).
fn cpu_seconds() -> f64 {
    // SAFETY: `getrusage` writes into the zeroed struct it is given, nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
            return f64::NAN;
        }
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Role `serve`: serve `n` pods; print the URL; then answer commands on stdin:
/// `stall-watch MS` (hold the next watch), `requests` (how many so far), `touch U` (apply U
/// MODIFIED events, cycling through the pods).
fn serve(n: usize, tls: bool) {
    let mut builder = kube_informer::testing::ApiServer::builder()
        .resource(&pods())
        .history_limit(2 * UPDATES + 10);
    if tls {
        builder = builder.tls();
    }
    let server = builder.start();
    let mut keys = Vec::with_capacity(n);
    let mut bytes = 0usize;
    for i in 0..n {
        let v = realistic_pod(i);
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
            server.inject(
                kube_informer::testing::Target::Watch,
                kube_informer::testing::Fault::Stall(Duration::from_millis(ms)),
            );
            writeln!(out, "done").unwrap();
        } else if line == "requests" {
            writeln!(out, "{}", server.request_count()).unwrap();
        } else if let Some(u) = line.strip_prefix("touch ") {
            let u: usize = u.parse().unwrap();
            for _ in 0..u {
                let (ns, name) = &keys[next % keys.len()];
                server.touch(&pods(), Some(ns), name).unwrap();
                next += 1;
            }
            writeln!(out, "done").unwrap();
        }
        out.flush().unwrap();
    }
}

/// A kubeconfig for the server at `url`, trusting the test CA when it serves HTTPS: both
/// clients are built from it, as a user's program would be.
fn kubeconfig(url: &str) -> String {
    let ca = if url.starts_with("https:") {
        format!(
            "\n    certificate-authority-data: {}",
            base64::engine::general_purpose::STANDARD.encode(kube_informer::testing::CA_PEM)
        )
    } else {
        String::new()
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: {url}{ca}
users:
- name: bench
  user: {{}}
contexts:
- name: bench
  context:
    cluster: bench
    user: bench
current-context: bench
"
    )
}

/// What a client run measured.
struct Figures {
    sync: Duration,
    cpu_at_sync: f64,
    rss_at_sync: f64,
    events_per_second: f64,
    cpu: f64,
    peak_rss: f64,
    requests_to_sync: usize,
    /// List or watch errors the client met (each one a retry, with its back-off).
    errors: u64,
}

impl Figures {
    fn to_line(&self) -> String {
        format!(
            "{} {} {} {} {} {} {} {}",
            self.sync.as_secs_f64(),
            self.cpu_at_sync,
            self.rss_at_sync,
            self.events_per_second,
            self.cpu,
            self.peak_rss,
            self.requests_to_sync,
            self.errors
        )
    }

    fn from_line(line: &str) -> Figures {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        Figures {
            sync: Duration::from_secs_f64(v[0]),
            cpu_at_sync: v[1],
            rss_at_sync: v[2],
            events_per_second: v[3],
            cpu: v[4],
            peak_rss: v[5],
            requests_to_sync: v[6] as usize,
            errors: v[7] as u64,
        }
    }
}

/// Counts the handler's MODIFIED events: the times of the first and the last, and a signal
/// when all `UPDATES` have been seen.
#[derive(Clone)]
struct EventCounter {
    seen: Arc<AtomicU64>,
    errors: Arc<AtomicU64>,
    first: Arc<OnceLock<Instant>>,
    last: Arc<OnceLock<Instant>>,
    all_seen: mpsc::Sender<()>,
}

impl EventCounter {
    fn new() -> (EventCounter, mpsc::Receiver<()>) {
        let (all_seen, rx) = mpsc::channel();
        let counter = EventCounter {
            seen: Arc::default(),
            errors: Arc::default(),
            first: Arc::default(),
            last: Arc::default(),
            all_seen,
        };
        (counter, rx)
    }

    fn event(&self) {
        self.first.get_or_init(Instant::now);
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == UPDATES as u64 {
            self.last.get_or_init(Instant::now);
            let _ = self.all_seen.send(());
        }
    }

    fn error(&self, client: &str, e: &dyn std::fmt::Display) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        eprintln!(
            "  {client}: list/watch error after {} events: {e}",
            self.seen.load(Ordering::Relaxed)
        );
    }

    fn rate(&self) -> f64 {
        let elapsed = self
            .last
            .get()
            .unwrap()
            .duration_since(*self.first.get().unwrap());
        (UPDATES - 1) as f64 / elapsed.as_secs_f64()
    }
}

/// A client's line to the driver: `CMD <command>` out, the server's answer back.
type Ctl<'a> = &'a mut dyn FnMut(&str) -> String;

/// Role `kube-informer`: a `SharedIndexInformer` of `K` with one update handler.
fn kube_informer_client<K: kube_informer::api::Object>(
    kubeconfig: &Path,
    n: usize,
    strip: bool,
    ctl: Ctl,
) -> Figures {
    use kube_informer::cache::{InformerConfig, ReflectorConfig, SharedIndexInformer};
    let mut config = kube_informer::config::Config::from_kubeconfig(kubeconfig).unwrap();
    // No client-side rate limit, like kube-rs (the library's default, 50 requests/s with a
    // burst of 300 and one token per paged list, would make no request wait here anyway).
    config.client_config.qps = 0.0;
    let client = config.client().unwrap();
    let api: kube_informer::Api<K> = kube_informer::Api::all_with(client, &pods());
    let (counter, all_seen) = EventCounter::new();
    let c = counter.clone();
    let on_error = move |e: &kube_informer::Error| c.error("kube-informer", e);
    let config = InformerConfig::new()
        .reflector(ReflectorConfig::new().strip_managed_fields(strip))
        .on_watch_error(on_error);
    let informer = SharedIndexInformer::new(api, config);
    let c = counter.clone();
    informer
        .add_event_handler(informer.handler_fns().on_update(move |_old, _new| c.event()))
        .unwrap();
    let requests_before: usize = ctl("requests").parse().unwrap();
    let t0 = Instant::now();
    informer.start().unwrap();
    assert!(informer.wait_for_cache_sync(Duration::from_secs(600)));
    let sync = t0.elapsed();
    let (cpu_at_sync, rss_at_sync) = (cpu_seconds(), peak_rss_mib());
    assert_eq!(informer.store().len(), n);
    let requests_to_sync = ctl("requests").parse::<usize>().unwrap() - requests_before;
    assert_eq!(ctl(&format!("touch {UPDATES}")), "done");
    all_seen.recv().unwrap();
    let (cpu, peak_rss) = (cpu_seconds(), peak_rss_mib());
    Figures {
        sync,
        cpu_at_sync,
        rss_at_sync,
        events_per_second: counter.rate(),
        cpu,
        peak_rss,
        requests_to_sync,
        errors: counter.errors.load(Ordering::Relaxed),
    }
}

/// Role `kube-rs`: `reflector(writer, watcher(api, default config))` of `K`, its stream
/// polled by one task whose loop is the handler.
fn kube_rs_client<K>(
    rt: &tokio::runtime::Runtime,
    api: kube::Api<K>,
    writer: Writer<K>,
    n: usize,
    strip: bool,
    ctl: Ctl,
) -> Figures
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Eq + Hash + Clone + Send + Sync,
{
    let store = writer.as_reader();
    let (counter, all_seen) = EventCounter::new();
    let c = counter.clone();
    let requests_before: usize = ctl("requests").parse().unwrap();
    let t0 = Instant::now();
    let task = rt.spawn(async move {
        use kube::ResourceExt as _;
        let stream = watcher(api, watcher::Config::default()).modify(move |o: &mut K| {
            if strip {
                o.managed_fields_mut().clear();
            }
        });
        let stream = reflector(writer, stream).default_backoff();
        let mut stream = std::pin::pin!(stream);
        let mut synced = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::InitDone) => synced = true,
                Ok(watcher::Event::Apply(_)) if synced => c.event(),
                Ok(_) => {}
                Err(e) => c.error("kube-rs", &e),
            }
        }
    });
    rt.block_on(store.wait_until_ready()).unwrap();
    let sync = t0.elapsed();
    let (cpu_at_sync, rss_at_sync) = (cpu_seconds(), peak_rss_mib());
    assert_eq!(store.len(), n);
    let requests_to_sync = ctl("requests").parse::<usize>().unwrap() - requests_before;
    assert_eq!(ctl(&format!("touch {UPDATES}")), "done");
    all_seen.recv().unwrap();
    let (cpu, peak_rss) = (cpu_seconds(), peak_rss_mib());
    task.abort();
    Figures {
        sync,
        cpu_at_sync,
        rss_at_sync,
        events_per_second: counter.rate(),
        cpu,
        peak_rss,
        requests_to_sync,
        errors: counter.errors.load(Ordering::Relaxed),
    }
}

/// Role `kube-rs`: a tokio runtime as `#[tokio::main]` makes it (one worker per core), a
/// `kube::Client` from the kubeconfig, then the run for `kind`.
fn kube_rs_role(kubeconfig: &Path, kind: &str, n: usize, strip: bool, ctl: Ctl) -> Figures {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .unwrap();
        kube::Client::try_from(config).unwrap()
    });
    match kind {
        "dynamic" => {
            let ar = kube::api::ApiResource::from_gvk_with_plural(
                &kube::api::GroupVersionKind::gvk("", "v1", "Pod"),
                "pods",
            );
            let api = kube::Api::<kube::api::DynamicObject>::all_with(client, &ar);
            kube_rs_client(&rt, api, Writer::new(ar), n, strip, ctl)
        }
        "pod" => {
            let api = kube::Api::<Pod>::all(client);
            kube_rs_client(&rt, api, Writer::default(), n, strip, ctl)
        }
        other => panic!("unknown kind {other:?}"),
    }
}

fn client_role(args: &[String]) {
    let (role, kubeconfig, kind, n) = (
        args[1].as_str(),
        PathBuf::from(&args[2]),
        args[3].as_str(),
        args[4].parse::<usize>().unwrap(),
    );
    let strip = args.get(5).is_some_and(|a| a == "strip");
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut ctl = |cmd: &str| {
        println!("CMD {cmd}");
        std::io::stdout().flush().unwrap();
        lines.next().unwrap().unwrap()
    };
    let figures = match (role, kind) {
        ("kube-informer", "dynamic") => {
            kube_informer_client::<kube_informer::api::DynamicObject>(
                &kubeconfig,
                n,
                strip,
                &mut ctl,
            )
        }
        ("kube-informer", "pod") => kube_informer_client::<Pod>(&kubeconfig, n, strip, &mut ctl),
        ("kube-rs", kind) => kube_rs_role(&kubeconfig, kind, n, strip, &mut ctl),
        _ => panic!("unknown role {role:?} or kind {kind:?}"),
    };
    println!("RESULT {}", figures.to_line());
    std::io::stdout().flush().unwrap();
    // Nothing after the last event is measured: leave without tearing down the caches.
    std::process::exit(0);
}

/// The server child process and the lines to and from it.
struct Server {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    url: String,
    average_bytes: String,
}

impl Server {
    fn start(exe: &Path, n: usize, tls: bool) -> Server {
        let mut command = Command::new(exe);
        command.args(["serve", &n.to_string()]);
        if !tls {
            command.arg("--http");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut output = BufReader::new(child.stdout.take().unwrap());
        let input = child.stdin.take().unwrap();
        let mut first = String::new();
        output.read_line(&mut first).unwrap();
        let mut parts = first.split_whitespace();
        let url = parts.next().expect("the server's URL").to_owned();
        let average_bytes = parts.next().unwrap_or("?").to_owned();
        Server {
            child,
            input,
            output,
            url,
            average_bytes,
        }
    }

    fn command(&mut self, cmd: &str) -> String {
        writeln!(self.input, "{cmd}").unwrap();
        let mut reply = String::new();
        self.output.read_line(&mut reply).unwrap();
        reply.trim().to_owned()
    }

    fn stop(self) {
        drop(self.input);
        let mut child = self.child;
        let _ = child.wait();
    }
}

/// Runs one client process against `server` until it reports its figures.
fn run_client(
    exe: &Path,
    server: &mut Server,
    kubeconfig: &Path,
    role: &str,
    kind: &str,
    n: usize,
    strip: bool,
) -> Figures {
    assert_eq!(server.command(&format!("stall-watch {STALL_MS}")), "done");
    let mut child = Command::new(exe)
        .args([role, kubeconfig.to_str().unwrap(), kind, &n.to_string()])
        .arg(if strip { "strip" } else { "keep" })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut input = child.stdin.take().unwrap();
    let mut line = String::new();
    let figures = loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!("the {role} client ({kind}, {n} pods) exited early");
        }
        if let Some(cmd) = line.trim().strip_prefix("CMD ") {
            let reply = server.command(cmd);
            writeln!(input, "{reply}").unwrap();
        } else if let Some(r) = line.trim().strip_prefix("RESULT ") {
            break Figures::from_line(r);
        }
    };
    let _ = child.wait();
    figures
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn kind_label(kind: &str) -> &'static str {
    match kind {
        "dynamic" => "DynamicObject",
        "pod" => "k8s-openapi Pod",
        _ => "?",
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => {
            let tls = !args.iter().any(|a| a == "--http");
            return serve(args[2].parse().unwrap(), tls);
        }
        Some("kube-informer" | "kube-rs") => return client_role(&args),
        _ => {}
    }
    let mut sizes = Vec::new();
    let mut runs = 3usize;
    let mut kinds = vec!["dynamic".to_owned(), "pod".to_owned()];
    let mut tls = true;
    let mut strip = false;
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        match a.as_str() {
            "--runs" => runs = rest.next().and_then(|r| r.parse().ok()).expect("--runs N"),
            "--kinds" => {
                kinds = rest
                    .next()
                    .expect("--kinds dynamic,pod")
                    .split(',')
                    .map(str::to_owned)
                    .collect();
                for k in &kinds {
                    assert!(kind_label(k) != "?", "unknown kind {k:?} (dynamic, pod)");
                }
            }
            "--http" => tls = false,
            "--strip-managed-fields" => strip = true,
            n => sizes.push(
                n.parse::<usize>()
                    .unwrap_or_else(|_| panic!("{n:?}: expected a number of pods or an option")),
            ),
        }
    }
    if sizes.is_empty() {
        sizes = vec![10_000, 100_000];
    }
    let exe = std::env::current_exe().unwrap();
    let kubeconfig_path = std::env::temp_dir().join(format!(
        "kube-informer-peer-{}.kubeconfig",
        std::process::id()
    ));
    println!(
        "peer benchmark: kube-informer {} against kube-rs (kube {}) watcher + reflector",
        env!("PEER_KUBE_INFORMER_VERSION"),
        env!("PEER_KUBE_VERSION")
    );
    println!(
        "{UPDATES} watch events per client run; server and each client in processes of their own; \
         {}; {runs} run(s) per size; managedFields {}",
        if tls { "HTTPS" } else { "plain HTTP" },
        if strip { "stripped" } else { "kept" }
    );
    println!(
        "{:>7} {:>3} {:>15} {:>13} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>5} {:>4}",
        "pods",
        "run",
        "type",
        "client",
        "sync s",
        "sync CPU",
        "sync MiB",
        "events/s",
        "CPU s",
        "peak MiB",
        "reqs",
        "errs"
    );
    // (pods, kind, client) -> the runs' figures.
    type Key<'a> = (usize, String, &'a str);
    let mut all: Vec<(Key, Vec<Figures>)> = Vec::new();
    let clients = ["kube-informer", "kube-rs"];
    for &n in &sizes {
        for run in 1..=runs {
            let mut server = Server::start(&exe, n, tls);
            if run == 1 {
                println!(
                    "        ({n} pods served at {}, {} bytes of JSON each on average)",
                    server.url, server.average_bytes
                );
            }
            std::fs::write(&kubeconfig_path, kubeconfig(&server.url)).unwrap();
            for kind in &kinds {
                // Alternate which client goes first, so neither always meets a fresher server.
                let order: Vec<&str> = if run % 2 == 1 {
                    clients.to_vec()
                } else {
                    clients.iter().rev().copied().collect()
                };
                for client in order {
                    let f =
                        run_client(&exe, &mut server, &kubeconfig_path, client, kind, n, strip);
                    println!(
                        "{n:>7} {run:>3} {:>15} {client:>13} {:>8.2} {:>9.2} {:>9.0} {:>9.0} {:>9.2} {:>9.0} {:>5} {:>4}",
                        kind_label(kind),
                        f.sync.as_secs_f64(),
                        f.cpu_at_sync,
                        f.rss_at_sync,
                        f.events_per_second,
                        f.cpu,
                        f.peak_rss,
                        f.requests_to_sync,
                        f.errors
                    );
                    let key = (n, kind.clone(), client);
                    match all.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, v)) => v.push(f),
                        None => all.push((key, vec![f])),
                    }
                }
            }
            server.stop();
        }
    }
    let _ = std::fs::remove_file(&kubeconfig_path);
    println!();
    println!("Medians of {runs} run(s):");
    println!();
    println!("| pods | type | client | sync (s) | events/s | peak RSS (MiB) | CPU user+sys (s) |");
    println!("| ---: | --- | --- | ---: | ---: | ---: | ---: |");
    for ((n, kind, client), v) in &all {
        let m = |f: fn(&Figures) -> f64| median(v.iter().map(f).collect());
        println!(
            "| {n} | {} | {client} | {:.2} | {:.0} | {:.0} | {:.1} |",
            kind_label(kind),
            m(|f| f.sync.as_secs_f64()),
            m(|f| f.events_per_second),
            m(|f| f.peak_rss),
            m(|f| f.cpu),
        );
    }
}
