//! `Manager`: several controllers over one client and one informer factory, run as one
//! process should be run in production.
//!
//! controller-runtime's manager, made synchronous. What it adds to a [`Controller`]:
//! - **one cache**: every controller's informers come from the manager's factory, so a
//!   resource two controllers watch is listed and watched once;
//! - **one leader election** for all: with [`ManagerBuilder::leader_election`], every
//!   replica keeps its informers synced and its queues filled, and the workers of all the
//!   controllers run only while this replica leads (they start together when a term starts
//!   and are stopped and joined together when it ends);
//! - **health**: [`Manager::liveness`] and [`Manager::readiness`] (the checks are described
//!   in `checks.rs`), served on `/healthz` and `/readyz` with the `probes` feature, with
//!   `/metrics` beside them with the `metrics` feature (every controller, queue, informer,
//!   the client and the elector registered);
//! - **a clean stop within a grace period**: [`Manager::run`] returns once
//!   [`ShutdownHandle::shutdown`] is called (wire it to SIGTERM and SIGINT: the examples do
//!   it with the `ctrlc` crate in two lines). Readiness turns false at once; the workers
//!   finish the keys in hand, the Lease is released (so another replica takes over at once),
//!   handlers are removed, informers stopped, and the probe endpoint goes last. If that takes
//!   longer than the grace period (30 s by default; the kubelet's own is 30 s), `run` returns
//!   an error naming the step that hung, and the process can exit.
//!
//! **Scope per resource**: [`ManagerBuilder::scope`] gives one resource's informers their own
//! namespaces (one, several, all), selectors and transform, so one factory serves every
//! controller; [`ManagerBuilder::informer`] adds an informer made elsewhere to the sync wait
//! and the checks. **Gone resources**: an informer whose resource is no longer served (its
//! CRD deleted; see [`InformerHealth::gone_for`](crate::cache::InformerHealth::gone_for)) is
//! not failing: neither probe counts it unless [`ManagerBuilder::gone_is_failure`] says so —
//! restarting the pod would not bring a CRD back. **Checks of your own**:
//! [`ManagerBuilder::readyz_check`] and [`ManagerBuilder::healthz_check`] add named checks
//! (controller-runtime's `AddReadyzCheck`/`AddHealthzCheck`), reported beside the manager's
//! own, each under its name (`/readyz?verbose`, `/readyz/<name>`).
//!
//! Why signal handling is not in here: a process has one disposition per signal, and the
//! application may already own it (its own handler, a second Ctrl-C that exits at once, a
//! runtime). A library that installs handlers takes that choice away, or fails (`ctrlc`
//! allows one handler per process). The manager takes the stop from anywhere through a
//! [`ShutdownHandle`]; the application connects its signal source to it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::checks::{self, Check, Probe, Report};
use crate::api::{ApiResource, Object};
use crate::cache::{
    FactoryOptions, InformerHealth, InformerScope, SharedIndexInformer, SharedInformerFactory,
};
use crate::client::Client;
use crate::controller::controller::Spawner;
use crate::controller::leader_election::ElectorStatus;
use crate::controller::{
    Action, Controller, ControllerBuilder, ControllerHealth, LeaderCallbacks, LeaderElectionConfig,
    LeaderElector,
};
use crate::error::{Error, Result};
use crate::thread_name::thread_name;

/// A controller, its type erased.
trait Managed: Send {
    fn spawner(&self) -> Option<Spawner>;
    fn health(&self) -> ControllerHealth;
    fn wake(&self);
    fn stop(self: Box<Self>);
    #[cfg(feature = "metrics")]
    fn register(&self, metrics: &crate::metrics::Metrics);
}

impl<K: Object> Managed for Controller<K> {
    fn spawner(&self) -> Option<Spawner> {
        Controller::spawner(self).cloned()
    }
    fn health(&self) -> ControllerHealth {
        Controller::health(self)
    }
    fn wake(&self) {
        self.wake_workers();
    }
    fn stop(self: Box<Self>) {
        Controller::stop(*self);
    }
    #[cfg(feature = "metrics")]
    fn register(&self, metrics: &crate::metrics::Metrics) {
        metrics.register_controller(self);
    }
}

/// Builds one controller (on the manager's start-up thread).
type Recipe = Box<dyn FnOnce() -> Result<Box<dyn Managed>> + Send>;

/// An application's check: `Ok(())` passes, `Err(reason)` fails with that reason.
type UserCheck = Arc<dyn Fn() -> std::result::Result<(), String> + Send + Sync>;

/// An informer's health while it lives (`None` once it is dropped).
type HealthSource = Box<dyn Fn() -> Option<InformerHealth> + Send + Sync>;

/// The checks every report has, whose names an application's check may not take.
const BUILT_IN_CHECKS: [&str; 7] = [
    "ping",
    "informer-sync",
    "watches",
    "controllers",
    "reconciles",
    "leader-election",
    "shutdown",
];

/// Runs an application's check; a panic fails it (the probe thread goes on).
fn run_check(name: &'static str, check: &UserCheck) -> Check {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check()));
    let failure = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(why)) => Some(why),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic".to_owned());
            log::error!("manager: the check {name} panicked: {msg}");
            Some(format!("the check panicked: {msg}"))
        }
    };
    Check::new(name, failure)
}

/// Options for a [`Manager`]: its controllers, leader election, health bounds, probes and
/// grace period.
pub struct ManagerBuilder {
    client: Client,
    factory: Arc<SharedInformerFactory>,
    recipes: Vec<Recipe>,
    election: Option<LeaderElectionConfig>,
    on_leadership: Option<Arc<dyn Fn(bool) + Send + Sync>>,
    grace: Duration,
    unready_after: Duration,
    unhealthy_after: Duration,
    gone_is_failure: bool,
    readyz: Vec<(&'static str, UserCheck)>,
    healthz: Vec<(&'static str, UserCheck)>,
    informers: Vec<HealthSource>,
    /// The first error of a builder step, returned by `start`.
    error: Option<Error>,
    unready_when_failing: Option<Duration>,
    #[cfg(feature = "probes")]
    probe_addr: Option<String>,
    #[cfg(feature = "metrics")]
    metrics: crate::metrics::Metrics,
    #[cfg(all(feature = "metrics", feature = "webhook"))]
    secure_metrics: Option<(String, crate::serve::TlsFiles)>,
}

impl std::fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("controllers", &self.recipes.len())
            .field("leader_election", &self.election.is_some())
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

/// Asks a [`Manager`] to stop; cheap to clone, callable from any thread (a signal handler's
/// included: it only sets a flag and wakes the waiter).
#[derive(Clone, Debug)]
pub struct ShutdownHandle(Arc<Shared>);

impl ShutdownHandle {
    /// Asks the manager to stop: readiness turns false, [`Manager::run`] begins the stop.
    pub fn shutdown(&self) {
        let mut phase = self.0.phase.lock();
        if *phase == Phase::Running {
            *phase = Phase::Stopping;
        }
        self.0.changed.notify_all();
    }

    /// True once a stop was asked for.
    pub fn is_shutting_down(&self) -> bool {
        *self.0.phase.lock() != Phase::Running
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Running,
    Stopping,
}

/// What the manager's threads share.
struct Shared {
    phase: Mutex<Phase>,
    changed: Condvar,
    factory: Arc<SharedInformerFactory>,
    controllers: Mutex<Vec<Box<dyn Managed>>>,
    /// Every controller was built (its caches synced) and its workers started or handed to
    /// the elector.
    started: AtomicBool,
    /// Why the start failed, if it did.
    failure: Mutex<Option<String>>,
    elector: Mutex<Option<LeaderElector>>,
    elector_status: Mutex<Option<ElectorStatus>>,
    /// Without leader election: the workers, and their stop flag.
    workers: Mutex<Vec<JoinHandle<()>>>,
    workers_stop: Arc<AtomicBool>,
    unready_after: Duration,
    unhealthy_after: Duration,
    unready_when_failing: Option<Duration>,
    election: bool,
    gone_is_failure: bool,
    readyz: Vec<(&'static str, UserCheck)>,
    healthz: Vec<(&'static str, UserCheck)>,
    /// Informers given to the manager besides the factory's.
    informers: Vec<HealthSource>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("phase", &*self.phase.lock())
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn stopping(&self) -> bool {
        *self.phase.lock() != Phase::Running
    }

    /// Waits up to `d`; true when stopping.
    fn pause(&self, d: Duration) -> bool {
        let mut phase = self.phase.lock();
        if *phase == Phase::Running {
            self.changed.wait_for(&mut phase, d);
        }
        *phase != Phase::Running
    }

    /// Every informer's health: the factory's, then those given to the manager.
    fn informer_health(&self) -> Vec<InformerHealth> {
        let mut all = self.factory.health();
        all.extend(self.informers.iter().filter_map(|h| h()));
        all
    }

    /// What the `watches` checks judge: a gone resource is not failing, unless the
    /// manager counts it as failing (then for as long as it is gone).
    fn judged(&self) -> Vec<InformerHealth> {
        let mut all = self.informer_health();
        if self.gone_is_failure {
            for h in &mut all {
                if let Some(gone) = h.gone_for {
                    h.failing_for = Some(h.failing_for.unwrap_or_default().max(gone));
                }
            }
        }
        all
    }

    /// Bounded: the stop holds the list while it stops the controllers (a probe then gets
    /// none; the `shutdown` check says why).
    fn controllers_health(&self) -> Vec<ControllerHealth> {
        match self.controllers.try_lock_for(Duration::from_millis(200)) {
            Some(list) => list.iter().map(|c| c.health()).collect(),
            None => Vec::new(),
        }
    }

    fn liveness(&self) -> Report {
        let all = self.judged();
        let mut checks = vec![
            Check::pass("ping"),
            checks::watches(&all, self.unhealthy_after),
        ];
        checks.extend(self.healthz.iter().map(|(name, c)| run_check(name, c)));
        Report {
            probe: Probe::Liveness,
            checks,
        }
    }

    fn readiness(&self) -> Report {
        let all = self.judged();
        let controllers = if self.started.load(Ordering::SeqCst) {
            None
        } else if let Some(why) = self.failure.lock().clone() {
            Some(why)
        } else {
            Some("starting (waiting for the caches to sync)".to_owned())
        };
        let mut checks = vec![
            checks::informer_sync(&all),
            checks::watches(&all, self.unready_after),
            Check::new("controllers", controllers),
        ];
        if let Some(bound) = self.unready_when_failing {
            checks.push(checks::reconciles(&self.controllers_health(), bound));
        }
        if self.election {
            let status = self.elector_status.lock().clone();
            let failure = match status {
                None => Some("the elector has not started yet".to_owned()),
                Some(s) if s.is_leader() => None,
                Some(s) => s.standing().err(),
            };
            checks.push(Check::new("leader-election", failure));
        }
        checks.extend(self.readyz.iter().map(|(name, c)| run_check(name, c)));
        checks.push(Check::new(
            "shutdown",
            self.stopping()
                .then(|| "the manager is stopping".to_owned()),
        ));
        Report {
            probe: Probe::Readiness,
            checks,
        }
    }

    /// One term of leadership (or, without election, the whole run): starts every
    /// controller's workers, waits, stops and joins them.
    fn start_workers(&self, stop: &Arc<AtomicBool>) -> Vec<JoinHandle<()>> {
        let mut handles = Vec::new();
        for c in self.controllers.lock().iter() {
            if let Some(spawn) = c.spawner() {
                match spawn(stop) {
                    Ok(h) => handles.extend(h),
                    Err(e) => log::error!("manager: starting workers: {e}"),
                }
            }
        }
        handles
    }

    fn stop_workers(&self, stop: &AtomicBool, handles: Vec<JoinHandle<()>>) {
        stop.store(true, Ordering::SeqCst);
        for c in self.controllers.lock().iter() {
            c.wake();
        }
        for h in handles {
            let _ = h.join();
        }
    }
}

/// Runs several controllers over one client and one informer factory, with optional leader
/// election, health checks, probes (feature `probes`) and metrics (feature `metrics`), and
/// stops them cleanly within a grace period. See the [module docs](crate::manager).
///
/// ```
/// use std::time::Duration;
/// use kube_informer::api::ApiResource;
/// use kube_informer::controller::{Action, Controller};
/// use kube_informer::manager::Manager;
/// use kube_informer::Client;
/// # let server = kube_informer::testing::ApiServer::start();
/// # let nodes_ar = ApiResource::new("", "v1", "Node", "nodes", false);
/// # server.create(&nodes_ar, serde_json::json!({"metadata": {"name": "gpu-1"}})).unwrap();
/// let client = Client::new(server.client_config())?;
/// let builder = Manager::builder(client);
/// let nodes = builder.factory().dynamic_informer(&nodes_ar);
/// let (tx, rx) = crossbeam_channel::unbounded();
/// let manager = builder
///     .controller(Controller::builder("node-labeler", nodes), move |key: &str| {
///         tx.send(key.to_owned()).ok();
///         Ok::<_, kube_informer::Error>(Action::Done)
///     })
///     .grace_period(Duration::from_secs(10))
///     .start()?;
/// assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "gpu-1");
/// // In a program: `ctrlc::set_handler(move || handle.shutdown())` and `manager.run()`.
/// let handle = manager.shutdown_handle();
/// handle.shutdown();
/// manager.run()?; // stops everything, within the grace period
/// # Ok::<(), kube_informer::Error>(())
/// ```
pub struct Manager {
    shared: Arc<Shared>,
    client: Client,
    grace: Duration,
    starter: Option<JoinHandle<()>>,
    #[cfg(feature = "probes")]
    probes: Option<super::probes::ProbeServer>,
    #[cfg(feature = "metrics")]
    metrics: crate::metrics::Metrics,
    #[cfg(all(feature = "metrics", feature = "webhook"))]
    metrics_server: Option<crate::serve::Server>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("shared", &self.shared)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager over `client`, with a factory of default options.
    pub fn builder(client: Client) -> ManagerBuilder {
        Self::builder_with_options(client, FactoryOptions::default())
    }

    /// A manager over `client`, whose factory has `options` (namespace, selectors, resync).
    pub fn builder_with_options(client: Client, options: FactoryOptions) -> ManagerBuilder {
        ManagerBuilder {
            factory: Arc::new(SharedInformerFactory::with_options(client.clone(), options)),
            client,
            recipes: Vec::new(),
            election: None,
            on_leadership: None,
            grace: Duration::from_secs(30),
            unready_after: Duration::from_secs(30),
            unhealthy_after: Duration::from_secs(300),
            gone_is_failure: false,
            readyz: Vec::new(),
            healthz: Vec::new(),
            informers: Vec::new(),
            error: None,
            unready_when_failing: None,
            #[cfg(feature = "probes")]
            probe_addr: None,
            #[cfg(all(feature = "metrics", feature = "webhook"))]
            secure_metrics: None,
            #[cfg(feature = "metrics")]
            metrics: crate::metrics::Metrics::new(),
        }
    }

    /// Every started controller's health (its counters and failing keys), in the order added.
    pub fn controllers_health(&self) -> Vec<ControllerHealth> {
        self.shared.controllers_health()
    }

    /// The informer factory every controller's informers should come from.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.shared.factory
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The registry `/metrics` serves, to add metrics of your own or to serve it yourself.
    #[cfg(feature = "metrics")]
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// The address the probe endpoint listens on (with the port the system chose for `:0`).
    #[cfg(feature = "probes")]
    pub fn probe_addr(&self) -> Option<std::net::SocketAddr> {
        self.probes.as_ref().map(|p| p.addr())
    }

    /// Where the secure metrics endpoint listens, if it was asked for (see
    /// [`ManagerBuilder::secure_metrics`]).
    #[cfg(all(feature = "metrics", feature = "webhook"))]
    #[cfg_attr(docsrs, doc(cfg(all(feature = "metrics", feature = "webhook"))))]
    pub fn secure_metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics_server.as_ref().map(|s| s.addr())
    }

    /// What `/healthz` answers (see the module docs for the checks).
    pub fn liveness(&self) -> Report {
        self.shared.liveness()
    }

    /// What `/readyz` answers (see the module docs for the checks).
    pub fn readiness(&self) -> Report {
        self.shared.readiness()
    }

    /// True while the workers may run: always without leader election, during a term with it.
    pub fn is_leader(&self) -> bool {
        match &*self.shared.elector_status.lock() {
            Some(s) => s.is_leader(),
            None => !self.shared.election && self.shared.started.load(Ordering::SeqCst),
        }
    }

    /// A handle that asks this manager to stop (from a signal handler, another thread...).
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(Arc::clone(&self.shared))
    }

    /// Blocks until a stop is asked for (through a [`ShutdownHandle`]) or the start failed,
    /// then stops everything within the grace period. An error says why the start failed, or
    /// which step of the stop did not end within the grace period (its threads are left to
    /// end with the process).
    pub fn run(mut self) -> Result<()> {
        {
            let mut phase = self.shared.phase.lock();
            while *phase == Phase::Running {
                self.shared.changed.wait(&mut phase);
            }
        }
        self.stop_within_grace()
    }

    /// Asks for the stop and stops, as [`run`](Self::run) does after a
    /// [`ShutdownHandle::shutdown`].
    pub fn stop(self) -> Result<()> {
        self.shutdown_handle().shutdown();
        self.run()
    }

    fn stop_within_grace(&mut self) -> Result<()> {
        let shared = Arc::clone(&self.shared);
        let starter = self.starter.take();
        #[cfg(feature = "probes")]
        let probes = self.probes.take();
        #[cfg(all(feature = "metrics", feature = "webhook"))]
        let metrics_server = self.metrics_server.take();
        let step = Arc::new(Mutex::new("joining the start-up thread"));
        let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(1);
        let step2 = Arc::clone(&step);
        let stopper = std::thread::Builder::new()
            .name(thread_name("mgr", "stop"))
            .spawn(move || {
                let set = |s: &'static str| *step2.lock() = s;
                if let Some(t) = starter {
                    let _ = t.join();
                }
                set("stopping the leader election (the workers finish their keys)");
                if let Some(e) = shared.elector.lock().take() {
                    e.stop();
                }
                set("stopping the workers (they finish their keys)");
                let handles = std::mem::take(&mut *shared.workers.lock());
                shared.stop_workers(&shared.workers_stop, handles);
                set("stopping the controllers");
                for c in std::mem::take(&mut *shared.controllers.lock()) {
                    c.stop();
                }
                set("stopping the informers");
                shared.factory.shutdown();
                set("stopping the probe endpoint");
                #[cfg(feature = "probes")]
                if let Some(p) = probes {
                    p.stop();
                }
                #[cfg(all(feature = "metrics", feature = "webhook"))]
                if let Some(m) = metrics_server {
                    m.stop();
                }
                let _ = done_tx.send(());
            })
            .map_err(|e| Error::Config(format!("manager: spawning the stop thread: {e}")))?;
        match done_rx.recv_timeout(self.grace) {
            Ok(()) => {
                let _ = stopper.join();
            }
            Err(_) => {
                let step = *step.lock();
                log::error!(
                    "manager: did not stop within the grace period of {:?} ({step})",
                    self.grace
                );
                return Err(Error::Config(format!(
                    "manager: did not stop within the grace period of {:?}: {step}",
                    self.grace
                )));
            }
        }
        match self.shared.failure.lock().take() {
            Some(why) => Err(Error::Config(format!("manager: {why}"))),
            None => Ok(()),
        }
    }
}

impl Drop for Manager {
    /// Stops everything (within the grace period), if `run` or `stop` did not.
    fn drop(&mut self) {
        if self.starter.is_some() {
            self.shutdown_handle().shutdown();
            let _ = self.stop_within_grace();
        }
    }
}

impl ManagerBuilder {
    /// The informer factory every controller's informers should come from (so that each
    /// resource is listed and watched once, and readiness waits for all of them).
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// Adds a controller: built and started by [`start`](Self::start), in the order added,
    /// once the factory's caches have synced. Its workers run under the manager's leader
    /// election, if any (a leader election or `on_leadership` set on `controller` itself is
    /// ignored: see [`ManagerBuilder::on_leadership`]).
    pub fn controller<K: Object, E: std::fmt::Display + 'static>(
        mut self,
        controller: ControllerBuilder<K, E>,
        reconcile: impl Fn(&str) -> std::result::Result<Action, E> + Send + Sync + 'static,
    ) -> Self {
        self.recipes.push(Box::new(move || {
            let c: Box<dyn Managed> = Box::new(controller.managed().run(reconcile)?);
            Ok(c)
        }));
        self
    }

    /// Runs the workers of every controller only while this replica holds the Lease of
    /// `config` (all controllers lead together).
    pub fn leader_election(mut self, config: LeaderElectionConfig) -> Self {
        self.election = Some(config);
        self
    }

    /// Under leader election, called with `true` when a term starts (before the workers
    /// start) and `false` when it ends (after they were stopped and joined).
    pub fn on_leadership(mut self, f: impl Fn(bool) + Send + Sync + 'static) -> Self {
        self.on_leadership = Some(Arc::new(f));
        self
    }

    /// How long [`Manager::run`] may take to stop everything (default 30 s).
    pub fn grace_period(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Readiness fails once an informer's lists and watches have kept failing this long
    /// (default 30 s).
    pub fn unready_after(mut self, bound: Duration) -> Self {
        self.unready_after = bound;
        self
    }

    /// Liveness fails once an informer's lists and watches have kept failing this long
    /// (default 5 minutes).
    pub fn unhealthy_after(mut self, bound: Duration) -> Self {
        self.unhealthy_after = bound;
        self
    }

    /// Whether an informer whose resource is *gone* (no longer served: its CRD deleted)
    /// counts as failing in the `watches` checks — for readiness after
    /// [`unready_after`](Self::unready_after), for liveness after
    /// [`unhealthy_after`](Self::unhealthy_after). Default `false`: a restart does not bring
    /// a resource back, and the informer lists again by itself once it is served.
    pub fn gone_is_failure(mut self, failure: bool) -> Self {
        self.gone_is_failure = failure;
        self
    }

    /// Gives `resource`'s informers their own namespaces, selectors and transform (see
    /// [`InformerScope`] and [`SharedInformerFactory::set_scope`]). Set it before asking the
    /// [`factory`](Self::factory) for the informer; otherwise [`start`](Self::start) fails
    /// saying so.
    ///
    /// ```
    /// use kube_informer::api::ApiResource;
    /// use kube_informer::cache::InformerScope;
    /// use kube_informer::manager::Manager;
    /// # let server = kube_informer::testing::ApiServer::start();
    /// let cms = ApiResource::new("", "v1", "ConfigMap", "configmaps", true);
    /// let builder = Manager::builder(kube_informer::Client::new(server.client_config())?)
    ///     .scope(&cms, InformerScope::new().namespaces(["team-a", "team-b"]));
    /// let informer = builder.factory().dynamic_informer(&cms);
    /// assert_eq!(informer.namespaces(), ["team-a", "team-b"]);
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn scope(mut self, resource: &ApiResource, scope: InformerScope) -> Self {
        if let Err(e) = self.factory.set_scope(resource, scope) {
            self.error.get_or_insert(e);
        }
        self
    }

    /// Counts an informer made outside the manager's factory in the sync the controllers
    /// wait for and in the health checks, as the factory's are (while it lives: the
    /// manager does not keep it alive, start or stop it).
    pub fn informer<K: Object>(mut self, informer: &SharedIndexInformer<K>) -> Self {
        self.informers.push(Box::new(informer.health_source()));
        self
    }

    /// Adds a named readiness check of the application (controller-runtime's
    /// `AddReadyzCheck`): `Ok(())` passes, `Err(reason)` fails `/readyz` with the reason,
    /// shown under `name` (`[-]name failed: reason`; `/readyz/<name>` alone). It runs on
    /// every probe, on the probe's thread: keep it quick. A panic fails it. A name must be
    /// new (not one of the manager's own checks nor taken), without `/`, `?` or spaces;
    /// [`start`](Self::start) fails otherwise.
    ///
    /// ```
    /// use kube_informer::manager::Manager;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// # let server = kube_informer::testing::ApiServer::start();
    /// let warmed = Arc::new(AtomicBool::new(false));
    /// let w = Arc::clone(&warmed);
    /// let manager = Manager::builder(kube_informer::Client::new(server.client_config())?)
    ///     .readyz_check("model-loaded", move || {
    ///         if w.load(Ordering::SeqCst) { Ok(()) } else { Err("still loading".into()) }
    ///     })
    ///     .start()?;
    /// let check = manager.readiness().only("model-loaded").unwrap();
    /// assert_eq!(check.checks[0].failure.as_deref(), Some("still loading"));
    /// warmed.store(true, Ordering::SeqCst);
    /// assert!(manager.readiness().only("model-loaded").unwrap().passed());
    /// manager.stop()?;
    /// # Ok::<(), kube_informer::Error>(())
    /// ```
    pub fn readyz_check(
        mut self,
        name: &'static str,
        check: impl Fn() -> std::result::Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.readyz.push((name, Arc::new(check)));
        self
    }

    /// Adds a named liveness check of the application (controller-runtime's
    /// `AddHealthzCheck`), served on `/healthz` and `/livez` as
    /// [`readyz_check`](Self::readyz_check)'s are on `/readyz`. A failing liveness check
    /// gets the pod restarted: fail it only for what a restart cures (a stuck worker).
    pub fn healthz_check(
        mut self,
        name: &'static str,
        check: impl Fn() -> std::result::Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.healthz.push((name, Arc::new(check)));
        self
    }

    /// Refuses check names that clash or would not work as a path segment.
    fn validate_checks(&self) -> Result<()> {
        for list in [&self.readyz, &self.healthz] {
            let mut seen = std::collections::HashSet::new();
            for (name, _) in list {
                let bad = name.is_empty()
                    || name
                        .chars()
                        .any(|c| c == '/' || c == '?' || c == '&' || c.is_whitespace());
                if bad {
                    return Err(Error::InvalidInput(format!(
                        "manager: the check name {name:?} must be non-empty, without '/', '?', '&' or spaces"
                    )));
                }
                if BUILT_IN_CHECKS.contains(name) || !seen.insert(*name) {
                    return Err(Error::InvalidInput(format!(
                        "manager: a check named {name:?} exists already"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Adds the readiness check `reconciles`: it fails while some controller's every
    /// reconcile has failed for longer than `bound` (since its first failure after the last
    /// reconcile that succeeded, or after the start; see
    /// [`ControllerHealth::failing_for`]), naming the controller and its last errors. Off by
    /// default: a controller whose only objects are invalid fails every reconcile while the
    /// process is fine, and readiness gates Service endpoints and rollouts. Turn it on (5
    /// minutes is a fair bound) when a controller that fails everything should stop a
    /// rollout: a new version missing an RBAC rule, say.
    pub fn unready_when_failing(mut self, bound: Duration) -> Self {
        self.unready_when_failing = Some(bound);
        self
    }

    /// Serves `/healthz`, `/livez`, `/readyz` (and `/metrics` with the `metrics` feature) on
    /// `addr` (`HOST:PORT`; port 0 picks one, see [`Manager::probe_addr`]).
    #[cfg(feature = "probes")]
    pub fn probe_addr(mut self, addr: &str) -> Self {
        self.probe_addr = Some(addr.to_owned());
        self
    }

    /// Serves `/metrics` over TLS on `addr` (`HOST:PORT`; controller-runtime's default is
    /// `:8443`) with the certificate and key of `tls` (reloaded when they change), to callers
    /// kube-apiserver authenticates (`TokenReview`) and authorises to `get` the non-resource
    /// URL `/metrics` (`SubjectAccessReview`), as controller-runtime's secure metrics
    /// (see [`RequireAccess`](crate::serve::RequireAccess)). The manager's client needs the
    /// `system:auth-delegator` ClusterRole. Separate from the plain probe endpoint, which
    /// keeps its own `/metrics` for scrapes from inside the pod.
    #[cfg(all(feature = "metrics", feature = "webhook"))]
    #[cfg_attr(docsrs, doc(cfg(all(feature = "metrics", feature = "webhook"))))]
    pub fn secure_metrics(mut self, addr: &str, tls: crate::serve::TlsFiles) -> Self {
        self.secure_metrics = Some((addr.to_owned(), tls));
        self
    }

    /// Uses `metrics` as the registry (default: a new one); everything the manager runs is
    /// registered in it.
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Starts the probe endpoint and the informers, then, on a start-up thread, builds the
    /// controllers once the caches synced and starts their workers (or the elector). Returns
    /// at once; readiness says when everything runs. The caches are waited for as long as
    /// it takes (readiness says which informer is not synced and its last error; liveness
    /// fails once one has kept failing for [`unhealthy_after`](Self::unhealthy_after)). Fails
    /// when the probe endpoint cannot listen or a thread cannot start.
    pub fn start(mut self) -> Result<Manager> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.validate_checks()?;
        if let Some(c) = &self.election {
            c.validate()?;
        }
        let shared = Arc::new(Shared {
            phase: Mutex::new(Phase::Running),
            changed: Condvar::new(),
            factory: Arc::clone(&self.factory),
            controllers: Mutex::new(Vec::new()),
            started: AtomicBool::new(false),
            failure: Mutex::new(None),
            elector: Mutex::new(None),
            elector_status: Mutex::new(None),
            workers: Mutex::new(Vec::new()),
            workers_stop: Arc::new(AtomicBool::new(false)),
            unready_after: self.unready_after,
            unhealthy_after: self.unhealthy_after,
            unready_when_failing: self.unready_when_failing,
            election: self.election.is_some(),
            gone_is_failure: self.gone_is_failure,
            readyz: std::mem::take(&mut self.readyz),
            healthz: std::mem::take(&mut self.healthz),
            informers: std::mem::take(&mut self.informers),
        });
        #[cfg(feature = "metrics")]
        {
            self.metrics.register_client(&self.client);
            self.metrics.register_factory(&self.factory);
        }
        #[cfg(feature = "probes")]
        let probes = match &self.probe_addr {
            Some(addr) => {
                let s = Arc::clone(&shared);
                let answer = move |probe: Probe| match probe {
                    Probe::Liveness => s.liveness(),
                    Probe::Readiness => s.readiness(),
                };
                Some(super::probes::ProbeServer::start(
                    addr,
                    Box::new(answer),
                    #[cfg(feature = "metrics")]
                    self.metrics.clone(),
                )?)
            }
            None => None,
        };
        #[cfg(all(feature = "metrics", feature = "webhook"))]
        let metrics_server = match self.secure_metrics {
            Some((addr, tls)) => {
                use crate::serve::{MetricsHandler, RequireAccess, Router, Server};
                let handler = RequireAccess::new(
                    self.client.clone(),
                    MetricsHandler::new(self.metrics.clone()),
                );
                Some(
                    Server::builder("metrics")
                        .limits(crate::serve::Limits::probes())
                        .grace(Duration::from_secs(1))
                        .tls(tls)
                        .bind(&addr, Router::new().route("/metrics", handler))?,
                )
            }
            None => None,
        };
        self.factory.start()?;
        let s = Arc::clone(&shared);
        let (recipes, election, client) = (self.recipes, self.election, self.client.clone());
        let on_leadership = self.on_leadership;
        #[cfg(feature = "metrics")]
        let metrics = self.metrics.clone();
        let starter = std::thread::Builder::new()
            .name(thread_name("mgr", "start"))
            .spawn(move || {
                let result = start_up(
                    &s,
                    recipes,
                    election,
                    on_leadership,
                    client,
                    #[cfg(feature = "metrics")]
                    &metrics,
                );
                match result {
                    Ok(()) => s.started.store(true, Ordering::SeqCst),
                    Err(why) if s.stopping() => log::debug!("manager: start-up cut: {why}"),
                    Err(why) => {
                        log::error!("manager: {why}");
                        *s.failure.lock() = Some(why);
                        ShutdownHandle(Arc::clone(&s)).shutdown();
                    }
                }
            })
            .map_err(|e| Error::Config(format!("manager: spawning the start-up thread: {e}")))?;
        Ok(Manager {
            shared,
            client: self.client,
            grace: self.grace,
            starter: Some(starter),
            #[cfg(feature = "probes")]
            probes,
            #[cfg(feature = "metrics")]
            metrics: self.metrics,
            #[cfg(all(feature = "metrics", feature = "webhook"))]
            metrics_server,
        })
    }
}

/// The start-up thread's work: wait for the caches (while not stopping), build each
/// controller, then start the workers or the elector.
fn start_up(
    shared: &Arc<Shared>,
    recipes: Vec<Recipe>,
    election: Option<LeaderElectionConfig>,
    on_leadership: Option<Arc<dyn Fn(bool) + Send + Sync>>,
    client: Client,
    #[cfg(feature = "metrics")] metrics: &crate::metrics::Metrics,
) -> std::result::Result<(), String> {
    loop {
        if shared.stopping() {
            return Err("stopped while waiting for the caches".into());
        }
        if shared.informer_health().iter().all(|h| h.synced) {
            break;
        }
        shared.pause(Duration::from_millis(50));
    }
    for recipe in recipes {
        if shared.stopping() {
            return Err("stopped while starting the controllers".into());
        }
        let c = recipe().map_err(|e| format!("starting a controller: {e}"))?;
        #[cfg(feature = "metrics")]
        c.register(metrics);
        shared.controllers.lock().push(c);
    }
    match election {
        None => {
            let handles = shared.start_workers(&shared.workers_stop);
            shared.workers.lock().extend(handles);
        }
        Some(config) => {
            let s = Arc::clone(shared);
            let callbacks = LeaderCallbacks::new(move |term| {
                if let Some(f) = &on_leadership {
                    f(true);
                }
                let stop = Arc::new(AtomicBool::new(false));
                let handles = s.start_workers(&stop);
                term.wait();
                s.stop_workers(&stop, handles);
                if let Some(f) = &on_leadership {
                    f(false);
                }
            });
            let elector = LeaderElector::start(client, config, callbacks)
                .map_err(|e| format!("starting the leader election: {e}"))?;
            #[cfg(feature = "metrics")]
            metrics.register_elector(&elector);
            *shared.elector_status.lock() = Some(elector.status());
            // The stop thread joins this thread before it looks for the elector.
            *shared.elector.lock() = Some(elector);
        }
    }
    Ok(())
}
