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
//!
//! # Bulk data
//!
//! A message sent with [`WsWriter::send`] is copied twice before the socket (into the
//! channel-prefixed message, then into tungstenite's frame buffer, masked on the way when we
//! are the client). Port-forward moves bulk data, so it sends with a [`DataFrame`] instead: a
//! buffer the caller reads into at the right offset, framed in place (the header written in
//! the room kept before the channel byte, the mask applied in place) and written with one
//! `write` under the writer's lock. Each forwarded chunk then costs the read into the
//! buffer, one masking pass (client only) and one write: no allocation, no copy. The frame is
//! an ordinary final binary frame (RFC 6455 section 5.2) with a fresh random mask from the
//! system's generator (client) and it interleaves with tungstenite's frames only at frame
//! boundaries (the same lock); it is refused once the writer has sent a close.

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
        loop {
            match self.read.read(buf) {
                // A signal handler ran on this thread (a terminal's SIGWINCH, say): a socket
                // read with a timeout is not restarted by the kernel, so it is here.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
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

/// The write side's stream: never read. `.1`: we are the client (our frames are masked).
pub(crate) struct WriteSide(WriteHalf, bool);

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
    let writer = WebSocket::from_raw_socket(WriteSide(write, !server), role, Some(config()));
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

/// Room before the channel byte: the longest client frame header (2 bytes, an 8-byte
/// length, a 4-byte mask).
const HEADROOM: usize = 14;

/// A reusable buffer for one binary message on a channel: read the payload into
/// [`payload_mut`](Self::payload_mut), then [`WsWriter::send_frame`] frames it in place.
pub(crate) struct DataFrame {
    buf: Vec<u8>,
    channel: u8,
}

impl DataFrame {
    /// A buffer for messages on `channel` with payloads of up to `capacity` bytes.
    pub fn new(channel: u8, capacity: usize) -> DataFrame {
        let buf = vec![0u8; HEADROOM + 1 + capacity];
        DataFrame { buf, channel }
    }

    /// Where the payload goes (its whole capacity).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buf[HEADROOM + 1..]
    }
}

/// XORs `data` with the 4-byte `mask` from its first byte (RFC 6455 section 5.3), eight bytes
/// at a time.
fn apply_mask(data: &mut [u8], mask: [u8; 4]) {
    let m = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut words = data.chunks_exact_mut(8);
    for w in &mut words {
        let v = u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]) ^ m;
        w.copy_from_slice(&v.to_ne_bytes());
    }
    // The tail starts at a multiple of 8, so at mask byte 0.
    for (i, b) in words.into_remainder().iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

/// Four random bytes for a frame mask.
fn random_mask() -> [u8; 4] {
    use ring::rand::SecureRandom as _;
    let mut m = [0u8; 4];
    // A failure of the system's generator (never seen) leaves a zero mask: still a valid
    // frame; the mask only guards intermediaries against chosen plaintext.
    let _ = ring::rand::SystemRandom::new().fill(&mut m);
    m
}

impl WsWriter {
    /// Sends the first `len` bytes of `frame`'s payload as one binary message (the channel
    /// byte first), framed in place: the payload is masked in place when we are the client,
    /// so the frame's payload must be refilled before the next send.
    pub fn send_frame(&self, frame: &mut DataFrame, len: usize) -> io::Result<()> {
        let body = 1 + len.min(frame.buf.len() - HEADROOM - 1);
        let mut ws = self.0.lock();
        if !ws.can_write() {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the WebSocket is closed",
            ));
        }
        let client = ws.get_ref().1;
        let mut header = [0u8; HEADROOM];
        header[0] = 0x82; // FIN, binary
        let mut at = 2;
        if body <= 125 {
            header[1] = body as u8;
        } else if let Ok(short) = u16::try_from(body) {
            header[1] = 126;
            header[2..4].copy_from_slice(&short.to_be_bytes());
            at = 4;
        } else {
            header[1] = 127;
            header[2..10].copy_from_slice(&(body as u64).to_be_bytes());
            at = 10;
        }
        let end = HEADROOM + body;
        // Masking changed it the last time.
        frame.buf[HEADROOM] = frame.channel;
        if client {
            header[1] |= 0x80;
            let mask = random_mask();
            header[at..at + 4].copy_from_slice(&mask);
            at += 4;
            apply_mask(&mut frame.buf[HEADROOM..end], mask);
        }
        let start = HEADROOM - at;
        frame.buf[start..HEADROOM].copy_from_slice(&header[..at]);
        ws.get_mut().0.write_all(&frame.buf[start..end])
    }

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
    fn masking_matches_the_plain_definition() {
        let mask = [0x6d, 0xb6, 0xb2, 0x80];
        for len in 0..40 {
            let data: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
            let mut fast = data.clone();
            super::apply_mask(&mut fast, mask);
            let plain: Vec<u8> = data
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            assert_eq!(fast, plain, "{len} bytes");
        }
    }

    /// Our in-place frames read back through tungstenite, as the other side reads them:
    /// client frames masked (a server refuses unmasked ones), server frames not, each
    /// length form (7-bit, 16-bit, 64-bit).
    #[test]
    fn data_frames_read_back_through_tungstenite() {
        use super::{DataFrame, Received};
        use std::net::{TcpListener, TcpStream};
        for client in [true, false] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (b, _) = l.accept().unwrap();
            let (_da, ra, wa) = crate::client::duplex::Duplex::split(a, None, Vec::new()).unwrap();
            let (_db, rb, wb) = crate::client::duplex::Duplex::split(b, None, Vec::new()).unwrap();
            let (_, sender) = super::split(ra, wa, !client);
            let (mut receiver, _keep) = super::split(rb, wb, client);
            let mut frame = DataFrame::new(7, 70_000);
            for len in [0usize, 1, 124, 125, 126, 65_534, 65_535, 70_000] {
                let want: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
                frame.payload_mut()[..len].copy_from_slice(&want);
                sender.send_frame(&mut frame, len).unwrap();
                match receiver.read().unwrap() {
                    Received::Binary(m) => {
                        assert_eq!(m[0], 7);
                        assert!(m[1..] == want[..], "{len} bytes, client {client}");
                    }
                    other => panic!("{other:?}"),
                }
            }
            sender.close();
            assert!(sender.send_frame(&mut frame, 1).is_err());
        }
    }

    #[test]
    fn accept_key_is_rfc6455s_example() {
        assert_eq!(
            super::accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }
}
