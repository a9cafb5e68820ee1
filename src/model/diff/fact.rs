//! The facts `git loopx diff` tells ([`super::semantic`] finds them): what
//! happened, with the state's own words, as the `--json` objects show them
//! (`{"kind": "claim", "todo": …, "agent": …, "epoch": …}`).

use serde::Serialize;
use serde_json::Value;

use crate::model::Timestamp;

/// One fact, with the goal it belongs to (`None`: the whole state).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fact {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    #[serde(flatten)]
    pub what: What,
    /// Sort key: when it happened, as near as the states tell.
    #[serde(skip)]
    pub at: Option<Timestamp>,
}

/// What happened. Texts are the state's own (agent-written) words.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum What {
    GoalAdded {
        objective: String,
    },
    GoalRemoved {
        objective: String,
    },
    NextAction {
        old: Option<String>,
        new: Option<String>,
    },
    /// Any other field of a goal (`status`, `quota`, …).
    GoalField {
        field: String,
        old: Value,
        new: Value,
    },
    TodoAdded {
        todo: String,
        text: String,
        class: String,
        priority: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    GateOpened {
        gate: String,
        question: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        unblocks: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        blocks_agent: Option<String>,
    },
    TodoRemoved {
        todo: String,
        text: String,
    },
    Claim {
        todo: String,
        agent: String,
        epoch: u64,
        /// The agent whose lease this one replaced (an expired lease taken over).
        #[serde(skip_serializing_if = "Option::is_none")]
        from: Option<String>,
    },
    Renew {
        todo: String,
        agent: String,
        epoch: u64,
        until: Timestamp,
    },
    Release {
        todo: String,
        agent: String,
        epoch: u64,
    },
    Handoff {
        todo: String,
        from: Option<String>,
        to: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        epoch: Option<u64>,
        note: String,
        /// What the handoff's packet holds, in one line, when it left one.
        #[serde(skip_serializing_if = "Option::is_none")]
        packet: Option<String>,
    },
    Note {
        todo: String,
        agent: Option<String>,
        text: String,
    },
    /// Any other field of a todo (`priority`, `status`, `text`, …).
    Field {
        todo: String,
        field: String,
        old: Value,
        new: Value,
    },
    Done {
        todo: String,
        evidence: Option<String>,
    },
    GateResolved {
        gate: String,
        decision: Option<String>,
        by: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        at: Option<Timestamp>,
    },
    Writeback {
        run: String,
        todo: Option<String>,
        agent: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        epoch: Option<u64>,
        outcome: Option<String>,
        summary: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        validation: Option<Validated>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        artifacts: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        artifact_urls: Vec<String>,
    },
    Spend {
        run: String,
        agent: Option<String>,
        slots: u32,
        writeback: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        turn: Option<String>,
    },
    Void {
        run: String,
        agent: Option<String>,
        spend: Option<String>,
        reason: Option<String>,
    },
    /// A turn receipt (`should-run --turn`, the runtime hooks): its key and
    /// the action it recorded.
    Turn {
        run: String,
        agent: Option<String>,
        turn: Option<String>,
        action: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        todo: Option<String>,
    },
    /// A run record edited or removed by hand (runs are append-only).
    RunChanged {
        run: String,
        fields: Vec<String>,
    },
    RunRemoved {
        run: String,
        run_kind: String,
    },
    /// Runs past the retention horizon left the tree; `commit` holds them.
    RunsArchived {
        through: String,
        runs: u64,
        commit: String,
    },
    AgentAdded {
        agent: String,
        runtime: Option<String>,
    },
    AgentRemoved {
        agent: String,
    },
    AgentField {
        agent: String,
        field: String,
        old: Value,
        new: Value,
    },
    /// A field of `loopx.yaml` (`default_goal`, `gate_signers`, …).
    MetaField {
        field: String,
        old: Value,
        new: Value,
    },
}

/// A writeback's validation result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Validated {
    pub command: String,
    pub exit_code: i32,
}
