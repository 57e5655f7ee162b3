//! `tls-server-name`: verify the server's certificate against a name other than the host in
//! the server URL (kubeconfigs use it when the API server is reached by IP or through a
//! tunnel).
//!
//! ureq takes the TLS name (SNI and verification) from the request URL's host, so requests
//! are addressed to the override name, and a resolver sends that name to the real server's
//! addresses. The server sees the name in the `Host` header, which kube-apiserver ignores.

use std::net::ToSocketAddrs;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// Resolves `name` to the addresses of `real_host` (same port); anything else as usual.
#[derive(Debug)]
pub(crate) struct PinnedResolver {
    pub name: String,
    pub real_host: String,
    inner: DefaultResolver,
}

impl PinnedResolver {
    pub fn new(name: &str, real_host: &str) -> Self {
        PinnedResolver {
            name: name.to_ascii_lowercase(),
            real_host: real_host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            inner: DefaultResolver::default(),
        }
    }
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let host = uri.host().unwrap_or("").to_ascii_lowercase();
        if host != self.name {
            return self.inner.resolve(uri, config, timeout);
        }
        let port = uri.port_u16().unwrap_or(443);
        let mut out = self.empty();
        let addrs = (self.real_host.as_str(), port)
            .to_socket_addrs()
            .map_err(ureq::Error::Io)?;
        for a in addrs.take(16) {
            out.push(a);
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}
