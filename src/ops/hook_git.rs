//! The git hook programs (`git loopx hook git prepare-commit-msg|pre-push`),
//! run by the shims `hooks install` puts in the repository's hooks.
//!
//! Neither may get in the user's way: `prepare-commit-msg` never makes a
//! commit fail, and `pre-push` only blocks a push when the user asked for
//! that (`loopx.prePushStrict`). Each returns what it did, or why it did
//! nothing, for the CLI to say on stderr.

use std::path::Path;

use serde::Serialize;

use crate::git_cmd::hooks as git;
use crate::model::Code;
use crate::ops::sync;
use crate::session::Context;
use crate::{Error, Result};

/// The trailer a code commit carries to name the todo it works on.
pub const TODO_TRAILER: &str = "Loopx-Todo";

/// What a hook program did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum Outcome {
    /// `prepare-commit-msg` added `Loopx-Todo: <todo>`.
    Trailer { todo: String },
    /// `pre-push` synced loopx-state.
    Synced { remote: String },
    /// Nothing to do; `quiet` when that is the ordinary case (no agent, no
    /// claim, a merge), else the reason is worth a line on stderr.
    Skipped { reason: String, quiet: bool },
}

fn quiet(reason: impl Into<String>) -> Outcome {
    Outcome::Skipped {
        reason: reason.into(),
        quiet: true,
    }
}

fn loud(reason: impl Into<String>) -> Outcome {
    Outcome::Skipped {
        reason: reason.into(),
        quiet: false,
    }
}

/// `prepare-commit-msg <file> [source] [sha]`: adds `Loopx-Todo: <id>` to a
/// code commit made while the acting agent holds exactly one live claim.
/// Not on a merge (source `merge`, or `MERGE_HEAD` present) or a squash,
/// not when the message already has a `Loopx-Todo` trailer, and not to an
/// empty message (the editor is about to open: a trailer would keep an
/// emptied message from aborting the commit). Every failure is
/// an [`Outcome::Skipped`], never an error.
pub fn prepare_commit_msg(ctx: &Context, file: &Path, source: Option<&str>) -> Outcome {
    match source {
        Some("merge") => return quiet("a merge commit"),
        Some("squash") => return quiet("a squash message"),
        _ => {}
    }
    let dir = ctx.repo_dir();
    match git::git_path(dir, "MERGE_HEAD") {
        Ok(merge_head) if merge_head.exists() => return quiet("a merge commit (MERGE_HEAD)"),
        Ok(_) => {}
        Err(e) => return loud(e),
    }
    let Some(agent) = ctx.agent() else {
        return quiet("no acting agent (--agent, LOOPX_AGENT, git config loopx.agent)");
    };
    let claims = match ctx.load() {
        Ok((_, state)) => live_claims(&state, agent, ctx.now),
        Err(Error::Store(crate::store::Error::Missing)) => return quiet("no loopx state"),
        Err(e) => return loud(format!("cannot read loopx state: {e}")),
    };
    let todo = match claims.as_slice() {
        [] => return quiet(format!("{agent} holds no claim")),
        [one] => one.clone(),
        many => {
            return loud(format!(
                "{agent} holds {} claims ({}): no {TODO_TRAILER} trailer, as this commit could be for any of them",
                many.len(),
                many.join(", ")
            ))
        }
    };
    let comment = ctx
        .store
        .config_string("core.commentChar")
        .filter(|c| c.len() == 1)
        .unwrap_or_else(|| "#".to_owned());
    match std::fs::read_to_string(file) {
        Ok(text) if is_empty_message(&text, &comment) => {
            return loud(format!(
                "the message is empty (an editor opens next): no {TODO_TRAILER} trailer, so an empty message still aborts the commit; add `{TODO_TRAILER}: {todo}` yourself"
            ))
        }
        Ok(_) => {}
        Err(e) => return loud(format!("cannot read {}: {e}", file.display())),
    }
    match git::trailer_values(dir, file, TODO_TRAILER) {
        Ok(values) if !values.is_empty() => {
            return quiet(format!(
                "the message already has {TODO_TRAILER}: {}",
                values.join(", ")
            ))
        }
        Ok(_) => {}
        Err(e) => return loud(e),
    }
    match git::add_trailer(dir, file, TODO_TRAILER, &todo) {
        Ok(()) => Outcome::Trailer { todo },
        Err(e) => loud(e),
    }
}

/// Whether a commit message has nothing but blank and comment lines (up
/// to the scissors line of `commit -v`, below which git ignores everything).
fn is_empty_message(text: &str, comment: &str) -> bool {
    text.lines()
        .take_while(|l| !(l.starts_with(comment) && l.contains(" >8 ")))
        .all(|l| l.trim().is_empty() || l.starts_with(comment))
}

/// The todos `agent` holds a live claim on, in every goal.
fn live_claims(
    state: &crate::model::State,
    agent: &str,
    now: crate::model::Timestamp,
) -> Vec<String> {
    let mut ids: Vec<String> = state
        .goals
        .values()
        .flat_map(|gs| gs.todos.all_facts())
        .filter(|f| !f.status.is_terminal() && f.live_holder(now) == Some(agent))
        .map(|f| f.id.to_owned())
        .collect();
    ids.sort();
    ids
}

/// `pre-push <remote> <url>`: syncs loopx-state with `remote` when
/// `git config loopx.prePushSync` is true (off by default). Trouble is an
/// [`Outcome::Skipped`] unless `loopx.prePushStrict` is true, when it is an
/// error and the push is blocked. sync pushes with `--no-verify`, so this
/// hook does not run again for it.
pub fn pre_push(ctx: &Context, remote: &str) -> Result<Outcome> {
    let on = |key: &str| {
        ctx.store
            .config_string(key)
            .is_some_and(|v| git::is_true(&v))
    };
    if !on("loopx.prePushSync") {
        return Ok(quiet("loopx.prePushSync is off"));
    }
    let strict = on("loopx.prePushStrict");
    match sync::sync(ctx, &sync::SyncOptions::remote(Some(remote))) {
        Ok(report) => Ok(Outcome::Synced {
            remote: report.remote,
        }),
        Err(Error::Store(crate::store::Error::Missing)) => Ok(quiet("no loopx state")),
        Err(e) if strict => Err(crate::model::Refusal::new(
            if e.code() == Code::InvalidInput {
                Code::GitFailed
            } else {
                e.code()
            },
            format!("loopx sync with {remote} before the push failed: {e}"),
        )
        .with_hint(
            "fix it and push again, or `git config loopx.prePushStrict false` to push anyway",
        )
        .into()),
        Err(e) => Ok(loud(format!(
            "loopx sync with {remote} failed, pushing anyway: {e}"
        ))),
    }
}
