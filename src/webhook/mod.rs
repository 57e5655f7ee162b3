//! Admission and conversion webhooks: the hooks kube-apiserver calls, as plain functions.
//!
//! Why here: a controller often needs a webhook beside it (defaults and checks that a CRD's
//! schema cannot express, the sharding label on create, conversion between a CRD's
//! versions), and writing one means getting the review types, the JSON patch, the `uid`
//! echo and the failure answers exactly right. This module does that part; the user writes
//! a function.
//!
//! - [`AdmissionReview`] and its halves: the `admission.k8s.io/v1` types.
//! - [`AdmissionHook`]: a validating hook (a [`Verdict`]: allow, or deny with a message and
//!   a code; warnings) or a mutating one (it changes the object in place; the answer's JSON
//!   patch is computed by [`json_diff`]).
//! - [`ConversionHook`]: `apiextensions.k8s.io/v1` `ConversionReview`, a function per pair
//!   of versions.
//! - each hook is a [`Handler`](crate::serve::Handler) of the crate's bounded server: mount
//!   several on the paths of one [`Router`](crate::serve::Router), served over TLS with
//!   certificates reloaded from files ([`TlsFiles`](crate::serve::TlsFiles)).
//!
//! Each hook also answers a bare request body with an HTTP status and a JSON body
//! ([`AdmissionHook::review`]), to put behind another HTTPS server (kube-apiserver calls
//! webhooks over TLS only). The answers a webhook owes kube-apiserver whatever happens —
//! the `uid` echoed, a panic turned into a denial, 400 for a malformed review, 413 for a
//! body over the bound — are the hooks' own, so they hold behind any server.
//!
//! Test a webhook end to end with
#![cfg_attr(
    feature = "testing",
    doc = "[`testing::ApiServer`](crate::testing::ApiServer):"
)]
#![cfg_attr(
    not(feature = "testing"),
    doc = "`testing::ApiServer` (feature `testing`):"
)]
//! it calls the Validating- and MutatingWebhookConfigurations created through its API as
//! kube-apiserver does (see its docs).
//!
//! ```
//! use kube_informer::serve::{Router, Server};
//! use kube_informer::webhook::{AdmissionHook, Verdict};
//!
//! let router = Router::new()
//!     .route("/validate", AdmissionHook::validating(|req| {
//!         match req.object.as_ref().and_then(|o| o.pointer("/metadata/labels/deny")) {
//!             Some(v) if v == "true" => Verdict::deny("labelled deny=true"),
//!             _ => Verdict::allow(),
//!         }
//!     }))
//!     .route("/mutate", AdmissionHook::mutating(|_req, obj| {
//!         obj["metadata"]["labels"]["mutated-by"] = "kube-informer".into();
//!         Verdict::allow()
//!     }));
//! // In a cluster: `.tls(TlsFiles::new("/tmp/k8s-webhook-server/serving-certs"))` and
//! // `0.0.0.0:9443` (see examples/admission_webhook.rs).
//! let server = Server::builder("webhook").bind("127.0.0.1:0", router)?;
//! server.stop();
//! # Ok::<(), kube_informer::Error>(())
//! ```

mod admission;
mod conversion;
mod handler;
mod hook;
mod json_diff;

pub use admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, GroupVersionKind, GroupVersionResource,
    Operation, UserInfo, ADMISSION_API_VERSION,
};
pub use conversion::{
    ConversionHook, ConversionRequest, ConversionResponse, ConversionResult, ConversionReview,
    CONVERSION_API_VERSION, DEFAULT_MAX_CONVERSION_BYTES,
};
pub use hook::{AdmissionHook, Verdict, DEFAULT_MAX_REVIEW_BYTES};
pub use json_diff::json_diff;
