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
