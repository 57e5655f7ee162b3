//! Work queues, as client-go's `workqueue` package has them: the basic queue (dirty and
//! processing sets), the delaying queue (one timer thread), the rate-limiting queue and its
//! rate limiters, and the metrics each of them keeps.

mod delaying;
mod metrics;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use delaying::DelayingQueue;
pub use metrics::QueueMetrics;
#[cfg(feature = "metrics")]
pub(crate) use metrics::QueueObserver;
pub use queue::Queue;
pub use rate_limiter::{
    default_controller_rate_limiter, Bucket, ItemExponential, ItemFastSlow, MaxOf, RateLimiter,
};
pub use rate_limiting::RateLimitingQueue;
