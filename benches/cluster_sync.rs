//! A typed informer's initial sync over protobuf and over JSON, against a real cluster or the
//! embedded test server, beside a raw paged GET of the same pages in each encoding: issue 40's
//! figures ("our protobuf sync at or below the raw JSON GET's time and ≤ 0.7x our JSON sync").
//!
//! Why a bench any user can point at a cluster: the server is the bound of a well-overlapped
//! sync, and only a real kube-apiserver (with etcd, its watch cache, its encoders, gzip) shows
//! what protobuf saves. The test server answers differently (it keeps JSON and encodes
//! protobuf per request), so its figures prove the bench runs, not the issue's claim.
//!
//! Run:
//!
//! ```text
//! # against the cluster of the current kubeconfig context (KUBECONFIG, ~/.kube/config: as kubectl)
//! BENCH_CLUSTER=1 cargo bench --bench cluster_sync --features protobuf,k8s-openapi,k8s-openapi/v1_35
//! # against the embedded testing::ApiServer (TLS, in this process)
//! cargo bench --bench cluster_sync --features protobuf,k8s-openapi,k8s-openapi/v1_35
//! ```
//!
//! Settings (environment):
//! - `BENCH_CLUSTER=1`: the current kubeconfig context's cluster; otherwise the embedded server.
//! - `BENCH_NAMESPACE=ns`: use this namespace (it must exist); otherwise a new namespace
//!   `kube-informer-bench-<random>` is created and deleted at the end.
//! - `BENCH_PODS=N` (default 10000): pods to have in the namespace. Pods the bench seeded before
//!   (label `kube-informer-bench=seeded`) count; only the missing ones are created, by
//!   `BENCH_SEED_THREADS` (default 8) threads. The pods need no node: they name a scheduler
//!   that does not exist (`spec.schedulerName`), so no scheduler binds them, no kubelet runs
//!   them, and they stay Pending.
//! - `BENCH_RUNS=N` (default 5): runs of each variant; the variants alternate; medians printed.
//! - `BENCH_QPS` (default 0: the client-side rate limiter off, so it cannot distort the
//!   figures), `BENCH_BURST`.
//! - `BENCH_KEEP=1`: keep what it created (printed), to measure again with `BENCH_NAMESPACE`.
//!
//! It touches only what it creates: the namespace (when it made it) and the pods it seeded,
//! deleted at the end, also after a panic or Ctrl-C (a guard). It prints what it created and
//! what it removes. It asserts nothing about time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube_informer::api::{ApiResource, DynamicObject, Object, PartialObjectMetadata};
use kube_informer::cache::{InformerConfig, SharedIndexInformer};
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, ClientConfig, DeleteParams, ListParams, Method, PostParams};
use serde::Deserialize;
use serde_json::{json, Value};

#[path = "support/realistic_pod.rs"]
mod realistic_pod;

/// The label on every pod the bench seeds (how a later run finds them in `BENCH_NAMESPACE`).
const SEEDED: &str = "kube-informer-bench";
/// A scheduler no cluster runs: the pods stay unscheduled (Pending) and nothing runs them.
const NO_SCHEDULER: &str = "kube-informer-bench-none";
/// Page size of the raw GETs and of the informers' lists (client-go's and ours: 500).
const PAGE: u32 = 500;
/// Bound on any one sync or paged GET (a wait with a bound, never a hang).
const PATIENCE: Duration = Duration::from_secs(600);

/// k8s-openapi's `Pod` read as JSON in a build with `protobuf`: the same type in a wrapper
/// that has no protobuf message, so the same binary measures both encodings.
#[derive(Deserialize)]
#[serde(transparent)]
struct JsonPod(#[allow(dead_code)] Pod);

impl Object for JsonPod {
    type Meta = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    fn metadata(&self) -> &Self::Meta {
        &self.0.metadata
    }
    fn metadata_mut(&mut self) -> &mut Self::Meta {
        &mut self.0.metadata
    }
}

fn pods() -> ApiResource {
    ApiResource::new("", "v1", "Pod", "pods", true)
}

fn namespaces() -> ApiResource {
    ApiResource::new("", "v1", "Namespace", "namespaces", false)
}

fn env_number(name: &str) -> Option<f64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
    )
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:08x}", h.finish() as u32)
}

// ---------------------------------------------------------------------------------------
// Where it runs.

/// The cluster measured: the kubeconfig's, or the embedded test server (kept alive here).
struct Target {
    config: ClientConfig,
    /// What it is, for the report.
    describe: String,
    embedded: Option<ApiServer>,
}

impl Target {
    fn pick() -> Target {
        if env_flag("BENCH_CLUSTER") {
            let config = Config::infer_with(&KubeconfigOptions::default())
                .unwrap_or_else(|e| panic!("BENCH_CLUSTER=1 but no usable kubeconfig: {e}"));
            Target {
                describe: format!(
                    "a REAL CLUSTER: {} ({})",
                    config.client_config.server, config.source
                ),
                config: config.client_config,
                embedded: None,
            }
        } else {
            let server = ApiServer::builder().tls().start();
            Target {
                describe: format!(
                    "the EMBEDDED testing::ApiServer at {} (TLS, in this process; not a real \
                     cluster: set BENCH_CLUSTER=1 for the kubeconfig's)",
                    server.url()
                ),
                config: server.client_config(),
                embedded: Some(server),
            }
        }
    }

    /// A fresh client (its own connections, a full rate-limit bucket) with the bench's QPS.
    fn client(&self) -> Client {
        let mut config = self.config.clone();
        config.qps = env_number("BENCH_QPS").unwrap_or(0.0) as f32;
        if let Some(burst) = env_number("BENCH_BURST") {
            config.burst = burst as u32;
        }
        Client::new(config).expect("a client for the target")
    }
}

// ---------------------------------------------------------------------------------------
// What it created, removed by a guard (drop, panic) or by the Ctrl-C handler, exactly once.

/// Everything the bench made, and whether it may still add to it.
struct Ledger {
    client: Client,
    namespace: String,
    /// Set when the bench created the namespace (then deleting it removes its pods too).
    own_namespace: AtomicBool,
    /// Pods this run created, by name.
    pods: Mutex<Vec<String>>,
    /// Creates under way; the cleanup waits for them (bounded) so none lands after it.
    in_flight: AtomicUsize,
    /// Set when the bench is stopping: no new create starts.
    stopping: AtomicBool,
    /// Set once the cleanup ran (it runs once, whoever gets there first).
    cleaned: AtomicBool,
}

impl Ledger {
    fn cleanup(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if self.cleaned.swap(true, Ordering::SeqCst) {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let created = std::mem::take(&mut *self.pods.lock().unwrap_or_else(|e| e.into_inner()));
        let own = self.own_namespace.load(Ordering::SeqCst);
        if env_flag("BENCH_KEEP") {
            println!(
                "cleanup: BENCH_KEEP set: keeping {} pods{} (measure again with BENCH_NAMESPACE={})",
                created.len(),
                if own {
                    format!(" and namespace {}", self.namespace)
                } else {
                    String::new()
                },
                self.namespace
            );
            return;
        }
        if own {
            let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &namespaces());
            match api.delete(&self.namespace, &DeleteParams::default()) {
                Ok(_) => println!(
                    "cleanup: deleted namespace {} (created by this run; its {} pods go with it)",
                    self.namespace,
                    created.len()
                ),
                Err(e) => eprintln!("cleanup: deleting namespace {}: {e}", self.namespace),
            }
            return;
        }
        if created.is_empty() {
            return;
        }
        println!(
            "cleanup: deleting the {} pods this run created in {} (nothing else)",
            created.len(),
            self.namespace
        );
        let api: Api<PartialObjectMetadata> =
            Api::namespaced_with(self.client.clone(), &self.namespace, &pods());
        let failed = AtomicUsize::new(0);
        let next = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..seed_threads() {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(name) = created.get(i) else { break };
                    match api.delete(name, &DeleteParams::default()) {
                        Ok(_) => {}
                        Err(e) if e.code() == Some(404) => {}
                        Err(e) => {
                            if failed.fetch_add(1, Ordering::Relaxed) == 0 {
                                eprintln!("cleanup: deleting pod {name}: {e}");
                            }
                        }
                    }
                });
            }
        });
        let failed = failed.into_inner();
        println!(
            "cleanup: {} pods deleted{}",
            created.len() - failed,
            if failed > 0 {
                format!(", {failed} failed (they carry the label {SEEDED}=seeded)")
            } else {
                String::new()
            }
        );
    }
}

/// Runs the cleanup when dropped: at the end, or while a panic unwinds.
struct Guard(Arc<Ledger>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.cleanup();
    }
}

/// `BENCH_SEED_THREADS` (default 8, at most 64). Never panics: the cleanup calls it.
fn seed_threads() -> usize {
    std::env::var("BENCH_SEED_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .map_or(8, |n| n.clamp(1, 64))
}

// ---------------------------------------------------------------------------------------
// Seeding.

/// The realistic pod `i` (benches/support), made fit for a real cluster: in `namespace`, a
/// name of this run, no node and a scheduler nobody runs (it stays Pending, nothing runs
/// it), owned by the namespace (an owner that exists, so the garbage collector leaves it),
/// no `priority` (admission computes it), and no status (the server sets a pod's status
/// on create).
fn seed_pod(i: usize, run: &str, namespace: &str, namespace_uid: &str) -> Value {
    let mut pod = realistic_pod::realistic_pod(i);
    let name = format!(
        "{}-{run}",
        pod["metadata"]["name"].as_str().unwrap_or("web")
    );
    let meta = &mut pod["metadata"];
    meta["name"] = json!(name);
    meta["namespace"] = json!(namespace);
    meta["labels"][SEEDED] = json!("seeded");
    meta["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Namespace",
        "name": namespace, "uid": namespace_uid}]);
    let spec = pod["spec"].as_object_mut().expect("a spec");
    spec.remove("nodeName");
    spec.remove("priority");
    spec.remove("preemptionPolicy");
    spec.insert("schedulerName".into(), json!(NO_SCHEDULER));
    pod.as_object_mut().expect("an object").remove("status");
    pod
}

/// Makes sure the namespace holds `want` seeded pods; returns how many the namespace holds.
fn seed(ledger: &Ledger, want: usize, run: &str, namespace_uid: &str) -> usize {
    let api: Api<PartialObjectMetadata> =
        Api::namespaced_with(ledger.client.clone(), &ledger.namespace, &pods());
    let label = format!("{SEEDED}=seeded");
    let have = api
        .list_all(&ListParams::default().labels(&label).limit(PAGE))
        .expect("listing the seeded pods")
        .items
        .len();
    if have >= want {
        println!(
            "seed: {have} pods labelled {label} already in {}: none created",
            ledger.namespace
        );
    } else {
        let missing = want - have;
        println!(
            "seed: creating {missing} pods in {} ({have} there already), {} threads; \
             they need no node and stay Pending (scheduler {NO_SCHEDULER:?} does not exist)",
            ledger.namespace,
            seed_threads()
        );
        let typed: Api<DynamicObject> =
            Api::namespaced_with(ledger.client.clone(), &ledger.namespace, &pods());
        let next = AtomicUsize::new(have);
        let error: Mutex<Option<String>> = Mutex::new(None);
        let t = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..seed_threads() {
                s.spawn(|| loop {
                    if ledger.stopping.load(Ordering::SeqCst)
                        || error.lock().unwrap_or_else(|e| e.into_inner()).is_some()
                    {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= want {
                        break;
                    }
                    ledger.in_flight.fetch_add(1, Ordering::SeqCst);
                    // Checked again inside `in_flight`: a cleanup that started meanwhile
                    // either sees this create or this create sees it stopping.
                    if ledger.stopping.load(Ordering::SeqCst) {
                        ledger.in_flight.fetch_sub(1, Ordering::SeqCst);
                        break;
                    }
                    let pod = seed_pod(i, run, &ledger.namespace, namespace_uid);
                    let name = pod["metadata"]["name"].as_str().unwrap_or("").to_owned();
                    match typed.create(&PostParams::default(), &pod) {
                        Ok(_) => ledger
                            .pods
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(name),
                        Err(e) => {
                            error
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert_with(|| format!("creating pod {name}: {e}"));
                        }
                    }
                    ledger.in_flight.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        if let Some(e) = error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            panic!("seed: {e}");
        }
        println!(
            "seed: created {} pods in {:.1} s",
            ledger.pods.lock().unwrap_or_else(|e| e.into_inner()).len(),
            t.elapsed().as_secs_f64()
        );
    }
    let all = api
        .list_all(&ListParams::default().limit(PAGE))
        .expect("listing the namespace's pods")
        .items
        .len();
    if all != want.max(have) {
        println!("seed: note: the namespace holds {all} pods in all (the measures list them all)");
    }
    all
}

/// Creates `kube-informer-bench-<random>`; on a real cluster, waits for its `default`
/// ServiceAccount (pods cannot be admitted before it exists). Returns the namespace's uid.
fn create_namespace(ledger: &Ledger, embedded: bool) -> String {
    let api: Api<DynamicObject> = Api::all_with(ledger.client.clone(), &namespaces());
    let created = api
        .create(
            &PostParams::default(),
            &json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ledger.namespace,
                                 "labels": {"app.kubernetes.io/created-by": SEEDED}}}),
        )
        .unwrap_or_else(|e| panic!("creating namespace {}: {e}", ledger.namespace));
    ledger.own_namespace.store(true, Ordering::SeqCst);
    println!("created namespace {}", ledger.namespace);
    if !embedded {
        let sa = ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true);
        let sas: Api<PartialObjectMetadata> =
            Api::namespaced_with(ledger.client.clone(), &ledger.namespace, &sa);
        let deadline = Instant::now() + Duration::from_secs(120);
        while sas.get("default").is_err() {
            assert!(
                Instant::now() < deadline,
                "namespace {}: no default ServiceAccount after 120 s",
                ledger.namespace
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    created.metadata.uid.clone().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// The measures.

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Variant {
    RawJson,
    RawProtobuf,
    SyncProtobuf,
    SyncJson,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::RawJson,
        Variant::RawProtobuf,
        Variant::SyncProtobuf,
        Variant::SyncJson,
    ];

    fn label(self) -> &'static str {
        match self {
            Variant::RawJson => "raw paged GET, JSON",
            Variant::RawProtobuf => "raw paged GET, protobuf",
            Variant::SyncProtobuf => "typed Pod informer sync, protobuf",
            Variant::SyncJson => "typed Pod informer sync, JSON",
        }
    }

    fn accept(self) -> &'static str {
        match self {
            Variant::RawJson | Variant::SyncJson => <JsonPod as Object>::LIST_ACCEPT,
            Variant::RawProtobuf | Variant::SyncProtobuf => <Pod as Object>::PROTOBUF_LIST_ACCEPT,
        }
    }
}

/// One measure: time, body bytes and pages (the raw GETs), objects.
struct Measure {
    seconds: f64,
    bytes: u64,
    pages: usize,
    objects: usize,
    gzip: bool,
}

/// The `continue` token of a JSON list page, read without decoding the page: kube-apiserver
/// writes `metadata` before `items`, so the token is looked for before `"items"` only.
fn json_continue(body: &[u8]) -> Result<String, String> {
    let head = match find(body, b"\"items\"") {
        Some(at) => &body[..at],
        None => body,
    };
    let Some(at) = find(head, b"\"continue\":\"") else {
        return Ok(String::new());
    };
    let rest = &head[at + b"\"continue\":\"".len()..];
    let end = rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\')
        .ok_or("an unterminated continue token")?;
    if rest[end] == b'\\' {
        return Err("an escaped continue token (not base64)".into());
    }
    String::from_utf8(rest[..end].to_vec()).map_err(|_| "a continue token not in UTF-8".into())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One protobuf varint at `*at`.
fn varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at).ok_or("a truncated varint")?;
        *at += 1;
        value |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err("a varint longer than 10 bytes".into())
}

/// The length-delimited field `want` of a message, reading only the fields before it.
fn pb_field(message: &[u8], want: u64) -> Result<Option<&[u8]>, String> {
    let mut at = 0;
    while at < message.len() {
        let key = varint(message, &mut at)?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                varint(message, &mut at)?;
            }
            1 => at += 8,
            5 => at += 4,
            2 => {
                let len = usize::try_from(varint(message, &mut at)?).map_err(|_| "too long")?;
                let end = at.checked_add(len).filter(|&e| e <= message.len());
                let end = end.ok_or("a field past the end")?;
                if field == want {
                    return Ok(Some(&message[at..end]));
                }
                at = end;
            }
            _ => return Err(format!("wire type {wire}")),
        }
    }
    Ok(None)
}

/// The `continue` token of a protobuf list page: the envelope's raw list, its field 1
/// (`ListMeta`), that message's field 3. The items are not read.
fn protobuf_continue(body: &[u8]) -> Result<String, String> {
    let envelope = kube_informer::protobuf::read_envelope(body).map_err(|e| e.to_string())?;
    let Some(meta) = pb_field(envelope.raw, 1)? else {
        return Ok(String::new());
    };
    let token = pb_field(meta, 3)?.unwrap_or_default();
    String::from_utf8(token.to_vec()).map_err(|_| "a continue token not in UTF-8".into())
}

/// The same request the measure makes, once, untimed: the client's connection is open and
/// its credentials ready before the clock starts (for every variant alike).
fn warm(client: &Client, namespace: &str, accept: &str) {
    client
        .request(Method::GET, &format!("/api/v1/namespaces/{namespace}/pods"))
        .query("limit", "1")
        .accept(accept)
        .send()
        .expect("the warm-up GET");
}

/// A paged GET of every pod, 500 a page, over the client's one keep-alive connection; each
/// body is read whole and dropped, only its `continue` token looked at.
fn raw_get(target: &Target, namespace: &str, variant: Variant) -> Measure {
    let client = target.client();
    let accept = variant.accept();
    warm(&client, namespace, accept);
    let path = format!("/api/v1/namespaces/{namespace}/pods");
    let (mut bytes, mut pages, mut token, mut gzip) = (0u64, 0usize, String::new(), false);
    let t = Instant::now();
    loop {
        let mut request = client
            .request(Method::GET, &path)
            .query("limit", &PAGE.to_string());
        if !token.is_empty() {
            request = request.query("continue", &token);
        }
        let res = request.accept(accept).send().expect("a raw page");
        gzip |= res.header("content-encoding").is_some();
        let protobuf = res
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/vnd.kubernetes.protobuf"));
        assert_eq!(
            protobuf,
            variant == Variant::RawProtobuf,
            "the server answered {:?} to {accept:?}",
            res.header("content-type")
        );
        let body = res.into_body();
        bytes += body.len() as u64;
        pages += 1;
        token = if protobuf {
            protobuf_continue(&body)
        } else {
            json_continue(&body)
        }
        .unwrap_or_else(|e| panic!("page {pages}: {e}"));
        drop(body);
        if token.is_empty() {
            break;
        }
        assert!(t.elapsed() < PATIENCE, "a paged GET past {PATIENCE:?}");
    }
    Measure {
        seconds: t.elapsed().as_secs_f64(),
        bytes,
        pages,
        objects: 0,
        gzip,
    }
}

/// A typed informer (k8s-openapi `Pod`, or the same type read as JSON) from `start` to
/// `has_synced`; the cache is then checked to hold every pod.
fn sync<K: Object + Send + Sync + 'static>(
    target: &Target,
    namespace: &str,
    variant: Variant,
) -> Measure {
    let client = target.client();
    warm(&client, namespace, variant.accept());
    let api: Api<K> = Api::namespaced_with(client, namespace, &pods());
    let informer = SharedIndexInformer::new(api, InformerConfig::new());
    let t = Instant::now();
    informer.start().expect("the informer starts");
    let synced = informer.wait_for_cache_sync(PATIENCE);
    let seconds = t.elapsed().as_secs_f64();
    assert!(
        synced && informer.has_synced(),
        "no sync within {PATIENCE:?}"
    );
    let objects = informer.store().len();
    informer.stop();
    Measure {
        seconds,
        bytes: 0,
        pages: 0,
        objects,
        gzip: false,
    }
}

fn measure(target: &Target, namespace: &str, variant: Variant) -> Measure {
    match variant {
        Variant::RawJson | Variant::RawProtobuf => raw_get(target, namespace, variant),
        Variant::SyncProtobuf => sync::<Pod>(target, namespace, variant),
        Variant::SyncJson => sync::<JsonPod>(target, namespace, variant),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument is not ours.
    let want = env_number("BENCH_PODS").map_or(10_000, |n| n.max(1.0) as usize);
    let runs = env_number("BENCH_RUNS").map_or(5, |n| n.max(1.0) as usize);
    let target = Target::pick();
    println!("cluster_sync: against {}", target.describe);
    let qps = env_number("BENCH_QPS").unwrap_or(0.0);
    println!(
        "client-side rate limit: {}",
        if qps > 0.0 {
            format!(
                "{qps} requests/s, burst {} (BENCH_QPS/BENCH_BURST)",
                env_number("BENCH_BURST").map_or(target.config.burst, |b| b as u32)
            )
        } else {
            "off (BENCH_QPS=0, the default here: no client-side wait in any figure)".into()
        }
    );
    let run = random_suffix()[..5].to_owned();
    let (namespace, given) = match std::env::var("BENCH_NAMESPACE") {
        Ok(ns) if !ns.is_empty() => (ns, true),
        _ => (format!("kube-informer-bench-{}", random_suffix()), false),
    };
    let ledger = Arc::new(Ledger {
        client: target.client(),
        namespace: namespace.clone(),
        own_namespace: AtomicBool::new(false),
        pods: Mutex::new(Vec::new()),
        in_flight: AtomicUsize::new(0),
        stopping: AtomicBool::new(false),
        cleaned: AtomicBool::new(false),
    });
    {
        let ledger = ledger.clone();
        if let Err(e) = ctrlc::set_handler(move || {
            eprintln!("cluster_sync: interrupted: cleaning up");
            ledger.cleanup();
            std::process::exit(130);
        }) {
            eprintln!("cluster_sync: no Ctrl-C handler ({e}): an interrupt skips the cleanup");
        }
    }
    let guard = Guard(ledger.clone());
    let namespace_uid = if given {
        let api: Api<DynamicObject> = Api::all_with(ledger.client.clone(), &namespaces());
        let ns = match api.get(&namespace) {
            // The embedded server starts empty: the namespace is made there (it goes with
            // the server), so that this path runs here too.
            Err(e) if e.code() == Some(404) && target.embedded.is_some() => {
                println!("namespace {namespace} made in the embedded server (it goes with it)");
                api.create(
                    &PostParams::default(),
                    &json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": namespace}}),
                )
                .unwrap_or_else(|e| panic!("BENCH_NAMESPACE={namespace}: {e}"))
            }
            other => other.unwrap_or_else(|e| panic!("BENCH_NAMESPACE={namespace}: {e}")),
        };
        println!("namespace {namespace} (BENCH_NAMESPACE: not created, not deleted)");
        ns.metadata.uid.clone().unwrap_or_default()
    } else {
        create_namespace(&ledger, target.embedded.is_some())
    };
    let listed = seed(&ledger, want, &run, &namespace_uid);

    println!(
        "measuring: {listed} pods, pages of {PAGE}, {runs} runs of each variant, alternating, medians"
    );
    let mut figures: BTreeMap<Variant, Vec<Measure>> = BTreeMap::new();
    for r in 0..runs {
        // Each run starts with the next variant, so none is always first or last.
        for k in 0..Variant::ALL.len() {
            let variant = Variant::ALL[(r + k) % Variant::ALL.len()];
            let m = measure(&target, &namespace, variant);
            if m.objects > 0 && m.objects != listed {
                // Someone else's pods come and go in a namespace the bench did not make.
                println!(
                    "  note: the cache held {} pods, {listed} were listed",
                    m.objects
                );
            }
            println!(
                "  run {}: {:<34} {:>8.3} s",
                r + 1,
                variant.label(),
                m.seconds
            );
            figures.entry(variant).or_default().push(m);
        }
    }
    let time = |v: Variant| median(figures[&v].iter().map(|m| m.seconds).collect());
    let bytes = |v: Variant| figures[&v].last().map_or(0, |m| m.bytes);
    println!();
    println!(
        "{listed} pods, medians of {runs} (against {}):",
        target.describe
    );
    for v in Variant::ALL {
        let wire = match v {
            Variant::RawJson | Variant::SyncJson => bytes(Variant::RawJson),
            _ => bytes(Variant::RawProtobuf),
        };
        let m = figures[&v].last().expect("a run");
        println!(
            "  {:<34} {:>8.3} s  {:>6.1} MB{}",
            v.label(),
            time(v),
            wire as f64 / 1e6,
            match v {
                Variant::RawJson | Variant::RawProtobuf => format!(
                    " in {} pages ({:.0} bytes a pod){}",
                    m.pages,
                    wire as f64 / listed.max(1) as f64,
                    if m.gzip { ", gzip on the wire" } else { "" }
                ),
                _ => " (the same pages as the raw GET)".into(),
            }
        );
    }
    let ratio = |a: Variant, b: Variant| time(a) / time(b);
    let verdict = |r: f64, goal: f64| if r <= goal { "met" } else { "NOT met" };
    let r1 = ratio(Variant::SyncProtobuf, Variant::RawJson);
    let r2 = ratio(Variant::SyncProtobuf, Variant::SyncJson);
    println!(
        "  protobuf sync / raw JSON GET: {r1:.2}x (goal ≤ 1.00x: {})",
        verdict(r1, 1.0)
    );
    println!(
        "  protobuf sync / JSON sync:    {r2:.2}x (goal ≤ 0.70x: {})",
        verdict(r2, 0.7)
    );
    println!(
        "  raw protobuf GET / raw JSON GET: {:.2}x time, {:.2}x bytes (the server's own gain)",
        ratio(Variant::RawProtobuf, Variant::RawJson),
        bytes(Variant::RawProtobuf) as f64 / bytes(Variant::RawJson).max(1) as f64
    );
    if target.embedded.is_some() {
        println!(
            "  (the embedded test server, not kube-apiserver: these are not issue 40's figures)"
        );
    }
    drop(guard);
}
