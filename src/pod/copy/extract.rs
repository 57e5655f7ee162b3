//! Extracting a container's archive under a local destination, refusing anything that
//! would land outside it (see the [module docs](super) for the rules).

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::paths::{base, relative_components, target_inside};
use super::{CopyError, CopyReport};
use crate::pod::tar::{Entry, EntryKind, TarReader};

/// Entries listed in [`CopyReport::skipped`] before only a count is kept.
const MAX_SKIPPED_LISTED: usize = 100;

pub(crate) struct Extractor<'a> {
    pub dest: &'a Path,
    /// What every archived name starts with (see `paths::archive_prefix`).
    pub prefix: &'a str,
    pub skip_escaping_symlinks: bool,
    pub report: &'a mut CopyReport,
    pub skipped_unlisted: u64,
}

fn local<'p>(path: &'p Path, action: &'static str) -> impl FnOnce(io::Error) -> CopyError + 'p {
    move |source| CopyError::Local {
        path: path.to_owned(),
        action,
        source,
    }
}

impl Extractor<'_> {
    /// Extracts every entry until the end-of-archive marker.
    pub fn run<R: Read>(&mut self, tar: &mut TarReader<R>) -> Result<(), CopyError> {
        let mut buf = vec![0u8; 64 * 1024];
        while let Some(entry) = tar.next_entry().map_err(CopyError::Archive)? {
            self.entry(tar, &entry, &mut buf)?;
        }
        if self.skipped_unlisted > 0 {
            self.report
                .skipped
                .push(format!("... and {} more", self.skipped_unlisted));
        }
        Ok(())
    }

    fn skip(&mut self, why: String) {
        if self.report.skipped.len() < MAX_SKIPPED_LISTED {
            self.report.skipped.push(why);
        } else {
            self.skipped_unlisted += 1;
        }
    }

    /// The archived name below the prefix, as components under the destination.
    fn components<'n>(&self, name: &'n str) -> Result<Vec<&'n str>, CopyError> {
        let trimmed = if name.len() > 1 {
            name.trim_end_matches('/')
        } else {
            name
        };
        let rest = if self.prefix.is_empty() {
            Some(trimmed)
        } else if trimmed == self.prefix {
            Some("")
        } else {
            trimmed
                .strip_prefix(self.prefix)
                .and_then(|r| r.strip_prefix('/'))
        };
        let rest = rest.ok_or_else(|| CopyError::Corrupted {
            entry: name.to_owned(),
            expected_prefix: self.prefix.to_owned(),
        })?;
        relative_components(rest).ok_or_else(|| CopyError::PathEscape {
            entry: name.to_owned(),
        })
    }

    /// Where components land: under the destination, or the destination itself for the
    /// copied path (a file into an existing directory: under its own name there).
    fn local_path(&self, comps: &[&str], kind: EntryKind) -> PathBuf {
        if comps.is_empty() {
            if kind != EntryKind::Directory && !self.prefix.is_empty() && self.dest.is_dir() {
                return self.dest.join(base(self.prefix));
            }
            return self.dest.to_owned();
        }
        let mut p = self.dest.to_owned();
        p.extend(comps);
        p
    }

    /// Refuses a path whose directories below the destination include a symlink.
    fn no_symlink_on_the_way(&self, entry: &str, parents: &[&str]) -> Result<(), CopyError> {
        let mut p = self.dest.to_owned();
        for c in parents {
            p.push(c);
            match fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(CopyError::ThroughSymlink {
                        entry: entry.to_owned(),
                        symlink: p,
                    })
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(local(&p, "reading")(e)),
            }
        }
        Ok(())
    }

    fn entry<R: Read>(
        &mut self,
        tar: &mut TarReader<R>,
        entry: &Entry,
        buf: &mut [u8],
    ) -> Result<(), CopyError> {
        let comps = self.components(&entry.path)?;
        let parents = &comps[..comps.len().saturating_sub(1)];
        self.no_symlink_on_the_way(&entry.path, parents)?;
        let path = self.local_path(&comps, entry.kind);
        if let EntryKind::Other(t) = entry.kind {
            self.skip(format!(
                "{}: not a file, directory or link (tar type {:?}), not copied",
                path.display(),
                t as char
            ));
            return Ok(());
        }
        if entry.kind == EntryKind::Symlink && !target_inside(parents, &entry.link) {
            if self.skip_escaping_symlinks {
                self.skip(format!(
                    "{}: symlink to {:?}, outside the destination, not copied",
                    path.display(),
                    entry.link
                ));
                return Ok(());
            }
            return Err(CopyError::SymlinkEscape {
                entry: entry.path.clone(),
                target: entry.link.clone(),
            });
        }
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() {
                fs::create_dir_all(parent).map_err(local(parent, "creating"))?;
            }
        }
        // What is in the way is replaced, never followed nor written through: a symlink or a
        // file (maybe a hard link to another) is removed first.
        let existing = fs::symlink_metadata(&path).ok();
        let is_link = existing
            .as_ref()
            .is_some_and(|m| m.file_type().is_symlink());
        let is_dir = existing.as_ref().is_some_and(|m| m.is_dir());
        if is_link || (existing.is_some() && !is_dir) {
            fs::remove_file(&path).map_err(local(&path, "replacing"))?;
        }
        match entry.kind {
            EntryKind::Directory => {
                fs::create_dir_all(&path).map_err(local(&path, "creating"))?;
                set_mode(&path, entry.mode | 0o700)?;
                self.report.directories += 1;
            }
            EntryKind::File => {
                let mut f = fs::File::create(&path).map_err(local(&path, "creating"))?;
                loop {
                    let n = tar.read_data(buf).map_err(CopyError::Archive)?;
                    if n == 0 {
                        break;
                    }
                    f.write_all(&buf[..n]).map_err(local(&path, "writing"))?;
                    self.report.bytes += n as u64;
                }
                if let Ok(secs) = u64::try_from(entry.mtime) {
                    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
                    f.set_modified(t)
                        .map_err(local(&path, "setting the time of"))?;
                }
                drop(f);
                set_mode(&path, entry.mode)?;
                self.report.files += 1;
            }
            EntryKind::Symlink => {
                symlink(&entry.link, &path)?;
                self.report.symlinks += 1;
            }
            EntryKind::HardLink => {
                let to = self.components(&entry.link)?;
                self.no_symlink_on_the_way(&entry.link, &to[..to.len().saturating_sub(1)])?;
                let to_path = self.local_path(&to, EntryKind::File);
                fs::hard_link(&to_path, &path).map_err(local(&path, "linking"))?;
                self.report.hard_links += 1;
            }
            EntryKind::Other(_) => {}
        }
        Ok(())
    }
}

/// The permission bits, never set-user-ID, set-group-ID or sticky.
fn set_mode(path: &Path, mode: u32) -> Result<(), CopyError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o777))
            .map_err(local(path, "setting the mode of"))?;
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

fn symlink(target: &str, path: &Path) -> Result<(), CopyError> {
    #[cfg(unix)]
    return std::os::unix::fs::symlink(target, path).map_err(local(path, "creating the symlink"));
    #[cfg(not(unix))]
    {
        let _ = target;
        Err(local(path, "creating the symlink")(io::Error::new(
            io::ErrorKind::Unsupported,
            "symlinks are only created on Unix",
        )))
    }
}
