//! The client's cost per watch event, protobuf against JSON: the same `MODIFIED` events of
//! the realistic pod (`benches/support/realistic_pod.rs`) read by `Api::watch` into
//! k8s-openapi's `Pod`, the stream a reflector reads (frames or lines, the envelope, the
//! decode). Prints allocations and heap bytes per event and the best of three wall-clock
//! runs; asserts nothing about time.
//!
//! The test server runs in a child process with every event already made (and, for
//! protobuf, already encoded: the child reads them once itself), so the stream arrives as
//! fast as the client reads it and the figures are the client's alone. For a count of
//! instructions the load does not move, run one encoding under callgrind (which does not
//! follow the child) with two event counts; the difference of the totals divided by the
//! difference of the counts is the instructions per event:
//!
//! ```sh
//! B=$(ls -t $CARGO_TARGET_DIR/release/deps/protobuf_watch-* | grep -v '\.d$' | head -1)
//! BENCH_ONLY=protobuf BENCH_EVENTS=1000 valgrind --tool=callgrind $B
//! BENCH_ONLY=protobuf BENCH_EVENTS=3000 valgrind --tool=callgrind $B
//! ```
//!
//! Run: `cargo bench --bench protobuf_watch --features protobuf,k8s-openapi,k8s-openapi/v1_35`
//! (`BENCH_EVENTS`, 20,000 by default; `BENCH_ONLY=protobuf` or `json`; `BENCH_RUNS`, 3).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kube_informer::api::{ApiResource, DynamicObject, Meta, Object, WatchEvent};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, ClientConfig, ListParams, WatchParams};
use serde::Deserialize;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::counted;
#[path = "support/realistic_pod.rs"]
mod realistic_pod;

/// Pods the server holds; the events touch them in turn.
const PODS: usize = 200;

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

/// k8s-openapi's `Pod` without a protobuf message: the same type, read as JSON.
#[derive(Deserialize)]
#[serde(transparent)]
struct JsonPod(Pod);

impl Object for JsonPod {
    type Meta = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    fn metadata(&self) -> &Self::Meta {
        &self.0.metadata
    }
    fn metadata_mut(&mut self) -> &mut Self::Meta {
        &mut self.0.metadata
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Reads `events` MODIFIED events from `rv` on; the count of bytes the decoded objects'
/// names hold, so nothing is optimised away.
fn read<K: Object>(api: &Api<K>, rv: &str, events: usize) -> usize {
    let mut seen = 0;
    let mut names = 0;
    for event in api.watch(&WatchParams::from_version(rv)).unwrap() {
        match event.unwrap() {
            WatchEvent::Modified(o) => {
                names += o.metadata().name().len();
                seen += 1;
                if seen == events {
                    break;
                }
            }
            other => panic!("unexpected event {:?}", std::mem::discriminant(&other)),
        }
    }
    names
}

/// Child process: serve `PODS` pods, then on "touch E" make E MODIFIED events, read them
/// once as protobuf (so the server's encodings are made before the parent measures) and
/// answer with the resourceVersion they start after.
fn serve(events: usize) {
    let server = ApiServer::builder()
        .resource(&pods())
        .history_limit(events + 10)
        .start();
    let mut keys = Vec::new();
    for i in 0..PODS {
        let v = realistic_pod::realistic_pod(i);
        let ns = v["metadata"]["namespace"].as_str().unwrap().to_owned();
        let name = v["metadata"]["name"].as_str().unwrap().to_owned();
        server.create(&pods(), v).unwrap();
        keys.push((ns, name));
    }
    let client = Client::new(ClientConfig::new(server.url())).unwrap();
    let dynamic: Api<DynamicObject> = Api::all_with(client.clone(), &pods());
    let rv = dynamic
        .list(&ListParams::default().limit(1))
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for i in 0..events {
        let (ns, name) = &keys[i % PODS];
        server.touch(&pods(), Some(ns), name).unwrap();
    }
    let typed: Api<Pod> = Api::all_with(client, &pods());
    read(&typed, &rv, events);
    let mut out = std::io::stdout();
    writeln!(out, "{} {rv}", server.url()).unwrap();
    out.flush().unwrap();
    // Serve until the parent closes stdin.
    for _ in std::io::stdin().lock().lines() {}
}

fn measure<K: Object>(label: &str, api: &Api<K>, rv: &str, events: usize, runs: usize) {
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !label.contains(&only)) {
        return;
    }
    let mut best = f64::MAX;
    let mut per_event = (0.0, 0.0);
    for _ in 0..runs {
        let (bytes0, count0) = counted();
        let t = Instant::now();
        std::hint::black_box(read(api, rv, events));
        best = best.min(t.elapsed().as_secs_f64());
        let (bytes, count) = counted();
        per_event = (
            (count - count0) as f64 / events as f64,
            (bytes - bytes0) as f64 / events as f64,
        );
    }
    println!(
        "{label:<10} {events} events: {:>7.2} µs/event (best of {runs}), {:>6.1} allocations and {:>7.0} B allocated per event",
        best / events as f64 * 1e6,
        per_event.0,
        per_event.1,
    );
}

fn main() {
    let events = env_usize("BENCH_EVENTS", 20_000);
    if std::env::var_os("PROTOBUF_WATCH_SERVE").is_some() {
        serve(events);
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("PROTOBUF_WATCH_SERVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let (url, rv) = first.trim().split_once(' ').unwrap();
    let client = Client::new(ClientConfig::new(url)).unwrap();
    let runs = env_usize("BENCH_RUNS", 3);
    let protobuf: Api<Pod> = Api::all_with(client.clone(), &pods());
    let json: Api<JsonPod> = Api::all_with(client, &pods());
    measure("protobuf", &protobuf, rv, events, runs);
    measure("json", &json, rv, events, runs);
    drop(child.stdin.take());
    child.wait().unwrap();
}
