//! Writing state commits: a checked change's blobs, the trees on their
//! paths and the commit, written as loose objects through gix, as `git
//! commit` writes them, then the state ref moved compare-and-swap (or no
//! ref moved: a detached commit, kept until a ref reaches it).
//!
//! A written object is unreachable until a ref names its commit, and a
//! prune beside the write may delete it: what a write wrote is recorded
//! and checked once a ref reaches it (see [`super::prune`]).

use std::path::{Path, PathBuf};

use gix::objs::tree::EntryKind;
use gix::objs::FindExt as _;
use gix::ObjectId;

use super::{git_err, object_id, oid, Repository};
use crate::model::Timestamp;
use crate::store::{CasResult, Checked, Error, FileChange, Oid, STATE_REF};

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

impl Repository {
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
        self.settled_afresh(|| self.try_commit(expected, others, checked, now, Publish::Ref))
            .map_err(|e| {
                let parents = expected.into_iter().chain(others);
                parents.fold(e, |e, parent| self.diagnosed(parent, e))
            })
    }

    /// Writes a commit of `checked`'s changes on the tree of `parents[0]`
    /// whose parents are all of `parents` (a root commit on the empty tree
    /// when there are none), and moves no ref; its objects are kept until a
    /// ref reaches it ([`Repository::settle_detached`]). `None` when the tree
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

    fn try_commit(
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
        self.record_written(&id, &written);
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
            self.record_written(&id, &[]);
            Ok(CasResult::Retry)
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

    pub(super) fn sync_loose(&self, path: &Path) {
        let d = &self.durability;
        let _ = d.sync_path(d.loose_objects, path);
        let _ = d.sync_parent(d.loose_objects, path);
    }
}

/// Objects looked up loose first, then through gix's store. gix's store
/// looks in packs first, and the first lookup that reaches a pack opens its
/// index, which gix-pack checks whole (every offset): about 8 ms a process
/// at 8 million objects, a million writebacks' history, against 7 ms for a
/// whole writeback at a thousand. What a write reads — its parent and the
/// trees on the paths it edits — the writes before it left loose, until
/// git's maintenance packs them.
pub(super) struct LooseFirst<'r> {
    pub(super) loose: gix::odb::loose::Store,
    all: &'r gix::OdbHandle,
}

impl<'r> LooseFirst<'r> {
    pub(super) fn of(repo: &'r gix::Repository) -> Self {
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

pub(super) fn loose_path(repo: &gix::Repository, id: &ObjectId) -> PathBuf {
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
/// (run by `git maintenance` or `git gc`) removes fan-out directories it
/// emptied, and one can vanish between gix creating it and moving the new
/// object into it. git retries the same way. Objects are content-addressed,
/// so writing one twice is harmless.
pub(super) fn persist<T, E: std::fmt::Display>(write: impl Fn() -> Result<T, E>) -> Result<T, E> {
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
