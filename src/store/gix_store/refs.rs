//! Refs: reading them, moving them compare-and-swap as `git update-ref <ref>
//! <new> <old>` does (an exclusive `<ref>.lock`, the old value checked under
//! it, a reflog line, a rename; `packed-refs` read, never locked), and
//! deleting them through gix's ref transactions.

use gix::bstr::ByteSlice;
use gix::refs::transaction::{Change, PreviousValue, RefEdit, RefLog};
use gix::refs::Target;

use super::{git_err, object_id, oid, settled, Repository};
use crate::model::Timestamp;
use crate::store::{Error, Oid, RefTrailers};

impl Repository {
    /// The commit `refs/heads/loopx-state` points at, if any.
    pub fn tip(&self) -> Result<Option<Oid>, Error> {
        self.try_find_ref(crate::store::STATE_REF)
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

    /// Every ref named `prefix` or under `prefix/` (`git for-each-ref
    /// <prefix>`'s match), with the object it points at, sorted by name.
    pub fn refs_under(&self, prefix: &str) -> Result<Vec<(String, Oid)>, Error> {
        Ok(self
            .refs_matching(prefix)?
            .into_iter()
            .map(|(name, id)| (name, oid(id)))
            .collect())
    }

    /// [`Repository::refs_under`], with the committer time and trailers of
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
    ///
    /// As `git update-ref` does it, not as gix's ref transaction does: the
    /// new value is written as a loose ref under `<name>.lock`, the old one
    /// read from the loose ref or else from `packed-refs`, which is read but
    /// never locked. gix's transaction locks `packed-refs` for every update
    /// once the file exists (after any `git gc`), and a writer killed in that
    /// window left a `packed-refs.lock` that stopped every later write.
    pub fn move_ref(
        &self,
        name: &str,
        expected: Option<&Oid>,
        target: &Oid,
        reflog: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let full: gix::refs::FullName = name.try_into().map_err(|e| git_err("ref name", e))?;
        let new = object_id(target)?;
        let expected = expected.map(object_id).transpose()?;
        let repo = self.repo.borrow();
        let path = self.common_dir.join(full.as_bstr().to_str_lossy().as_ref());
        let lock = gix::lock::File::acquire_to_update_resource(
            &path,
            gix::lock::acquire::Fail::Immediately,
            Some(self.common_dir.clone()),
            repo.refs.shared_repository_permissions,
        );
        let mut lock = match lock {
            Ok(lock) => lock,
            Err(e) if e.is_retryable() => return Ok(false),
            Err(e) => return Err(git_err(&format!("locking {name}"), e)),
        };
        let current = self.ref_value(&repo, name, &path)?;
        if current != expected {
            return Ok(false);
        }
        let d = &self.durability;
        let written =
            std::io::Write::write_all(&mut lock, format!("{new}\n").as_bytes()).and_then(|()| {
                match d.refs {
                    true => lock.with_mut(|f| f.sync_all()),
                    false => Ok(()),
                }
            });
        written.map_err(|e| git_err(&format!("writing {name}"), e))?;
        let log = self.common_dir.join("logs").join(name);
        let signature = self.signature(now);
        let mut time_buf = gix::date::parse::TimeBuf::default();
        let line = ReflogLine {
            previous: current.unwrap_or_else(|| new.kind().null()),
            new,
            committer: signature.to_ref(&mut time_buf),
            message: reflog,
        };
        append_reflog(repo.refs.write_reflog, name, &log, &line)
            .map_err(|e| git_err(&format!("writing the reflog of {name}"), e))?;
        lock.commit()
            .map_err(|e| git_err(&format!("updating {name}"), e.error))?;
        // The ref and its log, as git config asks.
        if d.refs {
            for file in [&path, &log] {
                let _ = d.sync_path(file.exists(), file);
            }
            let _ = d.sync_parent(true, &path);
        }
        Ok(true)
    }

    /// The object `name` points at, read under its lock: the loose ref if
    /// there is one (it wins over `packed-refs`, as in git), else its line in
    /// `packed-refs` read afresh from disk (`git pack-refs` replaces that
    /// file whole and deletes a loose ref only under the ref's lock, which we
    /// hold).
    fn ref_value(
        &self,
        repo: &gix::Repository,
        name: &str,
        path: &std::path::Path,
    ) -> Result<Option<gix::ObjectId>, Error> {
        match std::fs::read(path) {
            Ok(bytes) => {
                let text = bytes.trim();
                if text.starts_with(b"ref:") {
                    return Err(git_err(
                        &format!("updating {name}"),
                        "it is a symbolic ref; git-loopx moves only direct refs",
                    ));
                }
                gix::ObjectId::from_hex(text)
                    .map(Some)
                    .map_err(|e| git_err(&format!("reading {name}"), e))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let packed = repo
                    .refs
                    .open_packed_buffer()
                    .map_err(|e| git_err("reading packed-refs", e))?;
                let Some(packed) = packed else {
                    return Ok(None);
                };
                let found = packed
                    .try_find(name)
                    .map_err(|e| git_err("reading packed-refs", e))?;
                Ok(found.map(|r| r.target()))
            }
            Err(e) => Err(git_err(&format!("reading {name}"), e)),
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

/// One line of a ref's log.
struct ReflogLine<'a> {
    previous: gix::ObjectId,
    new: gix::ObjectId,
    committer: gix::actor::SignatureRef<'a>,
    message: &'a str,
}

/// Appends `line` to the log at `log`, by git's rules (`core.logAllRefUpdates`,
/// which gix read into `mode`): always when the log exists; created for
/// branches, remote-tracking refs and notes, or for every ref under `always`;
/// never under `false`.
fn append_reflog(
    mode: gix::refs::store::WriteReflog,
    name: &str,
    log: &std::path::Path,
    line: &ReflogLine<'_>,
) -> std::io::Result<()> {
    use gix::refs::store::WriteReflog;
    use std::io::Write as _;
    let create = match mode {
        WriteReflog::Disable => return Ok(()),
        WriteReflog::Always => true,
        WriteReflog::Normal => ["refs/heads/", "refs/remotes/", "refs/notes/"]
            .iter()
            .any(|p| name.starts_with(p)),
    };
    if create {
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(create)
        .open(log);
    let mut file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut out = format!("{} {} ", line.previous, line.new).into_bytes();
    line.committer.trim().write_to(&mut out)?;
    // A log line is one line: git folds a message's newlines the same way.
    let message = line.message.replace('\n', " ");
    if !message.is_empty() {
        out.push(b'\t');
        out.extend_from_slice(message.as_bytes());
    }
    out.push(b'\n');
    file.write_all(&out)
}
