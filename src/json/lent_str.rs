//! `LentStr`: a string decoded without a copy when the decoder can lend it.
//!
//! Why: `Cow<'de, str>`'s own `Deserialize` always copies (serde cannot know a `Cow` may
//! borrow unless a derive says `#[serde(borrow)]`). Labels, annotations and raw values are
//! read once and copied into their final compact form right away, so a temporary copy per
//! string was pure cost: about one allocation per label key and value. serde_json and the
//! library's own deserializer lend every string without escapes; other decoders copy, as
//! before.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Error, Visitor};
use serde::{Deserialize, Deserializer};

/// A string lent from the input, or owned when it had to be unescaped (or the decoder
/// cannot lend). Accepts what `String` accepts.
pub(crate) struct LentStr<'de>(pub Cow<'de, str>);

impl AsRef<str> for LentStr<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for LentStr<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LentVisitor;
        impl<'de> Visitor<'de> for LentVisitor {
            type Value = LentStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<LentStr<'de>, E> {
                Ok(LentStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<LentStr<'de>, E> {
                Ok(LentStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: Error>(self, v: String) -> Result<LentStr<'de>, E> {
                Ok(LentStr(Cow::Owned(v)))
            }
            // `String` takes bytes that are UTF-8; so does this.
            fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<LentStr<'de>, E> {
                match std::str::from_utf8(v) {
                    Ok(s) => Ok(LentStr(Cow::Owned(s.to_owned()))),
                    Err(_) => Err(E::invalid_value(serde::de::Unexpected::Bytes(v), &self)),
                }
            }
            fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<LentStr<'de>, E> {
                match String::from_utf8(v) {
                    Ok(s) => Ok(LentStr(Cow::Owned(s))),
                    Err(e) => Err(E::invalid_value(
                        serde::de::Unexpected::Bytes(&e.into_bytes()),
                        &self,
                    )),
                }
            }
        }
        deserializer.deserialize_string(LentVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lends_plain_strings_and_owns_escaped_ones() {
        let s: LentStr = serde_json::from_str(r#""plain""#).unwrap();
        assert!(matches!(s.0, Cow::Borrowed("plain")));
        let s: LentStr = serde_json::from_str(r#""a\nb""#).unwrap();
        assert!(matches!(&s.0, Cow::Owned(o) if o == "a\nb"));
        let s: LentStr = crate::json::deserializer::from_str(r#""plain""#).unwrap();
        assert!(matches!(s.0, Cow::Borrowed("plain")));
        assert!(serde_json::from_str::<LentStr>("1").is_err());
        let s: LentStr = serde_yaml::from_str("owned by yaml").unwrap();
        assert_eq!(s.0, "owned by yaml");
    }
}
