//! Everything a CLI does with a pod, in-process instead of shelling out to `kubectl`.
//!
//! This room holds the pod subresources that are not plain objects, and the helpers built on
//! them:
//!
//! - **logs** ([`LogParams`], [`Api::logs`](crate::Api::logs),
//!   [`Api::log_stream`](crate::Api::log_stream)): a whole log as a `String`, or a blocking
//!   stream of lines whose follow **resumes** after a drop without losing or repeating a
//!   line ([`LogStream`] says exactly what is guaranteed);
//! - **eviction** ([`Api::evict`](crate::Api::evict)): `policy/v1` Eviction, a
//!   PodDisruptionBudget's refusal as the typed, retryable [`PodError::DisruptionBudget`];
//! - **drain** ([`drain_node`], [`cordon`], [`uncordon`]): kubectl's drain rules — cordon,
//!   skip DaemonSet-owned and mirror pods, refuse unmanaged pods and emptyDir data unless
//!   told, evict with back-off on 429 until a timeout, wait for each pod to be gone by UID;
//! - the typed failures that name a choice ([`PodError`]: which container, no previous
//!   container, a pod not scheduled, a disruption budget), carried by
//!   [`Error::Pod`](crate::Error::Pod).
//!
//! All of it is plain HTTP through the crate's one [`Client`](crate::Client): the same
//! credentials, TLS, proxies, impersonation, rate limit and cancellation as every other
//! request. Nothing here needs a cargo feature.
//!
//! The wire these follow was captured from kube-apiserver 1.36.2 (`tests/fixtures/pod-io/`);
//! `testing::ApiServer` answers the same way, with a container log the test writes to
//! (`ApiServer::append_log`, a kubelet that drops follow streams) and evictions that honour
//! PodDisruptionBudgets.
//!
#![cfg_attr(
    feature = "ws",
    doc = "With the `ws` feature, the streams a running pod offers: [`Client::exec`](crate::Client::exec),
[`Client::attach`](crate::Client::attach), [`Client::exec_output`](crate::Client::exec_output)
and [`Client::port_forward`](crate::Client::port_forward), over WebSocket on the client's
own connection settings. `exec` says what a caller loses when a server offers only
`v4.channel.k8s.io`, `portforward` why the plain WebSocket protocol and not kubectl's
SPDY tunnel, `process` how the streams are buffered and how every wait is bounded.
`interactive` wires a session to the program's own streams in one call
([`Process::run_with_stdio`], `kubectl exec -i`) or, on Unix, to a [`Terminal`] in raw mode
that follows the window's size ([`Process::run_tty`], `kubectl exec -it`).
On exec: [`Client::copy_from_pod`](crate::Client::copy_from_pod) and
[`Client::copy_to_pod`](crate::Client::copy_to_pod) (`kubectl cp`, with the container's
`tar`; `copy` says what extraction refuses), over the crate's own streaming [`tar`]
reader and writer."
)]
#![cfg_attr(
    not(feature = "ws"),
    doc = "With the `ws` feature, the streams a running pod offers: `Client::exec`,
`Client::attach`, `Client::exec_output` and `Client::port_forward`, over WebSocket on the
client's own connection settings. `exec` says what a caller loses when a server offers only
`v4.channel.k8s.io`, `portforward` why the plain WebSocket protocol and not kubectl's
SPDY tunnel, `process` how the streams are buffered and how every wait is bounded.
`interactive` wires a session to the program's own streams in one call
(`Process::run_with_stdio`, `kubectl exec -i`) or, on Unix, to a `Terminal` in raw mode
that follows the window's size (`Process::run_tty`, `kubectl exec -it`).
On exec: `Client::copy_from_pod` and `Client::copy_to_pod` (`kubectl cp`, with the
container's `tar`; `copy` says what extraction refuses), over the crate's own streaming `tar`
reader and writer."
)]

mod drain;
mod error;
mod eviction;
mod log_lines;
mod log_resume;
mod log_stream;
mod logs;
mod timestamp;

pub use drain::{cordon, drain_node, uncordon, DrainOptions, DrainReport, SkippedPod};
pub use error::PodError;
pub use log_stream::{LogStopper, LogStream};
pub use logs::{LogLine, LogParams, DEFAULT_MAX_LINE};
pub use timestamp::LogTime;

#[cfg(feature = "ws")]
pub mod channels;
#[cfg(feature = "ws")]
pub mod copy;
#[cfg(feature = "ws")]
pub mod exec;
#[cfg(feature = "ws")]
pub mod interactive;
#[cfg(feature = "ws")]
pub mod portforward;
#[cfg(feature = "ws")]
pub mod process;
#[cfg(feature = "ws")]
pub mod tar;
#[cfg(all(feature = "ws", unix))]
pub mod terminal;
#[cfg(feature = "ws")]
pub(crate) mod websocket;

#[cfg(feature = "ws")]
pub use channels::{ChannelProtocol, ExitStatus};
#[cfg(feature = "ws")]
pub use copy::{CopyError, CopyOptions, CopyReport};
#[cfg(feature = "ws")]
pub use exec::{ExecOutput, ExecParams};
#[cfg(feature = "ws")]
pub use portforward::{ForwardError, ForwardedPort, PortForwarder, PortMapping};
#[cfg(feature = "ws")]
pub use process::{Canceller, Output, Process, Resizer, Stdin, PIPE_CAPACITY};
#[cfg(all(feature = "ws", unix))]
pub use terminal::{RawMode, Terminal};
