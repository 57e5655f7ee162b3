//! Configuration from the environment, exactly as kubectl reads it: `KUBECONFIG` (list,
//! merge order, first-wins, relative paths, missing files, no fall back) and `HTTPS_PROXY`
//! / `HTTP_PROXY` / `NO_PROXY` (through a tiny CONNECT proxy on loopback that records what
//! it forwarded).
//!
//! Environment variables are process-wide: every test here holds [`Env`] (one lock, the
//! variables cleared and restored), and no other test binary sets them.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::client::Auth;
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, ClientConfig, ListParams};

const VARS: &[&str] = &[
    "KUBECONFIG",
    "HOME",
    "KUBERNETES_SERVICE_HOST",
    "KUBERNETES_SERVICE_PORT",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
];

static LOCK: Mutex<()> = Mutex::new(());

/// Holds the environment for one test: the variables above cleared, restored on drop.
struct Env {
    saved: Vec<(&'static str, Option<std::ffi::OsString>)>,
    _lock: MutexGuard<'static, ()>,
}

impl Env {
    fn new() -> Env {
        let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let saved = VARS.iter().map(|v| (*v, std::env::var_os(v))).collect();
        for v in VARS {
            std::env::remove_var(v);
        }
        Env { saved, _lock: lock }
    }

    fn set(&self, name: &str, value: impl AsRef<std::ffi::OsStr>) {
        std::env::set_var(name, value);
    }

    fn unset(&self, name: &str) {
        std::env::remove_var(name);
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for (name, value) in &self.saved {
            match value {
                Some(v) => std::env::set_var(name, v),
                None => std::env::remove_var(name),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// KUBECONFIG

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

fn list(paths: &[&Path]) -> std::ffi::OsString {
    std::env::join_paths(paths).unwrap()
}

fn bearer(config: &Config) -> String {
    match &config.client_config.auth {
        Auth::Bearer(t) => format!("Bearer {}", t.expose()),
        Auth::Provider(p) => p.authorization().unwrap().unwrap().expose().to_owned(),
        other => panic!("not a token: {other:?}"),
    }
}

fn with_context(context: &str) -> KubeconfigOptions {
    KubeconfigOptions::new().context(context)
}

const FIRST: &str = r#"
current-context: ctx-a
clusters:
- name: c
  cluster: {server: "http://one.invalid"}
users:
- name: u
  user: {token: t1}
- name: file-user
  user: {tokenFile: token}
contexts:
- name: ctx-a
  context: {cluster: c, user: u, namespace: a}
- name: shared
  context: {cluster: c, user: u, namespace: first}
- name: file-one
  context: {cluster: c, user: file-user}
"#;

const SECOND: &str = r#"
current-context: ctx-b
clusters:
- name: c
  cluster: {server: "http://two.invalid"}
- name: d
  cluster: {server: "http://d.invalid"}
users:
- name: u
  user: {token: t2}
- name: file-user-2
  user: {tokenFile: sub/token}
contexts:
- name: ctx-b
  context: {cluster: d, user: u, namespace: b}
- name: shared
  context: {cluster: d, user: u, namespace: second}
- name: ctx-a
  context: {cluster: d, user: u, namespace: other}
- name: file-two
  context: {cluster: c, user: file-user-2}
"#;

struct Files {
    _dir: tempfile::TempDir,
    first: PathBuf,
    second: PathBuf,
    missing: PathBuf,
    home: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let first = write(&dir.path().join("one"), "config", FIRST);
    write(&dir.path().join("one"), "token", "tok-one\n");
    let second = write(&dir.path().join("two"), "config", SECOND);
    write(&dir.path().join("two"), "sub/token", "tok-two\n");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    Files {
        missing: dir.path().join("nowhere/config"),
        first,
        second,
        home,
        _dir: dir,
    }
}

#[test]
fn kubeconfig_files_merge_in_list_order_first_one_wins() {
    let env = Env::new();
    let f = files();
    env.set("KUBECONFIG", list(&[&f.first, &f.second]));
    // current-context from the first file; its whole context, cluster and user.
    let c = Config::infer().unwrap();
    assert_eq!(c.client_config.server, "http://one.invalid");
    assert_eq!(c.namespace(), "a");
    assert_eq!(bearer(&c), "Bearer t1");
    // An entry both define comes from the first, whole (not field by field).
    let c = Config::infer_with(&with_context("shared")).unwrap();
    assert_eq!(
        (c.namespace(), c.client_config.server.as_str()),
        ("first", "http://one.invalid")
    );
    // An entry only the second defines is there, and names the first file's user.
    let c = Config::infer_with(&with_context("ctx-b")).unwrap();
    assert_eq!(
        (c.namespace(), c.client_config.server.as_str()),
        ("b", "http://d.invalid")
    );
    assert_eq!(bearer(&c), "Bearer t1");

    // The other order: the other file wins everything.
    env.set("KUBECONFIG", list(&[&f.second, &f.first]));
    let c = Config::infer().unwrap();
    assert_eq!(
        (c.namespace(), c.client_config.server.as_str()),
        ("b", "http://d.invalid")
    );
    assert_eq!(bearer(&c), "Bearer t2");
    let c = Config::infer_with(&with_context("ctx-a")).unwrap();
    assert_eq!(c.namespace(), "other");

    // A first file without current-context leaves it to the next one that sets it.
    let dir = tempfile::tempdir().unwrap();
    let bare = write(
        dir.path(),
        "bare",
        &FIRST.replace("current-context: ctx-a", ""),
    );
    env.set("KUBECONFIG", list(&[&bare, &f.second]));
    let c = Config::infer().unwrap();
    assert!(c.source.contains("context \"ctx-b\""), "{}", c.source);
    // ... and ctx-b's cluster d, user u from the first file.
    assert_eq!(bearer(&c), "Bearer t1");
}

#[test]
fn relative_paths_resolve_against_the_file_that_holds_them() {
    let env = Env::new();
    let f = files();
    env.set("KUBECONFIG", list(&[&f.first, &f.second]));
    let c = Config::infer_with(&with_context("file-one")).unwrap();
    assert_eq!(bearer(&c), "Bearer tok-one");
    let c = Config::infer_with(&with_context("file-two")).unwrap();
    assert_eq!(bearer(&c), "Bearer tok-two");
}

#[test]
fn missing_and_empty_entries_in_kubeconfig_are_skipped() {
    let env = Env::new();
    let f = files();
    let mut value = list(&[&f.missing, Path::new(""), &f.first, &f.first]);
    value.push(if cfg!(windows) { ";" } else { ":" });
    env.set("KUBECONFIG", &value);
    let c = Config::infer().unwrap();
    assert_eq!(c.namespace(), "a");
    assert_eq!(
        c.source,
        format!("kubeconfig {} context \"ctx-a\"", f.first.display()),
        "the file once, the missing one not at all"
    );
}

#[test]
fn kubeconfig_naming_no_existing_file_is_an_error_never_a_fall_back() {
    let env = Env::new();
    let f = files();
    // A perfectly good ~/.kube/config and a pod's environment: neither may be used.
    write(&f.home, ".kube/config", FIRST);
    env.set("HOME", &f.home);
    env.set("KUBERNETES_SERVICE_HOST", "10.0.0.1");
    env.set("KUBERNETES_SERVICE_PORT", "443");
    let other_missing = f.missing.with_file_name("typo");
    env.set("KUBECONFIG", list(&[&f.missing, &other_missing]));
    let e = Config::infer().unwrap_err().to_string();
    assert!(
        e.contains(&f.missing.display().to_string())
            && e.contains(&other_missing.display().to_string()),
        "names every file: {e}"
    );
    let e = Config::infer_if_configured(&KubeconfigOptions::default())
        .expect_err("a KUBECONFIG typo is an error, not 'nothing configured'");
    assert!(e.to_string().contains("KUBECONFIG"), "{e}");

    // Only separators: names no file at all.
    env.set("KUBECONFIG", if cfg!(windows) { ";;" } else { "::" });
    let e = Config::infer().unwrap_err().to_string();
    assert!(e.contains("names no file"), "{e}");
}

#[test]
fn an_explicit_kubeconfig_file_wins_over_kubeconfig_and_home_like_kubectl_s_flag() {
    let env = Env::new();
    let f = files();
    write(&f.home, ".kube/config", SECOND);
    env.set("HOME", &f.home);
    env.set("KUBECONFIG", &f.second);
    let options = KubeconfigOptions::new().kubeconfig(&f.first);
    let config = Config::infer_if_configured(&options)
        .unwrap()
        .expect("configured");
    assert_eq!(config.client_config.server, "http://one.invalid");
    assert_eq!(bearer(&config), "Bearer t1");
    // The other options still apply to that file.
    let config = Config::infer_with(&options.clone().context("file-one")).unwrap();
    assert_eq!(bearer(&config), "Bearer tok-one");
    // A missing file is an error naming it, never "nothing configured" or a fall back.
    env.unset("KUBECONFIG");
    let missing = KubeconfigOptions::new().kubeconfig(&f.missing);
    let e = Config::infer_if_configured(&missing).expect_err("a missing --kubeconfig file");
    assert!(
        e.to_string().contains(&f.missing.display().to_string()),
        "{e}"
    );
}

#[test]
fn without_kubeconfig_home_then_in_cluster_and_the_message_says_so() {
    let env = Env::new();
    let f = files();
    env.set("HOME", &f.home);
    let e = Config::infer().unwrap_err().to_string();
    assert!(
        e.contains("KUBECONFIG is not set") && !e.contains("KUBECONFIG names"),
        "{e}"
    );
    assert!(e.contains(".kube/config"), "{e}");
    assert!(Config::infer_if_configured(&KubeconfigOptions::default())
        .unwrap()
        .is_none());
    // An empty KUBECONFIG is the same as none (kubectl's rule): ~/.kube/config is used.
    write(&f.home, ".kube/config", SECOND);
    env.set("KUBECONFIG", "");
    let c = Config::infer().unwrap();
    assert_eq!(c.namespace(), "b");
    env.unset("KUBECONFIG");
    assert_eq!(Config::infer().unwrap().namespace(), "b");
}

// ---------------------------------------------------------------------------------------
// Proxies

/// A CONNECT proxy on loopback: records each request line, then tunnels to `upstream`
/// (whatever host the client asked for, so names no DNS knows can be used).
struct Proxy {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let record = Arc::clone(&record);
                std::thread::spawn(move || tunnel(client, upstream, &record));
            }
        });
        Proxy { url, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn tunnel(mut client: TcpStream, upstream: SocketAddr, record: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 2 {
        line.clear();
    }
    record.lock().unwrap().push(first.trim_end().to_owned());
    if !first.starts_with("CONNECT ") {
        let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n");
        return;
    }
    let Ok(mut server) = TcpStream::connect(upstream) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
        return;
    };
    let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
    let _ = server.write_all(reader.buffer());
    splice(client, server);
}

fn api_server(builder: kube_informer::testing::ApiServerBuilder) -> ApiServer {
    let s = builder.resource(&pods()).start();
    s.create(&pods(), pod("lab", "p", "Running")).unwrap();
    s
}

/// `server`'s client settings, addressed as `url` instead.
fn config_at(server: &ApiServer, url: &str) -> ClientConfig {
    let mut cc = server.client_config();
    cc.server = url.to_owned();
    cc.connect_timeout = Duration::from_secs(2);
    cc.max_retries = 0;
    cc
}

fn list_pods(cc: ClientConfig) -> kube_informer::Result<usize> {
    let api: Api<DynamicObject> = Api::all_with(Client::new(cc)?, &pods());
    Ok(api.list(&ListParams::default())?.items.len())
}

#[test]
fn http_proxy_from_the_environment_is_used_when_the_config_names_none() {
    let env = Env::new();
    let server = api_server(ApiServer::builder().token("tk"));
    let port = server.addr().port();
    for var in ["HTTP_PROXY", "http_proxy"] {
        let proxy = Proxy::start(server.addr());
        env.set(var, &proxy.url);
        // `proxy: None` (the default): the environment decides.
        let cc = config_at(&server, &format!("http://kube-api.invalid:{port}"));
        assert!(cc.proxy.is_none());
        assert_eq!(list_pods(cc).unwrap(), 1, "{var}");
        assert_eq!(
            proxy.seen(),
            [format!("CONNECT kube-api.invalid:{port} HTTP/1.1")],
            "{var}"
        );
        env.unset(var);
    }
}

#[test]
fn https_servers_use_https_proxy_only() {
    let env = Env::new();
    let server = api_server(ApiServer::builder().token("tk").tls());
    let port = server.addr().port();
    let https_proxy = Proxy::start(server.addr());
    let http_proxy = Proxy::start(server.addr());
    env.set("https_proxy", &https_proxy.url);
    env.set("HTTP_PROXY", &http_proxy.url);
    let mut cc = config_at(&server, &format!("https://kube-api.invalid:{port}"));
    // The test certificate does not name kube-api.invalid.
    cc.ca_pem = None;
    cc.insecure_skip_tls_verify = true;
    assert_eq!(list_pods(cc).unwrap(), 1);
    assert_eq!(
        https_proxy.seen(),
        [format!("CONNECT kube-api.invalid:{port} HTTP/1.1")]
    );
    assert!(http_proxy.seen().is_empty(), "{:?}", http_proxy.seen());
}

#[test]
fn no_proxy_sends_matching_hosts_direct() {
    let env = Env::new();
    let server = api_server(ApiServer::builder().token("tk"));
    let port = server.addr().port();
    let proxy = Proxy::start(server.addr());
    env.set("HTTP_PROXY", &proxy.url);
    // 192.0.2.0/24 is reserved for documentation: through the proxy it reaches the test
    // server, directly it reaches nothing.
    let by_ip = format!("http://192.0.2.7:{port}");
    let by_name = format!("http://api.kube.invalid:{port}");
    assert_eq!(list_pods(config_at(&server, &by_ip)).unwrap(), 1);
    assert_eq!(list_pods(config_at(&server, &by_name)).unwrap(), 1);
    assert_eq!(proxy.seen().len(), 2, "{:?}", proxy.seen());
    for (no_proxy, url) in [
        ("192.0.2.0/24", &by_ip),
        ("example.com, 192.0.2.7", &by_ip),
        ("kube.invalid", &by_name),
        (".kube.invalid", &by_name),
        (&format!("api.kube.invalid:{port}") as &str, &by_name),
        ("*", &by_name),
    ] {
        proxy.seen.lock().unwrap().clear();
        env.set("NO_PROXY", no_proxy);
        assert!(
            list_pods(config_at(&server, url)).is_err(),
            "NO_PROXY={no_proxy:?} {url}: went direct, where nothing answers"
        );
        assert!(
            proxy.seen().is_empty(),
            "NO_PROXY={no_proxy:?}: {:?}",
            proxy.seen()
        );
    }
    // An entry that does not match leaves the proxy in use; lower case is read too.
    env.unset("NO_PROXY");
    env.set("no_proxy", "other.invalid,192.0.3.0/24");
    proxy.seen.lock().unwrap().clear();
    assert_eq!(list_pods(config_at(&server, &by_name)).unwrap(), 1);
    assert_eq!(proxy.seen().len(), 1);
}

#[test]
fn loopback_servers_are_never_proxied() {
    // Go's ProxyFromEnvironment rule, which client-go follows.
    let env = Env::new();
    let server = api_server(ApiServer::builder().token("tk"));
    let proxy = Proxy::start(server.addr());
    env.set("HTTP_PROXY", &proxy.url);
    let port = server.addr().port();
    for url in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        assert_eq!(list_pods(config_at(&server, &url)).unwrap(), 1, "{url}");
    }
    assert!(proxy.seen().is_empty(), "{:?}", proxy.seen());
}

#[test]
fn a_configured_proxy_wins_over_the_environment() {
    let env = Env::new();
    let server = api_server(ApiServer::builder().token("tk"));
    let port = server.addr().port();
    let from_env = Proxy::start(server.addr());
    let configured = Proxy::start(server.addr());
    env.set("HTTP_PROXY", &from_env.url);
    env.set("NO_PROXY", "kube-api.invalid");
    let mut cc = config_at(&server, &format!("http://kube-api.invalid:{port}"));
    cc.proxy = Some(configured.url.clone());
    assert_eq!(list_pods(cc).unwrap(), 1);
    assert_eq!(configured.seen().len(), 1);
    assert!(from_env.seen().is_empty());
    // The kubeconfig's proxy-url is that setting.
    let yaml = format!(
        "current-context: x\nclusters:\n- name: c\n  cluster: {{server: \"http://kube-api.invalid:{port}\", proxy-url: \"{}\"}}\nusers:\n- name: u\n  user: {{token: tk}}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\n",
        configured.url
    );
    let c = Config::from_kubeconfig_str(&yaml, &KubeconfigOptions::default()).unwrap();
    assert_eq!(
        c.client_config.proxy.as_deref(),
        Some(configured.url.as_str())
    );
}

#[test]
fn a_bad_proxy_in_the_environment_is_named_without_its_credentials() {
    let env = Env::new();
    env.set(
        "HTTPS_PROXY",
        "ftp://someone:ENV-PROXY-PW@proxy.example:3128",
    );
    let e = Client::new(ClientConfig::new("https://kube.example:6443")).unwrap_err();
    let text = format!("{e} {e:?}");
    assert!(
        text.contains("HTTPS_PROXY") && text.contains("proxy.example:3128"),
        "{text}"
    );
    assert!(
        !text.contains("ENV-PROXY-PW") && !text.contains("someone"),
        "{text}"
    );
    // tls-server-name cannot be combined with a proxy: the message says which and what to do.
    env.set("HTTPS_PROXY", "http://proxy.example:3128");
    let mut cc = ClientConfig::new("https://kube.example:6443");
    cc.tls_server_name = Some("kubernetes.default.svc".into());
    let e = Client::new(cc).unwrap_err().to_string();
    assert!(e.contains("HTTPS_PROXY") && e.contains("NO_PROXY"), "{e}");
}
