//! Which todos an agent may work on now (SPEC §4 rules 4 and 5), as data.

use crate::model::{GoalState, Priority, Role, Timestamp, Todo, TodoClass, TodoFacts, TodoStatus};

/// A todo an agent may take now.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    pub id: &'a str,
    /// The agent already holds a live claim on it.
    pub mine: bool,
    priority: Priority,
    created_at: Timestamp,
    seq: Option<u64>,
}

impl Candidate<'_> {
    /// Own claims first, then [`TodoFacts::order_key`].
    fn rank(&self) -> (bool, Priority, Timestamp, Option<u64>, &str) {
        (
            !self.mine,
            self.priority,
            self.created_at,
            self.seq,
            self.id,
        )
    }
}

/// Everything `todo next` and `should-run` need to decide. It is read from
/// the todos' facts (see [`crate::model::facts`]), so selecting decodes no
/// todo but the open gates it returns.
#[derive(Debug, Default)]
pub struct Selection<'a> {
    /// Ready todos: this agent's own claims first, then unclaimed, by order.
    pub candidates: Vec<Candidate<'a>>,
    /// Deferred todos whose `resume_when` now holds (successor turns), by
    /// order: taken only when no open todo is ready, as LoopX 2.1.1 does.
    pub successors: Vec<Candidate<'a>>,
    /// Open gates this agent sees (all but those blocking another agent).
    pub gates: Vec<&'a Todo>,
    /// Todos held back only because an open gate `unblocks` them.
    pub gated: Vec<&'a str>,
    /// Open agent todos held by another agent's live claim.
    pub held_by_others: usize,
    /// Open agent todos this agent cannot take until something else changes
    /// (`resume_when` unmet, a capability missing, this agent excluded), and
    /// deferred ones whose `resume_when` is unmet.
    pub waiting: usize,
    /// Of `waiting`: the todos that exclude this agent, that need a
    /// capability it lacks, and whose `resume_when` is unmet.
    pub excluded: usize,
    pub incapable: usize,
    pub unresumed: usize,
    /// Agent todos marked `blocked` (only a replan moves them), and open
    /// `blocker`s.
    pub blocked: usize,
    /// Open `user_action` reminders (they never stop work; they tell the user).
    pub reminders: usize,
    /// The monitor this agent could take that is due first, and when, among
    /// open monitors not yet due (not counted in `waiting`).
    pub next_monitor: Option<(&'a str, Timestamp)>,
    /// Open monitors whose `expires_at` has passed: never selected again.
    pub expired_monitors: usize,
}

impl Selection<'_> {
    /// The todo to work on: by priority, as LoopX 2.1.1 takes work — a
    /// ready successor when it ranks above every ready open todo (or none
    /// is ready); at the same priority the open todo. The agent's own
    /// claim comes first whichever it is.
    pub fn first(&self) -> Option<Candidate<'_>> {
        if self.first_is_successor() {
            self.successors.first().copied()
        } else {
            self.candidates.first().copied()
        }
    }

    /// Whether [`Selection::first`] is a successor turn.
    pub fn first_is_successor(&self) -> bool {
        match (self.candidates.first(), self.successors.first()) {
            (None, Some(_)) => true,
            (Some(open), Some(s)) => !open.mine && (s.mine || s.priority < open.priority),
            _ => false,
        }
    }

    /// The open todo a successor turn goes before, when one was ready.
    pub fn passed_over(&self) -> Option<Candidate<'_>> {
        self.first_is_successor()
            .then(|| self.candidates.first().copied())
            .flatten()
    }
}

/// How far an open gate reaches (SPEC §4 rule 5).
///
/// The stored `global` flag does not decide it: `gate add --unblocks X` sets
/// it although the gate holds only X, and `todo add --role user --class
/// user_gate` leaves it unset although the gate names nothing. What a gate
/// *names* does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateScope<'a> {
    /// Names neither an agent nor a todo: stops all agent work in its goal.
    Goal,
    /// `blocks_agent`: only that agent sees it (and the todo it `unblocks`,
    /// if any, waits for it whoever would take it).
    Agent(&'a str),
    /// `unblocks` and no agent: holds only that todo, seen by every agent.
    Todo(&'a str),
}

impl GateScope<'_> {
    /// Short words for a person: `global`, `blocks A`, `holds T`, or both.
    pub fn label(self, unblocks: Option<&str>) -> String {
        let holds = unblocks.map(|u| format!("holds {u}"));
        match (self, holds) {
            (GateScope::Goal, _) => "global".to_owned(),
            (GateScope::Agent(a), None) => format!("blocks {a}"),
            (GateScope::Agent(a), Some(h)) => format!("blocks {a}, {h}"),
            (GateScope::Todo(t), _) => format!("holds {t}"),
        }
    }
}

/// The scope of a gate, from what it names.
pub fn gate_scope<'a>(blocks_agent: Option<&'a str>, unblocks: Option<&'a str>) -> GateScope<'a> {
    match (blocks_agent, unblocks) {
        (Some(a), _) => GateScope::Agent(a),
        (None, Some(t)) => GateScope::Todo(t),
        (None, None) => GateScope::Goal,
    }
}

/// The scope of a gate todo.
pub fn scope_of(gate: &Todo) -> GateScope<'_> {
    gate_scope(gate.blocks_agent.as_deref(), gate.unblocks.as_deref())
}

/// Whether an open gate naming `blocks_agent` and `unblocks` holds `todo`
/// for `agent`. As in LoopX 2.1.1: a gate of the whole goal holds every
/// todo; one that blocks this agent and names no todo holds all of this
/// agent's work; one that `unblocks` a todo holds that todo, for the agent
/// it blocks only when it names one (`--blocks-agent a1 --unblocks T1`
/// leaves a1 its other todos, and T1 to every other agent). The one rule
/// selection (`select`) and every write a gate covers
/// (`gate::holding`) read.
pub fn gate_holds(
    blocks_agent: Option<&str>,
    unblocks: Option<&str>,
    todo: &str,
    agent: Option<&str>,
) -> bool {
    match gate_scope(blocks_agent, unblocks) {
        GateScope::Goal => true,
        GateScope::Agent(a) if unblocks.is_none() => Some(a) == agent,
        _ => unblocks == Some(todo) && blocks_agent.is_none_or(|a| Some(a) == agent),
    }
}

/// Whether an open gate concerns `agent`: every gate but another agent's.
pub fn gate_visible(gate: &TodoFacts<'_>, agent: Option<&str>) -> bool {
    match gate_scope(gate.blocks_agent, gate.unblocks) {
        GateScope::Agent(a) => Some(a) == agent,
        GateScope::Goal | GateScope::Todo(_) => true,
    }
}

fn resume_satisfied(gs: &GoalState, todo: &TodoFacts<'_>) -> bool {
    resume_holds(gs, todo.resume_when)
}

/// Whether a `resume_when` condition holds (none always does).
pub fn resume_holds(gs: &GoalState, resume_when: Option<&str>) -> bool {
    match resume_when {
        None => true,
        Some(cond) => cond
            .strip_prefix("todo_done:")
            .and_then(|id| gs.todos.facts(id))
            .is_some_and(|t| t.status == TodoStatus::Done),
    }
}

/// A deferred successor whose condition holds is taken up by its claim: it
/// becomes open. Returns whether it woke.
pub fn wake_successor(gs: &mut GoalState, id: &str) -> bool {
    let Some(todo) = gs.todos.get(id) else {
        return false;
    };
    let wakes = todo.status == TodoStatus::Deferred
        && todo.resume_when.is_some()
        && resume_holds(gs, todo.resume_when.as_deref());
    if wakes {
        if let Some(todo) = gs.todos.get_mut(id) {
            todo.status = TodoStatus::Open;
        }
    }
    wakes
}

/// When a monitor is next due, if that is after `now`.
fn monitor_not_due_until(todo: &TodoFacts<'_>, now: Timestamp) -> Option<Timestamp> {
    todo.monitor_due.flatten().filter(|&due| due > now)
}

fn monitor_expired(todo: &TodoFacts<'_>, now: Timestamp) -> bool {
    todo.monitor_expires_at.is_some_and(|e| e <= now)
}

/// Selects for `agent` (with `capabilities`) at `now`.
pub fn select<'a>(
    gs: &'a GoalState,
    agent: Option<&str>,
    capabilities: &[String],
    now: Timestamp,
) -> Selection<'a> {
    let mut sel = Selection::default();
    let mut open_gates: Vec<TodoFacts<'a>> = Vec::new();
    for todo in gs.todos.all_facts() {
        if todo.class == TodoClass::UserGate && todo.status == TodoStatus::Open {
            open_gates.push(todo);
            continue;
        }
        if todo.class == TodoClass::UserAction && todo.status == TodoStatus::Open {
            sel.reminders += 1;
            continue;
        }
        if todo.role != Role::Agent {
            continue;
        }
        // A blocker says what stops work; it is never work itself (LoopX
        // 2.1.1 never selects one).
        if todo.class == TodoClass::Blocker && !todo.status.is_terminal() {
            sel.blocked += 1;
            continue;
        }
        // A deferred todo is parked, unless it names a condition: then it
        // is a successor, ready once the condition holds.
        let successor = match todo.status {
            TodoStatus::Done => continue,
            TodoStatus::Blocked => {
                sel.blocked += 1;
                continue;
            }
            TodoStatus::Deferred if todo.resume_when.is_none() => continue,
            TodoStatus::Deferred => true,
            TodoStatus::Open => false,
        };
        let holder = todo.live_holder(now);
        let mine = holder.is_some() && holder == agent;
        if holder.is_some() && !mine {
            sel.held_by_others += 1;
            continue;
        }
        let excluded = agent.is_some_and(|a| todo.exclude_agents.contains(&a));
        let capable = todo
            .requires_capabilities
            .iter()
            .all(|c| capabilities.iter().any(|have| have == c));
        if excluded {
            sel.excluded += 1;
        } else if !capable {
            sel.incapable += 1;
        } else if !resume_satisfied(gs, &todo) {
            sel.unresumed += 1;
        }
        if excluded || !capable || !resume_satisfied(gs, &todo) {
            sel.waiting += 1;
            continue;
        }
        if todo.class == TodoClass::ContinuousMonitor {
            if monitor_expired(&todo, now) {
                sel.expired_monitors += 1;
                continue;
            }
            if let Some(due) = monitor_not_due_until(&todo, now) {
                if sel.next_monitor.is_none_or(|(_, first)| due < first) {
                    sel.next_monitor = Some((todo.id, due));
                }
                continue;
            }
        }
        let candidate = Candidate {
            id: todo.id,
            mine,
            priority: todo.priority,
            created_at: todo.created_at,
            seq: todo.seq,
        };
        if successor {
            sel.successors.push(candidate);
        } else {
            sel.candidates.push(candidate);
        }
    }
    // What an open gate holds: `gate_holds`.
    if !open_gates.is_empty() {
        let held = |c: &Candidate<'_>| {
            open_gates
                .iter()
                .any(|g| gate_holds(g.blocks_agent, g.unblocks, c.id, agent))
        };
        for list in [&mut sel.candidates, &mut sel.successors] {
            let (gated, ready): (Vec<_>, Vec<_>) = list.drain(..).partition(|c| held(c));
            *list = ready;
            sel.gated.extend(gated.into_iter().map(|c| c.id));
        }
    }
    open_gates.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    sel.gates = open_gates
        .iter()
        .filter(|g| gate_visible(g, agent))
        .map(|g| &gs.todos[g.id])
        .collect();
    sel.candidates.sort_by(|a, b| a.rank().cmp(&b.rank()));
    sel.successors.sort_by(|a, b| a.rank().cmp(&b.rank()));
    sel
}
