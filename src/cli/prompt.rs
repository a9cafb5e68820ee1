//! `git loopx prompt`

use crate::cli::Output;
use crate::ops::prompt::{self, Surface};
use crate::session::Context;
use crate::Result;

/// Print the task body a host loop gives its agent this turn: the goal, the
/// selected todo, the exact `git loopx` commands to run, and the rules.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    args: prompt::PromptArgs,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let a = &args.args;
    let runtime = a.runtime.unwrap_or_default();
    let r = prompt::prompt(
        ctx,
        (runtime, Surface::Cli),
        &a.capabilities,
        a.turn.as_deref(),
    )?;
    let text = r.prompt.clone();
    Ok(Output::new(r, text))
}
