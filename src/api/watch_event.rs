//! `WatchEvent`: one line of a watch response, `{"type":"ADDED","object":{...}}`.
//!
//! The event type usually comes before the object, so the object is decoded straight into its
//! final type in one pass; when it comes after, the object is held as raw text first and
//! decoded once the type is known. Either way each object is decoded once.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::resource::Object;
use super::status::Status;
use crate::json::json_scan::Scanner;

/// The annotation a streaming list's closing bookmark carries.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch.
#[derive(Clone, Debug)]
pub enum WatchEvent<K> {
    /// The object was created (or, in the initial events of a watch, exists).
    Added(K),
    /// The object changed.
    Modified(K),
    /// The object was deleted; this is its last state.
    Deleted(K),
    /// No object changed, but the collection reached this resource version.
    Bookmark(Bookmark),
    /// The server reports a failure (410 Expired when the start version is too old).
    Error(Box<Status>),
}

impl<K> WatchEvent<K> {
    /// The event type as the server spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }
}

impl<K: Object> WatchEvent<K> {
    /// Decodes one event line (without its newline); the object with
    /// [`Object::from_json_prefix`]. The same result as `Deserialize`.
    pub fn from_json(line: &[u8]) -> serde_json::Result<WatchEvent<K>> {
        let text = std::str::from_utf8(line).map_err(|e| {
            <serde_json::Error as de::Error>::custom(format_args!("the event is not UTF-8: {e}"))
        })?;
        let mut s = Scanner::new(text);
        s.begin_object()?;
        let mut ty: Option<EventType> = None;
        let mut event: Option<WatchEvent<K>> = None;
        let mut early_object: Option<&str> = None;
        let mut first = true;
        while let Some(key) = s.next_key(first)? {
            first = false;
            match &*key.text()? {
                "type" => ty = Some(EventType::parse::<serde_json::Error>(&s.string()?)?),
                "object" => {
                    if event.is_some() || early_object.is_some() {
                        return Err(de::Error::duplicate_field("object"));
                    }
                    match ty {
                        Some(t) => event = Some(scan_object(t, &mut s)?),
                        None => early_object = Some(s.value()?),
                    }
                }
                _ => {
                    s.value()?;
                }
            }
        }
        s.end()?;
        let ty = ty.ok_or_else(|| <serde_json::Error as de::Error>::missing_field("type"))?;
        match (event, early_object) {
            (Some(e), _) => Ok(e),
            (None, Some(text)) => {
                let mut s = Scanner::new(text);
                let e = scan_object(ty, &mut s)?;
                s.end()?;
                Ok(e)
            }
            (None, None) => Err(de::Error::missing_field("object")),
        }
    }
}

/// Decodes `object` for a known event type at the scanner's cursor.
fn scan_object<K: Object>(ty: EventType, s: &mut Scanner<'_>) -> serde_json::Result<WatchEvent<K>> {
    let object = |s: &mut Scanner<'_>| -> serde_json::Result<K> {
        s.peek();
        let (object, used) = K::from_json_prefix(s.rest())?;
        s.advance(used);
        Ok(object)
    };
    Ok(match ty {
        EventType::Added => WatchEvent::Added(object(s)?),
        EventType::Modified => WatchEvent::Modified(object(s)?),
        EventType::Deleted => WatchEvent::Deleted(object(s)?),
        EventType::Bookmark => {
            WatchEvent::Bookmark(serde_json::from_str::<BookmarkObject>(s.value()?)?.into())
        }
        EventType::Error => WatchEvent::Error(Box::new(serde_json::from_str(s.value()?)?)),
    })
}

/// A bookmark: the collection's resource version moved on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bookmark {
    /// The resource version reached.
    pub resource_version: String,
    /// The bookmark object's annotations (see [`INITIAL_EVENTS_END_ANNOTATION`]).
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// True for the bookmark that closes the initial events of a streaming list.
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|v| v == "true")
    }
}

#[derive(Deserialize)]
pub(crate) struct BookmarkObject {
    metadata: BookmarkMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: String,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

impl From<BookmarkObject> for Bookmark {
    fn from(b: BookmarkObject) -> Bookmark {
        Bookmark {
            resource_version: b.metadata.resource_version,
            annotations: b.metadata.annotations.unwrap_or_default(),
        }
    }
}

#[derive(Clone, Copy)]
enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl EventType {
    fn parse<E: de::Error>(s: &str) -> Result<EventType, E> {
        Ok(match s {
            "ADDED" => EventType::Added,
            "MODIFIED" => EventType::Modified,
            "DELETED" => EventType::Deleted,
            "BOOKMARK" => EventType::Bookmark,
            "ERROR" => EventType::Error,
            other => {
                return Err(E::custom(format_args!(
                    "unknown watch event type {other:?}"
                )))
            }
        })
    }
}

/// Decodes `object` for a known event type from any deserializer.
fn decode_object<'de, K: DeserializeOwned, D: Deserializer<'de>>(
    ty: EventType,
    d: D,
) -> Result<WatchEvent<K>, D::Error> {
    Ok(match ty {
        EventType::Added => WatchEvent::Added(K::deserialize(d)?),
        EventType::Modified => WatchEvent::Modified(K::deserialize(d)?),
        EventType::Deleted => WatchEvent::Deleted(K::deserialize(d)?),
        EventType::Bookmark => WatchEvent::Bookmark(BookmarkObject::deserialize(d)?.into()),
        EventType::Error => WatchEvent::Error(Box::new(Status::deserialize(d)?)),
    })
}

struct TypedObject<K>(EventType, PhantomData<K>);

impl<'de, K: DeserializeOwned> de::DeserializeSeed<'de> for TypedObject<K> {
    type Value = WatchEvent<K>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        decode_object(self.0, d)
    }
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for WatchEvent<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EventVisitor(PhantomData))
    }
}

struct EventVisitor<K>(PhantomData<K>);

impl<'de, K: DeserializeOwned> Visitor<'de> for EventVisitor<K> {
    type Value = WatchEvent<K>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a watch event {\"type\":..., \"object\":...}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WatchEvent<K>, A::Error> {
        let mut ty: Option<EventType> = None;
        let mut event: Option<WatchEvent<K>> = None;
        let mut raw: Option<Box<RawValue>> = None;
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::Type => {
                    let s: std::borrow::Cow<'de, str> = map.next_value()?;
                    ty = Some(EventType::parse(&s)?);
                }
                EventKey::Object => {
                    if event.is_some() || raw.is_some() {
                        return Err(de::Error::duplicate_field("object"));
                    }
                    match ty {
                        Some(t) => event = Some(map.next_value_seed(TypedObject(t, PhantomData))?),
                        None => raw = Some(map.next_value()?),
                    }
                }
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let ty = ty.ok_or_else(|| de::Error::missing_field("type"))?;
        match (event, raw) {
            (Some(e), _) => Ok(e),
            (None, Some(raw)) => {
                let mut d = serde_json::Deserializer::from_str(raw.get());
                decode_object(ty, &mut d).map_err(de::Error::custom)
            }
            (None, None) => Err(de::Error::missing_field("object")),
        }
    }
}

enum EventKey {
    Type,
    Object,
    Other,
}

impl<'de> Deserialize<'de> for EventKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = EventKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EventKey, E> {
                Ok(match v {
                    "type" => EventKey::Type,
                    "object" => EventKey::Object,
                    _ => EventKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}
