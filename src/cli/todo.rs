//! `git loopx todo …`

use clap::Subcommand;

use crate::cli::{enum_arg, Output};
use crate::model::{Priority, Role, TodoClass, TodoStatus};
use crate::ops::{todo, Context};
use crate::render;
use crate::Result;

/// Agent and user todos: add, list, show.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: TodoCommand,
}

#[derive(Debug, Subcommand)]
enum TodoCommand {
    /// Add a todo to the goal.
    Add {
        /// What is to be done.
        text: String,
        /// agent (default) or user.
        #[arg(long, value_parser = enum_arg::<Role>, default_value = "agent")]
        role: Role,
        /// advancement_task (agent default), continuous_monitor, blocker;
        /// user todos need user_gate or user_action.
        #[arg(long, value_parser = enum_arg::<TodoClass>)]
        class: Option<TodoClass>,
        /// P0 (first) … P4 (last).
        #[arg(long, value_parser = enum_arg::<Priority>, default_value = "P2")]
        priority: Priority,
        /// A capability the agent must have (repeatable).
        #[arg(long = "requires-cap", value_name = "CAP")]
        requires_cap: Vec<String>,
        /// An agent that must not take it (repeatable).
        #[arg(long = "exclude-agent", value_name = "AGENT")]
        exclude_agent: Vec<String>,
        /// Not ready until this holds: todo_done:<todo-id>.
        #[arg(long, value_name = "COND")]
        resume_when: Option<String>,
        /// A command (run without a shell) that must exit 0 before `done` is accepted.
        #[arg(long, value_name = "CMD")]
        validate: Option<String>,
    },
    /// List the goal's todos (open ones unless --status or --all).
    List {
        #[arg(long, value_parser = enum_arg::<Role>)]
        role: Option<Role>,
        #[arg(long, value_parser = enum_arg::<TodoStatus>)]
        status: Option<TodoStatus>,
        /// Only todos this agent holds a live claim on.
        #[arg(long)]
        mine: bool,
        /// Include done and deferred todos.
        #[arg(long)]
        all: bool,
    },
    /// Show every field of one todo.
    Show {
        /// A todo id or a unique prefix of one.
        id: String,
    },
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    match &args.command {
        TodoCommand::Add {
            text,
            role,
            class,
            priority,
            requires_cap,
            exclude_agent,
            resume_when,
            validate,
        } => {
            let report = todo::add(
                ctx,
                &todo::AddArgs {
                    text: text.clone(),
                    role: *role,
                    class: *class,
                    priority: *priority,
                    requires_capabilities: requires_cap.clone(),
                    exclude_agents: exclude_agent.clone(),
                    resume_when: resume_when.clone(),
                    validate: validate.clone(),
                },
            )?;
            let text = format!("added {}: {}\n", report.todo.id, report.todo.text);
            Ok(Output::new(&report, text))
        }
        TodoCommand::List {
            role,
            status,
            mine,
            all,
        } => {
            let report = todo::list(
                ctx,
                &todo::ListArgs {
                    role: *role,
                    status: *status,
                    mine: *mine,
                    all: *all,
                },
            )?;
            Ok(Output::new(
                &report,
                render::text::todo_list(&report, ctx.now),
            ))
        }
        TodoCommand::Show { id } => {
            let report = todo::show(ctx, id)?;
            Ok(Output::new(&report, render::text::todo_show(&report.todo)))
        }
    }
}
