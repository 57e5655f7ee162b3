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
    /// true, list pages are checked on the thread that fetched them; serde's decoders cannot
    /// use the record, so for them the check would be work done twice.
    #[doc(hidden)]
    const SCANNED: bool = false;

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
    /// Lists and watch events are decoded through this. The default is serde's, in one pass;
    /// [`DynamicObject`](super::DynamicObject) overrides it with the library's scanner. Override
    /// it only with a decoder that gives the same result as `Deserialize`.
    fn from_json_prefix(json: &str) -> serde_json::Result<(Self, usize)>
    where
        Self: Sized,
    {
        let mut stream = serde_json::Deserializer::from_str(json).into_iter::<Self>();
        match stream.next() {
            Some(Ok(object)) => Ok((object, stream.byte_offset())),
            Some(Err(e)) => Err(e),
            None => Err(serde::de::Error::custom(
                "expected an object, found the end of the input",
            )),
        }
    }
}

/// An [`Object`] whose place in the API is fixed at compile time.
///
/// Implement it for your own `#[derive(Deserialize)]` type, declaring only the fields you read;
/// the rest of each object is skipped while decoding and never stored:
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
