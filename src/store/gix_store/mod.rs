//! The repository behind the state branch: the only module that imports `gix`.
//!
//! Split by concern: this file opens the repository and reads its config
//! and identity; [`objects`] reads state trees and writes commits as loose
//! objects, as `git commit` does; [`refs`] moves refs with gix's ref
//! transactions, as `git update-ref` does; [`maintenance`] reports what a
//! crash left behind and asks git for its own automatic maintenance.
//!
//! Invariants: the user's HEAD, index and working tree are never read for
//! writing nor touched; the state ref moves only through a ref transaction
//! with `MustExistAndMatch(old tip)` (or `MustNotExist` for the root commit),
//! checked under the ref lock; one reflog entry per move; a write is
//! acknowledged only once every object it wrote is in the object store after
//! the ref reached it (see `objects::keep_loose`).

mod ancestry;
mod maintenance;
mod objects;
mod owner;
mod refs;

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::ObjectId;

use crate::model::Timestamp;
use crate::store::durable::Durability;
use crate::store::journal::Journal;
use crate::store::{CasResult, Checked, CommitInfo, Error, Oid, Snapshot};

pub use maintenance::Due;
use objects::LooseObject;

/// How many pack indexes gix's object store can hold. A fixed number spares
/// every command a listing of `objects/pack` with a `stat` of each file when
/// the repository is opened (gix sizes its table from the disk otherwise);
/// git's automatic maintenance keeps the pack count far below it, and a
/// repository past it reopens with the table sized from the disk.
const INDEX_SLOTS: u16 = 1024;

/// Name and email used when git config has no identity.
const FALLBACK_NAME: &str = "git-loopx";
const FALLBACK_EMAIL: &str = "git-loopx@localhost";

/// A repository opened for its state branch.
pub struct GixStore {
    /// Replaced by a fresh open when gix's object store loses track of the
    /// packs under a concurrent repack (see `settled_afresh`).
    repo: RefCell<gix::Repository>,
    common_dir: PathBuf,
    workdir: Option<PathBuf>,
    /// The cache's deltas (see `store::journal`).
    journal: Journal,
    /// Host-local records that must not expire (see `GixStore::host_record`).
    records: Journal,
    /// The objects of recent writes, to write again what a bare `git prune`
    /// deleted (see `objects::restore_pruned`).
    written: Journal,
    /// The objects of detached commits no ref reaches yet, kept to be
    /// checked once one does (see `GixStore::settle_detached`).
    pending: RefCell<Vec<(Oid, Vec<LooseObject>)>>,
    /// The state of the last commit this store made (see `GixStore::memo_take`).
    memo: RefCell<Option<(Oid, crate::model::State)>>,
    /// The state this store last read from the parsed-state cache, as read
    /// (its entries undecoded, so a copy is cheap): a sync asks for the
    /// same base and ancestor once per peer head.
    read_memo: RefCell<Option<(Oid, crate::model::State)>>,
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
    /// Credential rules a write may pass (`--allow-secret-pattern`).
    allowed_leaks: Vec<&'static str>,
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

impl GixStore {
    /// Finds the repository containing `dir` (a worktree, a linked worktree,
    /// a subdirectory or a bare repository) and refuses what it cannot serve.
    pub fn discover(dir: &Path) -> Result<Self, Error> {
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
        let local = common_dir.join("loopx");
        Ok(GixStore {
            durability,
            shared_repository,
            cleaned: Default::default(),
            cleared: Default::default(),
            journal: Journal::new(local.join("cache")),
            records: Journal::carrying(local.join("records")),
            written: Journal::sized(local.join("written"), objects::WRITTEN_BYTES),
            common_dir,
            workdir: repo.workdir().map(Path::to_owned),
            repo: RefCell::new(repo),
            pending: Default::default(),
            memo: RefCell::new(None),
            read_memo: RefCell::new(None),
            allowed_leaks: Vec::new(),
            commits: Default::default(),
        })
    }

    /// Lets writes through this store commit text that the named credential
    /// rules ([`crate::model::leaks::rules`]) match (`--allow-secret-pattern`).
    pub fn allow_leaks(&mut self, rules: Vec<&'static str>) {
        self.allowed_leaks = rules;
    }

    /// A host-local record under `.git/loopx/records/` (never on the
    /// branch): the value last set for `key`, `None` when unset or cleared.
    /// Records are appended to one file, so setting one creates no file.
    pub fn host_record(&self, key: &str) -> Option<Vec<u8>> {
        self.records.get(key).filter(|v| !v.is_empty())
    }

    /// The keys of the host-local records under `prefix`.
    pub fn host_record_keys(&self, prefix: &str) -> Vec<String> {
        self.records
            .entries()
            .into_iter()
            .map(|(k, _)| k)
            .filter(|k| k.starts_with(prefix))
            .collect()
    }

    /// Sets a host-local record; an empty value clears it.
    pub fn set_host_record(&self, key: &str, value: &[u8]) {
        self.records.append(key, value);
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

    fn lock_file(&self, name: &str) -> Option<std::fs::File> {
        let dir = self.local_dir();
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(name))
            .ok()
    }

    /// A string from git config (`loopx.agent`, say).
    pub fn config_string(&self, key: &str) -> Option<String> {
        let repo = self.repo.borrow();
        repo.config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().into_owned())
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

    /// The committer's name and email as git resolves them (environment,
    /// then `committer.*`, then `user.*`). Read directly rather than through
    /// `Repository::committer`, which also works out the local time zone by
    /// scanning the system's zoneinfo tree: a third of a small write's time.
    fn identity(&self) -> (String, String) {
        let repo = self.repo.borrow();
        let config = repo.config_snapshot();
        let pick = |var: &str, keys: [&str; 2], fallback: &str| {
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| {
                    keys.iter()
                        .find_map(|k| config.string(*k))
                        .map(|v| v.to_str_lossy().into_owned())
                })
                .unwrap_or_else(|| fallback.to_owned())
        };
        (
            pick(
                "GIT_COMMITTER_NAME",
                ["committer.name", "user.name"],
                FALLBACK_NAME,
            ),
            pick(
                "GIT_COMMITTER_EMAIL",
                ["committer.email", "user.email"],
                FALLBACK_EMAIL,
            ),
        )
    }

    /// The person's identity as git config gives it (`user.name` and
    /// `user.email`, from any of git's config files), if both are set.
    pub fn config_identity(&self) -> Option<(String, String)> {
        let repo = self.repo.borrow();
        let config = repo.config_snapshot();
        let get = |key: &str| {
            config
                .string(key)
                .map(|v| v.to_str_lossy().trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        Some((get("user.name")?, get("user.email")?))
    }

    /// Who the state commits of this process are by, as git would name the
    /// committer: `name <email>` (`GIT_COMMITTER_*`, else `committer.*` or
    /// `user.*` config).
    pub fn committer(&self) -> String {
        let (name, email) = self.identity();
        format!("{name} <{email}>")
    }

    /// The signature of a new state commit: git's identity, and `now` unless
    /// `GIT_COMMITTER_DATE` pins the time (as it does for plain git).
    fn signature(&self, now: Timestamp) -> gix::actor::Signature {
        let repo = self.repo.borrow();
        let (name, email) = self.identity();
        let pinned = std::env::var_os("GIT_COMMITTER_DATE")
            .and_then(|_| repo.committer())
            .and_then(|sig| sig.ok())
            .and_then(|sig| sig.time().ok());
        gix::actor::Signature {
            name: name.into(),
            email: email.into(),
            time: pinned.unwrap_or_else(|| gix::date::Time::new(now.unix(), 0)),
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

/// The state branch: read a tip, read a commit's files, commit on an
/// expected tip, and the host-local pieces a write uses (writer lock,
/// parsed-state memo and cache).
impl GixStore {
    /// Credential rules a write may pass (`--allow-secret-pattern`); each
    /// one passed is named in the commit's `Loopx-Allowed-Secret-Pattern`
    /// trailer (see `transaction::Checked`).
    pub fn allowed_leaks(&self) -> &[&'static str] {
        &self.allowed_leaks
    }

    /// The commit `refs/heads/loopx-state` points at, if any.
    pub fn tip(&self) -> Result<Option<Oid>, Error> {
        self.try_find_ref(crate::store::STATE_REF)
    }

    /// All files of the tree of `commit`.
    pub fn read(&self, commit: &Oid) -> Result<Snapshot, Error> {
        self.settled_afresh(|| self.try_read(commit))
            .map_err(|e| self.diagnosed(commit, e))
    }

    /// The files whose bytes differ between the trees of `from` and `to`
    /// (`None`: not in `to`), reading only the subtrees that differ.
    pub fn changed_files(&self, from: &Oid, to: &Oid) -> Result<Vec<objects::ChangedFile>, Error> {
        self.settled_afresh(|| self.try_changed_files(from, to))
            .map_err(|e| self.diagnosed(to, e))
    }

    /// The bytes of one file of `commit`'s tree (`None`: no such file).
    pub fn read_file(&self, commit: &Oid, path: &str) -> Result<Option<Vec<u8>>, Error> {
        self.settled_afresh(|| self.try_read_file(commit, path))
    }

    /// The files under directory `dir` of `commit`'s tree whose first
    /// component below `dir` passes `keep` (a run's day), by path.
    pub fn read_dir(
        &self,
        commit: &Oid,
        dir: &str,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<std::collections::BTreeMap<String, Vec<u8>>, Error> {
        self.settled_afresh(|| self.try_read_dir(commit, dir, keep))
    }

    /// Writes the checked changes on top of `expected`'s tree as a commit
    /// whose parent is `expected` (a root commit when `None`) followed by
    /// `others` (the other sides of a merge), then moves the state ref only
    /// if it still points at `expected`. Called by `store::publish` only.
    pub(in crate::store) fn write_commit(
        &self,
        expected: Option<&Oid>,
        others: &[Oid],
        checked: &Checked,
        now: Timestamp,
    ) -> Result<CasResult, Error> {
        self.settled_afresh(|| {
            self.try_commit(expected, others, checked, now, objects::Publish::Ref)
        })
        .map_err(|e| {
            let parents = expected.into_iter().chain(others);
            parents.fold(e, |e, parent| self.diagnosed(parent, e))
        })
    }

    /// Takes the state this store last committed, if `commit` is still it:
    /// a long-lived process then skips reloading its own writes.
    pub fn memo_take(&self, commit: &Oid) -> Option<crate::model::State> {
        let mut memo = self.memo.borrow_mut();
        if memo.as_ref().is_some_and(|(id, _)| id == commit) {
            memo.take().map(|(_, state)| state)
        } else {
            None
        }
    }

    /// A copy of the state of `commit` if this store read it from the
    /// cache last.
    pub fn read_memo_get(&self, commit: &Oid) -> Option<crate::model::State> {
        let memo = self.read_memo.borrow();
        memo.as_ref()
            .filter(|(id, _)| id == commit)
            .map(|(_, state)| state.clone())
    }

    /// Keeps a copy of a state just read from the cache.
    pub fn read_memo_put(&self, commit: &Oid, state: &crate::model::State) {
        *self.read_memo.borrow_mut() = Some((commit.clone(), state.clone()));
    }

    /// Remembers the state of the commit this store just made.
    pub fn memo_put(&self, commit: Oid, state: crate::model::State) {
        *self.memo.borrow_mut() = Some((commit, state));
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

    /// A host-local cache entry, if present (never on the branch).
    pub fn cache_read(&self, key: &str) -> Option<Vec<u8>> {
        if key.starts_with("delta-") {
            return self.journal.get_settled(key);
        }
        std::fs::read(self.local_dir().join("cache").join(key)).ok()
    }

    /// Stores a host-local cache entry; failures are ignored (it is a cache).
    pub fn cache_write(&self, key: &str, bytes: &[u8]) {
        // Deltas, one a writeback, go to the journal: no file to create.
        if key.starts_with("delta-") {
            return self.journal.append(key, bytes);
        }
        let dir = self.local_dir().join("cache");
        if std::fs::create_dir_all(&dir).is_err() {
            return;
        }
        // Write beside, then rename: a reader never sees half a file.
        let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, dir.join(key)).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        prune_cache(&dir);
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

    /// Commits reachable from `from` along first parents, newest first.
    pub fn first_parent_log(&self, from: &Oid, limit: usize) -> Result<Vec<CommitInfo>, Error> {
        self.history(from, limit, |_| true)
    }

    /// The first-parent history from `from`, newest first, up to and
    /// including the first commit for which `more` is false: a reader of a
    /// range pays for the range, not for all of history.
    pub fn first_parent_log_while(
        &self,
        from: &Oid,
        more: impl FnMut(&CommitInfo) -> bool,
    ) -> Result<Vec<CommitInfo>, Error> {
        self.history(from, usize::MAX, more)
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

/// How many full parsed states the cache keeps as files (deltas live in the
/// journal, which starts over by itself).
const CACHE_SNAPSHOTS: usize = 3;

/// Keeps the most recently written snapshots.
fn prune_cache(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut snapshots: Vec<_> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("state-"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if snapshots.len() > CACHE_SNAPSHOTS {
        snapshots.sort();
        for (_, path) in &snapshots[..snapshots.len() - CACHE_SNAPSHOTS] {
            let _ = std::fs::remove_file(path);
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
        let store = GixStore::discover(dir.path()).unwrap();
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
