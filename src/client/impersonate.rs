//! Impersonation headers, as client-go's transport sends them: `Impersonate-User`,
//! `Impersonate-Uid`, one `Impersonate-Group` per group and one `Impersonate-Extra-<key>`
//! per value of each extra field.
//!
//! An extra field's key becomes part of a header *name*, so it must be an HTTP token: bytes
//! that are not legal in a header name (and `%` itself, so the server can unescape
//! unambiguously) are sent as `%XX`, upper-case hex — client-go's `headerKeyEscape`, which
//! kube-apiserver reverses. `example.com/scopes` stays as it is except for the `/`
//! (`example.com%2Fscopes`).

use std::collections::BTreeMap;

/// Whether `b` may appear in a header name unescaped (RFC 7230's `tchar`; `%` excluded).
fn legal_in_header_name(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

/// An extra field's key as it goes into `Impersonate-Extra-<key>`.
pub(crate) fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for &b in key.as_bytes() {
        if legal_in_header_name(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The impersonation headers for one request, in client-go's order.
pub(crate) fn headers(
    user: Option<&str>,
    uid: Option<&str>,
    groups: &[String],
    extra: &BTreeMap<String, Vec<String>>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(u) = user {
        out.push(("impersonate-user".to_owned(), u.to_owned()));
    }
    if let Some(u) = uid {
        out.push(("impersonate-uid".to_owned(), u.to_owned()));
    }
    for g in groups {
        out.push(("impersonate-group".to_owned(), g.clone()));
    }
    for (key, values) in extra {
        let name = format!("impersonate-extra-{}", escape_extra_key(key));
        for v in values {
            out.push((name.clone(), v.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_escaped_like_client_go() {
        assert_eq!(escape_extra_key("scopes"), "scopes");
        assert_eq!(
            escape_extra_key("example.com/scopes"),
            "example.com%2Fscopes"
        );
        assert_eq!(escape_extra_key("a b%c"), "a%20b%25c");
        assert_eq!(escape_extra_key("x:y=z"), "x%3Ay%3Dz");
        assert_eq!(escape_extra_key("ü"), "%C3%BC");
        assert_eq!(escape_extra_key("A-Z_09.~|`^'*+!#$&"), "A-Z_09.~|`^'*+!#$&");
    }

    #[test]
    fn one_header_per_group_and_extra_value() {
        let mut extra = BTreeMap::new();
        extra.insert(
            "reason/why".to_owned(),
            vec!["a".to_owned(), "b".to_owned()],
        );
        let h = headers(
            Some("jane"),
            Some("42"),
            &["g1".into(), "g2".into()],
            &extra,
        );
        let names: Vec<&str> = h.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "impersonate-user",
                "impersonate-uid",
                "impersonate-group",
                "impersonate-group",
                "impersonate-extra-reason%2Fwhy",
                "impersonate-extra-reason%2Fwhy"
            ]
        );
    }
}
