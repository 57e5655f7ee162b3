//! Issue 12: `testing` (the fake API server and its committed, public test keys) must not
//! reach a user's build. The crate's default features are empty, and a build without the
//! dev-dependencies (what a dependent or `cargo build` gets) resolves no `testing`; the
//! dev-dependency on the crate itself turns it on for this crate's own tests, examples,
//! benches and doctests. Asked of cargo itself (`cargo metadata`, `cargo tree`, offline).

use std::path::Path;
use std::process::Command;

fn cargo(args: &[&str]) -> String {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args(args)
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--offline")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn default_features_are_empty() {
    let meta: serde_json::Value =
        serde_json::from_str(&cargo(&["metadata", "--no-deps", "--format-version", "1"])).unwrap();
    let package = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "kube-informer")
        .unwrap();
    assert_eq!(package["features"]["default"], serde_json::json!([]));
    assert!(package["features"]["testing"].is_array());
}

#[test]
fn a_build_without_dev_dependencies_has_no_testing() {
    let normal = cargo(&["tree", "-e", "features,normal,build", "-i", "kube-informer"]);
    assert!(!normal.contains("feature \"testing\""), "{normal}");
    let dev = cargo(&[
        "tree",
        "-e",
        "features,normal,build,dev",
        "-i",
        "kube-informer",
    ]);
    assert!(dev.contains("feature \"testing\""), "{dev}");
}

/// Issue 22: `metrics` and `probes` are optional and off by default: a build without the
/// dev-dependencies resolves no prometheus-client nor schemars (issue 32: `crd`), and the
/// default feature set stays empty (checked above). Issue 33: the probe server is the
/// crate's own, parsing with httparse, which ureq already brings: `probes` and `webhook`
/// add no crate to the tree (tiny_http is gone).
#[test]
fn a_default_build_has_no_metrics_or_probe_crates() {
    let normal = cargo(&["tree", "-e", "normal,build", "-p", "kube-informer"]);
    for krate in ["prometheus-client", "tiny_http", "schemars"] {
        assert!(
            !normal.contains(krate),
            "{krate} in a default build:\n{normal}"
        );
    }
    let with = cargo(&[
        "tree",
        "-e",
        "normal,build",
        "-p",
        "kube-informer",
        "--features",
        "metrics,probes,crd",
    ]);
    for krate in ["prometheus-client", "httparse", "schemars"] {
        assert!(
            with.contains(krate),
            "{krate} missing with the features:\n{with}"
        );
    }
    assert!(!with.contains("tiny_http"), "{with}");
    let webhook = cargo(&[
        "tree",
        "-e",
        "normal,build",
        "-p",
        "kube-informer",
        "--features",
        "webhook",
    ]);
    let probes = cargo(&[
        "tree",
        "-e",
        "normal,build",
        "-p",
        "kube-informer",
        "--features",
        "probes",
    ]);
    let crates = |tree: &str| -> std::collections::BTreeSet<String> {
        tree.lines()
            .map(|l| {
                l.trim_start_matches(|c: char| !c.is_alphanumeric())
                    .to_string()
            })
            .map(|l| l.trim_end_matches(" (*)").to_string())
            .collect()
    };
    assert!(
        normal.contains("httparse"),
        "ureq brings httparse:\n{normal}"
    );
    assert_eq!(crates(&webhook), crates(&normal), "webhook adds no crate");
    assert_eq!(crates(&probes), crates(&normal), "probes adds no crate");
}

/// This binary itself is a dev build: it sees `testing`.
#[test]
fn this_crates_own_tests_see_testing() {
    let _ = kube_informer::testing::ApiServer::start;
}

/// Issue 31: `ws` is optional and off by default: a default build resolves no tungstenite,
/// and the feature brings it with no default features (no handshake (SHA-1) or TLS crates:
/// the crate opens the connection itself).
#[test]
fn a_default_build_has_no_websocket_crate() {
    let normal = cargo(&["tree", "-e", "normal,build", "-p", "kube-informer"]);
    assert!(
        !normal.contains("tungstenite"),
        "tungstenite in a default build:\n{normal}"
    );
    let with = cargo(&[
        "tree",
        "-e",
        "normal,build",
        "-p",
        "kube-informer",
        "--features",
        "ws",
    ]);
    assert!(
        with.contains("tungstenite v"),
        "tungstenite missing with ws:\n{with}"
    );
    for krate in ["sha1 v", "native-tls", "data-encoding"] {
        assert!(!with.contains(krate), "{krate} with ws:\n{with}");
    }
}
