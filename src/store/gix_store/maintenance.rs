//! What a crash or a hostile disk left in the repository (see
//! `store::health`), and git's own automatic maintenance after a write.

use std::path::PathBuf;

use super::{git_err, Repository};
use crate::store::{health, Error, STATE_REF};

/// git's `gc.auto` and `gc.autoPackLimit` defaults.
const GC_AUTO: i64 = 6700;
const GC_AUTO_PACK_LIMIT: i64 = 50;

/// A pack index this large (about a million objects) is worth a
/// multi-pack-index: see [`Due::multi_pack_index`].
const BIG_PACK_INDEX: u64 = 32 << 20;

/// What a write's upkeep starts, in the background.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Due {
    /// git's automatic maintenance would find work, judged as `git gc
    /// --auto` judges it: `maintenance.auto` not false, and more loose
    /// objects than `gc.auto` (estimated, as git does, from `objects/17`)
    /// or more packs than `gc.autoPackLimit`. `git maintenance run --auto`
    /// decides again for itself.
    pub maintenance: bool,
    /// A pack's index is over [`BIG_PACK_INDEX`] and no multi-pack-index
    /// covers the packs (`git gc` removes it): `git multi-pack-index write`
    /// is due. gix-pack checks a pack index whole when a process first
    /// opens it (every object's offset), about 1 ms a million objects, and
    /// a write or a cold read opens it; a multi-pack-index it opens in
    /// constant time. At a million writebacks (8 million objects) a
    /// writeback took 15 ms without one and 6 ms with one. Not while a `git
    /// gc` runs (its `gc.pid`): the packs are about to change. Off with
    /// `maintenance.auto=false` or `core.multiPackIndex=false`.
    pub multi_pack_index: bool,
}

impl Repository {
    /// What git's own upkeep would find to do after a write (see [`Due`]).
    /// Costs two directory listings and a stat per pack index.
    pub fn upkeep_due(&self) -> Due {
        let repo = self.repo.borrow();
        let config = repo.config_snapshot();
        if config.boolean("maintenance.auto") == Some(false) {
            return Due::default();
        }
        let int = |key: &str, default: i64| config.integer(key).unwrap_or(default);
        let objects = repo.objects.store_ref().path().to_owned();
        let gc_auto = int("gc.auto", GC_AUTO);
        let loose = gc_auto > 0
            && std::fs::read_dir(objects.join("17")).map_or(0, |d| d.count() as i64)
                > (gc_auto + 255) / 256;
        let (mut packs, mut big_index, mut midx) = (0, false, false);
        for entry in std::fs::read_dir(objects.join("pack"))
            .into_iter()
            .flatten()
        {
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            let name = name.as_encoded_bytes();
            packs += i64::from(name.ends_with(b".pack"));
            midx |= name == b"multi-pack-index";
            big_index |=
                name.ends_with(b".idx") && entry.metadata().is_ok_and(|m| m.len() > BIG_PACK_INDEX);
        }
        let pack_limit = int("gc.autoPackLimit", GC_AUTO_PACK_LIMIT);
        let maintenance = loose || pack_limit > 0 && packs > pack_limit;
        Due {
            maintenance,
            multi_pack_index: !maintenance
                && big_index
                && !midx
                && config.boolean("core.multiPackIndex") != Some(false)
                && !self.common_dir.join("gc.pid").exists(),
        }
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
