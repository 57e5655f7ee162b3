//! Protobuf's wire format at its lowest: varints, tags and length-delimited slices.
//!
//! Every length is checked against the bytes left before anything is sliced, so a hostile
//! length (a varint of 2^60) is an error and never an allocation; nothing here allocates.

use super::ProtobufError;

/// Wire type 0: a varint (int32, int64, bool, enum).
pub(crate) const VARINT: u8 = 0;
/// Wire type 1: eight little-endian bytes (fixed64, double).
pub(crate) const FIXED64: u8 = 1;
/// Wire type 2: a length and that many bytes (string, bytes, message, packed repeated).
pub(crate) const LEN: u8 = 2;
/// Wire type 5: four little-endian bytes (fixed32, float).
pub(crate) const FIXED32: u8 = 5;

/// One field's value as it lies on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32(u32),
}

impl Value<'_> {
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => VARINT,
            Value::Fixed64(_) => FIXED64,
            Value::Len(_) => LEN,
            Value::Fixed32(_) => FIXED32,
        }
    }
}

/// Reads the fields of one message in order. `base` is the offset of `buf` in the whole
/// body, so errors name absolute positions.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// The absolute offset of the next byte.
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// How many varints the rest holds (the bytes that end one), for a packed run.
    pub(crate) fn varints_left(&self) -> usize {
        self.buf[self.pos.min(self.buf.len())..]
            .iter()
            .filter(|b| **b < 0x80)
            .count()
    }

    /// A varint of at most ten bytes (the tenth may carry one bit).
    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, ProtobufError> {
        // Tags, lengths of short strings and small numbers: one byte.
        if let Some(&byte) = self.buf.get(self.pos) {
            if byte < 0x80 {
                self.pos += 1;
                return Ok(u64::from(byte));
            }
        }
        self.varint_long()
    }

    #[inline(never)]
    fn varint_long(&mut self) -> Result<u64, ProtobufError> {
        let start = self.offset();
        let mut value: u64 = 0;
        for i in 0..10 {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(ProtobufError::at("truncated varint", start));
            };
            self.pos += 1;
            if i == 9 && byte > 1 {
                return Err(ProtobufError::at("varint longer than 64 bits", start));
            }
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtobufError::at("varint longer than 64 bits", start))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        let start = self.offset();
        if n > self.buf.len() - self.pos {
            return Err(ProtobufError::at(
                "length beyond the end of the input",
                start,
            ));
        }
        let slice = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(slice)
    }

    /// The next field: its number, the offset of its value, and its value; `None` at the end.
    pub(crate) fn field(&mut self) -> Result<Option<(u32, usize, Value<'a>)>, ProtobufError> {
        if self.is_empty() {
            return Ok(None);
        }
        let tag_at = self.offset();
        let tag = self.varint()?;
        let number = tag >> 3;
        if number == 0 || number > (1 << 29) - 1 {
            return Err(ProtobufError::at("invalid field number", tag_at));
        }
        let value_at = self.offset();
        let value = match (tag & 7) as u8 {
            VARINT => Value::Varint(self.varint()?),
            FIXED64 => {
                let b = self.take(8)?;
                Value::Fixed64(u64::from_le_bytes(b.try_into().expect("eight bytes")))
            }
            LEN => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| {
                    ProtobufError::at("length beyond the end of the input", value_at)
                })?;
                Value::Len(self.take(len).map_err(|_| {
                    ProtobufError::at("length beyond the end of the input", value_at)
                })?)
            }
            FIXED32 => {
                let b = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes(b.try_into().expect("four bytes")))
            }
            _ => {
                return Err(ProtobufError::at(
                    "unsupported wire type (groups are not used by Kubernetes)",
                    tag_at,
                ))
            }
        };
        Ok(Some((number as u32, value_at, value)))
    }
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a tag.
pub(crate) fn put_tag(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_tag(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The number of bytes of a varint.
pub(crate) fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v));
            assert_eq!(Reader::new(&out, 0).varint().unwrap(), v);
        }
        let eleven = [0xffu8; 11];
        assert!(Reader::new(&eleven, 0).varint().is_err());
        let ten_too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Reader::new(&ten_too_big, 0).varint().is_err());
    }

    #[test]
    fn a_huge_length_is_an_error_not_an_allocation() {
        // field 1, wire type 2, length 2^60
        let mut body = vec![0x0a];
        put_varint(&mut body, 1 << 60);
        let err = Reader::new(&body, 0).field().unwrap_err();
        assert_eq!(err.what(), "length beyond the end of the input");
        assert_eq!(err.offset(), Some(1));
    }

    #[test]
    fn groups_and_field_zero_are_errors() {
        assert!(Reader::new(&[0x0b], 0).field().is_err()); // start group
        assert!(Reader::new(&[0x00, 0x00], 0).field().is_err()); // field 0
    }
}
