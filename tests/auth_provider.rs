//! Kubeconfig `auth-provider` users against the test API server over TLS and a fake OIDC
//! issuer on loopback HTTPS: an `oidc` id-token used as it is, refreshed when expired (once
//! for many threads) and written back to the file; an issuer that is down or refuses; and
//! the removed `gcp` and `azure` providers and unknown ones. In every failure the API
//! server sees no request at all — never one without the credential. With an issuer that
//! rotates refresh tokens: a kubeconfig that cannot be written, and many users of one file
//! refreshing at once, from threads and from processes (kubectl's `<file>.lock`).

mod common;
#[path = "common/oidc_issuer.rs"]
mod oidc_issuer;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use base64::Engine as _;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::testing::{self, ApiServer};
use kube_informer::{Api, Error, ListParams};
use oidc_issuer::{jwt, Behaviour, Gate, Issuer, Rotating};

const CLIENT_ID: &str = "kube-cli";
const CLIENT_SECRET: &str = "client-secret-OIDC-S3";
const REFRESH: &str = "refresh-token-OIDC-R1";
const NEW_REFRESH: &str = "refresh-token-OIDC-R2";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// An API server over TLS accepting exactly `tokens`, with one pod.
fn api_server(tokens: &[&str]) -> ApiServer {
    let mut b = ApiServer::builder().tls().resource(&pods());
    for t in tokens {
        b = b.token(t);
    }
    let s = b.start();
    s.create(&pods(), pod("team-a", "p", "Pending")).unwrap();
    s
}

fn issuer(new_id_token: &str, delay: Duration) -> Issuer {
    Issuer::start(Behaviour {
        refresh_token: REFRESH.into(),
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        new_id_token: new_id_token.into(),
        new_refresh_token: Some(NEW_REFRESH.into()),
        delay,
    })
}

/// A kubeconfig whose user `me` has `auth-provider` with `provider_yaml` (indented for the
/// `auth-provider:` block), and a second user whose entry must survive a write-back.
fn kubeconfig(server: &str, provider_yaml: &str) -> String {
    format!(
        "# a comment\napiVersion: v1\nkind: Config\ncurrent-context: lab\npreferences: {{}}\nclusters:\n- name: lab\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\ncontexts:\n- name: lab\n  context:\n    cluster: lab\n    user: me\n    namespace: team-a\nusers:\n- name: bystander\n  user:\n    token: bystander-token\n- name: me\n  user:\n    auth-provider:\n{provider_yaml}",
        ca = b64(testing::CA_PEM)
    )
}

fn oidc_block(issuer: &str, id_token: Option<&str>, refresh: Option<&str>) -> String {
    let mut s = format!(
        "      name: oidc\n      config:\n        idp-issuer-url: {issuer}\n        client-id: {CLIENT_ID}\n        client-secret: {CLIENT_SECRET}\n        idp-certificate-authority-data: {}\n",
        b64(testing::CA_PEM)
    );
    if let Some(t) = id_token {
        s.push_str(&format!("        id-token: {t}\n"));
    }
    if let Some(r) = refresh {
        s.push_str(&format!("        refresh-token: {r}\n"));
    }
    s
}

fn write_file(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("config");
    std::fs::write(&p, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    p
}

/// Writes in `dir` a kubeconfig for `server` whose user `me` has `issuer`'s `oidc` provider
/// with these tokens; its path.
fn oidc_config(
    dir: &Path,
    server: &ApiServer,
    issuer: &Issuer,
    id_token: Option<&str>,
    refresh: Option<&str>,
) -> PathBuf {
    let provider = oidc_block(&issuer.url(), id_token, refresh);
    write_file(dir, &kubeconfig(&server.url(), &provider))
}

fn list(config: &Config) -> kube_informer::Result<usize> {
    let api: Api<DynamicObject> = Api::all_with(config.client()?, &pods());
    Ok(api.list(&ListParams::default())?.items.len())
}

fn user_config(path: &Path, key: &str) -> Option<String> {
    let v: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let users = v["users"].as_sequence().unwrap();
    let me = users.iter().find(|u| u["name"] == "me").unwrap();
    me["user"]["auth-provider"]["config"][key]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn a_valid_id_token_is_used_as_it_is_and_the_issuer_is_never_called() {
    let token = jwt("valid", 3600);
    let server = api_server(&[&token]);
    let issuer = issuer(&jwt("unused", 3600), Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let text = kubeconfig(
        &server.url(),
        &oidc_block(&issuer.url(), Some(&token), Some(REFRESH)),
    );
    let path = write_file(dir.path(), &text);
    let config = Config::from_kubeconfig(&path).unwrap();
    assert_eq!(list(&config).unwrap(), 1);
    assert_eq!(list(&config).unwrap(), 1);
    assert_eq!(issuer.discovery_hits.load(Ordering::SeqCst), 0);
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 0);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "file untouched"
    );
    let debug = format!("{config:?}");
    for secret in [token.as_str(), REFRESH, CLIENT_SECRET] {
        assert!(!debug.contains(secret), "{secret} in {debug}");
    }
}

#[test]
fn an_expired_id_token_is_refreshed_and_written_back_to_the_file() {
    let (old, new) = (jwt("old", -60), jwt("new", 3600));
    let server = api_server(&[&new]);
    let issuer = issuer(&new, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let path = oidc_config(dir.path(), &server, &issuer, Some(&old), Some(REFRESH));
    let config = Config::from_kubeconfig(&path).unwrap();
    assert_eq!(list(&config).unwrap(), 1);
    assert_eq!(list(&config).unwrap(), 1, "the new token is kept in memory");
    assert_eq!(issuer.discovery_hits.load(Ordering::SeqCst), 1);
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 1);
    // Every request the API server saw carried the new token.
    for r in server.request_headers() {
        assert_eq!(
            r.values("authorization"),
            [format!("Bearer {new}")],
            "{}",
            r.request
        );
    }
    // The refresh sent the client's credentials and the refresh token.
    let (form, auth) = issuer.token_requests.lock().unwrap()[0].clone();
    assert!(form.contains("grant_type=refresh_token"), "{form}");
    assert!(form.contains(&format!("refresh_token={REFRESH}")), "{form}");
    assert!(auth.is_some_and(|a| a.starts_with("Basic ")));

    // The file has the new tokens, the rest as it was.
    assert_eq!(
        user_config(&path, "id-token").as_deref(),
        Some(new.as_str())
    );
    assert_eq!(
        user_config(&path, "refresh-token").as_deref(),
        Some(NEW_REFRESH)
    );
    assert_eq!(user_config(&path, "client-id").as_deref(), Some(CLIENT_ID));
    assert_eq!(
        user_config(&path, "client-secret").as_deref(),
        Some(CLIENT_SECRET)
    );
    let v: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["current-context"], "lab");
    assert_eq!(v["users"][0]["name"], "bystander");
    assert_eq!(v["users"][0]["user"]["token"], "bystander-token");
    assert_eq!(v["contexts"][0]["context"]["namespace"], "team-a");
    assert_eq!(v["clusters"][0]["cluster"]["server"], server.url().as_str());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "permissions kept");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left");

    // The next run reads the new token and does not refresh.
    let again = Config::from_kubeconfig(&path).unwrap();
    assert_eq!(list(&again).unwrap(), 1);
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 1);
}

#[test]
fn a_token_that_expires_between_two_requests_is_refreshed_for_the_second() {
    // Valid for the first request (13 s, less the 10 s margin), expired 4 s later.
    let (short, new) = (jwt("short", 13), jwt("new", 3600));
    let server = api_server(&[&short, &new]);
    let issuer = issuer(&new, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let path = oidc_config(dir.path(), &server, &issuer, Some(&short), Some(REFRESH));
    let config = Config::from_kubeconfig(&path).unwrap();
    let api: Api<DynamicObject> = Api::all_with(config.client().unwrap(), &pods());
    api.list(&ListParams::default()).unwrap();
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 0);
    std::thread::sleep(Duration::from_secs(4));
    api.list(&ListParams::default()).unwrap();
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 1);
    let seen: Vec<Vec<String>> = server
        .request_headers()
        .iter()
        .map(|r| {
            r.values("authorization")
                .iter()
                .map(|v| v.to_string())
                .collect()
        })
        .collect();
    assert_eq!(
        seen,
        [
            vec![format!("Bearer {short}")],
            vec![format!("Bearer {new}")]
        ]
    );
}

#[test]
fn threads_finding_the_token_expired_together_refresh_it_once() {
    let (old, new) = (jwt("old", -60), jwt("new", 3600));
    let server = api_server(&[&new]);
    // A slow issuer, so the other threads arrive while the refresh is under way.
    let issuer = issuer(&new, Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let path = oidc_config(dir.path(), &server, &issuer, Some(&old), Some(REFRESH));
    let client = Config::from_kubeconfig(&path).unwrap().client().unwrap();
    let threads = 4;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (client, barrier) = (client.clone(), barrier.clone());
            std::thread::spawn(move || {
                let api: Api<DynamicObject> = Api::all_with(client, &pods());
                barrier.wait();
                api.list(&ListParams::default()).map(|l| l.items.len())
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), 1);
    }
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 1);
    assert_eq!(issuer.discovery_hits.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests().len(), threads);
}

/// The error of listing with `config`, which must be a configuration error about oidc.
fn oidc_failure(config: &Config) -> String {
    match list(config) {
        Err(Error::Config(m)) => {
            assert!(m.contains("oidc"), "{m}");
            assert!(m.contains("\"me\""), "names the user: {m}");
            m
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[test]
fn without_a_usable_token_the_request_fails_and_is_never_sent() {
    let new = jwt("new", 3600);
    let server = api_server(&[&new]);
    let dir = tempfile::tempdir().unwrap();

    // The issuer is down (nothing listens on its port).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("https://{}", closed.local_addr().unwrap());
    drop(closed);
    let path = write_file(
        dir.path(),
        &kubeconfig(
            &server.url(),
            &oidc_block(&down, Some(&jwt("old", -60)), Some(REFRESH)),
        ),
    );
    let m = oidc_failure(&Config::from_kubeconfig(&path).unwrap());
    assert!(m.contains("discovery"), "{m}");

    // The issuer refuses the refresh token.
    let refusing = Issuer::start(Behaviour {
        refresh_token: "another-refresh-token".into(),
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        new_id_token: new.clone(),
        new_refresh_token: None,
        delay: Duration::ZERO,
    });
    let text = kubeconfig(
        &server.url(),
        &oidc_block(&refusing.url(), Some(&jwt("old", -60)), Some(REFRESH)),
    );
    let path = write_file(dir.path(), &text);
    let m = oidc_failure(&Config::from_kubeconfig(&path).unwrap());
    assert!(m.contains("invalid_grant"), "{m}");
    assert!(!m.contains(REFRESH) && !m.contains(CLIENT_SECRET), "{m}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "file untouched"
    );

    // Expired, and no refresh token.
    let issuer = issuer(&new, Duration::ZERO);
    let path = oidc_config(dir.path(), &server, &issuer, Some(&jwt("old", -60)), None);
    let m = oidc_failure(&Config::from_kubeconfig(&path).unwrap());
    assert!(m.contains("refresh-token"), "{m}");

    // No id-token at all, and no refresh token.
    let path = oidc_config(dir.path(), &server, &issuer, None, None);
    oidc_failure(&Config::from_kubeconfig(&path).unwrap());

    // An id-token that is not a JWT.
    let path = oidc_config(dir.path(), &server, &issuer, Some("opaque"), Some(REFRESH));
    let m = oidc_failure(&Config::from_kubeconfig(&path).unwrap());
    assert!(m.contains("not a JWT"), "{m}");
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 0);

    // Not one request reached the API server, with or without a header.
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn removed_and_unknown_auth_providers_load_but_build_no_client() {
    let server = api_server(&["some-token"]);
    let cases = [
        ("gcp", "gke-gcloud-auth-plugin"),
        ("azure", "kubelogin"),
        ("frobnicate", "unknown auth-provider \"frobnicate\""),
    ];
    for (name, expected) in cases {
        // A token beside it does not make it acceptable (client-go refuses these too).
        let text = kubeconfig(
            &server.url(),
            &format!("      name: {name}\n      config:\n        access-token: secret-AT-{name}\n"),
        )
        .replace(
            "- name: me\n  user:\n",
            "- name: me\n  user:\n    token: some-token\n",
        );
        // Loading works (other contexts, the namespace, ... stay usable).
        let config = Config::from_kubeconfig_str(&text, &Default::default()).unwrap();
        assert_eq!(config.namespace(), "team-a");
        assert!(
            !format!("{config:?}").contains("secret-AT"),
            "no secret in Debug"
        );
        match config.client() {
            Err(Error::Config(m)) => {
                assert!(m.contains(expected), "{name}: {m}");
                assert!(m.contains("\"me\""), "{name} names the user: {m}");
            }
            other => panic!("{name}: expected a configuration error, got {other:?}"),
        }
        // The same through a ClientConfig taken out of the Config.
        assert!(kube_informer::Client::new(config.client_config.clone()).is_err());
    }
    // An oidc block without its issuer is refused the same way.
    let config = Config::from_kubeconfig_str(
        &kubeconfig(
            &server.url(),
            "      name: oidc\n      config:\n        client-id: x\n",
        ),
        &Default::default(),
    )
    .unwrap();
    let m = config.client().unwrap_err().to_string();
    assert!(m.contains("idp-issuer-url"), "{m}");
    assert_eq!(server.requests(), Vec::<String>::new());
}

#[test]
fn exec_and_auth_provider_together_are_refused() {
    let text = kubeconfig(
        "https://127.0.0.1:1",
        &oidc_block("https://issuer.example", Some(&jwt("t", 3600)), None),
    )
    .replace(
        "- name: me\n  user:\n",
        "- name: me\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: some-plugin\n",
    );
    let err = Config::from_kubeconfig_str(&text, &Default::default()).unwrap_err();
    assert!(err.to_string().contains("exec and auth-provider"), "{err}");
}

#[test]
fn a_cancelled_client_stops_waiting_for_a_slow_issuer() {
    let (old, new) = (jwt("old", -60), jwt("new", 3600));
    let server = api_server(&[&new]);
    // The issuer never answers the token request in time.
    let issuer = issuer(&new, Duration::from_secs(600));
    let dir = tempfile::tempdir().unwrap();
    let path = oidc_config(dir.path(), &server, &issuer, Some(&old), Some(REFRESH));
    let cancel = kube_informer::client::Cancel::new();
    let client = Config::from_kubeconfig(&path)
        .unwrap()
        .client()
        .unwrap()
        .with_cancel(cancel.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let api: Api<DynamicObject> = Api::all_with(client, &pods());
        let _ = tx.send(api.list(&ListParams::default()).map(|l| l.items.len()));
    });
    let waited = std::time::Instant::now();
    while issuer.token_hits.load(Ordering::SeqCst) == 0 {
        assert!(
            waited.elapsed() < PATIENCE,
            "the refresh reached the issuer"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    cancel.cancel();
    // Well within OIDC_TIMEOUT (30 s), which would end the wait otherwise.
    let result = rx
        .recv_timeout(Duration::from_secs(15))
        .expect("cancelling ends the refresh");
    let err = result.unwrap_err();
    assert!(err.is_cancelled(), "{err}");
    assert!(server.requests().is_empty());
}

#[test]
fn tokens_another_program_wrote_to_the_file_are_taken_instead_of_refreshing() {
    let (old, theirs, new) = (jwt("old", -60), jwt("kubectl", 3600), jwt("new", 3600));
    let server = api_server(&[&theirs, &new]);
    // The issuer accepts only the refresh token the other program was given.
    let issuer = Issuer::start(Behaviour {
        refresh_token: "rotated-by-kubectl".into(),
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        new_id_token: new.clone(),
        new_refresh_token: None,
        delay: Duration::ZERO,
    });
    let dir = tempfile::tempdir().unwrap();
    let original = kubeconfig(
        &server.url(),
        &oidc_block(&issuer.url(), Some(&old), Some(REFRESH)),
    );
    let path = write_file(dir.path(), &original);
    let config = Config::from_kubeconfig(&path).unwrap();

    // kubectl refreshed after we loaded the file: its valid id-token is used as it is.
    std::fs::write(&path, original.replace(&old, &theirs)).unwrap();
    assert_eq!(list(&config).unwrap(), 1);
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 0);
    assert_eq!(
        server.request_headers()[0].values("authorization"),
        [format!("Bearer {theirs}")]
    );

    // The file's id-token has expired too, but its refresh token was rotated: ours is stale
    // and the file's is the one the issuer accepts.
    std::fs::write(&path, &original).unwrap();
    let config = Config::from_kubeconfig(&path).unwrap();
    std::fs::write(&path, original.replace(REFRESH, "rotated-by-kubectl")).unwrap();
    assert_eq!(list(&config).unwrap(), 1);
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 1);
    assert_eq!(
        user_config(&path, "id-token").as_deref(),
        Some(new.as_str())
    );
    assert_eq!(
        user_config(&path, "refresh-token").as_deref(),
        Some("rotated-by-kubectl")
    );
}

fn rotating_issuer(refresh_tokens: Vec<String>, new_id_token: &str, gather: usize) -> Issuer {
    Issuer::start_rotating(Rotating {
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        refresh_tokens,
        new_id_token: new_id_token.into(),
        gather,
        gate: None,
    })
}

/// Gives a folder its permissions back when dropped (so a failed test can still clean up).
struct RestoreMode<'a>(&'a Path);

impl Drop for RestoreMode<'_> {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(self.0, std::fs::Permissions::from_mode(0o755));
        }
    }
}

#[test]
fn a_kubeconfig_that_cannot_be_written_keeps_working_with_an_issuer_that_rotates() {
    // Each id-token the issuer gives expires within the ten-second margin, so every
    // request refreshes, and each refresh spends the refresh token it used.
    let short = jwt("short", 5);
    let server = api_server(&[&short]);
    let issuer = rotating_issuer(vec![REFRESH.into()], &short, 0);
    let dir = tempfile::tempdir().unwrap();
    // A file nothing can be written beside (as a mounted ConfigMap or Secret): its lock's
    // and its temporary file's names are too long for the file system, which stops root
    // too (read-only permissions on the file and folder do the same for other users).
    let path = dir.path().join("c".repeat(252));
    let text = kubeconfig(
        &server.url(),
        &oidc_block(&issuer.url(), Some(&jwt("old", -60)), Some(REFRESH)),
    );
    std::fs::write(&path, &text).unwrap();
    let _restore = RestoreMode(dir.path());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let config = Config::from_kubeconfig(&path).unwrap();
    for round in 1..=3 {
        // The file still holds the spent R1: it must not be taken back.
        assert_eq!(list(&config).unwrap(), 1, "request {round}");
        assert_eq!(issuer.token_hits.load(Ordering::SeqCst), round);
    }
    let sent: Vec<String> = issuer
        .token_requests
        .lock()
        .unwrap()
        .iter()
        .map(|(form, _)| {
            form.split("refresh_token=")
                .nth(1)
                .unwrap()
                .split('&')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        sent,
        [
            REFRESH.to_owned(),
            format!("{REFRESH}%2B"),
            format!("{REFRESH}%2B%2B")
        ],
        "each refresh used the token the one before it was given"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "file untouched"
    );
    let others: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(others.len(), 1, "no lock or temporary file");
}

/// A kubeconfig with users `u0`..`u{n-1}`, each an oidc user with an expired id-token and
/// its own refresh token (`R1-u<i>`), and a context `c<i>` for each.
fn many_users_kubeconfig(server: &str, issuer: &str, n: usize) -> String {
    let mut text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: c0\nclusters:\n- name: lab\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\ncontexts:\n",
        b64(testing::CA_PEM)
    );
    for i in 0..n {
        text.push_str(&format!(
            "- name: c{i}\n  context:\n    cluster: lab\n    user: u{i}\n    namespace: team-a\n"
        ));
    }
    text.push_str("users:\n");
    for i in 0..n {
        text.push_str(&format!("- name: u{i}\n  user:\n    auth-provider:\n"));
        text.push_str(&oidc_block(
            issuer,
            Some(&jwt(&format!("old-{i}"), -60)),
            Some(&format!("R1-u{i}")),
        ));
    }
    text
}

fn user_setting(path: &Path, user: &str, key: &str) -> Option<String> {
    let v: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let users = v["users"].as_sequence().unwrap();
    let entry = users.iter().find(|u| u["name"] == user).unwrap();
    entry["user"]["auth-provider"]["config"][key]
        .as_str()
        .map(str::to_owned)
}

/// After `n` users refreshed once each: every user's new tokens are in the file, no lock
/// is left, and loading the file again needs no refresh.
fn assert_every_user_kept_its_tokens(path: &Path, n: usize, new: &str, issuer: &Issuer) {
    let lost: Vec<usize> = (0..n)
        .filter(|i| {
            let u = format!("u{i}");
            user_setting(path, &u, "refresh-token") != Some(format!("R1-u{i}+"))
                || user_setting(path, &u, "id-token").as_deref() != Some(new)
        })
        .collect();
    assert_eq!(
        lost,
        Vec::<usize>::new(),
        "users whose new tokens were lost"
    );
    let others: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|f| f != "config")
        .collect();
    assert!(others.is_empty(), "left behind: {others:?}");
    for i in 0..n {
        let config =
            Config::from_kubeconfig_with(path, &KubeconfigOptions::new().context(&format!("c{i}")))
                .unwrap();
        assert_eq!(list(&config).unwrap(), 1);
    }
    assert_eq!(
        issuer.token_hits.load(Ordering::SeqCst),
        n,
        "no second refresh"
    );
}

#[test]
fn twelve_users_of_one_file_refreshing_at_once_all_keep_their_new_tokens() {
    let n = 12;
    let new = jwt("new", 3600);
    let server = api_server(&[&new]);
    // The issuer answers the twelve refreshes together, so the write-backs collide.
    let issuer = rotating_issuer((0..n).map(|i| format!("R1-u{i}")).collect(), &new, n);
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        &many_users_kubeconfig(&server.url(), &issuer.url(), n),
    );
    // Each thread loads the file on its own, as separate programs would.
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                let options = KubeconfigOptions::new().context(&format!("c{i}"));
                list(&Config::from_kubeconfig_with(&path, &options)?)
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap().unwrap(), 1);
    }
    assert_every_user_kept_its_tokens(&path, n, &new, &issuer);
}

/// The environment variables a child process of
/// `users_refreshing_in_separate_processes_all_keep_their_new_tokens` reads.
const CHILD_CONFIG: &str = "KI_TEST_OIDC_CHILD_KUBECONFIG";
const CHILD_CONTEXT: &str = "KI_TEST_OIDC_CHILD_CONTEXT";

#[test]
#[ignore = "a child process of users_refreshing_in_separate_processes_all_keep_their_new_tokens"]
fn oidc_child_process_lists_once() {
    let (Some(path), Some(context)) = (
        std::env::var_os(CHILD_CONFIG),
        std::env::var(CHILD_CONTEXT).ok(),
    ) else {
        return;
    };
    let config = Config::from_kubeconfig_with(
        Path::new(&path),
        &KubeconfigOptions::new().context(&context),
    )
    .unwrap();
    assert_eq!(list(&config).unwrap(), 1);
}

#[test]
fn users_refreshing_in_separate_processes_all_keep_their_new_tokens() {
    let n = 12;
    let new = jwt("new", 3600);
    let server = api_server(&[&new]);
    let issuer = rotating_issuer((0..n).map(|i| format!("R1-u{i}")).collect(), &new, n);
    let dir = tempfile::tempdir().unwrap();
    let path = write_file(
        dir.path(),
        &many_users_kubeconfig(&server.url(), &issuer.url(), n),
    );
    // This test binary again, running only the child test, once per user.
    let logs = tempfile::tempdir().unwrap();
    let log = |i: usize| logs.path().join(format!("child-{i}.log"));
    let mut children: Vec<_> = (0..n)
        .map(|i| {
            let out = std::fs::File::create(log(i)).unwrap();
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "oidc_child_process_lists_once",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env(CHILD_CONFIG, &path)
                .env(CHILD_CONTEXT, format!("c{i}"))
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = std::time::Instant::now() + PATIENCE * 2;
    let mut failed = Vec::new();
    for (i, child) in children.iter_mut().enumerate() {
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if !status.is_some_and(|s| s.success()) {
            let output = std::fs::read_to_string(log(i)).unwrap_or_default();
            failed.push(format!("child {i} ({status:?}):\n{output}"));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert_every_user_kept_its_tokens(&path, n, &new, &issuer);
}

#[test]
fn a_refresh_refused_because_another_program_rotated_the_token_takes_its_tokens() {
    let (old, theirs) = (jwt("old", -60), jwt("kubectl", 3600));
    let server = api_server(&[&theirs]);
    // The issuer knows only the refresh token kubectl was given when it spent ours, and
    // holds its answers until kubectl's write has landed.
    let gate = Arc::new(Gate::default());
    let issuer = Issuer::start_rotating(Rotating {
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.into(),
        refresh_tokens: vec!["kubectl-R2".into()],
        new_id_token: jwt("unused", 3600),
        gather: 0,
        gate: Some(gate.clone()),
    });
    let dir = tempfile::tempdir().unwrap();
    let original = kubeconfig(
        &server.url(),
        &oidc_block(&issuer.url(), Some(&old), Some(REFRESH)),
    );
    let path = write_file(dir.path(), &original);
    let config = Config::from_kubeconfig(&path).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(list(&config));
    });
    wait_until("our refresh at the issuer", || {
        issuer.token_hits.load(Ordering::SeqCst) >= 1
    });
    std::fs::write(
        &path,
        original
            .replace(&old, &theirs)
            .replace(REFRESH, "kubectl-R2"),
    )
    .unwrap();
    gate.open();
    let listed = rx.recv_timeout(PATIENCE).expect("the list ends");
    assert_eq!(
        listed.unwrap(),
        1,
        "the refused refresh sent us to the file"
    );
    // One refused refresh (the client's credentials as HTTP basic, then in the form), and
    // none after it: kubectl's id-token is valid.
    assert_eq!(issuer.token_hits.load(Ordering::SeqCst), 2);
    assert_eq!(
        server.request_headers()[0].values("authorization"),
        [format!("Bearer {theirs}")]
    );
}

#[test]
fn a_lock_a_dead_program_left_beside_the_file_does_not_stop_the_write_back() {
    let (old, new) = (jwt("old", -60), jwt("new", 3600));
    let server = api_server(&[&new]);
    let issuer = issuer(&new, Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let path = oidc_config(dir.path(), &server, &issuer, Some(&old), Some(REFRESH));
    // kubectl's lock (empty), left a minute ago by a kubectl that was killed mid-write.
    let lock = dir.path().join("config.lock");
    let left = std::fs::File::create(&lock).unwrap();
    left.set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
        .unwrap();
    drop(left);
    let config = Config::from_kubeconfig(&path).unwrap();
    assert_eq!(list(&config).unwrap(), 1);
    assert_eq!(
        user_config(&path, "id-token").as_deref(),
        Some(new.as_str())
    );
    assert_eq!(
        user_config(&path, "refresh-token").as_deref(),
        Some(NEW_REFRESH)
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["config"], "the stale lock is gone, and ours too");
}
