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
//! sends the full object, which decodes to the same type (the other fields are dropped).
//!
//! Limits: `kind` and `apiVersion` of a decoded object are the server's
//! (`PartialObjectMetadata`, `meta.k8s.io/v1`), not the resource's: use the `ApiResource` the
//! informer was built from to know which resource an object belongs to.

use serde::{Deserialize, Deserializer, Serialize};

use super::dynamic::DynamicObject;
use super::list::ObjectList;
use super::meta::ObjectMeta;
use super::resource::Object;

/// The `Accept` header for a metadata-only single object, watch or streaming list.
pub const METADATA_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
/// The `Accept` header for a metadata-only list (or list page).
pub const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

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
    pub api_version: Option<String>,
    /// `kind` as sent (`PartialObjectMetadata`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The object's metadata.
    pub metadata: ObjectMeta,
}

/// A metadata-only list, as the server sends it (`PartialObjectMetadataList`).
pub type PartialObjectMetadataList = ObjectList<PartialObjectMetadata>;

impl PartialObjectMetadata {
    /// Keeps the type and metadata of a decoded object; moves `managedFields` out of a shared
    /// buffer that also held the dropped fields (the full-object fallback).
    fn from_dynamic(obj: DynamicObject) -> Self {
        let mut obj = DynamicObject {
            fields: Vec::new(),
            ..obj
        };
        obj.compact();
        PartialObjectMetadata {
            api_version: obj.api_version,
            kind: obj.kind,
            metadata: obj.metadata,
        }
    }
}

impl<'de> Deserialize<'de> for PartialObjectMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        DynamicObject::deserialize(deserializer).map(Self::from_dynamic)
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
    const SCANNED: bool = true;
    const ACCEPT: &'static str = METADATA_ACCEPT;
    const LIST_ACCEPT: &'static str = METADATA_LIST_ACCEPT;

    fn from_json_prefix(json: &str) -> serde_json::Result<(Self, usize)> {
        let (obj, used) = DynamicObject::from_json_prefix(json)?;
        Ok((Self::from_dynamic(obj), used))
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
}
