//! Go's bytes for a message left out of the JSON: its zero value.
//!
//! Why: Go's generated marshaller writes every non-pointer field, so a non-pointer message
//! field absent from the JSON (`metadata` of a bare object, a container's `resources`) is
//! still written, with each of its own non-pointer fields at their zero. Those bytes depend
//! only on the message type, so they are computed once per type and kept: a `Pod` with a
//! dozen absent sub-messages costs a dozen copies, not a dozen walks of the tables.
//! Kept with them: the message's *height* (how many levels of messages its zero value
//! nests), so a caller deep down still refuses what would pass [`MAX_DEPTH`].

use std::sync::OnceLock;

use super::de::MAX_DEPTH;
use super::descriptor::{Kind, Special, INLINE, MAP, MESSAGES, NOJSON, POINTER, REPEATED};
use super::wire::{put_bytes, put_tag, FIXED64, VARINT};

type Zero = (Box<[u8]>, usize);

/// The zero value's bytes of message `index` (without tag or length) and its height.
pub(super) fn zero_content(index: u16) -> (&'static [u8], usize) {
    static ZEROS: OnceLock<Box<[OnceLock<Zero>]>> = OnceLock::new();
    let zeros = ZEROS.get_or_init(|| (0..MESSAGES.len()).map(|_| OnceLock::new()).collect());
    match zeros.get(usize::from(index)) {
        Some(slot) => {
            let (bytes, height) = slot.get_or_init(|| {
                let mut out = Vec::new();
                let height = compute(index, &mut out, 0);
                (out.into_boxed_slice(), height)
            });
            (bytes, *height)
        }
        None => (&[], MAX_DEPTH),
    }
}

/// Writes the zero value of message `index` into `out`; returns its height (`MAX_DEPTH` or
/// more if it nests without end, which Go's types cannot, so is refused).
fn compute(index: u16, out: &mut Vec<u8>, level: usize) -> usize {
    if level >= MAX_DEPTH {
        return MAX_DEPTH;
    }
    let Some(desc) = MESSAGES.get(usize::from(index)) else {
        return MAX_DEPTH;
    };
    match desc.special {
        Special::Time | Special::MicroTime | Special::RawJson => 0,
        Special::SchemaOrArray | Special::SchemaOrStrings => 0,
        Special::Duration | Special::SchemaOrBool => {
            out.extend_from_slice(&[0x08, 0]);
            0
        }
        Special::Quantity => {
            put_bytes(out, 1, b"0");
            0
        }
        Special::IntOrString => {
            out.extend_from_slice(&[0x08, 0, 0x10, 0, 0x1a, 0]);
            0
        }
        Special::Items | Special::None => {
            let mut height = 0;
            let fields = if desc.special == Special::Items {
                desc.field(1).map(std::slice::from_ref).unwrap_or(&[])
            } else {
                desc.fields
            };
            for field in fields {
                if field.has(NOJSON) {
                    continue;
                }
                let inline = field.has(INLINE);
                if !inline
                    && (field.has(MAP)
                        || field.has(REPEATED)
                        || field.has(POINTER)
                        || field.2 == Kind::B)
                {
                    continue;
                }
                match field.2 {
                    Kind::M(child) => {
                        let mut inner = Vec::new();
                        let h = compute(child, &mut inner, level + 1);
                        height = height.max(h.saturating_add(1));
                        put_bytes(out, field.0, &inner);
                    }
                    _ if inline => {}
                    Kind::S | Kind::B => put_bytes(out, field.0, b""),
                    Kind::I32 | Kind::I64 | Kind::Bool => {
                        put_tag(out, field.0, VARINT);
                        out.push(0);
                    }
                    Kind::F64 => {
                        put_tag(out, field.0, FIXED64);
                        out.extend_from_slice(&[0; 8]);
                    }
                }
            }
            height
        }
    }
}
