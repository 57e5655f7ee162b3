//! One reading of a server URL (`scheme://[user@]host[:port][/path]`), for every place that
//! needs a part of one: the proxy decision (host and port against `NO_PROXY`),
//! `tls-server-name` (which host to re-address), and error messages (which server failed).
//!
//! Why not a URL crate: the runtime dependencies are fixed, and a kubeconfig's `server` needs
//! only this much. The text is never decoded (no percent-decoding, no IDNA): the parts are
//! slices of what the kubeconfig says.

/// The parts of a server URL, as slices of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ServerUrl<'a> {
    /// `https` or `http` (as written; compare without case).
    pub scheme: &'a str,
    /// The host as written: a name, an IPv4 address or a bracketed IPv6 address (`[::1]`).
    pub host: &'a str,
    /// The port, when the URL names one.
    pub port: Option<&'a str>,
    /// Everything after the authority (`/prefix`, a query...); often empty.
    pub path: &'a str,
}

impl<'a> ServerUrl<'a> {
    /// Splits `url`; `None` when it has no `scheme://`. Credentials (`user:password@`) are
    /// skipped and never part of any field.
    pub fn parse(url: &'a str) -> Option<Self> {
        let (scheme, rest) = url.split_once("://")?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = split_authority(authority);
        Some(ServerUrl {
            scheme,
            host,
            port,
            path,
        })
    }

    /// The port, or the scheme's default (80 for `http`, 443 otherwise).
    pub fn port_or_default(&self) -> &'a str {
        self.port
            .unwrap_or(if self.scheme.eq_ignore_ascii_case("http") {
                "80"
            } else {
                "443"
            })
    }

    /// The host without an IPv6 address's brackets.
    pub fn bare_host(&self) -> &'a str {
        unbracket(self.host)
    }
}

/// `host[:port]` or `[v6][:port]`, split; the host keeps its brackets. An empty port counts as
/// none, and so does a bare IPv6 address's last group.
fn split_authority(s: &str) -> (&str, Option<&str>) {
    if s.starts_with('[') {
        return match s.find(']') {
            Some(close) => (
                &s[..=close],
                s[close + 1..].strip_prefix(':').filter(|p| !p.is_empty()),
            ),
            None => (s, None),
        };
    }
    match s.rsplit_once(':') {
        // A bare IPv6 address has several colons and no port.
        Some((host, port)) if !host.contains(':') => (host, Some(port).filter(|p| !p.is_empty())),
        _ => (s, None),
    }
}

/// `host[:port]` or `[v6][:port]` (a `NO_PROXY` entry, say), split; the host without brackets.
pub(crate) fn split_host_port(s: &str) -> (&str, Option<&str>) {
    let (host, port) = split_authority(s);
    (unbracket(host), port)
}

fn unbracket(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(url: &str) -> Option<(&str, &str, Option<&str>, &str)> {
        ServerUrl::parse(url).map(|u| (u.scheme, u.host, u.port, u.path))
    }

    #[test]
    fn splits_servers_into_their_parts() {
        assert_eq!(
            parts("https://10.0.0.1:6443"),
            Some(("https", "10.0.0.1", Some("6443"), ""))
        );
        assert_eq!(
            parts("https://[::1]:6443/k8s"),
            Some(("https", "[::1]", Some("6443"), "/k8s"))
        );
        assert_eq!(
            parts("https://api.example.com"),
            Some(("https", "api.example.com", None, ""))
        );
        assert_eq!(
            parts("http://u:p@host:8080?x=1"),
            Some(("http", "host", Some("8080"), "?x=1"))
        );
        assert_eq!(
            parts("https://host:/p"),
            Some(("https", "host", None, "/p"))
        );
        assert_eq!(parts("https://[::1"), Some(("https", "[::1", None, "")));
        assert_eq!(parts("nonsense"), None);
    }

    #[test]
    fn default_ports_and_bare_hosts() {
        let u = ServerUrl::parse("HTTP://[fe80::1]").unwrap();
        assert_eq!((u.port_or_default(), u.bare_host()), ("80", "fe80::1"));
        let u = ServerUrl::parse("https://k8s").unwrap();
        assert_eq!((u.port_or_default(), u.bare_host()), ("443", "k8s"));
    }

    #[test]
    fn splits_no_proxy_entries() {
        assert_eq!(split_host_port("[::1]:8080"), ("::1", Some("8080")));
        assert_eq!(split_host_port("::1"), ("::1", None));
        assert_eq!(split_host_port("example.com:"), ("example.com", None));
        assert_eq!(split_host_port("10.0.0.1:443"), ("10.0.0.1", Some("443")));
    }
}
