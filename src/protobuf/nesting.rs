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
    }
}
