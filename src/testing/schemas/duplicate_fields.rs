//! Duplicate fields in a JSON request body, as kube-apiserver's strict decoding reports them.
//!
//! A JSON object may name a field twice; decoding keeps the last value. kube-apiserver
//! notices: under `fieldValidation=Warn` each duplicate is a warning
//! `duplicate field "spec.size"`, under `Strict` it is listed in the 400 before the unknown
//! fields (`strict decoding error: duplicate field "spec.size", unknown field "spec.bogus"`),
//! under `Ignore` nothing. serde_json keeps the last value silently, so the body is scanned
//! again here, for its duplicates only.

use std::collections::HashSet;

/// The duplicated fields of the JSON document `body` as paths (`spec.size`,
/// `spec.ports[0].name`), in the order of the body. A body that is not JSON has none (its
/// parse fails elsewhere).
pub(crate) fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let mut s = Scanner {
        b: body,
        i: 0,
        found: Vec::new(),
        reported: HashSet::new(),
    };
    if s.value("", 0).is_none() {
        return Vec::new();
    }
    s.found
}

/// Nesting deeper than this is not scanned (serde_json refuses it anyway).
const MAX_DEPTH: usize = 256;

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    found: Vec<String>,
    /// What `found` holds: sets keep a body of many fields linear.
    reported: HashSet<String>,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// One value at `path`; `None` when the body is not JSON.
    fn value(&mut self, path: &str, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'{' => self.object(path, depth),
            b'[' => self.array(path, depth),
            b'"' => self.string().map(|_| ()),
            _ => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| !matches!(c, b',' | b'}' | b']') && !c.is_ascii_whitespace())
                {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }

    /// A string, decoded.
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.i += 1;
        loop {
            match *self.b.get(self.i)? {
                b'\\' => self.i += 2,
                b'"' => break,
                _ => self.i += 1,
            }
        }
        self.i += 1;
        serde_json::from_slice(self.b.get(start..self.i)?).ok()
    }

    fn object(&mut self, path: &str, depth: usize) -> Option<()> {
        self.i += 1;
        let mut seen: HashSet<String> = HashSet::new();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            let child = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if !seen.insert(key) && self.reported.insert(child.clone()) {
                self.found.push(child.clone());
            }
            self.value(&child, depth + 1)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, path: &str, depth: usize) -> Option<()> {
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        let mut n = 0;
        loop {
            self.value(&format!("{path}[{n}]"), depth + 1)?;
            n += 1;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found_where_they_are() {
        let body = br#"{"spec":{"size":1,"color":"red","size":2},"kind":"W","kind":"W",
            "items":[{"a":1,"a":2},{"a":1}],"q":{"x\"y":1,"x\"y":2}}"#;
        assert_eq!(
            duplicate_fields(body),
            ["spec.size", "kind", "items[0].a", "q.x\"y"]
        );
        assert!(duplicate_fields(br#"{"a":{"a":1},"b":[1,2]}"#).is_empty());
    }

    #[test]
    fn hostile_bodies_have_none_and_never_panic() {
        let deep = "[".repeat(100_000);
        for b in [
            "",
            "{",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":1,",
            "\"\\",
            "{\"a\":1 \"a\":2}",
            "[1,,2]",
            deep.as_str(),
        ] {
            let _ = duplicate_fields(b.as_bytes());
        }
        assert!(duplicate_fields(b"{\"a\":1,\"a\"").is_empty());
    }

    /// Many fields, many duplicates: sets keep the scan linear (lists made it quadratic).
    #[test]
    fn large_bodies_are_scanned_in_linear_time() {
        let mut body = String::from("{");
        for i in 0..200_000 {
            body.push_str(&format!("\"k{i}\":1,"));
        }
        body.push_str("\"items\":[");
        for i in 0..200_000 {
            body.push_str(&format!(
                "{}{{\"a\":1,\"a\":2}}",
                if i > 0 { "," } else { "" }
            ));
        }
        body.push_str("]}");
        let found = duplicate_fields(body.as_bytes());
        assert_eq!(found.len(), 200_000);
        assert_eq!(found[7], "items[7].a");
    }
}
