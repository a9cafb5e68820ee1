//! `git loopx prompt`

use crate::cli::{enum_arg, Output};
use crate::ops::prompt::{self, Runtime};
use crate::ops::Context;
use crate::Result;

/// Print the task body a host loop gives its agent this turn: the goal, the
/// selected todo, the exact `git loopx` commands to run, and the rules.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// claude-code, codex or generic.
    #[arg(long, value_parser = enum_arg::<Runtime>, default_value = "generic")]
    runtime: Runtime,
    /// A capability this agent has now (repeatable).
    #[arg(long = "capability", value_name = "CAP")]
    capability: Vec<String>,
    /// The turn key to use in the commands (default: agent and time).
    #[arg(long, value_name = "KEY")]
    turn: Option<String>,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let r = prompt::prompt(ctx, args.runtime, &args.capability, args.turn.as_deref())?;
    let text = r.prompt.clone();
    Ok(Output::new(&r, text))
}
