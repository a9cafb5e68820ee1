//! `git loopx writeback` and `git loopx history`

use crate::cli::{enum_arg, Output};
use crate::model::{Outcome, RunKind};
use crate::ops::{writeback, Context};
use crate::render;
use crate::Result;

/// Record delivered work on a todo (you must hold it, or it must be unclaimed),
/// or on the goal itself after a planning turn.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The todo the work was for: its id or a unique prefix of one. Leave it
    /// out for a goal-level writeback: a planning or replanning turn, which
    /// works on no todo.
    #[arg(long, value_name = "ID")]
    todo: Option<String>,
    /// surface_only, outcome_gap, outcome_progress or primary_goal_outcome.
    #[arg(long, value_parser = enum_arg::<Outcome>)]
    outcome: Outcome,
    /// What was delivered, in a sentence or two.
    #[arg(long, value_name = "TEXT")]
    summary: String,
    /// The validation command that was run…
    #[arg(long, value_name = "CMD", requires = "exit_code")]
    validation: Option<String>,
    /// …and its exit code.
    #[arg(long, requires = "validation", allow_hyphen_values = true)]
    exit_code: Option<i32>,
    /// A code commit that carries the work (repeatable): any revision git
    /// reads (`HEAD`, a branch, a short id); stored as the full commit id.
    #[arg(long = "artifact", value_name = "REV")]
    artifacts: Vec<String>,
    /// Evidence outside git, such as a CI run (repeatable): an absolute URL.
    #[arg(long = "artifact-url", value_name = "URL")]
    artifact_urls: Vec<String>,
    /// Set the goal's next action in the same commit.
    #[arg(long)]
    next_action: Option<String>,
    /// The turn key: a second writeback with the same key is a replay.
    #[arg(long, value_name = "KEY")]
    turn: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    epoch: Option<u64>,
}

pub fn run(ctx: &Context, a: &Args) -> Result<Output> {
    let r = writeback::writeback(
        ctx,
        &writeback::WritebackArgs {
            todo: a.todo.clone(),
            outcome: a.outcome,
            summary: a.summary.clone(),
            validation: a.validation.clone(),
            exit_code: a.exit_code,
            artifacts: a.artifacts.clone(),
            artifact_urls: a.artifact_urls.clone(),
            next_action: a.next_action.clone(),
            turn: a.turn.clone(),
            epoch: a.epoch,
        },
    )?;
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
