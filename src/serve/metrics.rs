//! `/metrics` as a handler (features `metrics` and `probes` or `webhook`): the Prometheus
//! text format, or OpenMetrics when the scraper's `Accept` asks for it. Mount it on a plain
//! router, or behind [`RequireAccess`](super::RequireAccess) on a TLS server for metrics
//! reachable beyond the pod.

use super::handler::{Handler, Request, Response};
use crate::metrics::Metrics;

/// Answers GET and HEAD with the registry's metrics (405 for other methods).
///
/// ```
/// use kube_informer::metrics::Metrics;
/// use kube_informer::serve::{Handler, MetricsHandler, Request};
///
/// let handler = MetricsHandler::new(Metrics::new());
/// # let request = Request { method: "GET".into(), path: "/metrics".into(), query: String::new(),
/// #     headers: vec![], body: vec![], peer: "127.0.0.1:1".parse().unwrap(), tls: false };
/// assert_eq!(handler.handle(&request).status, 200);
/// ```
#[derive(Clone, Debug)]
pub struct MetricsHandler {
    metrics: Metrics,
}

impl MetricsHandler {
    /// Serves `metrics`.
    pub fn new(metrics: Metrics) -> Self {
        MetricsHandler { metrics }
    }
}

impl Handler for MetricsHandler {
    fn handle(&self, request: &Request) -> Response {
        if !matches!(request.method.as_str(), "GET" | "HEAD") {
            return Response::text(
                405,
                format!("method {} not allowed: GET or HEAD\n", request.method),
            )
            .with_header("Allow", "GET, HEAD");
        }
        let openmetrics = request
            .headers
            .iter()
            .any(|(n, v)| n == "accept" && v.contains("application/openmetrics-text"));
        let (content_type, body) = if openmetrics {
            (
                crate::metrics::OPENMETRICS_CONTENT_TYPE,
                self.metrics.encode_openmetrics(),
            )
        } else {
            (crate::metrics::TEXT_CONTENT_TYPE, self.metrics.encode())
        };
        Response::new(200)
            .with_header("Content-Type", content_type)
            .with_header("Cache-Control", "no-store")
            .with_body(body.into_bytes())
    }
}
