//! The blocking API client: requests for any resource, paged lists, watch streams, every
//! write a controller makes, and a request builder for the rest.
//!
//! - [`Client`]: the transport (credentials, TLS, rate limit, retries, warnings, `Status`
//!   errors), one code path for every request;
//! - [`Request`] (from [`Client::request`]): any method, path, query, headers and body; the
//!   answer as a [`Response`], decoded JSON, or a line stream ([`Lines`]);
//! - [`Api`]: the typed requests for one resource: get, list, watch, create, replace,
//!   [`patch`](Api::patch) (merge, JSON, strategic, apply), delete with options, delete
//!   collection, the `status` and `scale` subresources, and any other subresource;
//! - [`retry_on_conflict`]: read-modify-write loops for optimistic concurrency.
//!
//! # Defaults: the client-side rate limit
//!
//! The client-side rate limit (`ClientConfig`'s `qps` and `burst`) defaults to kubectl's 50
//! requests per second with bursts of 300, not client-go's historical 5 and 10. It is a
//! safety net against a request loop, not the server's protection (kube-apiserver has API
//! Priority and Fairness for that).
//!
//! The pages of one list are one logical read: the first page takes a token, the pages after
//! it (with a `continue` token) take none. With 5 and 10 and a token per page, the 200 pages
//! of an initial list of 100,000 pods waited about 38 s; now no list is paced page by page.
//! A `qps` of `0.0` turns the limiter off. [`Client::rate_limiter_stats`] says how many
//! requests waited, and for how long.
//!
//! # Which patch when
//!
//! - **Server-side apply** ([`Patch::Apply`], with [`PatchParams::apply`]`("my-manager")`):
//!   what a controller should use for the fields it owns. Send only those fields; the
//!   server merges them, remembers you own them, removes the ones you stop sending, and
//!   tells you (409, [`Status::field_manager_conflicts`](crate::api::Status::field_manager_conflicts))
//!   when another manager owns one; [`PatchParams::force`] takes them over. Creates the
//!   object when missing. Any resource.
//! - **Merge patch** ([`Patch::Merge`]): a quick change of a few fields; `null` deletes a
//!   key; lists are replaced whole. Any resource.
//! - **Strategic merge patch** ([`Patch::Strategic`]): as a merge patch, but the lists of
//!   built-in types merge by key (containers by `name`). Built-in types only (custom
//!   resources answer 415).
//! - **JSON patch** ([`Patch::Json`], [`PatchOperation`]): exact edits by path, with `test`
//!   to make the patch conditional on a value (422 when it does not hold).
//!
//! A replace with the resourceVersion you read is the other way to write safely; wrap the
//! read-modify-write in [`retry_on_conflict`].
//!
//! # Limits
//!
//! - Every patch body, apply's included, is encoded as JSON (JSON is YAML, and the server
//!   reads it as such): the client has no YAML encoder. Send YAML text through
//!   [`Client::request`] with `content_type("application/apply-patch+yaml")` if you have it.
//! - The client knows no strategic-merge keys: a [`Patch::Strategic`] is sent as given, the
//!   server does the merging.
//! - Delete options always travel as a `DeleteOptions` body (as client-go sends them), never
//!   as query parameters; [`Api::delete_collection`] uses only the label and field selectors
//!   of its [`ListParams`].
//! - A [`DeleteResponse::Object`] does not by itself say whether the object is still being
//!   deleted or already gone (a pod deleted with grace 0 answers its last state): its
//!   `deletionGracePeriodSeconds` and `finalizers` do.
//! - [`Request::send`] reads the whole body into memory and is bounded by the request
//!   timeout; use [`Request::lines`] for a long stream.
//! - [`retry_on_conflict`] retries every 409 `Conflict`, an apply conflict included (as
//!   client-go does): an apply that conflicts needs `force` or a change, not a retry.

mod api;
mod auth;
mod cancel;
#[allow(clippy::module_inception)]
mod client;
mod config;
mod deleted;
#[cfg(feature = "ws")]
pub(crate) mod duplex;
mod frames;
mod impersonate;
mod lines;
#[cfg(feature = "metrics")]
pub(crate) mod observer;
mod params;
mod patch;
#[cfg(feature = "protobuf")]
mod protobuf_body;
mod rate_limit;
mod request;
mod retry;
mod reviews;
mod scale;
mod server_name;
#[cfg(feature = "ws")]
pub(crate) mod upgrade;
mod warning;
mod watch;
mod write_params;

pub use api::{Api, Page, Pages, DEFAULT_PAGE_SIZE};
pub use auth::{Auth, AuthProvider, Secret};
pub use cancel::Cancel;
pub use client::Client;
pub(crate) use client::{decode_json, pem_certificates, pem_private_key};
pub use config::{ClientConfig, Identity};
pub use deleted::DeleteResponse;
pub use lines::Lines;
pub use params::{percent_decode, ListParams, WatchParams};
pub use patch::{escape_pointer_token, pointer, Patch, PatchOperation};
pub use rate_limit::{RateLimiter, RateLimiterStats};
pub(crate) use request::Streamed;
pub use request::{Request, Response};
pub use retry::{retry_on_conflict, RetryBackoff};
pub use scale::{Scale, ScaleSpec, ScaleStatus};
pub use ureq::http::{HeaderMap, HeaderValue, Method};
pub use warning::{Warning, WarningHandler};
pub use watch::{WatchCanceller, WatchStream, MAX_WATCH_LINE};
pub use write_params::{
    DeleteParams, FieldValidation, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
