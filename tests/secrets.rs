//! Secrets never leave: `Debug` of every configuration type, error messages for bad watch
//! lines, bodies that do not decode and error bodies that are not a `Status`, a proxy URL in
//! an error, and namespaces that try to change the request path.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::config::{Config, ExecProvider, Kubeconfig, KubeconfigOptions};
use kube_informer::testing;
use kube_informer::{Api, Client, ClientConfig, Error, ListParams, WatchParams};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A line from the middle of the test client key: if it shows, the key showed.
fn key_line() -> &'static str {
    let lines: Vec<&str> = testing::ADMIN_KEY_PEM.lines().collect();
    lines[lines.len() / 2]
}

/// Every distinctive secret of [`secret_kubeconfig`].
fn secrets() -> Vec<String> {
    vec![
        "PROXY-PW-Q1".into(),
        "TOKEN-Q2".into(),
        "PASSWORD-Q3".into(),
        "ARG-Q4".into(),
        "ENV-Q5".into(),
        "SERVER-PW-Q6".into(),
        "IDTOKEN-Q7".into(),
        "REFRESH-Q8".into(),
        "CLIENTSECRET-Q9".into(),
        "GCPTOKEN-Q10".into(),
        "proxyuser".into(),
        b64(testing::ADMIN_KEY_PEM),
        key_line().into(),
    ]
}

fn secret_kubeconfig() -> String {
    format!(
        r#"apiVersion: v1
kind: Config
current-context: tok
clusters:
- name: c
  cluster:
    server: https://kube.example:6443
    proxy-url: http://proxyuser:PROXY-PW-Q1@proxy.example:3128
    certificate-authority-data: {ca}
- name: with-userinfo
  cluster:
    server: https://someone:SERVER-PW-Q6@kube.example:6443
users:
- name: tok
  user:
    token: TOKEN-Q2
- name: basic
  user:
    username: admin
    password: PASSWORD-Q3
- name: cert
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: kube-login
      args: ["get-token", "--secret", "ARG-Q4"]
      env:
      - name: LOGIN_TOKEN
        value: ENV-Q5
      installHint: install kube-login
      interactiveMode: Never
      provideClusterInfo: true
- name: oidc
  user:
    auth-provider:
      name: oidc
      config:
        idp-issuer-url: https://issuer.example
        client-id: kube-cli
        client-secret: CLIENTSECRET-Q9
        id-token: IDTOKEN-Q7
        refresh-token: REFRESH-Q8
- name: gcp
  user:
    auth-provider:
      name: gcp
      config:
        access-token: GCPTOKEN-Q10
contexts:
- name: oidc
  context: {{cluster: c, user: oidc}}
- name: gcp
  context: {{cluster: c, user: gcp}}
- name: tok
  context: {{cluster: c, user: tok}}
- name: basic
  context: {{cluster: c, user: basic}}
- name: cert
  context: {{cluster: c, user: cert}}
- name: exec
  context: {{cluster: c, user: exec}}
- name: userinfo
  context: {{cluster: with-userinfo, user: tok}}
- name: exec-userinfo
  context: {{cluster: with-userinfo, user: exec}}
"#,
        ca = b64(testing::CA_PEM),
        cert = b64(testing::ADMIN_CERT_PEM),
        key = b64(testing::ADMIN_KEY_PEM),
    )
}

#[track_caller]
fn assert_no_secret(what: &str, text: &str) {
    for s in secrets() {
        assert!(!text.contains(&s), "{what} shows {s:?}:\n{text}");
    }
}

#[track_caller]
fn assert_debug_clean(what: &str, value: &impl std::fmt::Debug) {
    assert_no_secret(what, &format!("{value:?}"));
    assert_no_secret(what, &format!("{value:#?}"));
}

#[test]
fn debug_of_every_configuration_type_shows_names_but_no_secret() {
    let yaml = secret_kubeconfig();
    let kc = Kubeconfig::parse(&yaml, "(test)").unwrap();
    assert_debug_clean("Kubeconfig", &kc);
    for c in &kc.clusters {
        assert_debug_clean("Cluster", &c.cluster);
    }
    let exec = kc.users.iter().find_map(|u| u.user.exec.clone()).unwrap();
    assert_debug_clean("ExecConfig", &exec);
    let names = format!("{exec:?}");
    assert!(
        names.contains("kube-login") && names.contains("LOGIN_TOKEN"),
        "names stay visible: {names}"
    );
    let provider = ExecProvider::new(exec, None).unwrap();
    assert_debug_clean("ExecProvider", &provider);
    let cluster = format!("{:?}", kc.clusters[0].cluster);
    assert!(cluster.contains("proxy.example:3128"), "{cluster}");

    let oidc = kc
        .users
        .iter()
        .find_map(|u| u.user.auth_provider.clone())
        .unwrap();
    assert_debug_clean("AuthProviderConfig", &oidc);
    let shown = format!("{oidc:?}");
    assert!(
        shown.contains("https://issuer.example") && shown.contains("kube-cli"),
        "non-secret settings stay visible: {shown}"
    );
    // A removed provider: its configuration loads, its client is refused, and neither the
    // configuration's Debug nor the error shows its token.
    let options = KubeconfigOptions::new().context("gcp");
    let config = Config::from_kubeconfig_str(&yaml, &options).unwrap();
    assert_debug_clean("Config (gcp)", &config);
    let e = config.client().unwrap_err();
    assert_no_secret("gcp error", &format!("{e} {e:?}"));

    for context in [
        "tok",
        "basic",
        "cert",
        "exec",
        "userinfo",
        "exec-userinfo",
        "oidc",
    ] {
        let options = KubeconfigOptions::new().context(context);
        let config = Config::from_kubeconfig_str(&yaml, &options).unwrap();
        assert_debug_clean(&format!("Config ({context})"), &config);
        assert_debug_clean(&format!("Auth ({context})"), &config.client_config.auth);
        let client = config.client().unwrap();
        assert_debug_clean(&format!("Client ({context})"), &client);
    }
}

/// `ClientConfig`'s `Debug` shows `server` and `proxy` without `user:password@`; its other
/// secrets are redacted by their own types (see the test above).
#[test]
fn debug_of_client_config_hides_proxy_credentials() {
    let options = KubeconfigOptions::new().context("exec");
    let config = Config::from_kubeconfig_str(&secret_kubeconfig(), &options).unwrap();
    assert_debug_clean("ClientConfig", &config.client_config);
}

#[test]
fn a_bad_proxy_url_is_named_without_its_credentials() {
    let mut cc = ClientConfig::new("https://kube.example:6443");
    cc.proxy = Some("ftp://proxyuser:PROXY-PW-Q1@proxy.example:3128".into());
    let e = Client::new(cc).unwrap_err();
    let text = format!("{e} {e:?}");
    assert_no_secret("proxy error", &text);
    assert!(text.contains("proxy.example:3128"), "{text}");
}

/// A server that answers every connection with `head` (status line and headers, without
/// the blank line) and `body`, then closes.
fn answer(head: &str, body: &[u8]) -> String {
    answer_recording(head, body).0
}

/// [`answer`], also recording each request line as it arrived (undecoded).
fn answer_recording(head: &str, body: &[u8]) -> (String, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let head = head.to_owned();
    let body = body.to_vec();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            record.lock().unwrap().push(line.trim_end().to_owned());
            while reader.read_line(&mut line).unwrap_or(0) > 2 {
                line.clear();
            }
            let _ = write!(
                stream,
                "{head}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    (url, seen)
}

fn api_at(url: &str) -> Api<DynamicObject> {
    let mut cc = ClientConfig::new(url);
    cc.qps = 0.0;
    cc.max_retries = 0;
    Api::namespaced_with(Client::new(cc).unwrap(), "lab", &pods())
}

const SECRET: &str = "c2VjcmV0LWRhdGEtUTc"; // what a Secret's `data` looks like

#[track_caller]
fn assert_quiet(what: &str, e: &Error) {
    let text = format!("{e} {e:?}");
    assert!(!text.contains(SECRET), "{what} quotes object data: {text}");
}

#[test]
fn bad_watch_lines_are_described_by_position_and_length_not_quoted() {
    // Secret content in the first 120 bytes of a line that is not JSON.
    let garbage =
        format!("{{\"type\":\"ADDED\",\"object\":{{\"data\":{{\"k\":\"{SECRET}\"}} oops\n");
    // A value serde's message would quote (a string where a map belongs), far into the line.
    let padding = "x".repeat(300);
    let wrong_type = format!(
        "{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"name\":\"{padding}\",\"labels\":\"{SECRET}\"}}}}}}\n"
    );
    // A connection that ends in the middle of an event.
    let truncated = format!("{{\"type\":\"ADDED\",\"object\":{{\"data\":{{\"k\":\"{SECRET}");
    for (what, body) in [
        ("garbage", garbage),
        ("wrong type", wrong_type),
        ("truncated", truncated),
    ] {
        let url = answer(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json",
            body.as_bytes(),
        );
        let mut watch = api_at(&url).watch(&WatchParams::default()).unwrap();
        let e = watch
            .next()
            .expect("an item")
            .expect_err("the line is an error");
        assert_quiet(what, &e);
        let text = e.to_string();
        assert!(text.contains("bytes"), "{what}: says how long: {text}");
    }
}

#[test]
fn bodies_that_do_not_decode_are_not_quoted() {
    let padding = "x".repeat(300);
    let object = format!("{{\"metadata\":{{\"name\":\"{padding}\",\"labels\":\"{SECRET}\"}}}}");
    let url = answer(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json",
        object.as_bytes(),
    );
    let e = api_at(&url).get("p").unwrap_err();
    assert!(matches!(e, Error::Decode { .. }), "{e:?}");
    assert_quiet("get", &e);
    assert!(e.to_string().contains("line 1 column"), "{e}");

    let list = format!("{{\"kind\":\"PodList\",\"metadata\":{{}},\"items\":[{object}]}}");
    let url = answer(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json",
        list.as_bytes(),
    );
    let e = api_at(&url).list(&ListParams::default()).unwrap_err();
    assert!(matches!(e, Error::Decode { .. }), "{e:?}");
    assert_quiet("list", &e);
}

#[test]
fn error_bodies_that_are_not_a_status_give_length_and_content_type() {
    let body = format!("<html><body>upstream said: {SECRET}</body></html>");
    let url = answer(
        "HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html",
        body.as_bytes(),
    );
    let e = api_at(&url).get("p").unwrap_err();
    assert_quiet("502", &e);
    let text = e.to_string();
    assert!(
        text.contains(&format!("{}-byte", body.len())) && text.contains("text/html"),
        "{text}"
    );
    // A real Status keeps its reason and message.
    let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"p\" is forbidden","reason":"Forbidden","code":403}"#;
    let url = answer(
        "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json",
        status.as_bytes(),
    );
    let e = api_at(&url).get("p").unwrap_err();
    assert!(
        e.to_string().contains("Forbidden") && e.to_string().contains("is forbidden"),
        "{e}"
    );
}

#[test]
fn a_namespace_cannot_change_the_request_path() {
    let (url, seen) = answer_recording(
        "HTTP/1.1 404 Not Found\r\ncontent-type: application/json",
        br#"{"kind":"Status","status":"Failure","reason":"NotFound","code":404}"#,
    );
    for (namespace, encoded) in [
        ("a/../b?x", "a%2F..%2Fb%3Fx"),
        ("..", "%2E%2E"),
        (".", "%2E"),
        ("a#b", "a%23b"),
    ] {
        seen.lock().unwrap().clear();
        let mut cc = ClientConfig::new(&url);
        cc.qps = 0.0;
        let api: Api<DynamicObject> =
            Api::namespaced_with(Client::new(cc).unwrap(), namespace, &pods());
        let _ = api.list(&ListParams::default());
        let _ = api.get("..");
        let _ = api.watch(&WatchParams::default());
        let requests = seen.lock().unwrap().clone();
        let collection = format!("GET /api/v1/namespaces/{encoded}/pods");
        assert_eq!(requests.len(), 3, "{requests:#?}");
        assert!(
            requests[0].starts_with(&format!("{collection}?"))
                || requests[0] == format!("{collection} HTTP/1.1"),
            "{namespace:?}: {requests:#?}"
        );
        assert_eq!(
            requests[1],
            format!("{collection}/%2E%2E HTTP/1.1"),
            "{namespace:?}"
        );
        assert!(
            requests[2].starts_with(&format!("{collection}?")),
            "{namespace:?}: {requests:#?}"
        );
    }
}

/// A server URL the client refuses is named without its `user:password@`.
#[test]
fn a_refused_server_url_is_named_without_its_credentials() {
    for server in [
        "ftp://user:pw-SERVER-SECRET@k8s.example.com",
        "http://user:pw-SERVER-SECRET@k8s.example.com",
    ] {
        let mut config = kube_informer::ClientConfig::new(server);
        config.tls_server_name = Some("k8s.internal".into());
        let err = kube_informer::Client::new(config).unwrap_err().to_string();
        assert!(!err.contains("pw-SERVER-SECRET"), "{err}");
        assert!(err.contains("k8s.example.com"), "{err}");
    }
}
