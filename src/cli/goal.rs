//! `git loopx goal …`

use clap::Subcommand;

use crate::cli::Output;
use crate::model::GoalStatus;
use crate::ops::{goal, Context};
use crate::render::{self, goal::Action};
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
    Set {
        /// The goal's objective: what the agents work towards.
        #[arg(long, value_name = "TEXT")]
        objective: Option<String>,
        /// What should happen next, shown to every agent.
        #[arg(long, value_name = "TEXT", conflicts_with = "clear_next_action")]
        next_action: Option<String>,
        /// Remove the next action.
        #[arg(long)]
        clear_next_action: bool,
        /// Share of the window agents may use, 0..1 (0 pauses all work).
        #[arg(long)]
        compute: Option<f64>,
        /// The length of the rolling quota window, in hours.
        #[arg(long, value_name = "HOURS")]
        window_hours: Option<u32>,
        /// The length of one quota slot, in minutes.
        #[arg(long, value_name = "MINUTES")]
        slot_minutes: Option<u32>,
        /// Override the computed allowance.
        #[arg(long, value_name = "N")]
        allowed_slots: Option<u32>,
        /// A guard the agents must respect (repeatable; replaces the list).
        #[arg(long = "guard", value_name = "TEXT")]
        guards: Vec<String>,
        /// A path glob agents may write to (repeatable; replaces the list).
        #[arg(long = "write-scope", value_name = "GLOB")]
        write_scope: Vec<String>,
        /// Whether a goal whose only open todos are blocked asks for a
        /// replan turn (true, the default) or waits for a person (false).
        #[arg(long, value_name = "true|false")]
        replan_when_blocked: Option<bool>,
        /// A goal decision only a person may take, refused to agents and
        /// inside agent runtimes: `done` (`goal done`, and an agent's
        /// `todo done --no-follow-up` no longer ends the goal), `stop`
        /// (`goal stop` and `goal resume`). Repeatable; replaces the list;
        /// `none` clears it. Only a person changes it.
        #[arg(long = "person-only", value_name = "done|stop|none")]
        person_only: Vec<String>,
    },
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
        GoalCommand::Set {
            objective,
            next_action,
            clear_next_action,
            compute,
            window_hours,
            slot_minutes,
            allowed_slots,
            guards,
            write_scope,
            replan_when_blocked,
            person_only,
        } => goal::set(
            ctx,
            &goal::SetArgs {
                objective: objective.clone(),
                next_action: next_action.clone(),
                clear_next_action: *clear_next_action,
                compute: *compute,
                window_hours: *window_hours,
                slot_minutes: *slot_minutes,
                allowed_slots: *allowed_slots,
                guards: (!guards.is_empty()).then(|| guards.clone()),
                write_scope: (!write_scope.is_empty()).then(|| write_scope.clone()),
                replan_when_blocked: *replan_when_blocked,
                person_only: (!person_only.is_empty()).then(|| person_only.clone()),
            },
        )?,
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
            GoalCommand::Set { .. } => Action::Set,
            GoalCommand::Stop => Action::Stop,
            GoalCommand::Resume => Action::Resume,
            GoalCommand::Done(_) => Action::Done,
            GoalCommand::Add { .. } => Action::Add,
        };
        render::goal::goal(&report, action)
    };
    Ok(Output::new(&report, text))
}
