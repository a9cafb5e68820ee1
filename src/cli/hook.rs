//! `git loopx hook …`: the hook programs that git and agent runtimes run
//! (`hooks install` puts the calls in place). They run before a [`Context`]
//! is opened, so each can decide what a failure to open one means: a hook
//! must not break the commit, push or session that runs it.
//!
//! [`Context`]: crate::ops::Context

use clap::Subcommand;

use crate::cli::{hook_git, Cli, Output};
use crate::Result;

/// Hook programs run by git and by agent runtimes; `git loopx hooks install`
/// puts them in place.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    runtime: Runtime,
}

#[derive(Debug, Subcommand)]
enum Runtime {
    /// git hooks: prepare-commit-msg, pre-push.
    Git(hook_git::Args),
}

pub fn run(cli: &Cli, args: &Args) -> Result<Output> {
    match &args.runtime {
        Runtime::Git(args) => hook_git::run(cli, args),
    }
}
