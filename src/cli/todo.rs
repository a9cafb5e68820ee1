//! `git loopx todo …`

use clap::Subcommand;

mod handoff;

use crate::cli::{enum_arg, Output};
use crate::model::{Priority, Role, TodoClass, TodoStatus};
use crate::ops::{done, lease, todo, Context};
use crate::render;
use crate::Result;

mod monitor;

/// Agent and user todos, and the leases on them.
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
        #[arg(long = "requires-capability", value_name = "CAP")]
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
        #[command(flatten)]
        monitor: monitor::MonitorFlags,
    },
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
    Claim {
        /// The todo: its id or a unique prefix of one.
        id: String,
        /// Lease length: 45m by default, at most 24h (e.g. 30m, 2h, 90s).
        #[arg(long, value_parser = ttl_arg, default_value = "45m")]
        ttl: i64,
        /// Confirm the claim on the remote (a remote compare-and-swap): the
        /// local branch takes the claim only once the remote has it, so a
        /// claim that fails leaves none behind. Network limit: git config
        /// loopx.syncTimeout (default 2m).
        #[arg(long)]
        sync: bool,
        /// The remote for --sync (default: loopx.remote, else origin).
        #[arg(long, value_name = "REMOTE", requires = "sync")]
        remote: Option<String>,
    },
    /// Extend your lease (same epoch).
    ///
    /// Writes only once more than half of the TTL asked for has run (so at
    /// most one commit a minute for any TTL of 2m or more); before that it
    /// answers `held` (`renewed: false`) and writes nothing.
    Renew {
        /// The todo: its id or a unique prefix of one.
        id: String,
        /// The lease's new length from now: 45m by default, at most 24h.
        #[arg(long, value_parser = ttl_arg, default_value = "45m")]
        ttl: i64,
        /// The epoch your claim was granted (default: recorded on this host).
        #[arg(long)]
        epoch: Option<u64>,
    },
    /// Give up your lease; the epoch is kept so it never goes backwards.
    Release {
        /// The todo: its id or a unique prefix of one.
        id: String,
        /// The epoch your claim was granted (default: recorded on this host).
        #[arg(long)]
        epoch: Option<u64>,
        /// A person (run without an agent identity) takes back whoever's
        /// lease this is: the epoch moves up, so the old holder's later
        /// writes are refused (`stale_epoch`); who did it is recorded in
        /// the commit and a note. Refused to an agent on another's lease.
        #[arg(long)]
        force: bool,
    },
    /// The next ready todo for this agent (what should-run would select).
    ///
    /// Exits 1 with `nothing_ready` when there is none.
    Next {
        /// Claim it in the same compare-and-swap.
        #[arg(long)]
        claim: bool,
        /// A capability this agent has now (repeatable; added to its registered ones).
        #[arg(long = "capability", value_name = "CAP")]
        capability: Vec<String>,
        /// With --claim: the lease length, at most 24h (e.g. 30m, 2h).
        #[arg(long, value_parser = ttl_arg, default_value = "45m")]
        ttl: i64,
        /// With --claim: confirm the claim on the remote (see `todo claim --sync`).
        #[arg(long, requires = "claim")]
        sync: bool,
        /// The remote for --sync (default: loopx.remote, else origin).
        #[arg(long, value_name = "REMOTE", requires = "sync")]
        remote: Option<String>,
    },
    Poll(monitor::PollArgs),
    /// Change status, priority, text or resume condition, or add a note.
    Update {
        /// The todo: its id or a unique prefix of one.
        id: String,
        /// open, blocked or deferred (use `todo done` to complete).
        #[arg(long, value_parser = enum_arg::<TodoStatus>)]
        status: Option<TodoStatus>,
        /// Add a note to the todo (kept with its time and author).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Not ready until this holds: todo_done:<todo-id>.
        #[arg(long, value_name = "COND")]
        resume_when: Option<String>,
        /// P0 (first) … P4 (last).
        #[arg(long, value_parser = enum_arg::<Priority>)]
        priority: Option<Priority>,
        /// Replace what is to be done.
        #[arg(long)]
        text: Option<String>,
        /// The epoch your claim was granted (default: recorded on this host).
        #[arg(long)]
        epoch: Option<u64>,
    },
    /// Complete a todo: runs its `validate` command first (no shell), and
    /// refuses completion if it fails.
    Done {
        /// The todo: its id or a unique prefix of one.
        id: String,
        /// What shows it is done (a commit, a test run, a link).
        #[arg(long)]
        evidence: String,
        /// Create the successor todo in the same commit.
        #[arg(long, value_name = "TEXT", conflicts_with = "no_follow_up")]
        next: Option<String>,
        /// Give the successor's lease to this agent.
        #[arg(long, value_name = "AGENT", requires = "next")]
        next_agent: Option<String>,
        /// Say explicitly that no follow-up is needed. On the goal's last open
        /// agent todo this marks the goal done in the same commit
        /// (should-run then answers `terminal_no_followup`).
        #[arg(long)]
        no_follow_up: bool,
        /// Kill `validate` after this long (default 10m).
        #[arg(long, value_parser = ttl_arg, value_name = "DURATION")]
        validate_timeout: Option<i64>,
        /// The epoch your claim was granted (default: recorded on this host).
        #[arg(long)]
        epoch: Option<u64>,
    },
    Handoff(handoff::Args),
}

/// Parses a lease length such as `30m` into seconds.
fn ttl_arg(text: &str) -> std::result::Result<i64, String> {
    crate::model::parse_duration(text)
        .ok_or_else(|| format!("`{text}` is not a duration like 90s, 30m, 2h"))
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
            monitor,
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
                    monitor: monitor.to_args(),
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
            let mut text = render::text::todo_show(&report.todo);
            if let Some(line) = crate::ops::monitor::summary(&report.todo, ctx.now) {
                text.push_str(&format!("# {line}\n"));
            }
            Ok(Output::new(&report, text))
        }
        TodoCommand::Poll(args) => monitor::poll(ctx, args),
        TodoCommand::Claim {
            id,
            ttl,
            sync,
            remote,
        } => {
            let r = if *sync {
                lease::claim_sync(ctx, id, *ttl, remote.as_deref())?
            } else {
                lease::claim(ctx, id, *ttl)?
            };
            Ok(Output::new(&r, render::text::claim(&r)))
        }
        TodoCommand::Renew { id, ttl, epoch } => {
            let r = lease::renew(ctx, id, *ttl, *epoch)?;
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
            Ok(Output::new(&r, text))
        }
        TodoCommand::Release { id, epoch, force } => {
            let r = lease::release(ctx, id, *epoch, *force)?;
            let text = match r.todo.notes.last() {
                Some(n) if *force && n.agent.is_none() => {
                    format!("released {}: {}\n", r.todo.id, n.text)
                }
                _ => format!("released {}\n", r.todo.id),
            };
            Ok(Output::new(&r, text))
        }
        TodoCommand::Next {
            claim,
            capability,
            ttl,
            sync,
            remote,
        } => {
            let r = if *sync {
                lease::ClaimReportOrTodo::Claimed(lease::next_sync(
                    ctx,
                    capability,
                    *ttl,
                    remote.as_deref(),
                )?)
            } else {
                lease::next(ctx, capability, *claim, *ttl)?
            };
            let text = match &r {
                lease::ClaimReportOrTodo::Claimed(c) => render::text::claim(c),
                lease::ClaimReportOrTodo::Todo { todo } => format!("{}  {}\n", todo.id, todo.text),
            };
            Ok(Output::new(&r, text))
        }
        TodoCommand::Update {
            id,
            status,
            note,
            resume_when,
            priority,
            text,
            epoch,
        } => {
            let r = todo::update(
                ctx,
                id,
                &todo::UpdateArgs {
                    status: *status,
                    note: note.clone(),
                    resume_when: resume_when.clone(),
                    priority: *priority,
                    text: text.clone(),
                    epoch: *epoch,
                },
            )?;
            Ok(Output::new(&r, format!("updated {}\n", r.todo.id)))
        }
        TodoCommand::Done {
            id,
            evidence,
            next,
            next_agent,
            no_follow_up,
            validate_timeout,
            epoch,
        } => {
            let mut ticker = crate::cli::progress::Ticker::on_stderr();
            let (r, failure) = done::done(
                ctx,
                id,
                &done::DoneArgs {
                    evidence: evidence.clone(),
                    next: next.clone(),
                    next_agent: next_agent.clone(),
                    epoch: *epoch,
                    timeout: validate_timeout
                        .map(|s| std::time::Duration::from_secs(s.max(1) as u64)),
                    no_follow_up: *no_follow_up,
                },
                &mut |waited| ticker.tick(waited),
            )?;
            drop(ticker);
            let mut out = Output::new(&r, render::text::done(&r));
            out.failure = failure;
            Ok(out)
        }
        TodoCommand::Handoff(args) => handoff::run(ctx, args),
    }
}
