//! Label selectors in the Kubernetes string syntax: `a=b,c!=d,e in (f,g),!h`.
//!
//! Parsed once into requirements so that matching is a walk over a few strings; the same type
//! renders back to the query-string form the API server accepts.

use super::meta_trait::Meta;
use crate::json::string_map::StringMap;
use std::fmt;

use crate::error::Error;

/// A parsed label selector: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// One requirement of a [`LabelSelector`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value` (also true when the label is absent).
    NotEquals(String, String),
    /// `key in (v1,v2)`.
    In(String, Vec<String>),
    /// `key notin (v1,v2)` (also true when the label is absent).
    NotIn(String, Vec<String>),
    /// `key`: the label is present.
    Exists(String),
    /// `!key`: the label is absent.
    DoesNotExist(String),
}

impl Requirement {
    /// Whether the labels `get` looks up satisfy this requirement.
    fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|l| !vs.iter().any(|v| v == l)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        }
    }
}

impl LabelSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the string syntax. An empty string selects everything.
    pub fn parse(input: &str) -> Result<Self, Error> {
        Parser { s: input, pos: 0 }.parse()
    }

    /// The requirements, in order.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when this selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// True when `labels` satisfy every requirement.
    pub fn matches(&self, labels: &StringMap) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(|k| labels.get(k)))
    }

    /// True when the labels of an object's metadata (any [`Meta`] type) satisfy every
    /// requirement; an object without labels matches as one with an empty map.
    pub fn matches_meta<M: Meta + ?Sized>(&self, meta: &M) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(|k| meta.label(k)))
    }

    /// Like [`matches`](Self::matches), for objects with no labels map at all.
    pub fn matches_opt(&self, labels: Option<&StringMap>) -> bool {
        match labels {
            Some(labels) => self.matches(labels),
            None => self.matches(&StringMap::new()),
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match r {
                Requirement::Equals(k, v) => write!(f, "{k}={v}")?,
                Requirement::NotEquals(k, v) => write!(f, "{k}!={v}")?,
                Requirement::In(k, vs) => write!(f, "{k} in ({})", vs.join(","))?,
                Requirement::NotIn(k, vs) => write!(f, "{k} notin ({})", vs.join(","))?,
                Requirement::Exists(k) => write!(f, "{k}")?,
                Requirement::DoesNotExist(k) => write!(f, "!{k}")?,
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Self::parse(s)
    }
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> Error {
        Error::InvalidInput(format!(
            "label selector {:?}: {what} at position {}",
            self.s, self.pos
        ))
    }

    fn skip_ws(&mut self) {
        while self.rest().starts_with(|c: char| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn rest(&self) -> &str {
        &self.s[self.pos..]
    }

    fn eat(&mut self, tok: &str) -> bool {
        if self.rest().starts_with(tok) {
            self.pos += tok.len();
            true
        } else {
            false
        }
    }

    /// A key or value: letters, digits, `-`, `_`, `.`, and `/` (for prefixed keys).
    fn word(&mut self) -> &str {
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
            .unwrap_or(self.rest().len());
        self.pos += len;
        &self.s[start..start + len]
    }

    fn key(&mut self) -> Result<String, Error> {
        self.skip_ws();
        let k = self.word().to_owned();
        if k.is_empty() {
            return Err(self.err("expected a label key"));
        }
        if k.len() > 317 || k.starts_with(['-', '.', '_', '/']) {
            return Err(self.err(&format!("invalid label key {k:?}")));
        }
        Ok(k)
    }

    fn value(&mut self) -> Result<String, Error> {
        self.skip_ws();
        let v = self.word().to_owned();
        if v.contains('/') || v.len() > 63 {
            return Err(self.err(&format!("invalid label value {v:?}")));
        }
        Ok(v)
    }

    fn set(&mut self) -> Result<Vec<String>, Error> {
        self.skip_ws();
        if !self.eat("(") {
            return Err(self.err("expected '(' after in/notin"));
        }
        let mut vals = Vec::new();
        loop {
            let v = self.value()?;
            vals.push(v);
            self.skip_ws();
            if self.eat(")") {
                return Ok(vals);
            }
            if !self.eat(",") {
                return Err(self.err("expected ',' or ')' in value set"));
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, Error> {
        self.skip_ws();
        if self.eat("!") {
            return Ok(Requirement::DoesNotExist(self.key()?));
        }
        let key = self.key()?;
        self.skip_ws();
        if self.eat("!=") {
            return Ok(Requirement::NotEquals(key, self.value()?));
        }
        if self.eat("==") || self.eat("=") {
            return Ok(Requirement::Equals(key, self.value()?));
        }
        if self.rest().starts_with("notin")
            && !self.rest()[5..].starts_with(|c: char| c.is_ascii_alphanumeric())
        {
            self.pos += 5;
            return Ok(Requirement::NotIn(key, self.set()?));
        }
        if self.rest().starts_with("in")
            && !self.rest()[2..].starts_with(|c: char| c.is_ascii_alphanumeric())
        {
            self.pos += 2;
            return Ok(Requirement::In(key, self.set()?));
        }
        if self.rest().is_empty() || self.rest().starts_with(',') {
            return Ok(Requirement::Exists(key));
        }
        Err(self.err("expected an operator (=, ==, !=, in, notin) or ','"))
    }

    fn parse(mut self) -> Result<LabelSelector, Error> {
        let mut requirements = Vec::new();
        self.skip_ws();
        if self.rest().is_empty() {
            return Ok(LabelSelector { requirements });
        }
        loop {
            requirements.push(self.requirement()?);
            self.skip_ws();
            if self.rest().is_empty() {
                return Ok(LabelSelector { requirements });
            }
            if !self.eat(",") {
                return Err(self.err("expected ','"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> StringMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_every_operator_and_matches() {
        let sel = LabelSelector::parse("a=b, c!=d,e in (f, g),!h,i,j notin (k),l==m").unwrap();
        assert_eq!(sel.requirements().len(), 7);
        let ok = labels(&[("a", "b"), ("e", "g"), ("i", ""), ("j", "x"), ("l", "m")]);
        assert!(sel.matches(&ok));
        let mut bad = ok.clone();
        bad.insert("h", "1");
        assert!(!sel.matches(&bad));
        let mut bad = ok.clone();
        bad.insert("c", "d");
        assert!(!sel.matches(&bad));
        assert_eq!(sel.to_string(), "a=b,c!=d,e in (f,g),!h,i,j notin (k),l=m");
    }

    #[test]
    fn prefixed_keys_and_empty_selector() {
        let sel = LabelSelector::parse("app.kubernetes.io/name=web").unwrap();
        assert!(sel.matches(&labels(&[("app.kubernetes.io/name", "web")])));
        assert!(LabelSelector::parse("  ").unwrap().is_empty());
    }

    #[test]
    fn errors_say_where() {
        for bad in ["a=b,", "a in b", "a in (b", "=b", "a b", "a=b/c", "in=(x"] {
            let err = LabelSelector::parse(bad).unwrap_err().to_string();
            assert!(err.contains("position"), "{bad}: {err}");
        }
    }
}
