//! A validating JSON scanner: walks a document, checking its grammar, without building values.
//!
//! Why: most of an object's bytes (`spec`, `status`, `managedFields`) are kept as raw text, and
//! serde_json's generic "skip this value" path was half of the time to decode a realistic pod.
//! This scanner checks the same grammar (RFC 8259: strings and their escapes, numbers,
//! literals, nesting at any depth like serde_json's raw values) with a tight byte loop over
//! text already known to be UTF-8, and hands out the exact slices it skipped. Lone surrogates
//! in `\u` escapes pass in skipped values, as they do in serde_json's raw values, and are an
//! error in strings the library decodes, as they are in serde_json. The `json_scan` fuzz
//! target checks that it accepts exactly what serde_json accepts.

use std::borrow::Cow;
use std::fmt;

/// Where and why a document is not valid JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanError {
    /// Byte offset of the problem.
    pub pos: usize,
    /// What was wrong there.
    pub what: &'static str,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.pos)
    }
}

impl From<ScanError> for serde_json::Error {
    fn from(e: ScanError) -> Self {
        <serde_json::Error as serde::de::Error>::custom(e)
    }
}

pub(crate) type Result<T> = std::result::Result<T, ScanError>;

/// Bytes that end the fast run of a string body: the quote, the backslash, control bytes.
static STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The index of the first byte at or after `i` that ends a string's ordinary run (a quote, a
/// backslash or a control byte), or `bytes.len()`. Eight bytes at a time: each test finds the
/// bytes of a word that equal a value (or are below 0x20) by the borrow trick, whose lowest
/// flagged byte is always exact.
#[inline(always)]
pub(super) fn find_string_stop(bytes: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let w = u64::from_le_bytes(word);
        let quote = w ^ (ONES * b'"' as u64);
        let backslash = w ^ (ONES * b'\\' as u64);
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let found = found & HIGH;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i) {
        if STRING_STOP[b as usize] {
            break;
        }
        i += 1;
    }
    i
}

/// A cursor over one JSON text.
pub(crate) struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

/// A member name as it appears between its quotes (escapes not yet undone).
#[derive(Clone, Copy)]
pub(crate) struct Key<'a> {
    raw: &'a str,
    escaped: bool,
    pos: usize,
}

impl<'a> Key<'a> {
    /// Whether the name is `name` (an escaped spelling of it too).
    pub fn is(&self, name: &str) -> bool {
        if self.escaped {
            self.text().is_ok_and(|t| t == name)
        } else {
            self.raw == name
        }
    }

    /// The name with escapes undone.
    pub fn text(&self) -> Result<Cow<'a, str>> {
        if self.escaped {
            unescape(self.raw, self.pos).map(Cow::Owned)
        } else {
            Ok(Cow::Borrowed(self.raw))
        }
    }

    /// The name as written between its quotes, escapes not undone.
    pub fn raw(&self) -> &'a str {
        self.raw
    }

    /// Byte offset of the name's opening quote.
    pub fn pos(&self) -> usize {
        self.pos
    }
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Scanner<'a> {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    /// Byte offset of the cursor.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// The whole text the scanner reads.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// Moves the cursor forward by `n` bytes (after a value decoded elsewhere).
    pub fn advance(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.bytes.len());
    }

    /// The text from the cursor on.
    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn err<T>(&self, what: &'static str) -> Result<T> {
        self.err_at(self.pos, what)
    }

    #[cold]
    fn err_at<T>(&self, pos: usize, what: &'static str) -> Result<T> {
        Err(ScanError { pos, what })
    }

    #[inline(always)]
    fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    /// The next non-whitespace byte, not consumed.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.pos).copied()
    }

    /// Consumes `b` if it is next (after whitespace); otherwise fails with `what`.
    pub fn expect(&mut self, b: u8, what: &'static str) -> Result<()> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(what)
        }
    }

    /// Succeeds when only whitespace is left.
    pub fn end(&mut self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => self.err("trailing characters after the JSON value"),
        }
    }

    /// Consumes `null` if it is next.
    pub fn take_null(&mut self) -> Result<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Consumes a `{`.
    pub fn begin_object(&mut self) -> Result<()> {
        self.expect(b'{', "expected an object")
    }

    /// Consumes a `[`.
    pub fn begin_array(&mut self) -> Result<()> {
        self.expect(b'[', "expected an array")
    }

    /// The next member's name and its colon, or `None` at the closing `}` (consumed).
    /// `first` says whether this is the first call for this object (no comma expected).
    pub fn next_key(&mut self, first: bool) -> Result<Option<Key<'a>>> {
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                return Ok(None);
            }
            Some(b',') if !first => {
                self.pos += 1;
                if self.peek() != Some(b'"') {
                    return self.err("expected a member name");
                }
            }
            Some(b'"') if first => {}
            _ => return self.err("expected ',' or '}' in an object"),
        }
        let pos = self.pos;
        let (raw, escaped) = self.string_body()?;
        // Compact JSON puts the colon right after the name.
        if self.bytes.get(self.pos) == Some(&b':') {
            self.pos += 1;
        } else {
            self.expect(b':', "expected ':' after a member name")?;
        }
        Ok(Some(Key { raw, escaped, pos }))
    }

    /// Whether another element follows in an array, consuming the comma or the closing `]`.
    pub fn next_element(&mut self, first: bool) -> Result<bool> {
        match self.peek() {
            Some(b']') => {
                self.pos += 1;
                Ok(false)
            }
            Some(b',') if !first => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) if first => Ok(true),
            _ => self.err("expected ',' or ']' in an array"),
        }
    }

    /// A string value with escapes undone.
    pub fn string(&mut self) -> Result<Cow<'a, str>> {
        if self.peek() != Some(b'"') {
            return self.err("expected a string");
        }
        let pos = self.pos;
        let (raw, escaped) = self.string_body()?;
        if escaped {
            unescape(raw, pos).map(Cow::Owned)
        } else {
            Ok(Cow::Borrowed(raw))
        }
    }

    /// A string value with escapes undone, or `None` for `null`.
    pub fn opt_string(&mut self) -> Result<Option<String>> {
        if self.take_null()? {
            return Ok(None);
        }
        Ok(Some(self.string()?.into_owned()))
    }

    /// A string value with escapes undone, shared with an equal one this thread decoded
    /// recently (see [`shared`](super::shared)), or `None` for `null`.
    pub fn opt_shared_string(&mut self) -> Result<Option<super::shared_str::SharedStr>> {
        if self.take_null()? {
            return Ok(None);
        }
        Ok(Some(super::shared_str::SharedStr::shared(&self.string()?)))
    }

    /// How many elements the array whose `[` the cursor has just passed holds, counted by
    /// reading at most `budget` bytes ahead without checking the grammar (see
    /// [`count_ahead`](super::count_ahead)): exact for a valid array, `None` when it goes on
    /// beyond the budget. The cursor does not move.
    pub fn count_elements(&self, budget: usize) -> Option<usize> {
        super::count_ahead::count_elements(self.text, self.pos, budget)
    }

    /// Skips one value of any kind, checking it, and returns its exact text. A container
    /// whose end is already known (see [`known_ends`](super::known_ends)) is jumped over.
    pub fn value(&mut self) -> Result<&'a str> {
        self.skip_ws();
        let start = self.pos;
        if let Some(end) = super::known_ends::lookup(self.text, start) {
            self.pos = end;
        } else {
            self.skip_value(&mut NoRecord)?;
        }
        Ok(&self.text[start..self.pos])
    }

    /// Like [`value`](Self::value), never jumping, and telling `record` where each
    /// non-empty container starts and ends.
    pub(super) fn value_recording(&mut self, record: &mut impl Containers) -> Result<&'a str> {
        self.skip_ws();
        let start = self.pos;
        self.skip_value(record)?;
        Ok(&self.text[start..self.pos])
    }

    /// Reads a string starting at the opening quote; returns the body between the quotes and
    /// whether it holds escapes. The cursor ends after the closing quote.
    #[inline(always)]
    fn string_body(&mut self) -> Result<(&'a str, bool)> {
        let bytes = self.bytes;
        let start = self.pos + 1; // after the opening quote
        let mut i = start;
        let mut escaped = false;
        loop {
            i = find_string_stop(bytes, i);
            match bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok((&self.text[start..i], escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    match bytes.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                        Some(b'u') => match bytes.get(i + 2..i + 6) {
                            Some(h) if h.iter().all(u8::is_ascii_hexdigit) => i += 6,
                            _ => return self.err_at(i, "invalid \\u escape in a string"),
                        },
                        _ => return self.err_at(i, "invalid escape in a string"),
                    }
                }
                Some(_) => return self.err_at(i, "control character in a string"),
                None => return self.err_at(i, "unterminated string"),
            }
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        if self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            self.err("invalid literal")
        }
    }

    /// Skips one value without recursion, at any depth (serde_json's raw values have no depth
    /// limit either). The containers entered are a bit stack (1 = object, 0 = array). The
    /// cursor is a local index here, written back once: this loop is most of the decoding.
    fn skip_value(&mut self, record: &mut impl Containers) -> Result<()> {
        let bytes = self.bytes;
        let mut i = self.pos;
        let mut open = BitStack::default();
        let fail = |pos: usize, what: &'static str| Err(ScanError { pos, what });
        'value: loop {
            i = skip_ws(bytes, i);
            // A value is expected at `i`.
            match bytes.get(i) {
                Some(b'"') => i = string_end(bytes, i)?,
                Some(b'{') => {
                    let start = i;
                    i = skip_ws(bytes, i + 1);
                    if bytes.get(i) == Some(&b'}') {
                        i += 1;
                    } else {
                        record.open(open.depth, start);
                        open.push(true);
                        i = member_name_end(bytes, i)?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    let start = i;
                    i = skip_ws(bytes, i + 1);
                    if bytes.get(i) == Some(&b']') {
                        i += 1;
                    } else {
                        record.open(open.depth, start);
                        open.push(false);
                        continue 'value;
                    }
                }
                Some(b'-' | b'0'..=b'9') => i = number_end(bytes, i)?,
                Some(b't') => i = literal_end(bytes, i, b"true")?,
                Some(b'f') => i = literal_end(bytes, i, b"false")?,
                Some(b'n') => i = literal_end(bytes, i, b"null")?,
                Some(_) => return fail(i, "expected a JSON value"),
                None => return fail(i, "unexpected end of input"),
            }
            // After a value: close containers until one continues.
            loop {
                if open.is_empty() {
                    self.pos = i;
                    return Ok(());
                }
                i = skip_ws(bytes, i);
                match (bytes.get(i), open.top()) {
                    (Some(b','), true) => {
                        i = member_name_end(bytes, skip_ws(bytes, i + 1))?;
                        continue 'value;
                    }
                    (Some(b','), false) => {
                        i += 1;
                        continue 'value;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        i += 1;
                        open.pop();
                        record.close(open.depth, i);
                    }
                    (None, _) => return fail(i, "unexpected end of input"),
                    (_, true) => return fail(i, "expected ',' or '}' in an object"),
                    (_, false) => return fail(i, "expected ',' or ']' in an array"),
                }
            }
        }
    }
}

#[inline(always)]
fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = bytes.get(i) {
        i += 1;
    }
    i
}

/// The index just after the string starting (with its quote) at `i`.
#[inline(always)]
fn string_end(bytes: &[u8], mut i: usize) -> Result<usize> {
    i += 1;
    loop {
        i = find_string_stop(bytes, i);
        match bytes.get(i) {
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => i = escape_end(bytes, i)?,
            Some(_) => {
                return Err(ScanError {
                    pos: i,
                    what: "control character in a string",
                })
            }
            None => {
                return Err(ScanError {
                    pos: i,
                    what: "unterminated string",
                })
            }
        }
    }
}

/// The index just after the escape starting (with its backslash) at `i`.
#[inline]
fn escape_end(bytes: &[u8], i: usize) -> Result<usize> {
    match bytes.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => match bytes.get(i + 2..i + 6) {
            Some(h) if h.iter().all(u8::is_ascii_hexdigit) => Ok(i + 6),
            _ => Err(ScanError {
                pos: i,
                what: "invalid \\u escape in a string",
            }),
        },
        _ => Err(ScanError {
            pos: i,
            what: "invalid escape in a string",
        }),
    }
}

/// The index just after the member name at `i` and its colon.
#[inline(always)]
fn member_name_end(bytes: &[u8], i: usize) -> Result<usize> {
    if bytes.get(i) != Some(&b'"') {
        return Err(ScanError {
            pos: i,
            what: "expected a member name",
        });
    }
    let i = skip_ws(bytes, string_end(bytes, i)?);
    if bytes.get(i) != Some(&b':') {
        return Err(ScanError {
            pos: i,
            what: "expected ':' after a member name",
        });
    }
    Ok(i + 1)
}

fn digits_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// The index just after the number at `i`.
fn number_end(bytes: &[u8], mut i: usize) -> Result<usize> {
    let invalid = |pos: usize, what: &'static str| Err(ScanError { pos, what });
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits_end(bytes, i + 1),
        _ => return invalid(i, "invalid number"),
    }
    if bytes.get(i) == Some(&b'.') {
        let end = digits_end(bytes, i + 1);
        if end == i + 1 {
            return invalid(end, "invalid number: no digits after '.'");
        }
        i = end;
    }
    if let Some(b'e' | b'E') = bytes.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = bytes.get(i) {
            i += 1;
        }
        let end = digits_end(bytes, i);
        if end == i {
            return invalid(end, "invalid number: no digits in the exponent");
        }
        i = end;
    }
    Ok(i)
}

/// The index just after `word` (a literal) at `i`.
fn literal_end(bytes: &[u8], i: usize, word: &[u8]) -> Result<usize> {
    if bytes[i..].starts_with(word) {
        Ok(i + word.len())
    } else {
        Err(ScanError {
            pos: i,
            what: "invalid literal",
        })
    }
}

/// Told where the containers a skip passes through start and end. `depth` counts the
/// containers around this one within the skipped value (0 for the value itself); `open` gets
/// the offset of the opening bracket, `close` the offset just after the closing one.
pub(super) trait Containers {
    fn open(&mut self, depth: usize, start: usize);
    fn close(&mut self, depth: usize, end: usize);
}

/// The plain skip: records nothing (compiles away).
struct NoRecord;

impl Containers for NoRecord {
    #[inline(always)]
    fn open(&mut self, _: usize, _: usize) {}
    #[inline(always)]
    fn close(&mut self, _: usize, _: usize) {}
}

/// A stack of bits: 128 in a register, deeper levels spilled to the heap.
#[derive(Default)]
struct BitStack {
    bits: u128,
    depth: usize,
    spilled: Vec<u128>,
}

impl BitStack {
    fn push(&mut self, bit: bool) {
        if self.depth > 0 && self.depth % 128 == 0 {
            self.spilled.push(self.bits);
            self.bits = 0;
        }
        self.bits = (self.bits << 1) | bit as u128;
        self.depth += 1;
    }

    fn pop(&mut self) {
        self.bits >>= 1;
        self.depth = self.depth.saturating_sub(1);
        if self.depth > 0 && self.depth % 128 == 0 {
            self.bits = self.spilled.pop().unwrap_or(0);
        }
    }

    fn top(&self) -> bool {
        self.bits & 1 == 1
    }

    fn is_empty(&self) -> bool {
        self.depth == 0
    }
}

/// Undoes the escapes of a string body the scanner has checked (each escape well formed),
/// into one allocation of the right size. A `\u` escape of a UTF-16 surrogate must be a
/// leading one followed by a trailing one, as serde_json requires of a string.
fn unescape(raw: &str, pos: usize) -> Result<String> {
    let lone = || ScanError {
        pos,
        what: "invalid unicode escape in a string (lone surrogate)",
    };
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    // `raw` was checked: between escapes are only ordinary bytes, so the next stop is the
    // next backslash (found eight bytes at a time), or the end.
    let mut copied = 0;
    let mut i = find_string_stop(bytes, 0);
    while let Some(&stop) = bytes.get(i) {
        if stop != b'\\' {
            // Not from the scanner's check (a quote or a control byte): refused.
            return Err(ScanError {
                pos,
                what: "invalid string",
            });
        }
        out.push_str(raw.get(copied..i).ok_or_else(lone)?);
        let escape = bytes.get(i + 1..).unwrap_or_default();
        let (c, used) = match escape.first() {
            Some(b'"') => ('"', 1),
            Some(b'\\') => ('\\', 1),
            Some(b'/') => ('/', 1),
            Some(b'b') => ('\u{8}', 1),
            Some(b'f') => ('\u{c}', 1),
            Some(b'n') => ('\n', 1),
            Some(b'r') => ('\r', 1),
            Some(b't') => ('\t', 1),
            Some(b'u') => {
                let unit = hex4(escape.get(1..5)).ok_or_else(lone)?;
                match unit {
                    0xD800..=0xDBFF => {
                        let low = escape
                            .get(5..7)
                            .filter(|u| *u == b"\\u")
                            .and_then(|_| hex4(escape.get(7..11)))
                            .filter(|low| (0xDC00..=0xDFFF).contains(low))
                            .ok_or_else(lone)?;
                        let c = 0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        (char::from_u32(c).ok_or_else(lone)?, 11)
                    }
                    0xDC00..=0xDFFF => return Err(lone()),
                    _ => (char::from_u32(unit).ok_or_else(lone)?, 5),
                }
            }
            _ => return Err(lone()),
        };
        out.push(c);
        copied = i + 1 + used;
        i = find_string_stop(bytes, copied);
    }
    out.push_str(raw.get(copied..).ok_or_else(lone)?);
    Ok(out)
}

/// The value of four hex digits.
fn hex4(digits: Option<&[u8]>) -> Option<u32> {
    let digits = digits?;
    if digits.len() != 4 {
        return None;
    }
    digits.iter().try_fold(0, |value, &d| {
        Some(value << 4 | char::from(d).to_digit(16)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<&str> {
        let mut s = Scanner::new(text);
        let v = s.value()?;
        s.end()?;
        Ok(v)
    }

    #[test]
    fn accepts_what_serde_json_accepts() {
        let good = [
            "0",
            "-0",
            "12.5e-3",
            "1E+2",
            "true",
            "false",
            "null",
            "\"\"",
            r#""a\"b\\c\/\b\f\n\r\t\u00e9\uD83D\uDE00""#,
            "\"é日本\"",
            "[]",
            "{}",
            " [1, [2, {\"a\": [ ]}], {\"b\": {\"c\": null}} ] ",
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"k:{\"uid\":\"x\"}":{}}"#,
        ];
        for g in good {
            assert!(serde_json::from_str::<serde_json::Value>(g).is_ok(), "{g}");
            assert_eq!(check(g).map(str::trim), Ok(g.trim()), "{g}");
        }
    }

    #[test]
    fn rejects_what_serde_json_rejects() {
        let bad = [
            "",
            "01",
            "-",
            "1.",
            "1e",
            ".5",
            "+1",
            "tru",
            "nul",
            "\"abc",
            "\"a\\x\"",
            "\"\\u12G4\"",
            "\"a\u{1}b\"",
            "[1,]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "{a:1}",
            "{\"a\":1",
            "[",
            "]",
            "{\"a\":}",
            "[1]]",
            "{} {}",
        ];
        for b in bad {
            assert!(serde_json::from_str::<serde_json::Value>(b).is_err(), "{b}");
            assert!(check(b).is_err(), "{b:?} was accepted");
        }
    }

    #[test]
    fn nesting_has_no_limit_and_no_recursion() {
        for depth in [1, 127, 128, 129, 256, 257, 100_000] {
            let mixed: String = (0..depth)
                .map(|i| if i % 3 == 0 { "{\"k\":" } else { "[" })
                .collect();
            let closing: String = (0..depth)
                .rev()
                .map(|i| if i % 3 == 0 { "}" } else { "]" })
                .collect();
            let text = format!("{mixed}1{closing}");
            assert_eq!(check(&text), Ok(text.as_str()), "depth {depth}");
            let wrong: String = (0..depth)
                .rev()
                .map(|i| if i % 3 == 0 { "]" } else { "}" })
                .collect();
            assert!(check(&format!("{mixed}1{wrong}")).is_err(), "depth {depth}");
        }
        assert!(check(&"[".repeat(1_000_000)).is_err());
    }

    #[test]
    fn walks_members_and_elements() {
        let text = r#" {"a\u0062": [1, "x"], "c": {"d": 2}} "#;
        let mut s = Scanner::new(text);
        s.begin_object().unwrap();
        let k = s.next_key(true).unwrap().unwrap();
        assert_eq!(k.text().unwrap(), "ab");
        s.begin_array().unwrap();
        assert!(s.next_element(true).unwrap());
        assert_eq!(s.value().unwrap(), "1");
        assert!(s.next_element(false).unwrap());
        assert_eq!(s.string().unwrap(), "x");
        assert!(!s.next_element(false).unwrap());
        let k = s.next_key(false).unwrap().unwrap();
        assert_eq!(k.text().unwrap(), "c");
        assert_eq!(s.value().unwrap(), r#"{"d": 2}"#);
        assert!(s.next_key(false).unwrap().is_none());
        s.end().unwrap();
    }

    #[test]
    fn string_ends_are_found_at_every_alignment() {
        for len in 0..40 {
            for (stop, ok) in [
                ("\"", true),
                ("\\n\"", true),
                ("\u{1f}\"", false),
                ("\u{7f}é\"", true),
            ] {
                let body: String = "abcdefghijklmnopqrstuvwxyz0123456789ABCD"[..len].into();
                let text = format!("\"{body}{stop}");
                let mut s = Scanner::new(&text);
                let r = s.value();
                assert_eq!(r.is_ok(), ok, "{text:?}");
                assert_eq!(
                    serde_json::from_str::<String>(&text).is_ok(),
                    ok,
                    "{text:?}"
                );
                if ok {
                    assert_eq!(r.unwrap(), text);
                }
            }
        }
    }

    #[test]
    fn strings_unescape() {
        let mut s = Scanner::new(r#""tab\there \u00e9 \ud83d\ude00""#);
        assert_eq!(s.string().unwrap(), "tab\there é 😀");
        let mut s = Scanner::new(r#""\ud800 alone""#);
        assert!(s.string().is_err());
        let mut s = Scanner::new(r#"["\ud800 alone"]"#);
        assert!(s.value().is_ok());
    }

    #[test]
    fn strings_unescape_as_serde_json_does() {
        let bodies = [
            r#"k:{\"uid\":\"0f3c\"}"#,
            r#"\"\\\/\b\f\n\r\t"#,
            r#"\u0041\u00e9\u65e5\uFFFF\u0000"#,
            r#"\ud83d\ude00 and \uD83D\uDE00"#,
            r#"\ud800"#,
            r#"\udc00"#,
            r#"\ud800\u0041"#,
            r#"\ud800\ud800\udc00"#,
            r#"\ud800\n"#,
            r#"\ud800x"#,
            r#"é\n日本\u00e9"#,
        ];
        for body in bodies {
            let text = format!("\"{body}\"");
            let ours = Scanner::new(&text).string().map(|s| s.into_owned()).ok();
            let theirs = serde_json::from_str::<String>(&text).ok();
            assert_eq!(ours, theirs, "{body}");
        }
    }

    #[test]
    fn arrays_are_counted_ahead_within_the_budget() {
        let text = r#"[1, {"a": [2, 3]}, "x,]", [], null ] tail"#;
        let mut s = Scanner::new(text);
        s.begin_array().unwrap();
        assert_eq!(s.count_elements(1024), Some(5));
        assert_eq!(s.pos(), 1, "the cursor does not move");
        assert_eq!(s.count_elements(10), None, "beyond the budget");
        let mut empty = Scanner::new(" [ ] ");
        empty.begin_array().unwrap();
        assert_eq!(empty.count_elements(1024), Some(0));
    }
}
