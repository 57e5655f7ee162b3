//! Reading one request off a connection within the [`Limits`]: the head bounded while it
//! arrives, the body bounded by its `Content-Length` before any of it is read.
//!
//! The head is parsed by `httparse` (hyper's parser: no allocation, incremental, fuzzed);
//! what it may hold is bounded here, before it is parsed: the bytes of the request line and
//! of the whole head, and the number of header fields. A body without `Content-Length`
//! (`Transfer-Encoding: chunked`) is refused with 411: kube-apiserver, the kubelet and
//! Prometheus all send a length.

use std::net::SocketAddr;
use std::time::Instant;

use super::handler::Request;
use super::limits::Limits;
use super::stream::Stream;

/// Why no request could be read; `Some(status)` when the client should be told.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The client closed, or said nothing before the idle bound: close quietly.
    Gone,
    /// A bad request: answer with this status and reason, then close.
    Refuse(u16, String),
}

/// A request and whether the client wants the connection kept.
pub(crate) struct Incoming {
    pub(crate) request: Request,
    pub(crate) keep_alive: bool,
    pub(crate) expects_continue: bool,
}

/// The first LF at or after `from` not preceded by a CR, within the head (the bytes up to
/// the first CRLF CRLF, or all of `buf` while that has not arrived).
///
/// Where a head ends must be one rule for the framing here and for the parser: `httparse`
/// takes a bare LF as a line end (RFC 9112 §2.2 allows it), so for `\n\n` it would stop
/// where this framing, looking for CRLF CRLF, does not, and the bytes between (a whole
/// pipelined request, which a proxy in front saw differently) would be lost or misread.
/// A bare LF is refused instead (400 and closed): kube-apiserver, the kubelet and
/// Prometheus end their lines with CRLF.
fn bare_lf(buf: &[u8], from: usize) -> Option<usize> {
    let end = find_blank_line(buf, from).unwrap_or(buf.len());
    (from..end).find(|&i| buf[i] == b'\n' && (i == 0 || buf[i - 1] != b'\r'))
}

fn find_blank_line(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    buf[start..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| start + i + 4)
}

/// Reads the next request's head into `buf` (which may already hold bytes a client
/// pipelined), waiting at most `idle` for its first byte and `limits.header_timeout` from
/// then on. Returns the head's length; `buf` may hold more (the start of a body or of the
/// next request).
pub(crate) fn read_head(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    limits: &Limits,
    idle: Instant,
    on_first_byte: &mut dyn FnMut(),
) -> Result<usize, ReadError> {
    // Blank lines between requests are allowed (RFC 9112 §2.2).
    let skip = buf
        .iter()
        .take_while(|b| **b == b'\r' || **b == b'\n')
        .count();
    buf.drain(..skip);
    let mut deadline = if buf.is_empty() {
        idle
    } else {
        on_first_byte();
        Instant::now() + limits.header_timeout
    };
    let mut scanned = 0;
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(at) = bare_lf(buf, scanned) {
            return Err(ReadError::Refuse(
                400,
                format!("bare LF at byte {at} of the request head: lines end with CRLF\n"),
            ));
        }
        // The request line's bound, whether its end has arrived or not.
        let line_end = buf
            .windows(2)
            .position(|w| w == b"\r\n")
            .unwrap_or(buf.len());
        if line_end > limits.max_request_line {
            return Err(ReadError::Refuse(
                414,
                format!(
                    "request line longer than {} bytes\n",
                    limits.max_request_line
                ),
            ));
        }
        if let Some(end) = find_blank_line(buf, scanned) {
            if end > limits.max_head_bytes {
                return Err(too_large_head(limits));
            }
            return Ok(end);
        }
        scanned = buf.len();
        if buf.len() >= limits.max_head_bytes {
            return Err(too_large_head(limits));
        }
        let room = (limits.max_head_bytes - buf.len()).min(chunk.len());
        let was_empty = buf.is_empty();
        match stream.read_by(&mut chunk[..room], deadline) {
            Ok(0) | Err(_) if buf.is_empty() => return Err(ReadError::Gone),
            Ok(0) => return Err(ReadError::Gone),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if was_empty {
                    let skip = buf
                        .iter()
                        .take_while(|b| **b == b'\r' || **b == b'\n')
                        .count();
                    buf.drain(..skip);
                    if !buf.is_empty() {
                        on_first_byte();
                        deadline = Instant::now() + limits.header_timeout;
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Err(ReadError::Refuse(
                    408,
                    format!(
                        "request head not complete within {:?}\n",
                        limits.header_timeout
                    ),
                ))
            }
            Err(_) => return Err(ReadError::Gone),
        }
    }
}

fn too_large_head(limits: &Limits) -> ReadError {
    ReadError::Refuse(
        431,
        format!(
            "request headers too large: the head is over {} bytes\n",
            limits.max_head_bytes
        ),
    )
}

/// Parses the head `buf[..head_len]` into a request without its body; the body's length
/// comes back beside it (checked against the bound).
pub(crate) fn parse_head(
    buf: &[u8],
    head_len: usize,
    limits: &Limits,
    peer: SocketAddr,
    tls: bool,
) -> Result<(Incoming, usize), ReadError> {
    let mut fields = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut parsed = httparse::Request::new(&mut fields);
    match parsed.parse(&buf[..head_len]) {
        Ok(httparse::Status::Complete(n)) if n == head_len => {}
        Ok(httparse::Status::Complete(_)) => {
            // Not reachable with bare LFs refused; kept so that no byte is ever skipped.
            return Err(ReadError::Refuse(
                400,
                "the request head ends before its blank line\n".into(),
            ));
        }
        Ok(httparse::Status::Partial) => {
            return Err(ReadError::Refuse(400, "incomplete request head\n".into()))
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(ReadError::Refuse(
                431,
                format!("more than {} header fields\n", limits.max_headers),
            ))
        }
        Err(e) => return Err(ReadError::Refuse(400, format!("bad request head: {e}\n"))),
    }
    let method = parsed.method.unwrap_or_default().to_string();
    let target = parsed.path.unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let http10 = parsed.version == Some(0);
    let mut headers = Vec::with_capacity(parsed.headers.len());
    for h in parsed.headers.iter() {
        let value = std::str::from_utf8(h.value)
            .map_err(|_| ReadError::Refuse(400, format!("header {} is not UTF-8\n", h.name)))?;
        // Only OWS (SP, HTAB) around a value (RFC 9110 §5.5), not every Unicode blank:
        // `5\u{85}` is no length.
        headers.push((
            h.name.to_ascii_lowercase(),
            value.trim_matches([' ', '\t']).to_string(),
        ));
    }
    let mut length: Option<usize> = None;
    for (name, value) in &headers {
        match name.as_str() {
            "content-length" => {
                let n = content_length(value).ok_or_else(|| {
                    ReadError::Refuse(400, format!("bad Content-Length {value:?}\n"))
                })?;
                if length.is_some_and(|l| l != n) {
                    return Err(ReadError::Refuse(
                        400,
                        "conflicting Content-Length headers\n".into(),
                    ));
                }
                length = Some(n);
            }
            "transfer-encoding" => {
                return Err(ReadError::Refuse(
                    411,
                    "Transfer-Encoding is not accepted: send Content-Length\n".into(),
                ))
            }
            _ => {}
        }
    }
    let length = length.unwrap_or(0);
    if length > limits.max_body_bytes {
        return Err(ReadError::Refuse(
            413,
            format!(
                "request body of {length} bytes is larger than the bound of {} bytes\n",
                limits.max_body_bytes
            ),
        ));
    }
    let connection = headers
        .iter()
        .filter(|(n, _)| n == "connection")
        .flat_map(|(_, v)| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect::<Vec<_>>();
    let keep_alive = if http10 {
        connection.iter().any(|t| t == "keep-alive")
    } else {
        !connection.iter().any(|t| t == "close")
    };
    let expects_continue = !http10
        && headers
            .iter()
            .any(|(n, v)| n == "expect" && v.eq_ignore_ascii_case("100-continue"));
    let request = Request {
        method,
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body: Vec::new(),
        peer,
        tls,
    };
    Ok((
        Incoming {
            request,
            keep_alive,
            expects_continue,
        },
        length,
    ))
}

/// A `Content-Length` value: `1*DIGIT` (RFC 9110 §8.6), nothing else. Rust's integer parser
/// also takes a leading `+`, which a proxy in front may read differently (hyper's
/// CVE-2021-32715); a value too large for `usize` is refused too.
fn content_length(value: &str) -> Option<usize> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

/// Reads a body of `length` bytes: what `buf` already holds first, then the stream, within
/// `limits.body_timeout`. Leaves in `buf` what follows the body.
pub(crate) fn read_body(
    stream: &mut Stream,
    buf: &mut Vec<u8>,
    length: usize,
    limits: &Limits,
) -> Result<Vec<u8>, ReadError> {
    let have = buf.len().min(length);
    let mut body = Vec::with_capacity(length);
    body.extend_from_slice(&buf[..have]);
    buf.drain(..have);
    let deadline = Instant::now() + limits.body_timeout;
    let mut chunk = [0u8; 16 << 10];
    while body.len() < length {
        let want = (length - body.len()).min(chunk.len());
        match stream.read_by(&mut chunk[..want], deadline) {
            Ok(0) => return Err(ReadError::Gone),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Err(ReadError::Refuse(
                    408,
                    format!(
                        "request body not complete within {:?}\n",
                        limits.body_timeout
                    ),
                ))
            }
            Err(_) => return Err(ReadError::Gone),
        }
    }
    Ok(body)
}
