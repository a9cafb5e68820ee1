//! `git loopx init`

use crate::cli::Output;
use crate::ops::{init, Context};
use crate::render;
use crate::Result;

/// Create the `loopx-state` branch with its first goal (idempotent).
///
/// When a remote already has `loopx-state` (after a fetch), its state is
/// adopted instead of creating a second root. Running it again changes nothing.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The objective of the first goal.
    #[arg(long, value_name = "TEXT")]
    goal_text: Option<String>,
    /// The id of the first goal.
    #[arg(long, value_name = "ID", default_value = init::DEFAULT_GOAL)]
    goal_id: String,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = init::init(
        ctx,
        &init::InitArgs {
            goal_text: args.goal_text.clone(),
            goal_id: Some(args.goal_id.clone()),
        },
    )?;
    Ok(Output::new(&report, render::text::init(&report)))
}
