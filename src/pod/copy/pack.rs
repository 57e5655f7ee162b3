//! Copying into a container: the local tree archived as it is read, straight into the
//! stdin of the container's `tar -xmf - -C <dir>`.

use std::fs;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::paths::{base, clean, dir};
use super::remote::{collect, command_failure, tar_warnings};
use super::{CopyError, CopyOptions, CopyReport};
use crate::client::Client;
use crate::error::Error;
use crate::pod::channels::ExitStatus;
use crate::pod::exec::ExecParams;
use crate::pod::tar::TarWriter;

/// The `test -d` probe's bound, as kubectl's.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) fn copy_to(
    client: &Client,
    namespace: &str,
    pod: &str,
    local: &Path,
    remote: &str,
    options: &CopyOptions,
) -> Result<CopyReport, CopyError> {
    if remote.is_empty() || local.as_os_str().is_empty() {
        return Err(CopyError::InvalidPath("filepath can not be empty".into()));
    }
    if fs::symlink_metadata(local).is_err() {
        return Err(CopyError::LocalMissing(local.to_owned()));
    }
    let local_base = local
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| base(&local.to_string_lossy()));
    let with_container = |p: ExecParams| match &options.container {
        Some(c) => p.container(c.clone()),
        None => p,
    };
    // A directory there receives the source under its own name.
    let mut dest = clean(remote);
    let probe = with_container(ExecParams::new(["test", "-d", dest.as_str()]))
        .idle_timeout(options.idle_timeout.min(PROBE_TIMEOUT));
    match client.exec_output(namespace, pod, &probe, &[]) {
        Ok(out) if out.status.success() => dest = clean(&format!("{dest}/{local_base}")),
        Ok(_) => {}
        Err(e @ (Error::Api { .. } | Error::Pod { .. } | Error::Cancelled { .. })) => {
            return Err(CopyError::Exec(e))
        }
        // No `test` there, a silent server: as kubectl, copy to the path as given.
        Err(_) => {}
    }
    let (dest_dir, dest_base) = (dir(&dest), base(&dest));
    let mut argv: Vec<String> = vec!["tar".into()];
    if options.no_preserve {
        argv.extend(["--no-same-permissions".into(), "--no-same-owner".into()]);
    }
    argv.extend(["-xmf", "-", "-C", dest_dir.as_str()].map(String::from));

    let params = with_container(ExecParams::new(argv.clone()))
        .stdin(true)
        .idle_timeout(options.idle_timeout);
    let mut process = client.exec(namespace, pod, &params)?;
    let stdin = process.stdin();
    let stdout = collect(pod, process.stdout())?;
    let stderr = collect(pod, process.stderr())?;
    let mut report = CopyReport::default();
    let packed = match stdin {
        Some(stdin) => {
            let mut tar = TarWriter::new(BufWriter::with_capacity(32 * 1024, stdin));
            let packed = pack(&mut tar, local, &dest_base, &mut report);
            report.archive_bytes = tar.written();
            packed.and_then(|()| {
                tar.finish().map_err(Packing::Stream)?;
                report.archive_bytes = tar.written();
                let mut stdin = tar
                    .into_inner()
                    .into_inner()
                    .map_err(|e| Packing::Stream(e.into_error()))?;
                stdin.close().map_err(Packing::Stream)
            })
        }
        None => Err(Packing::Stream(io::Error::other(
            "the session has no stdin",
        ))),
    };
    let status = process.wait();
    let _ = stdout.join();
    let err = stderr.join().unwrap_or_default();
    // The command's end explains a broken stdin better than the write error.
    match status {
        Ok(ExitStatus::Success) => {}
        Ok(status) => return Err(command_failure(namespace, pod, &argv, status, &err)),
        Err(e) => return Err(CopyError::Exec(e)),
    }
    match packed {
        Ok(()) => {}
        Err(Packing::Local(e)) => return Err(e),
        Err(Packing::Stream(e)) => {
            return Err(CopyError::Exec(Error::Io {
                request: format!("copy to {pod}"),
                source: e,
            }))
        }
    }
    report.stderr = tar_warnings(&err);
    Ok(report)
}

enum Packing {
    /// Reading the local tree failed.
    Local(CopyError),
    /// Writing to the session failed (the command ended early, the connection failed).
    Stream(io::Error),
}

/// A local file read for the archive: its errors are told apart from the stream's.
struct Source<'a> {
    file: fs::File,
    failed: &'a mut Option<io::Error>,
}

impl Read for Source<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf).inspect_err(|e| {
            *self.failed = Some(io::Error::new(e.kind(), e.to_string()));
        })
    }
}

fn pack<W: Write>(
    tar: &mut TarWriter<W>,
    local: &Path,
    name: &str,
    report: &mut CopyReport,
) -> Result<(), Packing> {
    let reading = |path: &Path| {
        let path = path.to_owned();
        move |source| {
            Packing::Local(CopyError::Local {
                path,
                action: "reading",
                source,
            })
        }
    };
    let mut stack: Vec<(PathBuf, String)> = vec![(local.to_owned(), name.to_owned())];
    while let Some((path, name)) = stack.pop() {
        let meta = fs::symlink_metadata(&path).map_err(reading(&path))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64);
        let kind = meta.file_type();
        if kind.is_dir() {
            tar.append_dir(&name, mode(&meta, 0o755), mtime)
                .map_err(Packing::Stream)?;
            report.directories += 1;
            let mut children = Vec::new();
            for child in fs::read_dir(&path).map_err(reading(&path))? {
                let child = child.map_err(reading(&path))?;
                let child_name = utf8(child.file_name(), &path)?;
                children.push((child.path(), format!("{name}/{child_name}")));
            }
            children.sort();
            stack.extend(children.into_iter().rev());
        } else if kind.is_symlink() {
            let target = fs::read_link(&path).map_err(reading(&path))?;
            let target = utf8(target.into_os_string(), &path)?;
            tar.append_symlink(&name, &target, mtime)
                .map_err(Packing::Stream)?;
            report.symlinks += 1;
        } else if kind.is_file() {
            let file = fs::File::open(&path).map_err(reading(&path))?;
            let mut failed = None;
            let size = meta.len();
            let written = tar.append_file(
                &name,
                mode(&meta, 0o644),
                mtime,
                size,
                Source {
                    file,
                    failed: &mut failed,
                },
            );
            match (written, failed) {
                (Ok(()), _) => {}
                (Err(_), Some(e)) => return Err(reading(&path)(e)),
                (Err(e), None) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Err(reading(&path)(e))
                }
                (Err(e), None) => return Err(Packing::Stream(e)),
            }
            report.files += 1;
            report.bytes += size;
        } else {
            report.skipped.push(format!(
                "{}: not a file, directory or link, not copied",
                path.display()
            ));
        }
    }
    Ok(())
}

fn utf8(name: std::ffi::OsString, at: &Path) -> Result<String, Packing> {
    name.into_string().map_err(|n| {
        Packing::Local(CopyError::Local {
            path: at.join(n),
            action: "archiving",
            source: io::Error::new(io::ErrorKind::InvalidData, "a name that is not UTF-8"),
        })
    })
}

#[cfg(unix)]
fn mode(meta: &fs::Metadata, _default: u32) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn mode(meta: &fs::Metadata, default: u32) -> u32 {
    if meta.permissions().readonly() {
        default & 0o555
    } else {
        default
    }
}
