//! What a crash or a hostile disk left in the repository (see
//! `store::health`), and git's own automatic maintenance after a write.

use std::path::PathBuf;

use super::{git_err, GixStore};
use crate::store::{health, Error, STATE_REF};

/// git's `gc.auto` and `gc.autoPackLimit` defaults.
const GC_AUTO: i64 = 6700;
const GC_AUTO_PACK_LIMIT: i64 = 50;

impl GixStore {
    /// Whether git's automatic maintenance would find work, judged as `git
    /// gc --auto` judges it: `maintenance.auto` not false, and more loose
    /// objects than `gc.auto` (estimated, as git does, from `objects/17`)
    /// or more packs than `gc.autoPackLimit`. Costs two directory listings;
    /// `git maintenance run --auto` decides again for itself.
    pub fn maintenance_due(&self) -> bool {
        let repo = self.repo.borrow();
        let config = repo.config_snapshot();
        if config.boolean("maintenance.auto") == Some(false) {
            return false;
        }
        let int = |key: &str, default: i64| config.integer(key).unwrap_or(default);
        let objects = repo.objects.store_ref().path().to_owned();
        let gc_auto = int("gc.auto", GC_AUTO);
        let loose = gc_auto > 0
            && std::fs::read_dir(objects.join("17")).map_or(0, |d| d.count() as i64)
                > (gc_auto + 255) / 256;
        let pack_limit = int("gc.autoPackLimit", GC_AUTO_PACK_LIMIT);
        loose
            || pack_limit > 0
                && std::fs::read_dir(objects.join("pack")).map_or(0, |d| {
                    d.filter_map(Result::ok)
                        .filter(|e| e.file_name().as_encoded_bytes().ends_with(b".pack"))
                        .count() as i64
                }) > pack_limit
    }

    /// Lock files on the state ref, remote-tracking state refs and
    /// `packed-refs`, with their ages.
    pub fn ref_locks(&self) -> Vec<health::RefLock> {
        health::ref_locks(&self.common_dir)
    }

    /// Removes the stale ones (older than [`health::STALE_LOCK_AGE`]) while
    /// holding the writer lock, so that no git-loopx writer of this host is
    /// between taking a ref lock and letting it go. `None` when a live
    /// writer holds the writer lock: nothing is removed then.
    pub fn remove_stale_locks(&self) -> Result<Option<Vec<health::RefLock>>, Error> {
        let Some(lock) = self.lock_file("writer.lock") else {
            return Ok(None);
        };
        if lock.try_lock().is_err() {
            return Ok(None);
        }
        health::remove_stale_locks(&self.common_dir)
            .map(Some)
            .map_err(|e| git_err("removing a stale lock", e))
    }

    /// The directories a write creates files in that refuse a new file.
    pub fn unwritable(&self) -> Vec<health::Unwritable> {
        let objects = self.repo.borrow().objects.store_ref().path().to_owned();
        let refs = self.common_dir.join(STATE_REF);
        let refs = refs.parent().unwrap_or(&self.common_dir).to_owned();
        let logs = self.common_dir.join("logs").join(STATE_REF);
        let logs = logs.parent().unwrap_or(&self.common_dir).to_owned();
        health::unwritable(&[objects.clone(), objects.join("pack"), refs, logs])
    }

    /// Where a killed writer can leave temporary files.
    pub(super) fn leftover_dirs(&self) -> Vec<PathBuf> {
        let local = self.local_dir();
        let pack = self.repo.borrow().objects.store_ref().path().join("pack");
        vec![pack, local.join("cache"), local]
    }

    /// The state ref's reflog, oldest first.
    pub fn state_reflog(&self) -> Vec<health::Moved> {
        health::state_reflog(&self.common_dir)
    }
}
