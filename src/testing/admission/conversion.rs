//! CRD conversion through a webhook: a custom resource whose CRD says
//! `spec.conversion.strategy: Webhook` is stored in its storage version and served in its
//! other versions by calling the webhook, as kube-apiserver does.
//!
//! What is converted (the minimum a conversion webhook's test needs):
//! - GET of one object and a list (no `limit`/`continue` paging: the whole list in one
//!   page, in one review) in another served version: the stored objects are sent to the
//!   webhook and its answer served;
//! - a create (POST) or an update (PUT) in another version: the body is converted to the
//!   storage version, written as any write (admission webhooks included), and the answer
//!   converted back; a DELETE goes through as it is.
//!
//! Not converted: watches and patches in a non-storage version (405 saying so), the
//! `status` and `scale` subresources, label or field selectors on such a list. A failed
//! conversion (the webhook cannot be called, answers `Failure`, returns another number of
//! objects, or a uid that is not the request's) is a 500 `conversion webhook for
//! <group>/<version>, Kind=<Kind> failed: ...`, as kube-apiserver words it.

use serde_json::{json, Value};

use super::crd::Conversion;
use super::handlers::{write_status, Outcome};
use super::http::{self, Request};
use super::server::{Peer, Shared};
use super::store::TypeKey;
use super::writes;
use crate::api::Status;

fn outcome(r: std::io::Result<()>) -> Outcome {
    match r {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

/// The CRD `tk` is a non-storage served version of, when it converts by webhook.
fn conversion_of<'a>(shared: &'a Shared, tk: &TypeKey) -> Option<&'a Conversion> {
    shared.opts().conversions.iter().find(|c| {
        c.storage.group == tk.group
            && c.storage.plural == tk.plural
            && c.others.contains(&tk.version)
    })
}

/// Converts `objects` to `desired` (`group/version`) through the CRD's webhook.
fn convert(
    shared: &Shared,
    c: &Conversion,
    objects: Vec<Value>,
    desired: &str,
) -> Result<Vec<Value>, Status> {
    if objects.is_empty() {
        return Ok(objects);
    }
    let failed = |why: String| {
        Status::failure(
            500,
            "InternalError",
            format!(
                "conversion webhook for {}, Kind={} failed: {why}",
                desired, c.storage.kind
            ),
        )
    };
    let uid = super::webhooks::review_uid();
    let n = objects.len();
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    });
    let answer = super::webhooks::post(shared, &c.client_config, &review, 30).map_err(failed)?;
    let response = &answer["response"];
    if response["uid"] != uid.as_str() {
        return Err(failed(format!(
            "expected response.uid={uid:?}, got {}",
            response["uid"]
        )));
    }
    if response["result"]["status"] != "Success" {
        return Err(failed(
            response["result"]["message"]
                .as_str()
                .unwrap_or("the webhook answered Failure")
                .to_owned(),
        ));
    }
    let converted = response["convertedObjects"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if converted.len() != n {
        return Err(failed(format!(
            "expected {n} converted objects, got {}",
            converted.len()
        )));
    }
    if let Some(bad) = converted.iter().find(|o| o["apiVersion"] != desired) {
        return Err(failed(format!(
            "a converted object has apiVersion {}, not {desired:?}",
            bad["apiVersion"]
        )));
    }
    Ok(converted)
}

/// Answers a request for a non-storage version of a CRD converted by webhook; `None` when
/// the request is not one.
pub(crate) fn handle<S: Peer>(
    req: &Request,
    tk: &TypeKey,
    namespace: Option<&str>,
    name: Option<&str>,
    subresource: Option<&str>,
    peer: &mut S,
    shared: &Shared,
) -> Option<Outcome> {
    let c = conversion_of(shared, tk)?;
    let storage = TypeKey::of(&c.storage);
    let desired = tk.api_version();
    let answer = match (req.method.as_str(), name, subresource) {
        ("GET", Some(n), None) => get(shared, c, &storage, namespace, n, &desired),
        ("GET", None, None) if !req.flag("watch") => list(shared, c, &storage, namespace, &desired),
        ("POST", None, None) | ("PUT", Some(_), None) | ("DELETE", Some(_), None) => {
            write(req, shared, c, &storage, namespace, name, &desired)
        }
        _ => Err(Status::failure(
            405,
            "MethodNotAllowed",
            format!(
                "the test server converts {} {desired} only for get, list, create, update and delete (no watch, patch or subresource)",
                c.storage.plural
            ),
        )),
    };
    Some(match answer {
        Ok((code, body, warnings)) => {
            let extra: Vec<(&str, String)> = warnings
                .iter()
                .map(|w| ("warning", format!("299 - {}", Value::from(w.as_str()))))
                .collect();
            outcome(http::write_response(peer, code, &extra, body.as_bytes()))
        }
        Err(st) => outcome(write_status(peer, &st, &[])),
    })
}

type Answer = (u16, String, Vec<String>);

fn get(
    shared: &Shared,
    c: &Conversion,
    storage: &TypeKey,
    namespace: Option<&str>,
    name: &str,
    desired: &str,
) -> Result<Answer, Status> {
    let stored: Value = {
        let mut store = shared.store.lock();
        let o = store.get(storage, namespace, name)?;
        serde_json::from_str(&store.collection(storage).with_type_meta(&o.json)).unwrap_or_default()
    };
    let mut out = convert(shared, c, vec![stored], desired)?;
    Ok((200, out.remove(0).to_string(), Vec::new()))
}

fn list(
    shared: &Shared,
    c: &Conversion,
    storage: &TypeKey,
    namespace: Option<&str>,
    desired: &str,
) -> Result<Answer, Status> {
    let (items, rv) = {
        let mut store = shared.store.lock();
        let rv = store.rv;
        let col = store.collection(storage);
        let items: Vec<Value> = col
            .objects
            .values()
            .filter(|o| namespace.is_none_or(|ns| o.namespace == ns))
            .filter_map(|o| serde_json::from_str(&col.with_type_meta(&o.json)).ok())
            .collect();
        (items, rv)
    };
    let items = convert(shared, c, items, desired)?;
    let body = json!({
        "apiVersion": desired,
        "kind": format!("{}List", c.storage.kind),
        "metadata": {"continue": "", "resourceVersion": rv.to_string()},
        "items": items,
    });
    Ok((200, body.to_string(), Vec::new()))
}

fn write(
    req: &Request,
    shared: &Shared,
    c: &Conversion,
    storage: &TypeKey,
    namespace: Option<&str>,
    name: Option<&str>,
    desired: &str,
) -> Result<Answer, Status> {
    let mut body = req.body.clone();
    if req.method != "DELETE" {
        let mut object: Value = serde_json::from_slice(&req.body).map_err(|e| {
            Status::failure(
                400,
                "BadRequest",
                format!("the body of the request was in an unknown format: {e}"),
            )
        })?;
        if let Some(m) = object.as_object_mut() {
            m.insert("apiVersion".into(), desired.into());
            m.entry("kind")
                .or_insert_with(|| c.storage.kind.clone().into());
        }
        let converted = convert(shared, c, vec![object], &storage.api_version())?;
        body = converted[0].to_string().into_bytes();
    }
    let forwarded = Request {
        method: req.method.clone(),
        path: req.path.clone(),
        query: req.query.clone(),
        query_pairs: req.query_pairs.clone(),
        headers: req.headers.clone(),
        header_list: req.header_list.clone(),
        body,
    };
    let address = writes::Address {
        tk: storage,
        namespace,
        name,
        subresource: None,
    };
    let answer = writes::write(&forwarded, &address, shared)?;
    shared.notify();
    let mut out: Value = serde_json::from_str(&answer.body).unwrap_or_default();
    if out["kind"] == c.storage.kind.as_str() {
        out = convert(shared, c, vec![out], desired)?.remove(0);
    }
    Ok((answer.code, out.to_string(), answer.warnings))
}
