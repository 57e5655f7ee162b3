//! `PartialObjectMetadata`: an object's metadata and nothing else.
//!
//! Why: an informer that only needs names, labels, owners or finalizers (a garbage collector,
//! a quota counter, a label index over every pod) should not pay for `spec` and `status`. The
//! API server returns metadata-only objects when asked with a media-type parameter in the
//! `Accept` header (`as=PartialObjectMetadata;g=meta.k8s.io;v=v1`, `as=PartialObjectMetadataList`
//! for lists); the type says so through [`Object::ACCEPT`] and [`Object::LIST_ACCEPT`], so
//! every list, paged list, watch and streaming list of an `Api<PartialObjectMetadata>` asks for
//! it, with no separate code path.
//!
//! Both headers end with the fallback `,application/json`: a server that cannot transform
//! sends the full object, which decodes to the same type: the other members are checked and
//! skipped by the library's scanner (jumped over in a checked list page), never copied.
//!
//! Limits: `kind` and `apiVersion` of a decoded object are the server's
//! (`PartialObjectMetadata`, `meta.k8s.io/v1`), not the resource's: use the `ApiResource` the
//! informer was built from to know which resource an object belongs to.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::json::deserializer::from_prefix;
use crate::json::json_scan::Scanner;
use crate::json::lent_str::LentStr;

use super::dynamic::DynamicObject;
use super::list::ObjectList;
use super::meta::ObjectMeta;
use super::resource::Object;
use super::SharedStr;

/// The `Accept` header for a metadata-only single object, watch or streaming list.
pub const METADATA_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The `Accept` header for a metadata-only list (or list page).
pub const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// [`METADATA_ACCEPT`] with the protobuf form first (feature `protobuf`).
#[cfg(feature = "protobuf")]
pub const METADATA_PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json";
/// [`METADATA_LIST_ACCEPT`] with the protobuf form first (feature `protobuf`).
#[cfg(feature = "protobuf")]
pub const METADATA_PROTOBUF_LIST_ACCEPT: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json";

/// An object's metadata only: what the server sends for `as=PartialObjectMetadata`.
///
/// Use it with any resource, built-in or custom, through an
/// [`ApiResource`](super::ApiResource):
///
/// ```
/// use kube_informer::{Api, Client, api::{ApiResource, PartialObjectMetadata}};
/// let server = kube_informer::testing::ApiServer::start();
/// let pods = ApiResource::new("", "v1", "Pod", "pods", true);
/// server.create(&pods, serde_json::json!({
///     "metadata": {"name": "web", "namespace": "lab", "labels": {"app": "web"}},
///     "spec": {"containers": [{"name": "app", "image": "nginx"}]}
/// })).unwrap();
/// let api: Api<PartialObjectMetadata> =
///     Api::namespaced_with(Client::new(server.client_config())?, "lab", &pods);
/// let web = api.get("web")?;
/// assert_eq!(web.kind.as_deref(), Some("PartialObjectMetadata"));
/// assert_eq!(web.metadata.labels.as_ref().and_then(|l| l.get("app")), Some("web"));
/// # Ok::<(), kube_informer::Error>(())
/// ```
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialObjectMetadata {
    /// `apiVersion` as sent (`meta.k8s.io/v1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<SharedStr>,
    /// `kind` as sent (`PartialObjectMetadata`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<SharedStr>,
    /// The object's metadata.
    pub metadata: ObjectMeta,
}

/// A metadata-only list, as the server sends it (`PartialObjectMetadataList`).
pub type PartialObjectMetadataList = ObjectList<PartialObjectMetadata>;

/// Reads `apiVersion`, `kind` and `metadata`; every other member (the full object's `spec`
/// and `status`, when the server could not send the metadata-only form) is checked and
/// skipped, never kept. The rules are `DynamicObject`'s: the last `apiVersion` or `kind` wins,
/// a second `metadata` is an error.
impl<'de> Deserialize<'de> for PartialObjectMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PartialVisitor)
    }
}

struct PartialVisitor;

impl<'de> Visitor<'de> for PartialVisitor {
    type Value = PartialObjectMetadata;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object (a JSON map)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PartialObjectMetadata, A::Error> {
        let mut obj = PartialObjectMetadata::default();
        let mut seen_metadata = false;
        while let Some(key) = map.next_key::<LentStr<'de>>()? {
            match &*key.0 {
                "apiVersion" => obj.api_version = map.next_value()?,
                "kind" => obj.kind = map.next_value()?,
                "metadata" => {
                    if seen_metadata {
                        return Err(de::Error::duplicate_field("metadata"));
                    }
                    seen_metadata = true;
                    obj.metadata = map.next_value()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(obj)
    }
}

impl Object for PartialObjectMetadata {
    type Meta = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
    const ACCEPT: &'static str = METADATA_ACCEPT;
    const LIST_ACCEPT: &'static str = METADATA_LIST_ACCEPT;

    /// kube-apiserver serves the metadata-only forms in protobuf for every resource, custom
    /// ones included.
    #[cfg(feature = "protobuf")]
    fn protobuf_message() -> Option<crate::protobuf::Message> {
        crate::protobuf::message_by_name(
            "k8s.io.apimachinery.pkg.apis.meta.v1.PartialObjectMetadata",
        )
    }
    /// The codec's decoding, with `apiVersion` and `kind` filled in as the JSON form has them
    /// (protobuf carries them in the envelope only, and list items have none).
    #[cfg(feature = "protobuf")]
    fn from_protobuf(
        message: crate::protobuf::Message,
        raw: &[u8],
    ) -> Result<Self, crate::protobuf::ProtobufError> {
        static NAMES: std::sync::OnceLock<(SharedStr, SharedStr)> = std::sync::OnceLock::new();
        // Straight from the wire: the codec answers serde_json's raw-value form, which our
        // `ObjectMeta` asks for its `managedFields` (`RawJson`).
        let mut obj: PartialObjectMetadata = crate::protobuf::decode(message, raw)?;
        let (api_version, kind) =
            NAMES.get_or_init(|| ("meta.k8s.io/v1".into(), "PartialObjectMetadata".into()));
        obj.api_version.get_or_insert_with(|| api_version.clone());
        obj.kind.get_or_insert_with(|| kind.clone());
        Ok(obj)
    }
    #[cfg(feature = "protobuf")]
    const PROTOBUF_ACCEPT: &'static str = METADATA_PROTOBUF_ACCEPT;
    #[cfg(feature = "protobuf")]
    const PROTOBUF_LIST_ACCEPT: &'static str = METADATA_PROTOBUF_LIST_ACCEPT;

    /// The impl above, written out with the scanner (a metadata-only object is little but its
    /// metadata, so serde's per-member dispatch was a visible share of its cost): the same
    /// results, other members checked and skipped, never copied.
    fn from_json_prefix(json: &str) -> serde_json::Result<(Self, usize)> {
        let mut s = Scanner::new(json);
        let mut obj = PartialObjectMetadata::default();
        let mut seen_metadata = false;
        s.begin_object()?;
        let mut first = true;
        while let Some(key) = s.next_key(first)? {
            first = false;
            match &*key.text()? {
                "apiVersion" => obj.api_version = s.opt_shared_string()?,
                "kind" => obj.kind = s.opt_shared_string()?,
                "metadata" => {
                    if seen_metadata {
                        return Err(de::Error::duplicate_field("metadata"));
                    }
                    seen_metadata = true;
                    obj.metadata = if s.peek() == Some(b'{') {
                        ObjectMeta::scan(&mut s)?
                    } else {
                        // serde reads a struct from an array too.
                        let (meta, used) = from_prefix::<ObjectMeta>(s.rest())?;
                        s.advance(used);
                        meta
                    };
                }
                _ => {
                    s.value()?;
                }
            }
        }
        Ok((obj, s.pos()))
    }

    fn compact(&mut self) {
        if let Some(raw) = self.metadata.managed_fields.take() {
            let mut holder = DynamicObject {
                metadata: ObjectMeta {
                    managed_fields: Some(raw),
                    ..Default::default()
                },
                ..Default::default()
            };
            holder.compact();
            self.metadata.managed_fields = holder.metadata.managed_fields;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_metadata_only_item_and_drops_other_fields() {
        let json = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"m"}]},"spec":{"x":1}},"#;
        let (obj, used) = PartialObjectMetadata::from_json_prefix(json).unwrap();
        assert_eq!(&json[used..], ",");
        assert_eq!(obj.metadata.name.as_deref(), Some("a"));
        assert_eq!(obj.kind.as_deref(), Some("Pod"));
        assert!(obj.metadata.managed_fields.is_some());
        let by_serde: PartialObjectMetadata = serde_json::from_str(&json[..used]).unwrap();
        assert_eq!(
            serde_json::to_value(&by_serde).unwrap(),
            serde_json::to_value(&obj).unwrap()
        );
    }

    #[test]
    fn reads_as_dynamic_object_then_trimmed_did() {
        // The former decoder: the whole object as a DynamicObject, then kept its metadata.
        fn old(json: &str) -> Option<String> {
            let d: DynamicObject = serde_json::from_str(json).ok()?;
            let p = PartialObjectMetadata {
                api_version: d.api_version,
                kind: d.kind,
                metadata: d.metadata,
            };
            Some(serde_json::to_string(&p).unwrap())
        }
        for json in [
            r#"{"kind":"Pod","kind":"X","apiVersion":null,"metadata":{"name":"a"},"spec":[1,{"y":"\u00e9"}]}"#,
            r#"{"metadata":{"name":"a"},"metadata":{"name":"b"}}"#,
            r#"{"metadata":{"labels":{"a":"b"}},"status":{"bad":tru}}"#,
            r#"{"metadata":{},"\ud800":1}"#,
            r#"{"kind":1,"metadata":{}}"#,
            r#"{}"#,
            r#"[]"#,
            r#"{"metadata":{},"spec":{"a":1},}"#,
            r#"{"metadata":["a",null,"ns"],"kind":"K"}"#,
            r#"{"metadata":["a",null,"ns",null,null,null,null,null,null,null,null,null,null,null,null,null]}"#,
            r#" {"kind":null , "metadata" : {"name":"a"} } "#,
        ] {
            let fast = PartialObjectMetadata::from_json_prefix(json)
                .ok()
                .map(|(p, _)| serde_json::to_string(&p).unwrap());
            let by_serde = serde_json::from_str::<PartialObjectMetadata>(json)
                .ok()
                .map(|p| serde_json::to_string(&p).unwrap());
            assert_eq!(fast, old(json), "{json}");
            assert_eq!(by_serde, old(json), "{json}");
        }
    }
}
