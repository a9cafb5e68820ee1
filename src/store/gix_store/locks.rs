//! The locks of this host's writers: the writer lock they take turns on
//! (an OS file lock under `.git/loopx/`, released by the kernel when its
//! holder dies), other such locks, and the age of a lock git's ref update
//! left on the state ref. A writer's first turn clears what killed writers
//! left behind.

use std::path::PathBuf;

use super::Repository;

impl Repository {
    /// Opens (creating it once) a lock file under `.git/loopx/`; the lock is
    /// the OS's, on the open file, and dies with its last holder.
    /// `.git/loopx/<name>`, locked by the OS for as long as the file
    /// returned is open; `None` when another process holds it (or it
    /// cannot be made).
    pub fn try_lock_local(&self, name: &str) -> Option<std::fs::File> {
        let file = self.lock_file(name)?;
        file.try_lock().ok()?;
        Some(file)
    }

    pub(super) fn lock_file(&self, name: &str) -> Option<std::fs::File> {
        let dir = self.local_dir();
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(name))
            .ok()
    }

    /// Serializes this host's writers, so they take turns instead of losing
    /// CAS races and redoing their work. Only an optimisation: correctness
    /// comes from the compare-and-swap, and the lock (an OS file lock) is
    /// released by the kernel if its holder dies. `None` when unavailable.
    pub fn writer_lock(&self) -> Option<std::fs::File> {
        // A writer's first turn clears what killed writers left behind.
        if !self.cleaned.replace(true) {
            crate::store::health::remove_leftovers(&self.leftover_dirs());
        }
        // `LOOPX_WRITER_LOCK=0` turns the lock off: the race tests use it to
        // race writers on the compare-and-swap alone.
        if std::env::var_os("LOOPX_WRITER_LOCK").is_some_and(|v| v == "0") {
            return None;
        }
        let file = self.lock_file("writer.lock")?;
        file.lock().ok()?;
        if !self.cleared.replace(true) {
            self.clear_dead_locks();
            self.heal_after_prune();
        }
        Some(file)
    }

    /// Removes the ref locks ([`health::ref_locks`]) older than any live
    /// writer holds one ([`health::STALE_LOCK_AGE`]): a writer or a `git gc`
    /// killed inside its ref update left them, and every later write (or
    /// gc) would refuse. Only while holding the writer lock, so that no
    /// git-loopx writer of this host is inside its ref update. Returns
    /// whether one was removed.
    pub(crate) fn clear_dead_locks(&self) -> bool {
        match crate::store::health::remove_stale_locks(&self.common_dir) {
            Ok(removed) => {
                for lock in &removed {
                    tracing::warn!(
                        "removed {}, {}s old: a process killed inside its ref update left it",
                        lock.path.display(),
                        lock.age.as_secs()
                    );
                }
                !removed.is_empty()
            }
            Err(e) => {
                tracing::warn!("could not remove a stale ref lock: {e}");
                false
            }
        }
    }

    /// Age in seconds of a lock file left on the state ref, if one exists.
    pub fn lock_age(&self) -> Option<(PathBuf, u64)> {
        let lock = self
            .common_dir
            .join(format!("{}.lock", crate::store::STATE_REF));
        let modified = std::fs::metadata(&lock).ok()?.modified().ok()?;
        let age = modified.elapsed().map_or(0, |d| d.as_secs());
        Some((lock, age))
    }
}
