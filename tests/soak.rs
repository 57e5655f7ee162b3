//! Chaos soak: a shared informer with several kinds of handler, under random churn and random
//! faults from the test API server, checked for exact convergence after every quiet period.
//!
//! The main test is ignored by default (it runs for `SOAK_SECONDS`, default 30); a short
//! smoke run of the same body (3 s) runs in `cargo test`.
//!
//! ```text
//! # CI-sized (debug build, about a minute)
//! SOAK_SECONDS=45 cargo test --test soak -- --ignored --nocapture
//! # 30 minutes
//! SOAK_SECONDS=1800 cargo test --release --test soak chaos_soak -- --exact --ignored --nocapture
//! # replay a seed; SOAK_RESYNC_MS=0 turns the resyncing handler's resync off
//! SOAK_SEED=12345 SOAK_SECONDS=60 cargo test --test soak chaos_soak -- --exact --ignored --nocapture
//! ```
//!
//! What it does, in rounds until the time is up:
//! - **churn**: creates, updates and deletes pods over a few hundred keys, directly on the
//!   server, at a random pace; and now and then **a fault**: a watch cut mid-event, a watch
//!   closed after N events or gone silent, 410 on watch, list and continued list, 429 and
//!   5xx with `Retry-After: 1`, a garbage line, a stalled answer, a list answer cut short,
//!   compaction of the history, every connection dropped, the server down for a while
//!   (connections refused) and restarted on the same port, a restart with the history kept
//!   (a new watch cache: watches from older versions get 410, paged lists at them answer the
//!   old state), a restart after compaction, a lagging watch cache (every watch and
//!   streaming list refused as too large, hundreds of times over: the reflector must back
//!   off between them, no more than one refusal per initial back-off, or the round fails);
//!   and, after some quiet periods, **a restore from
//!   a backup** taken a few rounds before (etcd restored: the server's versions and objects
//!   go back below the informer's; writes pause until the informer is no longer ahead of the
//!   server, since no client can tell a restore once the server's versions pass its own
//!   again, then the next quiet period checks the restored state);
//! - **a quiet period**: churn stops, pending faults are cleared, connections are dropped if
//!   a watch may have been left silent, then it waits (bounded) until the cache and every
//!   handler's view equal the server, keys and resourceVersions, and the namespace index
//!   agrees; it also checks what each handler was told along the way: no add of a key it
//!   holds, no update or delete of a key it does not hold (a double delete), no version going
//!   backwards for a key (even across a delete), an update's old object is the one it holds;
//!   then, settled, it watches the request rate for a second: a reflector that keeps listing
//!   and watching (a list → watch → 410 loop) is a failure even when the data converged.
//!
//! Handlers: a plain one, a slow one (sleeps per event; the informer's small backlog makes
//! its listener coalesce), one that panics on some events (after recording them), one with a
//! 50 ms resync period, and one added late, after sync, while churn runs.
//!
//! The seed is printed first; the same seed replays the same sequence of operations and
//! faults (the interleaving with the informer's threads still varies). On a failure the last
//! operations, faults and watch errors are printed with the failing check.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{pod, pods, thread_names};
use kube_informer::api::DynamicObject;
use kube_informer::cache::{
    DeletedObject, EventHandler, InformerConfig, ReflectorConfig, SharedIndexInformer,
    NAMESPACE_INDEX,
};
use kube_informer::testing::{ApiServer, Fault, Target};
use kube_informer::{Api, Client};
use parking_lot::Mutex;

/// Bound on one quiet period's wait for convergence (generous: never a timing assertion).
const CONVERGENCE_BOUND: Duration = Duration::from_secs(60);
const NAMESPACES: [&str; 3] = ["alpha", "beta", "gamma"];
const NAMES_PER_NAMESPACE: usize = 100;

/// The soak and its smoke run count threads: they must not overlap.
static EXCLUSIVE: Mutex<()> = Mutex::new(());

#[test]
#[ignore = "chaos soak: SOAK_SECONDS=45 cargo test --test soak -- --ignored"]
fn chaos_soak() {
    let secs = env_u64("SOAK_SECONDS").unwrap_or(30);
    let seed = env_u64("SOAK_SEED").unwrap_or_else(random_seed);
    run_soak(seed, Duration::from_secs(secs));
}

/// A few seconds of the same, in every `cargo test`.
#[test]
fn chaos_soak_smoke() {
    let seed = env_u64("SOAK_SEED").unwrap_or_else(random_seed);
    run_soak(seed, Duration::from_secs(3));
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: not a number")),
    )
}

fn random_seed() -> u64 {
    common::random_u64() % 1_000_000_000
}

/// splitmix64: small, seedable, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// What one handler was told, rebuilt into a map, and what was wrong with it.
#[derive(Default)]
struct TrackState {
    objects: BTreeMap<String, u64>,
    /// Highest version seen per key, kept across deletes.
    newest: HashMap<String, u64>,
    /// The last few notifications per key, for the failure report.
    history: HashMap<String, VecDeque<String>>,
    violations: Vec<String>,
    /// Set by a restore from a backup: the server's versions went back, so versions may go
    /// back for a while (the informer relists the restored state); the check resumes, from
    /// what the handler then holds, after the next convergence.
    restored: bool,
    adds: u64,
    updates: u64,
    resyncs: u64,
    deletes: u64,
    tombstones: u64,
}

impl TrackState {
    fn snapshot(&self) -> Vec<(String, String)> {
        self.objects
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect()
    }

    fn violation(&mut self, what: String) {
        if self.violations.len() < 100 {
            self.violations.push(what);
        }
    }

    fn record(&mut self, key: &str, what: String) {
        let h = self.history.entry(key.to_owned()).or_default();
        if h.len() >= 16 {
            h.pop_front();
        }
        h.push_back(what);
    }

    /// The violations, each key's recent notifications and server writes after its first
    /// violation.
    fn report(&self, server_ops: &KeyLog) -> String {
        let mut out = Vec::new();
        let mut keys_done = BTreeSet::new();
        for v in &self.violations {
            out.push(format!("  {v}"));
            let key = v.split_whitespace().nth(2).unwrap_or("");
            if keys_done.insert(key.to_owned()) {
                if let Some(h) = self.history.get(key) {
                    out.push(format!(
                        "    (last notifications of {key}: {})",
                        h.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
                if let Some(h) = server_ops.0.get(key) {
                    out.push(format!(
                        "    (last writes of {key} on the server: {})",
                        h.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        out.join("\n")
    }

    fn see(&mut self, key: &str, rv: u64, what: &str) {
        let newest = self.newest.entry(key.to_owned()).or_insert(0);
        if self.restored {
            *newest = rv;
        } else if rv < *newest {
            let was = *newest;
            self.violation(format!(
                "{what} of {key}: version {rv} after version {was} (went backwards)"
            ));
        } else {
            *self.newest.get_mut(key).expect("just inserted") = rv;
        }
    }
}

fn rv_of(o: &DynamicObject) -> u64 {
    o.metadata.resource_version().parse().unwrap_or(0)
}

#[derive(Clone)]
struct Tracker {
    state: Arc<Mutex<TrackState>>,
    /// Sleep per event (a slow handler).
    delay: Duration,
    /// Panic (after recording) on events whose version is a multiple of this.
    panic_every: u64,
}

impl Tracker {
    fn new(delay: Duration, panic_every: u64) -> Tracker {
        Tracker {
            state: Arc::default(),
            delay,
            panic_every,
        }
    }

    fn after(&self, rv: u64) {
        if !self.delay.is_zero() {
            std::thread::sleep(self.delay);
        }
        if self.panic_every > 0 && rv % self.panic_every == 0 {
            panic!("soak: a handler panics on purpose at version {rv}");
        }
    }
}

impl EventHandler<DynamicObject> for Tracker {
    fn on_add(&mut self, obj: Arc<DynamicObject>, _initial: bool) {
        let key = obj.metadata.key();
        let rv = rv_of(&obj);
        {
            let mut s = self.state.lock();
            s.adds += 1;
            s.record(&key, format!("add {rv}"));
            if let Some(held) = s.objects.get(&key).copied() {
                s.violation(format!("add of {key} at {rv}, already held at {held}"));
            }
            s.see(&key, rv, "add");
            s.objects.insert(key, rv);
        }
        self.after(rv);
    }

    fn on_update(&mut self, old: Arc<DynamicObject>, new: Arc<DynamicObject>) {
        let key = new.metadata.key();
        let (old_rv, rv) = (rv_of(&old), rv_of(&new));
        {
            let mut s = self.state.lock();
            s.updates += 1;
            s.record(&key, format!("update {old_rv}->{rv}"));
            if Arc::ptr_eq(&old, &new) || old_rv == rv {
                s.resyncs += 1;
            }
            match s.objects.get(&key).copied() {
                None => s.violation(format!("update of {key} ({old_rv} -> {rv}), not held")),
                Some(held) if held != old_rv => s.violation(format!(
                    "update of {key} ({old_rv} -> {rv}): the handler holds {held}"
                )),
                Some(_) => {}
            }
            s.see(&key, rv, "update");
            s.objects.insert(key, rv);
        }
        self.after(rv);
    }

    fn on_delete(&mut self, gone: DeletedObject<DynamicObject>) {
        let key = gone.object().metadata.key();
        let rv = rv_of(gone.object());
        {
            let mut s = self.state.lock();
            s.deletes += 1;
            let kind = if gone.is_tombstone() {
                "tombstone"
            } else {
                "delete"
            };
            s.record(&key, format!("{kind} {rv}"));
            if gone.is_tombstone() {
                s.tombstones += 1;
            }
            if s.objects.remove(&key).is_none() {
                let kind = if gone.is_tombstone() {
                    "tombstone"
                } else {
                    "delete"
                };
                s.violation(format!(
                    "{kind} of {key} at {rv}, not held (a duplicate delete?)"
                ));
            }
            s.see(&key, rv, "delete");
        }
        self.after(rv);
    }
}

/// The last writes per key, printed with a failure.
#[derive(Default)]
struct KeyLog(HashMap<String, VecDeque<String>>);

impl KeyLog {
    fn note(&mut self, key: &str, what: String) {
        let h = self.0.entry(key.to_owned()).or_default();
        if h.len() >= 16 {
            h.pop_front();
        }
        h.push_back(what);
    }
}

/// The last things that happened, printed with a failure.
struct Journal {
    start: Instant,
    lines: Mutex<VecDeque<String>>,
}

impl Journal {
    fn note(&self, line: impl Into<String>) {
        let mut l = self.lines.lock();
        if l.len() >= 300 {
            l.pop_front();
        }
        l.push_back(format!(
            "{:>9.3}s {}",
            self.start.elapsed().as_secs_f64(),
            line.into()
        ));
    }

    fn dump(&self) -> String {
        self.lines
            .lock()
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The library's threads (`ki/pods/refl`, ...); the test API server's are `kiapi/...`.
fn informer_threads() -> Vec<String> {
    thread_names()
        .into_iter()
        .filter(|n| n.starts_with("ki/"))
        .collect()
}

#[derive(Default)]
struct Counts {
    creates: u64,
    updates: u64,
    deletes: u64,
    faults: BTreeMap<&'static str, u64>,
    checks: u64,
    failures: Vec<String>,
    /// The highest rate of list and watch requests (continue pages not counted) in a churn
    /// phase with faults, and in a settled window after convergence.
    max_rate_faults: f64,
    max_settled_requests: usize,
}

/// After convergence nothing is left to do but watch: in this window a reflector makes a
/// watch or two (they time out every 1–4 s), perhaps a late relist from a fault's back-off.
/// A list → watch → 410 loop makes dozens of requests, or relists again and again on a
/// capped back-off: either is a failure.
const SETTLED_WINDOW: Duration = Duration::from_secs(1);
const SETTLED_MAX_REQUESTS: usize = 8;
const SETTLED_MAX_RELISTS: u64 = 2;

/// List and watch requests so far: continue pages are part of their list.
fn list_and_watch_requests(server: &ApiServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| !r.contains("continue="))
        .count()
}

fn relists(informer: &SharedIndexInformer<DynamicObject>) -> u64 {
    informer.health().reflector.relists.values().sum()
}

/// Differences between what the server holds and what a view holds, at most `max`.
fn diff(want: &[(String, String)], got: &[(String, String)], max: usize) -> Vec<String> {
    let want: BTreeMap<_, _> = want.iter().cloned().collect();
    let got: BTreeMap<_, _> = got.iter().cloned().collect();
    let mut out = Vec::new();
    for (k, v) in &want {
        match got.get(k) {
            None => out.push(format!("missing {k}@{v}")),
            Some(g) if g != v => out.push(format!("{k}: server {v}, here {g}")),
            _ => {}
        }
    }
    for (k, v) in &got {
        if !want.contains_key(k) {
            out.push(format!("extra {k}@{v} (deleted on the server)"));
        }
    }
    let n = out.len();
    out.truncate(max);
    if n > max {
        out.push(format!("... {} more", n - max));
    }
    out
}

fn run_soak(seed: u64, duration: Duration) {
    let _exclusive = EXCLUSIVE.lock();
    println!("soak: seed {seed} (replay with SOAK_SEED={seed}), {duration:?}");
    let mut rng = Rng(seed);
    let journal = Arc::new(Journal {
        start: Instant::now(),
        lines: Mutex::new(VecDeque::new()),
    });
    let history = rng.pick(&[300usize, 2_000, 10_000]);
    let server = ApiServer::builder()
        .resource(&pods())
        .history_limit(history)
        .bookmark_interval(Duration::from_millis(rng.range(50, 500)))
        .start();
    // A list at a version the server has not reached waits for it (kube-apiserver: 3 s),
    // and the client retries the 504 five times: shorter here, so that a restore met by a
    // list costs seconds, not half a minute.
    server.set_too_large_wait(Duration::from_millis(rng.pick(&[50, 300, 1_000])));
    let track_threads = std::path::Path::new("/proc/self/task").exists();
    let threads_before = informer_threads();

    let backoff_initial = Duration::from_millis(rng.range(10, 50));
    let page_size = rng.range(3, 40) as u32;
    let streaming_list = rng.chance(50);
    let max_backlog = rng.range(4, 32) as usize;
    let mut config: InformerConfig<DynamicObject> = InformerConfig::new()
        .reflector(
            ReflectorConfig::new()
                .backoff(backoff_initial, Duration::from_millis(200))
                .page_size(page_size)
                .streaming_list(streaming_list)
                .watch_timeout(Duration::from_secs(1), Duration::from_secs(4)),
        )
        .max_backlog(max_backlog);
    let watch_errors = Arc::new(AtomicU64::new(0));
    {
        let (j, n) = (Arc::clone(&journal), Arc::clone(&watch_errors));
        config = config.on_watch_error(move |e| {
            n.fetch_add(1, Ordering::Relaxed);
            j.note(format!("  watch error: {e}"));
        });
    }
    let panics = Arc::new(AtomicU64::new(0));
    {
        let p = Arc::clone(&panics);
        config = config.on_handler_panic(move |_: &str| {
            p.fetch_add(1, Ordering::Relaxed);
        });
    }
    println!(
        "soak: history {history}, page size {}, streaming list {}, max backlog {}, back-off {:?}..{:?}",
        page_size,
        streaming_list,
        max_backlog,
        backoff_initial,
        Duration::from_millis(200)
    );
    // The panic messages of the panicking handler are expected: keep them off stderr.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or("");
        if !msg.starts_with("soak: a handler panics on purpose") {
            default_hook(info);
        }
    }));

    let api: Api<DynamicObject> =
        Api::all_with(Client::new(server.client_config()).unwrap(), &pods());
    let informer = SharedIndexInformer::new(api, config);
    let mut handlers: Vec<(&'static str, Tracker)> = vec![
        ("plain", Tracker::new(Duration::ZERO, 0)),
        ("slow", Tracker::new(Duration::from_micros(300), 0)),
        ("panicking", Tracker::new(Duration::ZERO, 7)),
        ("resync-50ms", Tracker::new(Duration::ZERO, 0)),
    ];
    for (name, h) in &handlers {
        if *name == "resync-50ms" {
            // SOAK_RESYNC_MS changes the period (0: no resync), to tell resync faults apart.
            let ms = env_u64("SOAK_RESYNC_MS").unwrap_or(50);
            informer
                .add_event_handler_with_resync(h.clone(), Duration::from_millis(ms))
                .unwrap();
        } else {
            informer.add_event_handler(h.clone()).unwrap();
        }
    }

    // Some objects before the start, so the first list has pages.
    let mut live: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut generation = 0u64;
    let mut counts = Counts::default();
    let mut server_ops = KeyLog::default();
    for _ in 0..rng.range(50, 200) {
        let slot = (
            rng.below(NAMESPACES.len() as u64) as usize,
            rng.below(NAMESPACES_PER_SLOT) as usize,
        );
        if live.insert(slot) {
            let (ns, name) = slot_name(slot);
            server.create(&pods(), pod(ns, &name, "Pending")).unwrap();
            counts.creates += 1;
        }
    }
    informer.start().unwrap();
    assert!(
        informer.wait_for_cache_sync(CONVERGENCE_BOUND),
        "seed {seed}: no initial sync within {CONVERGENCE_BOUND:?}"
    );

    let deadline = Instant::now() + duration;
    let mut late_added = false;
    let mut silence_pending = false;
    let mut down_until: Option<Instant> = None;
    // A backup of the server and of which slots were live then, for a later restore.
    let mut backup: Option<(kube_informer::testing::Backup, BTreeSet<(usize, usize)>)> = None;
    let mut round = 0u64;
    'soak: while Instant::now() < deadline {
        round += 1;
        // Churn with faults for a random while.
        let phase_start = (Instant::now(), list_and_watch_requests(&server));
        let phase_end = Instant::now() + Duration::from_millis(rng.range(300, 2_500));
        let mut next_fault = Instant::now() + Duration::from_millis(rng.range(10, 200));
        let mut storm: Option<Storm> = None;
        while Instant::now() < phase_end.min(deadline) {
            for _ in 0..rng.range(1, 20) {
                let slot = (
                    rng.below(NAMESPACES.len() as u64) as usize,
                    rng.below(NAMESPACES_PER_SLOT) as usize,
                );
                let (ns, name) = slot_name(slot);
                let key = format!("{ns}/{name}");
                if !live.contains(&slot) {
                    let o = server.create(&pods(), pod(ns, &name, "Pending")).unwrap();
                    live.insert(slot);
                    counts.creates += 1;
                    server_ops.note(&key, format!("create {}", o["metadata"]["resourceVersion"]));
                    journal.note(format!("create {key}"));
                } else if rng.chance(30) {
                    let o = server.delete(&pods(), Some(ns), &name).unwrap();
                    live.remove(&slot);
                    counts.deletes += 1;
                    server_ops.note(&key, format!("delete {}", o["metadata"]["resourceVersion"]));
                    journal.note(format!("delete {key}"));
                } else {
                    generation += 1;
                    let patch = serde_json::json!({
                        "metadata": {"labels": {"generation": generation.to_string()}},
                        "status": {"phase": rng.pick(&["Pending", "Running", "Succeeded"])}
                    });
                    let after = server.patch(&pods(), Some(ns), &name, &patch).unwrap();
                    counts.updates += 1;
                    let rv = &after["metadata"]["resourceVersion"];
                    server_ops.note(&key, format!("update {rv}"));
                    journal.note(format!("update {key} -> {rv}"));
                }
            }
            if !late_added && round == 1 && rng.chance(10) {
                // A handler added after sync, while churn runs.
                let late = Tracker::new(Duration::ZERO, 0);
                informer.add_event_handler(late.clone()).unwrap();
                handlers.push(("late", late));
                late_added = true;
                journal.note("handler 'late' added");
            }
            // After a storm, no other fault in this phase (see `Storm`).
            if storm.is_none() && Instant::now() >= next_fault {
                next_fault = Instant::now() + Duration::from_millis(rng.range(10, 250));
                let name = inject_random_fault(
                    &server,
                    &mut rng,
                    &mut silence_pending,
                    &mut down_until,
                    &mut storm,
                );
                *counts.faults.entry(name).or_default() += 1;
                journal.note(format!("fault: {name}"));
            }
            if down_until.is_some_and(|t| Instant::now() >= t) {
                bring_back(&server, &journal);
                down_until = None;
            }
            if rng.chance(30) {
                std::thread::sleep(Duration::from_millis(rng.range(1, 5)));
            }
        }
        let phase_secs = phase_start.0.elapsed().as_secs_f64().max(0.001);
        let phase_rate = (list_and_watch_requests(&server) - phase_start.1) as f64 / phase_secs;
        counts.max_rate_faults = counts.max_rate_faults.max(phase_rate);
        if !late_added {
            let late = Tracker::new(Duration::ZERO, 0);
            informer.add_event_handler(late.clone()).unwrap();
            handlers.push(("late", late));
            late_added = true;
            journal.note("handler 'late' added");
        }

        if let Some(storm) = storm.take() {
            // The lagging cache lasts a while, however late in the phase it came.
            let lasts = storm.since + Duration::from_secs(2);
            std::thread::sleep(lasts.saturating_duration_since(Instant::now()));
            if let Err(why) = storm.check(&server, backoff_initial) {
                counts.failures.push(format!(
                    "seed {seed}, round {round}: {why}\n--- last events ---\n{}",
                    journal.dump()
                ));
                break 'soak;
            }
        }

        // Quiet period: no churn, no new faults; then exact convergence.
        if down_until.take().is_some() {
            bring_back(&server, &journal);
        }
        server.clear_faults();
        if silence_pending {
            // A watch told to go silent would only be noticed by the read timeout.
            server.disconnect_all();
            silence_pending = false;
            journal.note("quiet: connections dropped (a silent watch may be open)");
        }
        journal.note(format!("quiet period {round}: waiting for convergence"));
        counts.checks += 1;
        if let Err(why) = check_converged(&server, &server_ops, &informer, &handlers) {
            counts.failures.push(format!(
                "seed {seed}, quiet period {round}: {why}\n--- last events ---\n{}",
                journal.dump()
            ));
            break 'soak;
        }
        for (_, h) in &handlers {
            // Converged after a restore: versions are checked again from what it holds.
            let mut s = h.state.lock();
            if s.restored {
                s.restored = false;
                s.newest = s.objects.iter().map(|(k, v)| (k.clone(), *v)).collect();
            }
        }
        for (name, h) in &handlers {
            let s = h.state.lock();
            if !s.violations.is_empty() {
                counts.failures.push(format!(
                    "seed {seed}, quiet period {round}: handler '{name}' was told inconsistent things:\n{}\n--- last events ---\n{}",
                    s.report(&server_ops),
                    journal.dump()
                ));
            }
        }
        if !counts.failures.is_empty() {
            break 'soak;
        }
        // Settled: the request rate tells a loop that converged on data but never stops.
        let (requests_before, relists_before) =
            (list_and_watch_requests(&server), relists(&informer));
        let window = Instant::now();
        std::thread::sleep(SETTLED_WINDOW);
        // A loaded machine may oversleep: the bounds hold per window's worth of time.
        let windows =
            (window.elapsed().as_secs_f64() / SETTLED_WINDOW.as_secs_f64()).ceil() as usize;
        let requests = list_and_watch_requests(&server) - requests_before;
        let relisted = relists(&informer) - relists_before;
        counts.max_settled_requests = counts.max_settled_requests.max(requests);
        if requests > SETTLED_MAX_REQUESTS * windows
            || relisted > SETTLED_MAX_RELISTS * windows as u64
        {
            let recent = server.requests();
            let tail = &recent[recent.len().saturating_sub(20)..];
            counts.failures.push(format!(
                "seed {seed}, quiet period {round}: settled, yet {requests} list and watch requests and {relisted} relists in {SETTLED_WINDOW:?} (a loop); the last requests: {tail:#?}\n--- last events ---\n{}",
                journal.dump()
            ));
            break 'soak;
        }
        // Now and then, settled: a backup (kept for a later round), or etcd restored from
        // the one taken earlier.
        if backup.is_none() || rng.chance(10) {
            backup = Some((server.backup(), live.clone()));
            journal.note(format!("backup at version {}", server.resource_version()));
        } else if rng.chance(25) {
            let (b, was_live) = backup.take().expect("checked above");
            let ahead = server.resource_version();
            for (_, h) in &handlers {
                h.state.lock().restored = true;
            }
            server
                .restore(&b)
                .unwrap_or_else(|e| panic!("the test API server cannot restore: {e}"));
            live = was_live;
            *counts.faults.entry("restore from a backup").or_default() += 1;
            journal.note(format!(
                "restore from a backup: version {ahead} -> {}",
                server.resource_version()
            ));
            // No write until the informer is no longer ahead of the server (see the module
            // docs): then churn goes on, and the next quiet period checks the result.
            let give_up = Instant::now() + CONVERGENCE_BOUND;
            let ahead_of_server = || {
                informer
                    .last_sync_resource_version()
                    .parse::<u64>()
                    .is_ok_and(|rv| rv > server.resource_version())
            };
            while ahead_of_server() {
                if Instant::now() >= give_up {
                    counts.failures.push(format!(
                        "seed {seed}, round {round}: after a restore from a backup the informer is still at {}, ahead of the server's {}, after {CONVERGENCE_BOUND:?}\n--- last events ---\n{}",
                        informer.last_sync_resource_version(),
                        server.resource_version(),
                        journal.dump()
                    ));
                    break 'soak;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            journal.note(format!(
                "the informer found its way back (at {})",
                informer.last_sync_resource_version()
            ));
        }
    }

    let t = Instant::now();
    informer.stop();
    let stop_took = t.elapsed();
    drop(informer);
    let threads_after = informer_threads();
    if track_threads && threads_after != threads_before {
        counts.failures.push(format!(
            "seed {seed}: threads after stop {threads_after:?}, before {threads_before:?}"
        ));
    }
    let _ = std::panic::take_hook();

    println!(
        "soak: seed {seed}: {} rounds, operations {} (creates {}, updates {}, deletes {}), objects at the end {}",
        round,
        counts.creates + counts.updates + counts.deletes,
        counts.creates,
        counts.updates,
        counts.deletes,
        live.len()
    );
    println!(
        "soak: faults {} {:?}; watch errors reported {}",
        counts.faults.values().sum::<u64>(),
        counts.faults,
        watch_errors.load(Ordering::Relaxed)
    );
    for (name, h) in &handlers {
        let s = h.state.lock();
        println!(
            "soak: handler {name:<12} adds {} updates {} (resyncs {}) deletes {} (tombstones {})",
            s.adds, s.updates, s.resyncs, s.deletes, s.tombstones
        );
    }
    println!(
        "soak: handler panics caught {}; stop took {stop_took:?}",
        panics.load(Ordering::Relaxed)
    );
    println!(
        "soak: requests per second (lists and watches) during faults: at most {:.0}; settled: at most {} in {SETTLED_WINDOW:?}",
        counts.max_rate_faults, counts.max_settled_requests
    );
    println!(
        "soak: quiet-period checks {}, failures {}",
        counts.checks,
        counts.failures.len()
    );
    drop(server);
    assert!(
        counts.failures.is_empty(),
        "{}",
        counts.failures.join("\n\n")
    );
}

fn bring_back(server: &ApiServer, journal: &Journal) {
    server
        .come_back()
        .unwrap_or_else(|e| panic!("the test API server cannot listen on its port again: {e}"));
    journal.note("server back");
}

const NAMESPACES_PER_SLOT: u64 = NAMES_PER_NAMESPACE as u64;

fn slot_name((ns, i): (usize, usize)) -> (&'static str, String) {
    (NAMESPACES[ns], format!("pod-{i:03}"))
}

/// A watch cache lagging behind etcd: every watch and streaming list refused as "too large
/// resource version" (504), `injected` times over, from `since`; no other fault follows in
/// the phase. Each refusal is a failed list or watch, so the reflector waits at least the
/// initial back-off before the next (at most one relist comes at once: the switch from a
/// watch at a version to a consistent list). A reflector that streams again at once uses up
/// hundreds of them in a phase.
struct Storm {
    since: Instant,
    injected: usize,
}

impl Storm {
    /// At least `injected` minus every fault still pending were used by the storm's
    /// requests: no more than one per initial back-off since it began, and two.
    fn check(&self, server: &ApiServer, backoff_initial: Duration) -> Result<(), String> {
        let used = self.injected.saturating_sub(server.pending_faults());
        let elapsed = self.since.elapsed();
        let bound = (elapsed.as_secs_f64() / backoff_initial.as_secs_f64()) as usize + 2;
        if used > bound {
            return Err(format!(
                "{used} watches and streaming lists refused as too large in {elapsed:?}, \
                 with an initial back-off of {backoff_initial:?}: at most {bound} (no back-off \
                 after a failed list)"
            ));
        }
        Ok(())
    }
}

/// Injects one random fault; returns its name for the counts.
fn inject_random_fault(
    server: &ApiServer,
    rng: &mut Rng,
    silence: &mut bool,
    down_until: &mut Option<Instant>,
    storm: &mut Option<Storm>,
) -> &'static str {
    let any_target = |rng: &mut Rng| rng.pick(&[Target::Any, Target::List, Target::Watch]);
    match rng.below(17) {
        0 => {
            server.inject(
                Target::Watch,
                Fault::CloseAfterBytes(rng.range(0, 3_000) as usize),
            );
            "watch cut mid-event"
        }
        1 => {
            server.inject(
                Target::Watch,
                Fault::CloseAfterEvents(rng.range(1, 30) as usize),
            );
            "watch closed after N events"
        }
        2 => {
            server.inject(Target::Watch, Fault::status(410));
            "410 on watch"
        }
        3 => {
            server.inject(Target::List, Fault::status(410));
            "410 on list"
        }
        4 => {
            server.inject(Target::ListContinue, Fault::status(410));
            "expired continue token"
        }
        5 => {
            let t = any_target(rng);
            server.inject(t, Fault::too_many_requests(1));
            "429 with Retry-After"
        }
        6 => {
            let t = any_target(rng);
            let code = rng.pick(&[500u16, 503, 504]);
            let retry_after = rng.chance(50).then_some(1);
            server.inject(t, Fault::Status { code, retry_after });
            "5xx"
        }
        7 => {
            server.inject(Target::Watch, Fault::GarbageLine);
            "garbage line"
        }
        8 => {
            let t = any_target(rng);
            server.inject(t, Fault::Stall(Duration::from_millis(rng.range(10, 300))));
            "stall"
        }
        9 => {
            server.inject(
                Target::List,
                Fault::CloseAfterBytes(rng.range(0, 2_000) as usize),
            );
            "list answer cut short"
        }
        10 => {
            server.compact();
            "compaction"
        }
        11 => {
            server.disconnect_all();
            "all connections dropped"
        }
        14 => {
            // kube-apiserver restarted with etcd kept: a new watch cache (watches from older
            // versions get 410) while paged lists at older versions still answer old states.
            server
                .restart()
                .unwrap_or_else(|e| panic!("the test API server cannot restart: {e}"));
            "restart with history kept"
        }
        16 if down_until.is_none() => {
            // Alone: faults still pending (a stall, a watch gone silent) would hold the
            // reflector elsewhere, and the storm would say nothing.
            server.clear_faults();
            *silence = false;
            let injected = rng.range(300, 1_000) as usize;
            for _ in 0..injected {
                server.inject(Target::Watch, Fault::TooLargeResourceVersion);
            }
            *storm = Some(Storm {
                since: Instant::now(),
                injected,
            });
            // The open watch ends, so the next watch and list meet the lagging cache.
            server.disconnect_all();
            "streaming list refused as too large, repeatedly"
        }
        13 if down_until.is_none() => {
            // Away for a while (connections refused, changes go on), then back on the same
            // port: the churn loop brings it back.
            server.go_down();
            *down_until = Some(Instant::now() + Duration::from_millis(rng.range(20, 400)));
            "server down, then restarted"
        }
        12 if rng.chance(30) => {
            server.inject(
                Target::Watch,
                Fault::SilenceAfterEvents(rng.range(0, 5) as usize),
            );
            *silence = true;
            "watch gone silent"
        }
        _ => {
            server.compact();
            server
                .restart()
                .unwrap_or_else(|e| panic!("the test API server cannot restart: {e}"));
            "restart with compaction"
        }
    }
}

/// Waits (bounded) until the cache, its namespace index and every handler equal the server.
fn check_converged(
    server: &ApiServer,
    server_ops: &KeyLog,
    informer: &SharedIndexInformer<DynamicObject>,
    handlers: &[(&'static str, Tracker)],
) -> Result<(), String> {
    let ar = pods();
    let give_up = Instant::now() + CONVERGENCE_BOUND;
    let store = informer.store();
    loop {
        let want = server.keys_and_versions(&ar);
        let cache = store.keys_and_versions();
        let views: Vec<_> = handlers
            .iter()
            .map(|(n, h)| (*n, h.state.lock().snapshot()))
            .collect();
        let mut index_ok = true;
        let mut index_diff = Vec::new();
        for ns in NAMESPACES {
            let mut got = store.index_keys(NAMESPACE_INDEX, ns).unwrap_or_default();
            got.sort();
            let wanted: Vec<String> = want
                .iter()
                .filter(|(k, _)| k.split_once('/').is_some_and(|(n, _)| n == ns))
                .map(|(k, _)| k.clone())
                .collect();
            if got != wanted {
                index_ok = false;
                let got: BTreeSet<_> = got.into_iter().collect();
                let wanted: BTreeSet<_> = wanted.into_iter().collect();
                index_diff.push(format!(
                    "index {ns}: extra {:?}, missing {:?}",
                    got.difference(&wanted).take(5).collect::<Vec<_>>(),
                    wanted.difference(&got).take(5).collect::<Vec<_>>()
                ));
            }
        }
        if cache == want && index_ok && views.iter().all(|(_, v)| *v == want) {
            return Ok(());
        }
        if Instant::now() >= give_up {
            let mut why = format!(
                "no convergence within {CONVERGENCE_BOUND:?} (server {} objects at version {}, watching {}, last sync version {:?})",
                want.len(),
                server.resource_version(),
                informer.is_watching(),
                informer.last_sync_resource_version()
            );
            let d = diff(&want, &cache, 10);
            if !d.is_empty() {
                why.push_str(&format!("\n  cache != server: {}", d.join("; ")));
            }
            for d in index_diff {
                why.push_str(&format!("\n  {d}"));
            }
            for ((name, v), (_, h)) in views.iter().zip(handlers) {
                let d = diff(&want, v, 10);
                if !d.is_empty() {
                    why.push_str(&format!("\n  handler '{name}' != server: {}", d.join("; ")));
                    let st = h.state.lock();
                    for key in d
                        .iter()
                        .filter_map(|l| l.split(['@', ':', ' ']).find(|w| w.contains('/')))
                        .take(3)
                    {
                        if let Some(hist) = st.history.get(key) {
                            why.push_str(&format!(
                                "\n    (last notifications of {key}: {})",
                                hist.iter().cloned().collect::<Vec<_>>().join(", ")
                            ));
                        }
                        if let Some(ops) = server_ops.0.get(key) {
                            why.push_str(&format!(
                                "\n    (last writes of {key} on the server: {})",
                                ops.iter().cloned().collect::<Vec<_>>().join(", ")
                            ));
                        }
                    }
                }
            }
            return Err(why);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
