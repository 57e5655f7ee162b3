//! Query parameters of list and watch calls, and their encoding.

use crate::api::url_encoding::percent_encode;

/// Parameters of a list call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// Label selector in the string syntax (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// Field selector (`metadata.name=x`, `spec.nodeName=n1`).
    pub field_selector: Option<String>,
    /// Page size; `None` asks for everything at once (the pager defaults to 500).
    pub limit: Option<u32>,
    /// Continue token of the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion`: `None` for a consistent read, `"0"` for any cached state.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`: `NotOlderThan` or `Exact`.
    pub resource_version_match: Option<String>,
}

impl ListParams {
    /// Restricts the list to objects whose labels match.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Restricts the list to objects whose fields match.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Sets the resource version to list at.
    pub fn at(mut self, resource_version: &str) -> Self {
        self.resource_version = Some(resource_version.into());
        self
    }

    /// The parameters of the page after one whose continue token is `token`. The token
    /// carries the list's version, so `resourceVersion` and `resourceVersionMatch` are
    /// dropped: kube-apiserver refuses a continue page that names a version (400) or a
    /// match (422), as client-go's pager knows.
    pub(crate) fn following(&self, token: String) -> ListParams {
        ListParams {
            continue_token: Some(token),
            resource_version: None,
            resource_version_match: None,
            ..self.clone()
        }
    }

    pub(crate) fn write_query(&self, q: &mut Query) {
        q.opt("labelSelector", self.label_selector.as_deref());
        q.opt("fieldSelector", self.field_selector.as_deref());
        if let Some(l) = self.limit {
            q.pair("limit", &l.to_string());
        }
        q.opt("continue", self.continue_token.as_deref());
        q.opt("resourceVersion", self.resource_version.as_deref());
        q.opt(
            "resourceVersionMatch",
            self.resource_version_match.as_deref(),
        );
    }
}

/// Parameters of a watch call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// Label selector in the string syntax.
    pub label_selector: Option<String>,
    /// Field selector.
    pub field_selector: Option<String>,
    /// Start after this version; `None`/`"0"` start with synthetic ADDED events for every object.
    pub resource_version: Option<String>,
    /// Ask for BOOKMARK events.
    pub allow_watch_bookmarks: bool,
    /// Ask the server to end the watch after this many seconds. It is also the basis of the
    /// client's read timeout: a watch silent for longer than this plus a margin is dead.
    pub timeout_seconds: Option<u32>,
    /// Streaming list: send the current state as ADDED events, then a bookmark annotated
    /// `k8s.io/initial-events-end` (needs `allow_watch_bookmarks` and a
    /// `resource_version_match`).
    pub send_initial_events: bool,
    /// `resourceVersionMatch` (`NotOlderThan` with `send_initial_events`).
    pub resource_version_match: Option<String>,
}

impl WatchParams {
    /// Watch from `resource_version` with bookmarks, as a reflector does.
    pub fn from_version(resource_version: &str) -> Self {
        WatchParams {
            resource_version: Some(resource_version.into()),
            allow_watch_bookmarks: true,
            ..Default::default()
        }
    }

    /// Sets the server-side timeout.
    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Restricts the watch to objects whose labels match.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Restricts the watch to objects whose fields match.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// A streaming list: initial state as events, then the end bookmark, then changes.
    pub fn streaming_list() -> Self {
        WatchParams {
            allow_watch_bookmarks: true,
            send_initial_events: true,
            resource_version_match: Some("NotOlderThan".into()),
            resource_version: Some(String::new()),
            ..Default::default()
        }
    }

    pub(crate) fn write_query(&self, q: &mut Query) {
        q.pair("watch", "1");
        q.opt("labelSelector", self.label_selector.as_deref());
        q.opt("fieldSelector", self.field_selector.as_deref());
        q.opt("resourceVersion", self.resource_version.as_deref());
        if self.allow_watch_bookmarks {
            q.pair("allowWatchBookmarks", "true");
        }
        if let Some(t) = self.timeout_seconds {
            q.pair("timeoutSeconds", &t.to_string());
        }
        if self.send_initial_events {
            q.pair("sendInitialEvents", "true");
        }
        q.opt(
            "resourceVersionMatch",
            self.resource_version_match.as_deref(),
        );
    }
}

/// A URL query string under construction.
#[derive(Default)]
pub(crate) struct Query(String);

impl Query {
    pub(crate) fn pair(&mut self, key: &str, value: &str) {
        self.0.push(if self.0.is_empty() { '?' } else { '&' });
        self.0.push_str(key);
        self.0.push('=');
        percent_encode(value, &mut self.0);
    }

    pub(crate) fn opt(&mut self, key: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.pair(key, v);
        }
    }

    pub(crate) fn finish(self) -> String {
        self.0
    }
}

/// Decodes `%XX` escapes and `+` (as a space); invalid escapes are kept as they are.
pub fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_round_trips_selectors() {
        let mut q = Query::default();
        ListParams::default()
            .labels("a in (b,c),!d")
            .limit(10)
            .write_query(&mut q);
        let s = q.finish();
        assert_eq!(s, "?labelSelector=a%20in%20%28b%2Cc%29%2C%21d&limit=10");
        let v = s
            .split('&')
            .next()
            .unwrap()
            .trim_start_matches("?labelSelector=");
        assert_eq!(percent_decode(v), "a in (b,c),!d");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
