//! Use cases, one module per command (or family of commands). Each takes
//! a [`Context`] (a store, the time, who is asking) and returns a report
//! struct; none prints. The CLI, the MCP server and the dashboard render
//! the same reports. What they share below them: the session and its
//! write rules (`session`), the replication protocol (`replicate`), the
//! installer (`install`), the importer (`import`) and the supervision of
//! child processes (`supervise`).

pub mod agent;
pub mod answer;
pub mod args;
pub mod check;
pub mod check_state;
#[cfg(feature = "serve")]
pub mod dashboard;
pub mod diff;
pub mod doctor;
pub mod done;
pub mod gate;
pub mod goal;
pub mod hook;
pub mod hook_git;
pub mod hooks;
#[cfg(feature = "import-loopx")]
pub mod import;
pub mod init;
pub mod install_man;
pub mod lease;
pub mod log;
pub mod missing;
pub mod monitor;
pub mod notify;
pub mod pr;
pub mod prompt;
pub mod quota;
pub mod redact;
pub mod report;
pub mod repos;
pub mod review;
pub mod revision;
pub mod run;
pub mod should_run;
pub mod signers;
pub mod status;
pub mod sync;
pub mod todo;
pub mod writeback;

use crate::model::{self, ids, GoalState, Refusal, State, Timestamp};
use crate::Result;

/// Text that must not be empty (a goal objective, a todo's text), and no
/// longer than one state file keeps ([`model::limits`]).
pub fn non_empty(what: &str, text: &str) -> Result<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(Refusal::invalid_input(format!("{what} is empty")).into());
    }
    model::limits::check_text(what, trimmed)?;
    Ok(trimmed.to_owned())
}

/// The serde (snake_case) name of an enum value, for messages.
pub fn snake<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::from("?"),
    }
}

/// Resolves a todo id or unique prefix within a goal.
pub fn resolve_todo(gs: &GoalState, query: &str) -> Result<String> {
    let hex = query.strip_prefix("todo_").unwrap_or(query);
    if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(Refusal::invalid_input(format!(
            "`{query}` is not a todo id or a prefix of one"
        ))
        .into());
    }
    Ok(ids::resolve_prefix("todo", query, gs.todos.keys())?.to_owned())
}

/// Appends a run record to goal `goal` (the ledger is append-only).
/// Appends `run` to the goal's records, numbering it (its `seq`, set on
/// `run` too) after the goal's last one.
pub fn append_run(state: &mut State, goal: &str, run: &mut model::Run) {
    let gs = state
        .goals
        .get_mut(goal)
        .expect("the transaction's goal exists");
    run.seq = Some(gs.next_run_seq());
    gs.runs.insert(run.id.clone(), run.clone());
}

/// Marks an entity changed: `rev` + 1, `updated_at` = now.
pub fn touch(todo: &mut model::Todo, now: Timestamp) {
    todo.rev = todo.rev.saturating_add(1);
    todo.updated_at = now;
}

/// Appends a note to a todo; refused when the text is too long, or when the
/// todo's file would grow past what a todo keeps ([`model::limits`]).
pub fn add_note(
    todo: &mut model::Todo,
    now: Timestamp,
    agent: Option<&str>,
    text: &str,
) -> Result<()> {
    model::limits::check_text("the note", text)?;
    todo.notes.push(model::Note {
        at: now,
        agent: agent.map(str::to_owned),
        text: text.to_owned(),
        extra: model::Extra::new(),
    });
    let size = crate::codec::encode(todo).len();
    if let Err(refused) = model::limits::check_noted_size(todo, size) {
        todo.notes.pop();
        return Err(refused.into());
    }
    Ok(())
}
