//! `prompt`: the task body a host loop hands its agent each turn.

mod calls;
mod text;

use serde::{Deserialize, Serialize};

use crate::model::handoff::Handoff;
use crate::model::should_run::{self, Decision};
use crate::model::{Goal, GoalState, Role, RunKind, Timestamp, Todo, TodoStatus};
use crate::ops::args::enum_arg;
use crate::session::Context;
use crate::Result;

/// Which agent runtime the prompt is written for.
pub use crate::model::runtime::Runtime;

/// Where the prompt's reader acts: in a shell, with `git loopx` command
/// lines (the CLI, the hooks, `run`), or in an MCP client, with the tools
/// of `git loopx mcp` (the prompt `turn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    Cli,
    Mcp,
}

impl Surface {
    /// What the prompt says on this surface.
    pub fn pick<T>(self, cli: T, mcp: T) -> T {
        match self {
            Surface::Cli => cli,
            Surface::Mcp => mcp,
        }
    }
}

/// `prompt`, and the MCP prompt `turn` (see `ops::args`), which does not
/// take capabilities.
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PromptArgs {
    /// claude-code, codex or generic.
    #[arg(long, value_parser = enum_arg::<Runtime>, default_value = "generic")]
    pub runtime: Option<Runtime>,
    /// A capability this agent has now (repeatable).
    #[arg(long = "capability", value_name = "CAP")]
    #[serde(skip)]
    pub capabilities: Vec<String>,
    /// The turn key to use in the commands (default: agent and time).
    #[arg(long, value_name = "KEY")]
    pub turn: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PromptReport {
    pub runtime: Runtime,
    pub agent: Option<String>,
    /// The goal is not the state's default: the commands name it.
    #[serde(skip)]
    pub names_goal: bool,
    pub turn: String,
    pub goal: Goal,
    pub decision: Decision,
    /// The selected todo in full, when the turn should run.
    pub todo: Option<Todo>,
    /// The selected todo's handoff packet, when it was handed to this agent
    /// and the agent has not written back on the todo since.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
    /// Open gates the agent should surface to the user.
    pub gates: Vec<crate::model::gate::GateView>,
    /// For a replanning turn: the blocked agent todos, by order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<Todo>,
    /// For a planning turn: the last agent todos done (at most ten).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub done: Vec<Todo>,
    /// The prompt itself.
    pub prompt: String,
}

/// A turn key that is stable within a second for one agent.
pub fn default_turn_key(agent: Option<&str>, now: Timestamp) -> String {
    let stamp: String = now
        .to_string()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("{}-{stamp}", agent.unwrap_or("agent"))
}

pub fn prompt(
    ctx: &Context,
    (runtime, surface): (Runtime, Surface),
    capabilities: &[String],
    turn: Option<&str>,
) -> Result<PromptReport> {
    let (tip, mut state) = ctx.load()?;
    let goal = ctx.goal(&state)?.goal.id.clone();
    let unsigned = crate::ops::signers::unsigned_resolutions(ctx, &tip, &state)?;
    crate::ops::signers::reopen(&mut state, &goal, &unsigned);
    let gs = ctx.goal(&state)?;
    let agent = ctx.agent();
    let decision = should_run::decide(&state, gs, agent, capabilities, ctx.now);
    let turn = turn.map_or_else(|| default_turn_key(agent, ctx.now), str::to_owned);
    let default = &state.meta.default_goal;
    Ok(report(
        gs,
        default,
        agent,
        (runtime, surface),
        decision,
        turn,
        ctx.now,
    ))
}

/// The prompt for `decision` (made by [`should_run::decide`] on `gs`) under
/// turn key `turn`, for `runtime` on `surface`: what `prompt` prints, and
/// what the runtime hooks hand their session. `default_goal` is the
/// state's.
pub fn report(
    gs: &GoalState,
    default_goal: &str,
    agent: Option<&str>,
    (runtime, surface): (Runtime, Surface),
    decision: Decision,
    turn: String,
    now: Timestamp,
) -> PromptReport {
    let todo = decision
        .selected_todo
        .as_ref()
        .map(|t| gs.todos[&t.id].clone());
    let handoff = todo
        .as_ref()
        .and_then(|t| pending_handoff(gs, t, agent?))
        .filter(|h| h.has_packet())
        .cloned();
    let gates = decision.gates.clone();
    let planning = decision.should_run && todo.is_none();
    let agent_todos = |status: TodoStatus| -> Vec<Todo> {
        let mut facts: Vec<_> = gs
            .todos
            .all_facts()
            .filter(|t| t.role == Role::Agent && t.status == status)
            .collect();
        facts.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
        facts.iter().map(|t| gs.todos[t.id].clone()).collect()
    };
    let blocked = match decision.effective_action {
        "replan_required" => agent_todos(TodoStatus::Blocked),
        _ => Vec::new(),
    };
    let done = if planning && blocked.is_empty() {
        let mut done = agent_todos(TodoStatus::Done);
        done.sort_by_key(|t| t.updated_at);
        let skip = done.len().saturating_sub(10);
        done.split_off(skip)
    } else {
        Vec::new()
    };
    let mut report = PromptReport {
        runtime,
        agent: agent.map(str::to_owned),
        names_goal: gs.goal.id != default_goal,
        turn,
        goal: gs.goal.clone(),
        decision,
        todo,
        handoff,
        gates,
        blocked,
        done,
        prompt: String::new(),
    };
    report.prompt = text::prompt(&report, now, surface);
    if runtime == Runtime::Codex {
        report.prompt = text::braced_placeholders(&report.prompt);
    }
    report
}

/// `todo`'s handoff, if it was handed to `agent` and `agent` has recorded no
/// writeback on it at or after the epoch the handoff granted. Runs are
/// sifted by their facts (kind, agent, time) and only the few left are
/// decoded.
pub fn pending_handoff<'a>(gs: &GoalState, todo: &'a Todo, agent: &str) -> Option<&'a Handoff> {
    let h = todo.handoff.as_ref().filter(|h| h.to == agent)?;
    let written_back = gs
        .runs
        .all_facts()
        .filter(|f| f.kind == RunKind::Writeback && f.agent == Some(agent) && f.at >= h.at)
        .map(|f| f.id.to_owned())
        .collect::<Vec<_>>()
        .iter()
        .filter_map(|id| gs.runs.get(id))
        .any(|r| r.todo.as_deref() == Some(&todo.id) && r.epoch.is_some_and(|e| e >= h.epoch));
    (!written_back).then_some(h)
}
