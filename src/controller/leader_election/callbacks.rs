//! `LeaderCallbacks`, what an elector calls when a term starts, when it ends and when the
//! holder changes; and `Term`, the one term of leadership a started callback works in.
//!
//! Why a `Term` and not a flag: the started callback runs on a thread of its own and must
//! stop acting when the term ends, whoever ends it (the elector thread finding another
//! holder, the watchdog at the renew deadline, `stop`). The term's stop signal is a
//! [`Cancel`] token, so the callback can sleep on it, poll it, or hand it to a client whose
//! requests then give up with the term.

use std::sync::Arc;
use std::time::Duration;

use crate::client::Cancel;

/// One term of leadership, given to the started-leading callback.
///
/// Its stop signal fires when the term ends: leadership lost (renewals failed past the
/// deadline, or another holder found) or the elector stopping. The callback must then return.
#[derive(Clone, Debug)]
pub struct Term {
    pub(super) stop: Cancel,
    pub(super) number: u64,
    pub(super) identity: String,
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
    /// [`Client::with_cancel`](crate::Client::with_cancel) gives up its requests when the
    /// term ends.
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
pub(super) type NewLeader = Arc<dyn Fn(&str) + Send + Sync>;

/// The callbacks of a [`LeaderElector`](super::LeaderElector).
#[derive(Clone)]
pub struct LeaderCallbacks {
    pub(super) started: Started,
    pub(super) stopped: Option<Stopped>,
    pub(super) new_leader: Option<NewLeader>,
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
