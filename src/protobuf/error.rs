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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtobufError {
    what: Cow<'static, str>,
    offset: Option<usize>,
    path: Vec<&'static str>,
}

impl ProtobufError {
    pub(crate) fn new(what: impl Into<Cow<'static, str>>) -> Self {
        ProtobufError {
            what: what.into(),
            offset: None,
            path: Vec::new(),
        }
    }

    pub(crate) fn at(what: impl Into<Cow<'static, str>>, offset: usize) -> Self {
        ProtobufError {
            what: what.into(),
            offset: Some(offset),
            path: Vec::new(),
        }
    }

    /// Prepends a field name: called while the error travels out of nested messages.
    pub(crate) fn in_field(mut self, name: &'static str) -> Self {
        if self.path.len() < 64 {
            self.path.insert(0, name);
        }
        self
    }

    /// What was wrong, without position.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The byte offset in the input where it went wrong, when known.
    pub fn offset(&self) -> Option<usize> {
        self.offset
    }
}

impl fmt::Display for ProtobufError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("protobuf: ")?;
        f.write_str(&self.what)?;
        if !self.path.is_empty() {
            write!(f, " in {}", self.path.join("."))?;
        }
        if let Some(offset) = self.offset {
            write!(f, " at byte {offset}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ProtobufError {}

impl serde::de::Error for ProtobufError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ProtobufError::new(msg.to_string())
    }
}

impl serde::ser::Error for ProtobufError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ProtobufError::new(msg.to_string())
    }
}
