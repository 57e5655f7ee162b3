//! Everything a CLI does with a running pod.
//!
//! With the `ws` feature: [`Client::exec`](crate::Client::exec),
//! [`Client::attach`](crate::Client::attach), [`Client::exec_output`](crate::Client::exec_output)
//! and [`Client::port_forward`](crate::Client::port_forward), over WebSocket on the client's
//! own connection settings. `exec` says what a caller loses when a server offers only
//! `v4.channel.k8s.io`, `portforward` why the plain WebSocket protocol and not kubectl's
//! SPDY tunnel, `process` how the streams are buffered and how every wait is bounded.

#[cfg(feature = "ws")]
pub mod channels;
#[cfg(feature = "ws")]
pub mod exec;
#[cfg(feature = "ws")]
pub mod portforward;
#[cfg(feature = "ws")]
pub mod process;
#[cfg(feature = "ws")]
pub(crate) mod websocket;

#[cfg(feature = "ws")]
pub use channels::{ChannelProtocol, ExitStatus};
#[cfg(feature = "ws")]
pub use exec::{ExecOutput, ExecParams};
#[cfg(feature = "ws")]
pub use portforward::{ForwardError, ForwardedPort, PortForwarder, PortMapping};
#[cfg(feature = "ws")]
pub use process::{Canceller, Output, Process, Resizer, Stdin, PIPE_CAPACITY};
