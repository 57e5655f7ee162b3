//! PATCH dispatch: which patch types a resource accepts (the `Content-Type` of the request)
//! and how each one turns the current object into the patched one.
//!
//! This is the one place a patch body is interpreted; the handlers do the rest of a PATCH
//! (404 for a missing object, subresources, options) and hand the result to the store like a
//! PUT. JSON merge patch (RFC 7386) lives here; JSON patch, strategic merge patch and
//! server-side apply plug into [`patched`].

use serde_json::{Map, Value};

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

/// The current object (`kind`/`apiVersion` included) with the patch `body` applied.
pub(crate) fn patched(ty: PatchType, current: &Value, body: &[u8]) -> Result<Value, Status> {
    match ty {
        PatchType::Merge => {
            let patch: Value = serde_json::from_slice(body).map_err(|e| {
                Status::failure(400, "BadRequest", format!("error decoding patch: {e}"))
            })?;
            let mut doc = current.clone();
            merge_patch(&mut doc, &patch);
            Ok(doc)
        }
        PatchType::Json | PatchType::Strategic | PatchType::Apply => Err(Status::failure(
            415,
            "UnsupportedMediaType",
            format!("the test API server does not support {ty:?} patches yet"),
        )),
    }
}

/// RFC 7386 JSON merge patch: objects merge key by key, `null` deletes, anything else
/// (lists included) replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
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
