//! The lock kubectl takes before it rewrites a kubeconfig file: a file named `<file>.lock`
//! beside it, created only if it does not exist (`O_EXCL`), removed when done.
//!
//! Why: several programs (kubectl, other processes of this one, other users' providers in
//! this process) may write refreshed tokens into one kubeconfig at the same moment. Each
//! reads the file, changes its own user and writes the whole file back; without a lock
//! the last writer silently drops the others' new tokens, and with an issuer that rotates
//! refresh tokens those users are locked out. Holding `<file>.lock` around the
//! read-change-write makes the writers take turns, across processes, and it is the very
//! lock client-go's `clientcmd` takes, so kubectl takes turns with us too.
//!
//! What this adds to client-go's lock (which fails at once when the lock exists):
//!
//! - **Waiting**: a lock that exists is retried with a short, growing, jittered pause, up
//!   to a bound ([`PATIENCE`]); then the write fails (the caller logs it). Any other error
//!   creating the lock (a read-only file system, a folder we may not write) fails at once:
//!   waiting would not help.
//! - **Stale locks**: a lock whose modification time is older than the bound's
//!   `stale_after` was left by a program that died holding it (a lock is held for the few
//!   milliseconds a write takes). It is moved aside under a unique name, checked to be the
//!   very file judged stale (device, inode, modification time and size), and deleted; if
//!   a fresh lock was moved aside instead (its holder replaced the stale one in between),
//!   it is put back.
//! - **Ownership**: our lock holds a unique line (process id, a counter, the time), and
//!   both the last check before the file is replaced and the removal look at that line and
//!   the lock's identity first, so a holder whose lock was broken neither writes as if it
//!   held it nor removes another program's lock.
//!
//! The lock is advisory, as kubectl's: a program that does not take it is not stopped.
//! The lock is named after the path as given (as client-go does), so two programs that
//! reach one file through different symbolic links do not exclude each other.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::client::Cancel;

/// How long to wait for a lock another program holds, and when a lock counts as left
/// behind by a program that died.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Patience {
    /// How long to keep retrying a lock that exists.
    pub wait: Duration,
    /// A lock last modified longer ago than this is stale and is removed.
    pub stale_after: Duration,
}

/// The bounds used for kubeconfig write-backs: a write holds the lock for milliseconds,
/// so ten seconds of waiting covers a crowd of writers, and a lock thirty seconds old was
/// left by a program that died.
pub(crate) const PATIENCE: Patience = Patience {
    wait: Duration::from_secs(10),
    stale_after: Duration::from_secs(30),
};

/// The longest pause between two attempts.
const MAX_PAUSE: Duration = Duration::from_millis(50);

static NEXT: AtomicU64 = AtomicU64::new(0);

/// What tells one lock file from another that took its name later.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Identity {
    dev: u64,
    ino: u64,
    modified: Option<SystemTime>,
    len: u64,
}

fn identity(meta: &std::fs::Metadata) -> Identity {
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt as _;
        (meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0, 0);
    Identity {
        dev,
        ino,
        modified: meta.modified().ok(),
        len: meta.len(),
    }
}

/// `<file>.lock`, client-go's name for the lock of `file`.
pub(crate) fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// A held `<file>.lock`; dropping it removes the lock (if it is still ours).
pub(crate) struct FileLock {
    path: PathBuf,
    id: Identity,
    line: String,
}

impl std::fmt::Debug for FileLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLock")
            .field("path", &self.path)
            .finish()
    }
}

impl FileLock {
    /// Takes the lock of `file`, waiting as `patience` says while another program holds
    /// it, and giving up when `cancel` fires. `Err` says why (the lock's path and the
    /// reason).
    pub(crate) fn acquire(
        file: &Path,
        patience: Patience,
        cancel: Option<&Cancel>,
    ) -> Result<FileLock, String> {
        let path = lock_path(file);
        let deadline = crate::deadline::after(patience.wait);
        let mut pause = Duration::from_millis(1);
        loop {
            match create(&path) {
                Ok(lock) => return Ok(lock),
                Err(e) if retryable(&e) => {}
                Err(e) => return Err(format!("cannot create the lock {}: {e}", path.display())),
            }
            // Checked on every round, so a lock that keeps changing cannot hold us past the
            // deadline either.
            let changed = break_if_stale(&path, patience.stale_after);
            if cancel.is_some_and(Cancel::is_cancelled) {
                return Err(format!(
                    "cancelled while waiting for the lock {}",
                    path.display()
                ));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "the lock {} is held by another program (waited {:?}; remove it if no program is writing the file)",
                    path.display(),
                    patience.wait
                ));
            }
            if !changed {
                std::thread::sleep(jittered(pause).min(deadline - now));
                pause = (pause * 2).min(MAX_PAUSE);
            }
        }
    }

    /// Whether the lock file is still the one we created (a program that judged it stale
    /// may have removed it).
    pub(crate) fn still_held(&self) -> bool {
        let same_file =
            std::fs::symlink_metadata(&self.path).is_ok_and(|m| identity(&m) == self.id);
        same_file && std::fs::read_to_string(&self.path).is_ok_and(|l| l == self.line)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if self.still_held() {
            if let Err(e) = std::fs::remove_file(&self.path) {
                log::warn!("cannot remove the lock {}: {e}", self.path.display());
            }
        }
    }
}

/// An error creating the lock that means "someone holds it".
fn retryable(e: &std::io::Error) -> bool {
    // Windows answers "access denied" for a name whose file is being deleted.
    e.kind() == std::io::ErrorKind::AlreadyExists
        || (cfg!(windows) && e.kind() == std::io::ErrorKind::PermissionDenied)
}

/// Creates the lock file if no file (or link) has that name.
fn create(path: &Path) -> std::io::Result<FileLock> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut f = options.open(path)?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let line = format!(
        "kube-informer {} {} {nanos}\n",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let written = f.write_all(line.as_bytes()).and_then(|()| f.metadata());
    match written {
        Ok(meta) => Ok(FileLock {
            path: path.to_path_buf(),
            id: identity(&meta),
            line,
        }),
        Err(e) => {
            drop(f);
            let _ = std::fs::remove_file(path);
            Err(e)
        }
    }
}

/// Removes the lock at `path` if it is stale; `true` when the lock is gone or changed
/// (try again at once), `false` when a live lock is there (wait).
fn break_if_stale(path: &Path, stale_after: Duration) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return true;
    };
    if meta.is_dir() {
        // Not a lock any program here made; waiting ends in a clear error.
        return false;
    }
    // A modification time in the future (clocks differ) is not stale.
    let age = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok());
    if age.is_none_or(|a| a < stale_after) {
        return false;
    }
    // A short name of its own in the same folder (the lock's name plus a suffix could be
    // too long for the file system).
    let aside = path.with_file_name(format!(
        ".kube-informer-{}-{}.stale-lock",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if std::fs::rename(path, &aside).is_err() {
        // Gone already (another waiter broke it): try again at once; still there (it
        // cannot be moved): wait for it like a live one.
        return std::fs::symlink_metadata(path).is_err();
    }
    let moved = std::fs::symlink_metadata(&aside).map(|m| identity(&m));
    if moved.as_ref().is_ok_and(|m| *m == identity(&meta)) {
        log::warn!(
            "removed the lock {}, left behind {:?} ago by a program that did not finish",
            path.display(),
            age.unwrap_or_default()
        );
    } else if std::fs::hard_link(&aside, path).is_err() {
        // A fresh lock replaced the stale one before we moved it: it goes back, unless
        // yet another lock was made since; then the moved lock's holder finds it gone at
        // its last check before replacing the file, and gives its write up.
        if std::fs::symlink_metadata(path).is_err() {
            let _ = std::fs::rename(&aside, path);
        }
    }
    let _ = std::fs::remove_file(&aside);
    true
}

/// `pause` spread over half to one and a half times itself, so waiters do not retry in
/// step (randomness from std's per-process hash keys).
fn jittered(pause: Duration) -> Duration {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
    let fraction = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    pause.mul_f64(0.5 + fraction)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    fn quick(wait_ms: u64) -> Patience {
        Patience {
            wait: Duration::from_millis(wait_ms),
            stale_after: Duration::from_secs(30),
        }
    }

    #[test]
    fn holders_take_turns_and_the_lock_is_gone_after() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (file, inside, most) = (file.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..20 {
                        let lock = FileLock::acquire(&file, quick(60_000), None).unwrap();
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        std::thread::yield_now();
                        assert!(lock.still_held());
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "never two holders at once");
        assert!(!lock_path(&file).exists());
    }

    #[test]
    fn a_live_lock_is_waited_for_within_the_bound_and_then_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        // kubectl's lock: empty, no permissions.
        std::fs::write(lock_path(&file), "").unwrap();
        let err = FileLock::acquire(&file, quick(100), None).unwrap_err();
        assert!(err.contains("config.lock") && err.contains("held"), "{err}");
        assert!(
            lock_path(&file).exists(),
            "another program's live lock stays"
        );

        // Released while we wait: taken.
        let path = lock_path(&file);
        let remover = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::remove_file(path).unwrap();
        });
        let lock = FileLock::acquire(&file, quick(60_000), None).unwrap();
        remover.join().unwrap();
        assert!(lock.still_held());
        drop(lock);
        assert!(!lock_path(&file).exists());
    }

    #[test]
    fn a_cancelled_wait_ends() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        std::fs::write(lock_path(&file), "").unwrap();
        let cancel = Cancel::new();
        cancel.cancel();
        let err = FileLock::acquire(&file, quick(600_000), Some(&cancel)).unwrap_err();
        assert!(err.contains("cancelled"), "{err}");
    }

    #[test]
    fn a_stale_lock_is_removed_and_taken() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        let stale = std::fs::File::create(lock_path(&file)).unwrap();
        stale
            .set_modified(SystemTime::now() - Duration::from_secs(31))
            .unwrap();
        drop(stale);
        let lock = FileLock::acquire(&file, quick(100), None).unwrap();
        assert!(lock.still_held());
        // Nothing left aside.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(lock);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_broken_lock_is_not_removed_by_its_old_holder() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config");
        let ours = FileLock::acquire(&file, quick(100), None).unwrap();
        // Another program judged it stale and made its own.
        std::fs::remove_file(lock_path(&file)).unwrap();
        std::fs::write(lock_path(&file), "theirs").unwrap();
        assert!(!ours.still_held());
        drop(ours);
        assert_eq!(std::fs::read_to_string(lock_path(&file)).unwrap(), "theirs");
    }

    #[test]
    fn a_lock_that_cannot_be_created_fails_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("no-such-folder").join("config");
        let started = Instant::now();
        let err = FileLock::acquire(&file, quick(600_000), None).unwrap_err();
        assert!(err.contains("cannot create the lock"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(300), "no waiting");
    }
}
