//! PATCH: which patch types a resource accepts (the `Content-Type` of the request) and how
//! each one turns the current object into the patched one.
//!
//! | Content-Type | what | failures, as captured |
//! |---|---|---|
//! | `application/json-patch+json` | RFC 6902 ([`json_patch`](super::json_patch)) | not an array: 400; any failed operation: one generic 422 with `details: {}` |
//! | `application/merge-patch+json` | RFC 7386: objects merged, `null` deletes, lists replaced | |
//! | `application/strategic-merge-patch+json` | [`strategic_merge`](super::strategic_merge), built-in resources only | custom resource: 415 |
//! | `application/apply-patch+yaml` | server-side apply ([`apply`](super::apply)): [`apply_patch`] | see there |
//! | `application/json` | | 415 `415: Unsupported Media Type` |
//!
//! The handlers do the rest of a PATCH (404 for a missing object, subresources, options) and
//! hand the result to the store like a PUT; apply, which can create, goes through
//! [`apply_patch`] instead.
//!
//! Namespaces: an apply into a namespace the server does not know is a 404
//! (`namespaces "x" not found`), but only once the server holds at least one core
//! `Namespace` object; a server without any accepts every namespace (a simplification: the
//! test server does not make you create namespaces first).

use serde_json::{Map, Value};

use super::apply::{self, Applied, ApplyRequest};
use super::http::Request;
use super::json_patch::{self, PatchError};
use super::merge_patch::merge_patch;
use super::store::{not_found, object_status, writer, Store, TypeKey, WriteOptions, Written};
use super::strategic_merge;
use crate::api::{Status, StatusDetails};

/// The kinds of patch an API server knows, by `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// `application/merge-patch+json`
    Merge,
    /// `application/json-patch+json`
    Json,
    /// `application/strategic-merge-patch+json` (built-in resources only)
    Strategic,
    /// `application/apply-patch+yaml`
    Apply,
}

/// The patch type of a request, or the 415 the real server answers for a type it does not
/// accept on this resource (as captured: `application/json` gets a bare `415: Unsupported
/// Media Type`; strategic merge on a custom resource and anything unknown get the list of
/// accepted types).
pub(crate) fn patch_type(content_type: &str, builtin: bool) -> Result<PatchType, Status> {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        "application/strategic-merge-patch+json" if builtin => Ok(PatchType::Strategic),
        "application/json" | "" => {
            let mut st =
                Status::failure(415, "UnsupportedMediaType", "415: Unsupported Media Type");
            st.details = Some(StatusDetails::default());
            Err(st)
        }
        _ => {
            let accepted = if builtin {
                "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
            } else {
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
            };
            Err(Status::failure(
                415,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
            ))
        }
    }
}

fn decode_patch(body: &[u8]) -> Result<Value, Status> {
    serde_json::from_slice(body)
        .map_err(|e| Status::failure(400, "BadRequest", format!("error decoding patch: {e}")))
}

/// The generic 422 of a JSON patch operation that failed.
fn rejected() -> Status {
    let mut st = Status::failure(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    );
    st.details = Some(StatusDetails::default());
    st
}

/// The current object (`kind`/`apiVersion` included) with the patch `body` applied
/// (every type but apply, which [`apply_patch`] handles).
pub(crate) fn patched(ty: PatchType, current: &Value, body: &[u8]) -> Result<Value, Status> {
    let out = match ty {
        PatchType::Merge => {
            let patch = decode_patch(body)?;
            let mut doc = current.clone();
            merge_patch(&mut doc, &patch);
            doc
        }
        PatchType::Json => {
            let ops = decode_patch(body)?;
            json_patch::apply(current, &ops).map_err(|e| match e {
                PatchError::NotArray(t) => Status::failure(
                    400,
                    "BadRequest",
                    format!("error decoding patch: json: cannot unmarshal {t} into Go value of type []handlers.jsonPatchOp"),
                ),
                PatchError::Rejected(_) => rejected(),
            })?
        }
        PatchType::Strategic => {
            let patch = decode_patch(body)?;
            strategic_merge::apply(current, &patch)
                .map_err(|e| Status::failure(400, "BadRequest", e.0))?
        }
        PatchType::Apply => {
            return Err(Status::failure(
                500,
                "InternalError",
                "apply goes through apply_patch",
            ))
        }
    };
    if out.is_object() {
        Ok(out)
    } else {
        Err(rejected())
    }
}

/// Server-side apply of `req`'s body to `name`: created (201) when missing, else merged
/// (200); `o` are the request's write options.
pub(crate) fn apply_patch(
    req: &Request,
    store: &mut Store,
    tk: &TypeKey,
    ns: Option<&str>,
    name: &str,
    o: &WriteOptions,
) -> Result<(Written, u16), Status> {
    if let Some(ns) = ns {
        namespace_exists(store, ns)?;
    }
    let (info, builtin, status_subresource) = {
        let c = store.collection(tk);
        (c.info.clone(), c.info.builtin, c.info.subresources.status)
    };
    let unknown_fields = |m: &Map<String, Value>| info.unknown_fields(&mut m.clone(), false);
    let field_manager = req.param("fieldManager");
    let areq = ApplyRequest {
        field_manager,
        force: req.flag("force"),
        name,
        namespace: ns,
        unknown_fields: &unknown_fields,
        status_subresource,
        writer: {
            let mut w = writer(tk, builtin, o, field_manager.unwrap_or(""));
            // A custom resource's list and map types (see `managed_fields.rs`).
            w.schema.crd = info.schema.clone().map(std::sync::Arc::new);
            w
        },
    };
    let current = store.get(tk, ns, name).ok();
    // The live object as a read decodes it: defaulted (see `crd_defaults.rs`).
    let live: Option<Value> = current.as_ref().and_then(|c| {
        let defaulted = store.collection(tk).defaulted(&c.json);
        serde_json::from_str(defaulted.as_deref().unwrap_or(&c.json)).ok()
    });
    let applied = apply::apply(live.as_ref(), &req.body, &areq)?;
    // The apply computed the managed fields itself: the store takes them as they are.
    let (obj, created) = match applied {
        Applied::Create(obj) => (obj, true),
        Applied::Update(obj) => (obj, false),
    };
    // A CustomResourceDefinition is checked, and served once stored (see `crd.rs`).
    let mut obj = obj;
    let crd = match &o.subresource {
        None => super::writes::learn(tk, &mut obj)?,
        Some(_) => None,
    };
    if let (Some(d), true) = (&crd, created) {
        super::crd_lifecycle::initial_status(&mut obj, d);
    }
    let mut o = o.clone();
    o.field_manager = None;
    o.managed_fields = Some(
        obj.pointer("/metadata/managedFields")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    );
    let written = if created {
        if o.subresource.is_some() {
            return Err(not_found(tk, name));
        }
        (store.create_with(tk, ns, obj, &o)?, 201)
    } else {
        (store.update_with(tk, ns, name, obj, &o)?, 200)
    };
    if let (Some(d), false) = (crd, o.dry_run) {
        super::crd::serve(store, &d);
        super::crd_lifecycle::establish(store, tk, name);
    }
    Ok(written)
}

/// 404 for a namespace the server does not hold, once it holds any (see the module docs).
fn namespace_exists(store: &mut Store, ns: &str) -> Result<(), Status> {
    let namespaces = TypeKey {
        group: String::new(),
        version: "v1".into(),
        plural: "namespaces".into(),
    };
    let Some(c) = store.collections.get(&namespaces) else {
        return Ok(());
    };
    if c.objects.is_empty() || c.objects.contains_key(ns) {
        return Ok(());
    }
    Err(object_status(
        404,
        "NotFound",
        format!("namespaces \"{ns}\" not found"),
        "namespaces",
        ns,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types() {
        assert_eq!(
            patch_type("application/merge-patch+json; charset=utf-8", false),
            Ok(PatchType::Merge)
        );
        assert_eq!(patch_type("application/json", true).unwrap_err().code, 415);
        let e = patch_type("application/strategic-merge-patch+json", false).unwrap_err();
        assert!(e
            .message
            .ends_with("application/merge-patch+json, application/apply-patch+yaml"));
        assert_eq!(
            patch_type("application/strategic-merge-patch+json", true),
            Ok(PatchType::Strategic)
        );
    }

    #[test]
    fn merge_deletes_with_null_and_replaces_lists() {
        let cur = json!({"data": {"a": "1", "b": "2"}, "l": [1, 2]});
        let out = patched(
            PatchType::Merge,
            &cur,
            br#"{"data":{"a":null,"c":"3"},"l":[3]}"#,
        )
        .unwrap();
        assert_eq!(out, json!({"data": {"b": "2", "c": "3"}, "l": [3]}));
    }
}
