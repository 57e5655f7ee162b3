//! The probe endpoint (feature `probes`): `/healthz` and `/livez` (liveness), `/readyz`
//! (readiness), `/readyz/<check>` and `/healthz/<check>` (one check), and `/metrics` (with the
//! `metrics` feature), over plain HTTP/1.1, served by the crate's bounded server
//! ([`serve`](crate::serve)) with [`Limits::probes`](crate::serve::Limits::probes).
//!
//! Answers: 200 with `ok` when a probe passes (`?verbose`: every check listed), 500 with
//! every check and the reason of each failing one when it fails (kube-apiserver's format,
//! see `checks.rs`); 404 for an unknown path or check (the body lists the paths served), 405
//! for a method other than GET or HEAD, 431 for a request head over 8 KiB (refused while it
//! is read, before it is buffered).
//!
//! Each connection has its own thread (`ki/probes/conn`), at most 64 at once, each wait on a
//! client timed out (see the server's limits): a client that sends slowly, never reads its
//! answers or holds idle connections costs one bounded thread and never delays another
//! client's probe. The answer is computed from plain values; it never takes a lock a
//! controller holds for long (a probe reads informer health and queue counters, as
//! `health()` and `metrics()` do). Stopping closes every connection and joins every thread
//! within the manager's stop (a 1 s grace for a probe being answered).

use std::net::SocketAddr;
use std::time::Duration;

use super::checks::{Probe, Report};
use crate::error::Result;
use crate::serve::{Handler, Limits, Request, Response, Server};

/// What answers the probes.
pub(crate) type Answer = Box<dyn Fn(Probe) -> Report + Send + Sync>;

/// A running endpoint; [`stop`](Self::stop) ends it.
pub(crate) struct ProbeServer {
    server: Server,
}

impl ProbeServer {
    /// Listens on `addr` and starts answering.
    pub(crate) fn start(
        addr: &str,
        answer: Answer,
        #[cfg(feature = "metrics")] metrics: crate::metrics::Metrics,
    ) -> Result<ProbeServer> {
        let endpoint = Endpoint {
            answer,
            #[cfg(feature = "metrics")]
            metrics,
        };
        let server = Server::builder("probes")
            .limits(Limits::probes())
            .grace(Duration::from_secs(1))
            .bind(addr, endpoint)?;
        Ok(ProbeServer { server })
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Stops answering, closes every connection and joins every thread.
    pub(crate) fn stop(self) {
        self.server.stop();
    }
}

struct Endpoint {
    answer: Answer,
    #[cfg(feature = "metrics")]
    metrics: crate::metrics::Metrics,
}

impl Handler for Endpoint {
    fn handle(&self, request: &Request) -> Response {
        let (status, content_type, body) = self.respond(request);
        let mut response = Response::new(status)
            .with_header("Content-Type", content_type)
            .with_header("X-Content-Type-Options", "nosniff")
            .with_header("Cache-Control", "no-store")
            .with_body(body.into_bytes());
        if status == 405 {
            response = response.with_header("Allow", "GET, HEAD");
        }
        response
    }
}

const PATHS: &str = "/healthz, /livez, /readyz, /healthz/<check>, /readyz/<check>, /metrics";

impl Endpoint {
    fn respond(&self, request: &Request) -> (u16, &'static str, String) {
        const TEXT: &str = "text/plain; charset=utf-8";
        if !matches!(request.method.as_str(), "GET" | "HEAD") {
            return (
                405,
                TEXT,
                format!("method {} not allowed: GET or HEAD\n", request.method),
            );
        }
        let verbose = request.has_query("verbose");
        let path = request.path.trim_end_matches('/');
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
        let openmetrics = request
            .headers
            .iter()
            .any(|(n, v)| n == "accept" && v.contains("application/openmetrics-text"));
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
