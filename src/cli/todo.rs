//! `git loopx todo …`

use clap::Subcommand;

mod handoff;

use crate::cli::Output;
use crate::model::{Role, TodoStatus};
use crate::ops::args::enum_arg;
use crate::ops::{done, lease, monitor, todo};
use crate::render;
use crate::session::Context;
use crate::Result;

/// Agent and user todos, and the leases on them.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: TodoCommand,
}

#[derive(Debug, Subcommand)]
enum TodoCommand {
    /// Add a todo to the goal.
    Add(todo::AddArgs),
    /// List the goal's todos (open ones unless --status or --all).
    List {
        /// Only agent or only user todos.
        #[arg(long, value_parser = enum_arg::<Role>)]
        role: Option<Role>,
        /// Only todos with this status: open, blocked, deferred or done.
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
    /// Take a lease on a todo.
    ///
    /// If you already hold it, the lease is extended only once more than
    /// half of the TTL asked for has run; before that it answers `held`
    /// and writes nothing.
    Claim(lease::ClaimArgs),
    /// Extend your lease (same epoch).
    ///
    /// Writes only once more than half of the TTL asked for has run (so at
    /// most one commit a minute for any TTL of 2m or more); before that it
    /// answers `held` (`renewed: false`) and writes nothing.
    Renew(lease::RenewArgs),
    /// Give up your lease; the epoch is kept so it never goes backwards.
    Release(lease::ReleaseArgs),
    /// The next ready todo for this agent (what should-run would select).
    ///
    /// Exits 1 with `nothing_ready` when there is none.
    Next(lease::NextArgs),
    /// Record a poll of a continuous_monitor and set when it is next due.
    ///
    /// The monitor is next due one cadence (`--every`) from now. By the agent
    /// holding its claim if it is claimed, else by any agent or person; the
    /// claim is kept. The monitor keeps its last 20 polls.
    Poll(monitor::PollArgs),
    /// Change status, priority, text or resume condition, or add a note.
    Update(todo::UpdateArgs),
    /// Complete a todo: runs its `validate` command first (no shell), and
    /// refuses completion if it fails.
    Done(done::DoneArgs),
    Handoff(handoff::Args),
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    match &args.command {
        TodoCommand::Add(a) => {
            let report = todo::add(ctx, a)?;
            let text = format!("added {}: {}\n", report.todo.id, report.todo.text);
            Ok(Output::new(report, text))
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
            let text = render::text::todo_list(&report, ctx.now);
            Ok(Output::new(report, text))
        }
        TodoCommand::Show { id } => {
            let report = todo::show(ctx, id)?;
            let mut text = render::text::todo_show(&report.todo);
            if let Some(line) = crate::ops::monitor::summary(&report.todo, ctx.now) {
                text.push_str(&format!("# {line}\n"));
            }
            Ok(Output::new(report, text))
        }
        TodoCommand::Poll(a) => {
            let r = monitor::poll(ctx, a)?;
            let text = render::text::poll(&r);
            Ok(Output::new(r, text))
        }
        TodoCommand::Claim(a) => {
            let r = lease::claim(ctx, a)?;
            let text = render::text::claim(&r);
            Ok(Output::new(r, text))
        }
        TodoCommand::Renew(a) => {
            let r = lease::renew(ctx, a)?;
            let until = r
                .todo
                .claim
                .as_ref()
                .map_or(String::new(), |c| c.expires_at.to_string());
            let text = if r.renewed {
                format!("renewed {} until {until}\n", r.todo.id)
            } else {
                format!(
                    "already held {} until {until}: not renewed before half the lease has run\n",
                    r.todo.id
                )
            };
            Ok(Output::new(r, text))
        }
        TodoCommand::Release(a) => {
            let r = lease::release(ctx, a)?;
            let text = match r.todo.notes.last() {
                Some(n) if a.force && n.agent.is_none() => {
                    format!("released {}: {}\n", r.todo.id, n.text)
                }
                _ => format!("released {}\n", r.todo.id),
            };
            Ok(Output::new(r, text))
        }
        TodoCommand::Next(a) => {
            let r = lease::next(ctx, a)?;
            let text = match &r {
                lease::ClaimReportOrTodo::Claimed(c) => render::text::claim(c),
                lease::ClaimReportOrTodo::Todo { todo } => format!("{}  {}\n", todo.id, todo.text),
            };
            Ok(Output::new(r, text))
        }
        TodoCommand::Update(a) => {
            let r = todo::update(ctx, a)?;
            let text = format!("updated {}\n", r.todo.id);
            Ok(Output::new(r, text))
        }
        TodoCommand::Done(a) => {
            let mut ticker = crate::cli::progress::Ticker::on_stderr();
            let (r, failure) = done::done(ctx, a, &mut |waited| ticker.tick(waited))?;
            drop(ticker);
            let text = render::text::done(&r);
            let mut out = Output::new(r, text);
            out.failure = failure;
            Ok(out)
        }
        TodoCommand::Handoff(args) => handoff::run(ctx, args),
    }
}
