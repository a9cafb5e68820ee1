//! `git loopx should-run`

use crate::cli::Output;
use crate::ops::should_run;
use crate::render;
use crate::session::Context;
use crate::Result;

/// Decide whether this agent should run a turn now, and on which todo.
///
/// Read-only unless --turn and the decision is to run: then it is recorded
/// once as a turn receipt, and a second call with the same key replays it
/// (a skip records nothing, so polling writes no commits). Exits 0 whether
/// or not the turn should run (read `should_run`), 3 when the state is invalid.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    args: should_run::ShouldRunArgs,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let a = &args.args;
    let (report, failure) = should_run::should_run(ctx, &a.capabilities, a.turn.as_deref())?;
    let text = render::text::should_run(&report.decision);
    let mut out = Output::new(report, text);
    out.failure = failure;
    Ok(out)
}
