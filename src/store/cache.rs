//! The host-local parsed-state cache under `.git/loopx/cache/`.
//!
//! A command needs the typed state of the tip; decoding it from git means
//! parsing every YAML file of the tree (about 100 ms at 10,000 todos). The
//! cache keeps, per commit this host has seen, either a full snapshot (in
//! the compact form of [`crate::codec::binary`]) or a delta: the parent
//! commit and the files the commit changed, replayed onto the parent's state.
//!
//! Invariants: the cache is disposable (an unreadable or missing entry means
//! "read git"); only a state that decoded cleanly from git, or was derived
//! from one by a committed write, is ever cached; keys hold the crate version
//! and the layout's magic, so another git-loopx never reads this one's bytes.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use crate::codec;
use crate::codec::binary;
use crate::codec::binary::{DeltaFile, DeltaFileRef};
use crate::codec::EntityFile;
use crate::model::State;
use crate::store::journal::Journal;
use crate::store::{Error, FileChange, GixStore, Oid, Repository, Snapshot};

/// The parsed-state cache of one repository on this host: snapshots as
/// files under its directory, deltas in the journal beside them
/// (`store::journal`), and two states this process keeps in memory.
pub struct StateCache {
    /// `.git/loopx/cache`.
    dir: PathBuf,
    /// The cache's deltas.
    journal: Journal,
    /// The state of the last commit this process made (see
    /// [`StateCache::memo_take`]).
    memo: RefCell<Option<(Oid, State)>>,
    /// The state this process last read from the cache, as read (its
    /// entries undecoded, so a copy is cheap): a sync asks for the same
    /// base and ancestor once per peer head.
    read_memo: RefCell<Option<(Oid, State)>>,
}

impl StateCache {
    pub(in crate::store) fn new(dir: PathBuf) -> Self {
        StateCache {
            journal: Journal::new(dir.clone()),
            dir,
            memo: RefCell::new(None),
            read_memo: RefCell::new(None),
        }
    }

    /// Takes the state this process last committed, if `commit` is still
    /// it: a long-lived process then skips reloading its own writes.
    fn memo_take(&self, commit: &Oid) -> Option<State> {
        let mut memo = self.memo.borrow_mut();
        if memo.as_ref().is_some_and(|(id, _)| id == commit) {
            memo.take().map(|(_, state)| state)
        } else {
            None
        }
    }

    /// Remembers the state of the commit this process just made.
    pub(in crate::store) fn memo_put(&self, commit: Oid, state: State) {
        *self.memo.borrow_mut() = Some((commit, state));
    }

    /// A copy of the state of `commit` if this process read it from the
    /// cache last.
    fn read_memo_get(&self, commit: &Oid) -> Option<State> {
        let memo = self.read_memo.borrow();
        memo.as_ref()
            .filter(|(id, _)| id == commit)
            .map(|(_, state)| state.clone())
    }

    /// Keeps a copy of a state just read from the cache.
    fn read_memo_put(&self, commit: &Oid, state: &State) {
        *self.read_memo.borrow_mut() = Some((commit.clone(), state.clone()));
    }

    /// A cache entry, if present.
    fn read(&self, key: &str) -> Option<Vec<u8>> {
        if key.starts_with("delta-") {
            return self.journal.get_settled(key);
        }
        std::fs::read(self.dir.join(key)).ok()
    }

    /// Stores a cache entry; failures are ignored (it is a cache).
    fn write(&self, key: &str, bytes: &[u8]) {
        // Deltas, one a writeback, go to the journal: no file to create.
        if key.starts_with("delta-") {
            return self.journal.append(key, bytes);
        }
        let dir = &self.dir;
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        // Write beside, then rename: a reader never sees half a file.
        let tmp = dir.join(format!("{key}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, dir.join(key)).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        prune_snapshots(dir);
    }
}

/// How many full parsed states the cache keeps as files (deltas live in the
/// journal, which starts over by itself).
const CACHE_SNAPSHOTS: usize = 3;

/// Keeps the most recently written snapshots.
fn prune_snapshots(dir: &Path) {
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

fn cache_key(commit: &Oid) -> String {
    format!("state-{}-{}.bin", env!("CARGO_PKG_VERSION"), commit)
}

/// A commit's state as its parent's plus the files it changed: what a write
/// caches, so it never re-serializes the whole state (the form is
/// [`binary::Delta`]: todos and runs replay without decoding YAML).
fn delta_key(commit: &Oid) -> String {
    format!("delta-{}-{}.bin", env!("CARGO_PKG_VERSION"), commit)
}

/// Longest chain of deltas read before a full snapshot is written again.
const MAX_DELTAS: usize = 24;

/// A delta that changes more files than this is cached as a snapshot
/// instead (a bulk import, a merge).
const MAX_DELTA_FILES: usize = 64;

/// The state at `commit`: from the parsed-state cache when this host has
/// seen the commit before (a snapshot, or a chain of deltas ending in one),
/// else read from git, decoded, and cached.
pub fn state_at(store: &GixStore, commit: &Oid) -> Result<State, Error> {
    let (repo, cache) = (store.repo(), store.cache());
    if let Some(state) = cache.read_memo_get(commit) {
        return Ok(state);
    }
    if let Some((state, depth)) = cache.cached(commit, 0) {
        if depth >= MAX_DELTAS {
            cache.remember(commit, &state);
        }
        return Ok(state);
    }
    if let Some(state) = from_ancestor(repo, cache, commit)? {
        return Ok(state);
    }
    let snapshot = repo.read(commit)?;
    let state = decode(&snapshot)?.expect("snapshot of a commit");
    cache.remember(commit, &state);
    Ok(state)
}

/// How many first-parent ancestors of an unseen commit are looked up in
/// the cache before it is read whole.
const ANCESTOR_WALK: usize = 64;

/// The state of a commit this host has not seen (a peer's head, fetched)
/// from the nearest first-parent ancestor it has — else from the local
/// tip's: that state, plus the files the two trees differ in, decoded with
/// every check a whole read makes. What a sync merge reads then costs what
/// the peers changed, not what the state holds. The tip serves when the
/// peers' lines of commits reach no cached state within
/// [`ANCESTOR_WALK`] (a fleet's merges of merges, a cache that rotated):
/// any tree diffs against any other, and a peer's state is mostly this
/// clone's. `None` when neither is cached.
fn from_ancestor(
    repo: &Repository,
    cache: &StateCache,
    commit: &Oid,
) -> Result<Option<State>, Error> {
    let Ok(line) = repo.first_parent_log(commit, ANCESTOR_WALK) else {
        return Ok(None);
    };
    let known = |id: &Oid| {
        let state = cache
            .read_memo_get(id)
            .or_else(|| cache.cached(id, 0).map(|(state, _)| state))?;
        cache.read_memo_put(id, &state);
        Some((id.clone(), state))
    };
    let near = line.iter().skip(1).find_map(|c| known(&c.id));
    let tip = || {
        let tip = repo.tip().ok().flatten().filter(|t| t != commit)?;
        known(&tip)
    };
    let Some((ancestor, mut state)) = near.or_else(tip) else {
        return Ok(None);
    };
    let files = repo.changed_files(&ancestor, commit)?;
    let edits: Vec<(&str, Option<&[u8]>)> = files
        .iter()
        .map(|(path, bytes)| (path.as_str(), bytes.as_deref()))
        .collect();
    let applied = codec::apply_changes(&mut state, &edits).map_err(|source| Error::Corrupt {
        commit: commit.clone(),
        source,
    })?;
    if !applied {
        return Ok(None);
    }
    let changes: Vec<FileChange> = files
        .into_iter()
        .map(|(path, bytes)| match bytes {
            Some(bytes) => FileChange::Upsert { path, bytes },
            None => FileChange::Remove { path },
        })
        .collect();
    cache.remember_delta(commit, Some(&ancestor), &state, &changes);
    Ok(Some(state))
}

/// Decodes the state of `snapshot`, naming the commit on failure.
fn decode(snapshot: &Snapshot) -> Result<Option<State>, Error> {
    let Some(commit) = &snapshot.commit else {
        return Ok(None);
    };
    codec::decode_state(
        snapshot
            .files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice())),
    )
    .map(Some)
    .map_err(|source| Error::Corrupt {
        commit: commit.clone(),
        source,
    })
}

impl StateCache {
    /// The state of `commit` as this host cached it: the memo, a snapshot,
    /// or a chain of deltas ending in one (`depth` deltas deep so far).
    fn cached(&self, commit: &Oid, depth: usize) -> Option<(State, usize)> {
        // A long-lived store replays other writers' deltas onto its own last state.
        if let Some(state) = self.memo_take(commit) {
            return Some((state, depth));
        }
        if let Some(bytes) = self.read(&cache_key(commit)) {
            match binary::decode(bytes) {
                Some(state) => return Some((state, depth)),
                None => tracing::debug!("ignoring an unreadable state cache for {commit}"),
            }
        }
        if depth > 2 * MAX_DELTAS {
            return None;
        }
        let delta = binary::decode_delta(&self.read(&delta_key(commit))?)?;
        let (mut state, depth) = self.cached(&Oid(delta.parent), depth + 1)?;
        replay(&mut state, delta.files)?;
        Some((state, depth))
    }

    /// Caches the full state of `commit`.
    pub fn remember(&self, commit: &Oid, state: &State) {
        self.write(&cache_key(commit), &binary::encode(state));
    }

    /// Caches the state of a commit this host just made: as a delta on its
    /// parent when it is small, else as a snapshot.
    pub fn remember_delta(
        &self,
        commit: &Oid,
        parent: Option<&Oid>,
        state: &State,
        changes: &[FileChange],
    ) {
        let Some(parent) = parent.filter(|_| changes.len() <= MAX_DELTA_FILES) else {
            return self.remember(commit, state);
        };
        let bytes = delta_bytes(parent, state, changes);
        self.write(&delta_key(commit), &bytes);
    }
}

/// The delta of a commit with `parent` that made `changes`, giving `state`.
pub fn delta_bytes(parent: &Oid, state: &State, changes: &[FileChange]) -> Vec<u8> {
    let files: Vec<(&str, DeltaFileRef<'_>)> = changes
        .iter()
        .map(|c| match c {
            FileChange::Upsert { path, bytes } => {
                let entity = match codec::entity_file(path) {
                    Some(EntityFile::Todo { goal, id }) => state
                        .goals
                        .get(goal)
                        .and_then(|gs| gs.todos.get(id))
                        .map(DeltaFileRef::Todo),
                    Some(EntityFile::Run { goal, id }) => state
                        .goals
                        .get(goal)
                        .and_then(|gs| gs.runs.get(id))
                        .map(DeltaFileRef::Run),
                    None => None,
                };
                (path.as_str(), entity.unwrap_or(DeltaFileRef::Yaml(bytes)))
            }
            FileChange::Remove { path } => (path.as_str(), DeltaFileRef::Removed),
        })
        .collect();
    binary::encode_delta(&parent.0, &files)
}

/// Replays a delta's files onto its parent's state; `None` if one does not fit.
pub fn replay(state: &mut State, files: Vec<(String, DeltaFile)>) -> Option<()> {
    for (path, file) in files {
        match file {
            DeltaFile::Removed => codec::apply_file(state, &path, None),
            DeltaFile::Yaml(bytes) => codec::apply_file(state, &path, Some(&bytes)),
            DeltaFile::Todo(todo) => codec::place_todo(state, &path, *todo),
            DeltaFile::Run(run) => codec::place_run(state, &path, *run),
        }
        .ok()?;
    }
    state.clean();
    Some(())
}
