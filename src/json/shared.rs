//! Values that repeat across objects, decoded once and shared.
//!
//! Why: the objects of one resource repeat themselves. Every pod of a ReplicaSet carries the
//! same `generateName`, the same owner reference and the same labels; every pod of a
//! namespace the same namespace; every object the same `apiVersion` and `kind`. Decoded as
//! owned strings, each repetition was its own allocation (a third of the allocations of a
//! cached pod) and its own bytes in the cache. Here the decoding thread remembers the values
//! it made last, in a small table, and hands out another reference to an equal one instead
//! of a copy.
//!
//! The table is per thread (no lock: a reflector decodes on its own thread), direct-mapped
//! (a value goes in the one slot its hash names, replacing what was there) and bounded in
//! slots and in the size of what it keeps: at most 512 strings of up to 128 bytes and 128
//! maps of up to 1 KiB, under 200 KiB per decoding thread; crafted input can only make it
//! miss, never grow. Sharing changes no value: the shared types are immutable, and equality
//! is by content. What it keeps outlives the objects it came from until it is replaced or
//! the thread ends, as freed memory keeps its bytes until reused; it is never printed.

use std::cell::RefCell;
use std::sync::Arc;

/// Slots for strings; a power of two.
const STRING_SLOTS: usize = 512;
/// Strings longer than this are not kept (names of owners and namespaces are far shorter).
const LONGEST_STRING: usize = 128;
/// Slots for label and annotation maps; a power of two.
const MAP_SLOTS: usize = 128;
/// Maps holding more than this (text and offsets) are not kept.
const LONGEST_MAP: usize = 1024;

/// The text and entry ends of a label or annotation map (what `StringMap` is made of).
pub(crate) type MapParts = (Arc<str>, Arc<[(u32, u32)]>);

struct Table {
    strings: Vec<Option<Arc<str>>>,
    maps: Vec<Option<MapParts>>,
}

thread_local! {
    static TABLE: RefCell<Table> = RefCell::new(Table {
        strings: vec![None; STRING_SLOTS],
        maps: vec![None; MAP_SLOTS],
    });
}

/// A fast hash of bytes (not for hash tables an attacker fills: a collision here costs one
/// allocation, nothing more).
pub(crate) struct ValueHash(u64);

impl ValueHash {
    pub(crate) fn new() -> ValueHash {
        ValueHash(0)
    }

    pub(crate) fn add(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        // The length goes in too, so "a" + "bc" and "ab" + "c" differ.
        self.mix(u64::from_le_bytes(tail) ^ ((bytes.len() as u64) << 56));
    }

    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn slot(&self, slots: usize) -> usize {
        // The high bits are the best mixed.
        (self.0 >> 32) as usize & (slots - 1)
    }
}

/// `text` as an `Arc<str>`: another reference to an equal string this thread made recently,
/// or a new one (kept for next time when short).
pub(crate) fn share_str(text: &str) -> Arc<str> {
    if text.len() > LONGEST_STRING {
        return Arc::from(text);
    }
    let mut hash = ValueHash::new();
    hash.add(text.as_bytes());
    let slot = hash.slot(STRING_SLOTS);
    let kept = TABLE.try_with(|table| {
        let mut table = table.try_borrow_mut().ok()?;
        match &table.strings[slot] {
            Some(kept) if **kept == *text => Some(kept.clone()),
            _ => {
                let made: Arc<str> = Arc::from(text);
                table.strings[slot] = Some(made.clone());
                Some(made)
            }
        }
    });
    // The thread is ending (its table is gone), or the table is in use up the stack: no
    // sharing this time.
    kept.ok().flatten().unwrap_or_else(|| Arc::from(text))
}

/// The parts of a map with these entries (sorted by key, no key twice; `hash` covers all of
/// them in order; `size` is the bytes the map's parts will hold, text and offsets): an equal
/// map's parts this thread made recently, or new ones made by `make`.
///
/// No borrow of the table is held while `entries` is read or `make` runs (both may run a
/// caller's `AsRef`), so nothing here can be re-entered into a borrow.
pub(crate) fn share_map<'e>(
    entries: impl Iterator<Item = (&'e str, &'e str)> + Clone,
    hash: &ValueHash,
    size: usize,
    make: impl FnOnce() -> MapParts,
) -> MapParts {
    if size > LONGEST_MAP {
        return make();
    }
    let slot = hash.slot(MAP_SLOTS);
    let kept = TABLE
        .try_with(|table| table.try_borrow().ok().and_then(|t| t.maps[slot].clone()))
        .ok()
        .flatten();
    if let Some((text, ends)) = kept {
        if same_entries(&text, &ends, entries) {
            return (text, ends);
        }
    }
    let made = make();
    // A thread ending meanwhile, or a borrow elsewhere on the stack: just keep nothing.
    let _ = TABLE.try_with(|table| {
        if let Ok(mut table) = table.try_borrow_mut() {
            table.maps[slot] = Some(made.clone());
        }
    });
    made
}

thread_local! {
    /// Where a new map's text is gathered before its one copy into the map's own buffer.
    static TEXT_BUFFER: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Runs `f` with the thread's text buffer, emptied (taken out for the call, so a call from
/// within `f` gets a fresh `String`). A buffer grown past 64 KiB is let go afterwards.
pub(crate) fn with_text_buffer<R>(f: impl FnOnce(&mut String) -> R) -> R {
    let mut buffer = TEXT_BUFFER
        .try_with(|kept| kept.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    buffer.clear();
    let result = f(&mut buffer);
    if buffer.capacity() <= 64 * 1024 {
        let _ = TEXT_BUFFER.try_with(|kept| {
            if let Ok(mut kept) = kept.try_borrow_mut() {
                *kept = buffer;
            }
        });
    }
    result
}

/// True when the map `(text, ends)` has exactly `entries`, in order.
fn same_entries<'e>(
    text: &str,
    ends: &[(u32, u32)],
    mut entries: impl Iterator<Item = (&'e str, &'e str)>,
) -> bool {
    let mut start = 0usize;
    for &(key_end, value_end) in ends {
        let (key_end, value_end) = (key_end as usize, value_end as usize);
        match entries.next() {
            Some((k, v))
                if text.get(start..key_end) == Some(k)
                    && text.get(key_end..value_end) == Some(v) => {}
            _ => return false,
        }
        start = value_end;
    }
    entries.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_one_allocation_and_values_never_change() {
        let a = share_str("team-5");
        let b = share_str(&String::from("team-5"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*share_str("team-6"), "team-6");
        let long = "x".repeat(LONGEST_STRING + 1);
        let (c, d) = (share_str(&long), share_str(&long));
        assert!(!Arc::ptr_eq(&c, &d), "long strings are not kept");
        assert_eq!(c, d);
        assert_eq!(&*share_str(""), "");
    }

    #[test]
    fn colliding_strings_replace_each_other_and_stay_correct() {
        // More distinct strings than slots: every answer is still the string asked for.
        let texts: Vec<String> = (0..STRING_SLOTS * 3).map(|i| format!("ns-{i}")).collect();
        for _ in 0..2 {
            for t in &texts {
                assert_eq!(&*share_str(t), t.as_str());
            }
        }
    }

    #[test]
    fn the_hash_tells_splits_of_the_same_bytes_apart() {
        let of = |parts: &[&str]| {
            let mut h = ValueHash::new();
            for p in parts {
                h.add(p.as_bytes());
            }
            h.0
        };
        assert_ne!(of(&["a", "bc"]), of(&["ab", "c"]));
        assert_ne!(of(&["app", "web"]), of(&["appw", "eb"]));
        assert_eq!(of(&["app", "web"]), of(&["app", "web"]));
    }
}
