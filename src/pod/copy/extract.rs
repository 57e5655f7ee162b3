//! Extracting a container's archive under a local destination, refusing anything that
//! would land outside it (see the [module docs](super) for the rules).

use std::collections::HashSet;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::paths::{archive_prefix, base, relative_components, target_inside};
use super::{CopyError, CopyOptions, CopyReport};
use crate::pod::tar::{Entry, EntryKind, TarReader};

/// Entries listed in [`CopyReport::skipped`] before only a count is kept.
const MAX_SKIPPED_LISTED: usize = 100;

/// Files of this copy remembered as targets for its hard links (16 bytes each on Unix):
/// past this many, a hard link to a later file is refused.
const MAX_FILES_REMEMBERED: usize = 1 << 20;

/// Symlinks looked through to judge where a new symlink leads (Linux's `MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

/// Extracts a tar stream under `local` exactly as [`Client::copy_from_pod`] extracts the
/// container's `tar cf - <remote>`: every name must start with `remote` (its leading `/`
/// dropped), what follows lands under `local`, and nothing is created, written, linked or
/// followed outside `local` (see the [module docs](super) for what is refused). For an
/// archive that came some other way (a saved `kubectl exec ... tar cf -`, a test).
///
/// ```
/// use kube_informer::pod::copy::{extract_archive, CopyOptions};
/// use kube_informer::pod::tar::TarWriter;
///
/// let mut w = TarWriter::new(Vec::new());
/// w.append_dir("srv/site", 0o755, 0)?;
/// w.append_file("srv/site/index.html", 0o644, 0, 3, &b"hi\n"[..])?;
/// w.append_symlink("srv/site/escape", "../../etc/passwd", 0)?;
/// w.finish()?;
/// let archive = w.into_inner();
///
/// let local = tempfile::tempdir()?;
/// let site = local.path().join("site");
/// let options = CopyOptions::new().skip_escaping_symlinks(true);
/// let report = extract_archive(&archive[..], "/srv/site", &site, &options)?;
/// assert_eq!((report.files, report.symlinks, report.skipped.len()), (1, 0, 1));
/// assert_eq!(std::fs::read(site.join("index.html"))?, b"hi\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// [`Client::copy_from_pod`]: crate::Client::copy_from_pod
pub fn extract_archive(
    archive: impl Read,
    remote: &str,
    local: impl AsRef<Path>,
    options: &CopyOptions,
) -> Result<CopyReport, CopyError> {
    let local = local.as_ref();
    if local.as_os_str().is_empty() {
        return Err(CopyError::InvalidPath("filepath can not be empty".into()));
    }
    let prefix = archive_prefix(remote);
    let mut report = CopyReport::default();
    let mut tar = TarReader::new(archive);
    Extractor {
        dest: local,
        prefix: &prefix,
        skip_escaping_symlinks: options.skip_escaping_symlinks,
        report: &mut report,
        skipped_unlisted: 0,
        made: Made::default(),
    }
    .run(&mut tar)?;
    report.archive_bytes = tar.offset();
    Ok(report)
}

pub(crate) struct Extractor<'a> {
    pub dest: &'a Path,
    /// What every archived name starts with (see `paths::archive_prefix`).
    pub prefix: &'a str,
    pub skip_escaping_symlinks: bool,
    pub report: &'a mut CopyReport,
    pub skipped_unlisted: u64,
    /// The files this copy created: the only targets its hard links may have.
    pub made: Made,
}

/// The regular files a copy created, by identity (device and inode on Unix, so that a file
/// replaced under the same name by something else is not taken for ours), bounded by
/// [`MAX_FILES_REMEMBERED`]. A hard link entry may only give another name to one of them:
/// never to a file that was in the destination before the copy (the container would choose
/// where a user's file gets a second name, and what later writes through it mean).
#[derive(Default)]
pub(crate) struct Made(HashSet<FileKey>);

#[cfg(unix)]
type FileKey = (u64, u64);
#[cfg(not(unix))]
type FileKey = PathBuf;

#[cfg(unix)]
fn file_key(_: &Path, m: &fs::Metadata) -> FileKey {
    use std::os::unix::fs::MetadataExt as _;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn file_key(path: &Path, _: &fs::Metadata) -> FileKey {
    path.to_owned()
}

/// Whether removing the name whose metadata is `m` removes the file itself (its last link).
#[cfg(unix)]
fn last_link(m: &fs::Metadata) -> bool {
    std::os::unix::fs::MetadataExt::nlink(m) <= 1
}

#[cfg(not(unix))]
fn last_link(_: &fs::Metadata) -> bool {
    true
}

impl Made {
    fn insert(&mut self, path: &Path, m: &fs::Metadata) {
        if self.0.len() < MAX_FILES_REMEMBERED {
            self.0.insert(file_key(path, m));
        }
    }

    fn contains(&self, path: &Path, m: &fs::Metadata) -> bool {
        self.0.contains(&file_key(path, m))
    }

    /// `path` (metadata `m`) is about to be removed.
    fn removing(&mut self, path: &Path, m: &fs::Metadata) {
        if last_link(m) {
            self.0.remove(&file_key(path, m));
        }
    }
}

/// Where an entry lands.
struct Place<'n> {
    path: PathBuf,
    /// The directory it lands in, as components below the destination; `None` when it is
    /// the destination itself (whose directory is outside).
    dir: Option<Vec<&'n str>>,
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
        // The destination as the user named it may be a symlink (followed: it is theirs);
        // one the copy creates is a directory or a file, never a symlink.
        let named = fs::symlink_metadata(self.dest).is_ok();
        let mut buf = vec![0u8; 64 * 1024];
        while let Some(entry) = tar.next_entry().map_err(CopyError::Archive)? {
            self.entry(tar, &entry, named, &mut buf)?;
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
    fn place<'n>(&self, comps: Vec<&'n str>, kind: EntryKind) -> Place<'n> {
        if comps.is_empty() {
            if kind != EntryKind::Directory && !self.prefix.is_empty() && self.dest.is_dir() {
                return Place {
                    path: self.dest.join(base(self.prefix)),
                    dir: Some(Vec::new()),
                };
            }
            return Place {
                path: self.dest.to_owned(),
                dir: None,
            };
        }
        let mut path = self.dest.to_owned();
        path.extend(&comps);
        let mut dir = comps;
        dir.pop();
        Place {
            path,
            dir: Some(dir),
        }
    }

    /// Refuses a path whose directories below the destination include a symlink (and the
    /// destination itself, unless the user named an existing one).
    fn no_symlink_on_the_way(
        &self,
        entry: &str,
        dir: &[&str],
        named: bool,
    ) -> Result<(), CopyError> {
        let mut p = self.dest.to_owned();
        let mut below = dir.iter();
        if named {
            let Some(c) = below.next() else {
                return Ok(());
            };
            p.push(c);
        }
        loop {
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
            match below.next() {
                Some(c) => p.push(c),
                None => return Ok(()),
            }
        }
    }

    /// A hard link's target: a regular file this copy extracted inside the destination
    /// (never one that was there before), reached through directories only, and not the
    /// link itself.
    fn hard_link_target(
        &self,
        entry: &Entry,
        path: &Path,
        named: bool,
    ) -> Result<PathBuf, CopyError> {
        let to = self.place(self.components(&entry.link)?, EntryKind::File);
        let refused = || CopyError::HardLinkTarget {
            entry: entry.path.clone(),
            target: entry.link.clone(),
        };
        match &to.dir {
            Some(dir) => self.no_symlink_on_the_way(&entry.link, dir, named)?,
            // The destination itself: a file the copy made (a link to a file the user
            // named may be a link to anywhere).
            None if named => return Err(refused()),
            None => {}
        }
        let ours = fs::symlink_metadata(&to.path)
            .is_ok_and(|m| m.file_type().is_file() && self.made.contains(&to.path, &m));
        if !ours || to.path == path {
            return Err(refused());
        }
        Ok(to.path)
    }

    /// Whether a symlink in the directory `dir` (components below the destination, real
    /// directories) to `target` resolves inside, looking through the symlinks its names
    /// meet: one the copy made stays inside by these rules, but one already in an existing
    /// destination may point anywhere (`cache -> /var/cache`), and a new link through it
    /// would too. Through at most [`MAX_LINKS`] symlinks (the kernel's limit too).
    fn resolves_inside(&self, dir: &[&str], target: &str) -> bool {
        let mut budget = MAX_LINKS;
        let start = dir.iter().map(|c| (*c).to_owned()).collect();
        self.resolve(start, target, &mut budget).is_some()
    }

    /// Where `target` leads from the directory `at` (resolved components below the
    /// destination): `None` when it leaves the destination, has a `..` after a name (as
    /// `target_inside`), is absolute, or needs more symlinks than `budget`. It stops at
    /// the first name that is not there (what the archive creates later is judged then).
    fn resolve(&self, mut at: Vec<String>, target: &str, budget: &mut u32) -> Option<Vec<String>> {
        if target.starts_with('/') || target.is_empty() {
            return None;
        }
        let mut named = false;
        for c in target.split('/') {
            match c {
                "" | "." => {}
                ".." if named => return None,
                ".." => {
                    at.pop()?;
                }
                c if cfg!(windows) && c.contains(['\\', ':']) => return None,
                c => {
                    named = true;
                    at.push(c.to_owned());
                    let mut p = self.dest.to_owned();
                    p.extend(&at);
                    match fs::symlink_metadata(&p) {
                        Ok(m) if m.file_type().is_symlink() => {
                            *budget = budget.checked_sub(1)?;
                            let to = fs::read_link(&p).ok()?;
                            at.pop();
                            at = self.resolve(at, to.to_str()?, budget)?;
                        }
                        Ok(_) => {}
                        // Nothing there (or a file on the way): it leads nowhere yet, and
                        // what the archive creates there later is judged then.
                        Err(e)
                            if matches!(
                                e.kind(),
                                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                            ) =>
                        {
                            return Some(at)
                        }
                        Err(_) => return None,
                    }
                }
            }
        }
        Some(at)
    }

    fn entry<R: Read>(
        &mut self,
        tar: &mut TarReader<R>,
        entry: &Entry,
        named: bool,
        buf: &mut [u8],
    ) -> Result<(), CopyError> {
        let Place { path, dir } = self.place(self.components(&entry.path)?, entry.kind);
        if let Some(dir) = &dir {
            self.no_symlink_on_the_way(&entry.path, dir, named)?;
        }
        if let EntryKind::Other(t) = entry.kind {
            self.skip(format!(
                "{}: not a file, directory or link (tar type {:?}), not copied",
                path.display(),
                t as char
            ));
            return Ok(());
        }
        // A symlink is checked against the directory it is created in; the destination's
        // own is outside, so the copied path itself is never a symlink.
        let escapes = entry.kind == EntryKind::Symlink
            && !dir.as_deref().is_some_and(|d| {
                target_inside(d, &entry.link) && self.resolves_inside(d, &entry.link)
            });
        if escapes {
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
        let link_to = match entry.kind {
            EntryKind::HardLink => Some(self.hard_link_target(entry, &path, named)?),
            _ => None,
        };
        if let Some(parent) = path.parent() {
            if !parent.as_os_str().is_empty() {
                fs::create_dir_all(parent).map_err(local(parent, "creating"))?;
            }
        }
        // What is in the way is replaced, never followed nor written through: a symlink or a
        // file (maybe a hard link to another) is removed first. Only the destination the
        // user named is followed, when it is a directory.
        let existing = if dir.is_none() && named {
            fs::metadata(&path).or_else(|_| fs::symlink_metadata(&path))
        } else {
            fs::symlink_metadata(&path)
        }
        .ok();
        let is_dir = existing.as_ref().is_some_and(|m| m.is_dir());
        if let Some(m) = existing.as_ref().filter(|_| !is_dir) {
            self.made.removing(&path, m);
            fs::remove_file(&path).map_err(local(&path, "replacing"))?;
        }
        match entry.kind {
            EntryKind::Directory => {
                // A directory that is already there (the destination the user named, or one
                // an earlier entry made) keeps its mode: a container's 0777 would make `~`
                // or `.` world-writable. A new one takes the archive's mode as `mkdir`
                // does, through the process's umask (owner access always kept).
                if !is_dir {
                    create_dir(&path, entry.mode | 0o700)?;
                }
                self.report.directories += 1;
            }
            EntryKind::File => {
                let mut f = create_new(&path, entry.mode)?;
                if let Ok(m) = f.metadata() {
                    self.made.insert(&path, &m);
                }
                loop {
                    let n = tar.read_data(buf).map_err(CopyError::Archive)?;
                    if n == 0 {
                        break;
                    }
                    f.write_all(&buf[..n]).map_err(local(&path, "writing"))?;
                    self.report.bytes += n as u64;
                }
                // `checked_add`: past what `SystemTime` holds (on Windows, year 30828) the
                // time is not kept rather than a panic.
                let t = u64::try_from(entry.mtime).ok().and_then(|secs| {
                    std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs))
                });
                if let Some(t) = t {
                    f.set_modified(t)
                        .map_err(local(&path, "setting the time of"))?;
                }
                self.report.files += 1;
            }
            EntryKind::Symlink => {
                symlink(&entry.link, &path)?;
                self.report.symlinks += 1;
            }
            EntryKind::HardLink => {
                if let Some(to) = link_to {
                    fs::hard_link(&to, &path).map_err(local(&path, "linking"))?;
                    self.report.hard_links += 1;
                }
            }
            EntryKind::Other(_) => {}
        }
        Ok(())
    }
}

/// A file that did not exist (what was in the way was removed): never opened through a
/// symlink or into another name's data. Its permission bits are the archive's through the
/// process's umask, as kubectl and a non-root `tar -x` create files (a container's `0666`
/// is not left writable by others under the usual `022`); never set-user-ID, set-group-ID
/// or sticky.
fn create_new(path: &Path, mode: u32) -> Result<fs::File, CopyError> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode & 0o777);
    #[cfg(not(unix))]
    let _ = mode;
    options.open(path).map_err(local(path, "creating"))
}

/// A new directory (its parents made already), with the archive's permission bits through
/// the process's umask, as `mkdir` makes it.
fn create_dir(path: &Path, mode: u32) -> Result<(), CopyError> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, mode & 0o777);
    #[cfg(not(unix))]
    let _ = mode;
    builder.create(path).map_err(local(path, "creating"))
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
