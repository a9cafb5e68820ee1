//! The gix implementation of [`Store`]: the only file that imports `gix`.
//!
//! Invariants: the user's HEAD, index and working tree are never read for
//! writing nor touched; the state ref moves only through a ref transaction
//! with `MustExistAndMatch(old tip)` (or `MustNotExist` for the root commit),
//! checked under the ref lock; one reflog entry per move.

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;
use gix::ObjectId;

use crate::model::Timestamp;
use crate::store::blank::Blank;
use crate::store::durable::Durability;
use crate::store::health;
use crate::store::pack::{Kind, Loaded, Objects};
use crate::store::ref_file::{Moved, RefFile};
use crate::store::{
    CasResult, CommitInfo, Error, FileChange, Message, Oid, Snapshot, Store, STATE_REF,
};

/// Estimated loose objects past which a write starts a background repack
/// (git itself, or a repository that does not hash with SHA-1, leaves them).
const LOOSE_OBJECTS_TO_PACK: usize = 1024;

/// Small packs past which a write starts a background repack. A pack index
/// below [`SMALL_PACK_INDEX_BYTES`] holds fewer than about 100 objects: one
/// writeback's pack holds about seven. Each roll-up is three processes (a
/// tenth of a contended host's CPU at 16); writers find recent objects
/// through the packs their deltas name, not by searching every pack.
const SMALL_PACKS_TO_ROLL_UP: usize = 32;
const SMALL_PACK_INDEX_BYTES: u64 = 4096;

/// How many pack indexes gix's object store can hold. A fixed number spares
/// every command a listing of `objects/pack` with a `stat` of each file when
/// the repository is opened (gix sizes its table from the disk otherwise).
/// Writebacks roll their packs up past [`SMALL_PACKS_TO_ROLL_UP`]; a
/// repository with more packs than this reopens with the table sized from
/// the disk (see `GixStore::reopen`).
const INDEX_SLOTS: u16 = 1024;

/// Name and email used when git config has no identity.
const FALLBACK_NAME: &str = "git-loopx";
const FALLBACK_EMAIL: &str = "git-loopx@localhost";

/// How much a repack is due (see [`GixStore::repack_due`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepackDue {
    No,
    /// Past the threshold: start one in the background.
    Yes,
    /// Far past it: writes outpace the background repack, and every lookup
    /// walks the small packs; the writer runs one itself.
    Urgent,
}

/// A repository opened for its state branch.
pub struct GixStore {
    /// Replaced by a fresh open when gix's object store loses track of the
    /// packs under a concurrent repack (see `settled`).
    repo: std::cell::RefCell<gix::Repository>,
    common_dir: PathBuf,
    workdir: Option<PathBuf>,
    /// Trees and commits this process wrote or read, and packs named by the
    /// cache's deltas that it has not read yet (see `Seen`).
    seen: std::cell::RefCell<Seen>,
    /// The cache's deltas (see `store::journal`).
    journal: crate::store::journal::Journal,
    /// Host-local records that must not expire (see `GixStore::host_record`).
    records: crate::store::journal::Journal,
    /// Files created ahead for the next writeback's pack (see `store::blank`).
    blanks: std::cell::RefCell<Option<(Blank, Blank)>>,
    /// And for its ref lock (see `store::ref_file`).
    ref_blank: std::cell::RefCell<Option<Blank>>,
    /// The last few commits this store wrote, and the packs it wrote them
    /// into (a claim confirmed through shared refs writes two detached ones).
    last_written: std::cell::RefCell<Vec<(Oid, String)>>,
    /// The state of the last commit this store made (see `Store::memo_take`).
    memo: std::cell::RefCell<Option<(Oid, crate::model::State)>>,
    /// What git's config asks to be synced to disk (see `store::durable`).
    durability: Durability,
    /// Whether this process removed what killed writers left (see
    /// `health::remove_leftovers`); done once, by its first write.
    cleaned: std::cell::Cell<bool>,
    /// Credential rules a write may pass (`--allow-secret-pattern`).
    allowed_leaks: Vec<&'static str>,
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
        let slots = |options: gix::open::Options, _| {
            options.object_store_slots(gix::odb::store::init::Slots::Given(INDEX_SLOTS))
        };
        let repo = match gix::ThreadSafeRepository::discover_opts(dir, Default::default(), slots) {
            Ok(repo) => gix::Repository::from(repo),
            Err(_) if reftable_above(dir) => return Err(Error::UnsupportedRefStorage),
            Err(e) => return Err(unopenable(dir, &e)),
        };
        if repo.common_dir().join("reftable").is_dir() || uses_reftable(&repo) {
            return Err(Error::UnsupportedRefStorage);
        }
        let common_dir = repo.common_dir().to_owned();
        let durability = {
            let config = repo.config_snapshot();
            let fsync = config
                .string("core.fsync")
                .map(|v| v.to_str_lossy().into_owned());
            let method = config
                .string("core.fsyncMethod")
                .map(|v| v.to_str_lossy().into_owned());
            let object_files = config.boolean("core.fsyncObjectFiles");
            Durability::from_config(fsync.as_deref(), object_files, method.as_deref())
        };
        Ok(GixStore {
            durability,
            cleaned: Default::default(),
            journal: crate::store::journal::Journal::new(common_dir.join("loopx").join("cache")),
            records: crate::store::journal::Journal::carrying(
                common_dir.join("loopx").join("records"),
            ),
            common_dir,
            workdir: repo.workdir().map(Path::to_owned),
            repo: std::cell::RefCell::new(repo),
            seen: Default::default(),
            last_written: Default::default(),
            blanks: Default::default(),
            ref_blank: Default::default(),
            memo: std::cell::RefCell::new(None),
            allowed_leaks: Vec::new(),
        })
    }

    /// Lets writes through this store commit text that the named credential
    /// rules ([`crate::model::leaks::RULES`]) match (`--allow-secret-pattern`).
    pub fn allow_leaks(&mut self, rules: Vec<&'static str>) {
        self.allowed_leaks = rules;
    }

    /// A host-local record under `.git/loopx/records/` (never on the
    /// branch): the value last set for `key`, `None` when unset or cleared.
    /// Records are appended to one file, so setting one creates no file.
    pub fn host_record(&self, key: &str) -> Option<Vec<u8>> {
        self.records.get(key).filter(|v| !v.is_empty())
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

    /// Whether the small packs of writebacks (or loose objects) have piled
    /// up, and how badly, with no `git gc` running. Costs one directory
    /// listing and a sample of the loose fan-out directories.
    pub fn repack_due(&self) -> RepackDue {
        let objects = self.repo.borrow().objects.store_ref().path().to_owned();
        if self.common_dir.join("gc.pid").exists() || objects.join("maintenance.lock").exists() {
            return RepackDue::No;
        }
        let small_packs = std::fs::read_dir(objects.join("pack"))
            .map(|dir| {
                dir.filter_map(Result::ok)
                    .filter(|e| e.file_name().as_encoded_bytes().ends_with(b".idx"))
                    .filter(|e| e.metadata().is_ok_and(|m| m.len() < SMALL_PACK_INDEX_BYTES))
                    .count()
            })
            .unwrap_or(0);
        let sampled: usize = (0..16)
            .map(|i| std::fs::read_dir(objects.join(format!("0{i:x}"))).map_or(0, |d| d.count()))
            .sum();
        if small_packs >= 4 * SMALL_PACKS_TO_ROLL_UP {
            RepackDue::Urgent
        } else if small_packs >= SMALL_PACKS_TO_ROLL_UP || sampled * 16 >= LOOSE_OBJECTS_TO_PACK {
            RepackDue::Yes
        } else {
            RepackDue::No
        }
    }

    /// The repack lock, if no repack holds it (see
    /// [`crate::git_cmd::repack_detached`]); with `wait`, waits up to 5 s.
    pub fn repack_lock(&self, wait: bool) -> Option<std::fs::File> {
        let lock = self.lock_file("repack.lock")?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match lock.try_lock() {
                Ok(()) => return Some(lock),
                Err(_) if wait && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(_) => return None,
            }
        }
    }

    /// Opens (creating it once) a lock file under `.git/loopx/`; the lock is
    /// the OS's, on the open file, and dies with its last holder.
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

    /// Every configured remote with its `remote.<name>.fetch` refspecs, by name.
    pub fn remote_fetch_refspecs(&self) -> Vec<(String, Vec<String>)> {
        let repo = self.repo.borrow();
        let config = repo.config_snapshot();
        repo.remote_names()
            .into_iter()
            .map(|name| {
                let name = name.to_str_lossy().into_owned();
                let specs = config
                    .plumbing()
                    .strings(format!("remote.{name}.fetch").as_str())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|s| s.to_str_lossy().into_owned())
                    .collect();
                (name, specs)
            })
            .collect()
    }

    /// `refs/remotes/<remote>/loopx-state` for every remote that has one, sorted.
    pub fn remote_state_refs(&self) -> Result<Vec<(String, Oid)>, Error> {
        let repo = self.repo.borrow();
        let refs = repo.references().map_err(|e| git_err("listing refs", e))?;
        let iter = refs
            .prefixed("refs/remotes/")
            .map_err(|e| git_err("listing remote refs", e))?;
        let mut out = Vec::new();
        for reference in iter.flatten() {
            let name = reference.name().as_bstr().to_str_lossy().into_owned();
            let Some(remote) = name
                .strip_prefix("refs/remotes/")
                .and_then(|rest| rest.strip_suffix("/loopx-state"))
            else {
                continue;
            };
            if let Some(id) = reference.target().try_id() {
                out.push((remote.to_owned(), oid(id.to_owned())));
            }
        }
        out.sort();
        Ok(out)
    }

    /// Points `name` at `target` if `name` does not exist yet.
    /// Returns `false` when someone created it first.
    pub fn create_ref(
        &self,
        name: &str,
        target: &Oid,
        reflog: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        self.move_ref(name, None, target, reflog, now)
    }

    /// Moves `name` from `expected` (absent when `None`) to `target`, CAS-style.
    pub fn move_ref(
        &self,
        name: &str,
        expected: Option<&Oid>,
        target: &Oid,
        reflog: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let repo = self.repo.borrow();
        let expected_old = expected;
        let expected = match expected {
            Some(old) => PreviousValue::MustExistAndMatch(Target::Object(object_id(old)?)),
            None => PreviousValue::MustNotExist,
        };
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: false,
                    message: reflog.into(),
                },
                expected,
                new: Target::Object(object_id(target)?),
            },
            name: name.try_into().map_err(|e| git_err("ref name", e))?,
            deref: false,
        };
        let signature = self.signature(now);
        let mut time_buf = gix::date::parse::TimeBuf::default();
        let committer = signature.to_ref(&mut time_buf);
        if let Some(moved) = self.swap_ref(name, expected_old, target, reflog, committer)? {
            return Ok(moved);
        }
        let fail = gix::lock::acquire::Fail::Immediately;
        let result = repo
            .refs
            .transaction()
            .prepare(Some(edit), fail, fail)
            .and_then(|tx| tx.commit(Some(committer)));
        match result {
            Ok(_) => {
                // gix syncs nothing: the ref and its log, as git would.
                let d = &self.durability;
                let path = self.common_dir.join(name);
                let log = self.common_dir.join("logs").join(name);
                let _ = d.sync_path(d.refs && path.exists(), &path);
                let _ = d.sync_path(d.refs && log.exists(), &log);
                let _ = d.sync_parent(d.refs, &path);
                Ok(true)
            }
            Err(e) if e.is_conflict() || e.is_retryable() => Ok(false),
            Err(e) => Err(git_err(&format!("updating {name}"), e)),
        }
    }

    /// Moves the state ref with a lock file made ahead (see
    /// `store::ref_file`); `None` when that does not apply and the ref must
    /// move the ordinary way.
    fn swap_ref(
        &self,
        name: &str,
        expected: Option<&Oid>,
        target: &Oid,
        reflog: &str,
        committer: gix::actor::SignatureRef<'_>,
    ) -> Result<Option<bool>, Error> {
        let Some(old) = expected else {
            return Ok(None);
        };
        if name != STATE_REF || !ref_swap_enabled() {
            return Ok(None);
        }
        let mut line = format!("{old} {target} ").into_bytes();
        committer
            .write_to(&mut line)
            .map_err(|e| git_err("writing the reflog entry", e))?;
        line.push(b'\t');
        line.extend(reflog.bytes().map(|b| if b == b'\n' { b' ' } else { b }));
        let line = String::from_utf8_lossy(&line);
        let file = RefFile::new(&self.common_dir, name)
            .keeping_old_file_at(self.old_ref())
            .syncing(self.durability);
        let mut blank = self.ref_blank.borrow_mut();
        match file.compare_and_swap(&old.0, &target.0, &line, &mut blank) {
            Ok(Moved::Yes) => Ok(Some(true)),
            Ok(Moved::Lost) => Ok(Some(false)),
            Ok(Moved::Unsupported) => Ok(None),
            Err(e) => Err(git_err(&format!("updating {name}"), e)),
        }
    }

    /// Where a move of the state ref leaves the ref's old file, removed by
    /// the next `writer_lock` or when the store is dropped, so that freeing
    /// it is not done while other writers wait.
    fn old_ref(&self) -> PathBuf {
        self.local_dir()
            .join(format!("tmp_loopx_old_ref_{}", std::process::id()))
    }

    /// Resolves any ref name to the commit it points at.
    pub fn try_find_ref(&self, name: &str) -> Result<Option<Oid>, Error> {
        let repo = self.repo.borrow();
        let found = match repo.try_find_reference(name) {
            Ok(Some(mut r)) => match r.target().try_id().map(ToOwned::to_owned) {
                // A direct ref names its commit: no object lookup (the object
                // may be in a pack a concurrent repack is moving).
                Some(id) => Ok(Some(oid(id))),
                None => settled(|| {
                    r.peel_to_id()
                        .map(|id| oid(id.detach()))
                        .map_err(|e| git_err(&format!("peeling {name}"), e))
                })
                .map(Some),
            },
            Ok(None) => Ok(None),
            Err(e) => Err(git_err(&format!("reading {name}"), e)),
        };
        found
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

    fn collect(
        &self,
        commit: &Oid,
        tree: ObjectId,
        prefix: &str,
        files: &mut std::collections::BTreeMap<String, Vec<u8>>,
    ) -> Result<(), Error> {
        let repo = self.repo.borrow();
        let tree = repo
            .find_tree(tree)
            .map_err(|e| git_err(&format!("reading tree {prefix}"), e))?;
        let decoded = tree.decode().map_err(|e| git_err("decoding tree", e))?;
        for entry in &decoded.entries {
            let name = entry.filename.to_str_lossy();
            let path = if prefix.is_empty() {
                name.into_owned()
            } else {
                format!("{prefix}/{name}")
            };
            if entry.mode.is_tree() {
                self.collect(commit, entry.oid.to_owned(), &path, files)?;
            } else if entry.mode.is_blob() {
                let blob = repo
                    .find_blob(entry.oid)
                    .map_err(|e| git_err(&format!("reading {path}"), e))?;
                files.insert(path, blob.data.clone());
            } else {
                // A symlink or a submodule where a file belongs: refused
                // with its path, never skipped (a skipped todo is a lost one).
                let what = if entry.mode.is_link() {
                    "a symbolic link"
                } else if entry.mode.is_commit() {
                    "a submodule (gitlink)"
                } else {
                    "not a regular file"
                };
                return Err(Error::Corrupt {
                    commit: commit.clone(),
                    source: crate::codec::Error {
                        path,
                        message: format!("is {what}; the state holds only regular files"),
                    },
                });
            }
        }
        Ok(())
    }
}

impl GixStore {
    fn try_read(&self, commit: &Oid) -> Result<Snapshot, Error> {
        let repo = self.repo.borrow();
        let c = repo
            .find_commit(object_id(commit)?)
            .map_err(|e| git_err(&format!("reading commit {commit}"), e))?;
        let tree = c.tree_id().map_err(|e| git_err("reading commit tree", e))?;
        let mut files = std::collections::BTreeMap::new();
        self.collect(commit, tree.detach(), "", &mut files)?;
        Ok(Snapshot {
            commit: Some(commit.clone()),
            files,
        })
    }

    /// [`settled`], and from the second retry on with the repository opened
    /// afresh: a long-lived gix object store can lose track of objects that
    /// a repack moved while others were writing new packs, and then misses
    /// them for good; a new one lists the packs as they are now.
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

    /// Whether writebacks go into packs: in a repository that hashes with
    /// SHA-1 (git's default), unless `LOOPX_LOOSE_OBJECTS=1` asks for loose
    /// objects (to compare the two).
    fn packs_written(&self) -> bool {
        self.repo.borrow().object_hash() == gix::hash::Kind::Sha1
            && std::env::var_os("LOOPX_LOOSE_OBJECTS").is_none_or(|v| v != "1")
    }

    /// Where a writeback's `.keep` file waits between writebacks.
    fn spare_keep(&self) -> PathBuf {
        self.local_dir().join("keep.spare")
    }

    /// `objects/pack` of the repository.
    fn pack_dir(&self) -> PathBuf {
        self.repo.borrow().objects.store_ref().path().join("pack")
    }

    /// Writes a writeback's objects as one kept pack into `objects/pack`
    /// (into the blank files made ahead, if any); returns its file stem.
    fn write_pack(&self, pack: &Objects) -> Result<String, Error> {
        let dir = self.pack_dir();
        let spare = self.spare_keep();
        let blanks = self.blanks.borrow_mut().take();
        let written = pack
            .write(&dir, &spare, blanks, &self.durability)
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    std::fs::create_dir_all(&dir)?;
                    pack.write(&dir, &spare, None, &self.durability)
                }
                _ => Err(e),
            });
        written.map_err(|e| git_err(&format!("writing a pack into {}", dir.display()), e))
    }

    /// Writes a commit of `changes` on `parent` and moves no ref: the
    /// objects stay in a kept pack until [`GixStore::settle_detached`].
    /// `sync` pushes such a commit before the local branch may point at it
    /// (`ops::lease::claim_synced`). `None` when the tree did not change.
    pub fn commit_detached(
        &self,
        parent: &Oid,
        changes: &[FileChange],
        message: &Message,
        now: Timestamp,
    ) -> Result<Option<Oid>, Error> {
        let done = self
            .settled_afresh(|| self.try_commit(Some(parent), &[], changes, message, now, true))?;
        Ok(match done {
            CasResult::Committed(id) => Some(id),
            CasResult::Unchanged | CasResult::Retry => None,
        })
    }

    /// Writes a commit of `changes` on the tree of `parents[0]` whose
    /// parents are all of `parents` (a root commit on the empty tree when
    /// there are none), and moves no ref, like [`GixStore::commit_detached`].
    /// Always a commit, even when the tree did not change.
    pub fn commit_detached_on(
        &self,
        parents: &[Oid],
        changes: &[FileChange],
        message: &Message,
        now: Timestamp,
    ) -> Result<Oid, Error> {
        let (first, others) = match parents.split_first() {
            Some((first, others)) => (Some(first), others),
            None => (None, &[][..]),
        };
        let done =
            self.settled_afresh(|| self.try_commit(first, others, changes, message, now, true))?;
        match done {
            CasResult::Committed(id) => Ok(id),
            CasResult::Unchanged | CasResult::Retry => Err(git_err(
                "writing a commit",
                "a detached commit was not written",
            )),
        }
    }

    /// Writes a merge of `changes` on `expected`'s tree, whose parents are
    /// `expected` then `others`, and moves the state ref to it only if it
    /// still points at `expected`.
    pub fn commit_merge(
        &self,
        expected: &Oid,
        others: &[Oid],
        changes: &[FileChange],
        message: &Message,
        now: Timestamp,
    ) -> Result<CasResult, Error> {
        self.settled_afresh(|| {
            self.try_commit(Some(expected), others, changes, message, now, false)
        })
    }

    /// Ends the keep of a detached commit's pack once a ref holds it, or
    /// once it is given up.
    pub fn settle_detached(&self, commit: &Oid) {
        if let Some(stem) = self.written_pack(commit) {
            crate::store::pack::unkeep(&self.pack_dir(), &stem, &self.spare_keep());
        }
    }

    fn try_commit(
        &self,
        expected: Option<&Oid>,
        merged: &[Oid],
        changes: &[FileChange],
        message: &Message,
        now: Timestamp,
        detached: bool,
    ) -> Result<CasResult, Error> {
        let repo = self.repo.borrow();
        self.check_not_checked_out()?;
        let layered = Layered {
            store: self,
            odb: &repo.objects,
        };
        let (base_tree, parents) = match expected {
            Some(parent) => {
                let id = object_id(parent)?;
                let mut buf = Vec::new();
                let data = gix::objs::Find::try_find(&layered, &id, &mut buf)
                    .map_err(|e| git_err("reading parent", e))?
                    .filter(|d| d.kind == gix::objs::Kind::Commit)
                    .ok_or_else(|| git_err("reading parent", format!("commit {id} not found")))?;
                let commit = gix::objs::CommitRef::from_bytes(data.data, repo.object_hash())
                    .map_err(|e| git_err("reading parent", e))?;
                (commit.tree(), vec![id])
            }
            None => (ObjectId::empty_tree(repo.object_hash()), Vec::new()),
        };
        // The plumbing editor: gix's checked one stats every entry of every
        // tree it writes (300 of them in a 256-shard todos tree) to prove the
        // objects exist. Ours exist by construction: the base tree's entries,
        // and blobs written just above; paths come from validated ids. It
        // reads trees through the hinted packs first (see `Layered`).
        let root = if base_tree.is_empty_tree() {
            gix::objs::Tree::empty()
        } else {
            let mut buf = Vec::new();
            let data = gix::objs::Find::try_find(&layered, &base_tree, &mut buf)
                .map_err(|e| git_err("reading the state tree", e))?
                .filter(|d| d.kind == gix::objs::Kind::Tree)
                .ok_or_else(|| {
                    git_err(
                        "reading the state tree",
                        format!("tree {base_tree} not found"),
                    )
                })?;
            gix::objs::TreeRef::from_bytes(data.data, repo.object_hash())
                .map_err(|e| git_err("reading the state tree", e))?
                .into()
        };
        let mut editor = gix::objs::tree::Editor::new(root, &layered, repo.object_hash());
        // One small pack for the whole writeback (see `store::pack`), or
        // loose objects in a repository that does not hash with SHA-1, or
        // when `LOOPX_LOOSE_OBJECTS=1` asks for them (to compare the two).
        let mut pack = self.packs_written().then(Objects::default);
        let mut loose = Vec::new();
        for change in changes {
            match change {
                FileChange::Upsert { path, bytes } => {
                    let blob = match pack.as_mut() {
                        Some(pack) => ObjectId::from(pack.add(Kind::Blob, bytes.clone())),
                        None => self.write_loose(gix::objs::Kind::Blob, bytes, &mut loose)?,
                    };
                    editor
                        .upsert(path.split('/'), EntryKind::Blob, blob)
                        .map_err(|e| git_err(&format!("editing {path}"), e))?;
                }
                FileChange::Remove { path } => {
                    editor
                        .remove(path.split('/'))
                        .map_err(|e| git_err(&format!("removing {path}"), e))?;
                }
            }
        }
        let tree = editor
            .write(|tree| match pack.as_mut() {
                Some(pack) => {
                    encoded(tree).map(|bytes| ObjectId::from(pack.add(Kind::Tree, bytes)))
                }
                None => encoded(tree).and_then(|bytes| {
                    self.write_loose(gix::objs::Kind::Tree, &bytes, &mut loose)
                        .map_err(std::io::Error::other)
                }),
            })
            .map_err(|e| git_err("writing tree", e))?;
        let mut parents = parents;
        for other in merged {
            parents.push(object_id(other)?);
        }
        if tree == base_tree && expected.is_some() && merged.is_empty() {
            return Ok(CasResult::Unchanged);
        }
        let signature = self.signature(now);
        let commit = gix::objs::Commit {
            tree,
            parents: parents.into(),
            author: signature.clone(),
            committer: signature,
            encoding: None,
            message: message.render().into(),
            extra_headers: Vec::new(),
        };
        let (id, stem) = match pack.as_mut() {
            Some(pack) => {
                let bytes = encoded(&commit).map_err(|e| git_err("encoding commit", e))?;
                let id = oid(ObjectId::from(pack.add(Kind::Commit, bytes)));
                (id, Some(self.write_pack(pack)?))
            }
            None => {
                let bytes = encoded(&commit).map_err(|e| git_err("encoding commit", e))?;
                let id = self.write_loose(gix::objs::Kind::Commit, &bytes, &mut loose)?;
                (oid(id), None)
            }
        };
        let reflog = format!("loopx: {}", message.subject);
        let moved = if detached {
            Ok(true)
        } else {
            self.move_ref(STATE_REF, expected, &id, &reflog, now)
        };
        if let (Some(stem), Some(pack)) = (stem, &pack) {
            // Reachable now, or never: either way no longer ours to keep.
            if !detached {
                crate::store::pack::unkeep(&self.pack_dir(), &stem, &self.spare_keep());
            }
            let mut seen = self.seen.borrow_mut();
            seen.read.insert(stem.clone());
            for (id, kind, data) in pack.iter() {
                seen.keep(*id, kind, data);
            }
            let mut last = self.last_written.borrow_mut();
            if last.len() >= 64 {
                last.remove(0);
            }
            last.push((id.clone(), stem));
        }
        let moved = moved?;
        if moved {
            self.keep_loose(&loose);
        }
        Ok(if moved {
            CasResult::Committed(id)
        } else {
            CasResult::Retry
        })
    }
}

impl Drop for GixStore {
    fn drop(&mut self) {
        if let Some((pack, idx)) = self.blanks.get_mut().take() {
            pack.discard();
            idx.discard();
        }
        if let Some(blank) = self.ref_blank.get_mut().take() {
            blank.discard();
        }
        let _ = std::fs::remove_file(self.old_ref());
    }
}

/// What is not healthy in the repository's files (see `store::health`).
impl GixStore {
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
    fn leftover_dirs(&self) -> Vec<PathBuf> {
        let local = self.local_dir();
        vec![self.pack_dir(), local.join("cache"), local]
    }

    /// The state ref's reflog, oldest first.
    pub fn state_reflog(&self) -> Vec<health::Moved> {
        health::state_reflog(&self.common_dir)
    }

    /// Moves the state ref from `broken` to a new commit on top of `intact`
    /// with `intact`'s tree (a repair: nothing is rewritten; `doctor` then
    /// drops the reflog entries naming missing commits). `None` when the ref
    /// no longer holds `broken`.
    pub fn restore(
        &self,
        broken: &Oid,
        intact: &Oid,
        message: &Message,
        now: Timestamp,
    ) -> Result<Option<Oid>, Error> {
        let tree = {
            let repo = self.repo.borrow();
            let commit = repo
                .find_commit(object_id(intact)?)
                .map_err(|e| git_err(&format!("reading commit {intact}"), e))?;
            commit
                .tree_id()
                .map_err(|e| git_err("reading commit tree", e))?
                .detach()
        };
        let signature = self.signature(now);
        let commit = gix::objs::Commit {
            tree,
            parents: vec![object_id(intact)?].into(),
            author: signature.clone(),
            committer: signature,
            encoding: None,
            message: message.render().into(),
            extra_headers: Vec::new(),
        };
        let bytes = encoded(&commit).map_err(|e| git_err("encoding commit", e))?;
        let mut written = Vec::new();
        let id = oid(self.write_loose(gix::objs::Kind::Commit, &bytes, &mut written)?);
        let reflog = format!("loopx: {}", message.subject);
        let moved = self.move_ref(STATE_REF, Some(broken), &id, &reflog, now)?;
        if moved {
            self.keep_loose(&written);
        }
        Ok(moved.then_some(id))
    }
}

impl GixStore {
    /// The first object of `commit` (itself, then its tree's trees and
    /// blobs, depth first) that the object store does not have: its kind,
    /// id and path in the tree. Looked up in a freshly opened store.
    pub fn missing_object(&self, commit: &Oid) -> Option<(&'static str, Oid, Option<String>)> {
        self.reopen();
        let repo = self.repo.borrow();
        let id = object_id(commit).ok()?;
        let Ok(found) = repo.find_commit(id) else {
            return Some(("commit", commit.clone(), None));
        };
        let tree = found.tree_id().ok()?.detach();
        let mut stack = vec![(tree, String::new())];
        while let Some((tree, path)) = stack.pop() {
            let shown = |p: &str| (!p.is_empty()).then(|| p.to_owned());
            let Ok(found) = repo.find_tree(tree) else {
                return Some(("tree", oid(tree), shown(&path)));
            };
            let decoded = found.decode().ok()?;
            for entry in &decoded.entries {
                let name = entry.filename.to_str_lossy();
                let sub = if path.is_empty() {
                    name.into_owned()
                } else {
                    format!("{path}/{name}")
                };
                if entry.mode.is_tree() {
                    stack.push((entry.oid.to_owned(), sub));
                } else if entry.mode.is_blob() && !repo.has_object(entry.oid) {
                    return Some(("blob", oid(entry.oid.to_owned()), Some(sub)));
                }
            }
        }
        None
    }

    /// A git error met reading `commit`, made precise when the reason is
    /// that one of its objects is gone.
    fn diagnosed(&self, commit: &Oid, error: Error) -> Error {
        if !matches!(error, Error::Git(_)) {
            return error;
        }
        match self.missing_object(commit) {
            Some((kind, id, path)) => {
                let at = match self.tip() {
                    Ok(Some(tip)) if &tip == commit => format!("{STATE_REF} at {commit}"),
                    _ => format!("state commit {commit}"),
                };
                Error::ObjectMissing { at, kind, id, path }
            }
            None => error,
        }
    }
}

impl Store for GixStore {
    fn allowed_leaks(&self) -> &[&'static str] {
        &self.allowed_leaks
    }

    fn tip(&self) -> Result<Option<Oid>, Error> {
        self.try_find_ref(STATE_REF)
    }

    fn read(&self, commit: &Oid) -> Result<Snapshot, Error> {
        self.settled_afresh(|| self.try_read(commit))
            .map_err(|e| self.diagnosed(commit, e))
    }

    fn read_file(&self, commit: &Oid, path: &str) -> Result<Option<Vec<u8>>, Error> {
        self.settled_afresh(|| {
            let repo = self.repo.borrow();
            let tree = repo
                .find_commit(object_id(commit)?)
                .and_then(|c| c.tree())
                .map_err(|e| git_err(&format!("reading commit {commit}"), e))?;
            let Some(entry) = tree
                .lookup_entry_by_path(path)
                .map_err(|e| git_err(&format!("reading {path}"), e))?
            else {
                return Ok(None);
            };
            if !entry.mode().is_blob() {
                return Ok(None);
            }
            let blob = entry
                .object()
                .map_err(|e| git_err(&format!("reading {path}"), e))?;
            Ok(Some(blob.data.clone()))
        })
    }

    fn commit(
        &self,
        expected: Option<&Oid>,
        merged: Option<&Oid>,
        changes: &[FileChange],
        message: &Message,
        now: Timestamp,
    ) -> Result<CasResult, Error> {
        let others: Vec<Oid> = merged.into_iter().cloned().collect();
        self.settled_afresh(|| self.try_commit(expected, &others, changes, message, now, false))
            .map_err(|e| {
                let parents = expected.into_iter().chain(merged);
                parents.fold(e, |e, parent| self.diagnosed(parent, e))
            })
    }

    fn memo_take(&self, commit: &Oid) -> Option<crate::model::State> {
        let mut memo = self.memo.borrow_mut();
        if memo.as_ref().is_some_and(|(id, _)| id == commit) {
            memo.take().map(|(_, state)| state)
        } else {
            None
        }
    }

    fn memo_put(&self, commit: Oid, state: crate::model::State) {
        *self.memo.borrow_mut() = Some((commit, state));
    }

    fn writer_lock(&self) -> Option<std::fs::File> {
        // A writer's first turn clears what killed writers left behind.
        if !self.cleaned.replace(true) {
            health::remove_leftovers(&self.leftover_dirs());
        }
        // `LOOPX_WRITER_LOCK=0` turns the optimisation off (the tests use it
        // to race writers on the compare-and-swap alone).
        if std::env::var_os("LOOPX_WRITER_LOCK").is_some_and(|v| v == "0") {
            return None;
        }
        // Create the next pack's files and the ref's lock first: other
        // writers need not wait while this one finds three free inodes.
        if self.packs_written() && self.blanks.borrow().is_none() {
            let dir = self.pack_dir();
            if let (Ok(pack), Ok(idx)) = (Blank::create(&dir, 0o444), Blank::create(&dir, 0o444)) {
                *self.blanks.borrow_mut() = Some((pack, idx));
            }
        }
        if ref_swap_enabled() {
            let _ = std::fs::remove_file(self.old_ref());
            if self.ref_blank.borrow().is_none() {
                let refs = self.common_dir.join(STATE_REF);
                let dir = refs.parent().unwrap_or(&self.common_dir);
                *self.ref_blank.borrow_mut() = Blank::create_in(dir, &self.local_dir(), 0o666).ok();
            }
        }
        let file = self.lock_file("writer.lock")?;
        file.lock().ok()?;
        Some(file)
    }

    fn written_pack(&self, commit: &Oid) -> Option<String> {
        let last = self.last_written.borrow();
        last.iter()
            .rev()
            .find(|(c, _)| c == commit)
            .map(|(_, stem)| stem.clone())
    }

    fn pack_hint(&self, stem: &str) {
        let mut seen = self.seen.borrow_mut();
        if !seen.read.contains(stem) {
            seen.hinted.retain(|s| s != stem);
            seen.hinted.insert(0, stem.to_owned());
            seen.hinted.truncate(HINTED_PACKS);
        }
    }

    fn cache_read(&self, key: &str) -> Option<Vec<u8>> {
        if key.starts_with("delta-") {
            return self.journal.get_settled(key);
        }
        std::fs::read(self.local_dir().join("cache").join(key)).ok()
    }

    fn cache_write(&self, key: &str, bytes: &[u8]) {
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
        if !key.starts_with("delta-") || rand_prune() {
            prune_cache(&dir);
        }
    }

    fn lock_age(&self) -> Option<(PathBuf, u64)> {
        let repo = self.repo.borrow();
        let lock = repo.common_dir().join(format!("{STATE_REF}.lock"));
        let modified = std::fs::metadata(&lock).ok()?.modified().ok()?;
        let age = modified.elapsed().map_or(0, |d| d.as_secs());
        Some((lock, age))
    }

    fn first_parent_log(&self, from: &Oid, limit: usize) -> Result<Vec<CommitInfo>, Error> {
        let repo = self.repo.borrow();
        let mut out = Vec::new();
        let mut next = Some(object_id(from)?);
        while let Some(id) = next.take() {
            if out.len() >= limit {
                break;
            }
            let c = match repo.find_commit(id) {
                Ok(c) => c,
                Err(_) if !repo.has_object(id) => {
                    return Err(Error::ObjectMissing {
                        at: format!("the history of {STATE_REF} from {from}"),
                        kind: "commit",
                        id: oid(id),
                        path: None,
                    })
                }
                Err(e) => return Err(git_err(&format!("reading commit {id}"), e)),
            };
            let decoded = c.decode().map_err(|e| git_err("decoding commit", e))?;
            let parents: Vec<Oid> = decoded.parents().map(oid).collect();
            next = decoded.parents().next();
            let author = decoded.author().map_err(|e| git_err("commit author", e))?;
            out.push(CommitInfo {
                id: oid(id),
                parents,
                time: Timestamp::from_unix(author.seconds()),
                author: author.name.to_str_lossy().into_owned(),
                message: decoded.message.to_str_lossy().into_owned(),
            });
        }
        Ok(out)
    }
}

/// Whether the state ref moves through `store::ref_file`
/// (`LOOPX_REF_FILE=0` turns it off, to compare the two).
fn ref_swap_enabled() -> bool {
    std::env::var_os("LOOPX_REF_FILE").is_none_or(|v| v != "0")
}

/// How many packs named by deltas wait to be read (the newest are kept).
const HINTED_PACKS: usize = 256;

/// Past this many bytes of trees and commits, `Seen` starts over.
const SEEN_BYTES: usize = 64 << 20;

/// What a writer keeps of the object store between its writebacks. Under
/// contention every other writer's commit is a new small pack, and the trees
/// a writeback edits (the root, the goal's, a todo bucket) were last written
/// by any of them: so the trees and commits this process writes or reads are
/// kept by id (objects never change), and the packs named by the deltas it
/// replays are read, newest first, when a lookup misses: their indexes are
/// taken in at once, an object is inflated (and its id checked) only when
/// asked for. Only what is older than the process goes to gix's object
/// store, whose lookup misses rescan `objects/pack` (a stat of every index).
#[derive(Default)]
struct Seen {
    objects: std::collections::HashMap<[u8; 20], Slot>,
    bytes: usize,
    /// Packs named by replayed deltas and not read yet, newest first.
    hinted: Vec<String>,
    /// Packs already read (or written) by this process.
    read: std::collections::HashSet<String>,
}

enum Slot {
    Whole(Kind, std::rc::Rc<[u8]>),
    /// Position in a pack read whole into memory.
    Packed(std::rc::Rc<Loaded>, u32),
}

impl Seen {
    fn make_room(&mut self, bytes: usize) {
        if self.bytes + bytes > SEEN_BYTES {
            self.objects.clear();
            self.read.clear();
            self.bytes = 0;
        }
        self.bytes += bytes;
    }

    /// Keeps a tree or a commit (blobs are never read back by a writer).
    fn keep(&mut self, id: [u8; 20], kind: Kind, data: &[u8]) {
        if kind == Kind::Blob || self.objects.contains_key(&id) {
            return;
        }
        self.make_room(data.len());
        self.objects.insert(id, Slot::Whole(kind, data.into()));
    }

    /// Takes in a pack's index: its objects are found, not yet inflated.
    fn take_in(&mut self, pack: Loaded) {
        self.make_room(pack.bytes_held());
        let pack = std::rc::Rc::new(pack);
        for (i, id) in pack.ids() {
            self.objects
                .entry(id)
                .or_insert_with(|| Slot::Packed(pack.clone(), i));
        }
    }

    fn get(&mut self, id: &[u8; 20]) -> Option<(Kind, Vec<u8>)> {
        let found = match self.objects.get(id)? {
            Slot::Whole(kind, data) => return Some((*kind, data.to_vec())),
            Slot::Packed(pack, i) => pack.at(*i),
        };
        match &found {
            Some((kind, data)) if *kind != Kind::Blob => {
                self.objects
                    .insert(*id, Slot::Whole(*kind, data.as_slice().into()));
            }
            Some(_) => {}
            // Not whole, or not what the index says: not looked at again.
            None => {
                self.objects.remove(id);
            }
        }
        found
    }
}

impl GixStore {
    /// A tree or commit seen before, or found in the hinted packs, which
    /// are read newest first until it turns up.
    fn find_seen(&self, id: &gix::hash::oid) -> Option<(Kind, Vec<u8>)> {
        let id: &[u8; 20] = id.as_bytes().try_into().ok()?;
        let mut seen = self.seen.borrow_mut();
        if let Some(found) = seen.get(id) {
            return Some(found);
        }
        let dir = self.pack_dir();
        while !seen.hinted.is_empty() {
            let stem = seen.hinted.remove(0);
            // A pack a repack deleted is not looked for again.
            if let Ok(pack) = Loaded::open(&dir, &stem) {
                seen.take_in(pack);
            }
            seen.read.insert(stem);
            if let Some(found) = seen.get(id) {
                return Some(found);
            }
        }
        None
    }
}

/// The object store as a writer sees it: the hinted packs first (the tip's
/// trees are in the newest), then gix's store for everything else.
struct Layered<'a> {
    store: &'a GixStore,
    odb: &'a gix::OdbHandle,
}

impl gix::objs::Find for Layered<'_> {
    fn try_find<'b>(
        &self,
        id: &gix::hash::oid,
        buffer: &'b mut Vec<u8>,
    ) -> gix::Result<Option<gix::objs::Data<'b>>> {
        if let Some((kind, bytes)) = self.store.find_seen(id) {
            *buffer = bytes;
            let kind = match kind {
                Kind::Commit => gix::objs::Kind::Commit,
                Kind::Tree => gix::objs::Kind::Tree,
                Kind::Blob => gix::objs::Kind::Blob,
            };
            return Ok(Some(gix::objs::Data::new(
                buffer,
                kind,
                gix::hash::Kind::Sha1,
            )));
        }
        let found = gix::objs::Find::try_find(self.odb, id, buffer)?;
        if let (Some(data), Ok(key)) = (&found, <[u8; 20]>::try_from(id.as_bytes())) {
            let kind = match data.kind {
                gix::objs::Kind::Commit => Some(Kind::Commit),
                gix::objs::Kind::Tree => Some(Kind::Tree),
                _ => None,
            };
            if let Some(kind) = kind {
                self.store.seen.borrow_mut().keep(key, kind, data.data);
            }
        }
        Ok(found)
    }
}

/// A loose object a writeback wrote: kept until the ref has moved, to write
/// it again if a prune deleted it meanwhile (see `GixStore::keep_loose`).
type LooseObject = (ObjectId, gix::objs::Kind, Vec<u8>);

/// How long a writer waits, after its move, for a `git gc` that was
/// already running to finish (see `GixStore::keep_loose`).
const GC_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

impl GixStore {
    /// Writes a loose object (again, if it exists: git freshens an object it
    /// would write the same way), synced if git config asks.
    fn write_loose(
        &self,
        kind: gix::objs::Kind,
        bytes: &[u8],
        written: &mut Vec<LooseObject>,
    ) -> Result<ObjectId, Error> {
        let repo = self.repo.borrow();
        let id = persist(|| gix::objs::Write::write_buf(&repo.objects, kind, bytes))
            .map_err(|e| git_err(&format!("writing a {kind}"), e))?;
        self.sync_loose(&loose_path(&repo, &id));
        written.push((id, kind, bytes.to_vec()));
        Ok(id)
    }

    fn sync_loose(&self, path: &Path) {
        let d = &self.durability;
        let _ = d.sync_path(d.loose_objects, path);
        let _ = d.sync_parent(d.loose_objects, path);
    }

    /// After the ref moved: makes sure the writeback's loose objects are
    /// still there. Until the move they were unreachable, and `git gc
    /// --prune=now` deletes every unreachable loose object whatever its
    /// age: a gc that read the refs before the move may delete them after
    /// it. So a writer that finds a `git gc` running (its `gc.pid`) waits
    /// for that gc to end (up to a minute; a gc started after the move sees
    /// the ref), then writes again any object that is gone. A writeback's
    /// pack needs none of this: it is kept (`.keep`) until the ref moved.
    fn keep_loose(&self, written: &[LooseObject]) {
        if written.is_empty() {
            return;
        }
        wait_for_running_gc(&self.common_dir.join("gc.pid"), GC_WAIT);
        let repo = self.repo.borrow();
        for (id, kind, bytes) in written {
            let path = loose_path(&repo, id);
            if path.exists() || repo.has_object(id) {
                continue;
            }
            tracing::warn!(
                "{kind} {id} was deleted before {STATE_REF} reached it: writing it again"
            );
            if persist(|| gix::objs::Write::write_buf(&repo.objects, *kind, bytes)).is_ok() {
                self.sync_loose(&path);
            }
        }
    }
}

/// Waits until the `git gc` whose `gc.pid` is there now has ended: the file
/// is gone or replaced (another gc), its process is not alive (where the OS
/// says), or `limit` has passed.
fn wait_for_running_gc(gc_pid: &Path, limit: std::time::Duration) {
    use std::os::unix::fs::MetadataExt;
    let Ok(first) = std::fs::metadata(gc_pid) else {
        return;
    };
    let pid = std::fs::read_to_string(gc_pid)
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u32>().ok());
    let alive =
        |pid: u32| !Path::new("/proc/self").exists() || Path::new(&format!("/proc/{pid}")).exists();
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline && pid.is_none_or(alive) {
        match std::fs::metadata(gc_pid) {
            Ok(now) if now.ino() == first.ino() && now.dev() == first.dev() => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => return,
        }
    }
}

fn loose_path(repo: &gix::Repository, id: &ObjectId) -> PathBuf {
    let hex = id.to_string();
    repo.objects
        .store_ref()
        .path()
        .join(&hex[..2])
        .join(&hex[2..])
}

/// An object's canonical bytes, as git hashes and stores them.
fn encoded(object: &impl gix::objs::WriteTo) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(object.size() as usize);
    object.write_to(&mut bytes)?;
    Ok(bytes)
}

/// Writes an object, trying again when the write fails: `git prune-packed`
/// (run by `git maintenance` or `git gc`, ours or the user's) removes fan-out
/// directories it emptied, and one can vanish between gix creating it and
/// moving the new object into it. git retries the same way. Objects are
/// content-addressed, so writing one twice is harmless.
fn persist<T, E: std::fmt::Display>(write: impl Fn() -> Result<T, E>) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        match write() {
            Ok(v) => return Ok(v),
            Err(e) if attempt < 5 => {
                tracing::debug!("object write failed, trying again: {e}");
                attempt += 1;
            }
            Err(e) => return Err(e),
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

/// How many full parsed states, and how many deltas, the cache keeps.
const CACHE_SNAPSHOTS: usize = 3;
const CACHE_DELTAS: usize = 96;

/// Keeps the most recently written snapshots and deltas.
fn prune_cache(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut snapshots = Vec::new();
    let mut deltas = Vec::new();
    for e in entries.flatten() {
        let Some(modified) = e.metadata().ok().and_then(|m| m.modified().ok()) else {
            continue;
        };
        let name = e.file_name();
        let list = if name.to_string_lossy().starts_with("delta-") {
            &mut deltas
        } else {
            &mut snapshots
        };
        list.push((modified, e.path()));
    }
    for (mut files, keep) in [(snapshots, CACHE_SNAPSHOTS), (deltas, CACHE_DELTAS)] {
        if files.len() > keep {
            files.sort();
            for (_, path) in &files[..files.len() - keep] {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// Prunes on one delta write in sixteen (by time), to keep writes cheap.
fn rand_prune() -> bool {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .is_ok_and(|d| d.subsec_nanos() % 16 == 0)
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
    let points_at_state = |head: &Path| {
        std::fs::read_to_string(head).is_ok_and(|text| text.trim() == format!("ref: {STATE_REF}"))
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
