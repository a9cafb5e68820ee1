//! `todo done`: validate, complete, optionally create the successor — one commit.
//!
//! Invariant: a `validate` command is text written into state, by whoever
//! added the todo; it runs only for an agent (`ctx.agent()` names one),
//! in the agent's own environment. For the person it is never run: their
//! `todo done` (from a terminal or the dashboard) completes the todo and
//! says the command was not run ([`NotRun`]), showing it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::ids::{headline, new_todo_id, nonce};
use crate::model::{
    ids, lease, Code, Extra, GoalState, Outcome, Refusal, Role, Run, RunKind, Todo, TodoClass,
    TodoStatus, Validation,
};
use crate::ops::args::Seconds;
use crate::ops::{non_empty, resolve_todo, touch};
use crate::session::{local, mutate, Context};
use crate::store::{Message, Oid};
use crate::supervise::validate;
pub use crate::supervise::validate::{duration_words, ValidationRun};
use crate::{Error, Result};

/// `todo done`, and the `complete_todo` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DoneArgs {
    /// The todo: its id or a unique prefix of one.
    #[arg(value_name = "ID")]
    pub todo: String,
    /// What shows it is done (a commit, a test run, a link).
    #[arg(long)]
    pub evidence: String,
    /// Create the successor todo in the same commit.
    #[arg(long, value_name = "TEXT", conflicts_with = "no_follow_up")]
    pub next: Option<String>,
    /// Give the successor's lease to this agent.
    #[arg(long, value_name = "AGENT", requires = "next")]
    pub next_agent: Option<String>,
    /// Say explicitly that no follow-up is needed. On the goal's last open
    /// agent todo this marks the goal done in the same commit
    /// (should-run then answers `terminal_no_followup`).
    #[arg(long)]
    #[serde(default)]
    pub no_follow_up: bool,
    /// Kill `validate` after this long (default 10m).
    #[arg(long, value_name = "DURATION")]
    pub validate_timeout: Option<Seconds>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    pub epoch: Option<u64>,
}

/// What `todo done` did. When validation failed, `todo` is the todo as it
/// stays (open), `validation` says why with the output's last lines, and
/// `commit` is the one that recorded the failed validation. When the
/// person completed a todo that carries a `validate`, `validation` is
/// absent and `validation_not_run` says so.
#[derive(Debug, Serialize)]
pub struct DoneReport {
    pub todo: Todo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub successor: Option<Todo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationRun>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_not_run: Option<Box<NotRun>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
    /// `--no-follow-up` on the last open agent todo ended the goal.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub goal_done: bool,
}

/// A todo's `validate` that was not run, because no agent completed it.
#[derive(Clone, Debug, Serialize)]
pub struct NotRun {
    /// The command, exactly as the todo holds it.
    pub command: String,
    /// Why it was not run: [`NOT_RUN_REASON`].
    pub reason: &'static str,
    /// What the person may do instead.
    pub hint: String,
}

/// Why the person's `todo done` does not run the todo's `validate`.
pub const NOT_RUN_REASON: &str = "completed by the person";

impl NotRun {
    fn of(command: &str) -> Self {
        NotRun {
            command: command.to_owned(),
            reason: NOT_RUN_REASON,
            hint: "a command written into state runs only for an agent, never as you; \
                   read it, and run it yourself if you want the check"
                .to_owned(),
        }
    }
}

/// Whether a command written into state (a todo's `validate`) may run for
/// this caller: only when it acts as an agent.
pub fn runs_stored_commands(ctx: &Context) -> bool {
    ctx.agent().is_some()
}

/// How long `validate` may run before it is killed and counted as failed.
pub const DEFAULT_VALIDATE_TIMEOUT: Duration = Duration::from_secs(600);

/// Completes the todo `args.todo` names, running its `validate` first when
/// an agent completes it (`tick` hears how long it has run); for the person
/// it is not run, and the report says so. A failed validation is recorded
/// and handed back as the report with its refusal, so the output's tails
/// reach the user.
pub fn done(
    ctx: &Context,
    args: &DoneArgs,
    tick: &mut dyn FnMut(Duration),
) -> Result<(DoneReport, Option<Error>)> {
    let agent = ctx.agent().map(str::to_owned);
    let evidence = non_empty("--evidence", &args.evidence)?;
    let next = args
        .next
        .as_deref()
        .map(|t| non_empty("--next", t))
        .transpose()?;
    if let Some(b) = &args.next_agent {
        ids::check_name("agent", b)?;
        if next.is_none() {
            return Err(Refusal::invalid_input("--next-agent needs --next").into());
        }
    }
    // Pre-check outside the CAS loop, so validation only runs for a writer that may complete.
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    let id = resolve_todo(gs, &args.todo)?;
    let todo = &gs.todos[&id];
    check_completable(ctx, todo, agent.as_deref(), args.epoch)?;
    ctx.told(check_gates(ctx, &state, &gs.goal.id, &id, agent.as_deref()))?;
    let not_run = match &todo.validate {
        Some(command) if !runs_stored_commands(ctx) => Some(Box::new(NotRun::of(command))),
        _ => None,
    };
    let validation = match &todo.validate {
        Some(_) if not_run.is_some() => None,
        Some(command) => Some(validate::run(
            command,
            ctx.repo_dir(),
            args.validate_timeout.map_or(DEFAULT_VALIDATE_TIMEOUT, |s| {
                Duration::from_secs(s.0.max(1) as u64)
            }),
            tick,
        )?),
        None => None,
    };
    if let Some(v) = validation.as_ref().filter(|v| !v.passed()) {
        let commit = record_failed_validation(ctx, &id, agent.as_deref(), v, args.epoch)?;
        let refusal = validation_refusal(&id, v);
        let report = DoneReport {
            todo: todo.clone(),
            successor: None,
            validation,
            validation_not_run: None,
            commit,
            goal_done: false,
        };
        return Ok((report, Some(refusal.into())));
    }
    let nonce = nonce();
    let done = mutate(ctx, |state, goal| {
        check_gates(ctx, state, goal, &id, agent.as_deref())?;
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let todo = gs
            .todos
            .get_mut(&id)
            .ok_or_else(|| Refusal::new(Code::TodoNotFound, format!("{id} is gone")))?;
        check_completable(ctx, todo, agent.as_deref(), args.epoch)?;
        todo.status = TodoStatus::Done;
        todo.evidence = Some(evidence.clone());
        lease::release(todo);
        touch(todo, ctx.now);
        let mut message = Message::new(
            "todo done",
            format!("todo done {id}{}", by(agent.as_deref())),
        )
        .line(format!("evidence: {}", headline(&evidence, 200)))
        .trailer("Loopx-Todo", id.clone());
        if let Some(n) = &not_run {
            // The todo keeps the command; the note and the message say it
            // was not run. A note the todo has no room for is left out.
            let _ = crate::ops::add_note(todo, ctx.now, None, &not_run_note());
            message = message.line(format!(
                "validate not run ({}): {}",
                n.reason,
                headline(&n.command, 200)
            ));
        }
        let successor = match &next {
            Some(text) => {
                let next_agent = args.next_agent.as_deref();
                let succ = add_successor(ctx, gs, goal, &id, text, next_agent, &nonce)?;
                message = message.trailer("Loopx-Todo", succ.id.clone());
                message.subject.push_str(&format!(", next {}", succ.id));
                Some(succ)
            }
            None => None,
        };
        let goal_done = args.no_follow_up && end_goal(ctx, gs, &id, &evidence, &mut message)?;
        if args.no_follow_up && !goal_done {
            message = message.line("no follow-up");
        }
        Ok(((gs.todos[&id].clone(), successor, goal_done), message))
    })?;
    let (todo, successor, goal_done) = done.value;
    if let Some(a) = &agent {
        local::forget_grant(ctx, a, &todo.id);
    }
    if let (Some(succ), Some(b)) = (&successor, &args.next_agent) {
        local::record_grant(ctx, b, &succ.id, succ.epoch());
    }
    let report = DoneReport {
        todo,
        successor,
        validation,
        validation_not_run: not_run,
        commit: done.commit,
        goal_done,
    };
    Ok((report, None))
}

/// Why a failed validation leaves the todo open, with how to fix it.
fn validation_refusal(id: &str, v: &ValidationRun) -> Refusal {
    let refusal = Refusal::new(
        Code::ValidationFailed,
        format!("{id} not completed: `{}` {}", v.command, v.what()),
    )
    .with_hint("fix the failure and run `todo done` again; the failed validation was recorded");
    match validate::shell_construct(&v.command) {
        Some(construct) => refusal.with_hint(format!(
            "`{}` needs a shell ({construct}) but runs without one: \
             set the todo's validate to `sh -c '…'`",
            v.command
        )),
        None => refusal,
    }
}

/// The `--next` todo after `id`: created by this caller at `id`'s
/// priority, its lease given to `next_agent` when named, and listed among
/// `id`'s successors.
fn add_successor(
    ctx: &Context,
    gs: &mut GoalState,
    goal: &str,
    id: &str,
    text: &str,
    next_agent: Option<&str>,
    nonce: &str,
) -> Result<Todo> {
    let agent = ctx.agent();
    let mut succ = Todo::new(
        new_todo_id(goal, text, agent, ctx.now, nonce),
        goal,
        text,
        Role::Agent,
        TodoClass::AdvancementTask,
        gs.todos[id].priority,
        agent,
        ctx.now,
    );
    if let Some(b) = next_agent {
        lease::claim(&mut succ, b, ctx.now, lease::DEFAULT_TTL)?;
    }
    let todo = gs.todos.get_mut(id).expect("still there");
    todo.successors.push(succ.id.clone());
    Ok(gs.add_todo(succ))
}

/// Ends the goal for `--no-follow-up` when no work is left open, unless
/// the goal reserves `done` for the person and this is not the person;
/// whether it did.
fn end_goal(
    ctx: &Context,
    gs: &mut GoalState,
    id: &str,
    evidence: &str,
    message: &mut Message,
) -> Result<bool> {
    let reserved = gs.goal.person_only.iter().any(|d| d == "done") && ctx.gate_actor().is_some();
    if has_open_work(gs) || reserved {
        return Ok(false);
    }
    let by = crate::ops::goal::actor(ctx)?;
    let note = format!("no follow-up after {id}: {}", headline(evidence, 200));
    crate::ops::goal::mark_done(&mut gs.goal, &by, Some(&note), ctx.now);
    gs.goal.rev = gs.goal.rev.saturating_add(1);
    gs.goal.updated_at = ctx.now;
    message.subject.push_str(", goal done (no follow-up)");
    Ok(true)
}

/// The note a todo the person completed gets when it carries a `validate`.
fn not_run_note() -> String {
    format!("validate not run: {NOT_RUN_REASON}")
}

/// Whether the goal still has work: an agent todo open, blocked, or deferred
/// behind a condition (a successor to come), or an open gate or reminder for
/// the user (as in LoopX 2.1.1, an open user todo keeps the goal alive).
fn has_open_work(gs: &crate::model::GoalState) -> bool {
    gs.todos.all_facts().any(|t| match t.status {
        TodoStatus::Open => true,
        TodoStatus::Blocked => t.role == Role::Agent,
        TodoStatus::Deferred => t.role == Role::Agent && t.resume_when.is_some(),
        TodoStatus::Done => false,
    })
}

fn by(agent: Option<&str>) -> String {
    agent.map(|a| format!(" by {a}")).unwrap_or_default()
}

/// An agent does not complete a todo an open gate holds (`gate_open`).
fn check_gates(
    ctx: &Context,
    state: &crate::model::State,
    goal: &str,
    id: &str,
    agent: Option<&str>,
) -> Result<()> {
    match agent {
        Some(a) => crate::ops::gate::check_held(
            ctx,
            state,
            goal,
            id,
            a,
            crate::model::gate::GateAction::Complete,
        ),
        None => Ok(()),
    }
}

/// Gates are resolved, not completed; a claimed todo only by its holder.
fn check_completable(
    ctx: &Context,
    todo: &Todo,
    agent: Option<&str>,
    epoch: Option<u64>,
) -> Result<()> {
    let actor = ctx.gate_actor();
    let actor = actor.as_deref().or(agent);
    crate::model::gate::check_reserved(todo, actor, crate::model::gate::GateAction::Complete)?;
    if todo.class == TodoClass::UserGate {
        return Err(Refusal::invalid_input(format!(
            "{} is a gate: use `git loopx gate resolve`",
            todo.id
        ))
        .into());
    }
    if todo.status == TodoStatus::Done {
        return Err(Refusal::invalid_input(format!("{} is already done", todo.id)).into());
    }
    match agent {
        Some(a) => {
            let expected = local::expected_epoch(ctx, a, &todo.id, epoch);
            // As LoopX 2.1.1: an agent completes only a todo it claimed
            // (its lease may have run out since, if no one took it over).
            if lease::check_writer(todo, a, expected, ctx.now)? == lease::Standing::Unclaimed {
                return Err(Refusal::new(
                    Code::NotClaimHolder,
                    format!(
                        "{a} never claimed {}: an agent completes only the todos it holds",
                        todo.id
                    ),
                )
                .with_hint(format!(
                    "claim it first: git loopx --agent {a} todo claim {}",
                    todo.id
                ))
                .into());
            }
        }
        None => {
            if let Some(c) = todo.live_claim(ctx.now) {
                return Err(Refusal::new(
                    Code::NotClaimHolder,
                    format!(
                        "{} is claimed by {} (epoch {}) until {}",
                        todo.id, c.agent, c.epoch, c.expires_at
                    ),
                )
                .with_hint("only the holder may complete it; pass --agent if you are the holder")
                .into());
            }
        }
    }
    Ok(())
}

fn record_failed_validation(
    ctx: &Context,
    id: &str,
    agent: Option<&str>,
    v: &ValidationRun,
    epoch: Option<u64>,
) -> Result<Option<Oid>> {
    // The state keeps the exit code and one line of output, never more;
    // a line the credential scan refuses is left out rather than block the
    // record (the user still sees it on their terminal).
    let summary = format!("validation failed: `{}` {}", v.command, v.what());
    if let Some(line) = v.last_line() {
        let with_line = format!("{summary}; last line: {line}");
        match write_failed_run(ctx, id, agent, v, epoch, &with_line) {
            Err(e) if e.code() == Code::LeakDetected => {}
            written => return written,
        }
    }
    write_failed_run(ctx, id, agent, v, epoch, &summary)
}

fn write_failed_run(
    ctx: &Context,
    id: &str,
    agent: Option<&str>,
    v: &ValidationRun,
    epoch: Option<u64>,
    summary: &str,
) -> Result<Option<Oid>> {
    let nonce = nonce();
    let written = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let todo = gs
            .todos
            .get(id)
            .ok_or_else(|| Refusal::new(Code::TodoNotFound, format!("{id} is gone")))?;
        check_completable(ctx, todo, agent, epoch)?;
        let run_id = ids::derive_id(
            "run_",
            &[
                goal,
                "writeback",
                agent.unwrap_or(""),
                &ctx.now.to_string(),
                &nonce,
            ],
        );
        let mut run = Run::new(run_id.clone(), RunKind::Writeback, goal, agent, ctx.now);
        run.todo = Some(id.to_owned());
        run.epoch = todo.claim.as_ref().map(|c| c.epoch);
        run.outcome = Some(Outcome::OutcomeGap);
        run.summary = Some(summary.to_owned());
        run.validation = Some(Validation {
            command: v.command.clone(),
            exit_code: v.exit_code,
            extra: Extra::new(),
        });
        gs.add_run(run);
        let message = Message::new(
            "writeback",
            format!(
                "writeback {run_id} on {id}{}: validation failed (exit {})",
                by(agent),
                v.exit_code
            ),
        )
        .trailer("Loopx-Todo", id.to_owned())
        .trailer("Loopx-Run", run_id);
        Ok(((), message))
    })?;
    Ok(written.commit)
}
