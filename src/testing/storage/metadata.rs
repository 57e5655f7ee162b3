//! Metadata-only answers: the test server's side of `Accept: application/json;as=...`.
//!
//! Why: metadata-only informers ask the API server to send `PartialObjectMetadata` instead of
//! the full objects, with parameters on the JSON media type in `Accept`. This file reads that
//! header and turns stored objects into the metadata form, as the captures in
//! `tests/fixtures/apiserver` show a v1.36 server doing:
//! - `as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` (or `v1beta1`) on a list: a
//!   `PartialObjectMetadataList` whose items are `PartialObjectMetadata` (kind, apiVersion and
//!   the whole `metadata`, `managedFields` included; no `spec`, no `status`);
//! - `as=PartialObjectMetadata;...` on a single GET or a watch (streaming lists included): the
//!   object, every event's object and every BOOKMARK in that form;
//! - the Content-Type stays plain `application/json`;
//! - the first media range the server can serve wins, so `...,application/json` after an
//!   unknown `as=` falls back to the full object;
//! - nothing acceptable: 406 `NotAcceptable`, and a list asked for the singular
//!   `PartialObjectMetadata`: 406 naming the list type; both bodies pretty-printed.
//!
//! Limits (not captured, our own reading of the server): a single GET or a watch asked for
//! `PartialObjectMetadataList` gets a 406 of the same shape; `application/yaml` and protobuf
//! are never served (skipped as if unknown); the transform re-reads each object's JSON to cut
//! out its `metadata`, so a metadata-only answer costs the server more than a full one.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::api::Status;

/// What one request is answered with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// The objects as stored.
    Full,
    /// `PartialObjectMetadata` in `meta.k8s.io/<version>`.
    Metadata { version: String },
}

/// The `kind`/`apiVersion` values (JSON-quoted) of a metadata-only single object or list.
impl Form {
    pub(crate) fn api_version(version: &str) -> String {
        Value::from(format!("meta.k8s.io/{version}")).to_string()
    }
}

/// A 406 with its body as the server writes it (pretty-printed, no trailing newline).
pub(crate) struct NotAcceptable(pub Status);

impl NotAcceptable {
    fn new(message: String) -> Self {
        NotAcceptable(Status::failure(406, "NotAcceptable", message))
    }

    /// The body as captured: indented by two spaces, in the server's field order.
    pub(crate) fn body(&self) -> String {
        format!(
            "{{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {{}},\n  \"status\": \"Failure\",\n  \"message\": {},\n  \"reason\": \"NotAcceptable\",\n  \"code\": 406\n}}",
            Value::from(self.0.message.as_str())
        )
    }
}

const UNKNOWN_MEDIA: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// Picks the answer's form from `Accept`. `list`: the request reads a collection (a list, not
/// a watch); `go_type`: the server's type name for the object (`*core.Pod`), with `List`
/// appended for a list.
pub(crate) fn negotiate(
    accept: Option<&str>,
    list: bool,
    go_type: &str,
) -> Result<Form, NotAcceptable> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Form::Full);
    };
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        if !matches!(media.as_str(), "application/json" | "application/*" | "*/*") {
            continue;
        }
        let (mut as_, mut g, mut v) = (None, None, None);
        for p in parts {
            let Some((k, val)) = p.split_once('=') else {
                continue;
            };
            let val = val.trim().trim_matches('"');
            match k.trim() {
                "as" => as_ = Some(val),
                "g" => g = Some(val),
                "v" => v = Some(val),
                _ => {}
            }
        }
        let Some(as_) = as_ else {
            return Ok(Form::Full);
        };
        let version = match (g, v) {
            (Some("meta.k8s.io"), Some(v @ ("v1" | "v1beta1"))) => v,
            _ => continue,
        };
        return match (as_, list) {
            ("PartialObjectMetadataList", true) | ("PartialObjectMetadata", false) => {
                Ok(Form::Metadata {
                    version: version.to_owned(),
                })
            }
            ("PartialObjectMetadata", true) => Err(NotAcceptable::new(format!(
                "you requested PartialObjectMetadata, but the requested object is a list ({go_type}List)"
            ))),
            ("PartialObjectMetadataList", false) => Err(NotAcceptable::new(format!(
                "you requested PartialObjectMetadataList, but the requested object is not a list ({go_type})"
            ))),
            _ => continue,
        };
    }
    Err(NotAcceptable::new(UNKNOWN_MEDIA.to_owned()))
}

/// The server's Go type name for one object of `kind`: `*core.Pod` for built-in kinds
/// (whatever their group: the captures show only core ones), `*unstructured.Unstructured` for
/// custom resources.
pub(crate) fn go_type(kind: &str, builtin: bool) -> String {
    if builtin {
        format!("*core.{kind}")
    } else {
        "*unstructured.Unstructured".to_owned()
    }
}

#[derive(Deserialize)]
struct MetadataOf<'a> {
    #[serde(borrow)]
    metadata: Option<&'a RawValue>,
}

/// `{"metadata":...}` cut from a stored object's JSON (the caller puts kind and apiVersion
/// in front); `{"metadata":{}}` if the object has none or does not parse.
pub(crate) fn metadata_only(json: &str) -> String {
    let meta = serde_json::from_str::<MetadataOf>(json)
        .ok()
        .and_then(|m| m.metadata)
        .map_or("{}", RawValue::get);
    format!("{{\"metadata\":{meta}}}")
}

/// A whole `PartialObjectMetadata` for a stored object's JSON.
pub(crate) fn partial_object(json: &str, version: &str) -> String {
    let rest = metadata_only(json);
    format!(
        "{{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":{},{}",
        Form::api_version(version),
        &rest[1..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

    fn v1() -> Form {
        Form::Metadata {
            version: "v1".into(),
        }
    }

    #[test]
    fn negotiates_as_the_captured_server_does() {
        assert_eq!(negotiate(None, true, "*core.Pod").ok(), Some(Form::Full));
        assert_eq!(
            negotiate(Some("application/json"), true, "").ok(),
            Some(Form::Full)
        );
        assert_eq!(negotiate(Some(META_LIST), true, "").ok(), Some(v1()));
        assert_eq!(negotiate(Some(META), false, "").ok(), Some(v1()));
        let fallback = format!("{META_LIST},application/json");
        assert_eq!(negotiate(Some(&fallback), true, "").ok(), Some(v1()));
        let reordered = "application/json; v=v1 ;g=meta.k8s.io;x=y;as=PartialObjectMetadataList";
        assert_eq!(negotiate(Some(reordered), true, "").ok(), Some(v1()));
        let beta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1";
        assert_eq!(
            negotiate(Some(beta), true, "").ok(),
            Some(Form::Metadata {
                version: "v1beta1".into()
            })
        );
        let unknown = "application/json;as=Unknown;g=meta.k8s.io;v=v1";
        let e = negotiate(Some(unknown), true, "").err().unwrap();
        assert_eq!(e.0.message, UNKNOWN_MEDIA);
        let unknown_fallback = format!("{unknown},application/json");
        assert_eq!(
            negotiate(Some(&unknown_fallback), true, "").ok(),
            Some(Form::Full)
        );
        let no_group = "application/json;as=PartialObjectMetadataList";
        assert!(negotiate(Some(no_group), true, "").is_err());
        let e = negotiate(Some(META), true, "*core.Pod").err().unwrap();
        assert_eq!(
            e.0.message,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"
        );
    }

    #[test]
    fn keeps_only_the_metadata() {
        let json =
            r#"{"metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{"x":[1]}}"#;
        assert_eq!(
            partial_object(json, "v1"),
            r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","managedFields":[{"manager":"m"}]}}"#
        );
        assert_eq!(metadata_only("not json"), r#"{"metadata":{}}"#);
    }
}
