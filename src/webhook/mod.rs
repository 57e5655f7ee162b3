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
//! - [`Webhooks`]: several hooks on the paths of one server.
//!
//! Each hook answers a request body with an HTTP status and a JSON body
//! ([`AdmissionHook::review`]): put it behind any HTTPS server (kube-apiserver calls
//! webhooks over TLS only). The answers a webhook owes kube-apiserver whatever happens —
//! the `uid` echoed, a panic turned into a denial, 400 for a malformed review, 413 for a
//! body over the bound — are the hooks' own, so they hold behind any server.
//!
//! Test a webhook end to end with [`testing::ApiServer`](crate::testing::ApiServer): it
//! calls the Validating- and MutatingWebhookConfigurations created through its API as
//! kube-apiserver does (see its docs).
//!
//! ```
//! use kube_informer::webhook::{AdmissionHook, Verdict, Webhooks};
//! use serde_json::Value;
//!
//! let hooks = Webhooks::new()
//!     .admission("/validate", AdmissionHook::validating(|req| {
//!         match req.object.as_ref().and_then(|o| o.pointer("/metadata/labels/deny")) {
//!             Some(v) if v == "true" => Verdict::deny("labelled deny=true"),
//!             _ => Verdict::allow(),
//!         }
//!     }));
//! let (code, _) = hooks.handle("POST", "/validate?timeout=10s", b"{}");
//! assert_eq!(code, 400); // not an AdmissionReview
//! assert_eq!(hooks.handle("POST", "/nowhere", b"{}").0, 404);
//! ```

mod admission;
mod conversion;
mod hook;
mod json_diff;

use std::collections::BTreeMap;

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

#[derive(Debug)]
enum Entry {
    Admission(AdmissionHook),
    Conversion(ConversionHook),
}

/// Several hooks on the paths of one server: `POST <path>` to the hook registered there
/// (the query, such as kube-apiserver's `?timeout=10s`, is ignored); 404 for another path,
/// 405 for another method.
#[derive(Debug, Default)]
pub struct Webhooks {
    paths: BTreeMap<String, Entry>,
}

impl Webhooks {
    /// No hook yet.
    pub fn new() -> Webhooks {
        Webhooks::default()
    }

    /// Serves `hook` on `path` (`/validate`); a second hook on a path replaces the first.
    pub fn admission(mut self, path: &str, hook: AdmissionHook) -> Webhooks {
        self.paths.insert(path.to_owned(), Entry::Admission(hook));
        self
    }

    /// Serves a conversion `hook` on `path` (`/convert`).
    pub fn conversion(mut self, path: &str, hook: ConversionHook) -> Webhooks {
        self.paths.insert(path.to_owned(), Entry::Conversion(hook));
        self
    }

    /// The paths served, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.paths.keys().map(String::as_str)
    }

    /// Answers one request: the HTTP status and the JSON body.
    pub fn handle(&self, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let path = path.split('?').next().unwrap_or(path);
        let Some(entry) = self.paths.get(path) else {
            return (
                404,
                hook::error_body(404, "NotFound", format!("no webhook on {path:?}")),
            );
        };
        if method != "POST" {
            return (
                405,
                hook::error_body(
                    405,
                    "MethodNotAllowed",
                    format!("webhooks take POST, not {method}"),
                ),
            );
        }
        match entry {
            Entry::Admission(h) => h.review(body),
            Entry::Conversion(h) => h.review(body),
        }
    }
}
