//! JSON text fed straight into a serde `Serializer`, without a tree in between.
//!
//! Why: the protobuf encoder meets JSON text twice: a `RawValue` inside a value (every
//! member of a `DynamicObject` but its metadata), and the test server's stored objects. The
//! parser's events are handed to the serializer as they come (a value that pulls itself
//! out of the parser when asked to serialize), so nothing is built and strings are lent
//! from the text. serde_json's own parser reads the text: the same numbers, escapes and
//! nesting limit (128) as `serde_json::from_str`.
//!
//! Errors: the serializer's own error is returned as it was made (its field path kept);
//! once a value has failed, the rest of its object or array is read and discarded, so the
//! parser never reports the early stop as a syntax error in its place.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};

/// Serializes the JSON `text` into `serializer`: one value, nothing but spaces after it.
pub(super) fn transcode<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    let mut parser = serde_json::Deserializer::from_str(text);
    let ok = Pending::new(&mut parser).serialize(serializer)?;
    parser.end().map_err(S::Error::custom)?;
    Ok(ok)
}

/// A value still in the parser: serializing it reads it.
struct Pending<D>(Cell<Option<D>>);

impl<D> Pending<D> {
    fn new(deserializer: D) -> Self {
        Pending(Cell::new(Some(deserializer)))
    }
}

impl<'de, D: Deserializer<'de>> Serialize for Pending<D> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(deserializer) = self.0.take() else {
            return Err(S::Error::custom("a JSON value serialized twice"));
        };
        match deserializer.deserialize_any(Forward(serializer)) {
            Ok(result) => result,
            Err(e) => Err(S::Error::custom(e)),
        }
    }
}

/// Hands each parsed value to the serializer; the serializer's verdict is the value.
struct Forward<S>(S);

impl<'de, S: Serializer> Visitor<'de> for Forward<S> {
    type Value = Result<S::Ok, S::Error>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(self.0.serialize_bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.0.serialize_i64(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.0.serialize_u64(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(self.0.serialize_f64(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.serialize_str(v))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(self.0.serialize_unit())
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(self.0.serialize_unit())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = match self.0.serialize_seq(seq.size_hint()) {
            Ok(out) => out,
            Err(e) => return drain_seq(seq, e),
        };
        loop {
            match seq.next_element_seed(Element(&mut out))? {
                None => return Ok(out.end()),
                Some(Ok(())) => {}
                Some(Err(e)) => return drain_seq(seq, e),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = match self.0.serialize_map(map.size_hint()) {
            Ok(out) => out,
            Err(e) => return drain_map(map, e),
        };
        loop {
            match map.next_key_seed(Key(&mut out))? {
                None => return Ok(out.end()),
                Some(Ok(())) => {}
                Some(Err(e)) => return drain_value_then_map(map, e),
            }
            if let Err(e) = map.next_value_seed(Value(&mut out))? {
                return drain_map(map, e);
            }
        }
    }
}

fn drain_seq<'de, A: SeqAccess<'de>, T, E>(mut seq: A, e: E) -> Result<Result<T, E>, A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(Err(e))
}

fn drain_map<'de, A: MapAccess<'de>, T, E>(mut map: A, e: E) -> Result<Result<T, E>, A::Error> {
    while map.next_key::<IgnoredAny>()?.is_some() {
        map.next_value::<IgnoredAny>()?;
    }
    Ok(Err(e))
}

fn drain_value_then_map<'de, A: MapAccess<'de>, T, E>(
    mut map: A,
    e: E,
) -> Result<Result<T, E>, A::Error> {
    map.next_value::<IgnoredAny>()?;
    drain_map(map, e)
}

struct Element<'a, S>(&'a mut S);

impl<'de, S: SerializeSeq> DeserializeSeed<'de> for Element<'_, S> {
    type Value = Result<(), S::Error>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Ok(self.0.serialize_element(&Pending::new(deserializer)))
    }
}

struct Key<'a, S>(&'a mut S);

impl<'de, S: SerializeMap> DeserializeSeed<'de> for Key<'_, S> {
    type Value = Result<(), S::Error>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Ok(self.0.serialize_key(&Pending::new(deserializer)))
    }
}

struct Value<'a, S>(&'a mut S);

impl<'de, S: SerializeMap> DeserializeSeed<'de> for Value<'_, S> {
    type Value = Result<(), S::Error>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Ok(self.0.serialize_value(&Pending::new(deserializer)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reaches_a_serializer_as_serde_json_reads_it() {
        for text in [
            r#"{"a":[1,-2,3.5,"x\u00e9",null,true,{"b":{}}],"c":18446744073709551615}"#,
            r#"  [ ]  "#,
            r#""just a string""#,
            r#"1e300"#,
        ] {
            let direct: serde_json::Value = serde_json::from_str(text).unwrap();
            let through = transcode(text, serde_json::value::Serializer).unwrap();
            assert_eq!(through, direct, "{text}");
        }
        for bad in [r#"{"a":1"#, r#"[1,]"#, r#"1 2"#, "", r#"{"a":1}x"#, "1e400"] {
            assert!(
                transcode(bad, serde_json::value::Serializer).is_err(),
                "{bad}"
            );
        }
        // The parser's nesting limit holds: an error, not a stack overflow.
        let deep = "[".repeat(100_000);
        assert!(transcode(&deep, serde_json::value::Serializer).is_err());
    }
}
