//! Hiding the credentials a URL can carry (`user:password@host`), for `Debug` and error
//! messages: proxy URLs often have them, server URLs may.

/// `url` with any `user:password@` part replaced by `<redacted>@`, for messages and `Debug`
/// (proxy URLs may carry credentials; the host and port stay visible).
pub(crate) fn redact_url(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}<redacted>{}", &url[..start], &url[start + at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn redact_url_hides_user_info_only() {
        assert_eq!(
            redact_url("http://u:p@proxy:3128/x@y"),
            "http://<redacted>@proxy:3128/x@y"
        );
        assert_eq!(redact_url("u:p@proxy:3128"), "<redacted>@proxy:3128");
        assert_eq!(redact_url("http://proxy:3128"), "http://proxy:3128");
        assert_eq!(redact_url("http://a@b@proxy"), "http://<redacted>@proxy");
    }
}
