//! One connection's life on its own thread: the TLS handshake, then requests answered one
//! after another (keep-alive) until the client closes, a bound is reached or the server
//! stops.
//!
//! The thread reads a request whole, calls the handler, writes the answer whole, each step
//! against its deadline; it holds nothing another connection waits on except, briefly, the
//! server's table of connections (to say whether it is idle, so that a stop can close it).

use std::net::{SocketAddr, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::handler::Response;
use super::read::{parse_head, read_body, read_head, ReadError};
use super::server::Shared;
use super::stream::Stream;

/// Serves the connection `id` until it ends, then leaves the server's table.
pub(crate) fn run(shared: &Shared, id: u64, socket: TcpStream, peer: SocketAddr) {
    let opened = Instant::now();
    if let Some(stream) = open(shared, socket, peer) {
        serve(shared, id, stream, peer, opened);
    }
    shared.leave(id);
}

fn open(shared: &Shared, socket: TcpStream, peer: SocketAddr) -> Option<Stream> {
    let _ = socket.set_nodelay(true);
    #[cfg(feature = "webhook")]
    if let Some(tls) = &shared.tls {
        return super::tls::handshake(tls, socket, peer, &shared.limits);
    }
    let _ = (shared, peer);
    Some(Stream::Plain(socket))
}

/// The first request must start within `header_timeout` of the connection's start, a TLS
/// handshake included (so TLS gives a client no more time than plain HTTP); later ones
/// within `idle_timeout` of the previous answer. From a request's first byte, its head has
/// `header_timeout`.
fn serve(shared: &Shared, id: u64, mut stream: Stream, peer: SocketAddr, opened: Instant) {
    let limits = &shared.limits;
    let tls = stream.is_tls();
    let mut buf = Vec::new();
    let mut answered = 0usize;
    loop {
        if !shared.set_idle(id, true) {
            break; // the server is stopping
        }
        let idle_until = if answered == 0 {
            opened + limits.header_timeout
        } else {
            Instant::now() + limits.idle_timeout
        };
        let head = read_head(&mut stream, &mut buf, limits, idle_until, &mut || {
            shared.set_idle(id, false);
        });
        if !shared.set_idle(id, false) {
            break; // closed to make room for another connection
        }
        let parsed = head.and_then(|len| {
            let parsed = parse_head(&buf, len, limits, peer, tls);
            buf.drain(..len);
            parsed
        });
        let (mut incoming, length) = match parsed {
            Ok(p) => p,
            Err(ReadError::Gone) => break,
            Err(ReadError::Refuse(status, why)) => {
                refuse(&mut stream, shared, status, why);
                break;
            }
        };
        if incoming.expects_continue
            && length > buf.len()
            && stream
                .write_all_by(
                    b"HTTP/1.1 100 Continue\r\n\r\n",
                    Instant::now() + limits.write_timeout,
                )
                .is_err()
        {
            break;
        }
        incoming.request.body = match read_body(&mut stream, &mut buf, length, limits) {
            Ok(b) => b,
            Err(ReadError::Gone) => break,
            Err(ReadError::Refuse(status, why)) => {
                refuse(&mut stream, shared, status, why);
                break;
            }
        };
        answered += 1;
        let request = &incoming.request;
        let response = match catch_unwind(AssertUnwindSafe(|| shared.handler.handle(request))) {
            Ok(r) => r,
            Err(_) => {
                log::error!(
                    "{} server: the handler of {} {} panicked",
                    shared.name,
                    request.method,
                    request.path
                );
                Response::text(500, "handler panicked\n")
            }
        };
        let keep = incoming.keep_alive
            && answered < limits.max_requests_per_connection
            && !shared.stopping.load(Ordering::SeqCst);
        let head_only = request.method == "HEAD";
        if write_response(&mut stream, shared, &response, keep, head_only).is_err() || !keep {
            break;
        }
    }
    stream.close(Instant::now() + shared.limits.write_timeout.min(super::server::CLOSE_BOUND));
}

fn refuse(stream: &mut Stream, shared: &Shared, status: u16, why: String) {
    log::debug!(
        "{} server: refused a request: {status} {}",
        shared.name,
        why.trim_end()
    );
    if write_response(stream, shared, &Response::text(status, why), false, false).is_ok() {
        linger(stream, shared);
    }
}

/// After an answer to a request it did not read whole, the connection is closed only once
/// the client's unread bytes are drained (at most [`LINGER_BYTES`], for at most
/// [`LINGER_TIME`]): closing with unread bytes resets the connection, and the client could
/// lose the answer that says why.
fn linger(stream: &mut Stream, shared: &Shared) {
    let _ = stream.socket().shutdown(std::net::Shutdown::Write);
    let deadline = Instant::now() + LINGER_TIME.min(shared.limits.header_timeout);
    let mut drained = 0;
    let mut sink = [0u8; 4096];
    while drained < LINGER_BYTES {
        let _ = stream.socket().set_read_timeout(Some(
            deadline
                .saturating_duration_since(Instant::now())
                .max(std::time::Duration::from_millis(1)),
        ));
        let mut socket = stream.socket();
        match std::io::Read::read(&mut socket, &mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
        if Instant::now() >= deadline {
            break;
        }
    }
}

/// The most unread bytes drained before closing a refused connection.
const LINGER_BYTES: usize = 256 << 10;
/// The longest a refused connection is drained.
const LINGER_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// The reason phrase of the statuses this crate's handlers and server send.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "",
    }
}

fn write_response(
    stream: &mut Stream,
    shared: &Shared,
    response: &Response,
    keep_alive: bool,
    head_only: bool,
) -> std::io::Result<()> {
    use std::fmt::Write as _;
    let mut head = String::with_capacity(128);
    let _ = write!(
        head,
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        // A handler's header with a line break would split the answer: dropped.
        if name.eq_ignore_ascii_case("content-length")
            || name.eq_ignore_ascii_case("connection")
            || name.contains(['\r', '\n', ':'])
            || value.contains(['\r', '\n'])
        {
            continue;
        }
        let _ = write!(head, "{name}: {value}\r\n");
    }
    let _ = write!(
        head,
        "Content-Length: {}\r\nConnection: {}\r\n\r\n",
        response.body.len(),
        if keep_alive { "keep-alive" } else { "close" }
    );
    let deadline = Instant::now() + shared.limits.write_timeout;
    if head_only || response.body.is_empty() {
        stream.write_all_by(head.as_bytes(), deadline)
    } else if response.body.len() <= 16 << 10 {
        let mut all = head.into_bytes();
        all.extend_from_slice(&response.body);
        stream.write_all_by(&all, deadline)
    } else {
        stream.write_all_by(head.as_bytes(), deadline)?;
        stream.write_all_by(&response.body, deadline)
    }
}
