//! `LeaderElector`: the handle a program holds. It validates the configuration, starts the
//! elector thread and the watchdog, reads their shared state (leading, holder, last error),
//! and on `stop` (or drop) ends the term, lets the release go out and joins every thread.
//!
//! Why the handle owns the threads: stopping must be a single call that returns only when
//! nothing of the elector runs any more (no callback, no request), with the release request
//! bounded by `release_timeout`.

use std::sync::Arc;
use std::time::Instant;

use super::callbacks::LeaderCallbacks;
use super::config::LeaderElectionConfig;
use super::elector_thread::Run;
use super::lease_backend::{ApiBackend, LeaseBackend};
use super::shared_state::{Shared, State};
use super::status::ElectorStatus;
use super::watchdog::watchdog;
use crate::client::{Api, Cancel, Client};
use crate::error::{Error, Result};
// From the shim, so that the interleaving checks (`--cfg shuttle`) run this very code.
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{Condvar, Mutex};

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
