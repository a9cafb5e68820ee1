//! Semantic diff of two states: what a reviewer wants to know changed.
//!
//! [`Change`] is what `review` groups; [`semantic`] tells the same kind of
//! change as facts, one per line, for `git loopx diff`.

mod fact;
pub mod semantic;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::model::{GoalState, Run, State, Todo};

/// One change between two states of a goal.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Change {
    TodoAdded {
        id: String,
        text: String,
        class: String,
    },
    TodoRemoved {
        id: String,
        text: String,
    },
    TodoChanged {
        id: String,
        text: String,
        fields: Vec<String>,
        summary: Vec<String>,
    },
    RunAdded {
        id: String,
        kind: String,
        agent: Option<String>,
        summary: Option<String>,
    },
    GoalChanged {
        id: String,
        fields: Vec<String>,
    },
}

fn json(value: &impl Serialize) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    }
}

/// Keys whose values differ, ignoring bookkeeping (`rev`, `updated_at`).
fn changed_fields(old: &impl Serialize, new: &impl Serialize) -> Vec<String> {
    let (a, b) = (json(old), json(new));
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| !matches!(k.as_str(), "rev" | "updated_at"))
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

fn name(value: &impl Serialize) -> String {
    crate::model::entity_name(value)
}

/// Human phrases for the interesting todo changes.
fn todo_summary(old: &Todo, new: &Todo) -> Vec<String> {
    let mut out = Vec::new();
    if old.status != new.status {
        out.push(format!("{} → {}", name(&old.status), name(&new.status)));
    }
    match (&old.claim, &new.claim) {
        (None, Some(c)) => out.push(format!("claimed by {} (epoch {})", c.agent, c.epoch)),
        (Some(c), None) => out.push(format!("released by {}", c.agent)),
        (Some(a), Some(b)) if a.agent != b.agent || a.epoch != b.epoch => out.push(format!(
            "lease {} (epoch {}) → {} (epoch {})",
            a.agent, a.epoch, b.agent, b.epoch
        )),
        (Some(a), Some(b)) if a.expires_at != b.expires_at => {
            out.push(format!("lease renewed until {}", b.expires_at))
        }
        _ => {}
    }
    if old.decision != new.decision {
        if let Some(d) = &new.decision {
            let by = new
                .resolved_by
                .as_deref()
                .map(|p| format!(" by {p}"))
                .unwrap_or_default();
            out.push(format!("decided: {}{by}", name(d)));
        }
    }
    if new.evidence.is_some() && old.evidence != new.evidence {
        out.push(format!(
            "evidence: {}",
            new.evidence.as_deref().unwrap_or("")
        ));
    }
    // Counted as a set: a merge may interleave notes or move some out.
    let added = new.notes.iter().filter(|n| !old.notes.contains(n)).count();
    if added > 0 {
        out.push(format!("{added} note(s) added"));
    }
    out
}

fn run_added(run: &Run) -> Change {
    Change::RunAdded {
        id: run.id.clone(),
        kind: name(&run.kind),
        agent: run.agent.clone(),
        summary: run.summary.clone().or_else(|| run.reason.clone()),
    }
}

/// Changes from `old` (nothing, when `None`) to `new` for one goal.
pub fn diff_goal(old: Option<&GoalState>, new: &GoalState) -> Vec<Change> {
    let mut out = Vec::new();
    match old {
        Some(o) => {
            let fields = changed_fields(&o.goal, &new.goal);
            if !fields.is_empty() {
                out.push(Change::GoalChanged {
                    id: new.goal.id.clone(),
                    fields,
                });
            }
        }
        None => out.push(Change::GoalChanged {
            id: new.goal.id.clone(),
            fields: vec!["created".into()],
        }),
    }
    let empty = GoalState::new(new.goal.clone());
    let o = old.unwrap_or(&empty);
    // In the order the todos were added, not by id.
    let mut todos: Vec<(&str, &Todo)> = new.todos.iter().collect();
    todos.sort_by(|(_, a), (_, b)| a.added_key().cmp(&b.added_key()));
    for (id, todo) in todos {
        match o.todos.get(id) {
            None => out.push(Change::TodoAdded {
                id: id.to_owned(),
                text: todo.text.clone(),
                class: name(&todo.class),
            }),
            Some(prev) => {
                let fields = changed_fields(prev, todo);
                if !fields.is_empty() {
                    out.push(Change::TodoChanged {
                        id: id.to_owned(),
                        text: todo.text.clone(),
                        summary: todo_summary(prev, todo),
                        fields,
                    });
                }
            }
        }
    }
    for (id, todo) in o.todos.iter() {
        if !new.todos.contains_key(id) {
            out.push(Change::TodoRemoved {
                id: id.to_owned(),
                text: todo.text.clone(),
            });
        }
    }
    let mut runs: Vec<&Run> = new
        .runs
        .values()
        .filter(|r| !o.runs.contains_key(&r.id))
        .collect();
    runs.sort_by(|a, b| a.added_key().cmp(&b.added_key()));
    out.extend(runs.into_iter().map(run_added));
    out
}

/// Changes of the goal `goal` between two states.
pub fn diff(old: Option<&State>, new: &State, goal: &str) -> Vec<Change> {
    match new.goals.get(goal) {
        Some(gs) => diff_goal(old.and_then(|s| s.goals.get(goal)), gs),
        None => Vec::new(),
    }
}
