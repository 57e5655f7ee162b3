//! Controllers: the reconcile loop, and leader election so that one replica of many acts.
//!
//! - [`Controller`] (`controller.rs`): informer events become keys in a rate-limited work
//!   queue; worker threads reconcile them. It can run under a [`LeaderElector`]
//!   ([`ControllerBuilder::leader_election`]): the informer stays warm on every replica, the
//!   workers run only while this replica leads.
//! - [`LeaderElector`] (`leader_election.rs`): client-go's leader election on a
//!   `coordination.k8s.io/v1` [`Lease`] (`lease.rs`, the typed record).

#[allow(clippy::module_inception)]
mod controller;
#[cfg(all(test, shuttle))]
mod interleavings;
pub mod leader_election;
mod lease;

pub use controller::{Action, Controller, ControllerBuilder};
pub use leader_election::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, Term};
pub use lease::{Lease, LeaseSpec, MicroTime};
