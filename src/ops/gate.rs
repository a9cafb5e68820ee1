//! `gate add | resolve | list`: questions only a human may answer.
//!
//! A gate is a `user_gate` todo. Its scope comes from what it names
//! (`model::select::gate_scope`): the one agent it `blocks_agent`, else the
//! todo it `unblocks` (held back from every agent until the gate is
//! resolved: approve or cancel release it; reject blocks it, with a note),
//! else the whole goal (every agent's work waits). Only a person answers a
//! gate (`model::gate`, `gate_reserved`).

use serde::{Deserialize, Serialize};

use crate::model::gate::{self, GateAction};
use crate::model::ids::{headline, new_todo_id, nonce};
use crate::model::{ids, Decision, Priority, Refusal, Role, Todo, TodoClass, TodoStatus};
use crate::ops::{add_note, non_empty, resolve_todo, touch};
use crate::session::{mutate, Context};
use crate::store::{Message, Oid};
use crate::Result;

#[derive(Debug, Serialize)]
pub struct GateReport {
    pub gate: Todo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unblocked: Option<Todo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// `gate add`, and the `add_gate` tool (see `ops::args`), which does not
/// take `global`: a gate that names no agent and no todo is global anyway.
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AddArgs {
    /// The question, as the person who answers it will read it.
    pub question: String,
    /// Only this agent waits for the answer.
    #[arg(long, value_name = "AGENT", conflicts_with = "global")]
    pub blocks_agent: Option<String>,
    /// The gate stops all agent work in the goal (the default when the
    /// person asks one that names neither an agent nor a todo; an agent's
    /// question stops only that agent unless it says --global).
    #[arg(long, conflicts_with = "unblocks")]
    #[serde(skip)]
    pub global: bool,
    /// The todo that waits for this gate.
    #[arg(long, value_name = "ID")]
    pub unblocks: Option<String>,
}

pub fn add(ctx: &Context, args: &AddArgs) -> Result<GateReport> {
    let question = non_empty("the gate question", &args.question)?;
    if let Some(a) = &args.blocks_agent {
        ids::check_name("agent", a)?;
    }
    let agent = ctx.agent().map(str::to_owned);
    let nonce = nonce();
    let done = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let unblocks = match &args.unblocks {
            Some(q) => {
                let id = resolve_todo(gs, q)?;
                let target = &gs.todos[&id];
                if target.role != Role::Agent || target.status.is_terminal() {
                    return Err(Refusal::invalid_input(format!(
                        "--unblocks {id}: only an open agent todo can wait for a gate"
                    ))
                    .into());
                }
                Some(id)
            }
            None => None,
        };
        let id = new_todo_id(goal, &question, agent.as_deref(), ctx.now, &nonce);
        let mut gate = Todo::new(
            id.clone(),
            goal,
            &question,
            Role::User,
            TodoClass::UserGate,
            Priority::P1,
            agent.as_deref(),
            ctx.now,
        );
        // A gate an agent asks that names no scope stops only that agent,
        // as in LoopX 2.1.1 (`--global` says otherwise); one the person asks
        // stops all agent work.
        gate.blocks_agent = args.blocks_agent.clone().or_else(|| {
            (unblocks.is_none() && !args.global)
                .then(|| agent.clone())
                .flatten()
        });
        gate.unblocks = unblocks.clone();
        // Stored for readers that look at the flag; the scope itself comes
        // from what the gate names (`select::scope_of`).
        gate.global =
            crate::model::select::scope_of(&gate) == crate::model::select::GateScope::Goal;
        let gate = gs.add_todo(gate);
        let scope = crate::model::select::scope_of(&gate).label(gate.unblocks.as_deref());
        let mut message = Message::new(
            "gate add",
            format!("gate add {id} ({scope}): {}", headline(&question, 60)),
        )
        .trailer("Loopx-Todo", id);
        if let Some(u) = unblocks {
            message = message.trailer("Loopx-Todo", u);
        }
        Ok((gate, message))
    })?;
    Ok(GateReport {
        gate: done.value,
        unblocked: None,
        commit: done.commit,
    })
}

pub fn resolve(
    ctx: &Context,
    query: &str,
    decision: Decision,
    note: Option<&str>,
) -> Result<GateReport> {
    let note = note.map(|n| non_empty("--note", n)).transpose()?;
    let agent = ctx.gate_actor();
    // Only a person gets this far (an agent, or any command inside an agent
    // runtime, is refused below): the resolution names them as git names
    // the committer of the state commit.
    let person = ctx.store.committer();
    // Under a gate_signers policy the resolution is signed, and a gate whose
    // earlier resolution does not count may be answered again.
    let (signed, unsigned) = match ctx.load() {
        Ok((tip, state)) if agent.is_none() => {
            let policy = !crate::ops::signers::effective(ctx, &tip)?.is_empty();
            let unsigned = crate::ops::signers::unsigned_resolutions(ctx, &tip, &state)?;
            (policy, unsigned)
        }
        _ => (false, Default::default()),
    };
    let decide = |state: &mut crate::model::State, goal: &str| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        let gate = gs.todos.get_mut(&id).expect("resolved");
        if gate.class != TodoClass::UserGate {
            return Err(Refusal::invalid_input(format!("{id} is not a gate")).into());
        }
        gate::check_reserved(gate, agent.as_deref(), GateAction::Resolve)?;
        if gate.status != TodoStatus::Open && !unsigned.contains(&id) {
            return Err(Refusal::invalid_input(format!(
                "{id} is already resolved ({})",
                crate::model::status_name(gate.status)
            ))
            .into());
        }
        gate.status = TodoStatus::Done;
        gate.decision = Some(decision);
        gate.resolved_by = Some(person.clone());
        gate.resolved_at = Some(ctx.now);
        if let Some(n) = &note {
            add_note(gate, ctx.now, agent.as_deref(), n)?;
        }
        touch(gate, ctx.now);
        let gate = gate.clone();
        let word = crate::ops::snake(&decision);
        let mut unblocked = None;
        if let Some(target_id) = &gate.unblocks {
            if let Some(target) = gs.todos.get_mut(target_id) {
                if !target.status.is_terminal() {
                    match decision {
                        Decision::Approve | Decision::Cancel
                            if target.status == TodoStatus::Blocked =>
                        {
                            target.status = TodoStatus::Open
                        }
                        Decision::Reject => {
                            target.status = TodoStatus::Blocked;
                            add_note(
                                target,
                                ctx.now,
                                agent.as_deref(),
                                &format!("gate {} rejected", gate.id),
                            )?;
                        }
                        _ => {}
                    }
                    touch(target, ctx.now);
                    unblocked = Some(target.clone());
                }
            }
        }
        let mut message = Message::new("gate resolve", format!("gate resolve {id}: {word}"))
            .trailer("Loopx-Todo", id.clone());
        if let Some(n) = &note {
            message = message.line(n.clone());
        }
        if let Some(t) = &unblocked {
            message = message.trailer("Loopx-Todo", t.id.clone());
        }
        Ok(((gate, unblocked), message))
    };
    let done = if signed {
        crate::session::signed::mutate_signed(ctx, decide)?
    } else {
        mutate(ctx, decide)?
    };
    let (gate, unblocked) = done.value;
    Ok(GateReport {
        gate,
        unblocked,
        commit: done.commit,
    })
}

#[derive(Debug, Serialize)]
pub struct GateList {
    pub gates: Vec<crate::model::gate::GateView>,
    /// Answers that do not count under `gate_signers`: their gates are
    /// listed as open, with `resolution_not_signed`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_answers: Vec<crate::ops::signers::IgnoredAnswer>,
}

pub fn list(ctx: &Context, all: bool) -> Result<GateList> {
    let (tip, mut state) = ctx.load()?;
    let goal = ctx.goal(&state)?.goal.id.clone();
    let ignored_answers = crate::ops::signers::ignored_answers_of(ctx, &tip, &state, &goal)?;
    let ignored: std::collections::BTreeSet<String> =
        ignored_answers.iter().map(|a| a.gate.clone()).collect();
    crate::ops::signers::reopen(&mut state, &goal, &ignored);
    let gs = ctx.goal(&state)?;
    let mut gates: Vec<&Todo> = gs
        .todos
        .values()
        .filter(|t| t.class == TodoClass::UserGate && (all || t.status == TodoStatus::Open))
        .collect();
    gates.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    let gates = gates
        .into_iter()
        .map(|t| crate::model::gate::GateView {
            resolution_not_signed: ignored.contains(&t.id),
            ..crate::model::gate::GateView::of(t)
        })
        .collect();
    Ok(GateList {
        gates,
        ignored_answers,
    })
}

/// Refuses (`gate_open`) `agent`'s `action` on `todo` while an open gate
/// holds it for `agent` (`model::gate::holding`: the one rule `todo next`
/// and `should-run` read, so the safe-bypass work `should-run` offers stays
/// possible). Called inside the write's compare-and-swap, on the state it
/// commits on; a gate whose resolution does not count under `gate_signers`
/// holds as if open, judged at the commit that state is read from
/// ([`Context::deciding_on`]).
pub fn check_held(
    ctx: &Context,
    state: &crate::model::State,
    goal: &str,
    todo: &str,
    agent: &str,
    action: GateAction,
) -> Result<()> {
    let Some(gs) = state.goals.get(goal) else {
        return Ok(());
    };
    let none = std::collections::BTreeSet::new();
    if let Some(g) = gate::holding(gs, todo, agent, &none) {
        return Err(gate::held(todo, g, agent, action).into());
    }
    if !gate::resolved_would_hold(gs, todo, agent) {
        return Ok(());
    }
    let Some(at) = ctx.deciding_on().or(ctx.store.tip()?) else {
        return Ok(());
    };
    let reopened = crate::ops::signers::unsigned_resolutions_of(ctx, &at, state, goal)?;
    match gate::holding(gs, todo, agent, &reopened) {
        Some(g) => Err(gate::held(todo, g, agent, action).into()),
        None => Ok(()),
    }
}
