//! Refs: reading them, and moving them compare-and-swap through gix's ref
//! transactions, as `git update-ref <ref> <new> <old>` does (an exclusive
//! `<ref>.lock`, the old value checked under it, a reflog line, a rename).

use gix::bstr::ByteSlice;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;

use super::{git_err, object_id, oid, settled, GixStore};
use crate::model::Timestamp;
use crate::store::{Error, Oid, RefTrailers};

impl GixStore {
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

    /// Every ref named `prefix` or under `prefix/` (`git for-each-ref
    /// <prefix>`'s match), with the object it points at, sorted by name.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, Oid)>, Error> {
        Ok(self
            .refs_matching(prefix)?
            .into_iter()
            .map(|(name, id)| (name, oid(id)))
            .collect())
    }

    /// [`GixStore::refs_under`], with the committer time and trailers of
    /// the commit each ref points at (none for an object that is not a
    /// commit or cannot be read: such a ref is not one git-loopx wrote).
    pub fn refs_with_trailers(&self, prefix: &str) -> Result<Vec<RefTrailers>, Error> {
        let refs = self.refs_matching(prefix)?;
        let repo = self.repo.borrow();
        Ok(refs
            .into_iter()
            .map(|(name, id)| {
                let commit = repo.find_commit(id).ok();
                let decoded = commit.as_ref().and_then(|c| c.decode().ok());
                let time = decoded
                    .as_ref()
                    .and_then(|c| c.committer().ok())
                    .map_or(0, |who| who.seconds());
                let trailers = decoded
                    .as_ref()
                    .and_then(|c| c.message().body())
                    .map(|body| {
                        body.trailers()
                            .map(|t| (t.token.to_string(), t.value.to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                RefTrailers {
                    name,
                    commit: oid(id),
                    time,
                    trailers,
                }
            })
            .collect())
    }

    fn refs_matching(&self, prefix: &str) -> Result<Vec<(String, gix::ObjectId)>, Error> {
        let repo = self.repo.borrow();
        let refs = repo.references().map_err(|e| git_err("listing refs", e))?;
        let dir = &prefix[..prefix.rfind('/').map_or(0, |i| i + 1)];
        let under = format!("{}/", prefix.trim_end_matches('/'));
        let iter = refs
            .prefixed(dir)
            .map_err(|e| git_err(&format!("listing {dir}"), e))?;
        let mut out = Vec::new();
        for reference in iter {
            let mut reference = reference.map_err(|e| git_err(&format!("listing {dir}"), e))?;
            let name = reference.name().as_bstr().to_str_lossy().into_owned();
            if name != prefix.trim_end_matches('/') && !name.starts_with(&under) {
                continue;
            }
            let id = match reference.target().try_id() {
                Some(id) => id.to_owned(),
                None => match reference.peel_to_id() {
                    Ok(id) => id.detach(),
                    Err(_) => continue,
                },
            };
            out.push((name, id));
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
    /// Returns `false` when the ref held another value or its lock was taken.
    pub fn move_ref(
        &self,
        name: &str,
        expected: Option<&Oid>,
        target: &Oid,
        reflog: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let repo = self.repo.borrow();
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
        let fail = gix::lock::acquire::Fail::Immediately;
        let result = repo
            .refs
            .transaction()
            .prepare(Some(edit), fail, fail)
            .and_then(|tx| tx.commit(Some(committer)));
        match result {
            Ok(_) => {
                // gix syncs nothing: the ref and its log, as git config asks.
                let d = &self.durability;
                if d.refs {
                    let path = self.common_dir.join(name);
                    let log = self.common_dir.join("logs").join(name);
                    for file in [&path, &log] {
                        let _ = d.sync_path(file.exists(), file);
                    }
                    let _ = d.sync_parent(true, &path);
                }
                Ok(true)
            }
            Err(e) if e.is_conflict() || e.is_retryable() => Ok(false),
            Err(e) => Err(git_err(&format!("updating {name}"), e)),
        }
    }

    /// Deletes each ref that still points at the commit given, in one
    /// transaction (one that moved meanwhile is left alone, as are the rest).
    /// Returns whether they were deleted.
    pub fn delete_refs(&self, refs: &[(String, Oid)]) -> Result<bool, Error> {
        let mut edits = Vec::with_capacity(refs.len());
        for (name, old) in refs {
            edits.push(RefEdit {
                change: Change::Delete {
                    expected: PreviousValue::MustExistAndMatch(Target::Object(object_id(old)?)),
                    log: RefLog::AndReference,
                },
                name: name
                    .as_str()
                    .try_into()
                    .map_err(|e| git_err("ref name", e))?,
                deref: false,
            });
        }
        let repo = self.repo.borrow();
        let fail = gix::lock::acquire::Fail::Immediately;
        let result = repo
            .refs
            .transaction()
            .prepare(edits, fail, fail)
            .and_then(|tx| tx.commit(None));
        match result {
            Ok(_) => Ok(true),
            Err(e) if e.is_conflict() || e.is_retryable() => Ok(false),
            Err(e) => Err(git_err("deleting refs", e)),
        }
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
}
