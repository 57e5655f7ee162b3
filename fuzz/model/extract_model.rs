//! The model "nothing outside" for extracting a container's archive
//! (`pod::copy::extract_archive`, what `copy_from_pod` runs): whatever the archive, no path
//! outside the destination is created, written, removed, linked or changed, the destination
//! the copy creates is never a symlink, every symlink left under the destination
//! resolves under it, and no file that was in the destination before gets another name.
//!
//! Shared by the `tar_extract` fuzz target and `tests/pod_copy.rs` (seeded cases in every
//! `cargo test`). No dependencies beyond the library and std.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use kube_informer::pod::copy::{extract_archive, CopyOptions};
use kube_informer::pod::tar::TarWriter;

/// Names the archives are made of: the siblings' names, `.`, `..` and empty ones.
const WORDS: [&str; 10] = ["x", "a", "b", "l", ".", "..", "", "out", "side", "keep"];
/// The copied path: its archive prefix is `x`, `` or `x/a`.
const REMOTES: [&str; 3] = ["/x", "/", "x/a"];

/// The bytes read as choices; zeros once they run out.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n
    }
    fn done(&self) -> bool {
        self.0.is_empty()
    }
    fn words(&mut self, max: usize) -> Vec<&'static str> {
        let n = self.below(max + 1);
        (0..n).map(|_| WORDS[self.below(WORDS.len())]).collect()
    }
    /// An archived name: mostly the prefix then words, sometimes the prefix alone (with or
    /// without a trailing `/`), `.` or nothing.
    fn name(&mut self, prefix: &str) -> String {
        match self.below(8) {
            0 => prefix.to_owned(),
            1 => format!("{prefix}/"),
            2 => ".".into(),
            3 => self.words(3).join("/"),
            _ => {
                let rest = self.words(3).join("/");
                if prefix.is_empty() {
                    rest
                } else {
                    format!("{prefix}/{rest}")
                }
            }
        }
    }
    /// A symlink target: words, maybe absolute.
    fn target(&mut self) -> String {
        let t = self.words(4).join("/");
        if self.below(6) == 0 {
            format!("/{t}")
        } else {
            t
        }
    }
}

/// One case: what the destination holds first, the options, the archive.
pub struct Case {
    pub remote: &'static str,
    /// 0: absent, 1: an empty directory, 2: a directory with a file `a` and a directory `x`
    /// (which holds `keep`), 3: a file.
    pub dest: u8,
    pub skip_escaping_symlinks: bool,
    pub archive: Vec<u8>,
}

impl Case {
    /// Bytes as a case: the first byte's low bit picks raw bytes as the archive, else the
    /// rest is read as entries built with the library's writer (headers are then valid
    /// and the entries' names and links are what is explored).
    pub fn from_bytes(data: &[u8]) -> Case {
        let mut c = Choices(data);
        let first = c.byte();
        let remote = REMOTES[(first as usize >> 1) % REMOTES.len()];
        let dest = (first >> 3) & 3;
        let skip_escaping_symlinks = first & 0x20 != 0;
        if first & 1 == 1 {
            return Case {
                remote,
                dest,
                skip_escaping_symlinks,
                archive: c.0.to_vec(),
            };
        }
        let prefix = match remote {
            "/x" => "x",
            "/" => "",
            _ => "x/a",
        };
        let mut w = TarWriter::new(Vec::new());
        let mut n = 0;
        while !c.done() && n < 24 {
            n += 1;
            let kind = c.below(4);
            let name = c.name(prefix);
            let written = match kind {
                0 => w.append_dir(&name, 0o755, 0),
                1 => {
                    let size = c.below(4);
                    w.append_file(&name, 0o644, 0, size as u64, &b"!!!"[..size])
                }
                2 => {
                    let target = c.target();
                    w.append_symlink(&name, &target, 0)
                }
                _ => {
                    let target = c.name(prefix);
                    w.append_hard_link(&name, &target, 0)
                }
            };
            if written.is_err() {
                break;
            }
        }
        let _ = w.finish();
        Case {
            remote,
            dest,
            skip_escaping_symlinks,
            archive: w.into_inner(),
        }
    }

    /// Extracts the case in a directory of its own under `scratch` and checks the model;
    /// panics with what went wrong.
    pub fn check(&self, scratch: &Path) {
        static N: AtomicU64 = AtomicU64::new(0);
        let base = scratch.join(format!("case-{}", N.fetch_add(1, Ordering::Relaxed)));
        fs::create_dir_all(base.join("side/x")).unwrap();
        fs::write(base.join("side/keep"), b"sentinel\n").unwrap();
        fs::write(base.join("side/x/keep"), b"sentinel\n").unwrap();
        let base = fs::canonicalize(&base).unwrap();
        let out = base.join("out");
        match self.dest {
            1 => fs::create_dir(&out).unwrap(),
            2 => {
                fs::create_dir_all(out.join("x")).unwrap();
                fs::write(out.join("a"), b"a\n").unwrap();
                fs::write(out.join("x/keep"), b"mine\n").unwrap();
            }
            3 => fs::write(&out, b"file\n").unwrap(),
            _ => {}
        }
        let before = outside(&base);
        // The user's own files in the destination (their contents are never an archive's,
        // which are `!`s): none may gain a name (a hard link). Not by inode: a file the
        // archive replaces may give its inode number to the next one the copy creates.
        let theirs: [&[u8]; 3] = [b"a\n", b"mine\n", b"file\n"];
        let options = CopyOptions::new().skip_escaping_symlinks(self.skip_escaping_symlinks);
        let result = extract_archive(&self.archive[..], self.remote, &out, &options);
        let after = outside(&base);
        assert_eq!(
            before, after,
            "changed outside the destination ({result:?})"
        );
        if let Ok(m) = fs::symlink_metadata(&out) {
            assert!(
                !m.file_type().is_symlink(),
                "the destination became a symlink"
            );
            if m.is_dir() {
                links_stay_inside(&out, &out);
            }
            no_new_names(&out, &theirs, &result);
        }
        // Whatever modes were extracted, the case's directory can be removed.
        make_removable(&base);
        fs::remove_dir_all(&base).unwrap();
    }
}

/// Everything under `base` except `out`, without following symlinks: path, kind, mode,
/// links, inode, size, modification time and content.
fn outside(base: &Path) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let mut paths: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        paths.sort();
        for p in paths {
            let rel = p.strip_prefix(base).unwrap();
            if rel == Path::new("out") {
                continue;
            }
            let m = fs::symlink_metadata(&p).unwrap();
            let content = if m.file_type().is_symlink() {
                format!("-> {:?}", fs::read_link(&p).unwrap())
            } else if m.is_file() {
                format!("{:?}", fs::read(&p).unwrap())
            } else {
                String::new()
            };
            out.push(format!(
                "{} mode {:o} nlink {} ino {} size {} mtime {}.{} {content}",
                rel.display(),
                m.mode(),
                m.nlink(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec()
            ));
            if m.is_dir() {
                walk(&p, base, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(base, base, &mut out);
    out
}

/// No file under `path` (or `path` itself) with one of the contents `theirs` has more
/// than its one name.
fn no_new_names<T: std::fmt::Debug>(path: &Path, theirs: &[&[u8]], result: &T) {
    let Ok(m) = fs::symlink_metadata(path) else {
        return;
    };
    if m.is_file() && m.nlink() > 1 {
        let content = fs::read(path).unwrap_or_default();
        assert!(
            !theirs.contains(&content.as_slice()),
            "{} was there before and got another name ({result:?})",
            path.display()
        );
    }
    if m.is_dir() {
        for e in fs::read_dir(path).unwrap() {
            no_new_names(&e.unwrap().path(), theirs, result);
        }
    }
}

/// Every symlink under `dir` resolves under `dest` (or loops, or goes nowhere new).
fn links_stay_inside(dir: &Path, dest: &Path) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let m = fs::symlink_metadata(&p).unwrap();
        if m.file_type().is_symlink() {
            let to = resolve(&p, 0);
            if let Some(to) = to {
                assert!(
                    to.starts_with(dest),
                    "{} -> {:?} resolves to {}, outside {}",
                    p.display(),
                    fs::read_link(&p).unwrap(),
                    to.display(),
                    dest.display()
                );
            }
        } else if m.is_dir() {
            links_stay_inside(&p, dest);
        }
    }
}

/// Where the symlink `link` leads, component by component as the kernel would, missing
/// components taken as they are written (they may be created later); `None` for a loop.
fn resolve(link: &Path, depth: u32) -> Option<PathBuf> {
    if depth > 40 {
        return None;
    }
    let target = fs::read_link(link).ok()?;
    let mut at = link.parent()?.to_path_buf();
    if target.is_absolute() {
        at = PathBuf::from("/");
    }
    for c in target.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(n) => {
                at.push(n);
                if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                    at = resolve(&at, depth + 1)?;
                }
            }
        }
    }
    Some(at)
}

fn make_removable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(m) = fs::symlink_metadata(dir) else {
        return;
    };
    if m.is_dir() {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o755));
        if let Ok(entries) = fs::read_dir(dir) {
            for e in entries.flatten() {
                make_removable(&e.path());
            }
        }
    }
}
