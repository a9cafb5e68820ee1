//! The repository behind the state branch: the only module that imports `gix`.
//!
//! [`GixStore`] is what the rest of the crate holds: the [`Repository`],
//! and beside it the host-local state cache ([`StateCache`]) and host
//! records ([`HostRecords`]) kept under its `.git/loopx/`. The repository
//! is split by concern: this file opens it and refuses what it cannot
//! serve; [`config`] reads its config and identity; [`read`] reads state
//! commits' trees and history; [`objects`] writes commits as loose
//! objects, as `git commit` does; [`prune`] keeps what a write wrote
//! against git's prune; [`refs`] moves refs with gix's ref transactions,
//! as `git update-ref` does; [`ancestry`] answers merge-base questions;
//! [`locks`] holds the writer lock; [`maintenance`] reports what a crash
//! left behind and asks git for its own automatic maintenance.
//!
//! Invariants: the user's HEAD, index and working tree are never read for
//! writing nor touched; the state ref moves only through a ref transaction
//! with `MustExistAndMatch(old tip)` (or `MustNotExist` for the root commit),
//! checked under the ref lock; one reflog entry per move; a write is
//! acknowledged only once every object it wrote is in the object store after
//! the ref reached it (see `prune::keep_loose`).

mod ancestry;
mod config;
mod locks;
mod maintenance;
mod objects;
mod owner;
mod prune;
mod read;
mod refs;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::ObjectId;

use crate::store::cache::StateCache;
use crate::store::durable::Durability;
use crate::store::journal::Journal;
use crate::store::records::HostRecords;
use crate::store::{Error, Oid};

pub use maintenance::Due;
use objects::LooseObject;
pub use read::ChangedFile;

/// How many pack indexes gix's object store can hold. A fixed number spares
/// every command a listing of `objects/pack` with a `stat` of each file when
/// the repository is opened (gix sizes its table from the disk otherwise);
/// git's automatic maintenance keeps the pack count far below it, and a
/// repository past it reopens with the table sized from the disk.
const INDEX_SLOTS: u16 = 1024;

/// A repository opened for its state branch, with what this host keeps
/// beside it: the composition the rest of the crate holds. Nearly every
/// caller asks the repository, so the store derefs to it; the cache and
/// the records are reached by name.
pub struct GixStore {
    repo: Repository,
    cache: StateCache,
    records: HostRecords,
}

impl GixStore {
    /// Finds the repository containing `dir` (a worktree, a linked worktree,
    /// a subdirectory or a bare repository) and refuses what it cannot serve.
    pub fn discover(dir: &Path) -> Result<Self, Error> {
        let repo = Repository::discover(dir)?;
        let local = repo.local_dir();
        Ok(GixStore {
            cache: StateCache::new(local.join("cache")),
            records: HostRecords::new(local.join("records")),
            repo,
        })
    }

    /// The repository: objects, refs, ancestry, locks and upkeep.
    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The parsed-state cache of this host (see `store::cache`).
    pub fn cache(&self) -> &StateCache {
        &self.cache
    }

    /// The host-local records under `.git/loopx/records/`.
    pub fn records(&self) -> &HostRecords {
        &self.records
    }
}

impl std::ops::Deref for GixStore {
    type Target = Repository;

    fn deref(&self) -> &Repository {
        &self.repo
    }
}

/// The git repository behind the state branch: its objects, refs and
/// ancestry, how its files are synced, and what a write leaves to clean up.
pub struct Repository {
    /// Replaced by a fresh open when gix's object store loses track of the
    /// packs under a concurrent repack (see `settled_afresh`).
    repo: RefCell<gix::Repository>,
    common_dir: PathBuf,
    workdir: Option<PathBuf>,
    /// The objects of recent writes, to write again what a bare `git prune`
    /// deleted (see `prune::restore_pruned`).
    written: Journal,
    /// The objects of detached commits no ref reaches yet, kept to be
    /// checked once one does (see `Repository::settle_detached`).
    pending: RefCell<Vec<(Oid, Vec<LooseObject>)>>,
    /// What is synced to disk (see `store::durable`).
    durability: Durability,
    /// `core.sharedRepository` is set: objects are written through gix's
    /// store, which gives them its permissions.
    shared_repository: bool,
    /// Whether this process removed what killed writers left (see
    /// `health::remove_leftovers`); done once, by its first write.
    cleaned: Cell<bool>,
    /// Whether this store's first writer turn cleared dead ref locks.
    cleared: Cell<bool>,
    /// Every commit an ancestry question read, kept for the next one (see
    /// `ancestry`): commits do not change.
    commits: RefCell<gix::hashtable::HashMap<ObjectId, ancestry::Node>>,
}

fn git_err(context: &str, e: impl std::fmt::Display) -> Error {
    Error::Git(format!("{context}: {e}"))
}

fn oid(id: impl Into<ObjectId>) -> Oid {
    Oid(id.into().to_string())
}

fn object_id(oid: &Oid) -> Result<ObjectId, Error> {
    ObjectId::from_hex(oid.0.as_bytes()).map_err(|e| git_err(&format!("bad object id {oid}"), e))
}

impl Repository {
    /// See [`GixStore::discover`].
    fn discover(dir: &Path) -> Result<Self, Error> {
        // `git -c` reaches a git subcommand only as GIT_CONFIG_PARAMETERS,
        // which gix does not read: given as overrides, above every file.
        let overrides = owner::command_line_overrides();
        let slots = |options: gix::open::Options, _| {
            options
                .object_store_slots(gix::odb::store::init::Slots::Given(INDEX_SLOTS))
                .config_overrides(overrides.clone())
        };
        let repo = match gix::ThreadSafeRepository::discover_opts(dir, Default::default(), slots) {
            Ok(repo) => gix::Repository::from(repo),
            Err(_) if reftable_above(dir) => return Err(Error::UnsupportedRefStorage),
            Err(e) => return Err(unopenable(dir, &e)),
        };
        owner::check(&repo, dir)?;
        if repo.common_dir().join("reftable").is_dir() || uses_reftable(&repo) {
            return Err(Error::UnsupportedRefStorage);
        }
        let common_dir = repo.common_dir().to_owned();
        let shared_repository = repo
            .config_snapshot()
            .string("core.sharedRepository")
            .is_some();
        let durability = {
            let config = repo.config_snapshot();
            let string = |key: &str| config.string(key).map(|v| v.to_str_lossy().into_owned());
            Durability::from_config(
                string("core.fsync").as_deref(),
                config.boolean("core.fsyncObjectFiles"),
                string("core.fsyncMethod").as_deref(),
            )
        };
        let written = common_dir.join("loopx").join("written");
        Ok(Repository {
            durability,
            shared_repository,
            cleaned: Default::default(),
            cleared: Default::default(),
            written: Journal::sized(written, prune::WRITTEN_BYTES),
            common_dir,
            workdir: repo.workdir().map(Path::to_owned),
            repo: RefCell::new(repo),
            pending: Default::default(),
            commits: Default::default(),
        })
    }

    /// The `.git` directory shared by all worktrees.
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// Host-local, disposable data of git-loopx: `<common dir>/loopx`.
    pub fn local_dir(&self) -> PathBuf {
        self.common_dir.join("loopx")
    }

    /// The working tree of the repository we were discovered in, if any.
    pub fn workdir(&self) -> Option<&Path> {
        self.workdir.as_deref()
    }

    /// Refuses to write while any worktree has `loopx-state` checked out:
    /// its working tree would silently diverge from the branch.
    pub fn check_not_checked_out(&self) -> Result<(), Error> {
        let repo = self.repo.borrow();
        match worktree_with_state_checked_out(repo.common_dir()) {
            Some(path) => Err(Error::CheckedOut(path)),
            None => Ok(()),
        }
    }

    /// [`settled`], and from the second retry on with the repository opened
    /// afresh: a long-lived gix object store can lose track of objects that
    /// a repack moved, and then misses them for good; a new one lists the
    /// packs as they are now.
    ///
    /// A panic inside gix is taken the same way: gix-odb has been seen to
    /// assert on its own bookkeeping when a repack replaced packs under a
    /// first lookup (`load_index.rs`, "if the generation changed…"). The
    /// store is reopened and the attempt made again, instead of an agent's
    /// command dying.
    fn settled_afresh<T>(&self, mut attempt: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
        let mut tries = 0;
        let mut panicked = false;
        settled(|| {
            tries += 1;
            if tries > 2 || std::mem::take(&mut panicked) {
                self.reopen();
            }
            // An object still missing on the second look may be one a bare
            // `git prune` deleted under a write: written again if recorded.
            if tries == 2 {
                self.restore_pruned();
            }
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(&mut attempt)) {
                Ok(result) => result,
                Err(panic) => {
                    panicked = true;
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    Err(git_err("reading the object store (gix panicked)", what))
                }
            }
        })
    }

    fn reopen(&self) {
        let git_dir = self.repo.borrow().git_dir().to_owned();
        match gix::open(&git_dir) {
            Ok(repo) => *self.repo.borrow_mut() = repo,
            Err(e) => tracing::debug!("could not reopen {}: {e}", git_dir.display()),
        }
    }
}

/// Runs an object-level read or write again when it fails with a git error:
/// a `git gc` or `git maintenance` running beside us moves objects from loose
/// files into packs and from pack to pack, and a lookup can fall between the
/// two places. A short wait lets the other side finish its step; gix then
/// rescans the packs on the next miss. Other errors are returned at once.
fn settled<T>(mut attempt: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
    let mut tries = 0;
    loop {
        match attempt() {
            // Up to ~2 s in all: a repository repacked in a loop (the race
            // tests do) can move an object twice under one lookup.
            Err(Error::Git(e)) if tries < 8 => {
                tracing::debug!("git error, trying again: {e}");
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10 << tries.min(5)));
            }
            other => return other,
        }
    }
}

fn uses_reftable(repo: &gix::Repository) -> bool {
    repo.config_snapshot()
        .string("extensions.refStorage")
        .is_some_and(|v| v.eq_ignore_ascii_case(b"reftable"))
}

/// Why a repository could not be opened: an object format this build does
/// not read (SHA-256) is said as such, not as "not a git repository".
fn unopenable(dir: &Path, e: &(dyn std::error::Error + 'static)) -> Error {
    let mut cause = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if text.contains("objectFormat") || text.contains("Object format") {
            let format = text
                .rsplit("input=")
                .next()
                .filter(|f| f.len() < text.len())
                .unwrap_or("sha256")
                .trim_matches('"');
            return Error::UnsupportedObjectFormat(format.to_owned());
        }
        cause = c.source();
    }
    Error::NotARepo(dir.to_owned())
}

/// gix cannot open a reftable repository at all; tell that apart from "no repository".
fn reftable_above(dir: &Path) -> bool {
    dir.ancestors().any(|d| {
        d.join(".git/reftable").is_dir()
            || (d.join("reftable").is_dir() && d.join("HEAD").is_file())
    })
}

/// The worktree whose HEAD is `refs/heads/loopx-state`, if any.
fn worktree_with_state_checked_out(common_dir: &Path) -> Option<PathBuf> {
    let state = crate::store::STATE_REF;
    let points_at_state = |head: &Path| {
        std::fs::read_to_string(head).is_ok_and(|text| text.trim() == format!("ref: {state}"))
    };
    if points_at_state(&common_dir.join("HEAD")) {
        return Some(common_dir.parent().unwrap_or(common_dir).to_owned());
    }
    let entries = std::fs::read_dir(common_dir.join("worktrees")).ok()?;
    for entry in entries.flatten() {
        if points_at_state(&entry.path().join("HEAD")) {
            let gitdir = std::fs::read_to_string(entry.path().join("gitdir")).unwrap_or_default();
            let path = Path::new(gitdir.trim());
            return Some(path.parent().unwrap_or(path).to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_an_attempt_reopens_and_tries_again() {
        let dir = tempfile::tempdir().unwrap();
        gix::init(dir.path()).unwrap();
        let store = Repository::discover(dir.path()).unwrap();
        let mut calls = 0;
        let result = store.settled_afresh(|| {
            calls += 1;
            if calls == 1 {
                panic!("the object store lost track");
            }
            Ok(calls)
        });
        assert_eq!(result.unwrap(), 2);
        let mut calls = 0;
        let failed: Result<(), Error> = store.settled_afresh(|| {
            calls += 1;
            panic!("always");
        });
        assert!(calls > 1, "tried again");
        let message = failed.unwrap_err().to_string();
        assert!(
            message.contains("gix panicked") && message.contains("always"),
            "{message}"
        );
    }
}
