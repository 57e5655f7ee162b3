//! What a connection knows about its peer: the one thing a room that answers on the socket
//! itself (watches, logs, exec, reviews) needs of the server's connections. A leaf, so that
//! the rooms can take it without depending on the server (`server.rs` implements it for
//! plain TCP and for TLS).

use std::io::{Read, Write};
#[cfg(feature = "ws")]
use std::net::TcpStream;

/// What a connection knows about its peer.
pub(crate) trait Peer: Read + Write {
    /// True when the client presented a certificate the server verified.
    fn has_client_certificate(&self) -> bool;
    /// Drops the connection at once (for fault injection).
    fn drop_connection(&mut self);
    /// True when the client has closed its side (checked without blocking).
    fn peer_closed(&self) -> bool;
    /// The socket and its TLS state, for a connection upgraded to a WebSocket.
    #[cfg(feature = "ws")]
    fn into_parts(self) -> (TcpStream, Option<rustls::Connection>);
}
