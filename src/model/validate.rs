//! Every rule a state commit must keep, checked all at once (`doctor --rev`).
//!
//! The loader (`codec::decode_state`) stops at the first problem, because a
//! command cannot act on a broken state; a reviewer of a hand-made commit
//! wants every problem at once. This module takes the entities a commit's
//! files decoded to, each with its path, and returns every problem it finds
//! with the file and the field. It is pure: the file bytes, the layout and
//! line numbers are the codec's (`codec::inspect`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{
    ids, lease, Agent, Goal, Meta, Role, Run, RunKind, Todo, TodoClass, TodoStatus, FORMAT,
};

/// How bad a problem is. Errors make `doctor --rev` fail; warnings are
/// shown but do not (the loader and every command accept them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// One problem of one file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub severity: Severity,
    /// The file, relative to the root of the state tree.
    pub path: String,
    /// 1-based line of the field (or of the parse error), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// The field, as a dotted path (`claim.epoch`, `successors[1]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
}

impl Problem {
    pub fn error(path: &str, field: Option<&str>, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Error,
            path: path.to_owned(),
            line: None,
            column: None,
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }

    pub fn warning(path: &str, field: Option<&str>, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(path, field, message)
        }
    }
}

/// The entities a state tree's files decoded to, each with its file. Files
/// that did not decode are not here (their problem is already reported).
#[derive(Debug, Default)]
pub struct Decoded {
    pub meta: Option<(String, Meta)>,
    pub agents: Vec<(String, Agent)>,
    pub goals: Vec<(String, Goal)>,
    pub todos: Vec<(String, Todo)>,
    pub runs: Vec<(String, Run)>,
}

/// The rules of one todo's own fields that every load enforces too
/// (`State::check`), in the order it reports them: `(field, message)`.
pub fn todo_shape(todo: &Todo) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if todo.class.role() != todo.role {
        out.push((
            "class",
            format!(
                "class {:?} does not belong to role {:?}",
                todo.class, todo.role
            ),
        ));
    }
    if todo.text.trim().is_empty() {
        out.push(("text", "text is empty".into()));
    }
    if let Some(claim) = &todo.claim {
        if todo.role == Role::User {
            out.push(("claim", "a user todo cannot be claimed".into()));
        }
        if claim.epoch == 0 || claim.epoch < todo.last_epoch {
            out.push((
                "claim.epoch",
                format!(
                    "claim epoch {} is below last_epoch {}",
                    claim.epoch, todo.last_epoch
                ),
            ));
        }
        if claim.expires_at < claim.acquired_at {
            out.push((
                "claim.expires_at",
                "claim expires before it was acquired".into(),
            ));
        }
    }
    out
}

/// Every problem of `d` beyond decoding and layout: ids that appear twice,
/// references to what does not exist, claims, gates and the format.
pub fn check(d: &Decoded) -> Vec<Problem> {
    let mut out = Vec::new();
    let index = Index::new(d);
    if let Some((path, meta)) = &d.meta {
        if meta.format != FORMAT {
            out.push(Problem::error(
                path,
                Some("format"),
                format!("format {} is not {FORMAT}", meta.format),
            ));
        }
        if !index.goals.contains(meta.default_goal.as_str()) {
            out.push(Problem::error(
                path,
                Some("default_goal"),
                format!("default_goal `{}` has no goal.yaml", meta.default_goal),
            ));
        }
    }
    duplicates(&mut out, "agent", d.agents.iter().map(|(p, a)| (p, &a.id)));
    duplicates(&mut out, "goal", d.goals.iter().map(|(p, g)| (p, &g.id)));
    duplicates(&mut out, "todo", d.todos.iter().map(|(p, t)| (p, &t.id)));
    duplicates(&mut out, "run", d.runs.iter().map(|(p, r)| (p, &r.id)));
    for (path, todo) in &d.todos {
        todo_rules(&mut out, path, todo, &index);
    }
    for (path, run) in &d.runs {
        run_rules(&mut out, path, run, &index);
    }
    out
}

/// The ids a state's files hold, that references are checked against.
struct Index<'a> {
    goals: BTreeSet<&'a str>,
    agents: BTreeSet<&'a str>,
    todos: BTreeMap<&'a str, &'a Todo>,
    runs: BTreeMap<&'a str, &'a Run>,
}

impl<'a> Index<'a> {
    fn new(d: &'a Decoded) -> Self {
        Index {
            goals: d.goals.iter().map(|(_, g)| g.id.as_str()).collect(),
            agents: d.agents.iter().map(|(_, a)| a.id.as_str()).collect(),
            todos: d.todos.iter().map(|(_, t)| (t.id.as_str(), t)).collect(),
            runs: d.runs.iter().map(|(_, r)| (r.id.as_str(), r)).collect(),
        }
    }

    /// `id`, in `field` of an entity of goal `owner`, must name a todo of
    /// that goal.
    fn todo_ref(&self, out: &mut Vec<Problem>, path: &str, field: &str, owner: &str, id: &str) {
        match self.todos.get(id) {
            None => out.push(Problem::error(
                path,
                Some(field),
                format!("`{id}` names no todo of this state"),
            )),
            Some(t) if t.goal != owner => out.push(Problem::error(
                path,
                Some(field),
                format!("`{id}` is a todo of goal `{}`, not of `{owner}`", t.goal),
            )),
            Some(_) => {}
        }
    }

    /// `id`, in `field`, must name a run record of `kind`.
    fn run_ref(&self, out: &mut Vec<Problem>, path: &str, field: &str, id: &str, kind: RunKind) {
        match self.runs.get(id) {
            None => out.push(Problem::error(
                path,
                Some(field),
                format!("`{id}` names no run of this state"),
            )),
            Some(r) if r.kind != kind => out.push(Problem::error(
                path,
                Some(field),
                format!(
                    "`{id}` is a {} record, not a {}",
                    crate::model::entity_name(&r.kind),
                    crate::model::entity_name(&kind)
                ),
            )),
            Some(_) => {}
        }
    }
}

/// A todo's goal, shape, claim and gate, and the todos it names.
fn todo_rules(out: &mut Vec<Problem>, path: &str, todo: &Todo, index: &Index<'_>) {
    if !index.goals.contains(todo.goal.as_str()) {
        out.push(Problem::error(
            path,
            Some("goal"),
            format!("goal `{}` has no goal.yaml", todo.goal),
        ));
    }
    for (field, message) in todo_shape(todo) {
        out.push(Problem::error(path, Some(field), message));
    }
    claim_rules(out, path, todo);
    gate_rules(out, path, todo, &index.agents);
    if let Some(id) = &todo.unblocks {
        index.todo_ref(out, path, "unblocks", &todo.goal, id);
    }
    if let Some(cond) = &todo.resume_when {
        match cond.strip_prefix("todo_done:") {
            Some(id) => index.todo_ref(out, path, "resume_when", &todo.goal, id),
            None => out.push(Problem::error(
                path,
                Some("resume_when"),
                format!("`{cond}` is not understood: use todo_done:<todo-id>"),
            )),
        }
    }
    for (i, id) in todo.successors.iter().enumerate() {
        index.todo_ref(out, path, &format!("successors[{i}]"), &todo.goal, id);
    }
}

/// A run's goal and todo, and what its kind must name: a spend its
/// writeback and slots, a void its spend, a moved note its todo and text.
fn run_rules(out: &mut Vec<Problem>, path: &str, run: &Run, index: &Index<'_>) {
    if !index.goals.contains(run.goal.as_str()) {
        out.push(Problem::error(
            path,
            Some("goal"),
            format!("goal `{}` has no goal.yaml", run.goal),
        ));
    }
    if let Some(id) = &run.todo {
        index.todo_ref(out, path, "todo", &run.goal, id);
    }
    match run.kind {
        RunKind::Spend => {
            match &run.writeback {
                Some(id) => index.run_ref(out, path, "writeback", id, RunKind::Writeback),
                None => out.push(Problem::error(
                    path,
                    Some("writeback"),
                    "a spend names the writeback it pays for",
                )),
            }
            if run.slots.is_none_or(|n| n == 0) {
                out.push(Problem::error(
                    path,
                    Some("slots"),
                    "a spend takes at least one slot",
                ));
            }
        }
        RunKind::Void => match &run.spend {
            Some(id) => index.run_ref(out, path, "spend", id, RunKind::Spend),
            None => out.push(Problem::error(
                path,
                Some("spend"),
                "a void names the spend it cancels",
            )),
        },
        RunKind::Note if run.todo.is_none() || run.summary.is_none() => out.push(Problem::error(
            path,
            Some(if run.todo.is_none() {
                "todo"
            } else {
                "summary"
            }),
            "a moved note names its todo and keeps its text in `summary`",
        )),
        RunKind::Writeback | RunKind::Turn | RunKind::Note => {}
    }
}

/// Each file after the first that holds an id already seen.
fn duplicates<'a>(
    out: &mut Vec<Problem>,
    kind: &str,
    items: impl Iterator<Item = (&'a String, &'a String)>,
) {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for (path, id) in items {
        match seen.get(id.as_str()) {
            Some(first) => out.push(Problem::error(
                path,
                Some("id"),
                format!("duplicate {kind} id `{id}`: {first} holds it too"),
            )),
            None => {
                seen.insert(id, path);
            }
        }
    }
}

/// A lease is at most 24 hours from when it was acquired or renewed, and a
/// done or deferred todo holds none worth keeping.
fn claim_rules(out: &mut Vec<Problem>, path: &str, todo: &Todo) {
    let Some(claim) = &todo.claim else {
        return;
    };
    if claim.expires_at == claim.acquired_at {
        out.push(Problem::error(
            path,
            Some("claim.expires_at"),
            "the claim expires the moment it was acquired",
        ));
    }
    if claim.expires_at.unix() - claim.acquired_at.unix() > lease::MAX_TTL {
        out.push(Problem::error(
            path,
            Some("claim.expires_at"),
            format!(
                "the claim runs from {} to {}: longer than the 24h a lease may last",
                claim.acquired_at, claim.expires_at
            ),
        ));
    }
    if !ids::is_valid_name(&claim.agent) {
        out.push(Problem::error(
            path,
            Some("claim.agent"),
            format!("`{}` is not a valid agent id", claim.agent),
        ));
    }
}

/// A done gate carries its decision; an open or blocked one has none; only
/// gates have decisions. A gate's `blocks_agent` is an agent id (a warning
/// when that agent is not registered: registration is optional).
fn gate_rules(out: &mut Vec<Problem>, path: &str, todo: &Todo, agents: &BTreeSet<&str>) {
    let gate = todo.class == TodoClass::UserGate;
    if !gate {
        for (field, set) in [
            ("decision", todo.decision.is_some()),
            ("resolved_by", todo.resolved_by.is_some()),
            ("resolved_at", todo.resolved_at.is_some()),
        ] {
            if set {
                out.push(Problem::error(
                    path,
                    Some(field),
                    format!("only a gate (class user_gate) is resolved, this todo has {field}"),
                ));
            }
        }
    } else {
        match (todo.status, todo.decision) {
            (TodoStatus::Done, None) => out.push(Problem::error(
                path,
                Some("status"),
                "a done gate has a decision (approve, reject or cancel): resolve it with `git loopx gate resolve`",
            )),
            (TodoStatus::Open | TodoStatus::Blocked, Some(d)) => out.push(Problem::error(
                path,
                Some("decision"),
                format!(
                    "the gate is {} but has decision {}",
                    crate::model::status_name(todo.status),
                    crate::model::entity_name(&d)
                ),
            )),
            _ => {}
        }
    }
    if let Some(agent) = &todo.blocks_agent {
        if !ids::is_valid_name(agent) {
            out.push(Problem::error(
                path,
                Some("blocks_agent"),
                format!("`{agent}` is not a valid agent id"),
            ));
        } else if !agents.contains(agent.as_str()) {
            out.push(Problem::warning(
                path,
                Some("blocks_agent"),
                format!("agent `{agent}` is not registered (no agents/{agent}.yaml)"),
            ));
        }
    }
}
