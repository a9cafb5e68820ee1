//! `todo add | list | show`.

use serde::{Deserialize, Serialize};

use crate::model::gate::GateAction;
use crate::model::{ids, Priority, Refusal, Role, State, Todo, TodoClass, TodoStatus};
use crate::ops::args::enum_arg;
use crate::ops::non_empty;
use crate::session::Context;
use crate::store::{Message, Oid, Write};
use crate::Result;

/// `todo add`, and the `add_todo` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AddArgs {
    /// What is to be done.
    pub text: String,
    /// agent (default) or user.
    #[arg(long, value_parser = enum_arg::<Role>, default_value = "agent")]
    pub role: Option<Role>,
    /// advancement_task (agent default), continuous_monitor, blocker;
    /// user todos need user_gate or user_action.
    #[arg(long, value_parser = enum_arg::<TodoClass>)]
    pub class: Option<TodoClass>,
    /// P0 (first) … P4 (last). Default: P2, and P0 for a blocker.
    #[arg(long, value_parser = enum_arg::<Priority>)]
    pub priority: Option<Priority>,
    /// A capability the agent must have (repeatable).
    #[arg(long = "requires-capability", value_name = "CAP")]
    #[serde(default)]
    pub requires_capabilities: Vec<String>,
    /// An agent that must not take it (repeatable).
    #[arg(long = "exclude-agent", value_name = "AGENT")]
    #[serde(default)]
    pub exclude_agents: Vec<String>,
    /// Not ready until this holds: todo_done:<todo-id>.
    #[arg(long, value_name = "COND")]
    pub resume_when: Option<String>,
    /// A command (run without a shell) that must exit 0 before an agent's
    /// `done` is accepted. It runs only for an agent, never for the person:
    /// their `done` shows it and leaves it to them.
    #[arg(long, value_name = "CMD")]
    pub validate: Option<String>,
    /// How often the monitor is due, at least 1m (e.g. 15m, 2h, 1d).
    /// Required with --class continuous_monitor; it is first due one
    /// cadence from now, then one cadence after each `todo poll`.
    #[arg(long, value_name = "DURATION")]
    pub every: Option<String>,
    /// When the monitor ends: an RFC 3339 time or a duration from now
    /// (e.g. 8h); from then on it is not selected again.
    #[arg(long, value_name = "TIME|DURATION")]
    pub until: Option<String>,
    /// Its turns only observe and report (poll, note what changed): the
    /// agent is told not to change code.
    #[arg(long)]
    #[serde(default)]
    pub watch_only: bool,
}

#[derive(Debug, Serialize)]
pub struct TodoReport {
    pub todo: Todo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

fn check_class(role: Role, class: Option<TodoClass>) -> Result<TodoClass> {
    match (role, class) {
        (Role::User, None) => Err(Refusal::invalid_input(
            "a user todo needs an explicit class: --class user_gate (a blocking decision) or --class user_action (a reminder)",
        )
        .into()),
        (Role::Agent, None) => Ok(TodoClass::AdvancementTask),
        (role, Some(class)) if class.role() != role => Err(Refusal::invalid_input(format!(
            "class {} is not a class of {} todos",
            super::snake(&class),
            super::snake(&role)
        ))
        .into()),
        (_, Some(class)) => Ok(class),
    }
}

/// Resolves `todo_done:<prefix>` against the goal's todos.
pub fn resolve_resume_when(state: &State, goal: &str, text: &str) -> Result<String> {
    let Some(query) = text.strip_prefix("todo_done:") else {
        return Err(Refusal::invalid_input(format!(
            "--resume-when `{text}` is not understood: use todo_done:<todo-id>"
        ))
        .into());
    };
    let gs = &state.goals[goal];
    let id = super::resolve_todo(gs, query)?;
    Ok(format!("todo_done:{id}"))
}

pub fn add(ctx: &Context, args: &AddArgs) -> Result<TodoReport> {
    let text = non_empty("todo text", &args.text)?;
    let (role, priority) = (
        args.role.unwrap_or(Role::Agent),
        // A blocker is P0 unless told otherwise, as LoopX stores it.
        args.priority
            .unwrap_or(if args.class == Some(TodoClass::Blocker) {
                Priority::P0
            } else {
                Priority::P2
            }),
    );
    let class = check_class(role, args.class)?;
    for cap in &args.requires_capabilities {
        ids::check_name("capability", cap)?;
    }
    for agent in &args.exclude_agents {
        ids::check_name("agent", agent)?;
    }
    if let Some(v) = &args.validate {
        crate::supervise::validate::check_command(v)?;
    }
    let monitor = crate::ops::monitor::for_new_todo(
        class,
        args.every.as_deref(),
        args.until.as_deref(),
        args.watch_only,
        ctx.now,
    )?;
    let agent = ctx.agent().map(str::to_owned);
    let now = ctx.now;
    let nonce = ids::nonce();
    ctx.adopt_remote_state()?;
    let done = crate::session::transact(ctx, |state: &mut Option<State>| {
        let state = crate::session::existing(state)?;
        let goal = ctx.goal(state)?.goal.id.clone();
        let resume_when = args
            .resume_when
            .as_deref()
            .map(|r| resolve_resume_when(state, &goal, r))
            .transpose()?;
        let id = ids::new_todo_id(&goal, &text, agent.as_deref(), now, &nonce);
        let mut todo = Todo::new(
            id.clone(),
            &goal,
            &text,
            role,
            class,
            priority,
            agent.as_deref(),
            now,
        );
        todo.requires_capabilities = args.requires_capabilities.clone();
        todo.exclude_agents = args.exclude_agents.clone();
        todo.resume_when = resume_when;
        todo.validate = args.validate.clone();
        todo.monitor = monitor.clone();
        let gs = state.goals.get_mut(&goal).expect("goal resolved above");
        let todo = gs.add_todo(todo);
        let mut message = Message::new(
            "todo add",
            format!("todo add {id}: {}", ids::headline(&text, 60)),
        )
        .trailer("Loopx-Goal", goal)
        .trailer("Loopx-Todo", id);
        if let Some(a) = &agent {
            message = message.trailer("Loopx-Agent", a.clone());
        }
        Ok::<_, crate::Error>(Write::commit(todo, message))
    })?;
    Ok(TodoReport {
        todo: done.value,
        commit: done.commit,
    })
}

#[derive(Debug, Default, Clone)]
pub struct ListArgs {
    pub role: Option<Role>,
    pub status: Option<TodoStatus>,
    pub mine: bool,
    pub all: bool,
}

#[derive(Debug, Serialize)]
pub struct ListReport {
    pub todos: Vec<Todo>,
}

pub fn list(ctx: &Context, args: &ListArgs) -> Result<ListReport> {
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    let me = if args.mine {
        Some(ctx.require_agent()?)
    } else {
        None
    };
    let mut todos: Vec<Todo> = gs
        .todos
        .values()
        .filter(|t| args.role.is_none_or(|r| t.role == r))
        .filter(|t| match args.status {
            Some(s) => t.status == s,
            None => args.all || !t.status.is_terminal(),
        })
        .filter(|t| me.is_none_or(|me| t.live_claim(ctx.now).is_some_and(|c| c.agent == me)))
        .cloned()
        .collect();
    todos.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    Ok(ListReport { todos })
}

pub fn show(ctx: &Context, query: &str) -> Result<TodoReport> {
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    let id = super::resolve_todo(gs, query)?;
    let mut todo = gs.todos[&id].clone();
    todo.notes = gs.notes(&todo);
    Ok(TodoReport { todo, commit: None })
}

/// `todo update`, and the `update_todo` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateArgs {
    /// The todo: its id or a unique prefix of one.
    #[arg(value_name = "ID")]
    pub todo: String,
    /// open, blocked or deferred (use `todo done` to complete).
    #[arg(long, value_parser = enum_arg::<TodoStatus>)]
    pub status: Option<TodoStatus>,
    /// Add a note to the todo (kept with its time and author).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Not ready until this holds: todo_done:<todo-id>.
    #[arg(long, value_name = "COND")]
    pub resume_when: Option<String>,
    /// P0 (first) … P4 (last).
    #[arg(long, value_parser = enum_arg::<Priority>)]
    pub priority: Option<Priority>,
    /// Replace what is to be done.
    #[arg(long)]
    pub text: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    pub epoch: Option<u64>,
}

/// `todo update ID [--status --note --resume-when --priority --text]`.
pub fn update(ctx: &Context, args: &UpdateArgs) -> Result<TodoReport> {
    if args.status == Some(TodoStatus::Done) {
        return Err(Refusal::invalid_input("use `git loopx todo done` to complete a todo").into());
    }
    let note = args
        .note
        .as_deref()
        .map(|n| non_empty("--note", n))
        .transpose()?;
    let text = args
        .text
        .as_deref()
        .map(|t| non_empty("--text", t))
        .transpose()?;
    if args.status.is_none()
        && note.is_none()
        && args.resume_when.is_none()
        && args.priority.is_none()
        && text.is_none()
    {
        return Err(Refusal::invalid_input(
            "nothing to update: pass --status, --note, --resume-when, --priority or --text",
        )
        .into());
    }
    let agent = ctx.agent().map(str::to_owned);
    let done = crate::session::mutate(ctx, |state, goal| {
        let resume = args
            .resume_when
            .as_deref()
            .map(|r| resolve_resume_when(state, goal, r))
            .transpose()?;
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = super::resolve_todo(gs, &args.todo)?;
        if let Some(a) = agent.as_deref() {
            super::gate::check_held(ctx, state, goal, &id, a, GateAction::Update)?;
        }
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let todo = gs.todos.get_mut(&id).expect("resolved");
        let action = if args.status == Some(TodoStatus::Deferred) {
            GateAction::Defer
        } else {
            GateAction::Update
        };
        crate::model::gate::check_reserved(todo, ctx.gate_actor().as_deref(), action)?;
        if todo.status == TodoStatus::Done {
            return Err(
                Refusal::invalid_input(format!("{id} is done: add a new todo instead")).into(),
            );
        }
        match &agent {
            Some(a) => {
                let expected = crate::session::local::expected_epoch(ctx, a, &id, args.epoch);
                crate::model::lease::check_writer(todo, a, expected, ctx.now)?;
            }
            None => {
                if let Some(c) = todo.live_claim(ctx.now) {
                    return Err(Refusal::new(
                        crate::model::Code::NotClaimHolder,
                        format!("{id} is claimed by {} until {}", c.agent, c.expires_at),
                    )
                    .into());
                }
            }
        }
        let mut changed = Vec::new();
        if let Some(s) = args.status {
            todo.status = s;
            changed.push(format!("status {}", crate::model::status_name(s)));
        }
        if let Some(r) = &resume {
            todo.resume_when = Some(r.clone());
            changed.push(format!("resume_when {r}"));
        }
        if let Some(p) = args.priority {
            todo.priority = p;
            changed.push(format!("priority {p:?}"));
        }
        if let Some(t) = &text {
            todo.text = t.clone();
            changed.push("text".to_owned());
        }
        if let Some(n) = &note {
            super::add_note(todo, ctx.now, agent.as_deref(), n)?;
            changed.push("note".to_owned());
        }
        super::touch(todo, ctx.now);
        let message = Message::new(
            "todo update",
            format!("todo update {id}: {}", changed.join(", ")),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok((todo.clone(), message))
    })?;
    Ok(TodoReport {
        todo: done.value,
        commit: done.commit,
    })
}
