//! `resource!`: a slim type declared in one block, with no proc-macro dependency.
//!
//! Why a `macro_rules!` and not a derive: a derive needs a proc-macro crate (and with it
//! `syn`, `quote` and `proc-macro2` in every user's build), which the library's dependency
//! budget does not allow. A declarative macro covers the common shape (metadata plus the
//! fields you read, a fixed place in the API) with clear errors for anything else; types of
//! another shape implement [`Object`](crate::api::Object) and
//! [`Resource`](crate::api::Resource) by hand (five constants and two methods).

/// Declares a slim resource type: a struct with `metadata` and the fields you list, decoded
/// like any `#[derive(Deserialize)]` struct (members you do not list are skipped, fast, and
/// never stored), with the [`Object`](crate::api::Object) and
/// [`Resource`](crate::api::Resource) impls the library needs.
///
/// ```
/// use serde::Deserialize;
///
/// kube_informer::resource! {
///     /// Pods, as this tool reads them.
///     #[resource(group = "", version = "v1", kind = "Pod", plural = "pods", namespaced)]
///     pub struct Pod {
///         pub status: PodStatus,
///     }
/// }
///
/// #[derive(Deserialize, Clone, Debug, Default)]
/// #[serde(rename_all = "camelCase")]
/// pub struct PodStatus {
///     pub phase: Option<String>,
///     #[serde(rename = "podIP")]
///     pub pod_ip: Option<String>,
/// }
///
/// use kube_informer::api::{Object, Resource};
/// let json = r#"{"metadata":{"name":"web","namespace":"shop"},"spec":{"containers":[]},
///                "status":{"phase":"Running","podIP":"10.0.0.7"}}"#;
/// let (pod, _) = Pod::from_json_prefix(json)?;
/// assert_eq!(pod.metadata.name.as_deref(), Some("web"));
/// assert_eq!(pod.status.pod_ip.as_deref(), Some("10.0.0.7"));
/// assert_eq!(Pod::PLURAL, "pods");
/// // A field missing from an object is its type's default.
/// let (bare, _) = Pod::from_json_prefix(r#"{"metadata":{"name":"new"}}"#)?;
/// assert!(bare.status.phase.is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// What it emits:
/// - the struct, with your doc comments and attributes, a first field
///   `pub metadata: ObjectMeta`, then your fields; `#[derive(Deserialize, Clone, Debug)]` and
///   `#[serde(rename_all = "camelCase")]` (the API's spelling: a field `node_name` reads
///   `nodeName`; rename the odd ones such as `podIP` yourself);
/// - `#[serde(default)]` on each of your fields, so objects without them (a pod that has no
///   `status` yet) still decode: each field's type needs `Default` (`Option<T>` always has
///   it). For a field that must be present, use the manual impls instead;
/// - `impl Object` (with `type Meta = ObjectMeta`) and `impl Resource` with the constants
///   you gave. The scope is `namespaced` or `cluster`.
///
/// The parts of `#[resource(...)]` come in that order; `group = ""` is the core group. Add
/// `#[derive(serde::Serialize)]` after it to write objects back (`create`, `replace`). The
/// expansion names `::serde`, so the crate using it depends on serde (with `derive`), as its
/// field types do anyway.
///
/// A cluster-scoped kind, with a field of the API's own spelling:
///
/// ```
/// kube_informer::resource! {
///     #[resource(group = "", version = "v1", kind = "Node", plural = "nodes", cluster)]
///     #[derive(serde::Serialize)]
///     pub struct Node {
///         /// `spec.unschedulable` and the rest, undecoded.
///         pub spec: Option<kube_informer::api::RawJson>,
///     }
/// }
/// use kube_informer::api::{ApiResource, Resource};
/// assert!(!Node::NAMESPACED);
/// assert_eq!(ApiResource::of::<Node>().url_path(None), "/api/v1/nodes");
/// ```
#[macro_export]
macro_rules! resource {
    (
        $(#[doc = $doc:expr])*
        #[resource(
            group = $group:literal,
            version = $version:literal,
            kind = $kind:literal,
            plural = $plural:literal,
            $scope:ident $(,)?
        )]
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$field_attr:meta])*
                $field_vis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[doc = $doc])*
        #[derive(::serde::Deserialize, ::core::clone::Clone, ::core::fmt::Debug)]
        #[serde(rename_all = "camelCase")]
        $(#[$attr])*
        $vis struct $name {
            /// The object's metadata: name, namespace, labels, owners, resource version.
            pub metadata: $crate::api::ObjectMeta,
            $(
                $(#[$field_attr])*
                #[serde(default)]
                $field_vis $field: $ty,
            )*
        }

        impl $crate::api::Object for $name {
            type Meta = $crate::api::ObjectMeta;
            fn metadata(&self) -> &$crate::api::ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut $crate::api::ObjectMeta {
                &mut self.metadata
            }
        }

        impl $crate::api::Resource for $name {
            const GROUP: &'static str = $group;
            const VERSION: &'static str = $version;
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            const NAMESPACED: bool = $crate::resource!(@scope $scope);
        }
    };
    (@scope namespaced) => { true };
    (@scope cluster) => { false };
    (@scope $other:ident) => {
        ::core::compile_error!(::core::concat!(
            "resource!: the scope is `namespaced` or `cluster`, not `",
            ::core::stringify!($other),
            "`"
        ))
    };
    ($($other:tt)*) => {
        ::core::compile_error!(
            "resource! expects: /// docs, then #[resource(group = \"\", version = \"v1\", \
             kind = \"Pod\", plural = \"pods\", namespaced)] (those parts, in that order; \
             `cluster` for cluster-scoped kinds), other attributes, then \
             `pub struct Name { pub field: Type, ... }` (no `metadata` field: it is added)"
        );
    };
}

#[cfg(test)]
mod tests {
    use crate::api::{ApiResource, Object};

    #[derive(serde::Deserialize, Clone, Debug, Default, PartialEq)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct WidgetSpec {
        size: u32,
        node_name: Option<String>,
    }

    crate::resource! {
        /// Widgets.
        ///
        /// Two lines of docs.
        #[resource(group = "example.com", version = "v1alpha1", kind = "Widget", plural = "widgets", namespaced,)]
        #[derive(serde::Serialize)]
        pub(crate) struct Widget {
            /// The spec.
            #[serde(skip_serializing)]
            pub spec: WidgetSpec,
            #[serde(rename = "podIP")]
            pod_ip: Option<String>,
            extra_field: Vec<String>,
        }
    }

    #[test]
    fn the_macro_declares_a_working_slim_type() {
        assert_eq!(
            ApiResource::of::<Widget>(),
            ApiResource::new("example.com", "v1alpha1", "Widget", "widgets", true)
        );
        let json = r#"{"apiVersion":"example.com/v1alpha1","kind":"Widget",
            "metadata":{"name":"w","namespace":"n","managedFields":[{"m":1}]},
            "spec":{"size":3,"nodeName":"node-1","other":[1]},"podIP":"10.0.0.1",
            "extraField":["a"],"status":{"big":{"nested":true}}}"#;
        let (w, used) = Widget::from_json_prefix(json).unwrap();
        assert_eq!(used, json.len());
        assert_eq!(w.metadata().name(), "w");
        assert_eq!(w.spec.node_name.as_deref(), Some("node-1"));
        assert_eq!(w.spec.size, 3);
        assert_eq!(w.pod_ip.as_deref(), Some("10.0.0.1"));
        assert_eq!(w.extra_field, ["a"]);
        let by_serde: Widget = serde_json::from_str(json).unwrap();
        assert_eq!(format!("{by_serde:?}"), format!("{w:?}"));
        // Missing fields are defaults; metadata is required, as in the API.
        let (bare, _) = Widget::from_json_prefix(r#"{"metadata":{}}"#).unwrap();
        assert_eq!(bare.spec, WidgetSpec::default());
        assert!(Widget::from_json_prefix(r#"{"spec":{}}"#).is_err());
        let back = serde_json::to_value(&w).unwrap();
        assert_eq!(back["podIP"], "10.0.0.1");
        assert!(back.get("spec").is_none());
    }
}
