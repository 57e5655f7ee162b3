//! `LeaderElector`: one replica of many acts, chosen through a `coordination.k8s.io/v1`
//! [`Lease`](crate::controller::Lease), with client-go's leader election semantics.
//!
//! Why: a controller runs two or three replicas for availability, but two replicas acting on
//! the same objects fight. Each replica runs an elector with its own identity; the one holding
//! the Lease leads, the others wait, and when the leader goes away one of them takes over.
//!
//! # The pieces (one file each)
//!
//! A [`LeaderElector`] is a handle on two threads that share one lock: the elector thread
//! contends for the Lease and runs each term's callbacks on a thread of its own, the
//! watchdog ends a term that was not renewed in time.
//!
//! - [`LeaderElectionConfig`] (`config.rs`): the Lease, the identity, the timings, and
//!   client-go's rules for them.
//! - [`LeaderCallbacks`] and [`Term`] (`callbacks.rs`): what the elector calls, and the term
//!   a started callback works in (its stop signal).
//! - [`LeaderElector`] (`leader_elector.rs`): the handle: starts the threads, reads their
//!   state, and on [`stop`](LeaderElector::stop) ends the term and joins them.
//! - the elector thread (`elector_thread.rs`): acquire, start a term, renew until it ends,
//!   again; release on a clean stop.
//! - the record (`record.rs`): one attempt to acquire or renew (read the Lease, judge its
//!   expiry by this process's own clock, write it back with the `resourceVersion` read), the
//!   release, and what to make of malformed records.
//! - the watchdog (`watchdog.rs`): steps down at the renew deadline, whatever the elector
//!   thread is doing.
//! - the shared state (`shared_state.rs`): the term, the holder seen, the last error and the
//!   stop and exit flags, under one lock the handle and the threads hand each other.
//! - the status (`status.rs`): what the manager's checks and the metrics read of an elector
//!   without keeping it alive.
//! - the Lease backend (`lease_backend.rs`): the record's requests, on the API server (or, in
//!   the interleaving checks, in memory). The typed record is `controller/lease.rs`.
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
//! `controller/interleavings.rs`, against a Lease kept in memory (the crate-private
//! `LeaseBackend`).
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

mod callbacks;
mod config;
mod elector_thread;
mod leader_elector;
mod lease_backend;
mod record;
mod shared_state;
mod status;
mod watchdog;

pub use callbacks::{LeaderCallbacks, Term};
pub use config::LeaderElectionConfig;
pub use leader_elector::LeaderElector;
#[cfg(all(test, shuttle))]
pub(crate) use lease_backend::LeaseBackend;
pub(crate) use status::ElectorStatus;
