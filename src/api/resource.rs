//! Where a kind lives in the API, and how the library reaches an object's metadata.
//!
//! Two traits, so that one generic cache serves both kinds of types:
//! - [`Object`]: anything decoded from the API that has metadata, of any type implementing
//!   [`Meta`] (our [`ObjectMeta`](super::ObjectMeta), or k8s-openapi's with the `k8s-openapi`
//!   feature). The cache, the FIFO and the handlers need only this.
//! - [`Resource`]: an `Object` whose place in the API (group, version, kind, plural, scope) is
//!   known at compile time. [`DynamicObject`](super::DynamicObject) is an `Object` only: its place
//!   comes at run time as an [`ApiResource`].

use serde::de::DeserializeOwned;

use super::meta_trait::Meta;

/// An API object the library can decode and cache: it has metadata.
///
/// The metadata type is the implementor's choice, read through [`Meta`]: your own types use
/// our [`ObjectMeta`](super::ObjectMeta) (`type Meta = ObjectMeta;`), k8s-openapi's types
/// (feature `k8s-openapi`) get this trait from a blanket impl with their own `ObjectMeta`.
/// Generic code is monomorphised per type: reading metadata through the trait costs what
/// reading the fields costs.
///
/// Generic code (`fn f<K: Object>(o: &K)`) reads metadata through [`Meta`]'s methods
/// (`use kube_informer::api::Meta;`), or asks for our type with `K: Object<Meta = ObjectMeta>`
/// to read its fields.
///
/// With both this trait and `k8s_openapi::Metadata` in scope, `pod.metadata()` is ambiguous
/// for a k8s-openapi type; write `Object::metadata(&pod)` or read the field `pod.metadata`.
pub trait Object: DeserializeOwned + Send + Sync + 'static {
    /// The metadata type.
    type Meta: Meta;

    /// The object's metadata.
    fn metadata(&self) -> &Self::Meta;
    /// The object's metadata, mutably (for transforms such as stripping managed fields).
    fn metadata_mut(&mut self) -> &mut Self::Meta;

    /// Releases memory the object holds but no longer uses, after a transform dropped parts
    /// of it. The default does nothing; [`DynamicObject`](super::DynamicObject) moves its raw
    /// parts out of a shared buffer that holds much more than they use.
    fn compact(&mut self) {}

    /// Whether [`from_json_prefix`](Self::from_json_prefix) decodes with the library's
    /// scanner, which can jump over the containers a list page's early check recorded. When
    /// true, list pages are checked on the thread that fetched them. True by default, because
    /// the default `from_json_prefix` is the scanner's; set it to false only with an override
    /// of `from_json_prefix` that reads through some other decoder (which could not use the
    /// record, so the check would be work done twice).
    #[doc(hidden)]
    const SCANNED: bool = true;

    /// The `Accept` header of single GETs, watches and streaming lists of this type.
    /// Plain JSON by default; [`PartialObjectMetadata`](super::PartialObjectMetadata) asks for
    /// the server's metadata-only form. Every request of an [`Api`](crate::Api) reading `Self`
    /// sends it, so the reflector's list and watch need no code of their own for it.
    const ACCEPT: &'static str = "application/json";
    /// The `Accept` header of lists (and list pages) of this type; see [`ACCEPT`](Self::ACCEPT).
    const LIST_ACCEPT: &'static str = "application/json";

    /// Decodes one object from the start of `json` and says how many bytes it took; what
    /// follows (`,` or `]` in a list, `}` in a watch event) is left to the caller.
    ///
    /// Lists and watch events are decoded through this. The default runs `Self`'s
    /// `Deserialize` on the library's own serde deserializer: exactly what serde_json would
    /// give, but the members `Self` does not declare are skipped by the scanner's tight loop
    /// (or jumped over, in a checked list page), and raw values are taken as slices.
    /// [`DynamicObject`](super::DynamicObject) overrides it with a decoder of its own. Override
    /// it only with a decoder that gives the same result as `Deserialize`.
    fn from_json_prefix(json: &str) -> serde_json::Result<(Self, usize)>
    where
        Self: Sized,
    {
        crate::json::deserializer::from_prefix(json)
    }

    /// (Feature `protobuf`.) The protobuf message of this type's objects when the server may
    /// send them in protobuf, `None` (the default) when it is JSON only. A function rather
    /// than a constant because the answer is a look-up in the codec's tables: k8s-openapi's
    /// types get theirs from their `apiVersion` and `kind` (a built-in kind has a message, a
    /// custom resource deriving k8s-openapi's traits has none and stays JSON).
    ///
    /// When it is `Some`, requests reading `Self` send [`PROTOBUF_ACCEPT`](Self::PROTOBUF_ACCEPT)
    /// (or [`PROTOBUF_LIST_ACCEPT`](Self::PROTOBUF_LIST_ACCEPT)), which keeps JSON as the
    /// fallback, and the answer is read as its `Content-Type` says.
    #[cfg(feature = "protobuf")]
    fn protobuf_message() -> Option<crate::protobuf::Message> {
        None
    }

    /// (Feature `protobuf`.) The `Accept` header of single GETs, writes, watches and streaming
    /// lists when [`protobuf_message`](Self::protobuf_message) is `Some`.
    #[cfg(feature = "protobuf")]
    const PROTOBUF_ACCEPT: &'static str = PROTOBUF_OR_JSON;
    /// (Feature `protobuf`.) The `Accept` header of lists in the same case.
    #[cfg(feature = "protobuf")]
    const PROTOBUF_LIST_ACCEPT: &'static str = PROTOBUF_OR_JSON;

    /// (Feature `protobuf`.) Decodes one object from the bytes of a protobuf `message` (the
    /// message the answer's envelope names, items of a list without their own envelope). The
    /// default is the codec's [`decode`](crate::protobuf::decode): the same value `Self`'s
    /// `Deserialize` makes of the server's JSON for that object.
    #[cfg(feature = "protobuf")]
    fn from_protobuf(
        message: crate::protobuf::Message,
        raw: &[u8],
    ) -> Result<Self, crate::protobuf::ProtobufError>
    where
        Self: Sized,
    {
        crate::protobuf::decode(message, raw)
    }
}

/// Protobuf first, JSON when the server cannot (custom resources, aggregated APIs).
#[cfg(feature = "protobuf")]
pub const PROTOBUF_OR_JSON: &str = "application/vnd.kubernetes.protobuf, application/json";

/// The `Accept` header of single objects, writes and watches of `K`: its protobuf one when
/// the feature is on and `K` has a message, its JSON one otherwise.
#[inline]
pub(crate) fn accept<K: Object>() -> &'static str {
    #[cfg(feature = "protobuf")]
    if K::protobuf_message().is_some() {
        return K::PROTOBUF_ACCEPT;
    }
    K::ACCEPT
}

/// The `Accept` header of writes and subresource reads answered by one `K`: JSON as always,
/// with protobuf first for a type whose reads are plain objects (so a metadata-only type's
/// writes keep asking for the whole object, as they did before the feature).
#[inline]
#[cfg_attr(not(feature = "protobuf"), allow(clippy::extra_unused_type_parameters))]
pub(crate) fn write_accept<K: Object>() -> &'static str {
    #[cfg(feature = "protobuf")]
    if K::ACCEPT == "application/json" && K::protobuf_message().is_some() {
        return PROTOBUF_OR_JSON;
    }
    "application/json"
}

/// The `Accept` header of lists of `K` (see [`accept`]).
#[inline]
pub(crate) fn list_accept<K: Object>() -> &'static str {
    #[cfg(feature = "protobuf")]
    if K::protobuf_message().is_some() {
        return K::PROTOBUF_LIST_ACCEPT;
    }
    K::LIST_ACCEPT
}

/// An [`Object`] whose place in the API is fixed at compile time.
///
/// Implement it for your own `#[derive(Deserialize)]` type, declaring only the fields you read;
/// the rest of each object is skipped while decoding and never stored. The
/// [`resource!`](crate::resource) macro writes all of this for the common shape; by hand:
///
/// ```
/// use kube_informer::api::{Object, ObjectMeta, Resource};
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Pod {
///     metadata: ObjectMeta,
///     #[serde(default)]
///     status: PodStatus,
/// }
///
/// #[derive(Deserialize, Default)]
/// struct PodStatus {
///     phase: Option<String>,
/// }
///
/// impl Object for Pod {
///     type Meta = ObjectMeta;
///     fn metadata(&self) -> &ObjectMeta { &self.metadata }
///     fn metadata_mut(&mut self) -> &mut ObjectMeta { &mut self.metadata }
/// }
///
/// impl Resource for Pod {
///     const GROUP: &'static str = "";
///     const VERSION: &'static str = "v1";
///     const KIND: &'static str = "Pod";
///     const PLURAL: &'static str = "pods";
///     const NAMESPACED: bool = true;
/// }
///
/// assert_eq!(kube_informer::api::ApiResource::of::<Pod>().url_path(Some("lab")),
///            "/api/v1/namespaces/lab/pods");
/// ```
pub trait Resource: Object {
    /// API group; `""` for the core group (`/api/v1`).
    const GROUP: &'static str;
    /// API version within the group, e.g. `v1`.
    const VERSION: &'static str;
    /// Kind, e.g. `Pod`.
    const KIND: &'static str;
    /// Plural resource name used in URLs, e.g. `pods`.
    const PLURAL: &'static str;
    /// True when objects live in namespaces.
    const NAMESPACED: bool;
}

/// The place of a resource in the API, known at run time (custom resources, discovery).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApiResource {
    /// API group; `""` for the core group.
    pub group: String,
    /// Version within the group.
    pub version: String,
    /// Kind of the objects.
    pub kind: String,
    /// Plural name used in URLs.
    pub plural: String,
    /// True when objects live in namespaces.
    pub namespaced: bool,
}

impl ApiResource {
    /// Describes a resource by its parts.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        ApiResource {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        }
    }

    /// The place of a compile-time [`Resource`].
    pub fn of<K: Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::KIND, K::PLURAL, K::NAMESPACED)
    }

    /// `apiVersion` as objects carry it: `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The collection path: `/api/v1/pods`, `/api/v1/namespaces/NS/pods`,
    /// `/apis/GROUP/VERSION/namespaces/NS/PLURAL`. `namespace` is ignored for cluster-scoped
    /// resources; `None` on a namespaced one means all namespaces.
    pub fn url_path(&self, namespace: Option<&str>) -> String {
        let mut path = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        if let (true, Some(ns)) = (self.namespaced, namespace) {
            path.push_str("/namespaces/");
            // Encoded like a name, so no namespace string can change the path.
            super::url_encoding::path_segment(ns, &mut path);
        }
        path.push('/');
        path.push_str(&self.plural);
        path
    }
}
