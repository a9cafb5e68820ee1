//! Which todos an agent may work on now (SPEC §4 rules 4 and 5), as data.

use crate::model::{GoalState, Timestamp, Todo, TodoClass, TodoStatus};

/// A todo an agent may take now.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub todo: &'a Todo,
    /// The agent already holds a live claim on it.
    pub mine: bool,
}

/// Everything `todo next` and `should-run` need to decide.
#[derive(Debug, Default)]
pub struct Selection<'a> {
    /// Ready todos: this agent's own claims first, then unclaimed, by order.
    pub candidates: Vec<Candidate<'a>>,
    /// Open gates this agent sees (global, or blocking this agent).
    pub gates: Vec<&'a Todo>,
    /// Todos held back only because an open gate `unblocks` them.
    pub gated: Vec<&'a Todo>,
    /// Open agent todos held by another agent's live claim.
    pub held_by_others: usize,
    /// Non-terminal agent todos that wait (blocked, `resume_when` unmet, a
    /// monitor not yet due, a capability missing, this agent excluded).
    pub waiting: usize,
}

impl Selection<'_> {
    pub fn first(&self) -> Option<Candidate<'_>> {
        self.candidates.first().copied()
    }
}

/// Whether an open gate concerns `agent`.
pub fn gate_visible(gate: &Todo, agent: Option<&str>) -> bool {
    gate.global || (gate.blocks_agent.is_some() && gate.blocks_agent.as_deref() == agent)
}

fn resume_satisfied(gs: &GoalState, todo: &Todo) -> bool {
    match todo.resume_when.as_deref() {
        None => true,
        Some(cond) => cond
            .strip_prefix("todo_done:")
            .and_then(|id| gs.todos.get(id))
            .is_some_and(|t| t.status == TodoStatus::Done),
    }
}

fn monitor_due(todo: &Todo, now: Timestamp) -> bool {
    todo.monitor
        .as_ref()
        .and_then(|m| m.next_due_at)
        .is_none_or(|due| due <= now)
}

/// Selects for `agent` (with `capabilities`) at `now`.
pub fn select<'a>(
    gs: &'a GoalState,
    agent: Option<&str>,
    capabilities: &[String],
    now: Timestamp,
) -> Selection<'a> {
    let mut sel = Selection::default();
    let open_gates: Vec<&Todo> = gs
        .todos
        .values()
        .filter(|t| t.class == TodoClass::UserGate && t.status == TodoStatus::Open)
        .collect();
    sel.gates = open_gates
        .iter()
        .copied()
        .filter(|g| gate_visible(g, agent))
        .collect();
    sel.gates.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    for todo in gs.todos.values() {
        if todo.role != crate::model::Role::Agent || todo.status.is_terminal() {
            continue;
        }
        if todo.status != TodoStatus::Open {
            sel.waiting += 1;
            continue;
        }
        let live = todo.live_claim(now);
        let mine = live.is_some_and(|c| Some(c.agent.as_str()) == agent);
        if live.is_some() && !mine {
            sel.held_by_others += 1;
            continue;
        }
        let excluded = agent.is_some_and(|a| todo.exclude_agents.iter().any(|x| x == a));
        let capable = todo
            .requires_capabilities
            .iter()
            .all(|c| capabilities.contains(c));
        let due = todo.class != TodoClass::ContinuousMonitor || monitor_due(todo, now);
        if excluded || !capable || !due || !resume_satisfied(gs, todo) {
            sel.waiting += 1;
            continue;
        }
        if open_gates
            .iter()
            .any(|g| g.unblocks.as_deref() == Some(todo.id.as_str()))
        {
            sel.gated.push(todo);
            continue;
        }
        sel.candidates.push(Candidate { todo, mine });
    }
    sel.candidates
        .sort_by(|a, b| (!a.mine, a.todo.order_key()).cmp(&(!b.mine, b.todo.order_key())));
    sel
}
