//! `ObjectList`: one response of a list call (`PodList`, `WidgetList`, ...).

use serde::{Deserialize, Deserializer};

use super::meta::ListMeta;
use super::resource::Object;
use crate::json::json_scan::Scanner;

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

impl<K: Object> ObjectList<K> {
    /// Decodes a list response, each item with [`Object::from_json_prefix`]: the same result
    /// as `Deserialize`, in one pass over the items. An error names the item it is in.
    pub fn from_json(text: &str) -> serde_json::Result<ObjectList<K>> {
        let mut list = ObjectList {
            kind: None,
            api_version: None,
            metadata: ListMeta::default(),
            items: Vec::new(),
        };
        let mut s = Scanner::new(text);
        s.begin_object()?;
        let mut first = true;
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = s.next_key(first)? {
            first = false;
            let key = key.text()?;
            // serde's derive refuses a field given twice; so does this.
            if matches!(&*key, "kind" | "apiVersion" | "metadata" | "items") {
                if seen.iter().any(|k| *k == key) {
                    return Err(<serde_json::Error as serde::de::Error>::custom(
                        format_args!("duplicate field `{key}`"),
                    ));
                }
                seen.push(key.to_string());
            }
            match &*key {
                "kind" => list.kind = serde_json::from_str(s.value()?)?,
                "apiVersion" => list.api_version = serde_json::from_str(s.value()?)?,
                "metadata" => list.metadata = serde_json::from_str(s.value()?)?,
                "items" => {
                    if s.take_null()? {
                        continue;
                    }
                    s.begin_array()?;
                    let mut first_item = true;
                    while s.next_element(first_item)? {
                        first_item = false;
                        let (item, used) = K::from_json_prefix(s.rest()).map_err(|e| {
                            <serde_json::Error as serde::de::Error>::custom(format_args!(
                                "item {}: {e}",
                                list.items.len()
                            ))
                        })?;
                        s.advance(used);
                        list.items.push(item);
                    }
                }
                _ => {
                    s.value()?;
                }
            }
        }
        s.end()?;
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::DynamicObject;

    #[test]
    fn decodes_like_serde() {
        let text = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"c"},
            "items":[{"metadata":{"name":"a","namespace":"n"},"spec":{"x":[1,2]}} ,
                     {"metadata":{"name":"b"},"status":null}]}"#;
        let fast = ObjectList::<DynamicObject>::from_json(text).unwrap();
        let slow: ObjectList<DynamicObject> = serde_json::from_str(text).unwrap();
        assert_eq!(fast.metadata, slow.metadata);
        assert_eq!(fast.kind.as_deref(), Some("PodList"));
        assert_eq!(
            serde_json::to_string(&fast.items).unwrap(),
            serde_json::to_string(&slow.items).unwrap()
        );
        assert_eq!(fast.items[0].field("spec").unwrap().get(), "{\"x\":[1,2]}");
        let empty = ObjectList::<DynamicObject>::from_json(r#"{"items":null}"#).unwrap();
        assert!(empty.items.is_empty());
    }

    #[test]
    fn errors_name_the_item() {
        let text = r#"{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":7}}]}"#;
        let e = ObjectList::<DynamicObject>::from_json(text).unwrap_err();
        assert!(e.to_string().starts_with("item 1: "), "{e}");
        for bad in [
            r#"{"items":[],"items":[]}"#,
            r#"{"items":[{}"#,
            r#"{"items":[{},]}"#,
            r#"{"items":{}}"#,
            r#"{"items":[]} x"#,
        ] {
            assert!(
                ObjectList::<DynamicObject>::from_json(bad).is_err(),
                "{bad}"
            );
            assert!(
                serde_json::from_str::<ObjectList<DynamicObject>>(bad).is_err(),
                "{bad}"
            );
        }
    }
}
