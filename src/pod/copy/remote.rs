//! Copying out of a container: the container's `tar cf -` as a byte stream that resumes
//! after a drop (kubectl's `--retries`), extracted as it arrives.

use std::io::{self, Read};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use super::extract::Extractor;
use super::paths::archive_prefix;
use super::{CopyError, CopyOptions, CopyReport};
use crate::cache::Backoff;
use crate::client::Client;
use crate::error::Error;
use crate::pod::channels::ExitStatus;
use crate::pod::exec::ExecParams;
use crate::pod::process::{Output, Process};
use crate::pod::tar::TarReader;

/// The container's stderr kept, per session.
pub(super) const MAX_STDERR: usize = 64 * 1024;

pub(super) fn copy_from(
    client: &Client,
    namespace: &str,
    pod: &str,
    remote: &str,
    local: &Path,
    options: &CopyOptions,
) -> Result<CopyReport, CopyError> {
    if remote.is_empty() || local.as_os_str().is_empty() {
        return Err(CopyError::InvalidPath("filepath can not be empty".into()));
    }
    let prefix = archive_prefix(remote);
    let mut stream = RemoteTar {
        client,
        namespace,
        pod,
        remote,
        options,
        session: None,
        bytes: 0,
        retries: 0,
        backoff: Backoff::new(
            Duration::from_millis(200),
            Duration::from_secs(5),
            Duration::from_secs(60),
        ),
        failure: None,
        stderr: Vec::new(),
        done: false,
        past_end: false,
    };
    stream.open(1)?;
    let mut report = CopyReport::default();
    let extracted = {
        let mut tar = TarReader::new(&mut stream);
        Extractor {
            dest: local,
            prefix: &prefix,
            skip_escaping_symlinks: options.skip_escaping_symlinks,
            report: &mut report,
            skipped_unlisted: 0,
            made: Default::default(),
        }
        .run(&mut tar)
    };
    if let Err(e) = extracted {
        // A failed session or command explains a broken archive better than the archive.
        return Err(match (stream.failure.take(), e) {
            (Some(f), CopyError::Archive(_)) => f,
            (_, e) => e,
        });
    }
    after_the_end(&mut stream)?;
    report.archive_bytes = stream.bytes;
    report.retries = stream.retries;
    report.stderr = tar_warnings(&stream.stderr);
    Ok(report)
}

/// What follows the end-of-archive marker and the command's exit status, within bounds.
///
/// kubectl stops reading at the marker and never learns how the command ended. We read on
/// for the exit status (tar exits non-zero for a file it could not read, and says so on
/// stderr), but no further than a container deserves: past [`MAX_TRAILER`] bytes (tar pads
/// its last record with zeros, 10 KiB by default, and nothing more), or when the session
/// does not end within [`AFTER_END_GRACE`], the session is cancelled and the copy is what
/// kubectl would make of it, a success (logged). A stream that drops after the marker is
/// not resumed (nothing is missing): the copy succeeds too. An exit status that came is
/// judged as during the copy.
fn after_the_end(stream: &mut RemoteTar<'_>) -> Result<(), CopyError> {
    stream.past_end = true;
    let Some(canceller) = stream.session.as_ref().map(|s| s.process.canceller()) else {
        // The session ended with the archive: its status is judged already.
        return match stream.failure.take() {
            Some(f) => Err(f),
            None => Ok(()),
        };
    };
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let timer = std::thread::Builder::new()
        .name(crate::thread_name::thread_name(stream.pod, "end"))
        .spawn(move || {
            if rx.recv_timeout(AFTER_END_GRACE) == Err(crossbeam_channel::RecvTimeoutError::Timeout)
            {
                canceller.cancel();
            }
        })
        .map_err(|e| CopyError::Exec(io_error(stream.pod, e)))?;
    let mut sink = [0u8; 8 * 1024];
    let mut trailer = 0u64;
    let ended = loop {
        match stream.read(&mut sink) {
            Ok(0) => break Ok(true),
            Ok(n) => {
                trailer += n as u64;
                if trailer > MAX_TRAILER {
                    break Ok(false);
                }
            }
            Err(e) => break Err(e),
        }
    };
    drop(tx);
    let _ = timer.join();
    let unknown = |why: &str| {
        log::warn!(
            "copy from {}/{}: the archive is complete, but {why}; its exit status is not known",
            stream.namespace,
            stream.pod
        );
        Ok(())
    };
    match ended {
        Ok(true) => Ok(()),
        Ok(false) => {
            // Dropping the session (with `stream`) cancels it.
            unknown("the container sent more than 1 MiB after it")
        }
        Err(e) => match stream.failure.take() {
            Some(CopyError::Exec(
                Error::Io { .. } | Error::Transport { .. } | Error::Cancelled { .. },
            )) => unknown("the session did not end cleanly after it"),
            Some(f) => Err(f),
            None => Err(CopyError::Exec(io_error(stream.pod, e))),
        },
    }
}

/// Bytes read after the end-of-archive marker, at most (see [`after_the_end`]).
const MAX_TRAILER: u64 = 1024 * 1024;

/// How long the session may take to end after the end-of-archive marker.
const AFTER_END_GRACE: Duration = Duration::from_secs(10);

fn io_error(pod: &str, e: io::Error) -> Error {
    Error::Io {
        request: format!("copy from {pod}"),
        source: e,
    }
}

/// tar's stderr without the notes about names it shortened.
pub(super) fn tar_warnings(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| !l.contains("Removing leading `"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Collects a session's stderr (the first [`MAX_STDERR`] bytes; the rest is read and
/// dropped) on a thread of its own.
pub(super) fn collect(pod: &str, out: Option<Output>) -> Result<JoinHandle<Vec<u8>>, Error> {
    std::thread::Builder::new()
        .name(crate::thread_name::thread_name(pod, "cp-err"))
        .spawn(move || {
            let mut kept = Vec::new();
            let Some(mut out) = out else { return kept };
            let mut buf = [0u8; 8 * 1024];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = MAX_STDERR - kept.len();
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            kept
        })
        .map_err(|e| io_error(pod, e))
}

/// Reads what a failed command said into a [`CopyError`]: no such program
/// ([`CopyError::ToolMissing`]), or its exit with its stderr.
pub(super) fn command_failure(
    namespace: &str,
    pod: &str,
    argv: &[String],
    status: ExitStatus,
    stderr: &[u8],
) -> CopyError {
    let pod = format!("{namespace}/{pod}");
    let text = tar_warnings(stderr);
    let program = argv.first().cloned().unwrap_or_default();
    if let ExitStatus::Failure(st) = &status {
        let m = st.message.as_str();
        if m.contains("executable file not found") || m.contains("no such file or directory") {
            return CopyError::ToolMissing {
                pod,
                tool: program,
                message: st.message.clone(),
            };
        }
    }
    // `sh -c "tar ... | tail ..."`: the shell says "tar: not found" and exits 127.
    if program == "sh" && status.code() == Some(127) {
        let tool = if text.contains("tail") && !text.contains("tar") {
            "tail"
        } else {
            "tar"
        };
        return CopyError::ToolMissing {
            pod,
            tool: tool.into(),
            message: text.trim().to_owned(),
        };
    }
    CopyError::Command {
        pod,
        command: argv.join(" "),
        status,
        stderr: text,
    }
}

struct Session {
    process: Process,
    stdout: Output,
    stderr: JoinHandle<Vec<u8>>,
    argv: Vec<String>,
}

/// The archive's bytes across sessions: a dropped session is replaced by one that skips
/// what already arrived.
struct RemoteTar<'a> {
    client: &'a Client,
    namespace: &'a str,
    pod: &'a str,
    remote: &'a str,
    options: &'a CopyOptions,
    session: Option<Session>,
    /// Archive bytes received (and kept).
    bytes: u64,
    retries: u32,
    backoff: Backoff,
    /// Why the stream ended badly, once it did.
    failure: Option<CopyError>,
    /// The last session's stderr.
    stderr: Vec<u8>,
    done: bool,
    /// The end-of-archive marker was read: a dropped stream is not resumed.
    past_end: bool,
}

impl RemoteTar<'_> {
    /// kubectl's commands: `tar cf - <path>`, or with retries
    /// `sh -c "tar cf - '<path>' | tail -c+<from>"` (`tail -c+1` skips nothing).
    fn command(&self, from: u64) -> Vec<String> {
        if self.options.retries == 0 {
            return ["tar", "cf", "-", self.remote].map(String::from).to_vec();
        }
        let quoted = self.remote.replace('\'', r"'\''");
        vec![
            "sh".into(),
            "-c".into(),
            format!("tar cf - '{quoted}' | tail -c+{from}"),
        ]
    }

    fn open(&mut self, from: u64) -> Result<(), CopyError> {
        let argv = self.command(from);
        let mut params = ExecParams::new(argv.clone()).idle_timeout(self.options.idle_timeout);
        if let Some(c) = &self.options.container {
            params = params.container(c.clone());
        }
        let mut process = self.client.exec(self.namespace, self.pod, &params)?;
        let stdout = process.stdout().ok_or_else(|| {
            CopyError::Exec(io_error(
                self.pod,
                io::Error::other("the session has no stdout"),
            ))
        })?;
        let stderr = collect(self.pod, process.stderr())?;
        self.session = Some(Session {
            process,
            stdout,
            stderr,
            argv,
        });
        Ok(())
    }

    /// Ends the session: its status, its stderr kept.
    fn end_session(&mut self) -> Option<(Vec<String>, Result<ExitStatus, Error>)> {
        let s = self.session.take()?;
        drop(s.stdout);
        let status = s.process.wait();
        self.stderr = s.stderr.join().unwrap_or_default();
        Some((s.argv, status))
    }

    /// After a session ended with `error`: resume when retries are left and the error is a
    /// dropped stream, else remember the failure.
    fn resume_or_fail(&mut self, mut error: Error) {
        loop {
            let dropped = matches!(error, Error::Io { .. } | Error::Transport { .. });
            if !dropped || self.past_end || self.retries >= self.options.retries {
                self.failure = Some(CopyError::Exec(error));
                return;
            }
            std::thread::sleep(self.backoff.next_delay());
            self.retries += 1;
            log::info!(
                "copy from {}/{}: resuming at {} bytes, retry {}/{}",
                self.namespace,
                self.pod,
                self.bytes,
                self.retries,
                self.options.retries
            );
            match self.open(self.bytes + 1) {
                Ok(()) => return,
                Err(CopyError::Exec(e)) => error = e,
                Err(other) => {
                    self.failure = Some(other);
                    return;
                }
            }
        }
    }

    fn failed(&self) -> io::Error {
        let m = self
            .failure
            .as_ref()
            .map_or_else(|| "the copy failed".to_string(), |f| f.to_string());
        io::Error::other(m)
    }
}

impl Read for RemoteTar<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.done {
                return Ok(0);
            }
            if self.failure.is_some() {
                return Err(self.failed());
            }
            let Some(s) = self.session.as_mut() else {
                return Err(self.failed());
            };
            let read = s.stdout.read(buf);
            match read {
                Ok(n) if n > 0 => {
                    self.bytes += n as u64;
                    return Ok(n);
                }
                _ => {
                    let Some((argv, status)) = self.end_session() else {
                        continue;
                    };
                    match (status, read) {
                        (Ok(ExitStatus::Success), Ok(_)) => self.done = true,
                        (Ok(ExitStatus::Success), Err(e)) => {
                            self.resume_or_fail(io_error(self.pod, e))
                        }
                        (Ok(status), _) => {
                            self.failure = Some(command_failure(
                                self.namespace,
                                self.pod,
                                &argv,
                                status,
                                &self.stderr,
                            ))
                        }
                        (Err(e), _) => self.resume_or_fail(e),
                    }
                }
            }
        }
    }
}

impl Drop for RemoteTar<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            drop(s.stdout);
            // Dropping the process cancels the session; its stderr then ends.
            drop(s.process);
            let _ = s.stderr.join();
        }
    }
}
