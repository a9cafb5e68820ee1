//! The per-turn decision (SPEC §4), as a pure function of the state.
//!
//! Rules, first match wins: paused → (no agent named) → throttled → gates
//! (safe fallback or operator gate) → eligible → held by others / waiting /
//! nothing left. Invalid state (rule 2) is decided by the caller, which has
//! the decode error: see [`blocked_health`].

use serde::Serialize;

use crate::model::quota::{self, Usage};
use crate::model::select::{self, Selection};
use crate::model::{GoalState, GoalStatus, State, Timestamp, Todo};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SelectedTodo {
    pub id: String,
    pub text: String,
    pub claimed_by_me: bool,
    pub claim_required: bool,
}

/// An open gate in a decision: the shape every command shows a gate in.
pub type GateInfo = crate::model::gate::GateView;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchedulerHint {
    pub action: &'static str,
    pub cadence_class: &'static str,
    pub wake_after_seconds: i64,
}

/// The answer to "should this agent run a turn now, and on what?".
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    pub decision: &'static str,
    pub should_run: bool,
    pub state: &'static str,
    pub effective_action: &'static str,
    pub reason: String,
    pub selected_todo: Option<SelectedTodo>,
    pub gates: Vec<GateInfo>,
    pub quota: QuotaInfo,
    pub scheduler_hint: SchedulerHint,
    pub notify_user: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QuotaInfo {
    pub allowed_slots: u32,
    pub spent_slots: u32,
    pub next_eligible_at: Timestamp,
}

impl From<&Usage> for QuotaInfo {
    fn from(u: &Usage) -> Self {
        QuotaInfo {
            allowed_slots: u.allowed_slots,
            spent_slots: u.spent_slots,
            next_eligible_at: u.next_eligible_at,
        }
    }
}

/// Seconds a host loop sleeps for each kind of wait.
pub const WAKE_RUN_NOW: i64 = 180;
pub const WAKE_WAITING_FOR_USER: i64 = 1800;
pub const WAKE_UNTIL_REASSIGNED: i64 = 600;
pub const WAKE_WAITING: i64 = 1800;
pub const WAKE_STOPPED: i64 = 3600;
pub const WAKE_HEALTH: i64 = 900;

fn hint(
    action: &'static str,
    cadence_class: &'static str,
    wake_after_seconds: i64,
) -> SchedulerHint {
    SchedulerHint {
        action,
        cadence_class,
        wake_after_seconds,
    }
}

fn gate_info(g: &Todo) -> GateInfo {
    GateInfo::of(g)
}

struct Base {
    gates: Vec<GateInfo>,
    quota: QuotaInfo,
}

impl Base {
    fn skip(
        self,
        state: &'static str,
        action: &'static str,
        reason: String,
        hint: SchedulerHint,
    ) -> Decision {
        Decision {
            decision: "skip",
            should_run: false,
            state,
            effective_action: action,
            reason,
            selected_todo: None,
            notify_user: false,
            gates: self.gates,
            quota: self.quota,
            scheduler_hint: hint,
        }
    }

    fn run(
        self,
        state: &'static str,
        action: &'static str,
        reason: String,
        selected_todo: Option<SelectedTodo>,
        notify_user: bool,
    ) -> Decision {
        Decision {
            decision: "run",
            should_run: true,
            state,
            effective_action: action,
            reason,
            selected_todo,
            notify_user,
            gates: self.gates,
            quota: self.quota,
            scheduler_hint: hint("run_now", "active_work", WAKE_RUN_NOW),
        }
    }
}

/// Decides for `agent` (with extra `capabilities`) on goal `gs` at `now`.
pub fn decide(
    state: &State,
    gs: &GoalState,
    agent: Option<&str>,
    capabilities: &[String],
    now: Timestamp,
) -> Decision {
    let usage = quota::usage(gs, now);
    let mut caps: Vec<String> = agent
        .and_then(|a| state.agents.get(a))
        .map(|a| a.capabilities.clone())
        .unwrap_or_default();
    caps.extend(capabilities.iter().cloned());
    let sel: Selection<'_> = select::select(gs, agent, &caps, now);
    let base = Base {
        gates: sel.gates.iter().map(|g| gate_info(g)).collect(),
        quota: QuotaInfo::from(&usage),
    };

    // 1. A hard pause, or the end.
    if gs.goal.status == GoalStatus::Stopped || gs.goal.quota.effective_compute() <= 0.0 {
        let (why, cadence) = if gs.goal.status == GoalStatus::Stopped {
            (format!("goal {} is stopped", gs.goal.id), "goal_stopped")
        } else {
            let c = gs.goal.quota.compute;
            let why = if c <= 0.0 {
                format!("goal {} has compute 0", gs.goal.id)
            } else {
                format!(
                    "goal {} has compute {c}, which is 0 to two decimals",
                    gs.goal.id
                )
            };
            (why, "quota_paused")
        };
        return base.skip(
            "paused",
            "quota_skip",
            why,
            hint("stop_until_explicit_resume", cadence, WAKE_STOPPED),
        );
    }
    if gs.goal.status == GoalStatus::Done {
        let by = gs.goal.done_by.as_deref().unwrap_or("someone");
        let note = gs
            .goal
            .done_note
            .as_deref()
            .map(|n| format!(": {n}"))
            .unwrap_or_default();
        return base.skip(
            "terminal_no_followup",
            "terminal_no_followup",
            format!(
                "goal {} was marked done by {by}{note} (`git loopx goal resume` reopens it)",
                gs.goal.id
            ),
            hint(
                "stop_until_explicit_resume",
                "terminal_no_followup",
                WAKE_STOPPED,
            ),
        );
    }
    // Agents are registered, but this caller did not say which one it is.
    if agent.is_none() && !state.agents.is_empty() {
        return base.skip(
            "needs_agent",
            "automation_prompt_upgrade_required",
            "agents are registered but no agent was given: pass --agent or set LOOPX_AGENT".into(),
            hint("upgrade_automation_prompt", "misconfigured", WAKE_STOPPED),
        );
    }
    // 3. Throttled.
    if usage.throttled() {
        let wait = now.seconds_until(usage.next_eligible_at).max(1);
        let mut d = base.skip(
            "throttled",
            "throttled_skip",
            format!(
                "{} of {} slots spent in the last {}h; next slot at {}",
                usage.spent_slots, usage.allowed_slots, usage.window_hours, usage.next_eligible_at
            ),
            hint("wait_until_eligible", "throttled", wait),
        );
        // A gate still waits for the person while the quota does (LoopX
        // 2.1.1 notifies then too).
        if !sel.gates.is_empty() {
            d.notify_user = true;
            d.reason = format!(
                "{}; {} open gate(s) wait for the user",
                d.reason,
                sel.gates.len()
            );
        }
        return d;
    }
    // From here on, an open reminder for the user is worth telling them.
    let mut d = after_gates(gs, &sel, base, now);
    if sel.reminders > 0 && !d.notify_user {
        d.notify_user = true;
        d.reason = format!(
            "{}; {} reminder(s) wait for the user",
            d.reason, sel.reminders
        );
    }
    d
}

/// Rules 5 to 7: gates, a todo to work on, or why there is none.
fn after_gates(gs: &GoalState, sel: &Selection<'_>, base: Base, now: Timestamp) -> Decision {
    let selected = sel.first().map(|c| SelectedTodo {
        id: c.id.to_owned(),
        text: gs.todos[c.id].text.clone(),
        claimed_by_me: c.mine,
        claim_required: !c.mine,
    });
    // 5. Open gates this agent sees: a gate of the whole goal, or one that
    // blocks this agent, holds all its work (the selection is empty then); a
    // gate that names a todo holds that todo only.
    if !sel.gates.is_empty() {
        return gates_open(sel, selected, base);
    }
    // 6. Something to work on: an open todo, else a successor whose
    // condition holds.
    if let Some(todo) = selected {
        return work_on(gs, sel, todo, base);
    }
    // 7. Nothing for this agent.
    nothing_to_work_on(gs, sel, base, now)
}

/// Rule 5, with gates open that this agent sees: a todo that does not
/// depend on them is still worked on (and the user told), else the agent
/// waits for the user's answer.
fn gates_open(sel: &Selection<'_>, selected: Option<SelectedTodo>, base: Base) -> Decision {
    match selected {
        Some(todo) => {
            let reason = format!(
                "{} open gate(s) wait for the user; {} does not depend on them",
                sel.gates.len(),
                todo.id
            );
            base.run(
                "eligible",
                "safe_bypass_user_gate_fallback",
                reason,
                Some(todo),
                true,
            )
        }
        None => {
            let mut d = base.skip(
                "operator_gate",
                "operator_gate_notify",
                format!(
                    "nothing to do until the user answers {} open gate(s)",
                    sel.gates.len()
                ),
                hint(
                    "backoff_waiting_for_user",
                    "human_gate",
                    WAKE_WAITING_FOR_USER,
                ),
            );
            d.notify_user = true;
            d
        }
    }
}

/// Rule 6: the selected todo, an open one or a successor whose condition
/// holds (and why it goes first).
fn work_on(gs: &GoalState, sel: &Selection<'_>, todo: SelectedTodo, base: Base) -> Decision {
    if sel.first_is_successor() {
        let condition = gs.todos[&todo.id].resume_when.as_deref().unwrap_or("");
        let reason = match sel.passed_over() {
                None => format!(
                    "no open todo is ready; the deferred successor {} may resume ({condition})",
                    todo.id
                ),
                Some(open) => format!(
                    "the deferred successor {} ({:?}) may resume ({condition}) and goes before the open {} ({:?}): work is taken by priority",
                    todo.id,
                    gs.todos[&todo.id].priority,
                    open.id,
                    gs.todos[open.id].priority
                ),
            };
        base.run(
            "eligible",
            "successor_replan_required",
            reason,
            Some(todo),
            false,
        )
    } else {
        let reason = format!("{} is ready", todo.id);
        base.run("eligible", "normal_run", reason, Some(todo), false)
    }
}

/// Rule 7: nothing for this agent to work on, and why: others hold the
/// work, monitors are not due, todos wait, are blocked, or the goal needs
/// a plan.
fn nothing_to_work_on(gs: &GoalState, sel: &Selection<'_>, base: Base, now: Timestamp) -> Decision {
    if sel.held_by_others > 0 {
        return base.skip(
            "agent_scope_wait",
            "agent_scope_wait",
            format!(
                "{} open todo(s) are held by other agents",
                sel.held_by_others
            ),
            hint(
                "backoff_until_reassigned",
                "agent_scope_wait",
                WAKE_UNTIL_REASSIGNED,
            ),
        );
    }
    // Only monitors that are not due yet: sleep until the first is.
    if let Some((id, due)) = sel.next_monitor {
        let wait = now.seconds_until(due).max(1);
        return base.skip(
            "monitor_quiet",
            "monitor_quiet_skip",
            format!("monitor {id} is not due until {due} (in {wait}s); nothing else is ready"),
            hint("backoff_until_material_transition", "monitor_wait", wait),
        );
    }
    if sel.waiting > 0 || !sel.gated.is_empty() {
        return waiting(base, waiting_causes(sel));
    }
    if sel.blocked > 0 && !gs.goal.replans_when_blocked() {
        return waiting(
            base,
            format!(
                "{} todo(s) are blocked and goal {} does not replan when blocked",
                sel.blocked, gs.goal.id
            ),
        );
    }
    // A planning turn that planned nothing is not asked for again: the goal
    // waits for a person (or any change of its todos).
    if let Some(turn) = unproductive_plan_turn(gs) {
        let mut d = waiting(
            base,
            format!(
                "the planning turn {turn} added no todo and did not end the goal; \
                 waiting for a person: `git loopx todo add` or `git loopx goal done`"
            ),
        );
        d.notify_user = true;
        return d;
    }
    if sel.blocked > 0 {
        let reason = format!(
            "every open todo is blocked ({}): replan — unblock, split or replace them",
            sel.blocked
        );
        return base.run("replan", "replan_required", reason, None, false);
    }
    plan(gs, base)
}

/// A skip until the state changes, for `reason`.
fn waiting(base: Base, reason: String) -> Decision {
    base.skip(
        "waiting",
        "blocked_wait",
        reason,
        hint("backoff_until_state_change", "quiet_wait", WAKE_WAITING),
    )
}

/// Why no todo is ready for this agent: each cause named, with its count
/// (issue 46, item 18).
fn waiting_causes(sel: &Selection<'_>) -> String {
    let mut causes = Vec::new();
    let mut say = |n: usize, what: &str| {
        if n > 0 {
            causes.push(format!("{n} {what}"));
        }
    };
    say(sel.excluded, "exclude this agent");
    say(sel.incapable, "need a capability this agent lacks");
    say(sel.unresumed, "wait for their resume_when");
    say(sel.gated.len(), "are held by a gate");
    format!("nothing is ready: of the todos, {}", causes.join(", "))
}

/// No open agent todo, and the goal is not done: plan. After work was
/// done, tell the user too (LoopX 2.1.1 does).
fn plan(gs: &GoalState, base: Base) -> Decision {
    let worked = gs
        .todos
        .all_facts()
        .any(|t| t.role == crate::model::Role::Agent && t.status == crate::model::TodoStatus::Done);
    let agent_todos = gs
        .todos
        .all_facts()
        .filter(|t| t.role == crate::model::Role::Agent)
        .count();
    let reason = if worked {
        format!(
            "no open todo is left in goal {}: plan the next todos, or mark the goal done",
            gs.goal.id
        )
    } else if agent_todos > 0 {
        // Deferred todos whose condition does not hold yet, an expired
        // monitor: the goal has todos, none to work on now.
        format!(
            "goal {} has {agent_todos} todo(s), none ready to work on (deferred, or a monitor that ended): plan what comes next",
            gs.goal.id
        )
    } else {
        format!("goal {} has no todo yet: plan its first todos", gs.goal.id)
    };
    base.run("plan", "plan_required", reason, None, worked)
}

/// The turn key of the latest planning or replanning turn, when that turn
/// wrote back and no todo was added since it was decided.
fn unproductive_plan_turn(gs: &GoalState) -> Option<&str> {
    let decided = gs
        .runs
        .all_facts()
        .filter(|r| {
            r.kind == crate::model::RunKind::Turn
                && matches!(r.reason, Some("plan_required" | "replan_required"))
        })
        .max_by_key(|r| (r.at, r.seq))?;
    let turn = decided.turn?;
    let wrote_back = gs.runs.all_facts().any(|r| {
        r.kind == crate::model::RunKind::Writeback
            && r.turn == Some(turn)
            && r.agent == decided.agent
    });
    if !wrote_back {
        return None;
    }
    let seen = gs.runs.get(decided.id)?.todo_seq?;
    let added = gs
        .todos
        .all_facts()
        .any(|t| t.seq.is_some_and(|s| s > seen));
    (!added).then_some(turn)
}

/// Rule 2: the state cannot be read.
pub fn blocked_health(reason: String, now: Timestamp) -> Decision {
    Decision {
        decision: "skip",
        should_run: false,
        state: "blocked_health",
        effective_action: "blocked_health",
        reason,
        selected_todo: None,
        gates: Vec::new(),
        quota: QuotaInfo {
            allowed_slots: 0,
            spent_slots: 0,
            next_eligible_at: now,
        },
        scheduler_hint: hint("backoff_until_repaired", "health", WAKE_HEALTH),
        notify_user: true,
    }
}
