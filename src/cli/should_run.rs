//! `git loopx should-run`

use crate::cli::Output;
use crate::ops::{should_run, Context};
use crate::render;
use crate::Result;

/// Decide whether this agent should run a turn now, and on which todo.
///
/// Read-only unless --turn and the decision is to run: then it is recorded
/// once as a turn receipt, and a second call with the same key replays it
/// (a skip records nothing, so polling writes no commits). Exits 0 whether
/// or not the turn should run (read `should_run`), 3 when the state is invalid.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A capability this agent has now (repeatable; added to its registered ones).
    #[arg(long = "capability", value_name = "CAP")]
    capability: Vec<String>,
    /// Record a turn receipt under this key when the turn runs (idempotent:
    /// a retry replays it; a skip records none).
    #[arg(long, value_name = "KEY")]
    turn: Option<String>,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let (report, failure) = should_run::should_run(ctx, &args.capability, args.turn.as_deref())?;
    let mut out = Output::new(&report, render::text::should_run(&report.decision));
    out.failure = failure;
    Ok(out)
}
