//! `kubectl cp` (feature `ws`): copy files and directories to and from containers, with
//! kubectl's file specs (`[[namespace/]pod:]file/path`), flags (`-c`, `--retries`,
//! `--no-preserve`), messages and exit code (1 on any failure). Needs `tar` in the
//! container, as kubectl does. With no cluster configured, or `--demo`, it runs against
//! the embedded test API server, whose pod `demo/web` has `/srv/www` (a small site) and
//! `/etc/motd` in an in-memory filesystem that answers `tar` (`testing::ContainerFiles`).
//!
//! ```text
//! cargo run --features ws --example kubectl -- cp --demo demo/web:/srv/www ./www
//! cargo run --features ws --example kubectl -- cp --demo web:/etc/motd motd.txt
//! cargo run --features ws --example kubectl -- cp --demo ./www web:/tmp/www
//! ```

use kube_informer::pod::{CopyOptions, CopyReport};
use kube_informer::testing::{ApiServer, ContainerFiles};
use kube_informer::Client;

use crate::{parse_flags, Common};

/// `[[namespace/]pod:]file/path`, as kubectl reads it.
#[derive(Debug, PartialEq)]
struct FileSpec {
    namespace: Option<String>,
    pod: Option<String>,
    path: String,
}

const BAD_SPEC: &str = "filespec must match the canonical format: [[namespace/]pod:]file/path";

fn file_spec(arg: &str) -> Result<FileSpec, String> {
    let Some(i) = arg.find(':') else {
        return Ok(FileSpec {
            namespace: None,
            pod: None,
            path: arg.to_owned(),
        });
    };
    if i == 0 {
        return Err(BAD_SPEC.into());
    }
    let (pod, path) = (&arg[..i], &arg[i + 1..]);
    let pieces: Vec<&str> = pod.split('/').collect();
    let (namespace, pod) = match pieces.as_slice() {
        [pod] => (None, pod.to_string()),
        [ns, pod] => (Some(ns.to_string()), pod.to_string()),
        _ => return Err(BAD_SPEC.into()),
    };
    Ok(FileSpec {
        namespace,
        pod: Some(pod),
        path: path.to_owned(),
    })
}

/// The demo server: pod `demo/web` with a few files.
fn demo() -> (ApiServer, ContainerFiles) {
    let server = ApiServer::start();
    server
        .create_pod("demo", "web", &["app"])
        .expect("a fresh demo server takes the pod");
    let files = ContainerFiles::new();
    files.write_file(
        "/srv/www/index.html",
        0o644,
        b"<h1>Hello from demo/web</h1>\n",
    );
    files.write_file("/srv/www/css/site.css", 0o644, b"h1 { color: teal }\n");
    files.symlink("/srv/www/home.html", "index.html");
    files.write_file("/etc/motd", 0o644, b"Welcome to the demo pod.\n");
    files.create_dir("/tmp", 0o777);
    files.serve(server.runtime());
    (server, files)
}

fn run(argv: Vec<String>) -> Result<(), String> {
    let mut common = Common::default();
    let mut options = CopyOptions::new();
    let positional = parse_flags(argv, |flag, value| {
        if common.take(flag, value)? {
            return Ok(true);
        }
        match flag {
            "-c" | "--container" => options = options.clone().container(value("--container")?),
            "--retries" => {
                let v = value("--retries")?;
                let n: i64 = v
                    .parse()
                    .map_err(|_| format!("invalid argument {v:?} for \"--retries\" flag"))?;
                // kubectl: a negative value retries forever; here a large bound.
                let n = if n < 0 {
                    u32::MAX
                } else {
                    n.min(u32::MAX as i64) as u32
                };
                options = options.clone().retries(n);
            }
            "--no-preserve" => options = options.clone().no_preserve(true),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if positional.len() != 2 {
        return Err("source and destination are required".into());
    }
    let src = file_spec(&positional[0])?;
    let dest = file_spec(&positional[1])?;
    if src.pod.is_some() && dest.pod.is_some() {
        return Err("one of src or dest must be a local file specification".into());
    }
    if src.path.is_empty() || dest.path.is_empty() {
        return Err("filepath can not be empty".into());
    }
    if src.pod.is_none() && dest.pod.is_none() {
        return Err("one of src or dest must be a remote file specification".into());
    }
    let mut _demo = None;
    let (client, default_ns) = match common.connect("kubectl")? {
        Some(c) => c,
        None => {
            let (server, files) = demo();
            let client = Client::new(server.client_config()).map_err(|e| e.to_string())?;
            _demo = Some((server, files));
            (client, "demo".to_owned())
        }
    };
    let remote = if src.pod.is_some() { &src } else { &dest };
    let ns = remote.namespace.clone().unwrap_or(default_ns);
    let pod = remote.pod.clone().unwrap_or_default();
    let report = if src.pod.is_some() {
        client.copy_from_pod(&ns, &pod, &src.path, &dest.path, &options)
    } else {
        client.copy_to_pod(&ns, &pod, &src.path, &dest.path, &options)
    }
    .map_err(|e| e.to_string())?;
    warn(&report);
    Ok(())
}

fn warn(report: &CopyReport) {
    eprint!("{}", report.stderr);
    for s in &report.skipped {
        eprintln!("warning: skipping {s}");
    }
    if report.retries > 0 {
        eprintln!("copy resumed {} time(s)", report.retries);
    }
    log::info!(
        "copied {} files, {} directories, {} symlinks, {} bytes",
        report.files,
        report.directories,
        report.symlinks,
        report.bytes
    );
}

/// `kubectl cp <src> <dest>`: 0, or 1 with kubectl's `error: ...`.
pub fn main(argv: Vec<String>) -> i32 {
    match run(argv) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_specs_read_like_kubectl() {
        assert_eq!(
            file_spec("lab/web:/tmp/x").unwrap(),
            FileSpec {
                namespace: Some("lab".into()),
                pod: Some("web".into()),
                path: "/tmp/x".into()
            }
        );
        assert_eq!(file_spec("web:x").unwrap().pod.as_deref(), Some("web"));
        assert_eq!(file_spec("./local").unwrap().pod, None);
        assert_eq!(file_spec(":x").unwrap_err(), BAD_SPEC);
        assert_eq!(file_spec("a/b/c:x").unwrap_err(), BAD_SPEC);
    }
}
