//! `git loopx init`

use crate::cli::Output;
use crate::ops::{init, Context};
use crate::render;
use crate::Result;

/// Create the `loopx-state` branch with its first goal (idempotent).
///
/// When a remote already has `loopx-state` (after a fetch), its state is
/// adopted instead of creating a second root. Running it again with the
/// same objective changes nothing; another objective is refused
/// (`goal_exists`, exit 1) unless --force.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The objective of the first goal. On existing state whose goal has
    /// another objective, init refuses (exit 1) unless --force.
    // `--goal-text` is LoopX 2.1.1's spelling (`start-goal`,
    // `bootstrap-command-pack`), kept hidden for parity.
    #[arg(long = "objective", alias = "goal-text", value_name = "TEXT")]
    goal_text: Option<String>,
    /// Replace the existing goal's objective with --objective.
    #[arg(long, requires = "goal_text")]
    force: bool,
    /// The id of the first goal (default: main); on existing state, the
    /// goal whose objective --objective is compared with (default: the
    /// default goal).
    #[arg(long, value_name = "ID")]
    goal_id: Option<String>,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = init::init(
        ctx,
        &init::InitArgs {
            goal_text: args.goal_text.clone(),
            goal_id: args.goal_id.clone(),
            force: args.force,
        },
    )?;
    Ok(Output::new(&report, render::text::init(&report)))
}
