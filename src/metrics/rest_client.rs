//! client-go's REST client metrics, under client-go's names and labels:
//! `rest_client_requests_total{code,method,host}` (every attempt, retries included; `code`
//! is `<error>` when no answer came), `rest_client_request_duration_seconds{verb,host}`
//! (sending to the response's headers; for a watch, until the stream opened) and
//! `rest_client_rate_limiter_duration_seconds{verb,host}` (the wait for the client-side
//! rate limiter). Observed by the client as it sends (`client/observer.rs`).

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use super::encode::secs;
use crate::client::observer::RequestObserver;

/// `code`, `method`, `host`.
pub(super) type RequestLabels = [(&'static str, String); 3];
/// `verb`, `host`.
pub(super) type VerbLabels = [(&'static str, String); 2];

/// client-go's latency buckets, in seconds.
fn latency_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
    ])
}

/// The families, shared by every registered client.
#[derive(Clone, Debug)]
pub(super) struct RestFamilies {
    pub(super) requests: Family<RequestLabels, Counter>,
    pub(super) latency: Family<VerbLabels, Histogram, fn() -> Histogram>,
    pub(super) rate_limiter: Family<VerbLabels, Histogram, fn() -> Histogram>,
}

impl RestFamilies {
    pub(super) fn new() -> Self {
        RestFamilies {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            rate_limiter: Family::new_with_constructor(latency_histogram),
        }
    }
}

/// One client's observer: the families and the client's `host` (host and port).
pub(super) struct RestObserver {
    pub(super) families: RestFamilies,
    pub(super) host: String,
}

impl RestObserver {
    /// `host[:port]` of a base URL, as client-go's `url.Host`.
    pub(super) fn host_of(server: &str) -> String {
        let rest = server.split_once("://").map_or(server, |(_, r)| r);
        rest.split(['/', '?']).next().unwrap_or(rest).to_owned()
    }
}

impl RequestObserver for RestObserver {
    fn throttled(&self, method: &str, waited: Duration) {
        self.families
            .rate_limiter
            .get_or_create(&[("verb", method.to_owned()), ("host", self.host.clone())])
            .observe(secs(waited));
    }

    fn answered(&self, method: &str, code: Option<u16>, took: Duration) {
        let code = code.map_or_else(|| "<error>".to_owned(), |c| c.to_string());
        self.families
            .requests
            .get_or_create(&[
                ("code", code),
                ("method", method.to_owned()),
                ("host", self.host.clone()),
            ])
            .inc();
        self.families
            .latency
            .get_or_create(&[("verb", method.to_owned()), ("host", self.host.clone())])
            .observe(secs(took));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_is_host_and_port() {
        assert_eq!(
            RestObserver::host_of("https://127.0.0.1:6443"),
            "127.0.0.1:6443"
        );
        assert_eq!(
            RestObserver::host_of("https://k8s.example.com/prefix"),
            "k8s.example.com"
        );
        assert_eq!(RestObserver::host_of("http://[::1]:8080"), "[::1]:8080");
    }
}
