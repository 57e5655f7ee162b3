//! The discovery cache on disk, in kubectl's place and format, so that kubectl and programs
//! built on this crate share it.
//!
//! Layout (client-go's `discovery/cached/disk`): under a root (kubectl's is
//! `~/.kube/cache/discovery`, or `$KUBECACHEDIR/discovery`), one directory per server named
//! after its `host:port` with every character other than letters, digits, `_`, `/`, `.`, `(`
//! and `)` replaced by `_` (`127.0.0.1:6443` -> `127.0.0.1_6443`). In it `servergroups.json`
//! (an `APIGroupList`, the core group first with the name `""`) and
//! `<group-version>/serverresources.json` (an `APIResourceList`; `v1/serverresources.json`
//! for the core group). kubectl writes the same legacy files when it used aggregated
//! discovery, and so does this cache.
//!
//! Rules:
//! - A file older than the TTL (10 minutes by default; its modification time) is a miss.
//! - Anything that does not read back as what it should be (missing, truncated, not JSON,
//!   another kind, another group-version, a group or version name that is not a plain name)
//!   is a miss: the caller fetches from the server and overwrites it. Never an error.
//! - As kubectl's cached client does, a miss of `servergroups.json` refetches everything,
//!   and a miss of one group-version's file refetches that group-version alone (its legacy
//!   `APIResourceList`). A group-version that answered 404 or 503 when the cache was written
//!   (an aggregated API server that is down) has no file: each later read asks for it
//!   alone, and the rest still comes from the disk.
//! - Each file is written to a temporary file in its directory and renamed over the old
//!   one, so another process reading at the same time sees the old file or the new one,
//!   never half of one. A failed write is logged and otherwise ignored. Files are not
//!   synced to the disk: after a power loss a file may be empty or cut short, which is a
//!   miss.
//!
//! Limits: all of a server's files are read at once (kubectl reads a group-version's file when
//! it is asked for); the ETags of aggregated discovery are kept in memory only (kubectl keeps an HTTP cache beside this one). Files and
//! directories get kubectl's permissions (0660 and 0750 on Unix, before the umask).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::types::{group_version, ApiGroupList, ApiResourceList, DiscoveryData};

/// kubectl's time to live of a cache file.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10 * 60);

const GROUPS_FILE: &str = "servergroups.json";
const RESOURCES_FILE: &str = "serverresources.json";
const LOG: &str = "kube_informer::discovery";

/// What [`DiskCache::load`] found.
pub(crate) struct Loaded {
    /// The groups, and the resources of every group-version whose file is sound.
    pub data: DiscoveryData,
    /// The group-versions (group, version) whose file is not: missing (never written: the
    /// group-version answered 404 or 503 when the cache was written, or never existed),
    /// older than the TTL, or damaged.
    pub missing: Vec<(String, String)>,
}

/// A server's discovery cache directory.
#[derive(Clone, Debug)]
pub struct DiskCache {
    dir: PathBuf,
    ttl: Duration,
}

impl DiskCache {
    /// The cache of the server at `server_url` (`https://10.0.0.1:6443`) under `root`
    /// (e.g. a temporary directory in tests, or [`DiskCache::kubectl_root`]).
    pub fn new(root: impl AsRef<Path>, server_url: &str) -> DiskCache {
        DiskCache {
            dir: root.as_ref().join(host_dir_name(server_url)),
            ttl: DEFAULT_TTL,
        }
    }

    /// kubectl's root: `$KUBECACHEDIR/discovery`, else `~/.kube/cache/discovery`; `None`
    /// without a home directory.
    pub fn kubectl_root() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("KUBECACHEDIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("discovery"));
        }
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .filter(|h| !h.is_empty())?;
        Some(
            PathBuf::from(home)
                .join(".kube")
                .join("cache")
                .join("discovery"),
        )
    }

    /// Sets how old a file may be and still count (default [`DEFAULT_TTL`]).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// The server's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What is cached, if the groups file is there, fresh and sound; the group-versions
    /// whose own file is not (missing, expired, damaged) are listed in
    /// [`Loaded::missing`], for the caller to fetch alone.
    pub(crate) fn load(&self) -> Option<Loaded> {
        let groups: ApiGroupList = self.read(&self.dir.join(GROUPS_FILE))?;
        if groups.kind.as_deref() != Some("APIGroupList") {
            return self.miss(GROUPS_FILE, "not an APIGroupList");
        }
        let mut data = DiscoveryData {
            groups: groups.to_groups(),
            ..Default::default()
        };
        let mut missing = Vec::new();
        for g in &data.groups {
            if !(g.name.is_empty() || plain_name(&g.name)) || g.versions.is_empty() {
                return self.miss(GROUPS_FILE, "a group name is not a plain name");
            }
            for v in &g.versions {
                if !plain_name(v) {
                    return self.miss(GROUPS_FILE, "a version name is not a plain name");
                }
                let gv = group_version(&g.name, v);
                let list: Option<ApiResourceList> =
                    self.read(&self.dir.join(&gv).join(RESOURCES_FILE));
                match list {
                    Some(list)
                        if list.kind.as_deref() == Some("APIResourceList")
                            && list.group_version == gv =>
                    {
                        data.resources.insert(gv, list.to_resources());
                    }
                    Some(_) => {
                        log::debug!(target: LOG, "discovery cache {} {gv}: not this group-version's APIResourceList, refetching it", self.dir.display());
                        missing.push((g.name.clone(), v.clone()));
                    }
                    None => missing.push((g.name.clone(), v.clone())),
                }
            }
        }
        Some(Loaded { data, missing })
    }

    /// Writes one group-version's file (after it was fetched alone); failures are logged.
    pub(crate) fn store_group_version(&self, data: &DiscoveryData, group: &str, version: &str) {
        let gv = group_version(group, version);
        if let Some(resources) = data.resources.get(&gv) {
            let list = ApiResourceList::from_resources(&gv, resources);
            self.write(&self.dir.join(&gv).join(RESOURCES_FILE), &list);
        }
    }

    /// Writes everything (each group-version's file, then the groups); failures are logged.
    pub(crate) fn store(&self, data: &DiscoveryData) {
        for (gv, resources) in &data.resources {
            let (group, version) = super::types::split_group_version(gv);
            if !(group.is_empty() || plain_name(group)) || !plain_name(version) {
                continue;
            }
            let list = ApiResourceList::from_resources(gv, resources);
            self.write(&self.dir.join(gv).join(RESOURCES_FILE), &list);
        }
        self.write(
            &self.dir.join(GROUPS_FILE),
            &ApiGroupList::from_groups(&data.groups),
        );
    }

    fn read<T: serde::de::DeserializeOwned>(&self, path: &Path) -> Option<T> {
        let meta = fs::metadata(path).ok()?;
        let modified = meta.modified().ok()?;
        // A time in the future (clock skew, another machine) counts as just written.
        let age = SystemTime::now()
            .duration_since(modified)
            .unwrap_or(Duration::ZERO);
        if age >= self.ttl {
            log::debug!(target: LOG, "discovery cache file {} expired", path.display());
            return None;
        }
        let bytes = fs::read(path).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(v) => Some(v),
            Err(e) => {
                log::debug!(target: LOG, "discovery cache file {} unreadable ({}), refetching", path.display(), crate::error::json_error_summary(&e));
                None
            }
        }
    }

    fn miss<T>(&self, what: &str, why: &str) -> Option<T> {
        log::debug!(target: LOG, "discovery cache {} {what}: {why}, refetching", self.dir.display());
        None
    }

    fn write<T: serde::Serialize>(&self, path: &Path, value: &T) {
        if let Err(e) = write_atomically(path, value) {
            log::warn!(target: LOG, "writing the discovery cache file {}: {e}", path.display());
        }
    }
}

/// Writes `value` as JSON to a temporary file beside `path`, then renames it over `path`.
fn write_atomically<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dirs(dir)?;
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = create_private_file(&tmp)?;
        f.write_all(&bytes)?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Creates `dir` and its missing parents as kubectl does: readable by owner and group only
/// (0750 on Unix, before the umask).
fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o750);
    builder.create(dir)
}

/// Creates a new file as kubectl does: read-write for owner and group only (0660 on Unix,
/// before the umask).
fn create_private_file(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o660);
    options.open(path)
}

/// A group or version name that is safe as a path segment: DNS-like characters only.
fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

/// kubectl's directory name for a server: the URL without `https://` or `http://`, every
/// character but letters, digits, `_`, `/`, `.`, `(` and `)` replaced by `_`.
///
/// ```
/// use kube_informer::discovery::host_dir_name;
/// assert_eq!(host_dir_name("https://127.0.0.1:6443"), "127.0.0.1_6443");
/// assert_eq!(host_dir_name("https://k8s.example.com"), "k8s.example.com");
/// assert_eq!(host_dir_name("https://proxy:8001/../x"), "proxy_8001/_/x");
/// assert_eq!(host_dir_name("https://127.0.0.1:6443/"), "127.0.0.1_6443");
/// assert_eq!(host_dir_name("https://me:secret@k8s:6443"), "k8s_6443");
/// ```
pub fn host_dir_name(server_url: &str) -> String {
    let host = server_url
        .strip_prefix("https://")
        .or_else(|| server_url.strip_prefix("http://"))
        .unwrap_or(server_url);
    // Never a `user:password@` in a directory name.
    let authority_end = host.find('/').unwrap_or(host.len());
    let host = match host[..authority_end].rfind('@') {
        Some(at) => &host[at + 1..],
        None => host,
    };
    let name: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | '(' | ')') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Unlike kubectl, a `..` or `.` segment (a URL path such as `/../x`) cannot leave the
    // root; empty segments (`host:6443/`) are dropped, as joining the path does for kubectl.
    name.split('/')
        .filter(|seg| !seg.is_empty())
        .map(|seg| match seg {
            "." | ".." => "_",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}
