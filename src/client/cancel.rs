//! `Cancel`: a token that ends, from another thread, everything a client is waiting for.
//!
//! A reflector makes requests that can wait a long time: the client-side rate limit, a
//! server's `Retry-After`, a list page the server is slow to send, the response headers of a
//! watch, an exec credential plugin. Stopping must not wait for any of them. A client made
//! with [`Client::with_cancel`](super::Client::with_cancel) hands the token to every request
//! it makes: its waits sleep on the token, and the agents (connection pools) it uses are
//! registered with the token *before* they connect, so [`Cancel::cancel`] shuts their
//! connections down (a blocked read returns at once) and makes them refuse new ones. The
//! request then fails with [`Error::Cancelled`](crate::Error::Cancelled).
//!
//! An agent tracks a connection from the moment its TCP connect succeeds, so a connect still
//! under way (to an address that does not answer) ends only at the client's
//! `connect_timeout`; everything after it — the TLS handshake, sending, waiting for the
//! answer, reading it — is cut by the token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ureq::Agent;

// From the shim: the leader elector's interleaving checks run with a `Cancel` as each term's
// stop signal.
use crate::sync::{Condvar, Mutex};

/// A cancellation token shared by the clones of a client (and anything else that wants it).
/// Cheap to clone; clones are the same token. Once cancelled it stays cancelled.
#[derive(Clone, Default)]
pub struct Cancel {
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    cancelled: Mutex<bool>,
    cond: Condvar,
    /// What to shut down on cancel (agents, upgraded connections), by registration number.
    agents: Mutex<Agents>,
}

/// Shuts one registered thing down.
type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Agents {
    next: u64,
    live: HashMap<u64, Hook>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: wakes every [`sleep`](Self::sleep) and shuts down every registered
    /// connection. Idempotent.
    pub fn cancel(&self) {
        *self.state.cancelled.lock() = true;
        self.state.cond.notify_all();
        let hooks: Vec<Hook> = self
            .state
            .agents
            .lock()
            .live
            .drain()
            .map(|(_, h)| h)
            .collect();
        for shut_down in hooks {
            shut_down();
        }
    }

    /// True once [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        *self.state.cancelled.lock()
    }

    /// Sleeps for `d` unless cancelled first; returns true when cancelled. Any duration is
    /// accepted (one too large to add to the clock sleeps until cancelled).
    pub fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now().checked_add(d);
        let mut cancelled = self.state.cancelled.lock();
        while !*cancelled {
            match deadline {
                Some(deadline) => {
                    if self
                        .state
                        .cond
                        .wait_until(&mut cancelled, deadline)
                        .timed_out()
                    {
                        break;
                    }
                }
                None => self.state.cond.wait(&mut cancelled),
            }
        }
        *cancelled
    }

    /// Registers `agent` to be shut down on cancel, until the returned guard is dropped.
    /// `None` (and the agent shut down) when already cancelled.
    pub(crate) fn attach(&self, agent: &Agent) -> Option<Attached> {
        let agent = agent.clone();
        self.on_cancel(move || agent.shutdown())
    }

    /// Registers `shut_down` to run on cancel (on the cancelling thread), until the returned
    /// guard is dropped: how a connection this module knows nothing about (an upgraded
    /// exec or port-forward socket) is ended. Runs it at once, and answers `None`, when
    /// already cancelled.
    pub(crate) fn on_cancel(&self, shut_down: impl FnOnce() + Send + 'static) -> Option<Attached> {
        let mut agents = self.state.agents.lock();
        // Read under the agents lock: `cancel` sets the flag before it drains the hooks,
        // so a hook is either drained by it or run here.
        if self.is_cancelled() {
            drop(agents);
            shut_down();
            return None;
        }
        let id = agents.next;
        agents.next += 1;
        agents.live.insert(id, Box::new(shut_down));
        Some(Attached {
            state: Arc::clone(&self.state),
            id,
        })
    }
}

/// An agent (or a hook) registered with a [`Cancel`]; dropping it unregisters it.
pub(crate) struct Attached {
    state: Arc<State>,
    id: u64,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.state.agents.lock().live.remove(&self.id);
    }
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached").field("id", &self.id).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_wakes_a_sleeper_and_refuses_new_agents() {
        let c = Cancel::new();
        assert!(!c.sleep(Duration::ZERO));
        let c2 = c.clone();
        let t = std::thread::spawn(move || c2.sleep(Duration::MAX));
        c.cancel();
        assert!(t.join().unwrap());
        assert!(c.sleep(Duration::from_secs(3600)));
        let agent = Agent::new_with_defaults();
        assert!(c.attach(&agent).is_none());
    }

    #[test]
    fn a_dropped_guard_unregisters_its_agent() {
        let c = Cancel::new();
        let agent = Agent::new_with_defaults();
        let g = c.attach(&agent).unwrap();
        assert_eq!(c.state.agents.lock().live.len(), 1);
        drop(g);
        assert!(c.state.agents.lock().live.is_empty());
    }

    #[test]
    fn a_hook_runs_once_on_cancel_or_at_once_when_already_cancelled() {
        let c = Cancel::new();
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let r = Arc::clone(&runs);
        let _g = c.on_cancel(move || {
            r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
        c.cancel();
        c.cancel();
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
        let r = Arc::clone(&runs);
        assert!(c
            .on_cancel(move || {
                r.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            })
            .is_none());
        assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
