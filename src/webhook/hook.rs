//! Admission hooks: a user function turned into an answer to kube-apiserver's
//! `AdmissionReview`.
//!
//! A **validating** hook looks at the request and returns a [`Verdict`] (allow, or deny with a
//! message and an HTTP code; warnings either way). A **mutating** hook gets the object to
//! change in place; the answer carries the JSON patch (RFC 6902, see [`json_diff`]) from the
//! object it was given to the one it left, base64-encoded with `patchType: JSONPatch` (no
//! patch when nothing changed).
//!
//! What every answer keeps, whatever the user function does:
//! - the response's `uid` is the request's, and its `apiVersion` the request's;
//! - a hook that panics answers HTTP 200 with a denial (code 500) whose message says that
//!   it panicked and with what: kube-apiserver reads a denial, not a dropped connection that
//!   its `failurePolicy` would have to interpret;
//! - a body that is not an `AdmissionReview` with a `request` is HTTP 400 with the reason
//!   (a JSON `Status`), a body over the bound ([`DEFAULT_MAX_REVIEW_BYTES`] unless set) is
//!   HTTP 413, before any decoding.
//!
//! [`json_diff`]: super::json_diff

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use base64::Engine as _;
use serde_json::Value;

use super::admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, ADMISSION_API_VERSION,
};
use super::json_diff::json_diff;
use crate::api::Status;

/// The largest review a hook reads by default: 7 MiB. kube-apiserver takes objects of up to
/// 3 MiB, and an UPDATE's review carries two of them (`object` and `oldObject`).
pub const DEFAULT_MAX_REVIEW_BYTES: usize = 7 << 20;

/// What an admission hook decides.
///
/// ```
/// use kube_informer::webhook::Verdict;
/// let v = Verdict::deny("no thanks").with_code(422).warn("think again");
/// assert!(!v.is_allowed());
/// assert!(Verdict::allow().is_allowed());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    allowed: bool,
    code: u16,
    message: String,
    reason: String,
    warnings: Vec<String>,
    audit_annotations: BTreeMap<String, String>,
}

impl Verdict {
    /// Let the request go on.
    pub fn allow() -> Verdict {
        Verdict {
            allowed: true,
            code: 200,
            message: String::new(),
            reason: String::new(),
            warnings: Vec::new(),
            audit_annotations: BTreeMap::new(),
        }
    }

    /// Refuse the request with `message` (HTTP 403 `Forbidden` unless [`with_code`] says
    /// otherwise); kube-apiserver answers the client `admission webhook "<name>" denied the
    /// request: <message>`.
    ///
    /// [`with_code`]: Verdict::with_code
    pub fn deny(message: impl Into<String>) -> Verdict {
        Verdict {
            allowed: false,
            code: 403,
            message: message.into(),
            reason: "Forbidden".into(),
            ..Verdict::allow()
        }
    }

    /// The HTTP code of a denial (kube-apiserver passes it on to the client).
    pub fn with_code(mut self, code: u16) -> Verdict {
        self.code = code;
        self
    }

    /// The machine-readable reason of a denial (`Forbidden` by default).
    pub fn with_reason(mut self, reason: impl Into<String>) -> Verdict {
        self.reason = reason.into();
        self
    }

    /// Adds a warning the client will show (`kubectl` prints `Warning: ...`).
    pub fn warn(mut self, warning: impl Into<String>) -> Verdict {
        self.warnings.push(warning.into());
        self
    }

    /// Adds an audit annotation (recorded in the audit log under the webhook's name).
    pub fn annotate(mut self, key: impl Into<String>, value: impl Into<String>) -> Verdict {
        self.audit_annotations.insert(key.into(), value.into());
        self
    }

    /// Whether the request may go on.
    pub fn is_allowed(&self) -> bool {
        self.allowed
    }

    fn into_response(self, uid: String) -> AdmissionResponse {
        let status =
            (!self.allowed).then(|| Status::failure(self.code, &self.reason, self.message));
        AdmissionResponse {
            uid,
            allowed: self.allowed,
            status,
            patch: None,
            patch_type: None,
            audit_annotations: self.audit_annotations,
            warnings: self.warnings,
        }
    }
}

type ValidateFn = dyn Fn(&AdmissionRequest) -> Verdict + Send + Sync;
type MutateFn = dyn Fn(&AdmissionRequest, &mut Value) -> Verdict + Send + Sync;

enum Kind {
    Validating(Box<ValidateFn>),
    Mutating(Box<MutateFn>),
}

/// One admission webhook: a user function and the review handling around it.
///
/// It is a [`Handler`](crate::serve::Handler): mount it on a path of a
/// [`Router`](crate::serve::Router). [`AdmissionHook::review`] takes the body kube-apiserver
/// POSTs and gives the HTTP status and JSON body, for another server.
///
/// ```
/// use kube_informer::webhook::{AdmissionHook, Verdict};
/// use serde_json::{json, Value};
///
/// let hook = AdmissionHook::mutating(|_req, obj: &mut Value| {
///     obj["metadata"]["labels"]["mutated-by"] = json!("kube-informer");
///     Verdict::allow()
/// });
/// let review = json!({
///     "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
///     "request": {
///         "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
///         "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
///         "resource": {"group": "", "version": "v1", "resource": "configmaps"},
///         "namespace": "lab", "operation": "CREATE", "userInfo": {"username": "ann"},
///         "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {}}}
///     }
/// });
/// let (code, body) = hook.review(review.to_string().as_bytes());
/// assert_eq!(code, 200);
/// let answer: Value = serde_json::from_slice(&body).unwrap();
/// assert_eq!(answer["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
/// assert_eq!(answer["response"]["allowed"], true);
/// assert_eq!(answer["response"]["patchType"], "JSONPatch");
/// ```
pub struct AdmissionHook {
    kind: Kind,
    max_body: usize,
}

impl std::fmt::Debug for AdmissionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionHook")
            .field(
                "kind",
                &match self.kind {
                    Kind::Validating(_) => "validating",
                    Kind::Mutating(_) => "mutating",
                },
            )
            .field("max_body", &self.max_body)
            .finish()
    }
}

/// The JSON `Status` body of an HTTP error answer (400, 405, 413).
pub(crate) fn error_body(code: u16, reason: &str, message: impl Into<String>) -> Vec<u8> {
    let st = Status::failure(code, reason, message);
    serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": st.status, "message": st.message, "reason": st.reason, "code": st.code,
    })
    .to_string()
    .into_bytes()
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

impl AdmissionHook {
    /// A validating hook: `f` allows or denies each request.
    pub fn validating<F>(f: F) -> AdmissionHook
    where
        F: Fn(&AdmissionRequest) -> Verdict + Send + Sync + 'static,
    {
        AdmissionHook {
            kind: Kind::Validating(Box::new(f)),
            max_body: DEFAULT_MAX_REVIEW_BYTES,
        }
    }

    /// A mutating hook: `f` changes the object in place (the request's `object`, or `null`
    /// for a DELETE, whose changes are ignored) and allows or denies; the answer's patch is
    /// the difference. A denied request carries no patch.
    pub fn mutating<F>(f: F) -> AdmissionHook
    where
        F: Fn(&AdmissionRequest, &mut Value) -> Verdict + Send + Sync + 'static,
    {
        AdmissionHook {
            kind: Kind::Mutating(Box::new(f)),
            max_body: DEFAULT_MAX_REVIEW_BYTES,
        }
    }

    /// The largest body [`review`](AdmissionHook::review) reads (413 beyond).
    pub fn max_body(mut self, bytes: usize) -> AdmissionHook {
        self.max_body = bytes;
        self
    }

    /// Answers one `AdmissionReview` body: the HTTP status and the JSON body to send back
    /// (200 with the review's response; 400 for a body that is not a review with a
    /// `request`; 413 for one over the bound).
    pub fn review(&self, body: &[u8]) -> (u16, Vec<u8>) {
        if body.len() > self.max_body {
            return (
                413,
                error_body(
                    413,
                    "RequestEntityTooLarge",
                    format!(
                        "the AdmissionReview is {} bytes, over the limit of {} bytes",
                        body.len(),
                        self.max_body
                    ),
                ),
            );
        }
        let review: AdmissionReview = match serde_json::from_slice(body) {
            Ok(r) => r,
            Err(e) => {
                return (
                    400,
                    error_body(400, "BadRequest", format!("malformed AdmissionReview: {e}")),
                )
            }
        };
        if review.kind != "AdmissionReview" {
            return (
                400,
                error_body(
                    400,
                    "BadRequest",
                    format!(
                        "malformed AdmissionReview: kind is {:?}, not \"AdmissionReview\"",
                        review.kind
                    ),
                ),
            );
        }
        let api_version = if review.api_version.is_empty() {
            ADMISSION_API_VERSION.to_owned()
        } else {
            review.api_version
        };
        let Some(request) = review.request else {
            return (
                400,
                error_body(400, "BadRequest", "malformed AdmissionReview: no request"),
            );
        };
        let response = self.respond(&request);
        let answer = AdmissionReview {
            api_version,
            kind: "AdmissionReview".into(),
            request: None,
            response: Some(response),
        };
        match serde_json::to_vec(&answer) {
            Ok(b) => (200, b),
            Err(e) => (
                500,
                error_body(500, "InternalError", format!("encoding the answer: {e}")),
            ),
        }
    }

    /// The response to `request` (the user function run, its panic caught).
    pub fn respond(&self, request: &AdmissionRequest) -> AdmissionResponse {
        let uid = request.uid.clone();
        match &self.kind {
            Kind::Validating(f) => match catch_unwind(AssertUnwindSafe(|| f(request))) {
                Ok(v) => v.into_response(uid),
                Err(p) => panicked(&*p).into_response(uid),
            },
            Kind::Mutating(f) => {
                let original = request.object.clone().unwrap_or(Value::Null);
                let mut object = original.clone();
                let verdict = match catch_unwind(AssertUnwindSafe(|| f(request, &mut object))) {
                    Ok(v) => v,
                    Err(p) => return panicked(&*p).into_response(uid),
                };
                let allowed = verdict.allowed;
                let mut response = verdict.into_response(uid);
                if allowed && request.object.is_some() {
                    let ops = json_diff(&original, &object);
                    if !ops.is_empty() {
                        let patch = Value::Array(ops).to_string();
                        response.patch =
                            Some(base64::engine::general_purpose::STANDARD.encode(patch));
                        response.patch_type = Some("JSONPatch".into());
                    }
                }
                response
            }
        }
    }
}

fn panicked(payload: &(dyn std::any::Any + Send)) -> Verdict {
    let message = panic_message(payload);
    log::error!("admission hook panicked: {message}");
    Verdict::deny(format!("the admission hook panicked: {message}"))
        .with_code(500)
        .with_reason("InternalError")
}

/// The JSON type of a value, for messages.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
