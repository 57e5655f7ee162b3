//! One HTTP/1.1 request read off a raw loopback connection, for the tests' tiny scripted
//! servers (hostile or replayed answers the test server would never give): the request
//! line, the headers and a `Content-Length` body, read whole so the client's write
//! completes before the answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as a scripted server saw it.
pub struct RawRequest {
    /// The request line (`PUT /api/v1/... HTTP/1.1`).
    pub line: String,
    /// The headers in order, names in lower case, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, as long as `Content-Length` says (what arrived of it, when cut).
    pub body: Vec<u8>,
}

impl RawRequest {
    /// The first value of the header `name` (lower case), or "".
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }
}

/// Reads one request from `stream` (waiting at most 30 s for each read).
pub fn read_request(stream: &TcpStream) -> RawRequest {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut line, mut first, mut headers) = (String::new(), String::new(), Vec::new());
    while reader.read_line(&mut line).unwrap_or(0) > 2 {
        let l = line.trim_end();
        if first.is_empty() {
            first = l.to_owned();
        } else if let Some((k, v)) = l.split_once(':') {
            headers.push((k.to_ascii_lowercase(), v.trim().to_owned()));
        }
        line.clear();
    }
    let mut request = RawRequest {
        line: first,
        headers,
        body: Vec::new(),
    };
    let len = request.header("content-length").parse().unwrap_or(0);
    let (mut body, mut got) = (vec![0; len], 0);
    while got < len {
        match reader.read(&mut body[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    body.truncate(got);
    request.body = body;
    request
}

/// A loopback server that answers each connection's request with the next of `answers`
/// (raw HTTP bytes; an empty answer drops the connection unanswered), keeping what
/// `record` makes of each request; it stops when the answers run out. Returns its URL and
/// the records.
pub fn serve_in_turn<T: Send + 'static>(
    thread_name: &str,
    answers: Vec<Vec<u8>>,
    record: impl Fn(RawRequest) -> T + Send + 'static,
) -> (String, Arc<Mutex<Vec<T>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::Builder::new()
        .name(thread_name.into())
        .spawn(move || {
            let mut answers = answers.into_iter();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let request = read_request(&stream);
                log.lock().unwrap().push(record(request));
                let Some(answer) = answers.next() else { return };
                let _ = stream.write_all(&answer);
                let _ = stream.flush();
            }
        })
        .unwrap();
    (url, seen)
}
