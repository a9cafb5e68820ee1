//! Borrowed summaries of todos and runs: the fields that scans over a whole
//! goal read (which todos are ready, which spends count, whether a turn was
//! already recorded). See [`Facts`]: a loaded state hands them out straight
//! from its encoded bytes, so choosing among ten thousand todos allocates
//! for none of them.
//!
//! Invariant: for every entity `e`, the facts read from `e`'s encoding equal
//! `e.facts()` (a property test holds the binary form to that).

use crate::model::tracked::Facts;
use crate::model::{
    Claim, Outcome, Priority, Role, Run, RunKind, Timestamp, Todo, TodoClass, TodoStatus,
};

/// What selection reads of a todo.
#[derive(Clone, Debug, PartialEq)]
pub struct TodoFacts<'a> {
    pub id: &'a str,
    pub role: Role,
    pub class: TodoClass,
    pub status: TodoStatus,
    pub priority: Priority,
    pub created_at: Timestamp,
    pub seq: Option<u64>,
    /// The holder and end of the lease, live or not.
    pub claim: Option<(&'a str, Timestamp)>,
    pub requires_capabilities: Vec<&'a str>,
    pub exclude_agents: Vec<&'a str>,
    pub resume_when: Option<&'a str>,
    pub unblocks: Option<&'a str>,
    pub blocks_agent: Option<&'a str>,
    pub global: bool,
    /// `Some` for a todo with a monitor: when it is next due, if ever set.
    pub monitor_due: Option<Option<Timestamp>>,
    /// For a monitor, when it expires, if ever.
    pub monitor_expires_at: Option<Timestamp>,
}

impl TodoFacts<'_> {
    /// The order todos are offered in: priority, then age, then the order
    /// they were added in, then id.
    pub fn order_key(&self) -> (Priority, Timestamp, Option<u64>, &str) {
        (self.priority, self.created_at, self.seq, self.id)
    }

    /// The holder of the lease, if it is still live at `now`.
    pub fn live_holder(&self, now: Timestamp) -> Option<&str> {
        self.claim
            .filter(|&(_, expires_at)| now < expires_at)
            .map(|(agent, _)| agent)
    }
}

impl Facts for Todo {
    type Of<'a> = TodoFacts<'a>;

    fn facts(&self) -> TodoFacts<'_> {
        TodoFacts {
            id: &self.id,
            role: self.role,
            class: self.class,
            status: self.status,
            priority: self.priority,
            created_at: self.created_at,
            seq: self.seq,
            claim: self.claim.as_ref().map(
                |Claim {
                     agent, expires_at, ..
                 }| (agent.as_str(), *expires_at),
            ),
            requires_capabilities: strs(&self.requires_capabilities),
            exclude_agents: strs(&self.exclude_agents),
            resume_when: self.resume_when.as_deref(),
            unblocks: self.unblocks.as_deref(),
            blocks_agent: self.blocks_agent.as_deref(),
            global: self.global,
            monitor_due: self.monitor.as_ref().map(|m| m.next_due_at),
            monitor_expires_at: self.monitor.as_ref().and_then(|m| m.expires_at),
        }
    }
}

/// What the quota, spends and turn replay read of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFacts<'a> {
    pub id: &'a str,
    pub kind: RunKind,
    pub agent: Option<&'a str>,
    pub at: Timestamp,
    pub seq: Option<u64>,
    /// The todo a writeback, claim or spend was about (none for a goal-level
    /// writeback: a planning turn).
    pub todo: Option<&'a str>,
    pub outcome: Option<Outcome>,
    pub turn: Option<&'a str>,
    pub slots: Option<u32>,
    /// For a spend, the writeback it pays for.
    pub writeback: Option<&'a str>,
    /// For a void, the spend it cancels.
    pub spend: Option<&'a str>,
    /// Why: for a recorded decision, its effective action.
    pub reason: Option<&'a str>,
}

impl Facts for Run {
    type Of<'a> = RunFacts<'a>;

    fn facts(&self) -> RunFacts<'_> {
        RunFacts {
            id: &self.id,
            kind: self.kind,
            agent: self.agent.as_deref(),
            at: self.at,
            seq: self.seq,
            todo: self.todo.as_deref(),
            outcome: self.outcome,
            turn: self.turn.as_deref(),
            slots: self.slots,
            writeback: self.writeback.as_deref(),
            spend: self.spend.as_deref(),
            reason: self.reason.as_deref(),
        }
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
