//! `ElectorStatus`: what the manager (its readiness check, `Manager::is_leader`) and the
//! metrics read of an elector (leading or not, the holder, the last error) without keeping
//! it alive.
//!
//! Why a weak view: the probes and the metrics registry outlive the electors they report
//! on; holding a `Weak` lets an elector be stopped and dropped while they still hold its
//! status, which then reads as not leading, not running.

use super::shared_state::Shared;

/// Reads an elector's state without keeping it alive: after the elector is gone, it reads
/// as not leading, not running.
#[derive(Clone)]
pub(crate) struct ElectorStatus(pub(super) std::sync::Weak<Shared>);

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
