//! The JSON text of a `RawExtension`, `FieldsV1` or `JSON` member (its protobuf bytes are
//! that text), written without a tree when that gives the same text.
//!
//! Why: the text must be what `serde_json` makes of the value as a `serde_json::Value`
//! (object keys in `Value`'s order, a key given twice once, `f32` widened), which is what
//! the JSON path sends and what the encoder wrote before. Building that tree for every
//! `managedFields` entry cost an allocation per key. Most values are already in that form
//! (k8s-openapi holds `FieldsV1` as a `serde_json::Value`, whose keys come out sorted), so the
//! text is written directly, and a formatter watching the writer says whether it is:
//! every object's keys strictly increasing (compared unescaped: `managedFields` keys hold
//! quotes), no key that is not a string, no `RawValue` text copied verbatim, no `f32` or 128-bit number. Anything else,
//! or any error, goes the old way, through the tree: same text, more work.

use std::io;

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// `value`'s JSON text as `serde_json::to_vec(&serde_json::to_value(value)?)` gives it, into
/// `out` (cleared first). `once`: the value can be serialized only once (it is being read
/// from JSON text as it is parsed); then the tree is made from the text written, which holds
/// only what the parser gave (strings, `i64`/`u64`/`f64` numbers, objects in their order).
pub(super) fn raw_json_text<T: Serialize + ?Sized>(
    value: &T,
    out: &mut Vec<u8>,
    once: bool,
) -> Result<(), serde_json::Error> {
    out.clear();
    let mut watch = Watch::default();
    let written = {
        let mut ser = serde_json::Serializer::with_formatter(&mut *out, Canonical(&mut watch));
        value.serialize(&mut ser)
    };
    if written.is_ok() && !watch.off {
        return Ok(());
    }
    let tree: serde_json::Value = if once {
        written?;
        serde_json::from_slice(out)?
    } else {
        serde_json::to_value(value)?
    };
    out.clear();
    serde_json::to_writer(&mut *out, &tree)
}

#[derive(Default)]
struct Watch {
    /// Per open object: whether it has had a key, and its last key (reused).
    levels: Vec<(bool, Vec<u8>)>,
    depth: usize,
    in_key: bool,
    key: Vec<u8>,
    /// The text may differ from the tree's: use the tree.
    off: bool,
}

struct Canonical<'a>(&'a mut Watch);

impl Canonical<'_> {
    fn not_plain(&mut self) {
        self.0.off = true;
    }
    fn number_in_key(&mut self) {
        if self.0.in_key {
            self.0.off = true;
        }
    }
}

macro_rules! plain_number {
    ($($f:ident($t:ty);)*) => {
        $(fn $f<W: ?Sized + io::Write>(&mut self, w: &mut W, v: $t) -> io::Result<()> {
            self.number_in_key();
            CompactFormatter.$f(w, v)
        })*
    };
}

impl Formatter for Canonical<'_> {
    plain_number! {
        write_i8(i8); write_i16(i16); write_i32(i32); write_i64(i64);
        write_u8(u8); write_u16(u16); write_u32(u32); write_u64(u64); write_f64(f64);
    }
    fn write_bool<W: ?Sized + io::Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        self.number_in_key();
        CompactFormatter.write_bool(w, v)
    }
    fn write_i128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        self.not_plain();
        CompactFormatter.write_i128(w, v)
    }
    fn write_u128<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        self.not_plain();
        CompactFormatter.write_u128(w, v)
    }
    fn write_f32<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        self.not_plain();
        CompactFormatter.write_f32(w, v)
    }
    fn write_number_str<W: ?Sized + io::Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.not_plain();
        CompactFormatter.write_number_str(w, v)
    }
    fn write_raw_fragment<W: ?Sized + io::Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.not_plain();
        CompactFormatter.write_raw_fragment(w, v)
    }
    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        if self.0.in_key {
            // Compared as the key's own bytes (`Value` orders keys by them).
            use serde_json::ser::CharEscape as E;
            let byte = match escape {
                E::Quote => b'"',
                E::ReverseSolidus => b'\\',
                E::Solidus => b'/',
                E::Backspace => 0x08,
                E::FormFeed => 0x0c,
                E::LineFeed => b'\n',
                E::CarriageReturn => b'\r',
                E::Tab => b'\t',
                E::AsciiControl(byte) => byte,
            };
            self.0.key.push(byte);
        }
        CompactFormatter.write_char_escape(w, escape)
    }
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if self.0.in_key {
            self.0.key.extend_from_slice(fragment.as_bytes());
        }
        CompactFormatter.write_string_fragment(w, fragment)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let watch = &mut *self.0;
        if watch.levels.len() <= watch.depth {
            watch.levels.push((false, Vec::new()));
        }
        watch.levels[watch.depth].0 = false;
        watch.depth += 1;
        CompactFormatter.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.depth = self.0.depth.saturating_sub(1);
        CompactFormatter.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.in_key = true;
        self.0.key.clear();
        CompactFormatter.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let watch = &mut *self.0;
        watch.in_key = false;
        match watch
            .depth
            .checked_sub(1)
            .and_then(|d| watch.levels.get_mut(d))
        {
            Some((had, last)) => {
                // Strictly increasing: a key out of order or given twice needs the tree.
                if *had && watch.key <= *last {
                    watch.off = true;
                }
                *had = true;
                std::mem::swap(last, &mut watch.key);
            }
            None => watch.off = true,
        }
        CompactFormatter.end_object_key(w)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn tree_text<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
        let tree = serde_json::to_value(value).ok()?;
        serde_json::to_vec(&tree).ok()
    }

    fn direct<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        raw_json_text(value, &mut out, false).ok().map(|()| out)
    }

    #[test]
    fn the_text_is_the_trees_whatever_the_value() {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.to_owned()).unwrap();
        let fields = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {}});
        assert_eq!(direct(&fields), tree_text(&fields));
        assert_eq!(direct(&json!(null)), tree_text(&json!(null)));
        // Keys out of order, given twice, empty, escaped, not strings; f32, u128, RawValue.
        let mut by_int = BTreeMap::new();
        by_int.insert(10, 1);
        by_int.insert(9, 2);
        let cases: Vec<Box<dyn erased::Ser>> = vec![
            Box::new(raw(r#"{"b":1,"a":2}"#)),
            Box::new(raw(r#"{"a":1,"a":2}"#)),
            Box::new(raw(r#"{ "a" : 1.0e2 }"#)),
            Box::new(raw(r#"{"":1,"a":{"":2}}"#)),
            Box::new(raw(r#"{"a\"":1,"a":2}"#)),
            Box::new(json!({"k:{\"name\":\"b\"}": {}, "k:{\"name\":\"a\"}\n": 1, "\u{1}": 2})),
            Box::new(by_int),
            Box::new(0.1f32),
            Box::new(u128::MAX),
            Box::new(f64::NAN),
            Box::new(json!({"b": [{"d": 1, "c": 2}], "a": "\u{1}"})),
        ];
        for case in &cases {
            assert_eq!(case.text(), case.tree());
        }
    }

    /// Boxes of different `Serialize` types in one list.
    mod erased {
        pub trait Ser {
            fn text(&self) -> Option<Vec<u8>>;
            fn tree(&self) -> Option<Vec<u8>>;
        }
        impl<T: serde::Serialize> Ser for T {
            fn text(&self) -> Option<Vec<u8>> {
                super::direct(self)
            }
            fn tree(&self) -> Option<Vec<u8>> {
                super::tree_text(self)
            }
        }
    }
}
