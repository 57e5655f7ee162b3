//! The small part of HTTP/1.1 the test API server needs: reading a request with a
//! `Content-Length` body, writing a whole response, and writing a chunked one line by line.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

use crate::client::percent_decode;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 << 20;

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    pub query: HashMap<String, String>,
    /// Every query parameter in order (a repeated one repeats: exec's `command`).
    #[cfg_attr(not(feature = "ws"), allow(dead_code))]
    pub query_pairs: Vec<(String, String)>,
    pub headers: HashMap<String, String>,
    /// Every header as sent, in order (names in lower case; a repeated header repeats).
    pub header_list: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// Every value of a repeated query parameter, in order.
    #[cfg_attr(not(feature = "ws"), allow(dead_code))]
    pub fn query_all(&self, name: &str) -> Vec<String> {
        self.query_pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("1" | "true"))
    }

    pub fn keep_alive(&self) -> bool {
        !self
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
    }
}

/// Reads one request; `Ok(None)` when the peer closed the connection between requests.
pub(crate) fn read_request(r: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut line = String::new();
    let mut head = 0usize;
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad("malformed request line"));
    };
    let method = method.to_owned();
    let (path, query_str) = target.split_once('?').unwrap_or((target, ""));
    let path = percent_decode(path);
    let query_pairs: Vec<(String, String)> = query_str
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(&v.replace('+', " ")))
        })
        .collect();
    let query = query_pairs.iter().cloned().collect();
    let mut headers = HashMap::new();
    let mut header_list = Vec::new();
    loop {
        line.clear();
        let n = r.read_line(&mut line)?;
        head += n;
        if n == 0 || head > MAX_HEAD {
            return Err(bad("truncated or oversized request head"));
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
            header_list.push((k.clone(), v.clone()));
            headers.insert(k, v);
        }
    }
    if headers.contains_key("transfer-encoding") {
        return Err(bad("chunked request bodies are not supported"));
    }
    let len: usize = headers
        .get("content-length")
        .map(|v| v.parse().map_err(|_| bad("bad content-length")))
        .transpose()?
        .unwrap_or(0);
    if len > MAX_BODY {
        return Err(bad("request body too large"));
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body)?;
    Ok(Some(Request {
        method,
        path,
        query,
        query_pairs,
        headers,
        header_list,
        body,
    }))
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        409 => "Conflict",
        410 => "Gone",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Writes the status line and the headers every answer has.
fn write_head(w: &mut impl Write, code: u16, extra: &[(&str, String)]) -> io::Result<()> {
    write_head_typed(w, code, "application/json", extra)
}

/// [`write_head`] with another content type (protobuf answers).
fn write_head_typed(
    w: &mut impl Write,
    code: u16,
    content_type: &str,
    extra: &[(&str, String)],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\ncache-control: no-cache, private\r\ncontent-type: {content_type}\r\n",
        reason_phrase(code)
    );
    for (k, v) in extra {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    w.write_all(head.as_bytes())
}

/// Writes a whole response with a `Content-Length` body. Like the API server's JSON
/// encoder, it ends the body with a newline.
pub(crate) fn write_response(
    w: &mut impl Write,
    code: u16,
    extra: &[(&str, String)],
    body: &[u8],
) -> io::Result<()> {
    write_head(w, code, extra)?;
    write!(w, "content-length: {}\r\n\r\n", body.len() + 1)?;
    w.write_all(body)?;
    w.write_all(b"\n")?;
    w.flush()
}

/// [`write_response`] without the newline after the body: for the answers the server sends
/// pretty-printed, which end at the closing brace.
pub(crate) fn write_response_as_is(
    w: &mut impl Write,
    code: u16,
    extra: &[(&str, String)],
    body: &[u8],
) -> io::Result<()> {
    write_head(w, code, extra)?;
    write!(w, "content-length: {}\r\n\r\n", body.len())?;
    w.write_all(body)?;
    w.flush()
}

/// A whole response of `content_type` with a `Content-Length` body, sent as it is (a
/// protobuf answer has no newline after it).
#[cfg_attr(not(feature = "protobuf"), allow(dead_code))]
pub(crate) fn write_response_typed(
    w: &mut impl Write,
    code: u16,
    content_type: &str,
    extra: &[(&str, String)],
    body: &[u8],
) -> io::Result<()> {
    write_head_typed(w, code, content_type, extra)?;
    write!(w, "content-length: {}\r\n\r\n", body.len())?;
    w.write_all(body)?;
    w.flush()
}

/// The Go HTTP mux's answer to a path nothing serves, as kube-apiserver sends it for the
/// resources, verbs and discovery documents of a deleted CRD (and of any group it does not
/// know): `404`, `text/plain`, the body `404 page not found` (captured in
/// `crd-deleted/after-5s-*.json`). Not a JSON `Status`.
pub(crate) fn write_page_not_found(w: &mut impl Write) -> io::Result<()> {
    const BODY: &str = "404 page not found\n";
    write!(
        w,
        "HTTP/1.1 404 Not Found\r\ncache-control: no-cache, private\r\ncontent-type: text/plain; charset=utf-8\r\nx-content-type-options: nosniff\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    )?;
    w.flush()
}

/// A chunked response being written.
pub(crate) struct ChunkedWriter<'a, W: Write> {
    w: &'a mut W,
    pub bytes_sent: usize,
}

impl<'a, W: Write> ChunkedWriter<'a, W> {
    pub fn start(w: &'a mut W, code: u16) -> io::Result<Self> {
        Self::start_typed(w, code, "application/json")
    }

    /// [`start`](Self::start) with another content type (a protobuf watch).
    #[cfg_attr(not(feature = "protobuf"), allow(dead_code))]
    pub fn start_typed(w: &'a mut W, code: u16, content_type: &str) -> io::Result<Self> {
        write_head_typed(
            w,
            code,
            content_type,
            &[("transfer-encoding", "chunked".into())],
        )?;
        w.write_all(b"\r\n")?;
        w.flush()?;
        Ok(ChunkedWriter { w, bytes_sent: 0 })
    }

    /// Sends `data` as one chunk and flushes it.
    pub fn chunk(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        write!(self.w, "{:x}\r\n", data.len())?;
        self.w.write_all(data)?;
        self.w.write_all(b"\r\n")?;
        self.w.flush()?;
        self.bytes_sent += data.len();
        Ok(())
    }

    /// The stream underneath.
    pub fn into_inner(self) -> &'a mut W {
        self.w
    }

    /// Ends the body properly.
    pub fn finish(self) -> io::Result<()> {
        self.w.write_all(b"0\r\n\r\n")?;
        self.w.flush()
    }
}
