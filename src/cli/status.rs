//! `git loopx status`

use crate::cli::Output;
use crate::ops::status;
use crate::render;
use crate::session::Context;
use crate::Result;

/// Show the goal, what needs the human, who holds what, and recent evidence.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    args: status::StatusArgs,
    /// Every repository in your list (`git loopx repos`): what needs you
    /// across all of them first, then each one's goals; one that is
    /// missing or broken is shown as such. Needs no repository.
    #[arg(long, conflicts_with = "all")]
    pub all_repos: bool,
}

/// `status --all-repos`.
pub fn all_repos(now: crate::model::Timestamp) -> Result<Output> {
    let report = crate::ops::repos::status_all_repos(now)?;
    let text = render::text::status_all_repos(&report);
    Ok(Output::new(report, text))
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    if args.args.all {
        let report = status::status_all(ctx)?;
        let text = render::text::status_all(&report);
        return Ok(Output::styled(report, text));
    }
    let report = status::status(ctx)?;
    let text = render::text::status_styled(&report);
    Ok(Output::styled(report, text))
}
