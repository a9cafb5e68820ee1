//! Revisions a person types (`--since`, `diff A..B`, `doctor --rev`) turned
//! into state commits.
//!
//! Anything git reads as a revision is accepted: a ref, `loopx-state~3`, a
//! reflog entry (`loopx-state@{2}`), a remote-tracking ref, a short id. A
//! commit that is not a state commit (no `loopx.yaml` at its root: a code
//! commit, say) is refused as such, not reported as corrupt state.

use crate::model::Refusal;
use crate::session::Context;
use crate::store::Oid;
use crate::Result;

/// The state commit `rev` names.
pub fn state_commit(ctx: &Context, rev: &str) -> Result<Oid> {
    if rev.is_empty() {
        return Err(Refusal::invalid_input("an empty revision").into());
    }
    let found = crate::git_cmd::resolve_commit(ctx.repo_dir(), rev).map_err(|e| {
        Refusal::new(
            crate::model::Code::GitFailed,
            format!("resolving `{rev}`: {e}"),
        )
    })?;
    let Some(id) = found else {
        return Err(Refusal::invalid_input(format!("`{rev}` is not a commit git knows"))
            .with_hint("any revision git takes: loopx-state~3, loopx-state@{1}, origin/loopx-state, a commit id")
            .into());
    };
    let oid = Oid(id);
    if ctx
        .store
        .read_file(&oid, crate::codec::META_PATH)?
        .is_none()
    {
        return Err(Refusal::invalid_input(format!(
            "`{rev}` ({}) is not a state commit: it has no {} at its root",
            oid.short(),
            crate::codec::META_PATH
        ))
        .with_hint("state commits are the commits of loopx-state (git log loopx-state)")
        .into());
    }
    Ok(oid)
}

/// `A..B` split into its ends (`A..` and `..B` leave one out); a single
/// revision is `(None, Some(rev))`.
pub fn split_range(spec: &str) -> (Option<&str>, Option<&str>) {
    match spec.split_once("..") {
        Some((a, b)) => (
            Some(a).filter(|a| !a.is_empty()),
            Some(b).filter(|b| !b.is_empty()),
        ),
        None => (None, Some(spec)),
    }
}

#[cfg(test)]
mod tests {
    use super::split_range;

    #[test]
    fn ranges_split_at_two_dots() {
        assert_eq!(split_range("a..b"), (Some("a"), Some("b")));
        assert_eq!(split_range("a.."), (Some("a"), None));
        assert_eq!(split_range("..b"), (None, Some("b")));
        assert_eq!(split_range("loopx-state~3"), (None, Some("loopx-state~3")));
    }
}
