//! The tools' arguments: one struct per tool, whose JSON schema (schemars)
//! is what `tools/list` advertises and whose deserializer is what a call
//! must pass. Field names and meanings are the CLI's flags.
//!
//! Invariants: every struct refuses unknown fields (so no argument can name
//! another agent, or anything the CLI does not take), and none has an agent
//! field: the acting agent is the server's.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;

use crate::model::{Outcome, Priority, Role, TodoClass};

fn one_of(values: &[&str]) -> Schema {
    schemars::json_schema!({ "type": "string", "enum": values })
}

/// [`one_of`] for an optional field: null (or no field) takes the default.
fn one_of_or_null(values: &[&str]) -> Schema {
    let mut all: Vec<serde_json::Value> = values.iter().map(|v| (*v).into()).collect();
    all.push(serde_json::Value::Null);
    schemars::json_schema!({ "type": ["string", "null"], "enum": all })
}

fn outcome(_: &mut SchemaGenerator) -> Schema {
    one_of(&[
        "surface_only",
        "outcome_gap",
        "outcome_progress",
        "primary_goal_outcome",
    ])
}

fn role(_: &mut SchemaGenerator) -> Schema {
    one_of_or_null(&["agent", "user"])
}

fn class(_: &mut SchemaGenerator) -> Schema {
    one_of_or_null(&[
        "advancement_task",
        "continuous_monitor",
        "blocker",
        "user_gate",
        "user_action",
    ])
}

fn priority(_: &mut SchemaGenerator) -> Schema {
    one_of_or_null(&["P0", "P1", "P2", "P3", "P4"])
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShouldRun {
    /// Capabilities this agent has now (added to its registered ones).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Record a turn receipt under this key when the turn runs (idempotent:
    /// a retry replays it; a skip records none).
    #[serde(default)]
    pub turn: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextTodo {
    /// Claim it in the same compare-and-swap.
    #[serde(default)]
    pub claim: bool,
    /// Capabilities this agent has now (added to its registered ones).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// With claim: the lease length, at most 24h (e.g. 30m, 2h; default 45m).
    #[serde(default)]
    pub ttl: Option<String>,
    /// With claim: confirm the claim on the remote (a remote compare-and-swap).
    #[serde(default)]
    pub sync: bool,
    /// The remote for sync (default: loopx.remote, else origin).
    #[serde(default)]
    pub remote: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The todo: its id or a unique prefix of one.
    pub todo: String,
    /// Lease length, at most 24h (e.g. 30m, 2h, 90s; default 45m).
    #[serde(default)]
    pub ttl: Option<String>,
    /// Confirm the claim on the remote: the local branch takes the claim
    /// only once the remote has it.
    #[serde(default)]
    pub sync: bool,
    /// The remote for sync (default: loopx.remote, else origin).
    #[serde(default)]
    pub remote: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Renew {
    /// The todo: its id or a unique prefix of one.
    pub todo: String,
    /// The lease's new length from now, at most 24h (default 45m).
    #[serde(default)]
    pub ttl: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[serde(default)]
    pub epoch: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Release {
    /// The todo: its id or a unique prefix of one.
    pub todo: String,
    /// The epoch your claim was granted (default: recorded on this host).
    #[serde(default)]
    pub epoch: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Writeback {
    /// The todo the work was for (id or unique prefix); leave it out for a
    /// goal-level writeback after a planning turn.
    #[serde(default)]
    pub todo: Option<String>,
    /// What the work achieved.
    #[schemars(schema_with = "outcome")]
    pub outcome: Outcome,
    /// What was delivered, in a sentence or two.
    pub summary: String,
    /// The validation command that was run (give exit_code with it).
    #[serde(default)]
    pub validation: Option<String>,
    /// The validation command's exit code.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Code commits that carry the work: any revision git reads.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// Evidence outside git, such as a CI run: absolute URLs.
    #[serde(default)]
    pub artifact_urls: Vec<String>,
    /// Set the goal's next action in the same commit.
    #[serde(default)]
    pub next_action: Option<String>,
    /// The turn key: a second writeback with the same key is a replay.
    #[serde(default)]
    pub turn: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[serde(default)]
    pub epoch: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteTodo {
    /// The todo: its id or a unique prefix of one.
    pub todo: String,
    /// What shows it is done (a commit, a test run, a link).
    pub evidence: String,
    /// Create the successor todo in the same commit.
    #[serde(default)]
    pub next: Option<String>,
    /// Give the successor's lease to this agent.
    #[serde(default)]
    pub next_agent: Option<String>,
    /// No follow-up is needed; on the goal's last open agent todo this marks
    /// the goal done in the same commit.
    #[serde(default)]
    pub no_follow_up: bool,
    /// Kill the todo's validate command after this long (default 10m).
    #[serde(default)]
    pub validate_timeout: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[serde(default)]
    pub epoch: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// The todo: its id or a unique prefix of one.
    pub todo: String,
    /// The registered agent that takes the lease over.
    pub to: String,
    /// What the next agent needs to know (default: the summary's first line).
    #[serde(default)]
    pub note: Option<String>,
    /// The work done so far (the packet's summary).
    #[serde(default)]
    pub summary: Option<String>,
    /// Approaches tried and why they failed, each as "APPROACH: WHY".
    #[serde(default)]
    pub tried: Vec<String>,
    /// What the next agent should do next, in order.
    #[serde(default)]
    pub next_steps: Vec<String>,
    /// Questions still open.
    #[serde(default)]
    pub questions: Vec<String>,
    /// Files the next agent should read, from the top of the repository.
    #[serde(default)]
    pub files: Vec<String>,
    /// A whole packet as Markdown (## Summary, ## Tried, ## Next steps,
    /// ## Open questions, ## Files); the other fields add to it.
    #[serde(default)]
    pub packet: Option<String>,
    /// The new holder's lease length, at most 24h (default 45m).
    #[serde(default)]
    pub ttl: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[serde(default)]
    pub epoch: Option<u64>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spend {
    /// Charge this turn (the key given to should_run); not with writeback.
    #[serde(default)]
    pub turn: Option<String>,
    /// Charge this writeback: its run id or a unique prefix.
    #[serde(default)]
    pub writeback: Option<String>,
    /// How many slots to charge (default 1).
    #[serde(default)]
    pub slots: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTodo {
    /// What is to be done.
    pub text: String,
    /// agent (default) or user.
    #[serde(default)]
    #[schemars(schema_with = "role")]
    pub role: Option<Role>,
    /// The class; user todos need user_gate or user_action.
    #[serde(default)]
    #[schemars(schema_with = "class")]
    pub class: Option<TodoClass>,
    /// P0 (first) … P4 (last); default P2.
    #[serde(default)]
    #[schemars(schema_with = "priority")]
    pub priority: Option<Priority>,
    /// Capabilities the agent must have.
    #[serde(default)]
    pub requires_capabilities: Vec<String>,
    /// Agents that must not take it.
    #[serde(default)]
    pub exclude_agents: Vec<String>,
    /// Not ready until this holds: todo_done:<todo-id>.
    #[serde(default)]
    pub resume_when: Option<String>,
    /// A command (run without a shell) that must exit 0 before the todo
    /// may be completed.
    #[serde(default)]
    pub validate: Option<String>,
    /// A monitor's cadence (continuous_monitor), e.g. 15m.
    #[serde(default)]
    pub every: Option<String>,
    /// A monitor's end: an RFC 3339 time or a duration from now.
    #[serde(default)]
    pub until: Option<String>,
    /// A monitor that only watches (its polls never make work).
    #[serde(default)]
    pub watch_only: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddGate {
    /// The question, as the person who answers it will read it.
    pub question: String,
    /// Only this agent waits for the answer.
    #[serde(default)]
    pub blocks_agent: Option<String>,
    /// The todo that waits for this gate.
    #[serde(default)]
    pub unblocks: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Diff {
    /// A state commit (compared with its first parent) or a range A..B;
    /// default: the last state commit.
    #[serde(default)]
    pub range: Option<String>,
    /// Also show each changed file as a unified YAML diff.
    #[serde(default)]
    pub patch: bool,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Prompt {
    /// claude-code, codex or generic (default).
    #[serde(default)]
    pub runtime: Option<String>,
    /// The turn key to use in the commands (default: agent and time).
    #[serde(default)]
    pub turn: Option<String>,
}
