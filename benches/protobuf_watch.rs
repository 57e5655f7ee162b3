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
//! `BENCH_LIVE=1` measures instead what `benches/informer.rs` sees: the events made while
//! the stream is open, so the server makes each new version's protobuf as it sends it (JSON
//! is a copy of the stored text) and the events come at the server's pace; it prints events/s
//! and the client's and the server's CPU per event (`/proc/self/stat`, both processes).
//!
//! Run: `cargo bench --bench protobuf_watch --features protobuf,k8s-openapi,k8s-openapi/v1_35`
//! (`BENCH_EVENTS`, 20,000 by default; `BENCH_ONLY=protobuf` or `json`; `BENCH_RUNS`, 3).
//!
//! Figures of 2026-11-28 (2 cores at load 10-12; instructions and allocations are exact,
//! times are not): premade, protobuf 310k instructions and 217 allocations per event against
//! JSON's 285k and 212 before the raw JSON of `managedFields` went through the library's JSON
//! deserializer, 287k and 210 after. Live (10,000 events): protobuf 1,330 events/s, client
//! 69 µs and server 177 µs of CPU per event; JSON 4,034 events/s, 58 µs and 19 µs.

#[path = "support/process_cpu.rs"]
mod process_cpu;
use process_cpu::cpu_seconds;

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

/// Child process: serve `PODS` pods and answer the parent's commands on stdin, one line
/// each: `rv` (the current resourceVersion), `touch E` (E MODIFIED events), `warm RV E`
/// (read E events from RV as protobuf, so the server's encodings exist before the parent
/// measures) and `cpu` (this process's CPU seconds so far).
fn serve(events: usize) {
    let server = ApiServer::builder()
        .resource(&pods())
        .history_limit(4 * events + 10)
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
    let typed: Api<Pod> = Api::all_with(client, &pods());
    let mut out = std::io::stdout();
    writeln!(out, "{}", server.url()).unwrap();
    out.flush().unwrap();
    let mut next = 0;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split(' ').collect();
        let answer = match words[..] {
            ["rv"] => dynamic
                .list(&ListParams::default().limit(1))
                .unwrap()
                .metadata
                .resource_version
                .unwrap(),
            ["touch", n] => {
                for _ in 0..n.parse::<usize>().unwrap() {
                    let (ns, name) = &keys[next % PODS];
                    server.touch(&pods(), Some(ns), name).unwrap();
                    next += 1;
                }
                "done".into()
            }
            ["warm", rv, n] => {
                read(&typed, rv, n.parse().unwrap());
                "done".into()
            }
            ["cpu"] => format!("{}", cpu_seconds()),
            _ => panic!("unknown command {line:?}"),
        };
        writeln!(out, "{answer}").unwrap();
        out.flush().unwrap();
    }
}

/// The child server and the pipes to it.
struct Child {
    process: std::process::Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Child {
    fn send(&mut self, command: &str) {
        let stdin = self.process.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }
    fn answer(&mut self) -> String {
        self.lines.next().unwrap().unwrap()
    }
    fn ask(&mut self, command: &str) -> String {
        self.send(command);
        self.answer()
    }
}

/// The events made while the stream is open (`BENCH_LIVE=1`): the server encodes each new
/// version when it sends it (protobuf) or copies its text (JSON), so the events come at the
/// server's pace, as in `benches/informer.rs`. Prints the client's and the server's CPU per
/// event.
fn live<K: Object>(label: &str, api: &Api<K>, child: &mut Child, events: usize) {
    if std::env::var("BENCH_ONLY").is_ok_and(|only| !label.contains(&only)) {
        return;
    }
    let rv = child.ask("rv");
    let server0: f64 = child.ask("cpu").parse().unwrap();
    let stream = api.watch(&WatchParams::from_version(&rv)).unwrap();
    let (cpu0, t) = (cpu_seconds(), Instant::now());
    child.send(&format!("touch {events}"));
    let mut seen = 0;
    for event in stream {
        if let WatchEvent::Modified(o) = event.unwrap() {
            std::hint::black_box(o.metadata().name());
            seen += 1;
            if seen == events {
                break;
            }
        }
    }
    let (cpu, wall) = (cpu_seconds() - cpu0, t.elapsed().as_secs_f64());
    assert_eq!(child.answer(), "done");
    let server: f64 = child.ask("cpu").parse::<f64>().unwrap() - server0;
    println!(
        "{label:<10} {events} live events: {:>8.0} events/s, client {:>6.1} µs CPU/event, server {:>6.1} µs CPU/event",
        events as f64 / wall,
        cpu / events as f64 * 1e6,
        server / events as f64 * 1e6,
    );
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
    let mut process = Command::new(std::env::current_exe().unwrap())
        .env("PROTOBUF_WATCH_SERVE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(process.stdout.take().unwrap()).lines();
    let mut child = Child { process, lines };
    let url = child.answer();
    let client = Client::new(ClientConfig::new(url)).unwrap();
    let runs = env_usize("BENCH_RUNS", 3);
    let protobuf: Api<Pod> = Api::all_with(client.clone(), &pods());
    let json: Api<JsonPod> = Api::all_with(client, &pods());
    if std::env::var_os("BENCH_LIVE").is_some() {
        live("protobuf", &protobuf, &mut child, events);
        live("json", &json, &mut child, events);
    } else {
        let rv = child.ask("rv");
        assert_eq!(child.ask(&format!("touch {events}")), "done");
        assert_eq!(child.ask(&format!("warm {rv} {events}")), "done");
        measure("protobuf", &protobuf, &rv, events, runs);
        measure("json", &json, &rv, events, runs);
    }
    drop(child.process.stdin.take());
    child.process.wait().unwrap();
}
