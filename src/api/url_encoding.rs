//! Percent-encoding for request paths and queries: one place, so that no namespace, name or
//! parameter value can change which path is requested, whoever builds the path.

use std::fmt::Write as _;

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(crate) fn percent_encode(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// One path segment: percent-encoded, and `.`/`..` spelled `%2E`/`%2E%2E` (a client or proxy
/// would otherwise resolve them as "here" and "up").
pub(crate) fn path_segment(value: &str, out: &mut String) {
    match value {
        "." => out.push_str("%2E"),
        ".." => out.push_str("%2E%2E"),
        _ => percent_encode(value, out),
    }
}

#[cfg(test)]
mod tests {
    use crate::api::ApiResource;

    #[test]
    fn no_namespace_string_changes_the_collection_path() {
        let pods = ApiResource::new("", "v1", "Pod", "pods", true);
        assert_eq!(
            pods.url_path(Some("a/../b?x")),
            "/api/v1/namespaces/a%2F..%2Fb%3Fx/pods"
        );
        assert_eq!(pods.url_path(Some("..")), "/api/v1/namespaces/%2E%2E/pods");
        assert_eq!(pods.url_path(Some("lab")), "/api/v1/namespaces/lab/pods");
    }
}
