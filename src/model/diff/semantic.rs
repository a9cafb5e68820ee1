//! The facts of a state change, for `git loopx diff`: one fact per thing a
//! reviewer wants to know ("todo … claimed by agent-a (epoch 2)", "gate …
//! resolved: approve by …", "writeback … on …"), not the lines that moved.
//!
//! Facts are derived from two whole states only (no commit messages), so a
//! range of many commits reads as what it left behind: a todo claimed and
//! released inside the range shows as neither. Runs are append-only
//! records, so every run in the newer state and not in the older one is a
//! fact of its own. Facts come out in time order (the run's time, the
//! note's, the claim's, else the todo's last update), ties in the order
//! they were found, so a range reads like a log.

use serde::Serialize;
use serde_json::Value;

pub use super::fact::{Fact, Validated, What};
use crate::model::{entity_name, GoalState, Run, RunKind, State, Timestamp, Todo, TodoStatus};

/// The facts from `old` (nothing, when `None`: a root commit) to `new`,
/// for the goal `only`, or every goal and the state-wide files when `None`.
pub fn facts(old: Option<&State>, new: &State, only: Option<&str>) -> Vec<Fact> {
    let mut out = Vec::new();
    if only.is_none() {
        state_wide(old, new, &mut out);
    }
    let no_goals = std::collections::BTreeMap::new();
    let old_goals = old.map_or(&no_goals, |o| &o.goals);
    let ids: std::collections::BTreeSet<&String> =
        new.goals.keys().chain(old_goals.keys()).collect();
    for id in ids {
        if only.is_some_and(|g| g != id) {
            continue;
        }
        let mut found = Vec::new();
        goal_facts(old_goals.get(id), new.goals.get(id), &mut found);
        out.extend(found.into_iter().map(|(at, what)| Fact {
            goal: Some(id.clone()),
            what,
            at,
        }));
    }
    // Stable: ties keep the order found (goal, todos, runs).
    out.sort_by_key(|f| f.at);
    out
}

type Found = Vec<(Option<Timestamp>, What)>;

fn state_wide(old: Option<&State>, new: &State, out: &mut Vec<Fact>) {
    let mut push = |what| {
        out.push(Fact {
            goal: None,
            what,
            at: None,
        })
    };
    if let Some(o) = old {
        for (field, old, new) in field_changes(&o.meta, &new.meta, &[]) {
            push(What::MetaField { field, old, new });
        }
    }
    for (id, agent) in &new.agents {
        match old.and_then(|o| o.agents.get(id)) {
            None => push(What::AgentAdded {
                agent: id.clone(),
                runtime: agent.runtime.clone(),
            }),
            Some(prev) => {
                for (field, old, new) in field_changes(prev, agent, &["rev", "updated_at"]) {
                    push(What::AgentField {
                        agent: id.clone(),
                        field,
                        old,
                        new,
                    });
                }
            }
        }
    }
    for id in old.into_iter().flat_map(|o| o.agents.keys()) {
        if !new.agents.contains_key(id) {
            push(What::AgentRemoved { agent: id.clone() });
        }
    }
}

fn goal_facts(old: Option<&GoalState>, new: Option<&GoalState>, out: &mut Found) {
    match (old, new) {
        (None, Some(n)) => out.push((
            Some(n.goal.created_at),
            What::GoalAdded {
                objective: n.goal.objective.clone(),
            },
        )),
        (Some(o), None) => out.push((
            None,
            What::GoalRemoved {
                objective: o.goal.objective.clone(),
            },
        )),
        (Some(o), Some(n)) => {
            let at = Some(n.goal.updated_at);
            if o.goal.next_action != n.goal.next_action {
                out.push((
                    at,
                    What::NextAction {
                        old: o.goal.next_action.clone(),
                        new: n.goal.next_action.clone(),
                    },
                ));
            }
            // What an archive took out is told once, by `archives_added`.
            let skip = ["rev", "updated_at", "next_action", "archive"];
            for (field, old, new) in field_changes(&o.goal, &n.goal, &skip) {
                out.push((at, What::GoalField { field, old, new }));
            }
        }
        (None, None) => {}
    }
    let Some(new) = new else { return };
    let empty = GoalState::new(new.goal.clone());
    let old = old.unwrap_or(&empty);
    todos_changed(old, new, out);
    runs_added(old, new, out);
    let archived_through = archives_added(old, new, out);
    runs_removed_or_changed(old, new, archived_through, out);
}

/// Each todo added, changed or removed.
fn todos_changed(old: &GoalState, new: &GoalState, out: &mut Found) {
    for (id, todo) in new.todos.iter() {
        if let (Some(a), Some(b)) = (old.todos.encoded(id), new.todos.encoded(id)) {
            if a == b {
                continue;
            }
        }
        match old.todos.get(id) {
            None => todo_added(todo, out),
            Some(prev) if prev == todo => {}
            Some(prev) => todo_changed(prev, todo, out),
        }
    }
    for (id, todo) in old.todos.iter() {
        if !new.todos.contains_key(id) {
            out.push((
                None,
                What::TodoRemoved {
                    todo: id.to_owned(),
                    text: todo.text.clone(),
                },
            ));
        }
    }
}

/// The runs `new` holds and `old` does not, in the order they were added.
fn runs_added(old: &GoalState, new: &GoalState, out: &mut Found) {
    // A note moved out of its todo's file is news only if the todo did
    // not already hold it.
    let was_noted = |r: &Run| {
        r.kind == RunKind::Note
            && r.todo
                .as_deref()
                .and_then(|t| old.todos.get(t))
                .is_some_and(|t| {
                    t.notes.iter().any(|n| {
                        n.at == r.at && n.agent == r.agent && Some(&n.text) == r.summary.as_ref()
                    })
                })
    };
    let mut runs: Vec<&Run> = new
        .runs
        .values()
        .filter(|r| !old.runs.contains_key(&r.id) && !was_noted(r))
        .collect();
    runs.sort_by(|a, b| a.added_key().cmp(&b.added_key()));
    out.extend(runs.into_iter().map(|r| (Some(r.at), run_added(r))));
}

/// Runs that left for an archive new here are told as one line each; the
/// latest time an archive took runs through, if there is a new one.
fn archives_added(old: &GoalState, new: &GoalState, out: &mut Found) -> Option<Timestamp> {
    let archives: Vec<&crate::model::Archived> = new
        .goal
        .archive
        .iter()
        .filter(|a| !old.goal.archive.contains(a))
        .collect();
    for a in &archives {
        out.push((
            Some(new.goal.updated_at),
            What::RunsArchived {
                through: a.through.to_string(),
                runs: a.runs,
                commit: a.commit.clone(),
            },
        ));
    }
    archives.iter().map(|a| a.through).max()
}

/// The runs of `old` that `new` lost or changed; one an archive new here
/// took (dated before `archived_through`) is told by its archive.
fn runs_removed_or_changed(
    old: &GoalState,
    new: &GoalState,
    archived_through: Option<Timestamp>,
    out: &mut Found,
) {
    for (id, run) in old.runs.iter() {
        match new.runs.get(id) {
            None if archived_through.is_some_and(|t| run.at < t) => {}
            None => out.push((
                None,
                What::RunRemoved {
                    run: id.to_owned(),
                    run_kind: entity_name(&run.kind),
                },
            )),
            Some(now) if now != run => out.push((
                None,
                What::RunChanged {
                    run: id.to_owned(),
                    fields: field_changes(run, now, &[])
                        .into_iter()
                        .map(|(f, _, _)| f)
                        .collect(),
                },
            )),
            Some(_) => {}
        }
    }
}

fn todo_added(todo: &Todo, out: &mut Found) {
    let at = Some(todo.created_at);
    if todo.is_gate() {
        out.push((
            at,
            What::GateOpened {
                gate: todo.id.clone(),
                question: todo.text.clone(),
                unblocks: todo.unblocks.clone(),
                blocks_agent: todo.blocks_agent.clone(),
            },
        ));
    } else {
        out.push((
            at,
            What::TodoAdded {
                todo: todo.id.clone(),
                text: todo.text.clone(),
                class: entity_name(&todo.class),
                priority: entity_name(&todo.priority),
                by: todo.created_by.clone(),
            },
        ));
    }
    // A todo added with a lease (a successor handed to an agent), already
    // done, or with notes: the rest reads as changes from a bare todo.
    let mut bare = todo.clone();
    bare.claim = None;
    bare.notes.clear();
    bare.status = TodoStatus::Open;
    bare.evidence = None;
    bare.decision = None;
    bare.resolved_by = None;
    bare.resolved_at = None;
    bare.last_epoch = 0;
    if bare != *todo {
        todo_changed(&bare, todo, out);
    }
}

/// The fields a todo's own facts already tell.
const TOLD: &[&str] = &[
    "rev",
    "updated_at",
    "claim",
    "last_epoch",
    "notes",
    "decision",
    "resolved_by",
    "resolved_at",
];

fn todo_changed(old: &Todo, new: &Todo, out: &mut Found) {
    let id = new.id.clone();
    let at = Some(new.updated_at);
    // Notes first: a handoff is told by its note.
    let notes = notes_added(old, new, out);
    let finished = new.status == TodoStatus::Done && old.status != TodoStatus::Done;
    lease_changed(old, new, &notes, finished, out);
    let resolved = new.is_gate() && new.decision.is_some() && old.decision != new.decision;
    let mut told: Vec<&str> = TOLD.to_vec();
    if notes.handoff_told {
        told.push("handoff");
    }
    if resolved || finished {
        told.push("status");
    }
    if finished && !new.is_gate() {
        told.push("evidence");
    }
    for (field, o, n) in field_changes(old, new, &told) {
        out.push((
            at,
            What::Field {
                todo: id.clone(),
                field,
                old: o,
                new: n,
            },
        ));
    }
    if resolved {
        out.push((
            new.resolved_at.or(at),
            What::GateResolved {
                gate: id.clone(),
                decision: new.decision.as_ref().map(entity_name),
                by: new.resolved_by.clone(),
                at: new.resolved_at,
            },
        ));
    } else if finished {
        out.push((
            at,
            What::Done {
                todo: id,
                evidence: new.evidence.clone(),
            },
        ));
    }
}

/// What the notes `new` adds tell, handoffs apart.
struct NotesTold {
    /// The agent a handoff note gave the todo's lease to.
    handed_to: Option<String>,
    /// Whether the latest handoff is told by its note (with its packet).
    handoff_told: bool,
}

/// The notes `new` holds and `old` does not, each a fact: a note, or a
/// handoff told by its note.
fn notes_added(old: &Todo, new: &Todo, out: &mut Found) -> NotesTold {
    let id = &new.id;
    // What `new` holds and `old` does not: a merge may interleave notes, and
    // one that moved some out (`limits::shed_notes`) holds fewer.
    let added = new.notes.iter().filter(|n| !old.notes.contains(n));
    let mut handed_to = None;
    let mut handoff_told = false;
    for note in added {
        match note
            .text
            .strip_prefix("handoff to ")
            .and_then(|r| r.split_once(": "))
        {
            Some((to, text)) => {
                let epoch = new
                    .claim
                    .as_ref()
                    .filter(|c| c.agent == to)
                    .map(|c| c.epoch);
                if epoch.is_some() {
                    handed_to = Some(to.to_owned());
                }
                let latest = new
                    .handoff
                    .as_ref()
                    .filter(|h| h.to == to && h.at == note.at);
                handoff_told |= latest.is_some();
                let packet = latest
                    .filter(|h| h.has_packet() && new.handoff != old.handoff)
                    .map(|h| h.describe());
                out.push((
                    Some(note.at),
                    What::Handoff {
                        todo: id.clone(),
                        from: note.agent.clone(),
                        to: to.to_owned(),
                        epoch,
                        note: text.to_owned(),
                        packet,
                    },
                ));
            }
            None => out.push((
                Some(note.at),
                What::Note {
                    todo: id.clone(),
                    agent: note.agent.clone(),
                    text: note.text.clone(),
                },
            )),
        }
    }
    NotesTold {
        handed_to,
        handoff_told,
    }
}

/// How the todo's lease changed: taken, taken over, renewed or released
/// (a lease a handoff gave or a completion ended is told by those).
fn lease_changed(old: &Todo, new: &Todo, told: &NotesTold, finished: bool, out: &mut Found) {
    let (id, at) = (&new.id, Some(new.updated_at));
    match (&old.claim, &new.claim) {
        (_, Some(c)) if told.handed_to.as_deref() == Some(c.agent.as_str()) => {}
        (None, Some(c)) => out.push((Some(c.acquired_at), claim(id, c, None))),
        (Some(a), Some(b)) if a.agent != b.agent => {
            out.push((Some(b.acquired_at), claim(id, b, Some(a.agent.clone()))))
        }
        (Some(a), Some(b)) if a.epoch != b.epoch => {
            out.push((Some(b.acquired_at), claim(id, b, None)))
        }
        (Some(a), Some(b)) if a.expires_at != b.expires_at => out.push((
            at,
            What::Renew {
                todo: id.clone(),
                agent: b.agent.clone(),
                epoch: b.epoch,
                until: b.expires_at,
            },
        )),
        // Completing a todo ends its lease: the completion says it.
        (Some(_), None) if finished => {}
        (Some(c), None) => out.push((
            at,
            What::Release {
                todo: id.clone(),
                agent: c.agent.clone(),
                epoch: c.epoch,
            },
        )),
        _ => {}
    }
}

fn claim(todo: &str, c: &crate::model::Claim, from: Option<String>) -> What {
    What::Claim {
        todo: todo.to_owned(),
        agent: c.agent.clone(),
        epoch: c.epoch,
        from,
    }
}

fn run_added(run: &Run) -> What {
    let id = run.id.clone();
    match run.kind {
        RunKind::Writeback => What::Writeback {
            run: id,
            todo: run.todo.clone(),
            agent: run.agent.clone(),
            epoch: run.epoch,
            outcome: run.outcome.as_ref().map(entity_name),
            summary: run.summary.clone(),
            validation: run.validation.as_ref().map(|v| Validated {
                command: v.command.clone(),
                exit_code: v.exit_code,
            }),
            artifacts: run.artifacts.clone(),
            artifact_urls: run.artifact_urls.clone(),
        },
        RunKind::Spend => What::Spend {
            run: id,
            agent: run.agent.clone(),
            slots: run.slots.unwrap_or(1),
            writeback: run.writeback.clone(),
            turn: run.turn.clone(),
        },
        RunKind::Void => What::Void {
            run: id,
            agent: run.agent.clone(),
            spend: run.spend.clone(),
            reason: run.reason.clone(),
        },
        RunKind::Turn => What::Turn {
            run: id,
            agent: run.agent.clone(),
            turn: run.turn.clone(),
            action: run.reason.clone(),
            todo: run.todo.clone(),
        },
        RunKind::Note => What::Note {
            todo: run.todo.clone().unwrap_or_default(),
            agent: run.agent.clone(),
            text: run.summary.clone().unwrap_or_default(),
        },
    }
}

fn object(value: &impl Serialize) -> serde_json::Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    }
}

/// `(field, old, new)` for every top-level field that differs (an absent
/// field is `null`), but those in `skip`; in field order, then unknown ones.
fn field_changes(
    old: &impl Serialize,
    new: &impl Serialize,
    skip: &[&str],
) -> Vec<(String, Value, Value)> {
    let (a, b) = (object(old), object(new));
    let mut keys: Vec<&String> = b.keys().collect();
    keys.extend(a.keys().filter(|k| !b.contains_key(*k)));
    keys.into_iter()
        .filter(|k| !skip.contains(&k.as_str()))
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            (
                k.clone(),
                a.get(k).cloned().unwrap_or(Value::Null),
                b.get(k).cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}
