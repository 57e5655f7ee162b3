//! How deep the raw JSON inside a message (FieldsV1, RawExtension, apiextensions' JSON) may
//! nest: no deeper than the object's JSON form could.
//!
//! Why: serde_json gives every raw value a fresh limit of 128 levels, so without this a
//! message nested [`MAX_DEPTH`](super::MAX_DEPTH) deep could hold raw JSON 128 levels deeper
//! still: twice what the JSON path ever recurses through, on threads of 2 MiB of stack (a
//! stack overflow aborts the process; it cannot be caught). The JSON form of the same object
//! has one limit over its whole text, and counting the enclosing messages against it keeps the
//! protobuf path to what the JSON path accepts.

/// serde_json's limit of nested arrays and objects in one text.
pub(super) const JSON_LIMIT: usize = 128;

/// Whether the JSON text `raw` opens more than `room` arrays or objects inside one another.
/// Strings are skipped (brackets in them do not count). Linear, without allocation; a text
/// too short to nest that deep (two bytes a level) is not even scanned.
pub(super) fn json_deeper_than(raw: &[u8], room: usize) -> bool {
    if raw.len() / 2 <= room {
        return false;
    }
    // No more opening brackets than `room` in the whole text (those in strings only add to
    // the count): it cannot nest deeper. One pass the compiler vectorises; a FieldsV1 of a
    // pod has a few dozen, so the exact walk below is for the rare text that has more.
    let opens: usize = raw
        .iter()
        .map(|&b| usize::from(b == b'{' || b == b'['))
        .sum();
    if opens <= room {
        return false;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in raw {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > room {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::json_deeper_than;

    #[test]
    fn counts_arrays_and_objects_not_brackets_in_strings() {
        let deep = format!("{}{}", "[".repeat(10), "]".repeat(10));
        assert!(!json_deeper_than(deep.as_bytes(), 10));
        assert!(json_deeper_than(deep.as_bytes(), 9));
        let nested = br#"{"a":{"b":[1,{"c":"[[[[[[[[[[\"{{{{{{{{"}]}}"#;
        assert!(!json_deeper_than(nested, 4));
        assert!(json_deeper_than(nested, 3));
        assert!(json_deeper_than(b"{}", 0));
        assert!(!json_deeper_than(b"{}", 1));
        assert!(json_deeper_than(b"[[]]", 1));
        assert!(!json_deeper_than(br#""[[[[[[""#, 1));
        // More brackets than room, all but one in a string: the count alone cannot say, the
        // walk does.
        assert!(!json_deeper_than(br#"{"a":"[[[[[[[[[[{{{{{"}"#, 2));
        assert!(json_deeper_than(br#"{"a":"[[[[[[[[[[{{{{{","b":[[]]}"#, 2));
    }

    /// The library's deserializer on raw JSON inside a message stops at the room the
    /// enclosing messages leave (`room` containers pass, one more does not), and never goes
    /// past serde_json's own limit whatever the room.
    #[test]
    fn embedded_json_has_the_room_it_is_given() {
        use crate::json::deserializer::deserialize_embedded;
        use serde::de::{SeqAccess, Visitor};
        /// Reads a number or an array of values as `serde_json::Value` reads them.
        struct Values;
        impl<'de> Visitor<'de> for Values {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or an array")
            }
            fn visit_u64<E>(self, _: u64) -> Result<(), E> {
                Ok(())
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                while map.next_entry::<String, serde_json::Value>()?.is_some() {}
                Ok(())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
                while seq.next_element::<serde_json::Value>()?.is_some() {}
                Ok(())
            }
        }
        let nested = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        for room in [0, 1, 5, 60, 126, 127] {
            assert!(
                deserialize_embedded(&nested(room), room, Values).is_ok(),
                "{room}"
            );
            assert!(
                deserialize_embedded(&nested(room + 1), room, Values).is_err(),
                "{room}"
            );
        }
        assert!(deserialize_embedded(&nested(127), 500, Values).is_ok());
        assert!(deserialize_embedded(&nested(128), 500, Values).is_err());
        assert!(deserialize_embedded("{} ", 1, Values).is_ok());
        assert!(deserialize_embedded("{} x", 1, Values).is_err());
        assert!(deserialize_embedded("{\"a\":", 1, Values).is_err());
    }
}
