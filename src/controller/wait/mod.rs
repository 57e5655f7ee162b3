//! Waiting for one object to reach a state: a CRD served, a Deployment rolled out, a Pod
//! ready, a Job finished, an object gone.
//!
//! Why: a program that creates something usually has to wait for it before the next step,
//! and a hand-written poll loop gets the hard parts wrong: it misses the short state
//! between two polls, hammers the server, never gives up, cannot be stopped, and on timeout
//! says nothing about what it saw. Here:
//!
//! - [`Wait`] watches the one object (a list and watch narrowed to its name, resumed after
//!   a disconnect or a 410) until a [`Condition`] holds, the caller's timeout passes
//!   ([`WaitError::TimedOut`] carries the last state seen and what was still missing), a
//!   [`Cancel`](crate::client::Cancel) fires from another thread, or the condition says it
//!   never will ([`Verdict::Failed`]: a failed Job, a stuck rollout).
//! - [`conditions`]: the stock conditions — [`exists`](conditions::exists),
//!   [`deleted`](conditions::deleted) (by uid), [`pod_running`](conditions::pod_running),
//!   [`pod_ready`](conditions::pod_ready), [`deployment_rolled_out`](conditions::deployment_rolled_out)
//!   (as `kubectl rollout status` decides), [`job_complete`](conditions::job_complete),
//!   [`job_failed`](conditions::job_failed), [`namespace_active`](conditions::namespace_active),
//!   [`crd_established`](conditions::crd_established). They read the object's JSON, so they
//!   work on [`DynamicObject`](crate::api::DynamicObject), on your own types and on
//!   k8s-openapi's (feature `k8s-openapi`) alike; any `Fn(Option<&K>) -> bool` is a
//!   condition too.
//! - [`Wait::delete`] / [`delete_and_wait`]: delete, then wait until that object (that uid)
//!   is gone.
//! - [`wait_crd_served`] and [`apply_crd`]: a CRD Established *and* served (discovery lists
//!   it, requests no longer 404).

mod condition;
pub mod conditions;
mod crd;
mod delete;
mod waiter;

pub use condition::{Condition, Verdict};
pub use crd::{apply_crd, wait_crd_served};
pub use delete::delete_and_wait;
pub use waiter::{await_condition, Wait, WaitError};
