//! Copy files and directories to and from a container (`kubectl cp`), over exec with tar.
//!
//! As kubectl does it, the container's own `tar` does the container's side, so the image
//! must have one:
//!
//! - **from a container** ([`Client::copy_from_pod`]): `tar cf - <path>` runs in the
//!   container and its output is extracted locally as it arrives. The container's tar drops
//!   the leading `/` of the names (`/tmp/d/a` is archived as `tmp/d/a`); every name must
//!   start with that path — else the archive is not what was asked for and the copy fails
//!   ([`CopyError::Corrupted`], kubectl's "tar contents corrupted") — and what follows it is
//!   placed under the local destination: a directory's contents go *into* the destination
//!   (`kubectl cp pod:/tmp/d ./x` makes `./x/a`), a file becomes the destination (or goes
//!   into it, with its own name, when the destination is an existing directory: kubectl
//!   fails there).
//! - **into a container** ([`Client::copy_to_pod`]): `test -d <dest>` first (a directory
//!   destination receives the source under its own name, as `cp` does), then the local
//!   tree is archived as it is read into the stdin of `tar -xmf - -C <dir>`.
//!
//! **Extraction is confined to the destination.** The archive comes from a container,
//! which may be hostile: nothing it holds is created, written, linked or followed outside
//! the destination, whatever the order of its entries. Before anything is created for an
//! entry, every directory on its way below the destination is looked at without following
//! symlinks, and so is the destination itself when the copy creates it (a destination the
//! user named that is a symlink is theirs, and followed). Refused, failing the copy:
//! a name with a `..` component or an absolute name ([`CopyError::PathEscape`]); a symlink
//! whose target leaves the destination ([`CopyError::SymlinkEscape`], or skipped and listed
//! in [`CopyReport::skipped`] with [`CopyOptions::skip_escaping_symlinks`]) — the copied
//! path itself as a symlink always does, since it would become the destination and its
//! target is read from the destination's parent; a name below a symlink
//! ([`CopyError::ThroughSymlink`]: a real `tar` never archives anything below a symlink, so
//! this is a crafted archive, or a destination that already holds a symlink there); a hard
//! link to anything but a regular file this copy extracted ([`CopyError::HardLinkTarget`]:
//! a hard link to a symlink would re-read its target from another directory, and one to a
//! file that was in the destination before would let the container give a user's file a
//! second name of its choosing; kubectl makes every hard link entry an empty file). A symlink's
//! target is judged lexically: some `..` first, no more than the link's directory is deep,
//! then names only, each of which, if a link, obeys the same rule — the links it meets
//! are looked at too (at most 40), as one the user already had in an existing destination
//! (`cache -> /var/cache`) may point anywhere. What is in the way of an
//! entry (a file, a symlink) is removed and the file created anew, never written through.
//! kubectl skips names outside the destination with a warning and never creates symlinks;
//! these are refused instead, and symlinks that stay inside are kept.
//! Devices and FIFOs are skipped and listed. Files are created with their mode's permission
//! bits through the process's umask, as kubectl and a non-root `tar -x` create them (never
//! set-user-ID, set-group-ID or sticky; a container's `0666` is `0644` under the usual
//! `022`), and keep their modification time. New directories take their mode the same way,
//! always with the owner's `rwx` (so that their contents can be written), and not their
//! time; a directory that is already there, the destination the user named included, keeps
//! its own (a container's `0777` would make `~` or `.` world-writable). On Windows a name that is
//! a device (`NUL`, `COM1`, `con.txt`, ...) is refused as a way out, as are `\` and `:`.
//!
//! On a server that offers only `v4.channel.k8s.io` (before kube-apiserver 1.30) stdin
//! cannot be closed (see [`exec`](super::exec)): a copy into a container then ends when
//! the container's tar stops at the end-of-archive marker (the archive is padded to whole
//! 10 KiB records, so a tar reading records gets all of it); a tar that waits for the end
//! of its input holds the copy until the idle timeout.
//!
//! **The end of the archive** (two zero blocks) ends the copy from a container, as it ends
//! kubectl's: what follows is tar's padding, read only to learn the command's exit status
//! (a tar that could not read a file exits non-zero and says so), at most 1 MiB of it and
//! for at most 10 s; a container that keeps sending or keeps the stream open past that is
//! cut off, and the copy, complete, succeeds (logged).
//!
//! Streaming, bounded memory: the archive is never held whole on either side; the buffers
//! are the exec session's ([`PIPE_CAPACITY`](super::PIPE_CAPACITY)) and a block of 64 KiB.
//! The container's stderr is kept up to 64 KiB (for the error message or
//! [`CopyReport::stderr`]).
//!
//! **Resume** ([`CopyOptions::retries`], kubectl's `--retries`): a copy from a container
//! whose stream drops part way (a kubelet or kube-apiserver restart, an idle proxy) runs
//! the archive again and skips what already arrived — with retries on, the command is
//! `sh -c "tar cf - '<path>' | tail -c+<n>"`, so the container needs `sh` and `tail` too,
//! and the files must not change in between (tar's output must be the same twice). Retries
//! back off with jitter (0.2 s doubling to 5 s); only a dropped stream is retried, never a
//! command that ran and failed.
//!
//! Failures name what failed: the session ([`CopyError::Exec`]: pod or container not
//! found, ...), no `tar` in the image ([`CopyError::ToolMissing`], with kubectl's hint), the
//! command's non-zero exit with its stderr ([`CopyError::Command`]), a bad archive
//! ([`CopyError::Archive`]), a local file ([`CopyError::Local`]).

mod extract;
mod pack;
mod paths;
mod remote;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use extract::extract_archive;

use super::channels::ExitStatus;
use super::tar::TarError;
use crate::client::Client;

/// How to copy. The default: the pod's only container, no retries, modes kept, a symlink
/// escaping the destination refused, a 2-minute bound on a silent server.
#[derive(Clone, Debug)]
pub struct CopyOptions {
    container: Option<String>,
    retries: u32,
    no_preserve: bool,
    skip_escaping_symlinks: bool,
    idle_timeout: Duration,
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            container: None,
            retries: 0,
            no_preserve: false,
            skip_escaping_symlinks: false,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

impl CopyOptions {
    /// The default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// The container (needed when the pod has several), kubectl's `-c`.
    pub fn container(mut self, name: impl Into<String>) -> Self {
        self.container = Some(name.into());
        self
    }

    /// Copying from a container: how many times a dropped stream is resumed (kubectl's
    /// `--retries`; default 0). See the [module docs](self) for what it needs.
    pub fn retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// Copying into a container: its tar does not restore the archived modes and owners
    /// (kubectl's `--no-preserve`: `tar --no-same-permissions --no-same-owner`).
    pub fn no_preserve(mut self, on: bool) -> Self {
        self.no_preserve = on;
        self
    }

    /// Copying from a container: a symlink whose target leaves the destination is skipped
    /// (and listed in [`CopyReport::skipped`]) instead of failing the copy. Useful to copy
    /// a directory such as `/etc`, whose symlinks point to absolute paths.
    pub fn skip_escaping_symlinks(mut self, on: bool) -> Self {
        self.skip_escaping_symlinks = on;
        self
    }

    /// Ends the copy with an error when the server sends nothing for this long (default
    /// 2 minutes).
    pub fn idle_timeout(mut self, d: Duration) -> Self {
        self.idle_timeout = d;
        self
    }
}

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CopyReport {
    /// Regular files copied.
    pub files: u64,
    /// Directories created (or archived).
    pub directories: u64,
    /// Symbolic links created (or archived).
    pub symlinks: u64,
    /// Hard links created.
    pub hard_links: u64,
    /// Bytes of file data copied.
    pub bytes: u64,
    /// Bytes of the tar stream sent or received (headers and padding included; with
    /// retries, what was kept).
    pub archive_bytes: u64,
    /// How many times a dropped stream was resumed.
    pub retries: u32,
    /// Entries not copied, each with why (a device, a FIFO, an escaping symlink when told
    /// to skip them); at most 100 are listed, then a count.
    pub skipped: Vec<String>,
    /// What the container's tar wrote on stderr (its warnings; "Removing leading `/' from
    /// member names" left out), at most 64 KiB.
    pub stderr: String,
}

/// Why a copy failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CopyError {
    /// The exec session failed: the pod or container does not exist, the connection
    /// failed or went silent past the idle timeout, the copy was cancelled, ...
    Exec(crate::Error),
    /// The container has no `tar` (or, with retries, no `sh` or `tail`).
    ToolMissing {
        /// `namespace/pod`.
        pod: String,
        /// The program missing.
        tool: String,
        /// What the container said.
        message: String,
    },
    /// The container's command ran and failed (`tar: /x: Cannot stat: No such file or
    /// directory`, a read-only destination, ...).
    Command {
        /// `namespace/pod`.
        pod: String,
        /// The command, as run.
        command: String,
        /// How it ended.
        status: ExitStatus,
        /// Its stderr (at most 64 KiB).
        stderr: String,
    },
    /// The container's archive is not a valid tar stream.
    Archive(TarError),
    /// An archived name does not start with the path asked for: kubectl's "tar contents
    /// corrupted".
    Corrupted {
        /// The name.
        entry: String,
        /// The path it should start with (leading `/` dropped).
        expected_prefix: String,
    },
    /// An archived name would be written outside the destination (a `..` component, an
    /// absolute name).
    PathEscape {
        /// The name.
        entry: String,
    },
    /// A symlink whose target leaves the destination.
    SymlinkEscape {
        /// The link's name.
        entry: String,
        /// Its target.
        target: String,
    },
    /// A hard link whose target is not a regular file this copy extracted (a symlink, a
    /// directory, nothing, the link itself, a file that was in the destination before):
    /// linking it could give a name inside the destination to something that points
    /// outside, or a user's own file a second name the container chose.
    HardLinkTarget {
        /// The link's name.
        entry: String,
        /// Its target, as archived.
        target: String,
    },
    /// An archived name below a symlink: writing it would follow the link.
    ThroughSymlink {
        /// The name.
        entry: String,
        /// The local symlink on its way.
        symlink: PathBuf,
    },
    /// The local source does not exist (kubectl: "... doesn't exist in local filesystem").
    LocalMissing(PathBuf),
    /// A local file or directory could not be read or written.
    Local {
        /// The path.
        path: PathBuf,
        /// What was being done: "creating", "writing", "reading", ...
        action: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// A path argument that cannot be used (empty, ...).
    InvalidPath(String),
}

impl std::fmt::Display for CopyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyError::Exec(e) => write!(f, "copy: {e}"),
            CopyError::ToolMissing { pod, tool, message } if tool == "tar" => write!(
                f,
                "copy: pod {pod} has no `tar`: copying requires that the 'tar' binary is present in your container image ({message})"
            ),
            CopyError::ToolMissing { pod, tool, message } => write!(
                f,
                "copy: pod {pod} has no `{tool}`: copying with retries requires `sh`, `tar` and `tail` in your container image ({message})"
            ),
            CopyError::Command {
                pod,
                command,
                status,
                stderr,
            } => {
                write!(f, "copy: `{command}` in pod {pod} ")?;
                match status {
                    ExitStatus::Code(c) => write!(f, "exited with code {c}")?,
                    ExitStatus::Failure(st) => write!(f, "failed: {}", st.message)?,
                    ExitStatus::Success => write!(f, "succeeded")?,
                }
                let stderr = stderr.trim();
                if !stderr.is_empty() {
                    write!(f, ": {stderr}")?;
                }
                Ok(())
            }
            CopyError::Archive(e) => write!(f, "copy: {e}"),
            CopyError::Corrupted {
                entry,
                expected_prefix,
            } => write!(
                f,
                "copy: tar contents corrupted: {entry:?} does not start with {expected_prefix:?}"
            ),
            CopyError::PathEscape { entry } => write!(
                f,
                "copy: refusing {entry:?}: it would be written outside the destination"
            ),
            CopyError::SymlinkEscape { entry, target } => write!(
                f,
                "copy: refusing symlink {entry:?} -> {target:?}: its target is outside the destination"
            ),
            CopyError::HardLinkTarget { entry, target } => write!(
                f,
                "copy: refusing hard link {entry:?} -> {target:?}: its target is not a regular file this copy extracted"
            ),
            CopyError::ThroughSymlink { entry, symlink } => write!(
                f,
                "copy: refusing {entry:?}: it would be written through the symlink {}",
                symlink.display()
            ),
            CopyError::LocalMissing(p) => {
                write!(f, "{} doesn't exist in local filesystem", p.display())
            }
            CopyError::Local {
                path,
                action,
                source,
            } => write!(f, "copy: {action} {}: {source}", path.display()),
            CopyError::InvalidPath(m) => write!(f, "copy: {m}"),
        }
    }
}

impl std::error::Error for CopyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CopyError::Exec(e) => Some(e),
            CopyError::Archive(e) => Some(e),
            CopyError::Local { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<crate::Error> for CopyError {
    fn from(e: crate::Error) -> Self {
        CopyError::Exec(e)
    }
}

impl Client {
    /// Copies `remote` (a file or a directory, recursively) out of a container of `pod`
    /// to `local` (`kubectl cp <ns>/<pod>:<remote> <local>`); see the [module
    /// docs](self) for where things land and what is refused.
    ///
    /// ```
    /// # use kube_informer::testing::{ApiServer, ContainerFiles};
    /// # let server = ApiServer::start();
    /// # server.create_pod("lab", "web", &["app"]).unwrap();
    /// # let files = ContainerFiles::new();
    /// # files.serve(server.runtime());
    /// # files.write_file("/srv/site/index.html", 0o644, b"<h1>hi</h1>\n");
    /// # files.write_file("/srv/site/css/main.css", 0o644, b"h1 {}\n");
    /// use kube_informer::pod::CopyOptions;
    ///
    /// let client = kube_informer::Client::new(server.client_config())?;
    /// let local = tempfile::tempdir()?;
    /// let report = client.copy_from_pod(
    ///     "lab",
    ///     "web",
    ///     "/srv/site",
    ///     local.path().join("site"),
    ///     &CopyOptions::new(),
    /// )?;
    /// assert_eq!((report.files, report.bytes), (2, 18));
    /// let page = std::fs::read_to_string(local.path().join("site/index.html"))?;
    /// assert_eq!(page, "<h1>hi</h1>\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn copy_from_pod(
        &self,
        namespace: &str,
        pod: &str,
        remote: &str,
        local: impl AsRef<Path>,
        options: &CopyOptions,
    ) -> Result<CopyReport, CopyError> {
        remote::copy_from(self, namespace, pod, remote, local.as_ref(), options)
    }

    /// Copies `local` (a file, a symlink or a directory, recursively) into a container of
    /// `pod` at `remote` (`kubectl cp <local> <ns>/<pod>:<remote>`): into `remote` under
    /// its own name when `remote` is a directory there, else as `remote`.
    ///
    /// ```
    /// # use kube_informer::testing::{ApiServer, ContainerFiles};
    /// # let server = ApiServer::start();
    /// # server.create_pod("lab", "web", &["app"]).unwrap();
    /// # let files = ContainerFiles::new();
    /// # files.serve(server.runtime());
    /// # files.create_dir("/tmp", 0o777);
    /// use kube_informer::pod::CopyOptions;
    ///
    /// let client = kube_informer::Client::new(server.client_config())?;
    /// let local = tempfile::tempdir()?;
    /// std::fs::write(local.path().join("app.conf"), "port = 80\n")?;
    /// let report =
    ///     client.copy_to_pod("lab", "web", local.path().join("app.conf"), "/tmp", &CopyOptions::new())?;
    /// assert_eq!(report.bytes, 10);
    /// assert_eq!(files.read_file("/tmp/app.conf").as_deref(), Some(&b"port = 80\n"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn copy_to_pod(
        &self,
        namespace: &str,
        pod: &str,
        local: impl AsRef<Path>,
        remote: &str,
        options: &CopyOptions,
    ) -> Result<CopyReport, CopyError> {
        pack::copy_to(self, namespace, pod, local.as_ref(), remote, options)
    }
}
