//! CRD conversion through a webhook: a custom resource whose CRD says
//! `spec.conversion.strategy: Webhook` is stored in its storage version and served in its
//! other versions by calling the webhook, as kube-apiserver does.
//!
//! What is converted, one object per `ConversionReview` (as kube-apiserver 1.36 sends
//! them, with the empty `response` stub it puts in the request):
//! - GET of one object in another served version: the stored object is converted, at
//!   every GET (the real server reads it from etcd);
//! - a list in another version is served from objects converted once (the real server's
//!   watch cache of that version): only an object written since the last list is sent to
//!   the webhook; when one cannot be converted the list is the real server's 429
//!   `storage is (re)initializing: failed to list ...` with `Retry-After: 1`; paged
//!   (`limit`/`continue`, `resourceVersionMatch=Exact`, a continued page read at its
//!   token's version; `resourceVersion=0` the whole list) and filtered by label and field
//!   selectors on the converted objects, as the version's watch cache serves them;
//! - a watch in another version is the stored version's watch with each event's object
//!   converted, one review per object version shared by every watcher and by lists (the
//!   same converted objects); BOOKMARKs carry only a resourceVersion and are not converted;
//!   an object the webhook cannot convert ends the stream cleanly (no ERROR event), as the
//!   real server's cacher ends its watchers when the version's cache cannot decode an event;
//! - a create (POST) or an update (PUT) in another version: the body is converted to the
//!   storage version, written as any write (admission webhooks included), and the answer
//!   converted back; a DELETE goes through as it is;
//! - a JSON or merge patch in another version: applied to the stored object converted to
//!   that version, the result converted back and written as an update (three reviews:
//!   read, store, answer; its managed fields entry names the storage version).
//!
//! A converted object is checked as kube-apiserver checks it: the same kind, name,
//! namespace and uid (`conversion webhook for <group>/<version>, Kind=<Kind> returned
//! invalid object: must have the same name: a != b`), and of its metadata only the labels
//! and annotations are taken. A failed conversion (the webhook cannot be called, answers
//! `Failure`, another number of objects or another uid) is a 500 `conversion webhook for
//! <the source group/version>, Kind=<Kind> failed: ...` with no reason, as the real one.
//!
//! Not converted: server-side apply and the `scale` subresource in a non-storage version
//! (405 saying so). `/status` is converted as the object is (get, update, JSON and merge
//! patches). A watch's label or field selector is matched against
//! the stored object, not the converted one (they differ only if the converter changes
//! labels). The real server also converts each written object for its caches at once (a
//! review per write and version); here that happens at the next list or watch event that
//! needs it, and two watchers far apart in one object's history may convert a version
//! twice.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::answers::{write_status, Outcome};
use super::crd::Conversion;
use super::http::{self, Request};
use super::peer::Peer;
use super::read_versions::{self, ListAt};
use super::store::{Filter, Stored, StoredObject, TypeKey};
use super::webhooks::AdmissionHost;
use super::writes;
use crate::api::Status;

/// What conversion needs of the server beside admission's needs: the conversions it was
/// built with, the cache of converted objects, and its watch (which serves the converted
/// events with the server's bookmarks and faults). The server implements it.
pub(crate) trait ConversionHost: AdmissionHost {
    /// The CRDs converted by webhook (`ApiServerBuilder::custom_resource_definition`).
    fn conversions(&self) -> &[Conversion];
    /// Objects converted for lists and watches in a non-storage version.
    fn converted(&self) -> &Converted;
    /// A watch of the stored type `stored` whose events `convert` turns into `api_version`.
    fn watch_converted<S: Peer>(
        &self,
        req: &Request,
        stored: &TypeKey,
        namespace: Option<&str>,
        api_version: &str,
        convert: &dyn Fn(&str) -> Option<String>,
        peer: &mut S,
    ) -> Outcome;
}

fn outcome(r: std::io::Result<()>) -> Outcome {
    match r {
        Ok(()) => Outcome::KeepAlive,
        Err(_) => Outcome::Close,
    }
}

/// The CRD `tk` is a non-storage served version of, when it converts by webhook.
fn conversion_of<'a>(shared: &'a impl ConversionHost, tk: &TypeKey) -> Option<&'a Conversion> {
    shared.conversions().iter().find(|c| {
        c.storage.group == tk.group
            && c.storage.plural == tk.plural
            && c.others.contains(&tk.version)
    })
}

/// Objects converted for lists, as kube-apiserver's watch cache of a non-storage version
/// holds them: each stored object converted once per version and resourceVersion, so a
/// list (or the next) calls the webhook only for what changed since.
#[derive(Default)]
pub(crate) struct Converted {
    objects: Mutex<HashMap<CacheKey, (String, Value)>>,
    /// Held by a watch while it looks an object up and converts it, so that N watchers of
    /// one event make one review, as the real server's one cache does.
    converting: Mutex<()>,
    /// Versions (storage group, plural, desired apiVersion) whose watch met an object the
    /// webhook could not convert: as the real server's cache of that version, they answer
    /// watches with 429 until a whole list converts again (no reconnect storm).
    broken: Mutex<std::collections::HashSet<(String, String, String)>>,
}

/// (storage group, plural, desired apiVersion, namespace/name); the value is the stored
/// resourceVersion converted and the converted object.
type CacheKey = (String, String, String, String);

/// Go's `GroupVersionKind.String()` of an object: `group/version, Kind=kind`.
fn gvk_of(o: &Value) -> String {
    let api_version = o["apiVersion"].as_str().unwrap_or("");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    format!(
        "{group}/{version}, Kind={}",
        o["kind"].as_str().unwrap_or("")
    )
}

/// A failed conversion, as kube-apiserver answers a read or write that needed it: a 500
/// with neither reason nor details.
fn conversion_error(message: String) -> Status {
    Status::failure(500, "", message)
}

/// Converts one object to `desired` (`group/version`) through the CRD's webhook, one object
/// per review as kube-apiserver sends them, and checks the answer as it does: the uid
/// echoed, `Success`, one object of the desired version, with the same kind, name,
/// namespace and uid; of the converted metadata only labels and annotations are taken.
fn convert_one(
    shared: &impl ConversionHost,
    c: &Conversion,
    object: Value,
    desired: &str,
) -> Result<Value, Status> {
    let source = gvk_of(&object);
    let failed =
        |why: String| conversion_error(format!("conversion webhook for {source} failed: {why}"));
    let uid = super::webhooks::review_uid();
    // Sent without its resourceVersion, as the real server sends it (given back after).
    let mut sent = object.clone();
    if let Some(m) = sent.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    let review = json!({
        "kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [sent]},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
    });
    let answer = super::webhooks::post(shared, &c.client_config, &review, 30).map_err(failed)?;
    let response = &answer["response"];
    let got_uid = response["uid"].as_str().unwrap_or("");
    if got_uid != uid {
        return Err(failed(format!(
            "expected response.uid={}, got {}",
            Value::from(uid.as_str()),
            Value::from(got_uid)
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
    if converted.len() != 1 {
        return Err(failed(format!(
            "expected 1 converted objects, got {}",
            converted.len()
        )));
    }
    let mut out = converted.into_iter().next().unwrap_or_default();
    let original = &object;
    if out["apiVersion"] != desired {
        return Err(failed(format!(
            "invalid converted object at index 0: invalid apiVersion {}, expected {}",
            Value::from(out["apiVersion"].as_str().unwrap_or("")),
            Value::from(desired)
        )));
    }
    let invalid = |why: String| {
        conversion_error(format!(
            "conversion webhook for {source} returned invalid object: {why}"
        ))
    };
    let field = |o: &Value, p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    for (what, pointer) in [
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
        ("UID", "/metadata/uid"),
    ] {
        let (e, a) = (field(original, pointer), field(&out, pointer));
        if e != a {
            return Err(invalid(format!("must have the same {what}: {e} != {a}")));
        }
    }
    // The original metadata, with the converter's labels and annotations.
    let mut meta = original["metadata"].clone();
    if let Some(m) = meta.as_object_mut() {
        for key in ["labels", "annotations"] {
            match out
                .pointer(&format!("/metadata/{key}"))
                .filter(|v| !v.is_null())
            {
                Some(v) => {
                    m.insert(key.into(), v.clone());
                }
                None => {
                    m.remove(key);
                }
            }
        }
    }
    out["metadata"] = meta;
    Ok(out)
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
    shared: &impl ConversionHost,
) -> Option<Outcome> {
    let c = conversion_of(shared, tk)?;
    let storage = TypeKey::of(&c.storage);
    let desired = tk.api_version();
    let answer = match (req.method.as_str(), name, subresource) {
        ("GET", Some(n), None) => get(shared, c, &storage, namespace, n, &desired),
        ("GET", None, None) if req.flag("watch") => {
            match rebuilt(req, shared, c, &storage, &desired) {
                Ok(()) => return Some(watch(req, shared, c, &storage, namespace, &desired, peer)),
                Err(st) => Err(st),
            }
        }
        ("GET", None, None) => list(req, shared, c, &storage, namespace, &desired),
        ("PATCH", Some(n), None) => patch(req, shared, c, &storage, namespace, n, None, &desired),
        ("POST", None, None) | ("PUT", Some(_), None) | ("DELETE", Some(_), None) => {
            write(req, shared, c, &storage, namespace, name, None, &desired)
        }
        // `/status` in another version: as the object itself, when the CRD has it.
        (_, Some(_), Some("status"))
            if !shared
                .store
                .lock()
                .collection(&storage)
                .info
                .subresources
                .status =>
        {
            Err(Status::failure(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ))
        }
        ("GET", Some(n), Some("status")) => get(shared, c, &storage, namespace, n, &desired),
        ("PUT", Some(_), Some("status")) => {
            write(req, shared, c, &storage, namespace, name, Some("status"), &desired)
        }
        ("PATCH", Some(n), Some("status")) => {
            patch(req, shared, c, &storage, namespace, n, Some("status"), &desired)
        }
        _ => Err(Status::failure(
            405,
            "MethodNotAllowed",
            format!(
                "the test server converts {} {desired} only for get, list, create, update and delete (no apply or scale)",
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
        Err(st) => {
            let retry = st
                .details
                .as_ref()
                .and_then(|d| d.retry_after_seconds)
                .map(|s| ("Retry-After", s.to_string()));
            outcome(write_status(peer, &st, retry.as_slice()))
        }
    })
}

type Answer = (u16, String, Vec<String>);

fn get(
    shared: &impl ConversionHost,
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
    let out = convert_one(shared, c, stored, desired)?;
    Ok((200, out.to_string(), Vec::new()))
}

/// A list in another version, from the objects converted once: paged (`limit`/`continue`,
/// a continued page read at its token's version as the stored version's pages are) and
/// filtered by label and field selectors on the converted objects, as kube-apiserver's
/// watch cache of that version filters them.
fn list(
    req: &Request,
    shared: &impl ConversionHost,
    c: &Conversion,
    storage: &TypeKey,
    namespace: Option<&str>,
    desired: &str,
) -> Result<Answer, Status> {
    let rv_text = req.param("resourceVersion").unwrap_or("");
    let rv_match = req.param("resourceVersionMatch").unwrap_or("");
    read_versions::validate_list(
        rv_text,
        rv_match,
        req.param("continue").is_some_and(|t| !t.is_empty()),
        req.param("sendInitialEvents").is_some(),
    )?;
    let filter = Filter::parse(req.param("labelSelector"), req.param("fieldSelector"))?;
    let mut limit: Option<usize> = match req.param("limit") {
        None | Some("") | Some("0") => None,
        Some(l) => Some(
            l.parse()
                .map_err(|_| Status::failure(400, "BadRequest", format!("invalid limit {l:?}")))?,
        ),
    };
    let token = match req.param("continue").filter(|t| !t.is_empty()) {
        Some(t) => Some(super::answers::decode_continue(t)?),
        None => None,
    };
    let (items, rv, whole) = {
        let mut store = shared.store.lock();
        let rv = match &token {
            Some(t) => u64::try_from(t.rv).map_err(|_| super::answers::continue_expired(t))?,
            None => {
                let asked = rv_text.parse::<u64>().ok();
                match read_versions::list_at(asked, rv_match, limit.is_some(), store.rv)? {
                    ListAt::Present { paged } => {
                        if !paged {
                            // `resourceVersion=0`: the cache's whole list, the limit ignored.
                            limit = None;
                        }
                        store.rv
                    }
                    ListAt::Exact(at) => at,
                }
            }
        };
        let whole = token.is_none() && limit.is_none() && rv == store.rv;
        let after = token
            .as_ref()
            .map(|t| t.start.trim_end_matches('\0').to_owned());
        let col = store.collection(storage);
        let Some((objects, _)) =
            col.list_page(rv, after.as_deref(), namespace, &|_| true, None, false)
        else {
            return Err(match &token {
                Some(t) => super::answers::continue_expired(t),
                None => read_versions::list_expired(),
            });
        };
        let items: Vec<(String, Stored, Value)> = objects
            .into_iter()
            .filter_map(|o| {
                let v = serde_json::from_str(&col.with_type_meta(&o.json)).ok()?;
                Some((format!("{}/{}", o.namespace, o.name), o, v))
            })
            .collect();
        (items, rv, whole)
    };
    let mut converted = Vec::new();
    let seen: std::collections::HashSet<String> = items.iter().map(|(k, _, _)| k.clone()).collect();
    let total = items.len();
    let mut next = None;
    for (i, (key, stored, object)) in items.into_iter().enumerate() {
        if limit.is_some_and(|l| converted.len() >= l) {
            // More objects follow the full page: the next page starts after the last one.
            next = Some(i);
            break;
        }
        let object_rv = stored.rv.to_string();
        let cache_key = (
            storage.group.clone(),
            storage.plural.clone(),
            desired.to_owned(),
            key,
        );
        let cached = shared
            .converted()
            .objects
            .lock()
            .get(&cache_key)
            .filter(|(at, _)| *at == object_rv)
            .map(|(_, o)| o.clone());
        let item = match cached {
            Some(o) => o,
            None => {
                // The real server's cache of this version cannot fill: its lists answer
                // 429 until it can.
                let o = convert_one(shared, c, object, desired).map_err(|st| {
                    let (group, version) = desired.split_once('/').unwrap_or(("", desired));
                    let mut st = Status::failure(
                        429,
                        "TooManyRequests",
                        format!(
                            "storage is (re)initializing: failed to list {group}/{version}, Kind={}: {}",
                            c.storage.kind, st.message
                        ),
                    );
                    st.details = Some(crate::api::StatusDetails {
                        retry_after_seconds: Some(1),
                        ..Default::default()
                    });
                    st
                })?;
                let mut cache = shared.converted().objects.lock();
                // A page read at an older version never replaces a newer conversion.
                if cache
                    .get(&cache_key)
                    .is_none_or(|(at, _)| at.parse::<u64>().unwrap_or(0) <= stored.rv)
                {
                    cache.insert(cache_key, (object_rv, o.clone()));
                }
                o
            }
        };
        // Selectors see the converted object: its labels may be the converter's.
        let as_converted = StoredObject {
            rv: stored.rv,
            namespace: stored.namespace.clone(),
            name: stored.name.clone(),
            json: stored.json.clone(),
            labels: serde_json::from_value(item["metadata"]["labels"].clone()).unwrap_or_default(),
            encoded: Default::default(),
        };
        if filter.matches(&as_converted) {
            converted.push((stored, item));
        }
    }
    if whole {
        // Forget what is no longer stored (bounded by the collection).
        let prefix = namespace.map(|ns| format!("{ns}/"));
        let mut cache = shared.converted().objects.lock();
        cache.retain(|(group, plural, version, key), _| {
            !(group == &storage.group
                && plural == &storage.plural
                && version == desired
                && prefix.as_deref().is_none_or(|p| key.starts_with(p))
                && !seen.contains(key))
        });
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    match (next, converted.last()) {
        (Some(i), Some((last, _))) => {
            let key = if last.namespace.is_empty() {
                last.name.clone()
            } else {
                format!("{}/{}", last.namespace, last.name)
            };
            meta["continue"] = json!(super::answers::encode_continue(
                rv as i64,
                &format!("{key}\0")
            ));
            if filter.is_empty() {
                meta["remainingItemCount"] = json!(total - i);
            }
        }
        _ => meta["continue"] = json!(""),
    }
    let items: Vec<Value> = converted.into_iter().map(|(_, o)| o).collect();
    let body = json!({
        "apiVersion": desired,
        "kind": format!("{}List", c.storage.kind),
        "metadata": meta,
        "items": items,
    });
    Ok((200, body.to_string(), Vec::new()))
}

#[allow(clippy::too_many_arguments)] // the request's parts, as `handle` got them
fn write(
    req: &Request,
    shared: &impl ConversionHost,
    c: &Conversion,
    storage: &TypeKey,
    namespace: Option<&str>,
    name: Option<&str>,
    subresource: Option<&str>,
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
        let converted = convert_one(shared, c, object, &storage.api_version())?;
        body = converted.to_string().into_bytes();
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
        subresource,
    };
    let answer = writes::write(&forwarded, &address, shared)?;
    shared.notify();
    let mut out: Value = serde_json::from_str(&answer.body).unwrap_or_default();
    if out["kind"] == c.storage.kind.as_str() {
        out = convert_one(shared, c, out, desired)?;
    }
    Ok((answer.code, out.to_string(), answer.warnings))
}

/// After a watch met an object it could not convert, the version's cache is rebuilt by
/// converting every stored object (a whole list) before a watch is served again; while
/// that fails, the watch is the list's 429 `storage is (re)initializing` (`Retry-After: 1`).
fn rebuilt(
    req: &Request,
    shared: &impl ConversionHost,
    c: &Conversion,
    storage: &TypeKey,
    desired: &str,
) -> Result<(), Status> {
    let key = (
        storage.group.clone(),
        storage.plural.clone(),
        desired.to_owned(),
    );
    if !shared.converted().broken.lock().contains(&key) {
        return Ok(());
    }
    let whole = Request {
        method: "GET".into(),
        path: req.path.clone(),
        query: HashMap::new(),
        query_pairs: Vec::new(),
        headers: HashMap::new(),
        header_list: Vec::new(),
        body: Vec::new(),
    };
    list(&whole, shared, c, storage, None, desired)?;
    shared.converted().broken.lock().remove(&key);
    Ok(())
}

/// A watch in another version: the stored version's watch, each object converted once per
/// resourceVersion (the converted object is shared with lists and other watchers through
/// [`Converted`], as the real server's watch cache of that version holds it). BOOKMARKs carry
/// only a resourceVersion and are not converted.
///
/// An object the webhook cannot convert ends the stream without an ERROR event: in
/// kube-apiserver the version's watch cache fails to decode the event, its reflector
/// restarts and the cacher terminates every watcher it serves, whose streams end as a
/// timeout ends them; the client's next list or watch then finds the cache re-initializing
/// (the list's 429, see [`rebuilt`]).
fn watch<S: Peer>(
    req: &Request,
    shared: &impl ConversionHost,
    c: &Conversion,
    storage: &TypeKey,
    namespace: Option<&str>,
    desired: &str,
    peer: &mut S,
) -> Outcome {
    let storage_version = storage.api_version();
    let convert = |json: &str| -> Option<String> {
        let mut object: Value = serde_json::from_str(json).ok()?;
        let map = object.as_object_mut()?;
        map.insert("apiVersion".into(), storage_version.as_str().into());
        map.insert("kind".into(), c.storage.kind.as_str().into());
        let meta = |k: &str| {
            object
                .pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let object_rv = meta("resourceVersion");
        let key = format!("{}/{}", meta("namespace"), meta("name"));
        let cache_key = (
            storage.group.clone(),
            storage.plural.clone(),
            desired.to_owned(),
            key,
        );
        let _one_at_a_time = shared.converted().converting.lock();
        let cached = shared
            .converted()
            .objects
            .lock()
            .get(&cache_key)
            .filter(|(at, _)| *at == object_rv)
            .map(|(_, o)| o.clone());
        let mut out = match cached {
            Some(o) => o,
            None => {
                let Ok(o) = convert_one(shared, c, object, desired) else {
                    shared.converted().broken.lock().insert((
                        storage.group.clone(),
                        storage.plural.clone(),
                        desired.to_owned(),
                    ));
                    return None;
                };
                let mut cache = shared.converted().objects.lock();
                // A watcher behind the others never replaces a newer conversion.
                let newer = cache.get(&cache_key).is_some_and(|(at, _)| {
                    at.parse::<u64>().unwrap_or(0) > object_rv.parse::<u64>().unwrap_or(0)
                });
                if !newer {
                    cache.insert(cache_key, (object_rv, o.clone()));
                }
                o
            }
        };
        // The event line puts `kind` and `apiVersion` first itself.
        let map = out.as_object_mut()?;
        map.remove("kind");
        map.remove("apiVersion");
        Some(out.to_string())
    };
    shared.watch_converted(req, storage, namespace, desired, &convert, peer)
}

/// A JSON or merge patch in another version (of the object or its `/status`), as
/// kube-apiserver applies it: the stored
/// object converted to the version patched, the patch applied there, the result converted
/// back to the storage version and written as an update (admission, managed fields and
/// preconditions as a write of the stored version; a `resourceVersion` in the patch is a
/// precondition), the answer converted to the version patched. A write between the read
/// and the update is retried, as the real server's update loop retries it. Server-side
/// apply in another version is not imitated (405).
#[allow(clippy::too_many_arguments)] // the request's parts, as `handle` got them
fn patch(
    req: &Request,
    shared: &impl ConversionHost,
    c: &Conversion,
    storage: &TypeKey,
    namespace: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    desired: &str,
) -> Result<Answer, Status> {
    use crate::testing::writing::patch::{patch_type, patched, PatchType};
    let ty = patch_type(req.header("content-type").unwrap_or(""), false)?;
    if ty == PatchType::Apply {
        return Err(Status::failure(
            405,
            "MethodNotAllowed",
            format!(
                "the test server does not apply {} {desired} in a version other than the stored one",
                c.storage.plural
            ),
        ));
    }
    let mut attempts = 0;
    loop {
        attempts += 1;
        let stored: Value = {
            let mut store = shared.store.lock();
            let o = store.get(storage, namespace, name)?;
            serde_json::from_str(&store.collection(storage).with_type_meta(&o.json))
                .unwrap_or_default()
        };
        let read_rv = stored["metadata"]["resourceVersion"].clone();
        let current = convert_one(shared, c, stored, desired)?;
        let mut object = patched(ty, &current, &req.body)?;
        // The patch's own resourceVersion is a precondition; without one, the version read.
        let pinned = object["metadata"]["resourceVersion"] != read_rv;
        if let Some(m) = object.as_object_mut() {
            m.insert("apiVersion".into(), desired.into());
            m.insert("kind".into(), c.storage.kind.clone().into());
        }
        let back = convert_one(shared, c, object, &storage.api_version())?;
        let mut headers = req.headers.clone();
        headers.insert("content-type".into(), "application/json".into());
        let mut header_list: Vec<(String, String)> = req
            .header_list
            .iter()
            .filter(|(k, _)| k != "content-type")
            .cloned()
            .collect();
        header_list.push(("content-type".into(), "application/json".into()));
        let forwarded = Request {
            method: "PUT".into(),
            path: req.path.clone(),
            query: req.query.clone(),
            query_pairs: req.query_pairs.clone(),
            headers,
            header_list,
            body: back.to_string().into_bytes(),
        };
        let address = writes::Address {
            tk: storage,
            namespace,
            name: Some(name),
            subresource,
        };
        let answer = match writes::write(&forwarded, &address, shared) {
            Err(st) if st.code == 409 && !pinned && attempts < 5 => continue,
            other => other?,
        };
        shared.notify();
        let mut out: Value = serde_json::from_str(&answer.body).unwrap_or_default();
        if out["kind"] == c.storage.kind.as_str() {
            out = convert_one(shared, c, out, desired)?;
        }
        return Ok((answer.code, out.to_string(), answer.warnings));
    }
}
