//! WebSocket framing over a [`Duplex`](crate::client::duplex) connection, read on one
//! thread and written from others (both sides: the client's sessions and the test server's).
//! The kubelet's frames are at most 32 KiB; ours up to [`MAX_SEND`], well under the 1 MiB
//! that Go's WebSocket readers (and our [`MAX_MESSAGE`]) accept.
//!
//! tungstenite frames messages over any `Read + Write`. Two of its `WebSocket`s share the
//! connection: the reading one owns the read half (and answers pings and the close handshake
//! through the write half), the writing one only sends. Every write of the write half goes
//! out whole, so the two never interleave inside a frame. Messages and frames are capped
//! ([`MAX_MESSAGE`]): a peer announcing a huge frame gets an error, not an allocation.

use std::io::{self, Read, Write};

use parking_lot::Mutex;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tungstenite::{Message, WebSocket};

use crate::client::duplex::{ReadHalf, WriteHalf};

/// The largest message (and frame) accepted.
pub(crate) const MAX_MESSAGE: usize = 1 << 20;

/// The largest message this crate sends (port-forward data, the test server's output).
pub(crate) const MAX_SEND: usize = 128 * 1024;

fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE))
        .read_buffer_size(64 * 1024)
        .write_buffer_size(0)
}

/// The read side's stream: reads the read half, writes (pongs, close replies) to the write half.
pub(crate) struct ReadSide {
    read: ReadHalf,
    write: WriteHalf,
}

impl Read for ReadSide {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read.read(buf)
    }
}

impl Write for ReadSide {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.write.write(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The write side's stream: never read.
pub(crate) struct WriteSide(WriteHalf);

impl Read for WriteSide {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Ok(0)
    }
}

impl Write for WriteSide {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write(data)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What one read gave.
#[derive(Debug)]
pub(crate) enum Received {
    /// A binary message (tungstenite's buffer, not copied).
    Binary(tungstenite::Bytes),
    /// A text message (the base64 protocols use them; we offer none).
    Text,
    /// The peer's close frame (code 1000 when it gave none), or the end after one.
    Closed(u16),
}

/// Reads messages; one thread.
pub(crate) struct WsReader(WebSocket<ReadSide>);

/// Sends messages; shared by the writing threads.
pub(crate) struct WsWriter(Mutex<WebSocket<WriteSide>>);

/// Both halves of a WebSocket over a split connection. `server`: the test server's side.
pub(crate) fn split(read: ReadHalf, write: WriteHalf, server: bool) -> (WsReader, WsWriter) {
    let role = if server { Role::Server } else { Role::Client };
    let reader = WebSocket::from_raw_socket(
        ReadSide {
            read,
            write: write.clone(),
        },
        role,
        Some(config()),
    );
    let writer = WebSocket::from_raw_socket(WriteSide(write), role, Some(config()));
    (WsReader(reader), WsWriter(Mutex::new(writer)))
}

/// A tungstenite error as an I/O error (its kind kept for I/O, `InvalidData` for protocol).
pub(crate) fn io_error(e: tungstenite::Error) -> io::Error {
    match e {
        tungstenite::Error::Io(e) => e,
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            io::Error::new(io::ErrorKind::NotConnected, "the WebSocket is closed")
        }
        other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
    }
}

impl WsReader {
    /// The next data message or the close; pings and pongs are answered and skipped.
    pub fn read(&mut self) -> io::Result<Received> {
        loop {
            match self.0.read() {
                Ok(Message::Binary(b)) => return Ok(Received::Binary(b)),
                Ok(Message::Text(_)) => return Ok(Received::Text),
                Ok(Message::Close(frame)) => {
                    let code = frame.map(|f| u16::from(f.code)).unwrap_or(1000);
                    // Sends our echo of the close (tungstenite queued it).
                    let _ = self.0.flush();
                    return Ok(Received::Closed(code));
                }
                Ok(_) => {}
                Err(tungstenite::Error::ConnectionClosed) => return Ok(Received::Closed(1000)),
                Err(e) => return Err(io_error(e)),
            }
        }
    }
}

impl WsWriter {
    /// Sends one binary message.
    pub fn send(&self, data: Vec<u8>) -> io::Result<()> {
        self.0
            .lock()
            .send(Message::Binary(data.into()))
            .map_err(io_error)
    }

    /// Starts the close handshake (code 1000); errors are moot at that point.
    pub fn close(&self) {
        let _ = self.0.lock().close(Some(CloseFrame {
            code: CloseCode::Normal,
            reason: "".into(),
        }));
        let _ = self.0.lock().flush();
    }
}

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 section 4.2.2).
pub(crate) fn accept_key(key: &str) -> String {
    use base64::Engine as _;
    let mut input = key.trim().as_bytes().to_vec();
    input.extend_from_slice(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

#[cfg(test)]
mod tests {
    #[test]
    fn accept_key_is_rfc6455s_example() {
        assert_eq!(
            super::accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }
}
