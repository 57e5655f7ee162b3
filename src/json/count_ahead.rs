//! How many elements an array holds, found by reading ahead without checking the grammar.
//!
//! Why: the deserializer tells serde how long an array near the top is
//! (`SeqAccess::size_hint`), so that a `Vec` is allocated once with exactly the room it keeps
//! (see [`deserializer`](super::deserializer)). Counting reads the array's text a second
//! time, and the arrays of an API object hold most of its bytes (a pod's `managedFields`,
//! `containers`, `conditions`): counting them with the checking scanner cost more than a
//! tenth of decoding a k8s-openapi `Pod`. The count does not need the grammar checked, since
//! decoding the same text right after checks every byte and refuses what is wrong; it only
//! needs to be exact for valid JSON. So this reads bytes by class: strings are jumped over
//! eight bytes at a time (an escape is two bytes, whatever it is), brackets and braces move a
//! depth, and a comma at depth zero starts another element.
//!
//! What a malformed array gets is a guess, bounded like any count: the reading stops at its
//! budget, so a hint never exceeds the budget in elements (and serde caps what it reserves
//! for a hint anyway). A container whose end a checked list page recorded
//! ([`known_ends`](super::known_ends)) is jumped over in one step, as the decoder does.

use super::json_scan::find_string_stop;

/// What a byte means to the count.
const OTHER: u8 = 0;
const QUOTE: u8 = 1;
const OPEN: u8 = 2;
const CLOSE_ARRAY: u8 = 3;
const CLOSE_OBJECT: u8 = 4;
const COMMA: u8 = 5;

static CLASS: [u8; 256] = {
    let mut t = [OTHER; 256];
    t[b'"' as usize] = QUOTE;
    t[b'[' as usize] = OPEN;
    t[b'{' as usize] = OPEN;
    t[b']' as usize] = CLOSE_ARRAY;
    t[b'}' as usize] = CLOSE_OBJECT;
    t[b',' as usize] = COMMA;
    t
};

/// The number of elements of the array whose `[` ends just before `pos` in `text`, reading at
/// most `budget` bytes from `pos`. Exact for a valid array; `None` when the array goes on
/// beyond the budget or closes with a `}`; for other malformed text, some count no larger
/// than the bytes read.
pub(crate) fn count_elements(text: &str, pos: usize, budget: usize) -> Option<usize> {
    let limit = pos.saturating_add(budget).min(text.len());
    let bytes = text.as_bytes().get(..limit)?;
    let mut i = pos;
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(i) {
        i += 1;
    }
    if *bytes.get(i)? == b']' {
        return Some(0);
    }
    let mut elements = 1;
    // Containers open inside the array (the array itself not counted).
    let mut depth = 0usize;
    loop {
        let b = *bytes.get(i)?;
        match CLASS[b as usize] {
            QUOTE => {
                i += 1;
                loop {
                    i = find_string_stop(bytes, i);
                    match bytes.get(i)? {
                        b'"' => break,
                        b'\\' => i += 2,
                        _ => i += 1, // a control byte: decoding refuses it
                    }
                }
                i += 1;
            }
            OPEN => {
                if depth == 0 {
                    if let Some(end) = super::known_ends::lookup(text, i) {
                        if end > limit {
                            return None;
                        }
                        i = end;
                        continue;
                    }
                }
                depth += 1;
                i += 1;
            }
            CLOSE_ARRAY | CLOSE_OBJECT if depth == 0 => {
                return (b == b']').then_some(elements);
            }
            CLOSE_ARRAY | CLOSE_OBJECT => {
                depth -= 1;
                i += 1;
            }
            COMMA => {
                if depth == 0 {
                    elements += 1;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count of the array at the start of `text`, read within `budget` bytes.
    fn count(text: &str, budget: usize) -> Option<usize> {
        let open = text.find('[').unwrap();
        count_elements(text, open + 1, budget)
    }

    #[test]
    fn counts_what_serde_json_reads() {
        for text in [
            "[]",
            " [ ] ",
            "[1]",
            "[1, {\"a\": [2, 3]}, \"x,]\", [], null ]",
            r#"["a\"],[", "\\", "\\\"", {"k:{\"uid\":\"x\"}":{}}, [[[]]], -1.5e3, true]"#,
            "[\"é日本\", {\"\u{7f}\": \"\\u00e9\"}]",
            "[\n\t{ } ,\r\n[ ]\n]",
        ] {
            let expected = serde_json::from_str::<Vec<serde_json::Value>>(text)
                .unwrap_or_else(|e| panic!("{text}: {e}"))
                .len();
            assert_eq!(count(text, 1 << 16), Some(expected), "{text}");
        }
    }

    #[test]
    fn stops_at_the_budget_and_on_a_wrong_close() {
        let text = r#"[1, {"a": [2, 3]}, "x,]", [], null ] tail"#;
        assert_eq!(count(text, 1024), Some(5));
        assert_eq!(
            count(text, text.find(']').unwrap()),
            None,
            "beyond the budget"
        );
        assert_eq!(count("[\"é\", 1]", 3), None, "a budget inside a character");
        assert_eq!(count("[1}", 1024), None);
        assert_eq!(count("[\"unterminated", 1024), None);
        assert_eq!(count("[\"ends in an escape\\", 1024), None);
        assert_eq!(count("[[[", 1024), None);
        assert_eq!(count("[", 1024), None);
        // Malformed but closed: some count, never more than the bytes read.
        assert!(count("[1 2]", 1024).is_some_and(|n| n <= 5));
        assert!(count("[,,,,]", 1024).is_some_and(|n| n <= 6));
    }

    #[test]
    fn any_bytes_give_a_bounded_count_without_panicking() {
        // Every string of up to five bytes over the characters that matter.
        let alphabet = ["[", "]", "{", "}", ",", "\"", "\\", "1", " ", "é"];
        let mut texts = vec![String::new()];
        for _ in 0..5 {
            let mut longer = Vec::new();
            for t in &texts {
                for a in alphabet {
                    longer.push(format!("{t}{a}"));
                }
            }
            texts.extend(longer);
        }
        for body in texts {
            let text = format!("[{body}");
            for budget in [0, 1, 3, 1024] {
                if let Some(n) = count_elements(&text, 1, budget) {
                    assert!(n <= budget.max(1), "{text:?} within {budget}: {n}");
                }
                let valid = serde_json::from_str::<Vec<serde_json::Value>>(&text);
                if let (Ok(v), true) = (valid, budget >= text.len()) {
                    assert_eq!(count_elements(&text, 1, budget), Some(v.len()), "{text:?}");
                }
            }
        }
    }
}
