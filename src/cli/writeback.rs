//! `git loopx writeback` and `git loopx history`

use crate::cli::Output;
use crate::model::RunKind;
use crate::ops::args::enum_arg;
use crate::ops::{writeback, Context};
use crate::render;
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
    Ok(Output::new(
        &r,
        format!(
            "{verb} writeback {} on {}\n",
            r.run.id,
            r.run
                .todo
                .clone()
                .unwrap_or_else(|| format!("goal {}", r.run.goal))
        ),
    ))
}

/// Show run records (writebacks, spends, voids, turns), newest first.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// Only records of this kind: writeback, spend, void or turn.
    #[arg(long, value_parser = enum_arg::<RunKind>)]
    kind: Option<RunKind>,
    /// Only records about this todo (an id or a unique prefix).
    #[arg(long, value_name = "ID")]
    todo: Option<String>,
    /// Show at most N records.
    #[arg(
        short = 'n',
        long = "max-count",
        value_name = "N",
        default_value_t = 50
    )]
    limit: usize,
}

pub fn history(ctx: &Context, a: &HistoryArgs) -> Result<Output> {
    let r = writeback::history(
        ctx,
        &writeback::HistoryArgs {
            kind: a.kind,
            todo: a.todo.clone(),
            limit: a.limit,
        },
    )?;
    Ok(Output::new(&r, render::text::runs(&r.runs)))
}
