//! The blocking API client: requests for any resource, paged lists and watch streams.

mod api;
mod auth;
mod cancel;
#[allow(clippy::module_inception)]
mod client;
mod config;
mod params;
mod rate_limit;
mod server_name;
mod watch;

pub use api::{Api, Page, Pages, DEFAULT_PAGE_SIZE};
pub use auth::{Auth, AuthProvider, Secret};
pub use cancel::Cancel;
pub use client::Client;
pub(crate) use client::{pem_certificates, pem_private_key};
pub use config::{ClientConfig, Identity};
pub use params::{percent_decode, ListParams, WatchParams};
pub use rate_limit::{RateLimiter, RateLimiterStats};
pub use watch::{WatchCanceller, WatchStream, MAX_WATCH_LINE};
