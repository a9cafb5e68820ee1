//! What a write wrote, kept against git's prune until a ref reaches it.
//!
//! A written object is unreachable until a ref names its commit, and `git gc
//! --prune=now` (or `git prune`) deletes unreachable loose objects whatever
//! their age. So a write keeps what it wrote until a ref reaches it, then
//! checks it is all still there, waiting first for a `git gc` that was
//! already running, and writes again what is gone ([`Repository::keep_loose`]).
//! Only then is the write acknowledged.
//!
//! A bare `git prune --expire=now` takes no `gc.pid`, and `now` there means
//! every unreachable object whatever its date: one that read the refs before
//! the move deletes the write's objects whenever it reaches them, after any
//! check. Only a pack is out of its reach, and a pack per write would slow
//! every git command of the repository. So each write also records what it
//! wrote (the objects' bytes, under its commit) in a host-local journal
//! outside `objects/` ([`Repository::restore_pruned`]), before the move: a
//! reader that misses an object, and `doctor`, write again every recorded
//! object that is gone. A reader of the tip does not read older commits, so
//! a writer also looks for a canary: an unreachable loose object under
//! `objects/ff/`, the last directory a prune walks. Gone, a prune has nearly
//! finished since it was written; there or not, for a minute after it was
//! written again each writer writes back what the journal holds
//! ([`Repository::heal_after_prune`]).

use std::path::Path;

use gix::bstr::ByteSlice;
use gix::ObjectId;

use super::objects::{loose_path, persist, LooseFirst, LooseObject};
use super::{object_id, oid, Repository};
use crate::store::{Error, Oid, STATE_REF};

/// How long a writer waits, after its move, for a `git gc` that was
/// already running to finish (see [`Repository::keep_loose`]).
const GC_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The canary of [`Repository::heal_after_prune`]: a blob whose id starts
/// with `ff` (`objects/ff/` is the last directory `git prune` walks; a unit
/// test checks the id), never reachable.
const CANARY: &[u8] = b"git-loopx: a prune ran since this was written (19)\n";

/// How long after a prune was seen every writer writes back what the
/// journal holds: the prune that took the canary may still be finishing.
const AFTER_PRUNE: std::time::Duration = std::time::Duration::from_secs(60);

/// Size past which the journal of written objects starts over (one
/// generation is kept): some thousands of writes, read only to restore.
pub(super) const WRITTEN_BYTES: u64 = 8 * 1024 * 1024;

impl Repository {
    /// Records what a write wrote under its commit, before a ref reaches
    /// it (nothing: a commit no ref will reach, with nothing to restore).
    pub(super) fn record_written(&self, commit: &Oid, written: &[LooseObject]) {
        self.written.append(&commit.0, &encode_written(written));
    }

    /// Writes again every object the journal of recent writes holds that
    /// the object store no longer has (a bare `git prune` beside a write,
    /// see the module docs). Returns how many it wrote.
    pub fn restore_pruned(&self) -> usize {
        let entries = self.written.entries();
        if entries.is_empty() {
            return 0;
        }
        let repo = self.repo.borrow();
        let mut restored = 0;
        for (commit, value) in entries {
            for (id, kind, bytes) in decode_written(&value) {
                if loose_path(&repo, &id).exists() || repo.has_object(id) {
                    continue;
                }
                let again = persist(|| gix::objs::Write::write_buf(&repo.objects, kind, &bytes));
                match again {
                    Ok(written) if written == id => {
                        self.sync_loose(&loose_path(&repo, &id));
                        restored += 1;
                    }
                    Ok(other) => tracing::warn!("{kind} of {commit} hashed to {other}, not {id}"),
                    Err(e) => tracing::warn!("could not write {kind} {id} again: {e}"),
                }
            }
        }
        if restored > 0 {
            tracing::warn!("wrote again {restored} objects of recent writes that a prune deleted");
        }
        restored
    }

    /// Heals what a bare `git prune` took from the commits before the tip,
    /// which a reader of the tip never reads (see the module docs): when
    /// the canary is gone it is written again and the journal's objects are
    /// written back, and again by every writer while the canary is younger
    /// than [`AFTER_PRUNE`]. Otherwise one `stat`. Returns how many objects
    /// it wrote back.
    pub fn heal_after_prune(&self) -> usize {
        let repo = self.repo.borrow();
        let id = gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, CANARY);
        let Ok(id) = id else {
            return 0;
        };
        let path = loose_path(&repo, &id);
        match std::fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(written) if written.elapsed().unwrap_or_default() >= AFTER_PRUNE => return 0,
            Ok(_) => {}
            Err(_) => {
                let loose = LooseFirst::of(&repo);
                if let Err(e) =
                    gix::objs::Write::write_buf(&loose.loose, gix::objs::Kind::Blob, CANARY)
                {
                    tracing::debug!("could not write the prune canary: {e}");
                }
            }
        }
        drop(repo);
        self.restore_pruned()
    }

    /// Forgets the journal of written objects (`redact`: what it removed
    /// from history must not come back).
    pub fn forget_written(&self) {
        self.written.clear();
    }

    /// The first object of `commit` (itself, then its tree's trees and
    /// blobs, depth first) that the object store does not have: its kind,
    /// id and path in the tree. Looked up in a freshly opened store, after
    /// writing again what a prune deleted ([`Repository::restore_pruned`]).
    pub fn missing_object(&self, commit: &Oid) -> Option<(&'static str, Oid, Option<String>)> {
        self.restore_pruned();
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
    pub(super) fn diagnosed(&self, commit: &Oid, error: Error) -> Error {
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

    /// After a ref reached what a write wrote: makes sure it is all still
    /// there. Until the move it was unreachable, and `git gc --prune=now`
    /// deletes every unreachable loose object whatever its age: a gc that
    /// read the refs before the move may delete them after it. So a writer
    /// that finds a `git gc` running (its `gc.pid`; `git maintenance run`
    /// goes through `git gc` too) waits for that gc to end (up to a minute;
    /// a gc started after the move sees the ref), then writes again any
    /// object that is gone.
    pub(super) fn keep_loose(&self, written: &[LooseObject]) {
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

/// A write's objects as one journal record: for each, its kind (one byte),
/// its id (a length byte, then the raw id), and its bytes (a u32 LE length,
/// then the bytes).
fn encode_written(written: &[LooseObject]) -> Vec<u8> {
    let mut out = Vec::with_capacity(written.iter().map(|(_, _, b)| b.len() + 32).sum());
    for (id, kind, bytes) in written {
        let Ok(len) = u32::try_from(bytes.len()) else {
            continue;
        };
        out.push(match kind {
            gix::objs::Kind::Commit => 1,
            gix::objs::Kind::Tree => 2,
            gix::objs::Kind::Blob => 3,
            gix::objs::Kind::Tag => 4,
        });
        let raw = id.as_bytes();
        out.push(raw.len() as u8);
        out.extend_from_slice(raw);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// The objects of a record [`encode_written`] made; stops at the first
/// thing it cannot read (the journal already checksums its records).
fn decode_written(mut buf: &[u8]) -> Vec<LooseObject> {
    let mut out = Vec::new();
    while let [kind, id_len, rest @ ..] = buf {
        let kind = match kind {
            1 => gix::objs::Kind::Commit,
            2 => gix::objs::Kind::Tree,
            3 => gix::objs::Kind::Blob,
            4 => gix::objs::Kind::Tag,
            _ => break,
        };
        let id_len = *id_len as usize;
        if rest.len() < id_len + 4 {
            break;
        }
        let Ok(id) = ObjectId::try_from(&rest[..id_len]) else {
            break;
        };
        let len =
            u32::from_le_bytes(rest[id_len..id_len + 4].try_into().expect("4 bytes")) as usize;
        let body = &rest[id_len + 4..];
        if body.len() < len {
            break;
        }
        out.push((id, kind, body[..len].to_vec()));
        buf = &body[len..];
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_canary_lives_in_the_last_directory_a_prune_walks() {
        let id =
            gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, super::CANARY)
                .unwrap();
        assert!(id.to_string().starts_with("ff"), "{id}");
    }
}
