//! The watchdog thread (`ki/<lease>/wdog`): ends a term whose renew deadline passed.
//!
//! Why a thread of its own: the elector thread renews, and a renewal can hang in a slow
//! request or the thread may not be scheduled; if the elector thread also judged its own
//! deadline, such a renewal would stretch the term past it. The watchdog only waits on the
//! shared state until the current term's deadline and fires the term's stop signal then,
//! whatever the elector thread is doing, so a leader stops before anyone else may consider
//! its lease expired (provided its started callback honours the stop in time).

use std::time::Instant;

use super::shared_state::Shared;

/// Ends a term whose deadline passed without a renewal, whatever the elector thread does.
pub(super) fn watchdog(shared: &Shared) {
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
