//! `git loopx writeback` and `git loopx history`

use crate::cli::Output;
use crate::ops::writeback;
use crate::render;
use crate::session::Context;
use crate::Result;

/// Record delivered work on a todo (you must hold it, or it must be unclaimed),
/// or on the goal itself after a planning turn.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    args: writeback::WritebackArgs,
}

pub fn run(ctx: &Context, a: &Args) -> Result<Output> {
    let r = writeback::writeback(ctx, &a.args)?;
    let verb = if r.replayed { "replayed" } else { "recorded" };
    let text = format!(
        "{verb} writeback {} on {}\n",
        r.run.id,
        r.run
            .todo
            .clone()
            .unwrap_or_else(|| format!("goal {}", r.run.goal))
    );
    Ok(Output::new(r, text))
}

pub use writeback::HistoryArgs;

pub fn history(ctx: &Context, a: &HistoryArgs) -> Result<Output> {
    let r = writeback::history(ctx, a)?;
    let mut text = render::text::runs(&r.runs);
    if r.more > 0 {
        text.push_str(&format!(
            "… and {} more; `-n {}` shows them\n",
            r.more,
            a.limit + r.more
        ));
    }
    Ok(Output::new(r, text))
}
