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
//! - The new text goes to a temporary file in the same folder (created readable by the
//!   owner only, then given the original file's permissions), is flushed to disk, and is
//!   renamed over the file: a reader sees the old file or the new one, never half of one. A
//!   symbolic link is followed: the file it points to is replaced, the link stays.
//! - Error messages name the file and what failed, never a value.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_yaml::{Mapping, Value};

use super::file_lock::{FileLock, Patience};
use crate::client::Cancel;

/// Sets `changes` (key, value) in the `auth-provider.config` of user `user` in the kubeconfig
/// at `path`, atomically, holding `<path>.lock` (waiting for it as `patience` says, or
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
    let text = std::fs::read_to_string(&real).map_err(|e| format!("cannot read {shown}: {e}"))?;
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
    replace_atomically(&real, new_text.as_bytes(), || {
        // A holder whose lock was judged stale and removed must not write over the
        // writer that took it since.
        lock.still_held()
            .then_some(())
            .ok_or_else(|| std::io::Error::other("the lock was removed by another program"))
    })
    .map_err(|e| format!("writing {shown}: {e}"))?;
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
    let text = std::fs::read_to_string(path).ok()?;
    let doc: Value = serde_yaml::from_str(&text).ok()?;
    let entry = doc
        .get("users")?
        .as_sequence()?
        .iter()
        .find(|u| u.get("name").and_then(Value::as_str) == Some(user))?;
    let config = entry.get("user")?.get("auth-provider")?.get("config")?;
    Some(string_settings(config.as_mapping()?))
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

/// Replaces `path` with `bytes` through a temporary file and a rename in the same folder,
/// keeping the file's permissions; `may_rename` is asked last, just before the rename.
fn replace_atomically(
    path: &Path,
    bytes: &[u8],
    may_rename: impl FnOnce() -> std::io::Result<()>,
) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kubeconfig".into());
    let permissions = std::fs::metadata(path)?.permissions();
    let tmp = dir.join(format!(
        ".{name}.kube-informer-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let written = (|| {
        let mut f = options.open(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(permissions)?;
        f.sync_all()?;
        drop(f);
        may_rename()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
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
}
