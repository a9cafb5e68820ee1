//! Reading state commits: the files of a commit's tree (all of them, one,
//! or a directory's), the files two commits' trees differ in, and
//! first-parent history. Each read is tried again when a `git gc` beside it
//! moves objects (`settled_afresh`), and a git error made precise when an
//! object is gone (`diagnosed`).

use std::collections::BTreeMap;

use gix::bstr::ByteSlice;
use gix::objs::tree::EntryMode;
use gix::ObjectId;

use super::{git_err, object_id, oid, Repository};
use crate::model::Timestamp;
use crate::store::{CommitInfo, Error, Oid, Snapshot, STATE_REF};

impl Repository {
    /// All files of the tree of `commit`.
    pub fn read(&self, commit: &Oid) -> Result<Snapshot, Error> {
        self.settled_afresh(|| self.try_read(commit))
            .map_err(|e| self.diagnosed(commit, e))
    }

    /// The files whose bytes differ between the trees of `from` and `to`
    /// (`None`: not in `to`), reading only the subtrees that differ.
    pub fn changed_files(&self, from: &Oid, to: &Oid) -> Result<Vec<ChangedFile>, Error> {
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

    fn try_read_file(&self, commit: &Oid, path: &str) -> Result<Option<Vec<u8>>, Error> {
        let Some((mode, id)) = self.entry_at(commit, path)? else {
            return Ok(None);
        };
        if !mode.is_blob() {
            return Ok(None);
        }
        let repo = self.repo.borrow();
        blob_bytes(&repo, commit, path, id).map(Some)
    }

    fn try_read_dir(
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
    fn try_changed_files(&self, from: &Oid, to: &Oid) -> Result<Vec<ChangedFile>, Error> {
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

    fn history(
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
