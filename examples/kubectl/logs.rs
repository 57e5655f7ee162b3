//! `kubectl logs POD`: a pod's log, or `-f` to follow it — and, unlike kubectl, a follow that
//! **resumes** when the stream drops (an API server restart, an idle proxy, a kubelet
//! restart), neither losing nor repeating a line (`--no-resume`: end at the drop, as
//! kubectl does).
//!
//! Flags: `-c/--container`, `-f/--follow`, `-p/--previous`, `--since 5m`, `--since-time
//! RFC3339`, `--tail N` (-1: all), `--timestamps`, `--limit-bytes N`, `--no-resume`, `-n`,
//! `--kubeconfig`, `--context`, `--demo`. Output and exit codes as kubectl's: the lines on
//! stdout; `error: a container name must be specified for pod multi, choose one of: [app
//! sidecar]` or `Error from server (NotFound): pods "x" not found` on stderr and exit 1; a
//! pod without a node prints nothing (the server's `204`) and exits 0.
//!
//! Demo (`--demo`, or no cluster): pods `web-0` (container `app`) and `multi` (`app`,
//! `sidecar`) in `default`; with `-f` the demo container writes a line every 200 ms, the
//! "kubelet" restarts after the third (the stream drops; the follow resumes) and the container
//! exits after the sixth, which ends the follow.

use std::io::Write;
use std::time::{Duration, SystemTime};

use kube_informer::api::{ApiResource, DynamicObject};
use kube_informer::pod::{LogParams, LogTime, PodError};
use kube_informer::testing::ApiServer;
use kube_informer::{Api, Client, Error};

use super::{parse_duration, parse_flags, Common};

const USAGE: &str = "usage: kubectl logs [-f] [-p] [-c CONTAINER] [--since D | --since-time T] \
[--tail N] [--timestamps] [--limit-bytes N] [--no-resume] [-n NS] [--demo] POD";

/// Runs `kubectl logs`; the exit code.
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
    let mut p = LogParams::default();
    let positional = parse_flags(argv, |flag, value| {
        match flag {
            "-c" | "--container" => p.container = Some(value("--container")?),
            "-f" | "--follow" => p.follow = true,
            "-p" | "--previous" => p.previous = true,
            "--timestamps" => p.timestamps = true,
            "--no-resume" => p.no_resume = true,
            "--since" => {
                let d = parse_duration(&value("--since")?).map_err(|e| format!("error: {e}"))?;
                p.since_seconds = Some(d.as_secs_f64().ceil() as u64);
            }
            "--since-time" => {
                let v = value("--since-time")?;
                let t = LogTime::parse(&v)
                    .ok_or_else(|| format!("error: --since-time {v:?}: not an RFC 3339 time"))?;
                p.since_time = Some(t.to_system_time());
            }
            "--tail" => {
                let v = value("--tail")?;
                let n: i64 = v
                    .parse()
                    .map_err(|_| format!("error: --tail {v:?}: not a number"))?;
                p.tail_lines = u64::try_from(n).ok();
            }
            "--limit-bytes" => {
                let v = value("--limit-bytes")?;
                p.limit_bytes = Some(
                    v.parse()
                        .map_err(|_| format!("error: --limit-bytes {v:?}: not a number"))?,
                );
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            f => return common.take(f, value),
        }
        Ok(true)
    })
    .map_err(|e| format!("error: {e}\n{USAGE}"))?;
    let pod = match positional.as_slice() {
        [pod] => pod
            .trim_start_matches("pods/")
            .trim_start_matches("pod/")
            .to_owned(),
        [] => return Err(format!("error: expected POD\n{USAGE}")),
        _ => {
            return Err(format!(
                "error: expected one POD (got {positional:?})\n{USAGE}"
            ))
        }
    };
    let (client, ns, _demo) = match common.connect("kubectl")? {
        Some((client, ns)) => (client, ns, None),
        None => {
            let demo = Demo::start(p.follow);
            let client = Client::new(demo.server.client_config()).map_err(|e| e.to_string())?;
            (
                client,
                common.namespace.clone().unwrap_or("default".into()),
                Some(demo),
            )
        }
    };
    let api: Api<DynamicObject> = Api::namespaced_with(
        client,
        &ns,
        &ApiResource::new("", "v1", "Pod", "pods", true),
    );
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let lines = match api.log_stream(&pod, &p) {
        Ok(lines) => lines,
        Err(e) => return failure(e),
    };
    for line in lines {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                let _ = out.flush();
                return failure(e);
            }
        };
        let _ = out.write_all(&line.bytes);
        if !line.partial && !line.unterminated {
            let _ = out.write_all(b"\n");
        }
        if p.follow {
            let _ = out.flush();
        }
    }
    let _ = out.flush();
    Ok(0)
}

/// kubectl's words and exit code for a failure.
fn failure(e: Error) -> Result<i32, String> {
    match (e.pod_error(), e.status()) {
        // A pod without a node: the server's 204, nothing to print.
        (Some(PodError::NotScheduled { .. }), _) => Ok(0),
        // kubectl decides this one itself, in the server's words.
        (Some(PodError::ContainerRequired { .. }), Some(st)) => {
            Err(format!("error: {}", st.message))
        }
        (_, Some(st)) => Err(format!("Error from server ({}): {}", st.reason, st.message)),
        _ => Err(format!("error: {e}")),
    }
}

/// The demo's API server and its scripted container.
struct Demo {
    server: std::sync::Arc<ApiServer>,
    script: Option<std::thread::JoinHandle<()>>,
}

impl Demo {
    fn start(follow: bool) -> Demo {
        let server = std::sync::Arc::new(ApiServer::start());
        server.add_pod("default", "web-0", &["app"]).unwrap();
        server
            .add_pod("default", "multi", &["app", "sidecar"])
            .unwrap();
        let now = SystemTime::now();
        for (i, l) in ["starting web-0", "listening on :8080", "GET /healthz 200"]
            .iter()
            .enumerate()
        {
            let t = LogTime::from_system_time(now - Duration::from_secs(3 - i as u64));
            server.append_log_at("default", "web-0", "app", t, l);
        }
        server.append_log("default", "multi", "app", "app says hi");
        server.append_log("default", "multi", "sidecar", "sidecar says hi");
        let script = follow.then(|| {
            let server = server.clone();
            std::thread::Builder::new()
                .name("demo/container".into())
                .spawn(move || {
                    for i in 1..=6 {
                        std::thread::sleep(Duration::from_millis(200));
                        server.append_log("default", "web-0", "app", &format!("tick {i}"));
                        if i == 3 {
                            // Give the follow a moment to read the line, then drop it.
                            std::thread::sleep(Duration::from_millis(100));
                            eprintln!(
                                "kubectl: demo: the kubelet restarted (the log stream dropped)"
                            );
                            server.drop_log_streams();
                        }
                    }
                    server.terminate_container("default", "web-0", "app", 0);
                })
                .expect("spawn the demo's container")
        });
        Demo { server, script }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Some(t) = self.script.take() {
            let _ = t.join();
        }
    }
}
