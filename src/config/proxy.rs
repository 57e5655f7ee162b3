//! The proxy a request takes when the configuration names none: `HTTPS_PROXY`,
//! `HTTP_PROXY` and `NO_PROXY` from the environment, by the rules client-go follows (Go's
//! `http.ProxyFromEnvironment`), so a program behind a corporate proxy reaches the same
//! clusters kubectl does.
//!
//! - An `https://` server uses `HTTPS_PROXY`, an `http://` server `HTTP_PROXY` (there is no
//!   fallback from one to the other). The upper-case name wins over the lower-case one when
//!   both are set and non-empty. A proxy without a scheme is `http://`.
//! - `NO_PROXY` is a comma-separated list: `*` (no proxy for anything), an IP address, a
//!   CIDR range (`10.0.0.0/8`), or a domain (`example.com` matches it and its subdomains,
//!   `.example.com` only its subdomains, `*.example.com` is the same as `.example.com`); each
//!   entry but a CIDR range may end in `:port` to match that port only.
//! - `localhost` and loopback addresses are never proxied (Go's rule too: a proxy cannot
//!   reach the caller's loopback anyway).
//!
//! - The proxy may be `http://`, `https://`, `socks5://` (the client resolves the server's
//!   name and gives the proxy the address) or `socks5h://` (the proxy resolves the name),
//!   with `user:password@` (SOCKS5 username/password authentication, RFC 1929). Other
//!   schemes (`socks4://`, ...) are refused, as client-go refuses them. `ALL_PROXY` is not
//!   read: Go's rules do not read it either.
//!
//! A `proxy-url` in the kubeconfig (or [`ClientConfig::proxy`](crate::client::ClientConfig))
//! overrides all of this, with the same schemes. The TLS connection to the API server, with
//! its certificate checks and credentials, runs through the proxy's tunnel as it would run
//! directly; a connection error names the proxy (without its `user:password@`).

use std::net::IpAddr;

use super::server_url::{split_host_port, ServerUrl};

/// The proxy URL the environment gives for requests to `server`, if any.
pub(crate) fn proxy_from_env(server: &str) -> Option<(String, &'static str)> {
    proxy_for(server, |name| {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    })
}

/// [`proxy_from_env`] with the environment given as a lookup; also returns which variable
/// named the proxy (for error messages).
fn proxy_for(server: &str, env: impl Fn(&str) -> Option<String>) -> Option<(String, &'static str)> {
    let pick = |upper: &'static str, lower: &'static str| {
        env(upper)
            .map(|v| (v, upper))
            .or_else(|| env(lower).map(|v| (v, lower)))
    };
    let url = ServerUrl::parse(server)?;
    let (proxy, var) = match url.scheme.to_ascii_lowercase().as_str() {
        "https" => pick("HTTPS_PROXY", "https_proxy")?,
        "http" => pick("HTTP_PROXY", "http_proxy")?,
        _ => return None,
    };
    let (host, port) = (url.bare_host(), url.port_or_default());
    let host = host.to_ascii_lowercase();
    let no_proxy = pick("NO_PROXY", "no_proxy").map(|(v, _)| v);
    use_proxy(&host, port, no_proxy.as_deref().unwrap_or("")).then_some((proxy, var))
}

/// Whether a request to `host:port` goes through the proxy, given `NO_PROXY`.
fn use_proxy(host: &str, port: &str, no_proxy: &str) -> bool {
    let host = host.trim_end_matches('.');
    if host == "localhost" {
        return false;
    }
    let ip = host.parse::<IpAddr>().ok();
    if ip.is_some_and(|ip| ip.is_loopback()) {
        return false;
    }
    for entry in no_proxy.split(',') {
        let entry = entry.trim().to_ascii_lowercase();
        if entry.is_empty() {
            continue;
        }
        if entry == "*" {
            return false;
        }
        if let Some((net, bits)) = entry.split_once('/') {
            if let (Some(ip), Ok(net), Ok(bits)) = (ip, net.parse::<IpAddr>(), bits.parse()) {
                if in_cidr(ip, net, bits) {
                    return false;
                }
            }
            continue;
        }
        let (entry_host, entry_port) = split_host_port(&entry);
        if entry_port.is_some_and(|p| p != port) {
            continue;
        }
        if let Ok(entry_ip) = entry_host.parse::<IpAddr>() {
            if ip == Some(entry_ip) {
                return false;
            }
            continue;
        }
        let entry_host = entry_host.trim_end_matches('.');
        let entry_host = entry_host.strip_prefix('*').unwrap_or(entry_host);
        let matched = match entry_host.strip_prefix('.') {
            // `.example.com`: subdomains only.
            Some(_) => host.ends_with(entry_host),
            // `example.com`: the domain and its subdomains.
            None => {
                host == entry_host
                    || host
                        .strip_suffix(entry_host)
                        .is_some_and(|p| p.ends_with('.'))
            }
        };
        if matched {
            return false;
        }
    }
    true
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn proxied(server: &str, vars: &[(&str, &str)]) -> Option<String> {
        proxy_for(server, with(vars)).map(|(p, _)| p)
    }

    #[test]
    fn scheme_picks_the_variable_and_upper_case_wins() {
        let vars = [
            ("HTTPS_PROXY", "http://s:1"),
            ("https_proxy", "http://lower:1"),
            ("http_proxy", "http://h:1"),
        ];
        assert_eq!(
            proxied("https://k.example:6443", &vars).as_deref(),
            Some("http://s:1")
        );
        assert_eq!(
            proxied("http://k.example:8080", &vars).as_deref(),
            Some("http://h:1")
        );
        assert_eq!(proxied("https://k.example", &[("HTTP_PROXY", "p:1")]), None);
        assert_eq!(
            proxied("https://k.example", &[("https_proxy", "lower:1")]).as_deref(),
            Some("lower:1")
        );
    }

    #[test]
    fn loopback_and_localhost_are_never_proxied() {
        let vars = [("HTTPS_PROXY", "p:1")];
        for server in [
            "https://localhost:6443",
            "https://127.0.0.1:6443",
            "https://127.1.2.3",
            "https://[::1]:6443",
            "https://LOCALHOST.",
        ] {
            assert_eq!(proxied(server, &vars), None, "{server}");
        }
    }

    #[test]
    fn no_proxy_entries_match_like_go() {
        let cases: &[(&str, &str, bool)] = &[
            ("https://k.example.com", "example.com", false),
            ("https://example.com", "example.com", false),
            ("https://notexample.com", "example.com", true),
            ("https://example.com", ".example.com", true),
            ("https://k.example.com", ".example.com", false),
            ("https://k.example.com", "*.example.com", false),
            ("https://k.example.com:6443", "k.example.com:6443", false),
            ("https://k.example.com:6443", "k.example.com:443", true),
            ("https://k.example.com", "k.example.com:443", false),
            ("https://10.1.2.3:6443", "10.0.0.0/8", false),
            ("https://11.1.2.3:6443", "10.0.0.0/8", true),
            ("https://10.1.2.3:6443", "10.1.2.3", false),
            ("https://10.1.2.3:6443", "10.1.2.4", true),
            ("https://[fd00::1]:6443", "fd00::/8", false),
            ("https://anything", "*", false),
            ("https://k.example.com", " other.org , EXAMPLE.com ", false),
            ("https://k.example.com", "", true),
        ];
        for (server, no_proxy, expect) in cases {
            let vars = [("HTTPS_PROXY", "p:1"), ("NO_PROXY", no_proxy)];
            assert_eq!(
                proxied(server, &vars).is_some(),
                *expect,
                "{server} with NO_PROXY={no_proxy:?}"
            );
        }
        // The lower-case name is read when the upper-case one is unset.
        let vars = [("HTTPS_PROXY", "p:1"), ("no_proxy", "example.com")];
        assert_eq!(proxied("https://k.example.com", &vars), None);
    }
}
