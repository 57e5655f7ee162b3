//! `ObjectList`: one response of a list call (`PodList`, `WidgetList`, ...).

use serde::{Deserialize, Deserializer};

use super::meta::ListMeta;

/// A list response: list metadata and the items of this page.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "K: Deserialize<'de>"))]
pub struct ObjectList<K> {
    /// `kind` of the list, e.g. `PodList`.
    #[serde(default)]
    pub kind: Option<String>,
    /// `apiVersion` of the list.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Resource version, continue token and remaining count.
    #[serde(default)]
    pub metadata: ListMeta,
    /// The objects (`null` is read as empty).
    #[serde(default = "Vec::new", deserialize_with = "null_as_empty")]
    pub items: Vec<K>,
}

fn null_as_empty<'de, D, K>(d: D) -> Result<Vec<K>, D::Error>
where
    D: Deserializer<'de>,
    K: Deserialize<'de>,
{
    Ok(Option::<Vec<K>>::deserialize(d)?.unwrap_or_default())
}
