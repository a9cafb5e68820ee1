//! Objects: the files of a state commit read from its tree, and a new
//! commit written as loose objects through gix, as `git commit` writes one.
//!
//! A written object is unreachable until a ref names its commit, and `git gc
//! --prune=now` (or `git prune`) deletes unreachable loose objects whatever
//! their age. So a write keeps what it wrote until a ref reaches it, then
//! checks it is all still there, waiting first for a `git gc` that was
//! already running, and writes again what is gone ([`GixStore::keep_loose`]).
//! Only then is the write acknowledged.
//!
//! A bare `git prune --expire=now` takes no `gc.pid`, and `now` there means
//! every unreachable object whatever its date: one that read the refs before
//! the move deletes the write's objects whenever it reaches them, after any
//! check. Only a pack is out of its reach, and a pack per write would slow
//! every git command of the repository. So each write also records what it
//! wrote (the objects' bytes, under its commit) in a host-local journal
//! outside `objects/` ([`GixStore::restore_pruned`]), before the move: a
//! reader that misses an object, and `doctor`, write again every recorded
//! object that is gone. A reader of the tip does not read older commits, so
//! a writer also looks for a canary: an unreachable loose object under
//! `objects/ff/`, the last directory a prune walks. Gone, a prune has nearly
//! finished since it was written; there or not, for a minute after it was
//! written again each writer writes back what the journal holds
//! ([`GixStore::heal_after_prune`]).

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;
use std::collections::BTreeMap;

use gix::objs::tree::{EntryKind, EntryMode};
use gix::objs::FindExt as _;
use gix::ObjectId;

use super::{git_err, object_id, oid, GixStore};
use crate::model::Timestamp;
use crate::store::{CasResult, Checked, CommitInfo, Error, FileChange, Oid, Snapshot, STATE_REF};

/// An object a write wrote, kept until a ref reaches it, to write it again
/// if a prune deleted it meanwhile.
pub(super) type LooseObject = (ObjectId, gix::objs::Kind, Vec<u8>);

/// Where a new commit goes: the state ref, compare-and-swap, or nowhere yet
/// (a detached commit, kept until a ref reaches it); `DetachedAlways` makes
/// the commit even when the tree did not change.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Publish {
    Ref,
    Detached,
    DetachedAlways,
}

/// How long a writer waits, after its move, for a `git gc` that was
/// already running to finish (see [`GixStore::keep_loose`]).
const GC_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The canary of [`GixStore::heal_after_prune`]: a blob whose id starts
/// with `ff` (`objects/ff/` is the last directory `git prune` walks; a unit
/// test checks the id), never reachable.
const CANARY: &[u8] = b"git-loopx: a prune ran since this was written (19)\n";

/// How long after a prune was seen every writer writes back what the
/// journal holds: the prune that took the canary may still be finishing.
const AFTER_PRUNE: std::time::Duration = std::time::Duration::from_secs(60);

/// Size past which the journal of written objects starts over (one
/// generation is kept): some thousands of writes, read only to restore.
pub(super) const WRITTEN_BYTES: u64 = 8 * 1024 * 1024;

impl GixStore {
    pub(super) fn try_read(&self, commit: &Oid) -> Result<Snapshot, Error> {
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

    /// The mode and object id of `path` in `commit`'s tree, if it has one.
    fn entry_at(&self, commit: &Oid, path: &str) -> Result<Option<(EntryMode, ObjectId)>, Error> {
        let repo = self.repo.borrow();
        let tree = repo
            .find_commit(object_id(commit)?)
            .and_then(|c| c.tree())
            .map_err(|e| git_err(&format!("reading commit {commit}"), e))?;
        let entry = tree
            .lookup_entry_by_path(path)
            .map_err(|e| git_err(&format!("reading {path}"), e))?;
        Ok(entry.map(|e| (e.mode(), e.object_id())))
    }

    pub(super) fn try_read_file(&self, commit: &Oid, path: &str) -> Result<Option<Vec<u8>>, Error> {
        let Some((mode, id)) = self.entry_at(commit, path)? else {
            return Ok(None);
        };
        if !mode.is_blob() {
            return Ok(None);
        }
        let repo = self.repo.borrow();
        blob_bytes(&repo, commit, path, id).map(Some)
    }

    pub(super) fn try_read_dir(
        &self,
        commit: &Oid,
        dir: &str,
        keep: &dyn Fn(&str) -> bool,
    ) -> Result<BTreeMap<String, Vec<u8>>, Error> {
        let mut files = BTreeMap::new();
        let Some((mode, id)) = self.entry_at(commit, dir)? else {
            return Ok(files);
        };
        if !mode.is_tree() {
            return Ok(files);
        }
        let entries = {
            let repo = self.repo.borrow();
            let tree = repo
                .find_tree(id)
                .map_err(|e| git_err(&format!("reading tree {dir}"), e))?;
            let decoded = tree.decode().map_err(|e| git_err("decoding tree", e))?;
            decoded
                .entries
                .iter()
                .map(|e| {
                    (
                        e.filename.to_str_lossy().into_owned(),
                        e.mode,
                        e.oid.to_owned(),
                    )
                })
                .collect::<Vec<_>>()
        };
        for (name, mode, id) in entries {
            if !keep(&name) {
                continue;
            }
            let path = format!("{dir}/{name}");
            if mode.is_tree() {
                self.collect(commit, id, &path, &mut files)?;
            } else if mode.is_blob() {
                let repo = self.repo.borrow();
                let bytes = blob_bytes(&repo, commit, &path, id)?;
                files.insert(path, bytes);
            }
        }
        Ok(files)
    }

    /// The files that differ between the trees of `from` and `to`: each
    /// with its bytes in `to`, or `None` where `to` has no such file. Only
    /// subtrees whose ids differ are read, so the cost is what changed.
    pub(super) fn try_changed_files(
        &self,
        from: &Oid,
        to: &Oid,
    ) -> Result<Vec<ChangedFile>, Error> {
        let repo = self.repo.borrow();
        let tree_of = |commit: &Oid| -> Result<ObjectId, Error> {
            let c = repo
                .find_commit(object_id(commit)?)
                .map_err(|e| git_err(&format!("reading commit {commit}"), e))?;
            Ok(c.tree_id()
                .map_err(|e| git_err("reading commit tree", e))?
                .detach())
        };
        let (old, new) = (tree_of(from)?, tree_of(to)?);
        drop(repo);
        let mut out = Vec::new();
        self.diff_trees(to, Some(old), Some(new), "", &mut out)?;
        Ok(out)
    }

    fn diff_trees(
        &self,
        commit: &Oid,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        prefix: &str,
        out: &mut Vec<ChangedFile>,
    ) -> Result<(), Error> {
        let entries =
            |tree: Option<ObjectId>| -> Result<BTreeMap<String, (EntryMode, ObjectId)>, Error> {
                let Some(tree) = tree else {
                    return Ok(BTreeMap::new());
                };
                let repo = self.repo.borrow();
                let tree = repo
                    .find_tree(tree)
                    .map_err(|e| git_err(&format!("reading tree {prefix}"), e))?;
                let decoded = tree.decode().map_err(|e| git_err("decoding tree", e))?;
                Ok(decoded
                    .entries
                    .iter()
                    .map(|e| {
                        (
                            e.filename.to_str_lossy().into_owned(),
                            (e.mode, e.oid.to_owned()),
                        )
                    })
                    .collect())
            };
        let (old, new) = (entries(old)?, entries(new)?);
        let names: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for name in names {
            let (was, is) = (old.get(name), new.get(name));
            if was == is {
                continue;
            }
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}/{name}")
            };
            let subtree = |e: Option<&(EntryMode, ObjectId)>| {
                e.filter(|(m, _)| m.is_tree()).map(|(_, id)| *id)
            };
            let (old_tree, new_tree) = (subtree(was), subtree(is));
            if old_tree.is_some() || new_tree.is_some() {
                self.diff_trees(commit, old_tree, new_tree, &path, out)?;
            }
            let was_file = was.is_some_and(|(m, _)| !m.is_tree());
            match is {
                Some((mode, id)) if mode.is_blob() => {
                    let repo = self.repo.borrow();
                    let bytes = blob_bytes(&repo, commit, &path, *id)?;
                    out.push((path, Some(bytes)));
                }
                Some((mode, _)) if !mode.is_tree() => return Err(not_a_file(commit, path, *mode)),
                // Gone, or a directory now where a file was.
                _ if was_file => out.push((path, None)),
                _ => {}
            }
        }
        Ok(())
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
                let bytes = blob_bytes(&repo, commit, &path, entry.oid.to_owned())?;
                files.insert(path, bytes);
            } else {
                return Err(not_a_file(commit, path, entry.mode));
            }
        }
        Ok(())
    }

    pub(super) fn history(
        &self,
        from: &Oid,
        limit: usize,
        mut more: impl FnMut(&CommitInfo) -> bool,
    ) -> Result<Vec<CommitInfo>, Error> {
        let repo = self.repo.borrow();
        let mut out: Vec<CommitInfo> = Vec::new();
        let mut next = Some(object_id(from)?);
        while let Some(id) = next.take() {
            if out.len() >= limit || out.last().is_some_and(|c| !more(c)) {
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

    /// Writes a commit of `checked`'s changes on the tree of `parents[0]`
    /// whose parents are all of `parents` (a root commit on the empty tree
    /// when there are none), and moves no ref; its objects are kept until a
    /// ref reaches it ([`GixStore::settle_detached`]). `None` when the tree
    /// did not change and `always` is false. Called by `store::publish`
    /// only.
    pub(in crate::store) fn write_detached(
        &self,
        parents: &[Oid],
        checked: &Checked,
        now: Timestamp,
        always: bool,
    ) -> Result<Option<Oid>, Error> {
        let (first, others) = match parents.split_first() {
            Some((first, others)) => (Some(first), others),
            None => (None, &[][..]),
        };
        let publish = if always {
            Publish::DetachedAlways
        } else {
            Publish::Detached
        };
        let done = self.settled_afresh(|| self.try_commit(first, others, checked, now, publish))?;
        match done {
            CasResult::Committed(id) => Ok(Some(id)),
            CasResult::Unchanged if !always => Ok(None),
            CasResult::Unchanged | CasResult::Retry => Err(git_err(
                "writing a commit",
                "a detached commit was not written",
            )),
        }
    }

    /// Once a ref holds a detached commit (or it is given up): checks that
    /// its objects survived any prune meanwhile, and forgets them.
    pub(in crate::store) fn settle_detached(&self, commit: &Oid) {
        let kept = {
            let mut pending = self.pending.borrow_mut();
            let at = pending.iter().position(|(c, _)| c == commit);
            at.map(|i| pending.remove(i).1)
        };
        if let Some(written) = kept {
            self.keep_loose(&written);
        }
    }

    pub(super) fn try_commit(
        &self,
        expected: Option<&Oid>,
        merged: &[Oid],
        checked: &Checked,
        now: Timestamp,
        publish: Publish,
    ) -> Result<CasResult, Error> {
        let (changes, message) = (checked.changes(), checked.message());
        self.check_not_checked_out()?;
        let repo = self.repo.borrow();
        let hash = repo.object_hash();
        let objects = LooseFirst::of(&repo);
        let mut buf = Vec::new();
        let (base_tree, mut parents) = match expected {
            Some(parent) => {
                let id = object_id(parent)?;
                let commit = objects
                    .find_commit(&id, &mut buf)
                    .map_err(|e| git_err("reading parent", e))?;
                (commit.tree(), vec![id])
            }
            None => (ObjectId::empty_tree(hash), Vec::new()),
        };
        // The plumbing editor: gix's checked one stats every entry of every
        // tree it writes (300 of them in a 256-shard todos tree) to prove the
        // objects exist. Ours exist by construction: the base tree's entries,
        // and blobs written just above; paths come from validated ids.
        let root = if base_tree.is_empty_tree() {
            gix::objs::Tree::empty()
        } else {
            objects
                .find_tree(&base_tree, &mut buf)
                .map_err(|e| git_err("reading the state tree", e))?
                .into()
        };
        let mut editor = gix::objs::tree::Editor::new(root, &objects, hash);
        let mut written = Vec::new();
        for change in changes {
            match change {
                FileChange::Upsert { path, bytes } => {
                    let blob = self.write_loose(gix::objs::Kind::Blob, bytes, &mut written)?;
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
            .write(|tree| {
                encoded(tree).and_then(|bytes| {
                    self.write_loose(gix::objs::Kind::Tree, &bytes, &mut written)
                        .map_err(std::io::Error::other)
                })
            })
            .map_err(|e| git_err("writing tree", e))?;
        for other in merged {
            parents.push(object_id(other)?);
        }
        let unchanged = tree == base_tree && expected.is_some() && merged.is_empty();
        if unchanged && publish != Publish::DetachedAlways {
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
        let bytes = encoded(&commit).map_err(|e| git_err("encoding commit", e))?;
        let id = oid(self.write_loose(gix::objs::Kind::Commit, &bytes, &mut written)?);
        drop(repo);
        self.written.append(&id.0, &encode_written(&written));
        if publish != Publish::Ref {
            let mut pending = self.pending.borrow_mut();
            if pending.len() >= 64 {
                pending.remove(0);
            }
            pending.push((id.clone(), written));
            return Ok(CasResult::Committed(id));
        }
        let reflog = format!("loopx: {}", message.subject);
        if self.move_ref(STATE_REF, expected, &id, &reflog, now)? {
            self.keep_loose(&written);
            Ok(CasResult::Committed(id))
        } else {
            // No ref will reach it: nothing to restore.
            self.written.append(&id.0, &[]);
            Ok(CasResult::Retry)
        }
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
    /// writing again what a prune deleted ([`GixStore::restore_pruned`]).
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

    /// Writes a loose object (again, if it exists: git freshens an object it
    /// would write the same way), synced if git config asks.
    fn write_loose(
        &self,
        kind: gix::objs::Kind,
        bytes: &[u8],
        written: &mut Vec<LooseObject>,
    ) -> Result<ObjectId, Error> {
        let repo = self.repo.borrow();
        // Straight to the loose objects: through gix's store, the first
        // write loads a pack index (see `LooseFirst`).
        let loose = LooseFirst::of(&repo);
        // gix's store applies `core.sharedRepository`'s permissions.
        let id = if self.shared_repository {
            persist(|| gix::objs::Write::write_buf(&repo.objects, kind, bytes))
        } else {
            persist(|| gix::objs::Write::write_buf(&loose.loose, kind, bytes))
        }
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

/// Objects looked up loose first, then through gix's store. gix's store
/// looks in packs first, and the first lookup that reaches a pack opens its
/// index, which gix-pack checks whole (every offset): about 8 ms a process
/// at 8 million objects, a million writebacks' history, against 7 ms for a
/// whole writeback at a thousand. What a write reads — its parent and the
/// trees on the paths it edits — the writes before it left loose, until
/// git's maintenance packs them.
struct LooseFirst<'r> {
    loose: gix::odb::loose::Store,
    all: &'r gix::OdbHandle,
}

impl<'r> LooseFirst<'r> {
    fn of(repo: &'r gix::Repository) -> Self {
        LooseFirst {
            loose: gix::odb::loose::Store::at(repo.objects.store_ref().path(), repo.object_hash()),
            all: &repo.objects,
        }
    }
}

impl gix::objs::Find for LooseFirst<'_> {
    fn try_find<'a>(
        &self,
        id: &gix::hash::oid,
        buffer: &'a mut Vec<u8>,
    ) -> gix::Result<Option<gix::objs::Data<'a>>> {
        // The loose store leaves the object's bytes, and only them, in
        // `buffer`; taking its kind ends the borrow, so a miss can go on.
        let kind = self.loose.try_find(id, buffer)?.map(|data| data.kind);
        match kind {
            Some(kind) => Ok(Some(gix::objs::Data {
                kind,
                object_hash: id.kind(),
                data: buffer,
            })),
            None => self.all.try_find(id, buffer),
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

/// The bytes of the state file `path` of `commit`, blob `id`. Its size is
/// read from the object's header first (a few bytes inflated, or a pack
/// entry's header): a file larger than a reader takes is refused by its
/// size, never inflated, so a small blob that inflates to a gigabyte costs
/// nothing.
fn blob_bytes(
    repo: &gix::Repository,
    commit: &Oid,
    path: &str,
    id: ObjectId,
) -> Result<Vec<u8>, Error> {
    let header = repo
        .find_header(id)
        .map_err(|e| git_err(&format!("reading {path}"), e))?;
    if header.size() > crate::codec::MAX_FILE_BYTES as u64 {
        return Err(Error::Corrupt {
            commit: commit.clone(),
            source: crate::codec::too_large(path, header.size()),
        });
    }
    let blob = repo
        .find_blob(id)
        .map_err(|e| git_err(&format!("reading {path}"), e))?;
    Ok(blob.data.clone())
}

/// An object's canonical bytes, as git hashes and stores them.
fn encoded(object: &impl gix::objs::WriteTo) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(object.size() as usize);
    object.write_to(&mut bytes)?;
    Ok(bytes)
}

/// Writes an object, trying again when the write fails: `git prune-packed`
/// (run by `git maintenance` or `git gc`) removes fan-out directories it
/// emptied, and one can vanish between gix creating it and moving the new
/// object into it. git retries the same way. Objects are content-addressed,
/// so writing one twice is harmless.
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

/// A file of the state tree, by path, with its bytes (`None`: removed).
pub type ChangedFile = (String, Option<Vec<u8>>);

/// A symlink or a submodule where a file belongs: refused with its path,
/// never skipped (a skipped todo is a lost one).
fn not_a_file(commit: &Oid, path: String, mode: EntryMode) -> Error {
    let what = if mode.is_link() {
        "a symbolic link"
    } else if mode.is_commit() {
        "a submodule (gitlink)"
    } else {
        "not a regular file"
    };
    Error::Corrupt {
        commit: commit.clone(),
        source: crate::codec::Error {
            path,
            message: format!("is {what}; the state holds only regular files"),
        },
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
