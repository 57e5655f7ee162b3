//! Container ends found ahead of time, so that decoding a checked page can jump over them.
//!
//! Why: skipping the raw parts of each object (`spec`, `status`, `managedFields`) was the
//! largest cost of decoding a list page, and decoding must happen on the thread that keeps
//! the objects (see the pager). The thread that fetched the page has already paid for its
//! bytes and is otherwise idle, so it checks the whole page's grammar there and records where
//! each container near the top ends ([`KnownEnds::check`]). The decoding thread installs that
//! record for the page's text ([`with_known_ends`]); the scanner then takes a recorded
//! container's text in one step instead of walking it again. Nothing is trusted that was not
//! checked: the record is only ever made by a successful check of the very same text, and a
//! lookup also confirms the brackets at both ends.

use std::cell::RefCell;

use super::json_scan::{Containers, Result, Scanner};

/// How deep containers are recorded: the page (0), its `items` (1), each item (2), the item's
/// members (3, e.g. `spec`) and theirs (4, e.g. `metadata.managedFields`).
const MAX_DEPTH: usize = 4;

/// Smaller containers are cheaper to walk than to look up.
const MIN_LEN: usize = 48;

/// Where the large containers near the top of one JSON text end.
#[derive(Debug, Default)]
pub(crate) struct KnownEnds {
    /// `(start, end)` byte offsets, sorted by start.
    spans: Vec<(u32, u32)>,
}

impl KnownEnds {
    /// Checks that `text` is exactly one JSON value (the whole grammar) and records its
    /// containers' ends. Texts of 4 GiB or more are checked but record nothing.
    pub fn check(text: &str) -> Result<KnownEnds> {
        let mut recorder = Recorder {
            starts: [0; MAX_DEPTH + 1],
            spans: Vec::new(),
            fits: u32::try_from(text.len()).is_ok(),
        };
        let mut scanner = Scanner::new(text);
        scanner.value_recording(&mut recorder)?;
        scanner.end()?;
        let mut spans = recorder.spans;
        spans.sort_unstable();
        Ok(KnownEnds { spans })
    }

    fn end_of(&self, start: usize) -> Option<usize> {
        let i = self.spans.partition_point(|&(s, _)| (s as usize) < start);
        match self.spans.get(i) {
            Some(&(s, e)) if s as usize == start => Some(e as usize),
            _ => None,
        }
    }
}

struct Recorder {
    starts: [usize; MAX_DEPTH + 1],
    spans: Vec<(u32, u32)>,
    fits: bool,
}

impl Containers for Recorder {
    #[inline]
    fn open(&mut self, depth: usize, start: usize) {
        if let Some(slot) = self.starts.get_mut(depth) {
            *slot = start;
        }
    }

    #[inline]
    fn close(&mut self, depth: usize, end: usize) {
        if let Some(&start) = self.starts.get(depth) {
            if self.fits && end - start >= MIN_LEN {
                self.spans.push((start as u32, end as u32));
            }
        }
    }
}

/// The record in use on this thread, with the address of the text it describes.
struct Installed {
    base: usize,
    len: usize,
    ends: KnownEnds,
}

thread_local! {
    static INSTALLED: RefCell<Option<Installed>> = const { RefCell::new(None) };
}

/// Runs `decode` with `ends` (made by [`KnownEnds::check`] of `text`) in use for scanners on
/// this thread that read `text` or a part of it.
pub(crate) fn with_known_ends<R>(text: &str, ends: KnownEnds, decode: impl FnOnce() -> R) -> R {
    /// Takes the record out again, also if `decode` panics.
    struct Uninstall;
    impl Drop for Uninstall {
        fn drop(&mut self) {
            let _ = INSTALLED.try_with(|slot| slot.borrow_mut().take());
        }
    }
    INSTALLED.with(|slot| {
        *slot.borrow_mut() = Some(Installed {
            base: text.as_ptr() as usize,
            len: text.len(),
            ends,
        })
    });
    let _uninstall = Uninstall;
    decode()
}

/// The end of the container that starts at `text[start]`, when a record in use on this thread
/// knows it.
#[inline]
pub(crate) fn lookup(text: &str, start: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let open = *bytes.get(start)?;
    if open != b'{' && open != b'[' {
        return None;
    }
    let addr = text.as_ptr() as usize + start;
    let end_addr = INSTALLED
        .try_with(|slot| {
            let slot = slot.borrow();
            let installed = slot.as_ref()?;
            let offset = addr.checked_sub(installed.base)?;
            if offset >= installed.len {
                return None;
            }
            let end = installed.ends.end_of(offset)?;
            Some(installed.base + end)
        })
        .ok()??;
    let end = end_addr.checked_sub(text.as_ptr() as usize)?;
    let close = if open == b'{' { b'}' } else { b']' };
    (end <= bytes.len() && end > start && bytes[end - 1] == close).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A static, not a const: the tests rely on one address for the text.
    static PAGE: &str = r#"{"metadata":{"resourceVersion":"9"},"items":[
        {"metadata":{"name":"a","labels":{"k":"v"},"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}]},
         "spec":{"containers":[{"name":"c","image":"i"}],"nodeName":"n"},"status":{"phase":"Running"}},
        {"metadata":{"name":"b"},"spec":[1,2,3,{"x":"a string that is long enough to be recorded"}]}]}"#;

    #[test]
    fn records_large_containers_near_the_top() {
        let ends = KnownEnds::check(PAGE).unwrap();
        assert!(!ends.spans.is_empty());
        for &(s, e) in &ends.spans {
            let (s, e) = (s as usize, e as usize);
            // Each span is exactly one JSON value, as the plain scanner finds it.
            let mut scanner = Scanner::new(&PAGE[s..]);
            assert_eq!(scanner.value().unwrap(), &PAGE[s..e]);
            assert!(e - s >= MIN_LEN);
        }
        let spec = PAGE.find(r#"{"containers""#).unwrap();
        assert!(
            ends.end_of(spec).is_some(),
            "a member of an item is recorded"
        );
        let fields = PAGE.find(r#"{"f:a""#).unwrap();
        assert!(ends.end_of(fields).is_none(), "deep and small ones are not");
    }

    #[test]
    fn decoding_with_the_record_gives_the_same_values() {
        let ends = KnownEnds::check(PAGE).unwrap();
        let items = PAGE.find('[').unwrap();
        let plain = Scanner::new(&PAGE[items..]).value().unwrap();
        let jumped = with_known_ends(PAGE, ends, || {
            let mut scanner = Scanner::new(&PAGE[items..]);
            assert!(lookup(&PAGE[items..], 0).is_some(), "the record is in use");
            scanner.value().unwrap()
        });
        assert_eq!(plain, jumped);
        assert!(lookup(&PAGE[items..], 0).is_none(), "and gone afterwards");
    }

    /// Decodes `text` as a list of `DynamicObject`s, with the record or without; the result
    /// as comparable text.
    fn decode(text: &str, with_record: bool) -> String {
        use crate::api::{DynamicObject, ObjectList};
        let decode = || match ObjectList::<DynamicObject>::from_json(text) {
            Ok(list) => serde_json::to_string(&list.items).unwrap(),
            Err(e) => format!("error: {e}"),
        };
        match (with_record, KnownEnds::check(text)) {
            (true, Ok(ends)) => with_known_ends(text, ends, decode),
            _ => decode(),
        }
    }

    #[test]
    fn damaged_pages_decode_the_same_with_the_record_or_without() {
        // Seeded byte damage (flips, deletions, duplications) to a page: whatever the check
        // accepts decodes exactly as the plain scanner decodes it, and the check accepts
        // exactly what the plain scanner accepts.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut checked = 0;
        for _ in 0..3000 {
            let mut bytes = PAGE.as_bytes().to_vec();
            for _ in 0..=(next() % 3) {
                let at = (next() as usize) % bytes.len();
                match next() % 3 {
                    0 => bytes[at] = b"{}[],:\"0 \\x"[(next() % 11) as usize],
                    1 => {
                        bytes.remove(at);
                    }
                    _ => {
                        let b = bytes[at];
                        bytes.insert(at, b);
                    }
                }
            }
            let Ok(text) = std::str::from_utf8(&bytes) else {
                continue;
            };
            let plain = {
                let mut scanner = Scanner::new(text);
                scanner.value().and_then(|_| scanner.end()).is_ok()
            };
            assert_eq!(KnownEnds::check(text).is_ok(), plain, "{text}");
            assert_eq!(decode(text, true), decode(text, false), "{text}");
            checked += usize::from(plain);
        }
        assert!(
            checked >= 300,
            "only {checked} damaged pages were still JSON"
        );
    }

    #[test]
    fn other_texts_and_bad_pages_are_not_affected() {
        let ends = KnownEnds::check(PAGE).unwrap();
        let copy = PAGE.to_owned();
        with_known_ends(PAGE, ends, || {
            // The same bytes at another address are not the checked text.
            assert!(lookup(&copy, 0).is_none());
        });
        for bad in [r#"{"items":[{"a":1}"#, r#"{"items":[{"a":01}]}"#, "[] []"] {
            assert!(KnownEnds::check(bad).is_err(), "{bad}");
        }
    }
}
