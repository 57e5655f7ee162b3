//! The probe endpoint (feature `probes`): `/healthz` and `/livez` (liveness), `/readyz`
//! (readiness), `/readyz/<check>` and `/healthz/<check>` (one check), and `/metrics` (with the
//! `metrics` feature), over plain HTTP/1.1, served by the `tiny_http` crate.
//!
//! Answers: 200 with `ok` when a probe passes (`?verbose`: every check listed), 500 with
//! every check and the reason of each failing one when it fails (kube-apiserver's format,
//! see `checks.rs`); 404 for an unknown path or check (the body lists the paths served), 405
//! for a method other than GET or HEAD, 431 for request headers over 8 KiB.
//!
//! One named thread (`ki/probes/http`) takes the requests and answers them from plain
//! values; it never takes a lock a controller holds for long (a probe reads informer health
//! and queue counters, as `health()` and `metrics()` do). `tiny_http` reads each connection
//! on threads of its own pool, so a client that sends slowly, or stops half way, holds one
//! of those and never this thread nor the controller; it gets its answer when its request
//! is complete. Stopping ends this thread within 100 ms and closes the listener; a pool
//! thread still waiting on such a client ends when that client goes away (`tiny_http` sets
//! no read timeout).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, Server};

use super::checks::{Probe, Report};
use crate::error::{Error, Result};

/// Request headers larger than this are answered with 431 (kube-apiserver's own limit is
/// larger, but a probe or scrape needs a few hundred bytes).
pub(crate) const MAX_HEADER_BYTES: usize = 8 << 10;

/// What answers the probes.
pub(crate) type Answer = Box<dyn Fn(Probe) -> Report + Send + Sync>;

/// A running endpoint; [`stop`](Self::stop) ends it.
pub(crate) struct ProbeServer {
    server: Arc<Server>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    addr: SocketAddr,
}

impl ProbeServer {
    /// Listens on `addr` and starts answering.
    pub(crate) fn start(
        addr: &str,
        answer: Answer,
        #[cfg(feature = "metrics")] metrics: crate::metrics::Metrics,
    ) -> Result<ProbeServer> {
        let server = Server::http(addr)
            .map_err(|e| Error::Config(format!("probe endpoint: cannot listen on {addr}: {e}")))?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| Error::Config(format!("probe endpoint: {addr} is not an IP address")))?;
        let server = Arc::new(server);
        let stop = Arc::new(AtomicBool::new(false));
        let (srv, flag) = (Arc::clone(&server), Arc::clone(&stop));
        let endpoint = Endpoint {
            answer,
            #[cfg(feature = "metrics")]
            metrics,
        };
        let thread = std::thread::Builder::new()
            .name(crate::thread_name::thread_name("probes", "http"))
            .spawn(move || {
                let mut complained = false;
                while !flag.load(Ordering::SeqCst) {
                    match srv.recv_timeout(Duration::from_millis(100)) {
                        Ok(Some(request)) => endpoint.handle(request),
                        Ok(None) => {}
                        Err(e) if !flag.load(Ordering::SeqCst) && !complained => {
                            complained = true;
                            log::warn!("probe endpoint: {e}");
                        }
                        Err(_) => {}
                    }
                }
            })
            .map_err(|e| Error::Config(format!("probe endpoint: spawning its thread: {e}")))?;
        log::info!("probe endpoint listening on http://{addr}");
        Ok(ProbeServer {
            server,
            stop,
            thread: Some(thread),
            addr,
        })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops answering, joins the thread and closes the listener.
    pub(crate) fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ProbeServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

struct Endpoint {
    answer: Answer,
    #[cfg(feature = "metrics")]
    metrics: crate::metrics::Metrics,
}

const PATHS: &str = "/healthz, /livez, /readyz, /healthz/<check>, /readyz/<check>, /metrics";

impl Endpoint {
    fn handle(&self, request: Request) {
        let (status, content_type, body) = self.respond(&request);
        let head = *request.method() == Method::Head;
        let mut response = Response::from_string(if head { String::new() } else { body })
            .with_status_code(status)
            .with_header(header("Content-Type", content_type))
            .with_header(header("X-Content-Type-Options", "nosniff"))
            .with_header(header("Cache-Control", "no-store"));
        if status == 405 {
            response = response.with_header(header("Allow", "GET, HEAD"));
        }
        // A client gone before its answer is no concern of ours.
        let _ = request.respond(response);
    }

    fn respond(&self, request: &Request) -> (u16, &'static str, String) {
        const TEXT: &str = "text/plain; charset=utf-8";
        let header_bytes: usize = request
            .headers()
            .iter()
            .map(|h| h.field.as_str().as_str().len() + h.value.as_str().len() + 4)
            .sum::<usize>()
            + request.url().len();
        if header_bytes > MAX_HEADER_BYTES {
            return (
                431,
                TEXT,
                format!(
                    "request headers too large: {header_bytes} bytes, at most {MAX_HEADER_BYTES}\n"
                ),
            );
        }
        if !matches!(request.method(), Method::Get | Method::Head) {
            return (
                405,
                TEXT,
                format!("method {} not allowed: GET or HEAD\n", request.method()),
            );
        }
        let (path, query) = request.url().split_once('?').unwrap_or((request.url(), ""));
        let verbose = query
            .split('&')
            .any(|p| p == "verbose" || p.starts_with("verbose="));
        let path = path.trim_end_matches('/');
        let (probe, check) = match path
            .split_once('/')
            .map(|(_, p)| p.split_once('/').unwrap_or((p, "")))
        {
            Some(("healthz" | "livez", check)) => (Probe::Liveness, check),
            Some(("readyz", check)) => (Probe::Readiness, check),
            Some(("metrics", "")) => return self.metrics(request),
            _ => {
                return (
                    404,
                    TEXT,
                    format!("not found: {path}; this endpoint serves {PATHS}\n"),
                )
            }
        };
        let report = (self.answer)(probe);
        let report = if check.is_empty() {
            report
        } else {
            match report.only(check) {
                Some(r) => r,
                None => {
                    let names: Vec<&str> = report.checks.iter().map(|c| c.name).collect();
                    return (
                        404,
                        TEXT,
                        format!("no check {check:?}; the checks are {}\n", names.join(", ")),
                    );
                }
            }
        };
        match (report.passed(), verbose) {
            (true, false) => (200, TEXT, "ok\n".into()),
            (true, true) => (200, TEXT, format!("{report}\n")),
            (false, _) => (500, TEXT, format!("{report}\n")),
        }
    }

    #[cfg(feature = "metrics")]
    fn metrics(&self, request: &Request) -> (u16, &'static str, String) {
        let openmetrics = request.headers().iter().any(|h| {
            h.field.equiv("Accept") && h.value.as_str().contains("application/openmetrics-text")
        });
        if openmetrics {
            (
                200,
                crate::metrics::OPENMETRICS_CONTENT_TYPE,
                self.metrics.encode_openmetrics(),
            )
        } else {
            (
                200,
                crate::metrics::TEXT_CONTENT_TYPE,
                self.metrics.encode(),
            )
        }
    }

    #[cfg(not(feature = "metrics"))]
    fn metrics(&self, _request: &Request) -> (u16, &'static str, String) {
        (
            404,
            "text/plain; charset=utf-8",
            "no metrics: this program was built without kube-informer's `metrics` feature\n".into(),
        )
    }
}

fn header(name: &str, value: &str) -> Header {
    // Both are constants of this file: valid header text.
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("a valid header")
}
