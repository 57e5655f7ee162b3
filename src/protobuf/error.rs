//! The protobuf codec's error: what went wrong and where, never the bytes themselves.
//!
//! A body may be a Secret's: the error names the byte offset and the field path (message and
//! field names from the descriptor tables), and the kind of failure, so a log line is safe.

use std::borrow::Cow;
use std::fmt;

/// A protobuf body (or part of one) that could not be decoded or encoded.
///
/// Its `Display` gives what was wrong, the byte offset in the input when it is known, and the
/// path of fields being read (`Pod.spec.containers.ports`); never payload bytes.
///
/// One pointer wide (the details are boxed, as serde_json's error is): every `Result` the
/// decoder passes up through each field and element stays small on the successful path, and
/// since the decoder recurses once per nested message through serde's visitors (k8s-openapi's
/// hold a temporary `Result` per field), its size multiplies into the stack each level costs.
#[derive(Clone, PartialEq, Eq)]
pub struct ProtobufError(Box<Details>);

#[derive(Clone, PartialEq, Eq)]
struct Details {
    what: Cow<'static, str>,
    offset: Option<usize>,
    path: Vec<&'static str>,
}

impl fmt::Debug for ProtobufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtobufError")
            .field("what", &self.0.what)
            .field("offset", &self.0.offset)
            .field("path", &self.0.path)
            .finish()
    }
}

impl ProtobufError {
    pub(crate) fn new(what: impl Into<Cow<'static, str>>) -> Self {
        ProtobufError(Box::new(Details {
            what: what.into(),
            offset: None,
            path: Vec::new(),
        }))
    }

    pub(crate) fn at(what: impl Into<Cow<'static, str>>, offset: usize) -> Self {
        ProtobufError(Box::new(Details {
            what: what.into(),
            offset: Some(offset),
            path: Vec::new(),
        }))
    }

    /// Prepends a field name: called while the error travels out of nested messages.
    pub(crate) fn in_field(mut self, name: &'static str) -> Self {
        if self.0.path.len() < 64 {
            self.0.path.insert(0, name);
        }
        self
    }

    /// What was wrong, without position.
    pub fn what(&self) -> &str {
        &self.0.what
    }

    /// The byte offset in the input where it went wrong, when known.
    pub fn offset(&self) -> Option<usize> {
        self.0.offset
    }
}

impl fmt::Display for ProtobufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("protobuf: ")?;
        f.write_str(&self.0.what)?;
        if !self.0.path.is_empty() {
            write!(f, " in {}", self.0.path.join("."))?;
        }
        if let Some(offset) = self.0.offset {
            write!(f, " at byte {offset}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProtobufError {}

/// Errors raised by the `Deserialize` impls the codec drives (k8s-openapi's, ours, a user's).
/// serde's default wording quotes the offending value (`invalid type: string "…"`), and a value
/// may be a Secret's: here each names the kind of value only, as the JSON path's
/// `json_error_summary` does. The codec's own errors never come through this trait.
impl serde::de::Error for ProtobufError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        // A foreign message may quote anything; keep only a missing field's name (ours).
        let text = msg.to_string();
        match text
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split_once('`'))
        {
            Some((field, _)) if field.len() <= 64 => {
                ProtobufError::new(format!("missing field `{field}`"))
            }
            _ => ProtobufError::new("a value does not fit its type"),
        }
    }

    fn invalid_type(
        unexpected: serde::de::Unexpected<'_>,
        expected: &dyn serde::de::Expected,
    ) -> Self {
        ProtobufError::new(format!(
            "invalid type: {}, expected {expected}",
            kind_of(&unexpected)
        ))
    }

    fn invalid_value(
        unexpected: serde::de::Unexpected<'_>,
        expected: &dyn serde::de::Expected,
    ) -> Self {
        ProtobufError::new(format!(
            "invalid value: {}, expected {expected}",
            kind_of(&unexpected)
        ))
    }

    fn invalid_length(len: usize, expected: &dyn serde::de::Expected) -> Self {
        ProtobufError::new(format!("invalid length {len}, expected {expected}"))
    }

    fn unknown_variant(_variant: &str, _expected: &'static [&'static str]) -> Self {
        ProtobufError::new("unknown variant")
    }

    fn unknown_field(_field: &str, _expected: &'static [&'static str]) -> Self {
        ProtobufError::new("unknown field")
    }

    fn missing_field(field: &'static str) -> Self {
        ProtobufError::new(format!("missing field `{field}`"))
    }

    fn duplicate_field(field: &'static str) -> Self {
        ProtobufError::new(format!("duplicate field `{field}`"))
    }
}

/// The kind of an unexpected value, without the value.
fn kind_of(unexpected: &serde::de::Unexpected<'_>) -> &'static str {
    use serde::de::Unexpected as U;
    match unexpected {
        U::Bool(_) => "a boolean",
        U::Unsigned(_) | U::Signed(_) => "an integer",
        U::Float(_) => "a floating point number",
        U::Char(_) => "a character",
        U::Str(_) => "a string",
        U::Bytes(_) => "bytes",
        U::Unit => "null",
        U::Option => "an optional value",
        U::NewtypeStruct => "a newtype struct",
        U::Seq => "a sequence",
        U::Map => "a map",
        U::Enum => "an enum",
        U::UnitVariant | U::NewtypeVariant | U::TupleVariant | U::StructVariant => {
            "an enum variant"
        }
        U::Other(_) => "another value",
    }
}

impl serde::ser::Error for ProtobufError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ProtobufError::new(msg.to_string())
    }
}

#[cfg(test)]
mod serde_error_tests {
    use super::ProtobufError;
    use serde::de::{Error, Unexpected};

    #[test]
    fn serde_errors_name_the_kind_of_value_never_the_value() {
        let errors = [
            ProtobufError::invalid_type(Unexpected::Str("s3cret-token"), &"an integer"),
            ProtobufError::invalid_value(Unexpected::Bytes(b"s3cret-token"), &"a date"),
            ProtobufError::unknown_variant("s3cret-token", &["Always"]),
            ProtobufError::unknown_field("s3cret-token", &["a"]),
            ProtobufError::custom("invalid character in \"s3cret-token\""),
        ];
        for e in &errors {
            assert!(!e.to_string().contains("s3cret"), "{e}");
        }
        assert_eq!(
            errors[0].to_string(),
            "protobuf: invalid type: a string, expected an integer"
        );
        assert_eq!(
            ProtobufError::custom("missing field `name`").to_string(),
            "protobuf: missing field `name`"
        );
    }
}
