//! An in-memory container filesystem that answers the commands `kubectl cp` runs, for
//! tests of [`Client::copy_from_pod`](crate::Client::copy_from_pod) and
//! [`Client::copy_to_pod`](crate::Client::copy_to_pod) (and of programs built on them).
//!
//! [`ContainerFiles::serve`] registers, on the test server's [`Runtime`]:
//!
//! - `tar cf - <path>`: the path archived as GNU tar does it — names without the leading
//!   `/` (with tar's note "Removing leading `/' from member names" on stderr), directories
//!   recursively, symlinks not followed; a missing path is tar's "Cannot stat: No such file
//!   or directory" and exit code 2;
//! - `tar [--no-same-permissions] [--no-same-owner] -xmf - -C <dir>`: the archive on stdin
//!   extracted under `<dir>` (names with `..` refused as GNU tar does, exit 2; modes kept
//!   unless `--no-same-permissions`, times set to now as `-m` says);
//! - `test -d <path>`: exit 0 for a directory, 1 otherwise;
//! - `sh -c "tar cf - '<path>' | tail -c+<n>"`: kubectl's command when retrying, the
//!   archive from its `n`th byte.
//!
//! One filesystem for every pod and container of the server (the runtime's commands are
//! the server's). Clones share it: keep one to look at what a copy wrote. A server without
//! it answers `tar` as an image without tar does (`executable file not found in $PATH`).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::runtime::{CommandOutput, ExecInput, Runtime};
use crate::pod::tar::{EntryKind, TarReader, TarWriter};

#[derive(Clone, Debug)]
enum Node {
    Dir {
        mode: u32,
    },
    File {
        mode: u32,
        mtime: i64,
        data: Arc<Vec<u8>>,
    },
    Symlink {
        target: String,
    },
}

/// See the [module docs](self).
///
/// ```
/// # use kube_informer::testing::{ApiServer, ContainerFiles};
/// let server = ApiServer::start();
/// server.create_pod("lab", "web", &["app"]).unwrap();
/// let files = ContainerFiles::new();
/// files.write_file("/etc/app/config.yaml", 0o600, b"replicas: 2\n");
/// files.serve(server.runtime());
///
/// let client = kube_informer::Client::new(server.client_config())?;
/// let out = client.exec_output(
///     "lab",
///     "web",
///     &kube_informer::pod::ExecParams::new(["test", "-d", "/etc/app"]),
///     &[],
/// )?;
/// assert!(out.status.success());
/// assert_eq!(files.mode("/etc/app/config.yaml"), Some(0o600));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ContainerFiles {
    nodes: Arc<Mutex<BTreeMap<String, Node>>>,
}

impl Default for ContainerFiles {
    fn default() -> Self {
        Self::new()
    }
}

/// A path made absolute and clean (`//`, `.` and `..` resolved).
fn normal(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    format!("/{}", out.join("/"))
}

fn parent(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}

fn failed(stderr: String, code: i32) -> CommandOutput {
    CommandOutput {
        stdout: Vec::new(),
        stderr: stderr.into_bytes(),
        exit_code: code,
    }
}

impl ContainerFiles {
    /// An empty filesystem (only `/`).
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_owned(), Node::Dir { mode: 0o755 });
        ContainerFiles {
            nodes: Arc::new(Mutex::new(nodes)),
        }
    }

    fn insert(&self, path: &str, node: Node) {
        let path = normal(path);
        let mut nodes = self.nodes.lock();
        let mut p = path.as_str();
        while let Some(up) = parent(p) {
            nodes
                .entry(up.to_owned())
                .or_insert(Node::Dir { mode: 0o755 });
            p = up;
        }
        nodes.insert(path, node);
    }

    /// A directory (and its missing parents, `0o755`).
    pub fn create_dir(&self, path: &str, mode: u32) {
        self.insert(path, Node::Dir { mode });
    }

    /// A file with `data` (its missing parent directories too).
    pub fn write_file(&self, path: &str, mode: u32, data: &[u8]) {
        self.insert(
            path,
            Node::File {
                mode,
                mtime: 1_700_000_000,
                data: Arc::new(data.to_vec()),
            },
        );
    }

    /// A symlink at `path` to `target` (not checked, as `ln -s`).
    pub fn symlink(&self, path: &str, target: &str) {
        self.insert(
            path,
            Node::Symlink {
                target: target.to_owned(),
            },
        );
    }

    /// A file's contents (`None` for anything else or nothing).
    pub fn read_file(&self, path: &str) -> Option<Vec<u8>> {
        match self.nodes.lock().get(&normal(path)) {
            Some(Node::File { data, .. }) => Some(data.to_vec()),
            _ => None,
        }
    }

    /// A file's or directory's permission bits.
    pub fn mode(&self, path: &str) -> Option<u32> {
        match self.nodes.lock().get(&normal(path))? {
            Node::Dir { mode } | Node::File { mode, .. } => Some(*mode),
            Node::Symlink { .. } => None,
        }
    }

    /// A symlink's target.
    pub fn link_target(&self, path: &str) -> Option<String> {
        match self.nodes.lock().get(&normal(path))? {
            Node::Symlink { target } => Some(target.clone()),
            _ => None,
        }
    }

    /// Whether `path` is a directory.
    pub fn is_dir(&self, path: &str) -> bool {
        matches!(self.nodes.lock().get(&normal(path)), Some(Node::Dir { .. }))
    }

    /// Every path, sorted.
    pub fn paths(&self) -> Vec<String> {
        self.nodes.lock().keys().cloned().collect()
    }

    /// Answers `tar`, `test` and `sh` on `runtime` from this filesystem (see the [module
    /// docs](self)).
    pub fn serve(&self, runtime: &Runtime) {
        let me = self.clone();
        runtime.command(&["tar"], move |i| me.tar(i));
        let me = self.clone();
        runtime.command(&["test"], move |i| {
            let dir = matches!(i.argv.as_slice(), [_, flag, p] if flag == "-d" && me.is_dir(p));
            failed(String::new(), if dir { 0 } else { 1 })
        });
        let me = self.clone();
        runtime.command(&["sh"], move |i| me.sh(i));
    }

    fn tar(&self, input: &ExecInput) -> CommandOutput {
        let args: Vec<&str> = input.argv[1..].iter().map(String::as_str).collect();
        match args.as_slice() {
            ["cf" | "-cf", "-", path] => self.create(path),
            _ => {
                let no_perms = args.contains(&"--no-same-permissions");
                let rest: Vec<&str> = args
                    .iter()
                    .copied()
                    .filter(|a| !a.starts_with("--no-same-"))
                    .collect();
                match rest.as_slice() {
                    ["-xmf" | "xmf", "-", "-C", dir] => self.extract(dir, &input.stdin, no_perms),
                    ["-xmf" | "xmf", "-"] => self.extract("/", &input.stdin, no_perms),
                    _ => failed(
                        format!("tar: this test tar does not know {:?}\n", input.argv),
                        2,
                    ),
                }
            }
        }
    }

    fn sh(&self, input: &ExecInput) -> CommandOutput {
        let script = match input.argv.as_slice() {
            [_, c, script] if c == "-c" => script.as_str(),
            _ => return failed("sh: this test shell runs only `sh -c`\n".into(), 2),
        };
        let parsed = script.strip_prefix("tar cf - '").and_then(|rest| {
            let (quoted, n) = rest.rsplit_once("' | tail -c+")?;
            Some((quoted.replace(r"'\''", "'"), n.parse::<usize>().ok()?))
        });
        let Some((path, from)) = parsed else {
            return failed(format!("sh: this test shell does not run {script:?}\n"), 2);
        };
        let mut out = self.create(&path);
        out.stdout
            .drain(..from.saturating_sub(1).min(out.stdout.len()));
        out
    }

    /// `tar cf - <path>`.
    fn create(&self, path: &str) -> CommandOutput {
        let nodes = self.nodes.lock();
        let abs = normal(path);
        let mut stderr = String::new();
        if path.starts_with('/') {
            stderr.push_str("tar: Removing leading `/' from member names\n");
        }
        let mut w = TarWriter::new(Vec::new());
        let mut code = 0;
        if !nodes.contains_key(&abs) {
            stderr.push_str(&format!(
                "tar: {path}: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n"
            ));
            code = 2;
        } else {
            let below = format!("{}/", abs.trim_end_matches('/'));
            let members = nodes
                .range(abs.clone()..)
                .take_while(|(k, _)| k.starts_with(&abs))
                .filter(|(k, _)| **k == abs || k.starts_with(&below));
            for (k, node) in members {
                let name = k.trim_start_matches('/');
                let name = if name.is_empty() { "." } else { name };
                let written = match node {
                    Node::Dir { mode } => w.append_dir(name, *mode, 1_700_000_000),
                    Node::File { mode, mtime, data } => {
                        w.append_file(name, *mode, *mtime, data.len() as u64, &data[..])
                    }
                    Node::Symlink { target } => w.append_symlink(name, target, 1_700_000_000),
                };
                written.expect("writing to a Vec");
            }
        }
        w.finish().expect("writing to a Vec");
        CommandOutput {
            stdout: w.into_inner(),
            stderr: stderr.into_bytes(),
            exit_code: code,
        }
    }

    /// `tar -xmf - -C <dir>`.
    fn extract(&self, dir: &str, archive: &[u8], no_perms: bool) -> CommandOutput {
        let root = normal(dir);
        if !self.is_dir(&root) {
            return failed(
                format!("tar: {dir}: Cannot open: No such file or directory\ntar: Error is not recoverable: exiting now\n"),
                2,
            );
        }
        let mut reader = TarReader::new(archive);
        let mut stderr = String::new();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        loop {
            let entry = match reader.next_entry() {
                Ok(Some(e)) => e,
                Ok(None) => break,
                Err(e) => {
                    stderr.push_str(&format!(
                        "tar: {e}\ntar: Error is not recoverable: exiting now\n"
                    ));
                    return failed(stderr, 2);
                }
            };
            if entry.path.split('/').any(|c| c == "..") {
                stderr.push_str(&format!("tar: {}: Member name contains '..'\n", entry.path));
                continue;
            }
            let path = normal(&format!("{root}/{}", entry.path));
            let mode = if no_perms {
                entry.mode & 0o755
            } else {
                entry.mode
            };
            match entry.kind {
                EntryKind::Directory => self.insert(&path, Node::Dir { mode }),
                EntryKind::File => {
                    let mut data = Vec::new();
                    if let Err(e) = std::io::Read::read_to_end(&mut reader, &mut data) {
                        stderr.push_str(&format!("tar: {e}\n"));
                        return failed(stderr, 2);
                    }
                    self.insert(
                        &path,
                        Node::File {
                            mode,
                            mtime: now,
                            data: Arc::new(data),
                        },
                    );
                }
                EntryKind::Symlink => self.insert(
                    &path,
                    Node::Symlink {
                        target: entry.link.clone(),
                    },
                ),
                _ => stderr.push_str(&format!(
                    "tar: {}: not extracted by the test tar\n",
                    entry.path
                )),
            }
        }
        let code = if stderr.is_empty() { 0 } else { 2 };
        failed(stderr, code)
    }
}
