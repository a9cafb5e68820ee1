//! `git loopx goal …`

use clap::Subcommand;

use crate::cli::Output;
use crate::model::GoalStatus;
use crate::ops::goal;
use crate::render::{self, goal::Action};
use crate::session::Context;
use crate::Result;

/// The goal: objective, status, quota policy, next action.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: GoalCommand,
    /// Print the goal as its YAML file on the state branch, not as text.
    #[arg(long, global = true, conflicts_with = "json")]
    yaml: bool,
}

#[derive(Debug, Subcommand)]
enum GoalCommand {
    /// Show the goal.
    Show,
    /// Change the goal's fields and quota policy.
    Set(goal::SetArgs),
    /// Pause the goal for every agent.
    Stop,
    /// Resume a stopped goal, or reopen one marked done.
    Resume,
    /// Mark the goal done: the explicit end of its work. should-run answers
    /// `terminal_no_followup` until `goal resume`. A person or an agent may
    /// mark it; the state records who, when and why.
    Done(goal::DoneArgs),
    /// Add another goal.
    Add {
        /// The new goal's id: 1-64 of a-z, 0-9, `_`, `.`, `-`, starting with a letter.
        id: String,
        /// The goal's objective: what the agents work towards.
        #[arg(long, value_name = "TEXT")]
        objective: String,
        /// Make it the default goal.
        #[arg(long)]
        default: bool,
    },
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = match &args.command {
        GoalCommand::Show => goal::show(ctx)?,
        GoalCommand::Set(set) => goal::set(ctx, set)?,
        GoalCommand::Stop => goal::set_status(ctx, GoalStatus::Stopped)?,
        GoalCommand::Resume => goal::set_status(ctx, GoalStatus::Active)?,
        GoalCommand::Done(a) => goal::done(ctx, a)?,
        GoalCommand::Add {
            id,
            objective,
            default,
        } => goal::add(ctx, id, objective, *default)?,
    };
    let text = if args.yaml {
        report.file()
    } else {
        let action = match &args.command {
            GoalCommand::Show => Action::Show,
            GoalCommand::Set(_) => Action::Set,
            GoalCommand::Stop => Action::Stop,
            GoalCommand::Resume => Action::Resume,
            GoalCommand::Done(_) => Action::Done,
            GoalCommand::Add { .. } => Action::Add,
        };
        render::goal::goal(&report, action)
    };
    Ok(Output::new(report, text))
}
