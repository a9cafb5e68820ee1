//! The host-local parsed-state cache under `.git/loopx/cache/`.
//!
//! A command needs the typed state of the tip; decoding it from git means
//! parsing every YAML file of the tree (about 100 ms at 10,000 todos). The
//! cache keeps, per commit this host has seen, either a full snapshot (in
//! the compact form of [`crate::store::binary`]) or a delta: the parent
//! commit and the files the commit changed, replayed onto the parent's state.
//!
//! Invariants: the cache is disposable (an unreadable or missing entry means
//! "read git"); only a state that decoded cleanly from git, or was derived
//! from one by a committed write, is ever cached; keys hold the crate version
//! and the layout's magic, so another git-loopx never reads this one's bytes.

use crate::codec;
use crate::model::State;
use crate::store::{binary, Error, FileChange, Oid, Snapshot, Store};

fn cache_key(commit: &Oid) -> String {
    format!("state-{}-{}.bin", env!("CARGO_PKG_VERSION"), commit)
}

fn delta_key(commit: &Oid) -> String {
    format!("delta-{}-{}.json", env!("CARGO_PKG_VERSION"), commit)
}

/// A commit's state as its parent's plus the files it changed: what a write
/// caches, so it never re-serializes the whole state.
#[derive(serde::Serialize, serde::Deserialize)]
struct Delta {
    parent: Oid,
    files: Vec<(String, Option<String>)>,
    /// The pack holding the commit's objects (see `store::pack::Loaded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pack: Option<String>,
}

/// Longest chain of deltas read before a full snapshot is written again.
const MAX_DELTAS: usize = 24;

/// A delta replays YAML; one that changes more files than this is cached as
/// a snapshot instead (a bulk import, a merge).
const MAX_DELTA_FILES: usize = 64;

/// The state at `commit`: from the parsed-state cache when this host has
/// seen the commit before (a snapshot, or a chain of deltas ending in one),
/// else read from git, decoded, and cached.
pub fn state_at<S: Store + ?Sized>(store: &S, commit: &Oid) -> Result<State, Error> {
    if let Some((state, depth)) = cached(store, commit, 0) {
        if depth >= MAX_DELTAS {
            remember(store, commit, &state);
        }
        return Ok(state);
    }
    let snapshot = store.read(commit)?;
    let state = decode(&snapshot)?.expect("snapshot of a commit");
    remember(store, commit, &state);
    Ok(state)
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

fn cached<S: Store + ?Sized>(store: &S, commit: &Oid, depth: usize) -> Option<(State, usize)> {
    // A long-lived store replays other writers' deltas onto its own last state.
    if let Some(state) = store.memo_take(commit) {
        return Some((state, depth));
    }
    if let Some(bytes) = store.cache_read(&cache_key(commit)) {
        match binary::decode(bytes) {
            Some(state) => return Some((state, depth)),
            None => tracing::debug!("ignoring an unreadable state cache for {commit}"),
        }
    }
    if depth > 2 * MAX_DELTAS {
        return None;
    }
    let delta: Delta = serde_json::from_slice(&store.cache_read(&delta_key(commit))?).ok()?;
    let (mut state, depth) = cached(store, &delta.parent, depth + 1)?;
    for (path, bytes) in &delta.files {
        codec::apply_file(&mut state, path, bytes.as_deref().map(str::as_bytes)).ok()?;
    }
    state.clean();
    // After the parent's: the newest commit's pack ends up first.
    if let Some(stem) = &delta.pack {
        store.pack_hint(stem);
    }
    Some((state, depth))
}

/// Caches the full state of `commit`.
pub fn remember<S: Store + ?Sized>(store: &S, commit: &Oid, state: &State) {
    store.cache_write(&cache_key(commit), &binary::encode(state));
}

/// Caches the state of a commit this host just made: as a delta on its
/// parent when it is small, else as a snapshot.
pub fn remember_delta<S: Store + ?Sized>(
    store: &S,
    commit: &Oid,
    parent: Option<&Oid>,
    state: &State,
    changes: &[FileChange],
) {
    let Some(parent) = parent.filter(|_| changes.len() <= MAX_DELTA_FILES) else {
        return remember(store, commit, state);
    };
    let files = changes
        .iter()
        .map(|c| match c {
            FileChange::Upsert { path, bytes } => (
                path.clone(),
                Some(String::from_utf8_lossy(bytes).into_owned()),
            ),
            FileChange::Remove { path } => (path.clone(), None),
        })
        .collect();
    if let Ok(bytes) = serde_json::to_vec(&Delta {
        parent: parent.clone(),
        files,
        pack: store.written_pack(commit),
    }) {
        store.cache_write(&delta_key(commit), &bytes);
    }
}
