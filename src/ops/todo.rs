//! `todo add | list | show`.

use serde::Serialize;

use crate::model::{ids, Extra, Priority, Refusal, Role, State, Todo, TodoClass, TodoStatus};
use crate::ops::{non_empty, Context};
use crate::store::{transact, Message, Oid, Write};
use crate::Result;

/// What `todo add` needs; the CLI fills it from flags.
#[derive(Debug, Clone)]
pub struct AddArgs {
    pub text: String,
    pub role: Role,
    pub class: Option<TodoClass>,
    pub priority: Priority,
    pub requires_capabilities: Vec<String>,
    pub exclude_agents: Vec<String>,
    pub resume_when: Option<String>,
    pub validate: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TodoReport {
    pub todo: Todo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// A random value for id derivation, so two peers adding the same text at
/// the same second still get different ids.
pub fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// First line of `text`, cut to `max` characters, for commit subjects.
pub fn headline(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
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
    let id = ids::resolve_prefix("todo", query, gs.todos.keys().map(String::as_str))?;
    Ok(format!("todo_done:{id}"))
}

pub fn add(ctx: &Context, args: &AddArgs) -> Result<TodoReport> {
    let text = non_empty("todo text", &args.text)?;
    let class = check_class(args.role, args.class)?;
    for cap in &args.requires_capabilities {
        ids::check_name("capability", cap)?;
    }
    for agent in &args.exclude_agents {
        ids::check_name("agent", agent)?;
    }
    if let Some(v) = &args.validate {
        if crate::ops::argv(v)?.is_empty() {
            return Err(Refusal::invalid_input("--validate is empty").into());
        }
    }
    let agent = ctx.agent().map(str::to_owned);
    let now = ctx.now;
    let nonce = nonce();
    let done = transact(&ctx.store, now, |state: &mut Option<State>| {
        let state = super::existing(state)?;
        let goal = ctx.goal(state)?.goal.id.clone();
        let resume_when = args
            .resume_when
            .as_deref()
            .map(|r| resolve_resume_when(state, &goal, r))
            .transpose()?;
        let creator = agent.as_deref().unwrap_or("");
        let id = ids::derive_id("todo_", &[&goal, &text, creator, &now.to_string(), &nonce]);
        let todo = Todo {
            id: id.clone(),
            goal: goal.clone(),
            text: text.clone(),
            role: args.role,
            class,
            status: TodoStatus::Open,
            priority: args.priority,
            created_at: now,
            created_by: agent.clone(),
            updated_at: now,
            rev: 1,
            claim: None,
            last_epoch: 0,
            requires_capabilities: args.requires_capabilities.clone(),
            exclude_agents: args.exclude_agents.clone(),
            resume_when,
            validate: args.validate.clone(),
            evidence: None,
            successors: Vec::new(),
            unblocks: None,
            blocks_agent: None,
            global: false,
            decision: None,
            notes: Vec::new(),
            monitor: None,
            extra: Extra::new(),
        };
        let gs = state.goals.get_mut(&goal).expect("goal resolved above");
        gs.todos.insert(id.clone(), todo.clone());
        let mut message = Message::new(
            "todo add",
            format!("todo add {id}: {}", headline(&text, 60)),
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
    let id = ids::resolve_prefix("todo", query, gs.todos.keys().map(String::as_str))?;
    Ok(TodoReport {
        todo: gs.todos[id].clone(),
        commit: None,
    })
}
