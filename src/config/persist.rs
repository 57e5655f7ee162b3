//! Writing refreshed `auth-provider` tokens back into the kubeconfig file a user came from,
//! as kubectl does, so the next program to read the file does not refresh again; and
//! reading them from there again, to take what another program wrote since.
//!
//! - The write holds kubectl's lock, `<file>.lock` (see `file_lock.rs`), so writers in
//!   this process, in other processes and kubectl take turns. Under the lock the file is
//!   read again and only the named keys of that user's `auth-provider.config` change:
//!   anything another program wrote since it was loaded, other users' new tokens
//!   included, is kept. A user no longer in the file, or no longer with an
//!   `auth-provider`, is left alone (an error, which the caller logs). A lock that cannot
//!   be created (a read-only file system, a mounted ConfigMap or Secret) fails the write
//!   at once.
//! - The file is parsed and written again as YAML values: its comments, key order within
//!   a mapping aside, and formatting (quoting, indentation, flow style) are not kept.
//!   kubectl rewrites the file the same way.
//! - How the file is written: by a rename when that leaves the file what it was, else in
//!   place, as client-go does. client-go's `WriteToFile` always writes in place (open,
//!   truncate, write): the file stays the same file, so a kubeconfig bind-mounted alone
//!   into a container (a rename over a mount point fails, `EBUSY`), hard links (the other
//!   names would keep the old tokens), another user's or group's file (a new file would be
//!   ours), its ACLs and extended attributes all keep working. Its cost is that a reader
//!   that does not take the lock (kubectl, any client-go program) can see a half-written
//!   file, and a write cut short (a full disk) leaves a cut file. So the new text first
//!   goes to a temporary file in the same folder (created readable by the owner only, then
//!   given the original's permissions), flushed to disk, and is renamed over the file only
//!   when it is a regular file with one link and the temporary file got its owner and
//!   group; a reader then sees the old file or the new one, never half of one. Otherwise,
//!   or when the rename fails, the text is written in place under the lock (truncate,
//!   write, flush to disk; a write that fails puts the old text back if it can). Anything
//!   but a regular file (a FIFO, a device) is left alone. What std cannot see is kept only in place: ACLs and extended
//!   attributes of a one-link file we own are not carried over by the rename (set them on
//!   the folder's defaults, or give the file a second link to keep it in place). A
//!   symbolic link is followed: the file it points to is written, the link stays (as
//!   kubectl does). A file we may not write (`chmod 0400`) is refused, as kubectl's write
//!   refuses it, never replaced by a rename. The file is opened (for writing, without a
//!   change) before either way is taken, must be the one looked at, and its name must
//!   still be that file when it is written in place: a symbolic link, a FIFO or another
//!   file swapped in meanwhile (by whoever may write the folder) is refused. The
//!   temporary file's name is foreseeable; one already taken (made first by another user
//!   of a shared folder) means writing in place, never a failed write. A temporary file of
//!   ours left behind by a process that died before its rename (a copy of the tokens) is
//!   removed by the next write, under the lock.
//! - Error messages name the file and what failed, never a value.

use std::collections::BTreeMap;
use std::io::{Seek as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_yaml::{Mapping, Value};

use super::file_lock::{FileLock, Patience};
use crate::client::Cancel;

/// Sets `changes` (key, value) in the `auth-provider.config` of user `user` in the kubeconfig
/// at `path` (see the module docs for how), holding `<path>.lock` (waiting for it as `patience` says, or
/// until `cancel` fires). `Ok` is that user's string settings as written; `Err` says what
/// failed (never a value).
pub(crate) fn write_auth_provider_config(
    path: &Path,
    user: &str,
    changes: &[(&str, &str)],
    patience: Patience,
    cancel: Option<&Cancel>,
) -> Result<BTreeMap<String, String>, String> {
    let lock = FileLock::acquire(path, patience, cancel)?;
    let real = std::fs::canonicalize(path)
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
    let shown = real.display();
    let text = read_regular(&real).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let mut doc: Value = serde_yaml::from_str(&text)
        .map_err(|_| format!("{shown} is no longer valid YAML; left as it is"))?;
    let config = provider_config(&mut doc, user).ok_or_else(|| {
        format!("{shown} no longer has user {user:?} with an auth-provider; left as it is")
    })?;
    for (k, v) in changes {
        config.insert(Value::from(*k), Value::from(*v));
    }
    let written = string_settings(config);
    let new_text = serde_yaml::to_string(&doc)
        .map_err(|_| format!("cannot encode the new contents of {shown}"))?;
    let still_held = || {
        // A holder whose lock was judged stale and removed must not write over the
        // writer that took it since.
        lock.still_held()
            .then_some(())
            .ok_or_else(|| std::io::Error::other("the lock was removed by another program"))
    };
    write_back(
        &real,
        text.as_bytes(),
        new_text.as_bytes(),
        still_held,
        |from, to| std::fs::rename(from, to),
    )
    .map_err(|e| format!("writing {shown}: {e}"))?;
    if lock.still_held() {
        remove_left_temporaries(&real, &super::file_lock::lock_path(path));
    }
    drop(lock);
    Ok(written)
}

/// The string values of an `auth-provider.config` mapping.
fn string_settings(config: &Mapping) -> BTreeMap<String, String> {
    config
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())))
        .collect()
}

/// The string settings of user `user`'s `auth-provider.config` in the kubeconfig at
/// `path`, as the file holds them now; `None` when it cannot be read or has no such user
/// with an auth-provider.
pub(crate) fn read_auth_provider_config(
    path: &Path,
    user: &str,
) -> Option<BTreeMap<String, String>> {
    let text = read_regular(path).ok()?;
    let doc: Value = serde_yaml::from_str(&text).ok()?;
    let entry = doc
        .get("users")?
        .as_sequence()?
        .iter()
        .find(|u| u.get("name").and_then(Value::as_str) == Some(user))?;
    let config = entry.get("user")?.get("auth-provider")?.get("config")?;
    Some(string_settings(config.as_mapping()?))
}

/// The text of the regular file at `path` (a symbolic link followed): anything else (a
/// FIFO, whose open would wait for a writer; a device) is never opened. The file opened
/// must be the one just looked at (a file swapped in between is refused).
fn read_regular(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file; left as it is"));
    }
    let mut f = std::fs::File::open(path)?;
    if !same_file(&meta, &f.metadata()?) {
        return Err(std::io::Error::other("replaced while being opened"));
    }
    let mut text = String::new();
    f.read_to_string(&mut text)?;
    Ok(text)
}

/// Whether two looks at a name saw the same file (device and inode on Unix).
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    b.is_file() && (a.dev(), a.ino()) == (b.dev(), b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    b.is_file()
}

/// The `users[name == user].user.auth-provider.config` mapping (created when the
/// auth-provider has none).
fn provider_config<'a>(doc: &'a mut Value, user: &str) -> Option<&'a mut Mapping> {
    let users = doc.get_mut("users")?.as_sequence_mut()?;
    let entry = users
        .iter_mut()
        .find(|u| u.get("name").and_then(Value::as_str) == Some(user))?;
    let provider = entry
        .get_mut("user")?
        .get_mut("auth-provider")?
        .as_mapping_mut()?;
    let key = Value::from("config");
    if !provider.get(&key).is_some_and(Value::is_mapping) {
        provider.insert(key.clone(), Value::Mapping(Mapping::new()));
    }
    provider.get_mut(&key)?.as_mapping_mut()
}

/// How [`write_back`] wrote the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Written {
    /// A temporary file renamed over it.
    Renamed,
    /// The file itself, truncated and written.
    InPlace,
}

/// Writes `bytes` to `path`: through a temporary file renamed over it when that keeps the
/// file what it was (one link, same owner and group) and the rename succeeds, else in
/// place (where a failed write puts `old` back). `still_held` is asked just before the file changes (either way); `rename` is
/// `std::fs::rename` but for tests.
fn write_back(
    path: &Path,
    old: &[u8],
    bytes: &[u8],
    still_held: impl Fn() -> std::io::Result<()>,
    rename: impl FnOnce(&Path, &Path) -> std::io::Result<()>,
) -> std::io::Result<Written> {
    // `path` is resolved already: a symbolic link here was swapped in since.
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_file() {
        // A FIFO would hold the write until someone reads it; a device is not a kubeconfig.
        return Err(std::io::Error::other("not a regular file; left as it is"));
    }
    // Opened for writing first, either way (nothing changes yet): a file we may not write
    // (`chmod 0400`) is refused as kubectl's write refuses it, rather than replaced by a
    // rename the folder would allow. The file opened must be the one looked at.
    let changed = || std::io::Error::other("replaced by something else meanwhile; left as it is");
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    if !same_file(&meta, &f.metadata()?) {
        return Err(changed());
    }
    if single_link(&meta) {
        match replace_atomically(path, &meta, bytes, &still_held, rename)? {
            Some(()) => return Ok(Written::Renamed),
            None => log::debug!(
                "{}: written in place (a rename would not keep the file as it is)",
                path.display()
            ),
        }
    }
    // Looked at again: a name that no longer is the file opened (a symbolic link or a FIFO
    // swapped in while the rename was tried) is left alone.
    if !same_file(&meta, &std::fs::symlink_metadata(path)?) {
        return Err(changed());
    }
    still_held()?;
    let write = |f: &mut std::fs::File, b: &[u8]| {
        f.set_len(0)?;
        f.seek(std::io::SeekFrom::Start(0))?;
        f.write_all(b)?;
        f.sync_all()
    };
    if let Err(e) = write(&mut f, bytes) {
        // A write cut short (a full disk) must not leave a cut kubeconfig: the old text
        // goes back if it can (its blocks were just freed).
        let _ = write(&mut f, old);
        return Err(e);
    }
    Ok(Written::InPlace)
}

#[cfg(unix)]
fn single_link(meta: &std::fs::Metadata) -> bool {
    std::os::unix::fs::MetadataExt::nlink(meta) == 1
}

#[cfg(not(unix))]
fn single_link(_: &std::fs::Metadata) -> bool {
    true
}

/// Whether a file created now in the folder (`tmp`) has the owner and group of `file`.
#[cfg(unix)]
fn same_owner(file: &std::fs::Metadata, tmp: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    (file.uid(), file.gid()) == (tmp.uid(), tmp.gid())
}

#[cfg(not(unix))]
fn same_owner(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    true
}

/// Removes the temporary files an earlier write of `path` left behind (its process died
/// between making one and renaming it over the file): each holds a copy of the tokens,
/// kept after the file itself changes. Called holding the lock, so no writer that still
/// holds it is using one (a writer whose lock was broken gives its rename up). Only
/// regular files of ours with one link, named as [`replace_atomically`] names them; best
/// effort.
#[cfg(unix)]
fn remove_left_temporaries(path: &Path, our_lock: &Path) {
    use std::os::unix::fs::MetadataExt as _;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let prefix = format!(".{}.kube-informer-", name.to_string_lossy());
    // Ours: owned by whoever owns the lock this process just made.
    let Ok(me) = std::fs::symlink_metadata(our_lock).map(|m| m.uid()) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten().take(10_000) {
        let file_name = entry.file_name();
        let Some(n) = file_name.to_str() else {
            continue;
        };
        let numbered = n
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|ids| ids.split_once('-'))
            .is_some_and(|(pid, count)| {
                [pid, count]
                    .iter()
                    .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            });
        if !numbered {
            continue;
        }
        let p = entry.path();
        let ours = std::fs::symlink_metadata(&p)
            .is_ok_and(|m| m.is_file() && m.nlink() == 1 && m.uid() == me);
        if ours && std::fs::remove_file(&p).is_ok() {
            log::info!(
                "{}: removed a temporary file left behind by an earlier write",
                p.display()
            );
        }
    }
}

#[cfg(not(unix))]
fn remove_left_temporaries(_: &Path, _: &Path) {}

/// Numbers the temporary files of this process.
static TMP_NEXT: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes` through a temporary file and a rename in the same folder,
/// keeping the file's permissions; `still_held` is asked last, just before the rename.
/// `Ok(None)`: not replaced, nothing changed (the temporary file would have another owner or
/// group, or the rename failed), so the caller writes in place.
fn replace_atomically(
    path: &Path,
    meta: &std::fs::Metadata,
    bytes: &[u8],
    still_held: impl Fn() -> std::io::Result<()>,
    rename: impl FnOnce(&Path, &Path) -> std::io::Result<()>,
) -> std::io::Result<Option<()>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kubeconfig".into());
    let tmp = dir.join(format!(
        ".{name}.kube-informer-{}-{}.tmp",
        std::process::id(),
        TMP_NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut f = match options.open(&tmp) {
        Ok(f) => f,
        // A folder we may not create in (the file alone is writable): in place. So too
        // when the name is taken: another user may have made it first in a shared folder
        // (the name is foreseeable), and must not stop the write.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::AlreadyExists
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    let written = (|| {
        if !same_owner(meta, &f.metadata()?) {
            return Ok(None);
        }
        f.write_all(bytes)?;
        f.set_permissions(meta.permissions())?;
        f.sync_all()?;
        still_held()?;
        match rename(&tmp, path) {
            Ok(()) => Ok(Some(())),
            Err(e) => {
                log::debug!("{}: cannot rename over it ({e})", path.display());
                Ok(None)
            }
        }
    })();
    drop(f);
    if !matches!(written, Ok(Some(()))) {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::super::file_lock::PATIENCE;
    use super::*;

    #[test]
    fn only_the_named_keys_of_that_user_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "current-context: a\nusers:\n- name: other\n  user:\n    auth-provider:\n      name: oidc\n      config:\n        id-token: keep-me\n- name: me\n  user:\n    auth-provider:\n      name: oidc\n      config:\n        client-id: cid\n        id-token: old\n        refresh-token: r1\n",
        )
        .unwrap();
        let written =
            write_auth_provider_config(&path, "me", &[("id-token", "new")], PATIENCE, None)
                .unwrap();
        assert_eq!(written.get("id-token").map(String::as_str), Some("new"));
        assert_eq!(written.get("refresh-token").map(String::as_str), Some("r1"));
        let v: Value = serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let cfg = |i: usize, k: &str| {
            v["users"][i]["user"]["auth-provider"]["config"][k]
                .as_str()
                .map(str::to_owned)
        };
        assert_eq!(cfg(0, "id-token").as_deref(), Some("keep-me"));
        assert_eq!(cfg(1, "id-token").as_deref(), Some("new"));
        assert_eq!(cfg(1, "refresh-token").as_deref(), Some("r1"));
        assert_eq!(cfg(1, "client-id").as_deref(), Some("cid"));
        assert_eq!(v["current-context"].as_str(), Some("a"));
        // No temporary file or lock left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        // A user without an auth-provider is left alone.
        let err = write_auth_provider_config(&path, "nobody", &[("id-token", "x")], PATIENCE, None)
            .unwrap_err();
        assert!(err.contains("\"nobody\""), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn writers_of_different_users_at_once_keep_each_others_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let users = 12;
        let mut text = String::from("users:\n");
        for i in 0..users {
            text.push_str(&format!(
                "- name: u{i}\n  user:\n    auth-provider:\n      name: oidc\n      config:\n        id-token: old-{i}\n"
            ));
        }
        std::fs::write(&path, text).unwrap();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(users));
        let threads: Vec<_> = (0..users)
            .map(|i| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let new = format!("new-{i}");
                    write_auth_provider_config(
                        &path,
                        &format!("u{i}"),
                        &[("id-token", &new)],
                        PATIENCE,
                        None,
                    )
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let lost: Vec<usize> = (0..users)
            .filter(|i| {
                let config = read_auth_provider_config(&path, &format!("u{i}")).unwrap();
                config.get("id-token") != Some(&format!("new-{i}"))
            })
            .collect();
        assert_eq!(lost, Vec::<usize>::new(), "users whose new token was lost");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    const ONE_USER: &str = "users:\n- name: me\n  user:\n    auth-provider:\n      name: oidc\n      config:\n        id-token: old\n";

    fn id_token(path: &Path) -> Option<String> {
        read_auth_provider_config(path, "me")?
            .get("id-token")
            .cloned()
    }

    #[cfg(unix)]
    fn inode(path: &Path) -> u64 {
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap())
    }

    #[cfg(unix)]
    #[test]
    fn a_hard_linked_file_is_written_in_place_and_every_name_sees_the_new_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let other = dir.path().join("other-name");
        std::fs::write(&path, ONE_USER).unwrap();
        std::fs::hard_link(&path, &other).unwrap();
        let before = inode(&path);
        write_auth_provider_config(&path, "me", &[("id-token", "new")], PATIENCE, None).unwrap();
        assert_eq!(id_token(&path).as_deref(), Some("new"));
        assert_eq!(
            id_token(&other).as_deref(),
            Some("new"),
            "the other name kept the old file"
        );
        assert_eq!(inode(&path), before);
        assert_eq!(inode(&other), before);
        // No temporary file or lock left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_of_another_owner_keeps_its_owner_group_and_mode() {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, ONE_USER).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let me = std::fs::metadata(&path).unwrap();
        // Only root can give a file away; anyone else can only own files that are theirs,
        // and then the rename keeps the owner (checked too).
        let given = std::os::unix::fs::chown(&path, Some(4242), Some(4243)).is_ok();
        let owner = if given {
            (4242, 4243)
        } else {
            (me.uid(), me.gid())
        };
        let before = inode(&path);
        write_auth_provider_config(&path, "me", &[("id-token", "new")], PATIENCE, None).unwrap();
        let after = std::fs::metadata(&path).unwrap();
        assert_eq!(id_token(&path).as_deref(), Some("new"));
        assert_eq!((after.uid(), after.gid()), owner);
        assert_eq!(after.mode() & 0o7777, 0o640);
        if given {
            assert_eq!(inode(&path), before, "written in place");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_of_ours_with_one_link_is_replaced_by_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, "old text").unwrap();
        let ok = || Ok(());
        let how = write_back(&path, b"", b"new text", ok, |a, b| std::fs::rename(a, b)).unwrap();
        assert_eq!(how, Written::Renamed);
        assert_eq!(std::fs::read(&path).unwrap(), b"new text");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_rename_that_fails_as_over_a_bind_mount_falls_back_to_writing_in_place() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, "a longer old text than the new one").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let before = inode(&path);
        let ok = || Ok(());
        // What rename(2) answers for a file bind-mounted alone into a container.
        let busy = |_: &Path, _: &Path| Err(std::io::Error::from_raw_os_error(16));
        let how = write_back(&path, b"", b"new text", ok, busy).unwrap();
        assert_eq!(how, Written::InPlace);
        assert_eq!(std::fs::read(&path).unwrap(), b"new text");
        assert_eq!(inode(&path), before);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temporary file left"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_lost_lock_writes_nothing_either_way() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, "old").unwrap();
        let lost = || Err(std::io::Error::other("lost"));
        let rename = |a: &Path, b: &Path| std::fs::rename(a, b);
        assert!(write_back(&path, b"old", b"new", lost, rename).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        std::fs::hard_link(&path, dir.path().join("second")).unwrap();
        assert!(write_back(&path, b"old", b"new", lost, rename).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_never_opened_for_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        if !made.is_ok_and(|s| s.success()) {
            panic!("mkfifo is needed for this test");
        }
        // No reader: opening it for writing would wait forever.
        let rename = |a: &Path, b: &Path| std::fs::rename(a, b);
        let e = write_back(&path, b"", b"new", || Ok(()), rename).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        use std::os::unix::fs::FileTypeExt as _;
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_fifo());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Runs `f` on a thread and waits for it at most a minute; on a timeout `unblock` is
    /// called (to free the thread) and the test fails.
    #[cfg(unix)]
    fn bounded<T: Send + 'static>(
        what: &str,
        f: impl FnOnce() -> T + Send + 'static,
        unblock: impl FnOnce(),
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(v) => {
                t.join().unwrap();
                v
            }
            Err(_) => {
                unblock();
                let _ = t.join();
                panic!("{what}: still blocked after a minute");
            }
        }
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(
            made.is_ok_and(|s| s.success()),
            "mkfifo is needed for this test"
        );
    }

    /// Opens the FIFO at `path` without waiting (the other end of a thread stuck in `open`).
    #[cfg(unix)]
    fn poke_fifo(path: &Path, write: bool) {
        use rustix::fs::{Mode, OFlags};
        let how = if write {
            OFlags::WRONLY
        } else {
            OFlags::RDONLY
        };
        let _ = rustix::fs::open(path, how | OFlags::NONBLOCK, Mode::empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_kubeconfig_is_never_opened_for_reading_either() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        mkfifo(&path);
        // No writer: opening it for reading would wait forever, with the lock held.
        let p = path.clone();
        let err = bounded(
            "the write-back of a FIFO kubeconfig",
            move || write_auth_provider_config(&p, "me", &[("id-token", "x")], PATIENCE, None),
            || poke_fifo(&path, true),
        )
        .unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        let p = path.clone();
        let read = bounded(
            "the re-read of a FIFO kubeconfig",
            move || read_auth_provider_config(&p, "me"),
            || poke_fifo(&path, true),
        );
        assert_eq!(read, None);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "lock left"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_swapped_in_before_the_in_place_write_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let victim = dir.path().join("victim");
        std::fs::write(&path, "old text").unwrap();
        std::fs::write(&victim, "not a kubeconfig").unwrap();
        // Between the first look and the in-place write (here: while the rename is tried),
        // someone who may write the folder puts a link to another file in its place.
        let swap = |_: &Path, to: &Path| {
            std::fs::remove_file(to).unwrap();
            std::os::unix::fs::symlink(&victim, to).unwrap();
            Err(std::io::Error::from_raw_os_error(16))
        };
        let e = write_back(&path, b"old text", b"new text", || Ok(()), swap).unwrap_err();
        assert!(e.to_string().contains("replaced"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"not a kubeconfig");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "temporary file left"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_swapped_in_before_the_in_place_write_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, "old text").unwrap();
        let p = path.clone();
        let result = bounded(
            "an in-place write to a FIFO swapped in",
            move || {
                let swap = |_: &Path, to: &Path| {
                    std::fs::remove_file(to).unwrap();
                    mkfifo(to);
                    Err(std::io::Error::from_raw_os_error(16))
                };
                write_back(&p, b"old text", b"new text", || Ok(()), swap).map_err(|e| e.to_string())
            },
            || poke_fifo(&path, false),
        );
        let e = result.unwrap_err();
        assert!(
            e.contains("not a regular file") || e.contains("replaced"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn temporary_names_taken_by_someone_else_do_not_stop_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, ONE_USER).unwrap();
        // Another user of a shared folder makes the names this process will use next (the
        // process id and a counter: foreseeable), as files and as links elsewhere.
        let next = TMP_NEXT.load(Ordering::Relaxed);
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("theirs");
        std::fs::write(&target, "theirs").unwrap();
        for n in next..next + 256 {
            let name = dir.path().join(format!(
                ".config.kube-informer-{}-{n}.tmp",
                std::process::id()
            ));
            if n % 2 == 0 {
                std::fs::write(&name, "taken").unwrap();
            } else {
                std::os::unix::fs::symlink(&target, &name).unwrap();
            }
        }
        write_auth_provider_config(&path, "me", &[("id-token", "new")], PATIENCE, None).unwrap();
        assert_eq!(id_token(&path).as_deref(), Some("new"));
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
        // The links stay. (The files go: one user plays both here, so they are ours, and
        // a temporary file of ours found under the lock was left behind by a dead writer;
        // another user's never goes.)
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 129);
    }

    #[cfg(unix)]
    #[test]
    fn a_file_we_may_not_write_is_refused_as_kubectl_refuses_it() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, ONE_USER).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        if std::fs::OpenOptions::new().write(true).open(&path).is_ok() {
            // Root (or CAP_DAC_OVERRIDE) may write any file, kubectl as root too: nothing
            // to refuse here.
            eprintln!("skipped: this user may write a 0400 file (running as root?)");
            return;
        }
        let before = inode(&path);
        let err = write_auth_provider_config(&path, "me", &[("id-token", "new")], PATIENCE, None)
            .unwrap_err();
        assert!(err.contains("ermission denied"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), ONE_USER);
        assert_eq!(inode(&path), before, "replaced by a rename");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o7777, 0o400);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_temporary_file_left_by_a_process_that_died_is_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(&path, ONE_USER).unwrap();
        // A process died between writing its temporary file and the rename.
        let left = dir.path().join(".config.kube-informer-999999-3.tmp");
        std::fs::write(&left, ONE_USER.replace("old", "a-token-of-then")).unwrap();
        // Not ours to remove: other names, a directory, a link, a file with two names.
        let keep = [
            ".config.kube-informer-1-x.tmp",
            ".other.kube-informer-1-1.tmp",
            "config.kube-informer-1-1.tmp",
            ".config.kube-informer--1.tmp",
        ];
        for k in keep {
            std::fs::write(dir.path().join(k), "x").unwrap();
        }
        std::fs::create_dir(dir.path().join(".config.kube-informer-1-2.tmp")).unwrap();
        std::os::unix::fs::symlink(&path, dir.path().join(".config.kube-informer-1-3.tmp"))
            .unwrap();
        std::fs::hard_link(
            dir.path().join(keep[0]),
            dir.path().join(".config.kube-informer-1-4.tmp"),
        )
        .unwrap();
        write_auth_provider_config(&path, "me", &[("id-token", "new")], PATIENCE, None).unwrap();
        assert_eq!(id_token(&path).as_deref(), Some("new"));
        assert!(!left.exists(), "the left temporary file is still there");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1 + keep.len() + 3
        );
    }
}
