//! One stored object version's protobuf, encoded once (feature `protobuf`).
//!
//! Why: the test server keeps objects as JSON, and a protobuf answer used to re-encode each
//! object (JSON text → `serde_json::Value` → protobuf) for every request: a 10k-pod sync
//! over protobuf took 3.5x the JSON one, the server being the bound, so the informer bench
//! measured the server, not the client. Each [`StoredObject`](super::store::StoredObject)
//! now carries an [`Encoded`]: its message bytes (without envelope, as a list item carries
//! them), computed at the first protobuf answer that needs them and shared by every later
//! get, list page and watch event of that same version. The encoding reads the JSON text
//! straight into the protobuf serializer (`protobuf::encode_json`), with no
//! `serde_json::Value` built in between.
//!
//! Why it can never be stale: a stored version is immutable (a write makes a new
//! `StoredObject`; the old one is dropped with the last history entry or page that holds
//! it, and its bytes with it). On top of that, each slot is keyed by the exact JSON text it
//! was made from (the `Arc<str>` itself, held so its address cannot be reused) and by the
//! message it was encoded as: a lookup with other JSON (a converted or defaulted object, a
//! clone given new JSON) or another message encodes afresh and leaves the slot alone, and a
//! clone of an `Encoded` starts empty. Two forms are kept, as two slots: the whole object,
//! and its metadata-only `PartialObjectMetadata` (`as=PartialObjectMetadata`).
//!
//! Memory: nothing is kept until a protobuf answer asks (a JSON-only user pays two empty
//! slots, 32 bytes, per stored version); a failed encoding is remembered as "none" so it is
//! not retried. A version's bytes live as long as the version does: in the store while it is
//! current, in the event history until compaction or the history limit lets it go.

#[cfg(feature = "protobuf")]
use std::{borrow::Cow, sync::Arc, sync::OnceLock};

#[cfg(feature = "protobuf")]
use crate::protobuf::{self as pb, Message};

/// A stored version's protobuf encodings, filled on demand (empty without the feature).
#[derive(Default)]
pub(crate) struct Encoded {
    /// The whole object as its own message (`Pod`).
    #[cfg(feature = "protobuf")]
    full: OnceLock<Box<Slot>>,
    /// The object's `PartialObjectMetadata`.
    #[cfg(feature = "protobuf")]
    metadata: OnceLock<Box<Slot>>,
}

/// The bytes of one form, and what they were made from.
#[cfg(feature = "protobuf")]
struct Slot {
    json: Arc<str>,
    message: Message,
    /// `None`: the codec could not encode it (the answer goes out as JSON).
    bytes: Option<Box<[u8]>>,
}

impl Clone for Encoded {
    /// A clone starts empty: it may be given other JSON.
    fn clone(&self) -> Self {
        Encoded::default()
    }
}

impl std::fmt::Debug for Encoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[cfg(feature = "protobuf")]
        {
            let len =
                |s: &OnceLock<Box<Slot>>| s.get().and_then(|s| s.bytes.as_ref()).map(|b| b.len());
            f.debug_struct("Encoded")
                .field("full_bytes", &len(&self.full))
                .field("metadata_bytes", &len(&self.metadata))
                .finish()
        }
        #[cfg(not(feature = "protobuf"))]
        f.write_str("Encoded")
    }
}

#[cfg(feature = "protobuf")]
impl Encoded {
    /// `json` (a stored object's JSON, without `kind`/`apiVersion`) as `message`: from the
    /// slot when it was made from this very `json` as this message, else encoded now.
    pub(crate) fn full<'a>(&'a self, json: &Arc<str>, message: Message) -> Option<Cow<'a, [u8]>> {
        cached(&self.full, json, message, || {
            pb::encode_json(message, json).ok()
        })
    }

    /// The `PartialObjectMetadata` (`message`, of `meta.k8s.io/<version>`) of `json`.
    pub(crate) fn metadata<'a>(
        &'a self,
        json: &Arc<str>,
        message: Message,
    ) -> Option<Cow<'a, [u8]>> {
        cached(&self.metadata, json, message, || {
            let partial = super::metadata::metadata_only(json);
            pb::encode_json(message, &partial).ok()
        })
    }

    /// Whether either form is held (for tests of laziness).
    #[cfg(test)]
    pub(crate) fn is_filled(&self) -> bool {
        self.full.get().is_some() || self.metadata.get().is_some()
    }
}

#[cfg(feature = "protobuf")]
fn cached<'a>(
    slot: &'a OnceLock<Box<Slot>>,
    json: &Arc<str>,
    message: Message,
    encode: impl FnOnce() -> Option<Vec<u8>>,
) -> Option<Cow<'a, [u8]>> {
    let mut encode = Some(encode);
    let held = slot.get_or_init(|| {
        Box::new(Slot {
            json: Arc::clone(json),
            message,
            bytes: encode.take().and_then(|f| f()).map(Vec::into_boxed_slice),
        })
    });
    if Arc::ptr_eq(&held.json, json) && held.message == message {
        return held.bytes.as_deref().map(Cow::Borrowed);
    }
    // Made from other JSON or as another message: never served for this one.
    encode.and_then(|f| f()).map(Cow::Owned)
}

#[cfg(all(test, feature = "protobuf"))]
mod tests {
    use super::*;

    fn pod_message() -> Message {
        pb::message_for("v1", "Pod").unwrap()
    }

    #[test]
    fn the_slot_answers_only_the_json_and_message_it_was_made_from() {
        let e = Encoded::default();
        assert!(!e.is_filled());
        let a: Arc<str> = r#"{"metadata":{"name":"a","resourceVersion":"1"}}"#.into();
        let first = e.full(&a, pod_message()).unwrap().into_owned();
        assert!(e.is_filled());
        // Same text in another allocation (a new version with equal JSON, or not): encoded
        // afresh, and other text gives other bytes.
        let b: Arc<str> = r#"{"metadata":{"name":"b","resourceVersion":"2"}}"#.into();
        let other = e.full(&b, pod_message()).unwrap();
        assert!(matches!(other, Cow::Owned(_)));
        assert_ne!(&*other, &first[..]);
        let expected = pb::encode(
            pod_message(),
            &serde_json::from_str::<serde_json::Value>(&b).unwrap(),
        )
        .unwrap();
        assert_eq!(&*other, &expected[..]);
        // Another message for the same JSON: not the slot's bytes.
        let cm = pb::message_for("v1", "ConfigMap").unwrap();
        assert!(matches!(e.full(&a, cm), Some(Cow::Owned(_))));
        // The slot itself is served for its own JSON.
        assert!(matches!(e.full(&a, pod_message()), Some(Cow::Borrowed(_))));
        // A clone starts empty.
        assert!(!e.clone().is_filled());
    }

    #[test]
    fn a_json_only_server_pays_at_most_32_bytes_per_stored_version() {
        assert!(std::mem::size_of::<Encoded>() <= 32);
    }

    #[test]
    fn a_failed_encoding_is_none_and_stays_none() {
        let e = Encoded::default();
        let bad: Arc<str> = r#"{"metadata":"not an object"}"#.into();
        assert!(e.full(&bad, pod_message()).is_none());
        assert!(e.full(&bad, pod_message()).is_none());
    }
}
