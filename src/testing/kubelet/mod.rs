//! The pod room: what a node and its kubelet do for the test server's pods.
//!
//! Running pods and nodes in one call (`pods.rs`; `ApiServer`'s methods for them and for the
//! logs are the server room's `kubelet_api.rs`), pod logs from a container log the test
//! writes (`pod_logs.rs`), evictions against PodDisruptionBudgets (`eviction.rs`), and with
//! the `ws` feature exec, attach and port-forward (`pod_exec.rs`) reaching a container
//! [`Runtime`](super::Runtime) (`runtime.rs`) with an in-memory filesystem for `kubectl cp`
//! (`container_files.rs`). They live together because they stand in for what a real cluster
//! does outside kube-apiserver, and are only reached through a pod's subresources.

#[cfg(feature = "ws")]
pub mod container_files;
pub(super) mod eviction;
#[cfg(feature = "ws")]
pub(super) mod pod_exec;
pub(super) mod pod_logs;
pub(super) mod pods;
#[cfg(feature = "ws")]
pub mod runtime;

// What the pods take from the other rooms (their files name them `super::<module>`).
use super::admission::webhooks;
use super::serving::{answers, http, peer};
use super::storage::{db, store};
use super::writing::writes;
