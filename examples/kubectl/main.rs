//! A small kubectl, in-process: `get`, `logs`, `drain`, and with the `ws` feature `exec`,
//! `attach`, `port-forward` and `cp`, each with kubectl's flags, output and exit codes (one file
//! per subcommand; `exec` exits with the command's code).
//!
//! ```text
//! $ cargo run -q --example kubectl -- get po -A
//! $ cargo run -q --example kubectl -- logs web-0 -f          # follows, resumes after drops
//! $ cargo run -q --example kubectl -- drain node-1 --ignore-daemonsets
//! $ cargo run -q --features ws --example kubectl -- exec web-0 -- sh -c 'exit 3'; echo $?
//! $ cargo run -q --features ws --example kubectl -- port-forward web-0 8080:80 :5432
//! $ cargo run -q --features ws --example kubectl -- cp lab/web-0:/var/log/app ./app-logs
//! ```
//!
//! With a kubeconfig (`$KUBECONFIG`, `~/.kube/config`) or inside a pod it talks to that
//! cluster; with none (or `--demo`) it says so on stderr and runs against the embedded
//! `testing::ApiServer`, seeded for the subcommand (see each file).

#[cfg(feature = "ws")]
mod cp;
mod drain;
mod get;
mod logs;
#[cfg(feature = "ws")]
mod pod_io;

use kube_informer::config::{Config, KubeconfigOptions};
use kube_informer::Client;

const USAGE: &str = "usage: kubectl [-n NS] [--context C] [--kubeconfig F] [--demo] (get|logs|drain|exec|attach|port-forward|cp) [flags] ...; kubectl COMMAND -h for its flags";

fn main() {
    // `RUST_LOG=info` (or `debug`, or `kube_informer=debug`) shows the library's log lines on
    // stderr; without it, errors only.
    env_logger::init();
    let (command, rest) = match split_global_flags(std::env::args().skip(1).collect()) {
        Ok(split) => split,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            std::process::exit(1);
        }
    };
    let argv = rest.into_iter();
    match command.as_deref() {
        Some("get") => get::main(argv),
        Some("logs") => std::process::exit(logs::main(argv.collect())),
        Some("drain") => std::process::exit(drain::main(argv.collect())),
        #[cfg(feature = "ws")]
        Some(sub @ ("exec" | "attach" | "port-forward")) => {
            std::process::exit(pod_io::main(sub, argv.collect()))
        }
        #[cfg(feature = "ws")]
        Some("cp") => std::process::exit(cp::main(argv.collect())),
        #[cfg(not(feature = "ws"))]
        Some(sub @ ("exec" | "attach" | "port-forward" | "cp")) => {
            eprintln!("error: kubectl {sub} speaks WebSocket: build with `--features ws`");
            std::process::exit(1);
        }
        Some("-h" | "--help") => println!("{USAGE}"),
        Some(other) => {
            eprintln!("error: unknown command {other:?} for \"kubectl\"\n{USAGE}");
            std::process::exit(1);
        }
        None => {
            eprintln!("{USAGE}");
            std::process::exit(1);
        }
    }
}

/// The global flags taken before the subcommand, as kubectl takes them (`kubectl -n NS logs
/// POD`, `kubectl --context c get po`): `-n`/`--namespace`, `--kubeconfig`, `--context` (each
/// as `-n NS`, `-nNS`, `-n=NS`, `--namespace NS` or `--namespace=NS`) and `--demo`. Returns
/// the subcommand (`None` when there is none) and its arguments: the global flags first, in
/// the separate form every subcommand's parser reads, then what followed the subcommand.
pub fn split_global_flags(argv: Vec<String>) -> Result<(Option<String>, Vec<String>), String> {
    let mut global = Vec::new();
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        if !arg.starts_with('-') || arg == "-" {
            global.extend(it);
            return Ok((Some(arg), global));
        }
        if matches!(arg.as_str(), "-h" | "--help") {
            // `kubectl -h`: the usage, whatever follows.
            return Ok((Some(arg), Vec::new()));
        }
        if arg == "--demo" {
            global.push(arg);
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None if arg.starts_with("-n") && arg.len() > 2 && !arg.starts_with("--") => {
                ("-n".to_owned(), Some(arg[2..].to_owned()))
            }
            None => (arg.clone(), None),
        };
        let long = match name.as_str() {
            "-n" | "--namespace" => "--namespace",
            "--kubeconfig" => "--kubeconfig",
            "--context" => "--context",
            _ => return Err(format!("unknown flag: {arg}")),
        };
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| format!("flag needs an argument: {name}"))?,
        };
        // `-n` rather than `--namespace`: the form every subcommand reads.
        global.push(if long == "--namespace" { "-n" } else { long }.to_owned());
        global.push(value);
    }
    Ok((None, global))
}

/// kubectl's `--kubeconfig`, `--context` and `--namespace`, as kubeconfig options.
pub fn kubeconfig_options(
    kubeconfig: &Option<String>,
    context: &Option<String>,
    namespace: &Option<String>,
) -> KubeconfigOptions {
    let mut options = KubeconfigOptions::new();
    if let Some(v) = kubeconfig {
        options = options.kubeconfig(v);
    }
    if let Some(v) = context {
        options = options.context(v);
    }
    if let Some(v) = namespace {
        options = options.namespace(v);
    }
    options
}

/// The flags every subcommand shares.
#[derive(Debug, Default)]
pub struct Common {
    pub namespace: Option<String>,
    pub kubeconfig: Option<String>,
    pub context: Option<String>,
    pub demo: bool,
}

impl Common {
    /// Takes a shared flag (`-n`, `--kubeconfig`, `--context`, `--demo`) if `flag` is one.
    pub fn take(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut(&str) -> Result<String, String>,
    ) -> Result<bool, String> {
        match flag {
            "-n" | "--namespace" => self.namespace = Some(value("--namespace")?),
            "--kubeconfig" => self.kubeconfig = Some(value("--kubeconfig")?),
            "--context" => self.context = Some(value("--context")?),
            "--demo" => self.demo = true,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The configured cluster's client and namespace, or `None` for the demo (no cluster
    /// configured, or `--demo`; said on stderr by `tool`).
    pub fn connect(&self, tool: &str) -> Result<Option<(Client, String)>, String> {
        let options = kubeconfig_options(&self.kubeconfig, &self.context, &self.namespace);
        let loaded = if self.demo {
            None
        } else {
            Config::infer_if_configured(&options).map_err(|e| e.to_string())?
        };
        match loaded {
            Some(config) => {
                let client = config.client().map_err(|e| e.to_string())?;
                let ns = self
                    .namespace
                    .clone()
                    .unwrap_or_else(|| client.default_namespace().to_owned());
                Ok(Some((client, ns)))
            }
            None => {
                let why = if self.demo {
                    "--demo given"
                } else {
                    "no cluster configured"
                };
                eprintln!("{tool}: {why}; running against the embedded test API server (demo)");
                Ok(None)
            }
        }
    }
}

/// Splits `--flag=value` and hands out values: the argument loop of every subcommand.
pub fn parse_flags(
    argv: Vec<String>,
    mut on_flag: impl FnMut(
        &str,
        &mut dyn FnMut(&str) -> Result<String, String>,
    ) -> Result<bool, String>,
) -> Result<Vec<String>, String> {
    let mut positional = Vec::new();
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        if !flag.starts_with('-') || flag == "-" {
            positional.push(arg);
            continue;
        }
        let mut inline = inline;
        let mut value = |name: &str| -> Result<String, String> {
            match inline.take() {
                Some(v) => Ok(v),
                None => it
                    .next()
                    .ok_or_else(|| format!("flag needs an argument: {name}")),
            }
        };
        if !on_flag(&flag, &mut value)? {
            return Err(format!("unknown flag: {flag}"));
        }
    }
    Ok(positional)
}

/// A Go duration as kubectl takes it: `30s`, `5m`, `1h`, `1m30s`, `500ms`, `0`.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("invalid duration {s:?}: expected e.g. 30s, 5m, 1h, 500ms");
    if s == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = s;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let n: f64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    std::time::Duration::try_from_secs_f64(total).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn split(args: &[&str]) -> Result<(Option<String>, Vec<String>), String> {
        split_global_flags(args.iter().map(|a| a.to_string()).collect())
    }

    fn owned(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn global_flags_may_come_before_the_subcommand() {
        let logs = Some("logs".to_owned());
        assert_eq!(
            split(&["-n", "ns", "logs", "pod"]).unwrap(),
            (logs.clone(), owned(&["-n", "ns", "pod"]))
        );
        for form in [
            &["-nns"][..],
            &["-n=ns"],
            &["--namespace", "ns"],
            &["--namespace=ns"],
        ] {
            let mut args = form.to_vec();
            args.extend(["logs", "pod"]);
            assert_eq!(
                split(&args).unwrap(),
                (logs.clone(), owned(&["-n", "ns", "pod"])),
                "{form:?}"
            );
        }
        assert_eq!(
            split(&["--context", "c", "--kubeconfig=/k", "--demo", "get", "po"]).unwrap(),
            (
                Some("get".to_owned()),
                owned(&["--context", "c", "--kubeconfig", "/k", "--demo", "po"])
            )
        );
        // A value that looks like a subcommand is the flag's.
        assert_eq!(
            split(&["-n", "logs", "logs", "p"]).unwrap(),
            (logs.clone(), owned(&["-n", "logs", "p"]))
        );
        // Everything after the subcommand is left as it is, `--` and all.
        assert_eq!(
            split(&["exec", "p", "--", "-n", "x"]).unwrap(),
            (Some("exec".to_owned()), owned(&["p", "--", "-n", "x"]))
        );
        assert_eq!(split(&[]).unwrap(), (None, vec![]));
        assert_eq!(split(&["-n", "ns"]).unwrap(), (None, owned(&["-n", "ns"])));
        assert!(split(&["-n"]).unwrap_err().contains("needs an argument"));
        assert!(split(&["--user", "u", "get"])
            .unwrap_err()
            .contains("unknown flag: --user"));
        assert_eq!(
            split(&["-h", "get"]).unwrap(),
            (Some("-h".to_owned()), vec![])
        );
    }

    #[test]
    fn durations_read_like_go() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("x").is_err());
    }
}
