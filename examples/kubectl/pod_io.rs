//! `kubectl exec`, `kubectl attach` and `kubectl port-forward` (feature `ws`), with kubectl's
//! flags and exit codes: `exec` exits with the command's code (1 for a failure to run it or
//! any other error). With no cluster configured, or `--demo`, it runs against the embedded
//! test API server, whose pod `demo/web` answers `echo`, `sh -c 'exit N'`, `cat`, and has
//! port 80 served by an echo server.
//!
//! ```text
//! cargo run --features ws --example kubectl -- exec --demo web -- echo hello
//! echo hi | cargo run --features ws --example kubectl -- exec --demo -i web -- cat
//! cargo run --features ws --example kubectl -- exec --demo -it web -- cat   # Ctrl-D ends it
//! cargo run --features ws --example kubectl -- port-forward --demo web :80 --duration 5
//! cargo run --features ws --example kubectl -- attach --demo -i web
//! ```

use std::time::Duration;

use kube_informer::pod::{ExecParams, ExitStatus, PortMapping};
use kube_informer::testing::{ApiServer, CommandOutput, Runtime};
use kube_informer::Client;

use crate::Common;

#[derive(Default)]
struct Args {
    sub: String,
    /// `-n`, `--kubeconfig`, `--context`, `--demo`: shared with the other subcommands (and
    /// taken before the subcommand too, see `split_global_flags`).
    common: Common,
    container: Option<String>,
    stdin: bool,
    tty: bool,
    duration: Option<u64>,
    rest: Vec<String>,
}

fn parse(sub: &str, argv: Vec<String>) -> Result<Args, String> {
    let mut a = Args {
        sub: sub.to_owned(),
        ..Default::default()
    };
    let mut it = argv.into_iter();
    while let Some(x) = it.next() {
        match x.as_str() {
            "-c" | "--container" => a.container = Some(it.next().ok_or("-c needs a value")?),
            "-i" | "--stdin" => a.stdin = true,
            "-t" | "--tty" => a.tty = true,
            "-it" | "-ti" => (a.stdin, a.tty) = (true, true),
            "--duration" => {
                a.duration = Some(
                    it.next()
                        .and_then(|d| d.parse().ok())
                        .ok_or("--duration needs seconds")?,
                )
            }
            "--" => a.rest.extend(it.by_ref()),
            f if f.starts_with('-') && f.len() > 1 => {
                let (flag, mut inline) = match f.split_once('=') {
                    Some((flag, v)) if flag.starts_with("--") => (flag, Some(v.to_owned())),
                    _ => (f, None),
                };
                let mut value = |name: &str| match inline.take() {
                    Some(v) => Ok(v),
                    None => it.next().ok_or_else(|| format!("{name} needs a value")),
                };
                if !a.common.take(flag, &mut value)? {
                    return Err(format!("unknown flag {f}"));
                }
            }
            _ => a.rest.push(x),
        }
    }
    Ok(a)
}

/// The demo server and its pod.
fn demo() -> ApiServer {
    let server = ApiServer::start();
    server.create_pod("demo", "web", &["app"]).unwrap();
    let rt = server.runtime();
    rt.command(&["echo"], |i| CommandOutput {
        stdout: format!("{}\n", i.argv[1..].join(" ")).into_bytes(),
        ..Default::default()
    });
    rt.command(&["sh"], |i| {
        let code = i
            .argv
            .last()
            .and_then(|c| c.strip_prefix("exit "))
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(0);
        CommandOutput {
            exit_code: code,
            ..Default::default()
        }
    });
    rt.command(
        &["date"],
        Runtime::output(b"Thu Nov 26 12:00:00 UTC 2026\n", b"", 0),
    );
    rt.echo("cat");
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    rt.port("demo", "web", 80, echo.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in echo.incoming().flatten() {
            std::thread::spawn(move || {
                let (mut r, mut w) = (s.try_clone().unwrap(), s);
                let _ = std::io::copy(&mut r, &mut w);
            });
        }
    });
    server
}

fn run(a: &Args) -> Result<i32, String> {
    let mut _server = None;
    let (client, ns) = match a.common.connect("kubectl")? {
        Some(connected) => connected,
        None => {
            let s = demo();
            let c = Client::new(s.client_config()).map_err(|e| e.to_string())?;
            _server = Some(s);
            let ns = a
                .common
                .namespace
                .clone()
                .unwrap_or_else(|| "demo".to_owned());
            (c, ns)
        }
    };
    let pod = a
        .rest
        .first()
        .ok_or("a pod name is required")?
        .trim_start_matches("pod/")
        .to_owned();
    match a.sub.as_str() {
        "exec" | "attach" => {
            let mut p = if a.sub == "exec" {
                ExecParams::new(a.rest[1..].iter().cloned())
            } else {
                ExecParams::attach()
            };
            // kubectl's rules: a TTY only with stdin, and only when stdin is a terminal
            // (otherwise a warning, and the session goes on without one).
            let mut tty = a.tty && a.stdin;
            #[cfg(unix)]
            let terminal = if tty {
                kube_informer::pod::Terminal::stdio()
                    .map_err(|_| {
                        eprintln!(
                            "Unable to use a TTY - input is not a terminal or the right kind of file"
                        );
                        tty = false;
                    })
                    .ok()
            } else {
                None
            };
            #[cfg(not(unix))]
            if tty {
                eprintln!(
                    "Unable to use a TTY - input is not a terminal or the right kind of file"
                );
                tty = false;
            }
            p = p.stdin(a.stdin).tty(tty);
            if let Some(c) = &a.container {
                p = p.container(c.clone());
            }
            let proc = if a.sub == "exec" {
                if a.rest.len() < 2 {
                    return Err("exec needs a command after the pod (POD -- COMMAND ...)".into());
                }
                client.exec(&ns, &pod, &p)
            } else {
                client.attach(&ns, &pod, &p)
            }
            .map_err(|e| e.to_string())?;
            // `-it`: raw mode, the window's size and its changes, the terminal given back
            // however the session ends. Otherwise our stdin, stdout and stderr, wired in.
            #[cfg(unix)]
            let status = match &terminal {
                Some(t) => proc.run_tty(t),
                None => proc.run_with_stdio(),
            };
            #[cfg(not(unix))]
            let status = proc.run_with_stdio();
            match status.map_err(|e| e.to_string())? {
                ExitStatus::Success => Ok(0),
                ExitStatus::Code(c) => Ok(c),
                ExitStatus::Failure(st) => Err(st.message),
            }
        }
        "port-forward" => {
            let maps = a.rest[1..]
                .iter()
                .map(|m| m.parse::<PortMapping>().map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            let f = client
                .port_forward(&ns, &pod, &maps)
                .map_err(|e| e.to_string())?;
            for p in f.ports() {
                println!("Forwarding from {} -> {}", p.local, p.remote);
            }
            let until = a
                .duration
                .map(|d| std::time::Instant::now() + Duration::from_secs(d));
            loop {
                if let Ok(e) = f.errors().recv_timeout(Duration::from_millis(200)) {
                    eprintln!("E port-forward {} -> {}: {}", e.peer, e.remote, e.message);
                }
                if until.is_some_and(|u| std::time::Instant::now() >= u) {
                    break;
                }
            }
            f.stop();
            Ok(0)
        }
        other => Err(format!(
            "unknown command {other:?} (exec, attach, port-forward)"
        )),
    }
}

/// `kubectl exec|attach|port-forward ...`: the exit code (`exec`: the command's).
pub fn main(sub: &str, argv: Vec<String>) -> i32 {
    match parse(sub, argv).and_then(|a| run(&a)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
