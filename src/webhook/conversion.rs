//! Conversion webhooks: the `apiextensions.k8s.io/v1` `ConversionReview` kube-apiserver
//! sends when a custom resource is read or written in a version other than the one stored
//! (`spec.conversion.strategy: Webhook` on the CRD).
//!
//! A [`ConversionHook`] holds one user function per (from, to) pair of `apiVersion`s. Each
//! object of the request is converted to `desiredAPIVersion` (an object already there is
//! passed through untouched); every converted object gets `apiVersion` set to the desired
//! version, whatever the function left. The review fails as a whole (kube-apiserver accepts
//! all or nothing) when one object cannot be converted: no function for its pair, a
//! function returning an error, or a panic. The `Failure` result's message names that
//! object (`namespace/name`, its kind and the two versions) and says why. The `uid` is
//! always the request's. Malformed bodies are HTTP 400, bodies over the bound HTTP 413, as
//! for admission.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::hook::{error_body, panic_message};

/// The API version of conversion reviews.
pub const CONVERSION_API_VERSION: &str = "apiextensions.k8s.io/v1";

/// The largest conversion review a hook reads by default: 64 MiB (a list read in another
/// version sends every object of the page in one review).
pub const DEFAULT_MAX_CONVERSION_BYTES: usize = 64 << 20;

/// A `ConversionReview`: the request kube-apiserver sends or the response sent back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionReview {
    /// `apiextensions.k8s.io/v1`.
    #[serde(default)]
    pub api_version: String,
    /// `ConversionReview`.
    #[serde(default)]
    pub kind: String,
    /// The objects to convert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ConversionRequest>,
    /// The converted objects, or why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ConversionResponse>,
}

/// The request half of a [`ConversionReview`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionRequest {
    /// Identifies this call; echoed.
    pub uid: String,
    /// The `apiVersion` every object must come back in (`example.com/v2`).
    #[serde(rename = "desiredAPIVersion")]
    pub desired_api_version: String,
    /// The objects, each with its `apiVersion`.
    #[serde(default)]
    pub objects: Vec<Value>,
}

/// The result of a conversion: `status` `Success` or `Failure`, with a message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversionResult {
    /// `Success` or `Failure` (empty in the stub kube-apiserver puts in a request).
    #[serde(default)]
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// The response half of a [`ConversionReview`].
///
/// kube-apiserver sends its requests with an empty stub of this half
/// (`{"uid":"","convertedObjects":null,"result":{"metadata":{}}}`): every field reads as
/// its default when absent or `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConversionResponse {
    /// The request's uid.
    #[serde(default)]
    pub uid: String,
    /// The objects in the desired version, in the request's order (empty on failure).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub converted_objects: Vec<Value>,
    /// `Success`, or `Failure` with the reason.
    #[serde(default)]
    pub result: ConversionResult,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
    Ok(Option::<Vec<Value>>::deserialize(d)?.unwrap_or_default())
}

type ConvertFn = dyn Fn(Value) -> Result<Value, String> + Send + Sync;

/// A conversion webhook: a function per (from, to) pair of a CRD's versions.
///
/// ```
/// use kube_informer::webhook::ConversionHook;
/// use serde_json::{json, Value};
///
/// // v1 has `spec.size` as a string, v2 as a number.
/// let hook = ConversionHook::new()
///     .convert("example.com/v1", "example.com/v2", |mut o: Value| {
///         let size = o["spec"]["size"].as_str().unwrap_or("0").parse::<i64>().map_err(|e| e.to_string())?;
///         o["spec"]["size"] = json!(size);
///         Ok(o)
///     });
/// let review = json!({
///     "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
///     "request": {"uid": "u-1", "desiredAPIVersion": "example.com/v2", "objects": [
///         {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": "3"}}
///     ]}
/// });
/// let (code, body) = hook.review(review.to_string().as_bytes());
/// assert_eq!(code, 200);
/// let answer: Value = serde_json::from_slice(&body).unwrap();
/// assert_eq!(answer["response"]["uid"], "u-1");
/// assert_eq!(answer["response"]["result"]["status"], "Success");
/// assert_eq!(answer["response"]["convertedObjects"][0]["apiVersion"], "example.com/v2");
/// assert_eq!(answer["response"]["convertedObjects"][0]["spec"]["size"], 3);
/// ```
pub struct ConversionHook {
    pairs: HashMap<(String, String), Box<ConvertFn>>,
    max_body: usize,
}

impl std::fmt::Debug for ConversionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut pairs: Vec<_> = self.pairs.keys().collect();
        pairs.sort();
        f.debug_struct("ConversionHook")
            .field("pairs", &pairs)
            .field("max_body", &self.max_body)
            .finish()
    }
}

impl Default for ConversionHook {
    fn default() -> Self {
        ConversionHook::new()
    }
}

fn object_name(o: &Value) -> String {
    let meta = &o["metadata"];
    let name = meta["name"].as_str().unwrap_or("");
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

impl ConversionHook {
    /// A hook with no conversion yet.
    pub fn new() -> ConversionHook {
        ConversionHook {
            pairs: HashMap::new(),
            max_body: DEFAULT_MAX_CONVERSION_BYTES,
        }
    }

    /// Converts objects of `apiVersion` `from` to `to` with `f` (full `group/version`
    /// strings). The function gets the object as sent and returns it in the new shape;
    /// `apiVersion` is set for it. An `Err` fails the review, naming the object.
    pub fn convert<F>(mut self, from: &str, to: &str, f: F) -> ConversionHook
    where
        F: Fn(Value) -> Result<Value, String> + Send + Sync + 'static,
    {
        self.pairs
            .insert((from.to_owned(), to.to_owned()), Box::new(f));
        self
    }

    /// The largest body [`review`](ConversionHook::review) reads (413 beyond).
    pub fn max_body(mut self, bytes: usize) -> ConversionHook {
        self.max_body = bytes;
        self
    }

    /// Answers one `ConversionReview` body: the HTTP status and JSON body.
    pub fn review(&self, body: &[u8]) -> (u16, Vec<u8>) {
        if body.len() > self.max_body {
            return (
                413,
                error_body(
                    413,
                    "RequestEntityTooLarge",
                    format!(
                        "the ConversionReview is {} bytes, over the limit of {} bytes",
                        body.len(),
                        self.max_body
                    ),
                ),
            );
        }
        let review: ConversionReview = match serde_json::from_slice(body) {
            Ok(r) => r,
            Err(e) => {
                return (
                    400,
                    error_body(
                        400,
                        "BadRequest",
                        format!("malformed ConversionReview: {e}"),
                    ),
                )
            }
        };
        let Some(request) = review.request.filter(|_| review.kind == "ConversionReview") else {
            return (
                400,
                error_body(
                    400,
                    "BadRequest",
                    "malformed ConversionReview: not a ConversionReview with a request",
                ),
            );
        };
        let api_version = if review.api_version.is_empty() {
            CONVERSION_API_VERSION.to_owned()
        } else {
            review.api_version
        };
        let answer = ConversionReview {
            api_version,
            kind: "ConversionReview".into(),
            request: None,
            response: Some(self.respond(request)),
        };
        match serde_json::to_vec(&answer) {
            Ok(b) => (200, b),
            Err(e) => (
                500,
                error_body(500, "InternalError", format!("encoding the answer: {e}")),
            ),
        }
    }

    /// Converts the request's objects (see the module docs).
    pub fn respond(&self, request: ConversionRequest) -> ConversionResponse {
        let desired = request.desired_api_version;
        let mut converted = Vec::with_capacity(request.objects.len());
        for o in request.objects {
            match self.one(o, &desired) {
                Ok(c) => converted.push(c),
                Err(message) => {
                    return ConversionResponse {
                        uid: request.uid,
                        converted_objects: Vec::new(),
                        result: ConversionResult {
                            status: "Failure".into(),
                            message,
                        },
                    }
                }
            }
        }
        ConversionResponse {
            uid: request.uid,
            converted_objects: converted,
            result: ConversionResult {
                status: "Success".into(),
                message: String::new(),
            },
        }
    }

    fn one(&self, o: Value, desired: &str) -> Result<Value, String> {
        let from = o["apiVersion"].as_str().unwrap_or("").to_owned();
        let what = format!(
            "{} {:?}",
            o["kind"].as_str().unwrap_or("object"),
            object_name(&o)
        );
        if !o.is_object() {
            return Err(format!("cannot convert {o}: not an object"));
        }
        if from == desired {
            return Ok(o);
        }
        let Some(f) = self.pairs.get(&(from.clone(), desired.to_owned())) else {
            return Err(format!(
                "cannot convert {what} from {from:?} to {desired:?}: no conversion for this pair"
            ));
        };
        let mut out = match catch_unwind(AssertUnwindSafe(|| f(o))) {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                return Err(format!(
                    "cannot convert {what} from {from:?} to {desired:?}: {e}"
                ))
            }
            Err(p) => {
                return Err(format!(
                "cannot convert {what} from {from:?} to {desired:?}: the conversion panicked: {}",
                panic_message(&*p)
            ))
            }
        };
        match out.as_object_mut() {
            Some(m) => {
                m.insert("apiVersion".into(), json!(desired));
                Ok(out)
            }
            None => Err(format!(
                "cannot convert {what} from {from:?} to {desired:?}: the conversion returned {}, not an object",
                super::hook::json_type(&out)
            )),
        }
    }
}
