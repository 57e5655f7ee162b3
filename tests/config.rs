//! Cluster configuration against the test API server with TLS: a kubeconfig per auth method,
//! KUBECONFIG merging, relative paths, CA checks, token-file rotation, exec plugins, the
//! in-cluster service account, and a clear error for every malformed input.

mod common;

use std::io::Write;
use std::path::Path;

use base64::Engine as _;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::testing::{self, ApiServer};
use kube_informer::{Api, ListParams};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn kubeconfig(server: &str, cluster_extra: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: lab\n  cluster:\n    server: {server}\n{cluster_extra}contexts:\n- name: lab\n  context:\n    cluster: lab\n    user: me\n    namespace: team-a\nusers:\n- name: me\n  user:\n{user}"
    )
}

fn ca_data() -> String {
    format!("    certificate-authority-data: {}\n", b64(testing::CA_PEM))
}

/// A configuration from an inline kubeconfig (see [`kubeconfig`]); panics if it is refused.
fn load(server: &str, cluster_extra: &str, user: &str) -> Config {
    Config::from_kubeconfig_str(
        &kubeconfig(server, cluster_extra, user),
        &Default::default(),
    )
    .unwrap()
}

fn reaches(config: &Config) -> kube_informer::Result<usize> {
    let api: Api<DynamicObject> = Api::all_with(config.client()?, &pods());
    Ok(api.list(&ListParams::default())?.items.len())
}

fn tls_server(builder: kube_informer::testing::ApiServerBuilder) -> ApiServer {
    let s = builder.tls().resource(&pods()).start();
    s.create(&pods(), pod("team-a", "p", "Pending")).unwrap();
    s
}

#[test]
fn a_kubeconfig_for_each_auth_method_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    // Bearer token, CA inline.
    let s = tls_server(ApiServer::builder().token("t0k3n"));
    let c = load(&s.url(), &ca_data(), "    token: t0k3n\n");
    assert_eq!(reaches(&c).unwrap(), 1);
    assert_eq!(c.namespace(), "team-a");
    assert!(!format!("{c:?}").contains("t0k3n"), "no secret in Debug");

    // Basic auth.
    let s = tls_server(ApiServer::builder().basic_auth("admin", "pa55"));
    let c = load(
        &s.url(),
        &ca_data(),
        "    username: admin\n    password: pa55\n",
    );
    assert_eq!(reaches(&c).unwrap(), 1);
    assert!(!format!("{c:?}").contains("pa55"));

    // Client certificate as data, then as files next to the kubeconfig (relative paths).
    let s = tls_server(ApiServer::builder().client_certificates());
    let user = format!(
        "    client-certificate-data: {}\n    client-key-data: {}\n",
        b64(testing::ADMIN_CERT_PEM),
        b64(testing::ADMIN_KEY_PEM)
    );
    let c = load(&s.url(), &ca_data(), &user);
    assert_eq!(reaches(&c).unwrap(), 1);
    assert!(!format!("{c:?}").contains("PRIVATE KEY"));
    write(dir.path(), "ca.pem", testing::CA_PEM);
    write(dir.path(), "admin.pem", testing::ADMIN_CERT_PEM);
    write(dir.path(), "admin-key.pem", testing::ADMIN_KEY_PEM);
    let files = kubeconfig(
        &s.url(),
        "    certificate-authority: ca.pem\n",
        "    client-certificate: admin.pem\n    client-key: admin-key.pem\n",
    );
    let path = write(dir.path(), "config", &files);
    let c = Config::from_kubeconfig(&path).unwrap();
    assert_eq!(
        reaches(&c).unwrap(),
        1,
        "relative paths resolve against the kubeconfig's folder"
    );
}

#[test]
fn kubeconfig_merging_lets_the_first_file_win() {
    let dir = tempfile::tempdir().unwrap();
    let good = tls_server(ApiServer::builder().token("good"));
    let first = format!(
        "current-context: shared\nclusters:\n- name: c1\n  cluster:\n    server: {}\n{}contexts:\n- name: shared\n  context: {{cluster: c1, user: u1, namespace: first}}\nusers:\n- name: u1\n  user: {{token: good}}\n",
        good.url(),
        ca_data()
    );
    let second = "current-context: other\nclusters:\n- name: c2\n  cluster:\n    server: https://192.0.2.1:1\ncontexts:\n- name: shared\n  context: {cluster: c2, user: u2, namespace: second}\n- name: only-second\n  context: {cluster: c1, user: u1, namespace: from-second}\nusers:\n- name: u1\n  user: {token: bad}\n- name: u2\n  user: {token: bad}\n";
    let a = write(dir.path(), "a", &first);
    let b = write(dir.path(), "b", second);
    let missing = dir.path().join("does-not-exist");
    let c = Config::from_kubeconfig_paths(&[a.clone(), b.clone()], &Default::default()).unwrap();
    assert_eq!(c.namespace(), "first");
    assert_eq!(
        reaches(&c).unwrap(),
        1,
        "first file's context, cluster and user"
    );
    // An entry only the second file has is still there.
    let opts = KubeconfigOptions::new().context("only-second");
    let c = Config::from_kubeconfig_paths(&[a.clone(), b.clone()], &opts).unwrap();
    assert_eq!(c.namespace(), "from-second");
    assert_eq!(
        reaches(&c).unwrap(),
        1,
        "u1 and c1 come from the first file"
    );

    // The same through $KUBECONFIG, with a missing file skipped (only this test touches it).
    let joined = std::env::join_paths([missing, a, b]).unwrap();
    std::env::set_var("KUBECONFIG", &joined);
    let c = Config::infer().unwrap();
    std::env::remove_var("KUBECONFIG");
    assert_eq!(c.namespace(), "first");
    assert!(c.source.contains("context \"shared\""), "{}", c.source);
}

/// A name used twice in one file's `clusters`, `users` or `contexts` is an error, as
/// client-go's conversion makes it (kubectl refuses the file), naming the list and the name
/// and never an entry's settings; across files the first file's entry wins, but a later
/// file with a duplicate of its own is refused too (client-go reads each file whole).
#[test]
fn a_name_twice_in_one_file_is_an_error_as_in_client_go() {
    let dir = tempfile::tempdir().unwrap();
    let good = tls_server(ApiServer::builder().token("good"));
    let entry = |list: &str| match list {
        "clusters" => "- name: c1\n  cluster: {server: https://192.0.2.1:1}\n".to_string(),
        "users" => "- name: u1\n  user: {token: s3cret-second}\n".to_string(),
        _ => "- name: shared\n  context: {cluster: c1, user: u1, namespace: second}\n".to_string(),
    };
    let base = |extra: &str| {
        let clusters = format!(
            "- name: c1\n  cluster:\n    server: {}\n{}",
            good.url(),
            ca_data()
        );
        let users = "- name: u1\n  user: {token: good}\n".to_string();
        let contexts =
            "- name: shared\n  context: {cluster: c1, user: u1, namespace: first}\n".to_string();
        let (mut c, mut u, mut x) = (clusters, users, contexts);
        match extra {
            "clusters" => c.push_str(&entry("clusters")),
            "users" => u.push_str(&entry("users")),
            "contexts" => x.push_str(&entry("contexts")),
            _ => {}
        }
        format!("current-context: shared\nclusters:\n{c}users:\n{u}contexts:\n{x}")
    };
    for list in ["clusters", "users", "contexts"] {
        let text = base(list);
        let e = Config::from_kubeconfig_str(&text, &Default::default()).unwrap_err();
        let m = e.to_string();
        let name = match list {
            "clusters" => "c1",
            "users" => "u1",
            _ => "shared",
        };
        assert!(
            m.contains(&format!("duplicate name \"{name}\" in {list}")),
            "{list}: {m}"
        );
        assert!(
            !m.contains("s3cret") && !m.contains("good") && !m.contains("192.0.2.1"),
            "{m}"
        );
        let file = write(dir.path(), list, &text);
        let e = Config::from_kubeconfig(&file).unwrap_err();
        assert!(e.to_string().contains(&file.display().to_string()), "{e}");
    }
    // Across files: the first file's entries win, whatever the second holds.
    let first = write(dir.path(), "first", &base(""));
    let second = write(
        dir.path(),
        "second",
        &format!(
            "clusters:\n{}users:\n{}contexts:\n{}",
            entry("clusters"),
            entry("users"),
            entry("contexts")
        ),
    );
    let c = Config::from_kubeconfig_paths(&[first.clone(), second.clone()], &Default::default())
        .unwrap();
    assert_eq!(c.namespace(), "first");
    assert_eq!(reaches(&c).unwrap(), 1);
    // A later file with a duplicate of its own is refused, though the first file wins.
    let twice = write(
        dir.path(),
        "twice",
        &base("users").replace("current-context: shared\n", ""),
    );
    let e = Config::from_kubeconfig_paths(&[first, twice], &Default::default()).unwrap_err();
    assert!(
        e.to_string().contains("duplicate name \"u1\" in users"),
        "{e}"
    );
}

#[test]
fn certificate_authority_checks() {
    let s = tls_server(ApiServer::builder().token("t"));
    let wrong = format!(
        "    certificate-authority-data: {}\n",
        b64(testing::OTHER_CA_PEM)
    );
    let c = load(&s.url(), &wrong, "    token: t\n");
    let err = reaches(&c).unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );

    let insecure = "    insecure-skip-tls-verify: true\n";
    let c = load(&s.url(), insecure, "    token: t\n");
    assert_eq!(reaches(&c).unwrap(), 1);

    let both = format!("{insecure}{}", ca_data());
    let err = Config::from_kubeconfig_str(
        &kubeconfig(&s.url(), &both, "    token: t\n"),
        &Default::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("insecure-skip-tls-verify"),
        "{err}"
    );
}

#[test]
fn token_file_rotation_is_picked_up_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = tls_server(ApiServer::builder().token("second"));
    let token = write(dir.path(), "token", "first\n");
    let user = format!("    tokenFile: {}\n", token.display());
    let c = load(&s.url(), &ca_data(), &user);
    let api: Api<DynamicObject> = Api::all_with(c.client().unwrap(), &pods());
    assert_eq!(
        api.list(&ListParams::default()).unwrap_err().code(),
        Some(401)
    );
    std::fs::write(&token, "second\n").unwrap();
    assert_eq!(api.list(&ListParams::default()).unwrap().items.len(), 1);
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    writeln!(f, "#!/bin/sh\n{body}").unwrap();
    drop(f);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

fn exec_user(command: &str, extra: &str) -> String {
    format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {command}\n      interactiveMode: Never\n{extra}"
    )
}

#[test]
fn exec_plugins_refresh_expiring_tokens_and_retry_once_on_401() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("runs");
    // Prints tok-N for its N-th run, expiring in one second (so the next request reruns it).
    let body = format!(
        "n=$(( $(cat {c} 2>/dev/null || echo 0) + 1 )); echo $n > {c}\n[ -n \"$KUBERNETES_EXEC_INFO\" ] || exit 3\nexp=$(date -u -d '+1 second' +%Y-%m-%dT%H:%M:%SZ)\necho \"{{\\\"apiVersion\\\":\\\"client.authentication.k8s.io/v1\\\",\\\"kind\\\":\\\"ExecCredential\\\",\\\"status\\\":{{\\\"token\\\":\\\"tok-$n\\\",\\\"expirationTimestamp\\\":\\\"$exp\\\"}}}}\"",
        c = count.display()
    );
    let cmd = script(dir.path(), "plugin.sh", &body);
    let runs = || {
        std::fs::read_to_string(&count)
            .unwrap_or_default()
            .trim()
            .parse::<u32>()
            .unwrap_or(0)
    };
    // The server only knows the second and third tokens: the first request gets 401 with
    // tok-1, the plugin runs again (tok-2) and the request goes through.
    let s = tls_server(ApiServer::builder().token("tok-2").token("tok-3"));
    let c = load(&s.url(), &ca_data(), &exec_user(&cmd, ""));
    let api: Api<DynamicObject> = Api::all_with(c.client().unwrap(), &pods());
    assert_eq!(api.list(&ListParams::default()).unwrap().items.len(), 1);
    assert_eq!(runs(), 2);
    // The token expires within the safety margin, so a later request runs the plugin again.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(api.list(&ListParams::default()).unwrap().items.len(), 1);
    assert_eq!(runs(), 3);

    // A long-lived token is cached.
    let count2 = dir.path().join("runs2");
    let body = format!(
        "n=$(( $(cat {c} 2>/dev/null || echo 0) + 1 )); echo $n > {c}\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"tok-3\",\"expirationTimestamp\":\"2999-01-01T00:00:00Z\"}}}}'",
        c = count2.display()
    );
    let cmd = script(dir.path(), "cached.sh", &body);
    let user = exec_user(&cmd, "").replace("/v1\n", "/v1beta1\n");
    let c = load(&s.url(), &ca_data(), &user);
    let api: Api<DynamicObject> = Api::all_with(c.client().unwrap(), &pods());
    for _ in 0..3 {
        api.list(&ListParams::default()).unwrap();
    }
    assert_eq!(std::fs::read_to_string(&count2).unwrap().trim(), "1");
}

#[test]
fn exec_plugin_failures_name_the_command_and_quote_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let s = tls_server(ApiServer::builder().token("x"));
    let try_user = |user: String| -> String {
        match Config::from_kubeconfig_str(
            &kubeconfig(&s.url(), &ca_data(), &user),
            &Default::default(),
        ) {
            Err(e) => e.to_string(),
            Ok(c) => reaches(&c).unwrap_err().to_string(),
        }
    };
    let failing = script(
        dir.path(),
        "fail.sh",
        "echo 'boom: you are not logged in' >&2\nexit 1",
    );
    let e = try_user(exec_user(&failing, ""));
    assert!(
        e.contains("fail.sh") && e.contains("boom: you are not logged in"),
        "{e}"
    );
    let garbage = script(dir.path(), "garbage.sh", "echo 'hello there'");
    let e = try_user(exec_user(&garbage, ""));
    assert!(
        e.contains("garbage.sh") && e.contains("not an ExecCredential"),
        "{e}"
    );
    // A plugin that leaves a background process holding its output: a bounded wait, an error.
    let lingering = script(dir.path(), "linger.sh", "sleep 30 &\necho 'partial'");
    let e = try_user(exec_user(&lingering, ""));
    assert!(
        e.contains("linger.sh") && e.contains("output stayed open"),
        "{e}"
    );
    let e = try_user(exec_user("/nonexistent/kube-login", ""));
    assert!(
        e.contains("/nonexistent/kube-login") && e.contains("cannot start"),
        "{e}"
    );
    let e = try_user(exec_user(&failing, "").replace("Never", "Always"));
    assert!(e.contains("interactive terminal"), "{e}");
}

#[test]
fn an_exec_plugin_that_cannot_start_shows_its_install_hint() {
    // kubectl prints the kubeconfig's installHint when the plugin binary is missing.
    let s = tls_server(ApiServer::builder().token("x"));
    let hint =
        "      installHint: |\n        kube-login is not installed: brew install kube-login\n";
    let user = exec_user("/nonexistent/kube-login", hint);
    let c = Config::from_kubeconfig_str(
        &kubeconfig(&s.url(), &ca_data(), &user),
        &Default::default(),
    )
    .unwrap();
    let e = reaches(&c).unwrap_err().to_string();
    assert!(
        e.contains("/nonexistent/kube-login")
            && e.contains("cannot start")
            && e.contains("kube-login is not installed: brew install kube-login"),
        "{e}"
    );
    // Without a hint, the error is as before.
    let user = exec_user("/nonexistent/kube-login", "");
    let c = Config::from_kubeconfig_str(
        &kubeconfig(&s.url(), &ca_data(), &user),
        &Default::default(),
    )
    .unwrap();
    let e = reaches(&c).unwrap_err().to_string();
    assert!(e.contains("cannot start") && !e.contains("brew"), "{e}");
}

#[test]
fn in_cluster_config_reads_the_service_account_and_follows_token_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let s = tls_server(ApiServer::builder().token("sa-2"));
    write(dir.path(), "ca.crt", testing::CA_PEM);
    write(dir.path(), "namespace", "team-a\n");
    let token = write(dir.path(), "token", "sa-1");
    let port = s.addr().port().to_string();
    let c = Config::in_cluster_from("127.0.0.1", &port, dir.path()).unwrap();
    assert_eq!(c.namespace(), "team-a");
    assert_eq!(c.source, "in-cluster");
    assert_eq!(reaches(&c).unwrap_err().code(), Some(401));
    std::fs::write(&token, "sa-2").unwrap();
    assert_eq!(reaches(&c).unwrap(), 1, "the rotated token is used");
    let v6 = Config::in_cluster_from("fd00::1", "443", dir.path()).unwrap();
    assert_eq!(v6.client_config.server, "https://[fd00::1]:443");
    let err = Config::in_cluster_from("127.0.0.1", "443", &dir.path().join("nope")).unwrap_err();
    assert!(err.to_string().contains("ca.crt"), "{err}");
}

#[test]
fn every_malformed_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(String, &str)> = vec![
        ("clusters: [\n  - name: x\n   bad".into(), "line"),
        (
            kubeconfig("https://h:1", "", "    token: t\n")
                .replace("current-context: lab", "current-context: nope"),
            "context \"nope\" is not defined",
        ),
        (
            kubeconfig("https://h:1", "", "    token: t\n")
                .replace("cluster: lab\n    user", "cluster: ghost\n    user"),
            "names cluster \"ghost\"",
        ),
        (
            kubeconfig("https://h:1", "", "    token: t\n")
                .replace("user: me\n    namespace", "user: ghost\n    namespace"),
            "names user \"ghost\"",
        ),
        (
            kubeconfig(
                "https://h:1",
                "    certificate-authority-data: '%%%not base64'\n",
                "    token: t\n",
            ),
            "not valid base64",
        ),
        (
            kubeconfig(
                "https://h:1",
                &format!("    certificate-authority-data: {}\n", b64("no pem here")),
                "    token: t\n",
            ),
            "no certificate",
        ),
        (
            kubeconfig(
                "https://h:1",
                "",
                &format!(
                    "    client-certificate-data: {}\n    client-key-data: {}\n",
                    b64(testing::ADMIN_CERT_PEM),
                    b64(testing::ADMIN_CERT_PEM)
                ),
            ),
            "no private key",
        ),
        (
            kubeconfig(
                "https://h:1",
                "    certificate-authority: /nonexistent/ca.pem\n",
                "    token: t\n",
            ),
            "/nonexistent/ca.pem",
        ),
        (
            kubeconfig(
                "https://h:1",
                "",
                &format!(
                    "    client-certificate-data: {}\n",
                    b64(testing::ADMIN_CERT_PEM)
                ),
            ),
            "without a client key",
        ),
        (kubeconfig("''", "", "    token: t\n"), "has no server"),
        (
            "current-context: x\n".into(),
            "context \"x\" is not defined",
        ),
        ("clusters: []\n".into(), "no current-context"),
    ];
    for (i, (yaml, want)) in cases.iter().enumerate() {
        let path = write(dir.path(), &format!("config-{i}"), yaml);
        let err = Config::from_kubeconfig(&path).unwrap_err().to_string();
        assert!(err.contains(want), "case {i}: {err}");
        assert!(
            err.contains(&path.display().to_string()),
            "case {i} names the file: {err}"
        );
    }
    let err = Config::from_kubeconfig(dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot read"), "{err}");
    let err = Config::from_kubeconfig_str("clusters: [\n  - name: x\n   bad", &Default::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("malformed YAML at line 2 column 3"), "{err}");
}

#[test]
fn tls_server_name_verifies_against_the_given_name() {
    let s = tls_server(ApiServer::builder().token("t"));
    // Reached by IP; the certificate is checked against another name it carries.
    let good = format!("{}    tls-server-name: kubernetes.default.svc\n", ca_data());
    let c = load(&s.url(), &good, "    token: t\n");
    assert_eq!(reaches(&c).unwrap(), 1);
    // A name the certificate does not carry fails, though the address is the same.
    let bad = format!(
        "{}    tls-server-name: not-in-the-cert.example\n",
        ca_data()
    );
    let c = load(&s.url(), &bad, "    token: t\n");
    let err = reaches(&c).unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
}

#[test]
fn exec_plugins_can_return_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let s = tls_server(ApiServer::builder().client_certificates());
    let credential = serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": testing::ADMIN_CERT_PEM, "clientKeyData": testing::ADMIN_KEY_PEM,
                   "expirationTimestamp": "2999-01-01T00:00:00Z"}
    });
    let cred_file = write(dir.path(), "cred.json", &credential.to_string());
    let count = dir.path().join("runs");
    let body = format!(
        "n=$(( $(cat {c} 2>/dev/null || echo 0) + 1 )); echo $n > {c}\ncat {f}",
        c = count.display(),
        f = cred_file.display()
    );
    let cmd = script(dir.path(), "cert-plugin.sh", &body);
    let c = load(&s.url(), &ca_data(), &exec_user(&cmd, ""));
    assert!(
        c.client_config.identity.is_none(),
        "the certificate comes from the plugin"
    );
    let api: Api<DynamicObject> = Api::all_with(c.client().unwrap(), &pods());
    for _ in 0..3 {
        assert_eq!(api.list(&ListParams::default()).unwrap().items.len(), 1);
    }
    assert_eq!(
        std::fs::read_to_string(&count).unwrap().trim(),
        "1",
        "cached until it expires"
    );
    // Watches use it too.
    let mut w = api
        .watch(&kube_informer::WatchParams::from_version("0").timeout(1))
        .unwrap();
    assert!(w.next().unwrap().is_ok());
    // A certificate without its key is a clear error.
    let half = serde_json::json!({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
        "status": {"clientCertificateData": testing::ADMIN_CERT_PEM}});
    let half_file = write(dir.path(), "half.json", &half.to_string());
    let cmd = script(
        dir.path(),
        "half.sh",
        &format!("cat {}", half_file.display()),
    );
    let c = load(&s.url(), &ca_data(), &exec_user(&cmd, ""));
    let err = reaches(&c).unwrap_err().to_string();
    assert!(
        err.contains("half.sh") && err.contains("without a key"),
        "{err}"
    );
}

#[test]
fn rsa_and_pkcs8_client_keys_work() {
    let s = tls_server(ApiServer::builder().client_certificates());
    let certs = fixture_path("certs");
    let read = |n: &str| std::fs::read_to_string(certs.join(n)).unwrap();
    for (cert, key) in [
        (read("rsa.pem"), read("rsa-key.pem")),
        (
            testing::ADMIN_CERT_PEM.to_string(),
            read("admin-key-pkcs8.pem"),
        ),
    ] {
        let user = format!(
            "    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&cert),
            b64(&key)
        );
        let c = load(&s.url(), &ca_data(), &user);
        assert_eq!(reaches(&c).unwrap(), 1, "{}", key.lines().next().unwrap());
    }
}

#[test]
fn impersonation_headers_are_sent() {
    use std::io::{BufRead, BufReader};
    // A one-request server that records the request head.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = Vec::new();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 2 {
            head.push(line.trim().to_ascii_lowercase());
            line.clear();
        }
        let body =
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}"#;
        write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).unwrap();
        head
    });
    let user = "    token: t\n    as: alice\n    as-groups: [devs, ops]\n    as-uid: uid-1234\n    as-user-extra:\n      example.com/scopes: [view, edit]\n      reason: [on call]\n";
    let c = load(&url, "", user);
    assert_eq!(reaches(&c).unwrap(), 0);
    let head = server.join().unwrap();
    // `as-uid` and `as-user-extra`, the key escaped as client-go escapes it (the server
    // lower-cases what it records).
    for expected in [
        "impersonate-uid: uid-1234",
        "impersonate-extra-example.com%2fscopes: view",
        "impersonate-extra-example.com%2fscopes: edit",
        "impersonate-extra-reason: on call",
    ] {
        assert!(head.contains(&expected.to_string()), "{expected}: {head:?}");
    }
    assert!(
        head.contains(&"impersonate-user: alice".to_string()),
        "{head:?}"
    );
    assert!(
        head.contains(&"impersonate-group: devs".to_string()),
        "{head:?}"
    );
    assert!(
        head.contains(&"impersonate-group: ops".to_string()),
        "{head:?}"
    );
    assert!(
        head.contains(&"authorization: bearer t".to_string()),
        "{head:?}"
    );
}

#[test]
fn impersonation_reaches_the_api_server_and_needs_a_user() {
    let s = tls_server(ApiServer::builder().token("t"));
    let user = "    token: t\n    as: alice\n    as-uid: u-1\n    as-groups: [devs]\n    as-user-extra:\n      acme.io/team: [a b]\n";
    assert_eq!(reaches(&load(&s.url(), &ca_data(), user)).unwrap(), 1);
    let seen = s.request_headers().pop().unwrap();
    assert_eq!(seen.values("impersonate-user"), ["alice"]);
    assert_eq!(seen.values("impersonate-uid"), ["u-1"]);
    assert_eq!(seen.values("impersonate-group"), ["devs"]);
    assert_eq!(seen.values("impersonate-extra-acme.io%2fteam"), ["a b"]);

    // Without `as`, kubectl silently drops the rest and acts as the real user; refused here.
    for partial in [
        "    token: t\n    as-groups: [devs]\n",
        "    token: t\n    as-uid: u-1\n",
        "    token: t\n    as-user-extra:\n      k: [v]\n",
    ] {
        let err = Config::from_kubeconfig_str(
            &kubeconfig(&s.url(), &ca_data(), partial),
            &Default::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("without `as`"), "{err}");
    }
}

#[test]
fn proxy_url_tunnels_through_an_http_proxy() {
    use std::io::{BufRead, BufReader};
    use std::net::{TcpListener, TcpStream};
    let s = tls_server(ApiServer::builder().token("t"));
    // A minimal CONNECT proxy that serves one tunnel and reports the target it was asked for.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_url = format!("http://{}", listener.local_addr().unwrap());
    let proxy = std::thread::spawn(move || {
        let (client, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(client.try_clone().unwrap());
        let mut request_line = String::new();
        reader.read_line(&mut request_line).unwrap();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 2 {
            line.clear();
        }
        let target = request_line.split_whitespace().nth(1).unwrap().to_owned();
        let upstream = TcpStream::connect(&target).unwrap();
        let mut c = client.try_clone().unwrap();
        c.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .unwrap();
        let (mut up_r, mut up_w) = (upstream.try_clone().unwrap(), upstream);
        let mut down_w = client;
        let pump = std::thread::spawn(move || {
            let _ = std::io::copy(&mut reader, &mut up_w);
            let _ = up_w.shutdown(std::net::Shutdown::Write);
        });
        let _ = std::io::copy(&mut up_r, &mut down_w);
        let _ = down_w.shutdown(std::net::Shutdown::Both);
        let _ = pump.join();
        request_line
    });
    let cluster = format!("{}    proxy-url: {proxy_url}\n", ca_data());
    let c = load(&s.url(), &cluster, "    token: t\n");
    {
        let client = c.client().unwrap();
        let api: Api<DynamicObject> = Api::all_with(client, &pods());
        assert_eq!(api.list(&ListParams::default()).unwrap().items.len(), 1);
    }
    let request_line = proxy.join().unwrap();
    assert!(
        request_line.starts_with(&format!(
            "CONNECT {}",
            s.url().trim_start_matches("https://")
        )),
        "{request_line}"
    );
}
