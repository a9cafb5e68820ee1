//! An in-memory [`Store`] for unit tests of the layers above the git seam.
//! Commits are file maps; the "ref" is a mutex-protected tip, so the CAS
//! semantics match the git store's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::model::Timestamp;
use crate::store::{CasResult, Checked, CommitInfo, Error, FileChange, Oid, Snapshot, Store};

#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

/// A stored commit: its parent, its files, and what `log` shows of it.
type StoredCommit = (Option<Oid>, BTreeMap<String, Vec<u8>>, CommitInfo);

#[derive(Default)]
struct Inner {
    tip: Option<Oid>,
    commits: BTreeMap<Oid, StoredCommit>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store for MemoryStore {
    fn tip(&self) -> Result<Option<Oid>, Error> {
        Ok(self.lock().tip.clone())
    }

    fn read(&self, commit: &Oid) -> Result<Snapshot, Error> {
        let inner = self.lock();
        let (_, files, _) = inner
            .commits
            .get(commit)
            .ok_or_else(|| Error::Git(format!("no commit {commit}")))?;
        Ok(Snapshot {
            commit: Some(commit.clone()),
            files: files.clone(),
        })
    }

    fn commit(
        &self,
        expected: Option<&Oid>,
        merged: Option<&Oid>,
        checked: &Checked,
        now: Timestamp,
    ) -> Result<CasResult, Error> {
        let (changes, message) = (checked.changes(), checked.message());
        let mut inner = self.lock();
        if inner.tip.as_ref() != expected {
            return Ok(CasResult::Retry);
        }
        let mut files = match expected {
            Some(c) => inner.commits[c].1.clone(),
            None => BTreeMap::new(),
        };
        let before = files.clone();
        for change in changes {
            match change {
                FileChange::Upsert { path, bytes } => {
                    files.insert(path.clone(), bytes.clone());
                }
                FileChange::Remove { path } => {
                    files.remove(path);
                }
            }
        }
        if expected.is_some() && files == before && merged.is_none() {
            return Ok(CasResult::Unchanged);
        }
        let id = Oid(format!("{:040x}", inner.commits.len() + 1));
        let info = CommitInfo {
            id: id.clone(),
            parents: expected
                .cloned()
                .into_iter()
                .chain(merged.cloned())
                .collect(),
            time: now,
            author: "memory".into(),
            message: message.render(),
        };
        inner
            .commits
            .insert(id.clone(), (expected.cloned(), files, info));
        inner.tip = Some(id.clone());
        Ok(CasResult::Committed(id))
    }

    fn lock_age(&self) -> Option<(PathBuf, u64)> {
        None
    }

    fn first_parent_log(&self, from: &Oid, limit: usize) -> Result<Vec<CommitInfo>, Error> {
        let inner = self.lock();
        let mut out = Vec::new();
        let mut next = Some(from.clone());
        while let Some(id) = next {
            if out.len() >= limit {
                break;
            }
            let (parent, _, info) = &inner.commits[&id];
            out.push(info.clone());
            next = parent.clone();
        }
        Ok(out)
    }
}
