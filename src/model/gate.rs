//! Gates are the person's (issue 14): what an acting agent may not do to a
//! gate, as a pure rule the use cases call inside their transaction.
//!
//! An *acting agent* is any identity from `--agent`, `LOOPX_AGENT` or
//! `git config loopx.agent`; a *person* acts with none. An agent may ask a
//! question (`gate add`) and read gates, but it cannot answer one, change
//! one, hold one or record work on one. That includes a note through
//! `todo update --note`: a note is harmless on its own, but the rule is
//! simpler to audit when nothing an agent writes lands in a gate's file.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::model::select::{gate_holds, scope_of, GateScope};
use crate::model::{
    Code, Decision, GoalState, Refusal, Role, Timestamp, Todo, TodoClass, TodoStatus,
};

/// A gate as every command shows it (`status`, `should-run`, `gate list`,
/// `prompt --json`): one shape, so a reader of one knows them all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GateView {
    pub id: String,
    pub question: String,
    /// `global` (it names nothing: all agent work in the goal waits for
    /// it), `agent` (it blocks the agent in `blocks_agent`) or `todo` (it
    /// holds only the todo it `unblocks`).
    pub scope: &'static str,
    /// The todo that waits for the answer, if any.
    pub unblocks: Option<String>,
    /// The one agent it stops, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks_agent: Option<String>,
    pub asked_at: Timestamp,
    /// The git identity of the person who answered it (`name <email>`).
    pub resolved_by: Option<String>,
    pub resolved_at: Option<Timestamp>,
    pub decision: Option<Decision>,
    /// It was resolved, but `gate_signers` is set and the resolving commit
    /// is not signed by a gate signer: still open in effect (`status`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub resolution_not_signed: bool,
    /// The `validate` command written into the gate, exactly: shown to the
    /// person, never run for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validate: Option<String>,
    /// The scope in words for a person (`global`, `blocks A`, `holds T`).
    #[serde(skip)]
    pub scope_label: String,
}

impl GateView {
    pub fn of(gate: &Todo) -> Self {
        let scope = scope_of(gate);
        GateView {
            id: gate.id.clone(),
            question: gate.text.clone(),
            scope: match scope {
                GateScope::Goal => "global",
                GateScope::Agent(_) => "agent",
                GateScope::Todo(_) => "todo",
            },
            unblocks: gate.unblocks.clone(),
            blocks_agent: gate.blocks_agent.clone(),
            asked_at: gate.created_at,
            resolved_by: gate.resolved_by.clone(),
            resolved_at: gate.resolved_at,
            decision: gate.decision,
            resolution_not_signed: false,
            validate: gate.validate.clone(),
            scope_label: scope.label(gate.unblocks.as_deref()),
        }
    }
}

/// What an agent tried to do to a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateAction {
    Resolve,
    Defer,
    Update,
    Claim,
    Renew,
    Release,
    Handoff,
    Complete,
    Writeback,
    Spend,
}

impl GateAction {
    fn verb(self) -> &'static str {
        match self {
            GateAction::Resolve => "resolve",
            GateAction::Defer => "defer",
            GateAction::Update => "update",
            GateAction::Claim => "claim",
            GateAction::Renew => "renew a lease on",
            GateAction::Release => "release",
            GateAction::Handoff => "hand off",
            GateAction::Complete => "complete",
            GateAction::Writeback => "write back on",
            GateAction::Spend => "spend quota on a writeback on",
        }
    }
}

/// Refuses `action` on `todo` when it is a gate and `actor` names who acts
/// without being the person: an agent (its id), or a command inside an
/// agent runtime (see `Context::gate_actor`). The person (`None`) and
/// non-gates pass.
pub fn check_reserved(todo: &Todo, actor: Option<&str>, action: GateAction) -> Result<(), Refusal> {
    match actor {
        Some(actor) if todo.is_gate() => Err(reserved(&todo.id, actor, action)),
        _ => Ok(()),
    }
}

/// The `gate_reserved` refusal for `actor` (an agent id, or words such as
/// `a command inside Claude Code`) doing `action` on gate `id`. Its hint
/// sends the agent to the person; it never says how to act as one.
pub fn reserved(id: &str, actor: &str, action: GateAction) -> Refusal {
    let who = if crate::model::ids::check_name("agent", actor).is_ok() {
        format!("agent {actor}")
    } else {
        actor.to_owned()
    };
    Refusal::new(
        Code::GateReserved,
        format!(
            "{id} is a gate: {who} cannot {} it, only a person answers a gate",
            action.verb()
        ),
    )
    .with_hint(format!(
        "ask the person to answer {id}: say what you need decided in your reply and move on \
         to work the gate does not hold (`git loopx status` lists it under \"Needs you\")"
    ))
}

/// The open gate that holds `todo` for `agent` (SPEC §4 rule 5, as
/// `todo next` and `should-run` read it): a gate of the whole goal, one that
/// blocks `agent` and names no todo, or one that `unblocks` this todo (for
/// `agent`, when it blocks one). A gate in `reopened` counts as open
/// (resolved, but its resolution does not count under `gate_signers`).
/// Only agent todos are held; the first such gate in order is returned.
pub fn holding<'a>(
    gs: &'a GoalState,
    todo: &str,
    agent: &str,
    reopened: &BTreeSet<String>,
) -> Option<&'a Todo> {
    if gs.todos.facts(todo).is_none_or(|t| t.role != Role::Agent) {
        return None;
    }
    gs.todos
        .all_facts()
        .filter(|g| {
            g.class == TodoClass::UserGate
                && (g.status == TodoStatus::Open
                    || (g.status == TodoStatus::Done && reopened.contains(g.id)))
                && gate_holds(g.blocks_agent, g.unblocks, todo, Some(agent))
        })
        .min_by(|a, b| a.order_key().cmp(&b.order_key()))
        .map(|g| &gs.todos[g.id])
}

/// Whether a resolved gate would hold `todo` for `agent` if it were open:
/// only then can a resolution that does not count matter to a write.
pub fn resolved_would_hold(gs: &GoalState, todo: &str, agent: &str) -> bool {
    gs.todos.all_facts().any(|g| {
        g.class == TodoClass::UserGate
            && g.status == TodoStatus::Done
            && gate_holds(g.blocks_agent, g.unblocks, todo, Some(agent))
    })
}

/// The `gate_open` refusal: `agent` may not `action` `todo` while `gate`
/// waits for the person. It names the gate and its question, and sends the
/// agent to other work; it never says how to answer the gate.
pub fn held(todo: &str, gate: &Todo, agent: &str, action: GateAction) -> Refusal {
    let scope = match scope_of(gate) {
        GateScope::Goal => "it holds all agent work in the goal".to_owned(),
        GateScope::Agent(a) if gate.unblocks.as_deref() != Some(todo) => {
            format!("it holds all of agent {a}'s work")
        }
        _ => format!("it holds {todo}"),
    };
    Refusal::new(
        Code::GateOpen,
        format!(
            "gate {} is open (\"{}\"): agent {agent} cannot {} {todo} until the person answers it; {scope}",
            gate.id,
            gate.text,
            action.verb()
        ),
    )
    .with_hint(format!(
        "ask the person to answer {}: say what you need decided in your reply, and meanwhile \
         take work the gate does not hold (`git loopx --agent {agent} todo next`)",
        gate.id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Priority, Role, Timestamp, TodoClass};

    fn todo(class: TodoClass) -> Todo {
        Todo::new(
            "todo_0123456789ab".to_owned(),
            "g",
            "q",
            class.role(),
            class,
            Priority::P1,
            None,
            Timestamp::from_unix(1_800_000_000),
        )
    }

    #[test]
    fn only_an_agent_on_a_gate_is_refused() {
        let gate = todo(TodoClass::UserGate);
        let refused = check_reserved(&gate, Some("a1"), GateAction::Resolve).unwrap_err();
        assert_eq!(refused.code, Code::GateReserved);
        assert!(refused.message.contains("todo_0123456789ab"));
        assert!(refused.message.contains("a1"));
        let hint = refused.hint.unwrap();
        assert!(hint.contains("ask the person"), "{hint}");
        assert!(
            !hint.contains("without") && !hint.contains("LOOPX_AGENT"),
            "{hint}"
        );
        assert!(check_reserved(&gate, None, GateAction::Resolve).is_ok());
        let task = todo(TodoClass::AdvancementTask);
        assert_eq!(task.role, Role::Agent);
        assert!(check_reserved(&task, Some("a1"), GateAction::Claim).is_ok());
        let action = todo(TodoClass::UserAction);
        assert!(check_reserved(&action, Some("a1"), GateAction::Update).is_ok());
    }
}
