//! Gates are the person's (issue 14): what an acting agent may not do to a
//! gate, as a pure rule the use cases call inside their transaction.
//!
//! An *acting agent* is any identity from `--agent`, `LOOPX_AGENT` or
//! `git config loopx.agent`; a *person* acts with none. An agent may ask a
//! question (`gate add`) and read gates, but it cannot answer one, change
//! one, hold one or record work on one. That includes a note through
//! `todo update --note`: a note is harmless on its own, but the rule is
//! simpler to audit when nothing an agent writes lands in a gate's file.

use serde::Serialize;

use crate::model::select::{scope_of, GateScope};
use crate::model::{Code, Decision, Refusal, Timestamp, Todo};

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
