//! `Shared`: the state an elector's handle and threads hand each other under one lock, with
//! one condition variable for every wait on it.
//!
//! Why one lock: a term is begun by the elector thread, ended by the watchdog, the elector
//! thread or `stop`, and read by the handle and by probes; with the term, the stop flag and
//! the exit flags under one mutex, each of those hand-offs is one critical section, and every
//! change wakes every waiter (the hand-offs are checked under shuttle in
//! `controller/interleavings.rs`).

use std::time::Instant;

use super::config::LeaderElectionConfig;
use crate::client::Cancel;
// From the shim, so that the interleaving checks (`--cfg shuttle`) run this very code.
use crate::sync::{Condvar, Mutex};

/// What the handle, the elector thread, the watchdog and the status views share.
pub(super) struct Shared {
    pub(super) config: LeaderElectionConfig,
    pub(super) lease_name: String,
    /// Fired by `stop`: cuts the elector's requests and wakes its sleeps.
    pub(super) stop: Cancel,
    /// Cuts the release request when it takes longer than `release_timeout`.
    pub(super) release_cut: Cancel,
    pub(super) state: Mutex<State>,
    pub(super) cond: Condvar,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) stopping: bool,
    /// The current term's stop signal and the instant it ends without a renewal.
    pub(super) term: Option<(Cancel, Instant)>,
    /// The holder last observed (`None`: free or unknown).
    pub(super) leader: Option<String>,
    /// When the last successful write of this elector was sent.
    pub(super) last_renew: Option<Instant>,
    /// The elector thread has finished (for `stop`'s bounded wait).
    pub(super) exited: bool,
    /// The elector thread is about to send its release request (or decide not to).
    pub(super) releasing: bool,
    /// Test hook: the elector thread is held at its next pause point.
    pub(super) frozen: bool,
    /// The elector thread is held.
    pub(super) parked: bool,
    /// The last failure to read or write the Lease, cleared by the next success.
    pub(super) last_error: Option<String>,
}

impl Shared {
    /// Holds the thread while frozen; true when stopping.
    pub(super) fn pause_point(&self) -> bool {
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
