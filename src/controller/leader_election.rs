//! `LeaderElector`: one replica of many acts, chosen through a `coordination.k8s.io/v1`
//! [`Lease`], with client-go's leader election semantics.
//!
//! Why: a controller runs two or three replicas for availability, but two replicas acting on
//! the same objects fight. Each replica runs an elector with its own identity; the one holding
//! the Lease leads, the others wait, and when the leader goes away one of them takes over.
//!
//! # How it decides
//!
//! - **Acquire** when the Lease does not exist (it is created), has no holder, or has expired;
//!   otherwise try again every `retry_period` (stretched by up to 20 % of jitter, like
//!   client-go's `JitterFactor` 1.2).
//! - **Expiry is judged by this process's own monotonic clock**: a holder's record has
//!   expired when it has not *changed* for its `leaseDurationSeconds` since this process first
//!   *observed* it as it is. The times written in the record (`renewTime`, `acquireTime`) are
//!   never compared with the local clock, so a holder whose clock is hours off confuses no one.
//! - **Renew** every `retry_period` while leading. The term lasts while renewals succeed: when
//!   none has succeeded for `renew_deadline` (counted from when the last successful one was
//!   sent), the elector **steps down**: the term's stop signal fires and the started-leading
//!   callback must return. This is enforced by a separate watchdog thread, so a renewal stuck
//!   in a slow request (or an elector thread that is not scheduled) cannot stretch a term.
//!   Since `renew_deadline < lease_duration`, a leader has stopped before anyone else can
//!   consider its lease expired, provided the callback honours the stop within the margin
//!   (`lease_duration - renew_deadline`, 5 s by default).
//! - **Optimistic concurrency**: every write carries the `resourceVersion` that was read; a
//!   409 Conflict means another elector wrote first (a lost race, retried at the next period,
//!   never an error). A renewal that finds another holder in the record steps down at once.
//! - **`leaseTransitions`** is incremented whenever the holder changes.
//! - **Release on a clean stop** ([`LeaderElectionConfig::release_on_cancel`], on by
//!   default): after the started-leading callback returned, the leader writes a record with
//!   no holder and a 1 s duration, so a successor takes over at its next retry instead of
//!   waiting out the lease.
//!
//! # Records with missing or nonsense fields
//!
//! The elector never panics on a record, and logs each distinct problem once (a warning):
//! - no `spec`, or no (or an empty) `holderIdentity`: the lease is **free**, acquired at once;
//! - a holder with a missing, zero or negative `leaseDurationSeconds`: counted as this
//!   elector's own `lease_duration`, i.e. the lease **expires** once it has not changed for
//!   that long (client-go would treat it as expired at once; waiting one lease is safer for a
//!   holder that is alive but wrote a bad duration);
//! - a missing or unparsable `renewTime`/`acquireTime`: nothing changes (the times are never
//!   used to decide), only the warning;
//! - a missing or negative `leaseTransitions`: counted as 0.
//!
//! # Callbacks and threads
//!
//! - started leading: called on a new thread (`ki/<lease>/lead`) for each term,
//!   with a [`Term`] whose stop signal it must honour (return soon after it fires). Returning
//!   early does not end the term: the elector keeps the lease until it stops or loses it.
//! - stopped leading: called on the same thread after the started callback returned and the
//!   term ended (lost or stopped). Never called for a term that never started.
//! - new leader observed: called on the elector thread whenever the holder it observes changes
//!   (its own identity included).
//!
//! The elector thread (`ki/<lease>/elec`) and the watchdog
//! (`ki/<lease>/wdog`) are joined by [`LeaderElector::stop`] (and on
//! drop). After losing a term the elector tries to acquire again; a new term's thread starts
//! only after the previous one's stopped callback returned, so one elector's terms never
//! overlap. Stopping cuts the elector's requests in flight and wakes every wait; it takes as
//! long as the started callback needs to honour its stop plus, when leading, one release
//! request (bounded by [`LeaderElectionConfig::release_timeout`]).
//!
//! Callback panics are caught and logged; a panicking started callback is treated as one
//! that returned.
//!
//! The hand-offs between those threads (a term begun, renewed, ended by the watchdog, the
//! release, `stop` at any point) are checked under the `shuttle` model checker in
//! `interleavings.rs`, against a Lease kept in memory (the crate-private `LeaseBackend`).
//!
//! # Limits
//!
//! - `lease_duration` is written to the record in whole seconds (rounded up).
//! - The elector calls `GET` then `PUT` on every attempt (client-go's newer fast path, a
//!   renewal without the `GET`, is not implemented).
//! - Coordinated leader election (`strategy`, `preferredHolder`) is not implemented; those
//!   fields are kept as read.
//! - Exclusion rests on timing, as in client-go: a leader whose process is paused longer than
//!   `lease_duration - renew_deadline` past its last renewal, or whose started callback
//!   ignores the stop signal that long, can still be acting when a successor starts.
//! - `stop` waits for the started callback to return without a bound.
//! - A `create` of the Lease cut by `stop` may have reached the server: the Lease is then
//!   held, unreleased, until it expires (one lease duration).
//! - A holder's `leaseDurationSeconds` is honoured whatever its size (a record claiming a
//!   day keeps everyone waiting a day after its last change), as in client-go.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::lease::{Lease, LeaseSpec, MicroTime};
use crate::client::{Api, Cancel, Client, PostParams};
use crate::error::{Error, Result};
// From the shim, so that the interleaving checks (`--cfg shuttle`) run this very code.
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{Condvar, Mutex};

/// client-go's jitter factor: retries wait between 1 and 1.2 retry periods.
const JITTER_FACTOR: f64 = 1.2;

/// What a [`LeaderElector`] contends for and how: the Lease, the identity, the timings.
///
/// The defaults are client-go's: lease 15 s, renew deadline 10 s, retry 2 s.
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// This replica's identity (unique among the contenders, e.g. the pod name).
    pub identity: String,
    /// How long others wait, after the record last changed, before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
    /// Whether a clean stop releases the lease (so a successor takes over at once).
    pub release_on_cancel: bool,
    /// How long [`LeaderElector::stop`] lets the release request take before cutting it.
    pub release_timeout: Duration,
}

impl LeaderElectionConfig {
    /// The Lease `namespace/name`, contended for as `identity`, with client-go's timings.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        LeaderElectionConfig {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
            release_timeout: Duration::from_secs(1),
        }
    }

    /// Sets the lease duration.
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// Sets the renew deadline.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Sets the retry period.
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Sets whether a clean stop releases the lease.
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Checks client-go's rules: a namespace, name and identity; every duration positive;
    /// `lease_duration > renew_deadline > 1.2 × retry_period`; a lease that fits the record
    /// (whole seconds in an `i32`).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidInput(format!("leader election: {m}")));
        if self.namespace.is_empty() || self.name.is_empty() {
            return bad("the Lease needs a namespace and a name".into());
        }
        if self.identity.is_empty() {
            return bad("the identity must not be empty".into());
        }
        if self.retry_period.is_zero()
            || self.renew_deadline.is_zero()
            || self.lease_duration.is_zero()
        {
            return bad("lease duration, renew deadline and retry period must be positive".into());
        }
        if self.lease_duration <= self.renew_deadline {
            return bad(format!(
                "the lease duration ({:?}) must be greater than the renew deadline ({:?})",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return bad(format!(
                "the renew deadline ({:?}) must be greater than {JITTER_FACTOR} × the retry period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if self.lease_seconds().is_none() {
            return bad(format!(
                "the lease duration ({:?}) does not fit the record",
                self.lease_duration
            ));
        }
        Ok(())
    }

    /// The lease duration in whole seconds, rounded up, as the record holds it.
    fn lease_seconds(&self) -> Option<i32> {
        let d = self.lease_duration;
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        i32::try_from(secs).ok()
    }
}

/// One term of leadership, given to the started-leading callback.
///
/// Its stop signal fires when the term ends: leadership lost (renewals failed past the
/// deadline, or another holder found) or the elector stopping. The callback must then return.
#[derive(Clone, Debug)]
pub struct Term {
    stop: Cancel,
    number: u64,
    identity: String,
}

impl Term {
    /// True once the term has ended.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Sleeps for `d` unless the term ends first; returns true when it has ended.
    pub fn sleep(&self, d: Duration) -> bool {
        self.stop.sleep(d)
    }

    /// Blocks until the term ends.
    pub fn wait(&self) {
        self.stop.sleep(Duration::MAX);
    }

    /// The term's stop signal as a [`Cancel`] token: a client made with
    /// [`Client::with_cancel`] gives up its requests when the term ends.
    pub fn cancel_token(&self) -> &Cancel {
        &self.stop
    }

    /// 1 for this elector's first term, then 2, ...
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The identity leading in this term.
    pub fn identity(&self) -> &str {
        &self.identity
    }
}

type Started = Arc<dyn Fn(&Term) + Send + Sync>;
type Stopped = Arc<dyn Fn() + Send + Sync>;
type NewLeader = Arc<dyn Fn(&str) + Send + Sync>;

/// The callbacks of a [`LeaderElector`].
#[derive(Clone)]
pub struct LeaderCallbacks {
    started: Started,
    stopped: Option<Stopped>,
    new_leader: Option<NewLeader>,
}

impl std::fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderCallbacks").finish_non_exhaustive()
    }
}

impl LeaderCallbacks {
    /// Callbacks with `on_started_leading`, called on its own thread at the start of each
    /// term; it must return soon after the [`Term`]'s stop signal fires.
    pub fn new(on_started_leading: impl Fn(&Term) + Send + Sync + 'static) -> Self {
        LeaderCallbacks {
            started: Arc::new(on_started_leading),
            stopped: None,
            new_leader: None,
        }
    }

    /// Called after a term ended and its started callback returned.
    pub fn on_stopped_leading(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.stopped = Some(Arc::new(f));
        self
    }

    /// Called with the holder's identity whenever the observed holder changes.
    pub fn on_new_leader(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.new_leader = Some(Arc::new(f));
        self
    }
}

/// A running leader elector; [`stop`](Self::stop) (or dropping it) ends it.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use kube_informer::controller::{LeaderCallbacks, LeaderElectionConfig, LeaderElector};
/// use kube_informer::testing::ApiServer;
/// use kube_informer::Client;
///
/// let server = ApiServer::start();
/// let client = Client::new(server.client_config()).unwrap();
/// let config = LeaderElectionConfig::new("kube-system", "my-controller", "replica-a");
/// let (tx, rx) = std::sync::mpsc::channel();
/// let elector = LeaderElector::start(
///     client,
///     config,
///     LeaderCallbacks::new(move |term| {
///         tx.send(term.number()).unwrap();
///         // Work while leading; return when the term ends.
///         while !term.sleep(Duration::from_millis(100)) {}
///     }),
/// )
/// .unwrap();
/// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), 1);
/// assert!(elector.is_leader());
/// elector.stop(); // the callback returns, the lease is released, every thread joined
/// ```
pub struct LeaderElector {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    watchdog: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lease", &self.shared.lease_name)
            .field("identity", &self.shared.config.identity)
            .field("leading", &self.is_leader())
            .finish()
    }
}

struct Shared {
    config: LeaderElectionConfig,
    lease_name: String,
    /// Fired by `stop`: cuts the elector's requests and wakes its sleeps.
    stop: Cancel,
    /// Cuts the release request when it takes longer than `release_timeout`.
    release_cut: Cancel,
    state: Mutex<State>,
    cond: Condvar,
}

#[derive(Default)]
struct State {
    stopping: bool,
    /// The current term's stop signal and the instant it ends without a renewal.
    term: Option<(Cancel, Instant)>,
    /// The holder last observed (`None`: free or unknown).
    leader: Option<String>,
    /// When the last successful write of this elector was sent.
    last_renew: Option<Instant>,
    /// The elector thread has finished (for `stop`'s bounded wait).
    exited: bool,
    /// The elector thread is about to send its release request (or decide not to).
    releasing: bool,
    /// Test hook: the elector thread is held at its next pause point.
    frozen: bool,
    /// The elector thread is held.
    parked: bool,
    /// The last failure to read or write the Lease, cleared by the next success.
    last_error: Option<String>,
}

impl Shared {
    /// Holds the thread while frozen; true when stopping.
    fn pause_point(&self) -> bool {
        let mut st = self.state.lock();
        while st.frozen && !st.stopping {
            st.parked = true;
            self.cond.notify_all();
            self.cond.wait(&mut st);
        }
        st.parked = false;
        st.stopping
    }
}

/// Reads an elector's state without keeping it alive: after the elector is gone, it reads
/// as not leading, not running.
#[derive(Clone)]
pub(crate) struct ElectorStatus(std::sync::Weak<Shared>);

impl ElectorStatus {
    /// The Lease's name (`leader_election_master_status`'s `name` label, as client-go).
    #[cfg(feature = "metrics")]
    pub(crate) fn name(&self) -> String {
        self.0
            .upgrade()
            .map(|s| s.config.name.clone())
            .unwrap_or_default()
    }

    /// In a term now.
    pub(crate) fn is_leader(&self) -> bool {
        self.0.upgrade().is_some_and(|s| {
            let st = s.state.lock();
            st.term.as_ref().is_some_and(|(t, _)| !t.is_cancelled())
        })
    }

    /// `Ok(holder)` while contending cleanly (the holder last seen, if any); the reason
    /// otherwise (stopped, exited, or the last error reading or writing the Lease).
    pub(crate) fn standing(&self) -> std::result::Result<Option<String>, String> {
        let Some(s) = self.0.upgrade() else {
            return Err("the elector is stopped".into());
        };
        let st = s.state.lock();
        if st.stopping || st.exited {
            return Err("the elector is stopped".into());
        }
        match &st.last_error {
            Some(e) => Err(e.clone()),
            None => Ok(st.leader.clone()),
        }
    }
}

impl LeaderElector {
    /// Validates `config` and starts contending for the Lease with `client`.
    pub fn start(
        client: Client,
        config: LeaderElectionConfig,
        callbacks: LeaderCallbacks,
    ) -> Result<LeaderElector> {
        let (stop, release_cut) = (Cancel::new(), Cancel::new());
        let backend = ApiBackend {
            name: config.name.clone(),
            api: Api::namespaced(client.with_cancel(stop.clone()), &config.namespace),
            release_api: Api::namespaced(
                client.with_cancel(release_cut.clone()),
                &config.namespace,
            ),
        };
        Self::start_with(backend, config, callbacks, stop, release_cut)
    }

    /// [`start`](Self::start) on any backend; `stop` and `release_cut` are the tokens the
    /// backend's requests are cut by.
    pub(crate) fn start_with(
        backend: impl LeaseBackend,
        config: LeaderElectionConfig,
        callbacks: LeaderCallbacks,
        stop: Cancel,
        release_cut: Cancel,
    ) -> Result<LeaderElector> {
        config.validate()?;
        let lease_name = format!("{}/{}", config.namespace, config.name);
        let shared = Arc::new(Shared {
            config,
            lease_name,
            stop,
            release_cut,
            state: Mutex::new(State::default()),
            cond: Condvar::new(),
        });
        let spawn_err = |e: std::io::Error| Error::Config(format!("spawning a thread: {e}"));
        let s = Arc::clone(&shared);
        let watchdog = thread::Builder::new()
            .name(crate::thread_name::thread_name(&shared.config.name, "wdog"))
            .spawn(move || watchdog(&s))
            .map_err(spawn_err)?;
        let mut elector = LeaderElector {
            shared: Arc::clone(&shared),
            thread: None,
            watchdog: Some(watchdog),
        };
        let s = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name(crate::thread_name::thread_name(&shared.config.name, "elec"))
            .spawn(move || {
                // Marks the thread as finished however it ends, so `stop` never waits for a
                // thread that is gone.
                let _exit = Exited(&s);
                Run::new(&s, Box::new(backend), callbacks).run();
            })
            .map_err(spawn_err)?;
        elector.thread = Some(thread);
        Ok(elector)
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.shared.config.identity
    }

    /// True while this elector is in a term (false as soon as the term's stop signal fired).
    pub fn is_leader(&self) -> bool {
        let st = self.shared.state.lock();
        st.term.as_ref().is_some_and(|(t, _)| !t.is_cancelled())
    }

    /// The holder this elector last observed in the record (`None`: free or not yet read).
    pub fn leader(&self) -> Option<String> {
        self.shared.state.lock().leader.clone()
    }

    /// The last failure to read or write the Lease (a conflict is no failure), cleared by
    /// the next successful read or write: `None` while the elector contends cleanly.
    pub fn last_error(&self) -> Option<String> {
        self.shared.state.lock().last_error.clone()
    }

    /// A handle that reads this elector's state without owning it (for probes and metrics).
    pub(crate) fn status(&self) -> ElectorStatus {
        ElectorStatus(std::sync::Arc::downgrade(&self.shared))
    }

    /// When this elector's last successful write (acquire or renew) was sent. Any other
    /// elector judges the lease expired only after its duration from a later instant.
    pub fn last_renew(&self) -> Option<Instant> {
        self.shared.state.lock().last_renew
    }

    /// Test hook: holds the elector thread at its next step (no renewal, no release: a
    /// frozen process) and returns once it is held. The watchdog still ends the term at the
    /// renew deadline. Undone by [`thaw`](Self::thaw) or [`stop`](Self::stop).
    #[cfg(feature = "testing")]
    pub fn freeze(&self) {
        let mut st = self.shared.state.lock();
        st.frozen = true;
        while !st.parked && !st.exited && !st.stopping {
            self.shared.cond.wait(&mut st);
        }
    }

    /// Test hook: lets a [`freeze`](Self::freeze)d elector go on.
    #[cfg(feature = "testing")]
    pub fn thaw(&self) {
        self.shared.state.lock().frozen = false;
        self.shared.cond.notify_all();
    }

    /// Ends the current term (its callback must return), releases the lease when
    /// configured, and joins every thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        {
            let mut st = self.shared.state.lock();
            st.stopping = true;
            if let Some((term, _)) = &st.term {
                term.cancel();
            }
        }
        self.shared.cond.notify_all();
        self.shared.stop.cancel();
        // The started callback's return is waited for without a bound (it must honour its
        // stop); the release request then gets `release_timeout` before it is cut.
        if let Some(thread) = self.thread.take() {
            let mut st = self.shared.state.lock();
            while !st.exited && !st.releasing {
                self.shared.cond.wait(&mut st);
            }
            let deadline = crate::deadline::after(self.shared.config.release_timeout);
            while !st.exited {
                if self.shared.cond.wait_until(&mut st, deadline).timed_out() {
                    self.shared.release_cut.cancel();
                    break;
                }
            }
            drop(st);
            let _ = thread.join();
        }
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
    }
}

impl Drop for LeaderElector {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Sets `exited` when dropped (the elector thread's end, a panic included).
struct Exited<'a>(&'a Shared);

impl Drop for Exited<'_> {
    fn drop(&mut self) {
        self.0.state.lock().exited = true;
        self.0.cond.notify_all();
    }
}

/// Ends a term whose deadline passed without a renewal, whatever the elector thread does.
fn watchdog(shared: &Shared) {
    let mut st = shared.state.lock();
    while !st.stopping {
        match &st.term {
            Some((term, deadline)) if !term.is_cancelled() => {
                let deadline = *deadline;
                if Instant::now() >= deadline {
                    log::warn!(
                        "leader election {}: {} did not renew within {:?}; stepping down",
                        shared.lease_name,
                        shared.config.identity,
                        shared.config.renew_deadline
                    );
                    term.cancel();
                    continue;
                }
                shared.cond.wait_until(&mut st, deadline);
            }
            _ => shared.cond.wait(&mut st),
        }
    }
}

/// Where the record lives: the API server (through [`Api`]), or, in the interleaving
/// checks, memory.
pub(crate) trait LeaseBackend: Send + 'static {
    /// Reads the Lease.
    fn get(&self) -> Result<Lease>;
    /// Creates it.
    fn create(&self, lease: &Lease) -> Result<Lease>;
    /// Replaces it (409 when its `resourceVersion` is stale).
    fn replace(&self, lease: &Lease) -> Result<Lease>;
    /// Replaces it to release it: cut by [`LeaderElector::stop`] after `release_timeout`
    /// instead of at once.
    fn release(&self, lease: &Lease) -> Result<Lease>;
}

/// The Lease on the API server.
struct ApiBackend {
    name: String,
    api: Api<Lease>,
    release_api: Api<Lease>,
}

impl LeaseBackend for ApiBackend {
    fn get(&self) -> Result<Lease> {
        self.api.get(&self.name)
    }
    fn create(&self, lease: &Lease) -> Result<Lease> {
        self.api.create(&PostParams::default(), lease)
    }
    fn replace(&self, lease: &Lease) -> Result<Lease> {
        self.api.replace(&self.name, &PostParams::default(), lease)
    }
    fn release(&self, lease: &Lease) -> Result<Lease> {
        self.release_api
            .replace(&self.name, &PostParams::default(), lease)
    }
}

/// What one attempt to acquire or renew found.
enum Attempt {
    /// This elector holds the lease (acquired or renewed) as of the request sent at `sent`.
    Holding,
    /// Another holder's lease has not expired.
    HeldByOther,
    /// Another elector wrote first (409), or the request failed: try again later.
    Retry,
}

/// The elector thread's state.
struct Run<'a> {
    shared: &'a Shared,
    backend: Box<dyn LeaseBackend>,
    callbacks: LeaderCallbacks,
    /// The last record read or written (its `resourceVersion` guards the next write).
    record: Option<Lease>,
    /// The spec as last seen changed, and when this process saw it change.
    observed: Option<(Option<LeaseSpec>, Instant)>,
    reported_leader: Option<String>,
    junk_logged: Option<String>,
    last_error: Option<String>,
    terms: u64,
    rng: u64,
}

impl<'a> Run<'a> {
    fn new(shared: &'a Shared, backend: Box<dyn LeaseBackend>, callbacks: LeaderCallbacks) -> Self {
        let c = &shared.config;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
            ^ (c.identity
                .bytes()
                .fold(0u64, |h, b| h.wrapping_mul(0x100_0000_01b3) ^ u64::from(b)));
        Run {
            shared,
            backend,
            callbacks,
            record: None,
            observed: None,
            reported_leader: None,
            junk_logged: None,
            last_error: None,
            terms: 0,
            rng: seed | 1,
        }
    }

    /// A retry period stretched by up to `JITTER_FACTOR`.
    fn jittered(&mut self) -> Duration {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let f = (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
        let p = self.shared.config.retry_period;
        p + p.mul_f64((JITTER_FACTOR - 1.0) * f)
    }

    fn identity(&self) -> &str {
        &self.shared.config.identity
    }

    fn run(&mut self) {
        let mut previous: Option<JoinHandle<()>> = None;
        loop {
            // Acquire.
            let sent = loop {
                if self.shared.pause_point() {
                    return self.finish(previous.take());
                }
                let sent = Instant::now();
                if let Attempt::Holding = self.try_acquire_or_renew() {
                    break sent;
                }
                let wait = self.jittered();
                if self.shared.stop.sleep(wait) {
                    return self.finish(previous.take());
                }
            };
            // The previous term's thread has returned before a new term starts.
            join_term(previous.take());
            self.terms += 1;
            let term = Term {
                stop: Cancel::new(),
                number: self.terms,
                identity: self.identity().to_owned(),
            };
            {
                let mut st = self.shared.state.lock();
                if st.stopping {
                    drop(st);
                    if self.shared.config.release_on_cancel {
                        self.release();
                    }
                    return;
                }
                st.term = Some((
                    term.stop.clone(),
                    crate::deadline::at(sent, self.shared.config.renew_deadline),
                ));
                st.last_renew = Some(sent);
            }
            self.shared.cond.notify_all();
            log::info!(
                "leader election {}: {} is leading (term {})",
                self.shared.lease_name,
                self.identity(),
                term.number
            );
            match self.spawn_term(&term) {
                Ok(t) => previous = Some(t),
                Err(e) => log::error!("leader election {}: {e}", self.shared.lease_name),
            }
            // Renew until the term ends.
            self.renew(&term);
            term.stop.cancel();
            let stopping = {
                let mut st = self.shared.state.lock();
                st.term = None;
                st.stopping
            };
            self.shared.cond.notify_all();
            if stopping {
                join_term(previous.take());
                if self.shared.config.release_on_cancel {
                    self.release();
                }
                return;
            }
            log::warn!(
                "leader election {}: {} stopped leading (term {})",
                self.shared.lease_name,
                self.identity(),
                term.number
            );
        }
    }

    /// Stopping between terms: the last term's callbacks return, then the lease is released
    /// if the last record seen still names this elector (a term ended by the watchdog leaves
    /// it so until the next acquisition).
    fn finish(&mut self, previous: Option<JoinHandle<()>>) {
        join_term(previous);
        if self.shared.config.release_on_cancel {
            self.release();
        }
    }

    /// Starts the term's thread: the started callback, then (once the term ended) the
    /// stopped callback.
    fn spawn_term(&self, term: &Term) -> Result<JoinHandle<()>> {
        let (term, started, stopped) = (
            term.clone(),
            Arc::clone(&self.callbacks.started),
            self.callbacks.stopped.clone(),
        );
        let lease = self.shared.lease_name.clone();
        thread::Builder::new()
            .name(crate::thread_name::thread_name(
                &self.shared.config.name,
                "lead",
            ))
            .spawn(move || {
                if catch_unwind(AssertUnwindSafe(|| started(&term))).is_err() {
                    log::error!("leader election {lease}: the started-leading callback panicked");
                }
                term.wait();
                if let Some(stopped) = stopped {
                    if catch_unwind(AssertUnwindSafe(|| stopped())).is_err() {
                        log::error!(
                            "leader election {lease}: the stopped-leading callback panicked"
                        );
                    }
                }
            })
            .map_err(|e| Error::Config(format!("spawning the leader thread: {e}")))
    }

    /// Renews every retry period until the term ends (deadline, another holder, stop).
    fn renew(&mut self, term: &Term) {
        loop {
            if self.shared.stop.sleep(self.shared.config.retry_period)
                || self.shared.pause_point()
                || term.is_stopped()
            {
                return;
            }
            let sent = Instant::now();
            match self.try_acquire_or_renew() {
                Attempt::Holding => {
                    let mut st = self.shared.state.lock();
                    if term.is_stopped() {
                        // The watchdog ended the term while the renewal was in flight.
                        return;
                    }
                    if let Some((_, deadline)) = &mut st.term {
                        *deadline = crate::deadline::at(sent, self.shared.config.renew_deadline);
                    }
                    st.last_renew = Some(sent);
                    drop(st);
                    self.shared.cond.notify_all();
                }
                Attempt::HeldByOther => {
                    log::warn!(
                        "leader election {}: the lease is held by {:?} now",
                        self.shared.lease_name,
                        self.reported_leader.as_deref().unwrap_or("")
                    );
                    return;
                }
                Attempt::Retry => {}
            }
        }
    }

    /// Reads the record, and writes it with this elector as the holder when it is free,
    /// expired or already ours.
    fn try_acquire_or_renew(&mut self) -> Attempt {
        let c = &self.shared.config;
        let now = MicroTime::now();
        let lease_secs = c.lease_seconds().unwrap_or(i32::MAX);
        let current = match self.backend.get() {
            Ok(l) => l,
            Err(e) if e.is_not_found() => {
                let mut lease = Lease::new(&c.namespace, &c.name);
                lease.spec = Some(LeaseSpec {
                    holder_identity: Some(c.identity.clone()),
                    lease_duration_seconds: Some(lease_secs),
                    acquire_time: Some(now),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                });
                return match self.backend.create(&lease) {
                    Ok(l) => {
                        self.observe(l);
                        Attempt::Holding
                    }
                    Err(e) => self.failed("creating the Lease", e),
                };
            }
            Err(e) => return self.failed("reading the Lease", e),
        };
        self.observe(current.clone());
        let spec = current.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let mine = holder.as_deref() == Some(c.identity.as_str());
        if holder.is_some() && !mine && !self.expired(&spec) {
            return Attempt::HeldByOther;
        }
        let transitions = spec.lease_transitions.unwrap_or(0).max(0);
        let mut lease = current;
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(c.identity.clone()),
            lease_duration_seconds: Some(lease_secs),
            acquire_time: if mine {
                spec.acquire_time.or(Some(now))
            } else {
                Some(now)
            },
            renew_time: Some(now),
            lease_transitions: Some(if mine {
                transitions
            } else {
                transitions.saturating_add(1)
            }),
            strategy: spec.strategy,
            preferred_holder: spec.preferred_holder,
        });
        match self.backend.replace(&lease) {
            Ok(l) => {
                self.observe(l);
                Attempt::Holding
            }
            Err(e) => self.failed("updating the Lease", e),
        }
    }

    /// Whether the observed record has gone unchanged for its holder's lease duration.
    fn expired(&self, spec: &LeaseSpec) -> bool {
        let Some((_, seen)) = &self.observed else {
            return false;
        };
        let secs = spec
            .lease_duration_seconds
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s.unsigned_abs().into()))
            .unwrap_or(self.shared.config.lease_duration);
        Instant::now() >= crate::deadline::at(*seen, secs)
    }

    /// Notes a record read or written: when its spec changed (by this process's clock), who
    /// holds it, and anything wrong with it.
    fn observe(&mut self, lease: Lease) {
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(spec, _)| *spec != lease.spec);
        if changed {
            self.observed = Some((lease.spec.clone(), Instant::now()));
            self.check_junk(&lease);
        }
        self.last_error = None;
        self.shared.state.lock().last_error = None;
        let holder = lease
            .spec
            .as_ref()
            .and_then(|s| s.holder_identity.clone())
            .filter(|h| !h.is_empty());
        self.shared.state.lock().leader = holder.clone();
        if let Some(h) = holder {
            if self.reported_leader.as_deref() != Some(h.as_str()) {
                self.reported_leader = Some(h.clone());
                log::info!("leader election {}: new leader {h}", self.shared.lease_name);
                if let Some(cb) = &self.callbacks.new_leader {
                    if catch_unwind(AssertUnwindSafe(|| cb(&h))).is_err() {
                        log::error!(
                            "leader election {}: the new-leader callback panicked",
                            self.shared.lease_name
                        );
                    }
                }
            }
        }
        self.record = Some(lease);
    }

    /// Logs once what is wrong with a record held by someone.
    fn check_junk(&mut self, lease: &Lease) {
        let Some(spec) = &lease.spec else {
            return self.log_junk("it has no spec; counted as free");
        };
        if spec.holder_identity.as_deref().unwrap_or("").is_empty() {
            return; // free: a released lease looks like this
        }
        let mut problems = Vec::new();
        if spec.lease_duration_seconds.is_none_or(|s| s <= 0) {
            problems.push(format!(
                "leaseDurationSeconds missing or not positive; counted as {:?}",
                self.shared.config.lease_duration
            ));
        }
        if spec.renew_time.is_none() {
            problems.push("renewTime missing or unparsable (not used to decide)".to_owned());
        }
        if spec.lease_transitions.is_none_or(|t| t < 0) {
            problems.push("leaseTransitions missing or negative; counted as 0".to_owned());
        }
        if !problems.is_empty() {
            self.log_junk(&problems.join("; "));
        }
    }

    fn log_junk(&mut self, what: &str) {
        if self.junk_logged.as_deref() != Some(what) {
            log::warn!(
                "leader election {}: the Lease record is malformed: {what}",
                self.shared.lease_name
            );
            self.junk_logged = Some(what.to_owned());
        }
    }

    /// A failed request: a 409 is a lost race (quiet); anything else is logged when it
    /// differs from the previous failure.
    fn failed(&mut self, what: &str, e: Error) -> Attempt {
        if e.is_conflict() || e.is_cancelled() {
            return Attempt::Retry;
        }
        let message = format!("{what}: {e}");
        if self.last_error.as_deref() != Some(message.as_str()) {
            log::warn!("leader election {}: {message}", self.shared.lease_name);
            self.last_error = Some(message.clone());
        }
        self.shared.state.lock().last_error = Some(message);
        Attempt::Retry
    }

    /// Writes a record with no holder (if the last one seen is ours), so a successor
    /// acquires at once.
    fn release(&mut self) {
        self.shared.state.lock().releasing = true;
        self.shared.cond.notify_all();
        let c = &self.shared.config;
        let Some(mut lease) = self.record.take() else {
            return;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(c.identity.as_str()) {
            return;
        }
        let now = MicroTime::now();
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(String::new()),
            lease_duration_seconds: Some(1),
            acquire_time: Some(now),
            renew_time: Some(now),
            lease_transitions: spec.lease_transitions,
            strategy: spec.strategy,
            preferred_holder: spec.preferred_holder,
        });
        match self.backend.release(&lease) {
            Ok(_) => log::info!(
                "leader election {}: {} released the lease",
                self.shared.lease_name,
                c.identity
            ),
            Err(e) => log::warn!(
                "leader election {}: releasing the lease: {e}",
                self.shared.lease_name
            ),
        }
    }
}

/// Waits for a term's thread (its callbacks) to return.
fn join_term(t: Option<JoinHandle<()>>) {
    if let Some(t) = t {
        let _ = t.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_follows_client_go() {
        let ok = LeaderElectionConfig::new("ns", "l", "me");
        ok.validate().unwrap();
        let s = Duration::from_secs;
        for bad in [
            ok.clone().lease_duration(s(10)),
            ok.clone().renew_deadline(s(2)).retry_period(s(2)),
            ok.clone().retry_period(Duration::ZERO),
            ok.clone().lease_duration(s(u64::MAX / 2)),
            LeaderElectionConfig::new("ns", "l", ""),
            LeaderElectionConfig::new("", "l", "me"),
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        let short = ok
            .lease_duration(Duration::from_millis(1500))
            .renew_deadline(s(1))
            .retry_period(Duration::from_millis(200));
        short.validate().unwrap();
        assert_eq!(short.lease_seconds(), Some(2));
    }
}
