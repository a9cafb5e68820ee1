//! `git loopx status`

use crate::cli::Output;
use crate::ops::{status, Context};
use crate::render;
use crate::Result;

/// Show the goal, what needs the human, who holds what, and recent evidence.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(ctx: &Context, _args: &Args) -> Result<Output> {
    let report = status::status(ctx)?;
    Ok(Output::styled(
        &report,
        render::text::status_styled(&report),
    ))
}
