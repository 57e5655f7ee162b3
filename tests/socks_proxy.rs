//! SOCKS5 proxies (`proxy-url: socks5://…` and `socks5h://…`), through a small SOCKS5
//! server (`common::proxies`: RFC 1928 with RFC 1929 username/password, loopback only) in front
//! of the test API server over TLS: the request arrives with its credentials, the proxy is
//! given an address (`socks5`) or the name (`socks5h`), and a proxy that refuses gives an
//! error naming the proxy (without its password) and the refusal.

mod common;

use base64::Engine as _;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::config::Config;
use kube_informer::testing::{self, ApiServer};
use kube_informer::{Api, Error, ListParams};

const PROXY_USER: &str = "sockuser";
const PROXY_PASSWORD: &str = "sock-PW-77";

/// The shared SOCKS5 test proxy, requiring this test's credentials.
fn socks5_proxy(
    refuse: bool,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<common::proxies::Seen>>,
) {
    common::proxies::socks5_proxy(Some((PROXY_USER, PROXY_PASSWORD)), refuse)
}

fn config(server: &str, proxy_url: &str) -> Config {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: lab\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n    proxy-url: {proxy_url}\ncontexts:\n- name: lab\n  context:\n    cluster: lab\n    user: me\nusers:\n- name: me\n  user:\n    token: t0k3n\n",
        ca = base64::engine::general_purpose::STANDARD.encode(testing::CA_PEM)
    );
    Config::from_kubeconfig_str(&yaml, &Default::default()).unwrap()
}

fn list(config: &Config) -> kube_informer::Result<usize> {
    let api: Api<DynamicObject> = Api::all_with(config.client()?, &pods());
    Ok(api.list(&ListParams::default())?.items.len())
}

fn api_server() -> ApiServer {
    let s = ApiServer::builder()
        .tls()
        .token("t0k3n")
        .resource(&pods())
        .start();
    s.create(&pods(), pod("team-a", "p", "Pending")).unwrap();
    s
}

#[test]
fn socks5_proxies_carry_the_tls_connection_and_its_credentials() {
    let server = api_server();
    let (proxy, seen) = socks5_proxy(false);
    let port = server.addr().port();

    // socks5: the address is resolved here and the proxy is given it.
    let proxy_url = format!("socks5://{PROXY_USER}:{PROXY_PASSWORD}@{proxy}");
    assert_eq!(list(&config(&server.url(), &proxy_url)).unwrap(), 1);
    // socks5h: the proxy is given the name and resolves it (the certificate is for
    // localhost too).
    let proxy_url = format!("socks5h://{PROXY_USER}:{PROXY_PASSWORD}@{proxy}");
    let by_name = format!("https://localhost:{port}");
    assert_eq!(list(&config(&by_name, &proxy_url)).unwrap(), 1);

    let seen = seen.lock().unwrap();
    assert_eq!(seen.users, [PROXY_USER, PROXY_USER]);
    assert_eq!(
        seen.targets,
        [format!("127.0.0.1:{port}"), format!("localhost:{port}")]
    );
    // Both requests arrived with the bearer token.
    let headers = server.request_headers();
    assert_eq!(headers.len(), 2);
    for r in headers {
        assert_eq!(r.values("authorization"), ["Bearer t0k3n"]);
    }
}

#[test]
fn a_refusing_socks5_proxy_is_a_clear_error_and_nothing_reaches_the_server() {
    let server = api_server();
    let (proxy, seen) = socks5_proxy(true);
    let proxy_url = format!("socks5://{PROXY_USER}:{PROXY_PASSWORD}@{proxy}");
    let err = list(&config(&server.url(), &proxy_url)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(text.contains("not allowed by ruleset"), "{text}");
    assert!(
        text.contains(&format!("through proxy socks5://<redacted>@{proxy}")),
        "{text}"
    );
    assert!(!text.contains(PROXY_PASSWORD), "{text}");
    assert_eq!(seen.lock().unwrap().targets.len(), 1);
    assert!(server.requests().is_empty());

    // Wrong proxy credentials.
    let proxy_url = format!("socks5://{PROXY_USER}:wrong@{proxy}");
    let err = list(&config(&server.url(), &proxy_url)).unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(server.requests().is_empty());
}

#[test]
fn proxy_schemes_client_go_does_not_accept_are_refused() {
    for scheme in ["socks4", "socks4a", "ftp"] {
        let c = config(
            "https://127.0.0.1:6443",
            &format!("{scheme}://127.0.0.1:1080"),
        );
        match c.client() {
            Err(Error::Config(m)) => assert!(m.contains("unsupported proxy scheme"), "{m}"),
            other => panic!("{scheme}: {other:?}"),
        }
    }
}
