//! `goal show | set | stop | resume | add`.

use serde::{Deserialize, Serialize};

use crate::model::{ids, Goal, GoalState, GoalStatus, Refusal};
use crate::ops::non_empty;
use crate::session::{mutate, Context};
use crate::store::{Message, Oid};
use crate::Result;

#[derive(Debug, Serialize)]
pub struct GoalReport {
    pub goal: Goal,
    pub default: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

impl GoalReport {
    /// The goal's file as the state branch holds it (`goal … --yaml`).
    pub fn file(&self) -> String {
        String::from_utf8_lossy(&crate::codec::encode(&self.goal)).into_owned()
    }
}

pub fn show(ctx: &Context) -> Result<GoalReport> {
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    Ok(report(&state, gs))
}

/// `goal show` of the goal `id`, whichever goal the context names (the MCP
/// server's `loopx://goal/<id>` resources).
pub fn show_id(ctx: &Context, id: &str) -> Result<GoalReport> {
    let (_, state) = ctx.load()?;
    let gs = state
        .goals
        .get(id)
        .ok_or_else(|| crate::session::unknown_goal(id, &state))?;
    Ok(report(&state, gs))
}

fn report(state: &crate::model::State, gs: &GoalState) -> GoalReport {
    GoalReport {
        default: gs.goal.id == state.meta.default_goal,
        goal: gs.goal.clone(),
        commit: None,
    }
}

// `goal set` (its help is the subcommand's): a list flag given replaces
// the list; one not given leaves it.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct SetArgs {
    /// The goal's objective: what the agents work towards.
    #[arg(long, value_name = "TEXT")]
    pub objective: Option<String>,
    /// What should happen next, shown to every agent.
    #[arg(long, value_name = "TEXT", conflicts_with = "clear_next_action")]
    pub next_action: Option<String>,
    /// Remove the next action.
    #[arg(long)]
    pub clear_next_action: bool,
    /// Share of the window agents may use, 0..1 (0 pauses all work).
    #[arg(long)]
    pub compute: Option<f64>,
    /// The length of the rolling quota window, in hours.
    #[arg(long, value_name = "HOURS")]
    pub window_hours: Option<u32>,
    /// The length of one quota slot, in minutes.
    #[arg(long, value_name = "MINUTES")]
    pub slot_minutes: Option<u32>,
    /// Override the computed allowance.
    #[arg(long, value_name = "N")]
    pub allowed_slots: Option<u32>,
    /// A guard the agents must respect (repeatable; replaces the list).
    #[arg(long = "guard", value_name = "TEXT")]
    pub guards: Vec<String>,
    /// A path glob agents may write to (repeatable; replaces the list).
    #[arg(long = "write-scope", value_name = "GLOB")]
    pub write_scope: Vec<String>,
    /// Whether a goal whose only open todos are blocked asks for a
    /// replan turn (true, the default) or waits for a person (false).
    #[arg(long, value_name = "true|false")]
    pub replan_when_blocked: Option<bool>,
    /// A goal decision only a person may take, refused to agents and
    /// inside agent runtimes: `done` (`goal done`, and an agent's
    /// `todo done --no-follow-up` no longer ends the goal), `stop`
    /// (`goal stop` and `goal resume`). Repeatable; replaces the list;
    /// `none` clears it. Only a person changes it.
    #[arg(long = "person-only", value_name = "done|stop|none")]
    pub person_only: Vec<String>,
}

/// The goal decisions `person_only` may reserve.
pub const PERSON_ONLY: [&str; 2] = ["done", "stop"];

/// Refuses `what` on `goal` unless the person takes it, when the goal's
/// policy reserves `decision` for the person.
pub fn check_reserved(ctx: &Context, goal: &Goal, decision: &str, what: &str) -> Result<()> {
    if goal.person_only.iter().any(|d| d == decision) {
        ctx.require_person(&format!(
            "{what} (goal {} reserves `{decision}` for the person)",
            goal.id
        ))?;
    }
    Ok(())
}

fn change_goal(
    ctx: &Context,
    op: &str,
    f: impl Fn(&mut Goal) -> Result<Vec<String>>,
) -> Result<GoalReport> {
    let done = mutate(ctx, |state, goal_id| {
        let is_default = state.meta.default_goal == goal_id;
        let goal = &mut state.goals.get_mut(goal_id).expect("goal exists").goal;
        let changed = f(goal)?;
        goal.rev = goal.rev.saturating_add(1);
        goal.updated_at = ctx.now;
        let message = Message::new(op, format!("{op} {goal_id}: {}", changed.join(", ")));
        Ok((
            GoalReport {
                goal: goal.clone(),
                default: is_default,
                commit: None,
            },
            message,
        ))
    })?;
    let mut report = done.value;
    report.commit = done.commit;
    Ok(report)
}

pub fn set(ctx: &Context, args: &SetArgs) -> Result<GoalReport> {
    let objective = args
        .objective
        .as_deref()
        .map(|o| non_empty("--objective", o))
        .transpose()?;
    let next_action = args
        .next_action
        .as_deref()
        .map(|n| non_empty("--next-action", n))
        .transpose()?;
    let person_only = match &args.person_only {
        list if list.is_empty() => None,
        list => {
            ctx.require_person("change which goal decisions are the person's")?;
            let mut out: Vec<String> = Vec::new();
            for d in list.iter().filter(|d| d.as_str() != "none") {
                if !PERSON_ONLY.contains(&d.as_str()) {
                    return Err(Refusal::invalid_input(format!(
                        "--person-only `{d}` is not one of done, stop, none"
                    ))
                    .into());
                }
                if !out.contains(d) {
                    out.push(d.clone());
                }
            }
            Some(out)
        }
    };
    if let Some(c) = args.compute {
        if !(0.0..=1.0).contains(&c) {
            return Err(Refusal::invalid_input(format!("--compute {c} is outside 0..1")).into());
        }
    }
    if args.window_hours == Some(0) || args.slot_minutes == Some(0) {
        return Err(
            Refusal::invalid_input("--window-hours and --slot-minutes must be positive").into(),
        );
    }
    change_goal(ctx, "goal set", |goal| {
        let mut changed = Vec::new();
        if let Some(o) = &objective {
            goal.objective = o.clone();
            changed.push("objective".to_owned());
        }
        if let Some(n) = &next_action {
            goal.next_action = Some(n.clone());
            changed.push("next_action".to_owned());
        } else if args.clear_next_action {
            goal.next_action = None;
            changed.push("next_action cleared".to_owned());
        }
        let q = &mut goal.quota;
        if let Some(c) = args.compute {
            q.compute = c;
            changed.push(format!("compute {c}"));
        }
        if let Some(w) = args.window_hours {
            q.window_hours = w;
            changed.push(format!("window_hours {w}"));
        }
        if let Some(s) = args.slot_minutes {
            q.slot_minutes = s;
            changed.push(format!("slot_minutes {s}"));
        }
        if let Some(a) = args.allowed_slots {
            q.allowed_slots = Some(a);
            changed.push(format!("allowed_slots {a}"));
        }
        if !args.guards.is_empty() {
            goal.guards = args.guards.clone();
            changed.push("guards".to_owned());
        }
        if !args.write_scope.is_empty() {
            goal.write_scope = args.write_scope.clone();
            changed.push("write_scope".to_owned());
        }
        if let Some(r) = args.replan_when_blocked {
            goal.replan_when_blocked = Some(r);
            changed.push(format!("replan_when_blocked {r}"));
        }
        if let Some(p) = &person_only {
            goal.person_only = p.clone();
            changed.push("person_only".to_owned());
        }
        if changed.is_empty() {
            return Err(
                Refusal::invalid_input("nothing to set: see `git loopx goal set -h`").into(),
            );
        }
        Ok(changed)
    })
}

/// `goal stop` and `goal resume`: a hard pause for every agent. Resuming a
/// goal marked done reopens it (and forgets who marked it).
pub fn set_status(ctx: &Context, status: GoalStatus) -> Result<GoalReport> {
    let op = if status == GoalStatus::Stopped {
        "goal stop"
    } else {
        "goal resume"
    };
    change_goal(ctx, op, |goal| {
        check_reserved(ctx, goal, "stop", op)?;
        let was = goal.status;
        goal.status = status;
        let mut changed = vec![crate::ops::snake(&status)];
        if was == GoalStatus::Done {
            goal.done_by = None;
            goal.done_at = None;
            goal.done_note = None;
            changed.push("reopened".to_owned());
        }
        Ok(changed)
    })
}

/// Who is acting: the agent, else the person git names as committer.
/// Inside an agent runtime with no agent named, refuses (see
/// [`Context::actor`]).
pub fn actor(ctx: &Context) -> Result<String> {
    ctx.actor()
}

/// Marks `goal` done by `by`: should-run answers `terminal_no_followup`
/// until `goal resume`.
pub fn mark_done(goal: &mut Goal, by: &str, note: Option<&str>, now: crate::model::Timestamp) {
    goal.status = GoalStatus::Done;
    goal.done_by = Some(by.to_owned());
    goal.done_at = Some(now);
    goal.done_note = note.map(str::to_owned);
}

/// `goal done`, and the `complete_goal` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DoneArgs {
    /// Why the goal is done (what was delivered, what remains out of scope).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
}

/// `goal done [--note T]`: the goal's end, as an explicit, recorded decision
/// of a person or an agent.
pub fn done(ctx: &Context, args: &DoneArgs) -> Result<GoalReport> {
    let note = args
        .note
        .as_deref()
        .map(|n| non_empty("--note", n))
        .transpose()?;
    let by = actor(ctx)?;
    change_goal(ctx, "goal done", |goal| {
        if goal.status == GoalStatus::Done {
            return Err(Refusal::invalid_input(format!(
                "goal {} is already done (marked by {})",
                goal.id,
                goal.done_by.as_deref().unwrap_or("someone")
            ))
            .with_hint("`git loopx goal resume` reopens it")
            .into());
        }
        check_reserved(ctx, goal, "done", "end the goal")?;
        mark_done(goal, &by, note.as_deref(), ctx.now);
        Ok(vec![format!("done by {by}")])
    })
}

pub fn add(ctx: &Context, id: &str, objective: &str, make_default: bool) -> Result<GoalReport> {
    ids::check_name("goal", id)?;
    let objective = non_empty("--objective", objective)?;
    ctx.adopt_remote_state()?;
    let done = crate::session::transact(ctx, |state: &mut Option<crate::model::State>| {
        let state = crate::session::existing(state)?;
        if state.goals.contains_key(id) {
            return Err(Refusal::invalid_input(format!("goal `{id}` already exists")).into());
        }
        let goal = Goal::new(id, &objective, ctx.now);
        state
            .goals
            .insert(id.to_owned(), GoalState::new(goal.clone()));
        if make_default {
            state.meta.default_goal = id.to_owned();
        }
        let mut message = Message::new(
            "goal add",
            format!(
                "goal add {id}{}",
                if make_default { " (default)" } else { "" }
            ),
        )
        .trailer("Loopx-Goal", id.to_owned());
        if let Some(a) = ctx.agent() {
            message = message.trailer("Loopx-Agent", a);
        }
        Ok::<_, crate::Error>(crate::store::Write::commit(
            GoalReport {
                goal,
                default: make_default,
                commit: None,
            },
            message,
        ))
    })?;
    let mut report = done.value;
    report.commit = done.commit;
    Ok(report)
}
