//! The repository's git config as git-loopx reads it: single values
//! (`loopx.agent`, say), and who a state commit is by.

use gix::bstr::ByteSlice;

use super::Repository;
use crate::model::Timestamp;

/// Name and email used when git config has no identity.
const FALLBACK_NAME: &str = "git-loopx";
const FALLBACK_EMAIL: &str = "git-loopx@localhost";

impl Repository {
    /// A string from git config (`loopx.agent`, say).
    pub fn config_string(&self, key: &str) -> Option<String> {
        let repo = self.repo.borrow();
        repo.config_snapshot()
            .string(key)
            .map(|v| v.to_str_lossy().into_owned())
    }

    /// The committer's name and email as git resolves them (environment,
    /// then `committer.*`, then `user.*`). Read directly rather than through
    /// `Repository::committer`, which also works out the local time zone by
    /// scanning the system's zoneinfo tree: a third of a small write's time.
    fn identity(&self) -> (String, String) {
        let repo = self.repo.borrow();
        let config = repo.config_snapshot();
        let pick = |var: &str, keys: [&str; 2], fallback: &str| {
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| {
                    keys.iter()
                        .find_map(|k| config.string(*k))
                        .map(|v| v.to_str_lossy().into_owned())
                })
                .unwrap_or_else(|| fallback.to_owned())
        };
        (
            pick(
                "GIT_COMMITTER_NAME",
                ["committer.name", "user.name"],
                FALLBACK_NAME,
            ),
            pick(
                "GIT_COMMITTER_EMAIL",
                ["committer.email", "user.email"],
                FALLBACK_EMAIL,
            ),
        )
    }

    /// The person's identity as git config gives it (`user.name` and
    /// `user.email`, from any of git's config files), if both are set.
    pub fn config_identity(&self) -> Option<(String, String)> {
        let repo = self.repo.borrow();
        let config = repo.config_snapshot();
        let get = |key: &str| {
            config
                .string(key)
                .map(|v| v.to_str_lossy().trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        Some((get("user.name")?, get("user.email")?))
    }

    /// Who the state commits of this process are by, as git would name the
    /// committer: `name <email>` (`GIT_COMMITTER_*`, else `committer.*` or
    /// `user.*` config).
    pub fn committer(&self) -> String {
        let (name, email) = self.identity();
        format!("{name} <{email}>")
    }

    /// The signature of a new state commit: git's identity, and `now` unless
    /// `GIT_COMMITTER_DATE` pins the time (as it does for plain git).
    pub(super) fn signature(&self, now: Timestamp) -> gix::actor::Signature {
        let repo = self.repo.borrow();
        let (name, email) = self.identity();
        let pinned = std::env::var_os("GIT_COMMITTER_DATE")
            .and_then(|_| repo.committer())
            .and_then(|sig| sig.ok())
            .and_then(|sig| sig.time().ok());
        gix::actor::Signature {
            name: name.into(),
            email: email.into(),
            time: pinned.unwrap_or_else(|| gix::date::Time::new(now.unix(), 0)),
        }
    }
}
