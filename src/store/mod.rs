//! The seam between the control plane and git.
//!
//! [`GixStore`] is all the rest of the crate knows of a repository: its
//! [`Repository`] (the tip of `refs/heads/loopx-state`, the files of a
//! commit, a compare-and-swap commit, refs and ancestry), this host's
//! parsed-state [`StateCache`] and its [`HostRecords`]; [`gix_store`] is
//! the only module that imports `gix`.
//! [`transaction`] builds the load → mutate → check → CAS → retry loop on
//! top, and every commit goes through its [`Checked`].

pub mod cache;
pub mod checked;
pub mod durable;
pub mod gix_store;
pub mod health;
mod journal;
mod message;
pub mod publish;
mod records;
pub mod special;
pub mod transaction;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

pub use cache::StateCache;
pub use checked::{Checked, Policy};
pub use gix_store::{Due, GixStore, Repository};
pub use message::{trailer, Message};
pub use publish::{Detached, Draft};
pub use records::HostRecords;
pub use transaction::{transact, Committed, Write};

use crate::model::Timestamp;

/// The branch all state lives on.
pub const STATE_REF: &str = "refs/heads/loopx-state";
/// Where `review --ack` records the last reviewed tip.
pub const REVIEWED_REF: &str = "refs/loopx/reviewed";

/// A git object id, as lowercase hex.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Oid(pub String);

impl Oid {
    pub fn short(&self) -> &str {
        &self.0[..self.0.len().min(10)]
    }
}

impl fmt::Display for Oid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The files of one state commit (path → content).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub commit: Option<Oid>,
    pub files: BTreeMap<String, Vec<u8>>,
}

/// One change to a file of the state tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileChange {
    Upsert { path: String, bytes: Vec<u8> },
    Remove { path: String },
}

/// How a compare-and-swap commit ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CasResult {
    /// The ref now points at this new commit.
    Committed(Oid),
    /// The changes left the tree as it was: no commit was made.
    Unchanged,
    /// Someone moved the ref first (or holds its lock): reload and decide again.
    Retry,
}

/// A commit as `log` shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CommitInfo {
    pub id: Oid,
    pub parents: Vec<Oid>,
    pub time: Timestamp,
    pub author: String,
    pub message: String,
}

/// A ref with the trailers of the commit it points at
/// ([`Repository::refs_with_trailers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefTrailers {
    pub name: String,
    pub commit: Oid,
    /// The commit's committer time, in seconds since the epoch.
    pub time: i64,
    /// `(key, value)` in the order written, values unfolded.
    pub trailers: Vec<(String, String)>,
}

/// Repository and state-branch problems. Each names what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not a git repository (or any parent up to the filesystem root): {}", .0.display())]
    NotARepo(PathBuf),
    /// git's ownership rule (`safe.directory`): `path`, a part of the
    /// repository at `repo`, is not the current user's, and no protected
    /// `safe.directory` allows the repository (see `gix_store::owner`).
    #[error(
        "detected dubious ownership in repository at {}: {} is owned by {}, but the current user is uid {user}",
        .repo.display(),
        .path.display(),
        .owner.map_or("an owner that cannot be read".to_owned(), |uid| format!("uid {uid}"))
    )]
    DubiousOwnership {
        repo: PathBuf,
        path: PathBuf,
        owner: Option<u32>,
        user: u32,
    },
    #[error("this repository stores refs in reftable, which git-loopx cannot update safely yet")]
    UnsupportedRefStorage,
    #[error(
        "this repository uses {0} object ids, which git-loopx does not support yet (only sha1)"
    )]
    UnsupportedObjectFormat(String),
    #[error("`loopx-state` is checked out in the worktree at {}", .0.display())]
    CheckedOut(PathBuf),
    #[error("{lock} has been held for {age_seconds}s, longer than the retry budget")]
    Locked { lock: PathBuf, age_seconds: u64 },
    #[error("gave up after {attempts} attempts: other writers kept moving {STATE_REF}")]
    Contended { attempts: u32 },
    #[error("no loopx state in this repository")]
    Missing,
    #[error("corrupt state at commit {commit}: {source}")]
    Corrupt {
        commit: Oid,
        #[source]
        source: crate::codec::Error,
    },
    /// An object of the state is not in the object store (see
    /// `Repository::missing_object`).
    #[error("{at}: its {kind} {id}{} is missing from the object store", .path.as_ref().map(|p| format!(" ({p})")).unwrap_or_default())]
    ObjectMissing {
        /// `refs/heads/loopx-state at <commit>`, or the commit that was read.
        at: String,
        kind: &'static str,
        id: Oid,
        path: Option<String>,
    },
    /// Where git reads a file to open the repository there is a named
    /// pipe, a socket or a device (see `store::special`).
    #[error("{} is {what}, where git expects a file: the repository is not opened, as reading it could wait forever", .path.display())]
    SpecialFile {
        repo: PathBuf,
        path: PathBuf,
        what: &'static str,
    },
    #[error("git: {0}")]
    Git(String),
    #[error("refused to write {}: a reader would refuse it ({})", .0.path, .0.message)]
    Unwritable(crate::codec::Error),
    #[error("{place} would hold what looks like a credential ({what}); nothing was written")]
    Leak { place: String, what: String },
}

impl Error {
    pub fn code(&self) -> crate::model::Code {
        use crate::model::Code;
        match self {
            Error::NotARepo(_) => Code::NotARepo,
            Error::DubiousOwnership { .. } => Code::DubiousOwnership,
            Error::UnsupportedRefStorage => Code::UnsupportedRefStorage,
            Error::UnsupportedObjectFormat(_) => Code::UnsupportedObjectFormat,
            Error::CheckedOut(_) => Code::StateCheckedOut,
            Error::Locked { .. } | Error::Contended { .. } => Code::StateLocked,
            Error::Missing => Code::StateMissing,
            Error::Corrupt { .. } | Error::ObjectMissing { .. } => Code::StateInvalid,
            Error::Git(_) | Error::SpecialFile { .. } => Code::GitFailed,
            Error::Unwritable(_) => Code::InvalidInput,
            Error::Leak { .. } => Code::LeakDetected,
        }
    }

    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Error::NotARepo(_) => "run inside a git repository, or pass -C <path>".into(),
            Error::DubiousOwnership { repo, .. } => format!(
                "if you trust this repository, add an exception for it, as for git: \
                 git config --global --add safe.directory {}",
                shell_word(&repo.to_string_lossy())
            ),
            Error::UnsupportedRefStorage => {
                "use a repository with the files ref backend (`git init --ref-format=files`)".into()
            }
            Error::UnsupportedObjectFormat(_) => {
                "keep the state in a SHA-1 repository (`git init --object-format=sha1`)".into()
            }
            Error::CheckedOut(_) => {
                "switch that worktree to another branch: git-loopx never edits a checked-out branch".into()
            }
            Error::Locked { lock, .. } => format!(
                "if no git or git-loopx process is running, remove {} by hand",
                lock.display()
            ),
            Error::Contended { .. } => "try again; if it persists, look for a runaway writer".into(),
            Error::Missing => "run `git loopx init --objective \"…\"`".into(),
            Error::Corrupt { commit, source } => format!(
                "fix {} in a new commit on loopx-state (see `git show {}:{}`); nothing was rewritten",
                source.path,
                commit.short(),
                source.path
            ),
            Error::ObjectMissing { .. } => "objects are deleted this way by a `git prune --expire=now` or `git gc \
                --prune=now` beside a writer, once this host's journal of recent writes \
                (`.git/loopx/written/`) no longer holds them; `git loopx doctor --repair` moves \
                loopx-state back to its newest intact commit and lists the writes it cannot recover"
                .into(),
            Error::SpecialFile { repo, .. } => format!(
                "put back the file git keeps there, or take the repository off your list \
                 (`git loopx repos remove {}`)",
                shell_word(&repo.to_string_lossy())
            ),
            Error::Git(_) => return None,
            Error::Unwritable(_) => {
                "nothing was written; shorten the text (long output belongs in a commit named by --artifact)".into()
            }
            Error::Leak { .. } => {
                "leave the credential out (refer to where it is kept instead); if it was ever shared, rotate it".into()
            }
        })
    }
}

/// `word` as a shell reads it, quoted only when it must be: git's
/// `sq_quote_buf_pretty`, which writes the `safe.directory` line git prints.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "+,-./:=@_^".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    let mut quoted = String::from("'");
    for c in word.chars() {
        match c {
            '\'' => quoted.push_str("'\\''"),
            '!' => quoted.push_str("'\\!'"),
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_path_is_quoted_for_the_shell_only_when_it_must_be() {
        use super::shell_word;
        assert_eq!(shell_word("/srv/repo-1.git"), "/srv/repo-1.git");
        assert_eq!(shell_word("/srv/my repo"), "'/srv/my repo'");
        assert_eq!(shell_word("/srv/it's!"), "'/srv/it'\\''s'\\!''");
        assert_eq!(shell_word(""), "''");
    }
}
