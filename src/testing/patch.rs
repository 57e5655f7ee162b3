//! The PATCH verb of the test API server: the four patch types by `Content-Type`, and the
//! managed-fields bookkeeping every write goes through.
//!
//! | Content-Type | what | failures, as captured |
//! |---|---|---|
//! | `application/json-patch+json` | RFC 6902 ([`json_patch`](super::json_patch)) | not an array: 400; any failed op: one generic 422 with `details: {}` |
//! | `application/merge-patch+json` | RFC 7386: objects merged, `null` deletes, lists replaced | |
//! | `application/strategic-merge-patch+json` | [`strategic_merge`](super::strategic_merge), built-in resources only | custom resource: 415 |
//! | `application/apply-patch+yaml` | server-side apply ([`apply`](super::apply)) | see there |
//! | anything else (`application/json` too) | | 415 `415: Unsupported Media Type` |
//!
//! A patch of a missing object is a 404 (only apply creates). A patch that leaves
//! `metadata.resourceVersion` as it was applies to whatever is current; one that changes it
//! is a precondition (409 when it is not the current version).
//!
//! Namespaces: an apply into a namespace the server does not know is a 404
//! (`namespaces "x" not found`) — but only once the server holds at least one core
//! `Namespace` object; a server without any accepts every namespace (a simplification: the
//! test server does not make you create namespaces first).

use serde_json::Value;

use super::apply::{self, Applied, ApplyRequest};
use super::http::Request;
use super::json_patch::{self, PatchError};
use super::managed_fields::{manager_of, record_update, Schema, Writer};
use super::store::{not_found, object_status, rfc3339_now, Store, Stored, TypeKey};
use super::strategic_merge::{self, is_builtin_group};
use crate::api::{Status, StatusDetails};

/// Who is writing, for a request to `tk` (through `subresource`, `""` for the main one).
pub(crate) fn writer_for(req: &Request, tk: &TypeKey, subresource: &str) -> Writer {
    Writer {
        manager: manager_of(req.param("fieldManager"), req.header("user-agent")),
        subresource: subresource.to_owned(),
        api_version: tk.api_version(),
        schema: Schema {
            builtin: is_builtin_group(&tk.group),
        },
        time: rfc3339_now(),
    }
}

/// The managed-fields hook of a non-apply write: records `new` over `old` (`None` for a
/// create) as an `Update` by the request's manager.
pub(crate) fn record_write(req: &Request, tk: &TypeKey, old: Option<&str>, new: &mut Value) {
    let old: Option<Value> = old.and_then(|j| serde_json::from_str(j).ok());
    record_update(old.as_ref(), new, &writer_for(req, tk, ""));
}

fn unsupported_media_type() -> Status {
    let mut st = Status::failure(415, "UnsupportedMediaType", "415: Unsupported Media Type");
    st.details = Some(StatusDetails::default());
    st
}

fn rejected() -> Status {
    let mut st = Status::failure(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    );
    st.details = Some(StatusDetails::default());
    st
}

fn decode_json(body: &[u8]) -> Result<Value, Status> {
    serde_json::from_slice(body)
        .map_err(|e| Status::failure(400, "BadRequest", format!("error decoding patch: {e}")))
}

/// The patch types, by Content-Type (parameters and case ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

fn patch_type(content_type: &str) -> Option<PatchType> {
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    Some(match ct.as_str() {
        "application/json-patch+json" => PatchType::Json,
        "application/merge-patch+json" => PatchType::Merge,
        "application/strategic-merge-patch+json" => PatchType::Strategic,
        "application/apply-patch+yaml" => PatchType::Apply,
        _ => return None,
    })
}

/// Answers a PATCH of `name`: the stored object and the HTTP code (201 when apply created it).
pub(crate) fn patch(
    req: &Request,
    tk: &TypeKey,
    ns: Option<&str>,
    name: &str,
    subresource: &str,
    store: &mut Store,
) -> Result<(Stored, u16), Status> {
    let ty =
        patch_type(req.header("content-type").unwrap_or("")).ok_or_else(unsupported_media_type)?;
    if ty == PatchType::Strategic && !is_builtin_group(&tk.group) {
        return Err(Status::failure(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    let current = store.get(tk, ns, name).ok();
    if ty == PatchType::Apply {
        return apply_patch(req, tk, ns, name, subresource, store, current);
    }
    let Some(current) = current else {
        return Err(not_found(tk, name));
    };
    let mut old: Value = serde_json::from_str(&current.json).unwrap_or_default();
    // Patches see the object as clients do, with its type.
    let kind = store.collection(tk).kind.clone();
    if let Value::Object(m) = &mut old {
        m.insert("kind".into(), kind.into());
        m.insert("apiVersion".into(), tk.api_version().into());
    }
    let mut new = match ty {
        PatchType::Json => {
            let ops = decode_json(&req.body)?;
            json_patch::apply(&old, &ops).map_err(|e| match e {
                PatchError::NotArray(t) => Status::failure(
                    400,
                    "BadRequest",
                    format!("error decoding patch: json: cannot unmarshal {t} into Go value of type []handlers.jsonPatchOp"),
                ),
                PatchError::Rejected(_) => rejected(),
            })?
        }
        PatchType::Merge => {
            let p = decode_json(&req.body)?;
            if !p.is_object() {
                return Err(Status::failure(
                    400,
                    "BadRequest",
                    "error decoding patch: a merge patch must be a JSON object",
                ));
            }
            let mut doc = old.clone();
            merge_patch(&mut doc, &p);
            doc
        }
        PatchType::Strategic => {
            let p = decode_json(&req.body)?;
            strategic_merge::apply(&old, &p).map_err(|e| Status::failure(400, "BadRequest", e.0))?
        }
        PatchType::Apply => unreachable!("handled above"),
    };
    if !new.is_object() {
        return Err(rejected());
    }
    // An unchanged resourceVersion is no precondition.
    if new.pointer("/metadata/resourceVersion") == old.pointer("/metadata/resourceVersion") {
        if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
    }
    record_update(Some(&old), &mut new, &writer_for(req, tk, subresource));
    let stored = store.update(tk, ns, name, new)?;
    Ok((stored, 200))
}

fn apply_patch(
    req: &Request,
    tk: &TypeKey,
    ns: Option<&str>,
    name: &str,
    subresource: &str,
    store: &mut Store,
    current: Option<Stored>,
) -> Result<(Stored, u16), Status> {
    if let Some(ns) = ns {
        namespace_exists(store, ns)?;
    }
    let kind = store.collection(tk).kind.clone();
    let mut writer = writer_for(req, tk, subresource);
    if let Some(m) = req.param("fieldManager") {
        writer.manager = m.to_owned();
    }
    let areq = ApplyRequest {
        field_manager: req.param("fieldManager"),
        force: req.flag("force"),
        name,
        namespace: ns,
        kind: &kind,
        writer,
    };
    let live: Option<Value> = current
        .as_ref()
        .and_then(|c| serde_json::from_str(&c.json).ok());
    match apply::apply(live.as_ref(), &req.body, &areq)? {
        Applied::Create(obj) => {
            if !subresource.is_empty() {
                return Err(not_found(tk, name));
            }
            Ok((store.create(tk, ns, obj)?, 201))
        }
        Applied::Update(mut obj) => {
            if obj.pointer("/metadata/resourceVersion")
                == live
                    .as_ref()
                    .and_then(|l| l.pointer("/metadata/resourceVersion"))
            {
                if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("resourceVersion");
                }
            }
            Ok((store.update(tk, ns, name, obj)?, 200))
        }
    }
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

/// RFC 7386 JSON merge patch.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types() {
        assert_eq!(
            patch_type("application/json-patch+json"),
            Some(PatchType::Json)
        );
        assert_eq!(
            patch_type("Application/Merge-Patch+JSON; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(
            patch_type("application/strategic-merge-patch+json"),
            Some(PatchType::Strategic)
        );
        assert_eq!(
            patch_type("application/apply-patch+yaml"),
            Some(PatchType::Apply)
        );
        assert_eq!(patch_type("application/json"), None);
        assert_eq!(patch_type(""), None);
    }

    #[test]
    fn merge_patch_deletes_with_null_and_replaces_lists() {
        let mut doc = json!({"data": {"size": "1", "mode": "x"}, "l": [1, 2], "keep": true});
        merge_patch(
            &mut doc,
            &json!({"data": {"size": null, "new": "y"}, "l": [3], "n": {"a": null}}),
        );
        assert_eq!(
            doc,
            json!({"data": {"mode": "x", "new": "y"}, "l": [3], "keep": true, "n": {}})
        );
    }
}
