//! The hook the `metrics` feature counts requests through.
//!
//! Why a trait here and the metric families in `metrics/`: the client is a low room that
//! knows nothing of metrics crates; it only says, from the one place every request passes
//! ([`Client::send`](super::Client)), how long each one waited for the rate limiter and
//! how it was answered. `metrics::Metrics::register_client` installs the observer.

use std::time::Duration;

/// Told about every request attempt of a client (retries included), from the thread that
/// sends it. Keep it quick.
pub(crate) trait RequestObserver: Send + Sync {
    /// The client-side rate limiter held a request of `method` for `waited` (zero included).
    fn throttled(&self, method: &str, waited: Duration);
    /// A request of `method` was answered with `code` (`None`: no answer, a transport
    /// error) after `took` (from sending to the response's headers).
    fn answered(&self, method: &str, code: Option<u16>, took: Duration);
}
