//! `git loopx log`

use crate::cli::Output;
use crate::ops::{log, Context};
use crate::render;
use crate::Result;

/// Show the state branch's commits, newest first: the audit log.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show at most N commits.
    #[arg(
        short = 'n',
        long = "max-count",
        value_name = "N",
        default_value_t = 20
    )]
    limit: usize,
    /// Only commits that touched this todo (an id or a prefix, with or
    /// without `todo_`); also lists the code commits on the repository's
    /// branches that carry its `Loopx-Todo:` trailer, and where each is.
    #[arg(long, value_name = "ID")]
    todo: Option<String>,
    /// Only commits made by this agent.
    #[arg(long = "by", value_name = "AGENT")]
    by: Option<String>,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = log::log(
        ctx,
        &log::LogArgs {
            limit: args.limit,
            todo: args.todo.clone(),
            agent: args.by.clone(),
        },
    )?;
    Ok(Output::new(&report, render::text::log(&report)))
}
