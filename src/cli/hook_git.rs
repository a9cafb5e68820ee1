//! `git loopx hook git prepare-commit-msg|pre-push`: the programs the git
//! hook shims call (dispatched from [`crate::cli::hook`], before a
//! [`Context`] is opened). They say on stderr why they did nothing, and never
//! fail a commit; a push fails only under `loopx.prePushStrict`.

use std::path::PathBuf;

use clap::Subcommand;

use crate::cli::GlobalArgs;
use crate::ops::hook_git::{self, Outcome};
use crate::render;
use crate::session::Context;

/// The git hook programs.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    hook: GitHook,
}

#[derive(Debug, Subcommand)]
enum GitHook {
    /// Add `Loopx-Todo: <id>` to a code commit made while the acting agent
    /// holds exactly one claim (not to a merge or squash, not twice). Never
    /// makes the commit fail.
    PrepareCommitMsg {
        /// The file holding the commit message (git passes it).
        file: PathBuf,
        /// Where the message came from: message, template, merge, squash,
        /// commit.
        source: Option<String>,
        /// The commit, for source `commit`.
        sha: Option<String>,
    },
    /// Sync loopx-state before a push when `git config loopx.prePushSync
    /// true` (off by default). Trouble is a warning, unless `git config
    /// loopx.prePushStrict true`, when it blocks the push.
    PrePush {
        /// The remote pushed to (git passes it).
        remote: String,
        /// Its URL (git passes it).
        url: Option<String>,
    },
}

fn say(what: &str) {
    eprintln!("git-loopx: {}", render::terminal_safe(what));
}

/// Runs a git hook program and returns its exit status: 0, but for a
/// strict pre-push whose sync failed.
pub fn main(global: &GlobalArgs, args: &Args) -> i32 {
    let outcome = match &args.hook {
        GitHook::PrepareCommitMsg { file, source, .. } => match open(global) {
            Err(e) => Outcome::Skipped {
                reason: format!("{e}; no Loopx-Todo trailer added"),
                quiet: false,
            },
            Ok(ctx) => {
                let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
                hook_git::prepare_commit_msg(&ctx, &file, source.as_deref())
            }
        },
        GitHook::PrePush { remote, .. } => match open(global) {
            // Without a repository we could open, loopx.prePushStrict cannot
            // be read either: the push goes ahead.
            Err(e) => Outcome::Skipped {
                reason: format!("{e}; no loopx sync before the push"),
                quiet: false,
            },
            Ok(ctx) => match hook_git::pre_push(&ctx, remote) {
                Ok(outcome) => outcome,
                Err(e) => {
                    eprint!("{}", render::terminal_safe(&render::error_text(&e)));
                    return e.exit_code();
                }
            },
        },
    };
    match &outcome {
        Outcome::Trailer { todo } => say(&format!("added Loopx-Todo: {todo}")),
        Outcome::Synced { remote } => say(&format!("synced loopx-state with {remote}")),
        Outcome::Skipped {
            reason,
            quiet: false,
        } => say(reason),
        Outcome::Skipped { quiet: true, .. } => {}
    }
    0
}

fn open(global: &GlobalArgs) -> crate::Result<Context> {
    let now = super::now()?;
    let dir = match &global.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| {
            crate::Error::invalid_input(format!("cannot read the current directory: {e}"))
        })?,
    };
    Context::open(&dir, now, global.agent.clone(), global.goal.clone())
}
