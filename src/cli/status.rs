//! `git loopx status`

use crate::cli::Output;
use crate::ops::{status, Context};
use crate::render;
use crate::Result;

/// Show the goal, what needs the human, who holds what, and recent evidence.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    args: status::StatusArgs,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    if args.args.all {
        let report = status::status_all(ctx)?;
        return Ok(Output::styled(&report, render::text::status_all(&report)));
    }
    let report = status::status(ctx)?;
    Ok(Output::styled(
        &report,
        render::text::status_styled(&report),
    ))
}
