//! An outsider's attacks on credentials from kubeconfig files: where relative paths point
//! once the program has moved on, as kubectl/client-go resolve them.
//!
//! client-go (`clientcmd.ResolveLocalPaths`) makes every file a kubeconfig names (token
//! file, client certificate and key, CA, an exec command with a `/`) absolute against the
//! absolute folder of the kubeconfig, so a program that changes its working directory
//! afterwards (a daemon's `chdir("/")`) still reads the same token and runs the same plugin.
//!
//! This binary changes the process's working directory: its tests use absolute paths only,
//! except the one that moves, and no other test binary is affected.

mod common;

use std::path::Path;

use base64::Engine as _;
use common::*;
use kube_informer::api::DynamicObject;
use kube_informer::config::Config;
use kube_informer::testing::{self, ApiServer};
use kube_informer::{Api, ListParams};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn kubeconfig(server: &str, user: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: lab\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\ncontexts:\n- name: lab\n  context:\n    cluster: lab\n    user: me\nusers:\n- name: me\n  user:\n{user}",
        ca = b64(testing::CA_PEM)
    )
}

fn script(dir: &Path, name: &str, token: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("#!/bin/sh\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{token}\"}}}}'\n"),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A kubeconfig loaded through a relative path (`KUBECONFIG=config`, `--kubeconfig
/// config`) names a token file and an exec plugin relative to itself. After the program
/// changes its working directory, it must still read *that* token file and run *that*
/// plugin, not the ones of the same names in the new directory (another user's folder, or
/// `/`).
#[test]
fn relative_paths_of_a_relatively_named_kubeconfig_survive_a_change_of_directory() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let server = ApiServer::builder()
        .tls()
        .token("from-the-kubeconfigs-folder")
        .resource(&pods())
        .start();
    // The kubeconfig's folder: the right token file and the right plugin.
    std::fs::write(home.path().join("token"), "from-the-kubeconfigs-folder\n").unwrap();
    script(home.path(), "plugin.sh", "from-the-kubeconfigs-folder");
    std::fs::write(
        home.path().join("config-token"),
        kubeconfig(&server.url(), "    tokenFile: token\n"),
    )
    .unwrap();
    std::fs::write(
        home.path().join("config-exec"),
        kubeconfig(
            &server.url(),
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      interactiveMode: Never\n",
        ),
    )
    .unwrap();
    // Where the program moves to: files of the same names that must not be used.
    std::fs::write(elsewhere.path().join("token"), "planted\n").unwrap();
    script(elsewhere.path(), "plugin.sh", "planted");

    let before = std::env::current_dir().unwrap();
    std::env::set_current_dir(home.path()).unwrap();
    let loaded = ["config-token", "config-exec"].map(Config::from_kubeconfig);
    std::env::set_current_dir(elsewhere.path()).unwrap();
    let results: Vec<_> = loaded
        .into_iter()
        .map(|c| {
            let api: Api<DynamicObject> = Api::all_with(c.unwrap().client().unwrap(), &pods());
            api.list(&ListParams::default()).map(|l| l.items.len())
        })
        .collect();
    std::env::set_current_dir(before).unwrap();
    for (what, r) in ["tokenFile: token", "exec command ./plugin.sh"]
        .iter()
        .zip(results)
    {
        assert!(
            r.is_ok(),
            "{what}: resolved against the new working directory, not the kubeconfig's folder: {:?}",
            r.err()
        );
    }
}

/// A kubeconfig with a mistake in its shape (a list written as a string, a map as a
/// scalar, a number) is refused with where the mistake is, never with the value
/// found there: in a kubeconfig that value is often a token, a password or a key, and the
/// message goes to logs and terminals.
#[test]
fn a_malformed_kubeconfig_never_quotes_a_secret_in_its_error() {
    let dir = tempfile::tempdir().unwrap();
    let head = "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: lab\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: lab\n  context:\n    cluster: lab\n    user: me\nusers:\n- name: me\n";
    let cases = [
        ("exec args as one string", "  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n      args: --token=SECRET-args-81f2\n"),
        ("a user entry that is a string", "  user: SECRET-user-11ab\n"),
        ("an auth-provider config that is a string", "  user:\n    auth-provider:\n      name: oidc\n      config: refresh-token=SECRET-oidc-3c4d\n"),
        ("exec env as a map", "  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n      env:\n        AWS_SECRET_ACCESS_KEY: SECRET-env-9e0f\n"),
        ("a token under a wrong type", "  user:\n    token:\n      value: x\n    username: [SECRET-list-77aa]\n"),
        ("a user entry that is a number", "  user: 918273645546372819\n"),
        ("a syntax error beside a secret", "  user:\n    token: t\n  SECRET-key-5b6c: 1\n    x: [\n"),
    ];
    for (what, user) in cases {
        let path = dir.path().join("config");
        std::fs::write(&path, format!("{head}{user}")).unwrap();
        let secret = user
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .find(|w| w.starts_with("SECRET-"))
            .unwrap_or("918273645546372819");
        match Config::from_kubeconfig(&path) {
            Ok(_) => {}
            Err(e) => {
                let shown = format!("{e} / {e:?}");
                assert!(!shown.contains(secret), "{what}: {shown}");
            }
        }
    }
}

/// A user with both `token` and `tokenFile` (a stale inline token beside a rotated file):
/// client-go sends the file's token; once it read one, it keeps it while the file cannot
/// be read; the inline token only when the file never gave one.
#[test]
fn a_token_file_beside_an_inline_token_wins_while_it_gives_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = ApiServer::builder()
        .tls()
        .token("rotated-in-the-file")
        .token("inline")
        .resource(&pods())
        .start();
    let file = dir.path().join("token");
    let user = format!("    token: inline\n    tokenFile: {}\n", file.display());
    let config = dir.path().join("config");
    std::fs::write(&config, kubeconfig(&server.url(), &user)).unwrap();
    let client = || Config::from_kubeconfig(&config).unwrap().client().unwrap();
    // No file yet: the inline token.
    let api: Api<DynamicObject> = Api::all_with(client(), &pods());
    api.list(&ListParams::default()).unwrap();
    // The file: its token, also after it is gone again.
    std::fs::write(&file, "rotated-in-the-file\n").unwrap();
    let api: Api<DynamicObject> = Api::all_with(client(), &pods());
    api.list(&ListParams::default()).unwrap();
    std::fs::remove_file(&file).unwrap();
    api.list(&ListParams::default()).unwrap();
    let sent: Vec<String> = server
        .request_headers()
        .iter()
        .filter(|r| r.request.contains("/pods"))
        .filter_map(|r| {
            r.headers
                .iter()
                .find(|(n, _)| n == "authorization")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(
        sent,
        [
            "Bearer inline",
            "Bearer rotated-in-the-file",
            "Bearer rotated-in-the-file"
        ],
    );
}
