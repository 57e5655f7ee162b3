//! `kubectl drain NODE`: cordon, then evict the node's pods with kubectl's rules
//! (`kube_informer::pod::drain_node`), printing what kubectl prints.
//!
//! Flags: `--ignore-daemonsets`, `--delete-emptydir-data`, `--force`, `--timeout D` (0: no
//! bound), `--dry-run=none|client|server`, `--grace-period N`, `--disable-eviction`,
//! `--pod-selector SEL`, `--kubeconfig`, `--context`, `--demo`. Exit code 0 when drained, 1
//! otherwise (`error: unable to drain node "n" due to error: ...`, as kubectl).
//!
//! Demo (`--demo`, or no cluster): node `node-1` runs `lab/web-0` and `lab/web-1`
//! (ReplicaSet `web`, a PodDisruptionBudget `minAvailable: 2` over three replicas), a
//! DaemonSet pod and a mirror pod. Evicting the second `web` pod is refused (429) until the
//! demo's "controller" starts a replacement on `node-2` a second later; the drain retries
//! every 500 ms in the demo (kubectl: 5 s). Without `--ignore-daemonsets` the DaemonSet pod
//! makes it refuse, as kubectl does.

use std::time::Duration;

use kube_informer::api::ApiResource;
use kube_informer::pod::{drain_node, DrainOptions};
use kube_informer::testing::ApiServer;
use kube_informer::Client;
use serde_json::json;

use super::{parse_duration, parse_flags, Common};

const USAGE: &str =
    "usage: kubectl drain [--ignore-daemonsets] [--delete-emptydir-data] [--force] \
[--timeout D] [--dry-run=none|client|server] [--grace-period N] [--disable-eviction] \
[--pod-selector SEL] [--demo] NODE";

/// Runs `kubectl drain`; the exit code.
pub fn main(argv: Vec<String>) -> i32 {
    match run(argv) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

fn run(argv: Vec<String>) -> Result<i32, String> {
    let mut common = Common::default();
    let mut o = DrainOptions::new();
    let (mut dry_run, mut server_dry_run, mut timeout) = (false, false, None);
    let positional = parse_flags(argv, |flag, value| {
        match flag {
            "--ignore-daemonsets" => o = std::mem::take(&mut o).ignore_daemonsets(true),
            "--delete-emptydir-data" => o = std::mem::take(&mut o).delete_emptydir_data(true),
            "--force" => o = std::mem::take(&mut o).force(true),
            "--disable-eviction" => o = std::mem::take(&mut o).disable_eviction(true),
            "--timeout" => {
                let d = parse_duration(&value("--timeout")?)?;
                timeout = (!d.is_zero()).then_some(d);
            }
            "--grace-period" => {
                let v = value("--grace-period")?;
                let n: i64 = v
                    .parse()
                    .map_err(|_| format!("--grace-period {v:?}: not a number"))?;
                if let Ok(n) = u32::try_from(n) {
                    o = std::mem::take(&mut o).grace_period(n);
                }
            }
            "--pod-selector" => o = std::mem::take(&mut o).pod_selector(&value("--pod-selector")?),
            "--dry-run" => match value("--dry-run")?.as_str() {
                "none" => {}
                "client" => dry_run = true,
                "server" => server_dry_run = true,
                v => {
                    return Err(format!(
                        "invalid dry-run value ({v}). Must be \"none\", \"server\", or \"client\"."
                    ))
                }
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            f => return common.take(f, value),
        }
        Ok(true)
    })
    .map_err(|e| format!("error: {e}\n{USAGE}"))?;
    let node = match positional.as_slice() {
        [n] => n
            .trim_start_matches("nodes/")
            .trim_start_matches("node/")
            .to_owned(),
        _ => return Err(format!("error: expected one NODE\n{USAGE}")),
    };
    let (client, _demo) = match common.connect("kubectl")? {
        Some((client, _)) => (client, None),
        None => {
            o = o
                .eviction_retry_delay(Duration::from_millis(500))
                .poll_interval(Duration::from_millis(100));
            let demo = Demo::start();
            let client = Client::new(demo.server.client_config()).map_err(|e| e.to_string())?;
            (client, Some(demo))
        }
    };
    o = o.dry_run(dry_run).server_dry_run(server_dry_run);
    if let Some(timeout) = timeout {
        o = o.timeout(timeout);
    }
    let dry = if dry_run {
        " (dry run)"
    } else if server_dry_run {
        " (server dry run)"
    } else {
        ""
    };
    let report = drain_node(&client, &node, &o).map_err(|e| match e.status() {
        Some(st) => format!("Error from server ({}): {}", st.reason, st.message),
        None => format!("error: {e}"),
    })?;
    if report.already_cordoned {
        println!("node/{node} already cordoned{dry}");
    } else {
        println!("node/{node} cordoned{dry}");
    }
    if !report.warnings.is_empty() {
        eprintln!("Warning: {}", report.warnings);
    }
    if !report.refused.is_empty() {
        let errors = aggregate(&report.refused);
        eprintln!(
            "error: unable to drain node {node:?} due to error: {errors}, continuing command..."
        );
        eprintln!("There are pending nodes to be drained:\n {node}");
        eprintln!("error: {errors}");
        return Ok(1);
    }
    for pod in &report.selected {
        println!("evicting pod {pod}{dry}");
    }
    if dry_run {
        println!("node/{node} drained{dry}");
        return Ok(0);
    }
    for retry in &report.retried {
        eprintln!("{retry}");
    }
    let verb = if report.used_eviction {
        "evicted"
    } else {
        "deleted"
    };
    for pod in &report.evicted {
        let name = pod.split_once('/').map_or(pod.as_str(), |(_, n)| n);
        println!("pod/{name} {verb}{dry}");
    }
    let mut problems = report.failed.clone();
    problems.extend(report.pending.iter().map(|p| {
        format!(
            "error when waiting for pod {p:?} to terminate: global timeout reached: {:?}",
            timeout.unwrap_or_default()
        )
    }));
    if !problems.is_empty() {
        let errors = aggregate(&problems);
        eprintln!(
            "error: unable to drain node {node:?} due to error: {errors}, continuing command..."
        );
        eprintln!("There are pending nodes to be drained:\n {node}");
        eprintln!("error: {errors}");
        return Ok(1);
    }
    println!("node/{node} drained{dry}");
    Ok(0)
}

/// Go's aggregate error format: one error alone, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

struct Demo {
    server: std::sync::Arc<ApiServer>,
    script: Option<std::thread::JoinHandle<()>>,
}

fn owned(kind: &str, name: &str, labels: serde_json::Value) -> serde_json::Value {
    json!({"metadata": {"labels": labels, "ownerReferences": [{"apiVersion": "apps/v1",
        "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": true}]}})
}

impl Demo {
    fn start() -> Demo {
        let server = std::sync::Arc::new(ApiServer::start());
        server.add_node("node-1").unwrap();
        server.add_node("node-2").unwrap();
        for (name, node) in [
            ("web-0", "node-1"),
            ("web-1", "node-1"),
            ("web-2", "node-2"),
        ] {
            server
                .add_pod_on(
                    "lab",
                    name,
                    node,
                    owned("ReplicaSet", "web", json!({"app": "web"})),
                )
                .unwrap();
        }
        let pdbs = ApiResource::new(
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            true,
        );
        let _ = server.create(
            &pdbs,
            json!({"metadata": {"name": "web", "namespace": "lab"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}),
        );
        let ds = ApiResource::new("apps", "v1", "DaemonSet", "daemonsets", true);
        let _ = server.create(
            &ds,
            json!({"metadata": {"name": "proxy", "namespace": "kube-system"}}),
        );
        server
            .add_pod_on(
                "kube-system",
                "proxy-node-1",
                "node-1",
                owned("DaemonSet", "proxy", json!({"app": "proxy"})),
            )
            .unwrap();
        server
            .add_pod_on(
                "kube-system",
                "etcd-node-1",
                "node-1",
                json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "demo"}}}),
            )
            .unwrap();
        // The ReplicaSet's controller: a replacement on node-2 a second later.
        let script = {
            let server = server.clone();
            std::thread::Builder::new()
                .name("demo/replicaset".into())
                .spawn(move || {
                    std::thread::sleep(Duration::from_secs(1));
                    server
                        .add_pod_on(
                            "lab",
                            "web-3",
                            "node-2",
                            owned("ReplicaSet", "web", json!({"app": "web"})),
                        )
                        .unwrap();
                })
                .expect("spawn the demo's controller")
        };
        Demo {
            server,
            script: Some(script),
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Some(t) = self.script.take() {
            let _ = t.join();
        }
    }
}
