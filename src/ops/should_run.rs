//! `should-run`: the per-turn decision; read-only unless `--turn K` decides
//! to run (then it records the turn's receipt once per key).

use serde::{Deserialize, Serialize};

use crate::model::ids::nonce;
use crate::model::should_run::{self, Decision};
use crate::model::{ids, GoalState, Refusal, Run, RunKind, State, Timestamp};
use crate::ops::non_empty;
use crate::session::{mutate_maybe, Context};
use crate::store::{self, transaction, Message, Oid};
use crate::{Error, Result};

/// `should-run`, and the `should_run` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ShouldRunArgs {
    /// A capability this agent has now (repeatable; added to its registered ones).
    #[arg(long = "capability", value_name = "CAP")]
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Record a turn receipt under this key when the turn runs (idempotent:
    /// a retry replays it; a skip records none).
    #[arg(long, value_name = "KEY")]
    pub turn: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TurnReceipt {
    pub key: String,
    pub run: String,
    pub replayed: bool,
}

#[derive(Debug, Serialize)]
pub struct ShouldRunReport {
    /// The decision's fields (SPEC §3); a replayed turn gives back the recorded ones.
    #[serde(flatten)]
    pub decision: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnReceipt>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// The decision, or rule 2 (`blocked_health`) with the error that caused it.
pub fn should_run(
    ctx: &Context,
    capabilities: &[String],
    turn: Option<&str>,
) -> Result<(ShouldRunReport, Option<Error>)> {
    let turn = turn.map(|t| non_empty("--turn", t)).transpose()?;
    for c in capabilities {
        ids::check_name("capability", c)?;
    }
    let agent = ctx.agent().map(str::to_owned);
    if turn.is_some() && agent.is_none() {
        return Err(Refusal::invalid_input("--turn needs an agent")
            .with_hint("pass --agent <id> or set LOOPX_AGENT")
            .into());
    }
    let Some(key) = turn else {
        return match transaction::load(&ctx.store) {
            Ok((Some(tip), Some(mut state))) => {
                if let Some(a) = agent.as_deref() {
                    state.check_registered(a)?;
                }
                let goal = ctx.goal(&state)?.goal.id.clone();
                let unsigned = crate::ops::signers::unsigned_resolutions(ctx, &tip, &state)?;
                crate::ops::signers::reopen(&mut state, &goal, &unsigned);
                let gs = ctx.goal(&state)?;
                let decision =
                    should_run::decide(&state, gs, agent.as_deref(), capabilities, ctx.now);
                Ok((
                    report(decision, Some(gs.goal.id.clone()), agent, None, None),
                    None,
                ))
            }
            Ok(_) => Err(store::Error::Missing.into()),
            Err(e @ store::Error::Corrupt { .. }) => Ok(health(ctx, e, agent)),
            Err(e) => Err(e.into()),
        };
    };
    let agent_id = agent.clone().expect("checked above");
    let nonce = nonce();
    // Decided with unsigned resolutions reopened (a view: put back before the write).
    let unsigned = match ctx.load() {
        Ok((tip, state)) => crate::ops::signers::unsigned_resolutions(ctx, &tip, &state)?,
        Err(_) => Default::default(),
    };
    // A skip records nothing (SPEC §2.3): only a turn that runs gets a
    // receipt, so a polling loop does not grow the branch.
    let done = mutate_maybe(ctx, |state, goal| {
        if let Some(old) = find_receipt(&state.goals[goal], &agent_id, &key) {
            return Ok((Turn::Recorded(Box::new(old), true), None));
        }
        let saved = crate::ops::signers::reopen(state, goal, &unsigned);
        let decision = should_run::decide(
            state,
            &state.goals[goal],
            Some(&agent_id),
            capabilities,
            ctx.now,
        );
        crate::ops::signers::restore(state, goal, saved);
        if !decision.should_run {
            return Ok((Turn::Skip(Box::new(decision), goal.to_owned()), None));
        }
        let (run, message) = new_receipt(state, goal, &agent_id, &key, &decision, ctx.now, &nonce);
        Ok((Turn::Recorded(Box::new(run), false), Some(message)))
    });
    let done = match done {
        Ok(done) => done,
        Err(Error::Store(e @ store::Error::Corrupt { .. })) => return Ok(health(ctx, e, agent)),
        Err(e) => return Err(e),
    };
    let (run, replayed) = match done.value {
        Turn::Recorded(run, replayed) => (run, replayed),
        Turn::Skip(decision, goal) => {
            return Ok((report(decision, Some(goal), agent, None, None), None));
        }
    };
    let decision = match run.decision.clone() {
        Some(value @ serde_json::Value::Object(_)) => value,
        _ => {
            return Err(Refusal::invalid_input(format!(
                "turn receipt {} holds no decision",
                run.id
            ))
            .into())
        }
    };
    let receipt = TurnReceipt {
        key: run.turn.clone().unwrap_or_default(),
        run: run.id.clone(),
        replayed,
    };
    Ok((
        report(
            decision,
            Some(run.goal.clone()),
            agent,
            Some(receipt),
            done.commit,
        ),
        None,
    ))
}

/// What `should-run --turn K` found: a receipt (recorded now, or replayed),
/// or a skip, which records none.
enum Turn {
    Recorded(Box<Run>, bool),
    Skip(Box<Decision>, String),
}

/// The turn receipt `agent` recorded under `key`, if any.
pub fn find_receipt(gs: &GoalState, agent: &str, key: &str) -> Option<Run> {
    gs.runs
        .all_facts()
        .find(|r| r.kind == RunKind::Turn && r.agent == Some(agent) && r.turn == Some(key))
        .map(|r| gs.runs[r.id].clone())
}

/// Appends a turn receipt for `agent` under `key` holding `decision`, and
/// returns it with its commit message. The caller checked [`find_receipt`].
pub fn new_receipt(
    state: &mut State,
    goal: &str,
    agent: &str,
    key: &str,
    decision: &Decision,
    now: Timestamp,
    nonce: &str,
) -> (Run, Message) {
    let run_id = ids::derive_id("run_", &[goal, "turn", agent, key, &now.to_string(), nonce]);
    let mut run = Run::new(run_id.clone(), RunKind::Turn, goal, Some(agent), now);
    run.turn = Some(key.to_owned());
    run.todo = decision.selected_todo.as_ref().map(|t| t.id.clone());
    run.reason = Some(decision.effective_action.to_owned());
    run.decision = Some(serde_json::to_value(decision).expect("decisions serialize"));
    if matches!(
        decision.effective_action,
        "plan_required" | "replan_required"
    ) {
        let gs = &state.goals[goal];
        run.todo_seq = Some(
            gs.todos
                .all_facts()
                .filter_map(|t| t.seq)
                .max()
                .unwrap_or(0),
        );
    }
    crate::ops::append_run(state, goal, &mut run);
    let message = Message::new(
        "turn",
        format!("turn {key} by {agent}: {}", decision.effective_action),
    )
    .trailer("Loopx-Run", run_id);
    (run, message)
}

fn report(
    decision: impl Serialize,
    goal: Option<String>,
    agent: Option<String>,
    turn: Option<TurnReceipt>,
    commit: Option<Oid>,
) -> ShouldRunReport {
    let decision = serde_json::to_value(decision).expect("decisions serialize");
    ShouldRunReport {
        decision,
        goal,
        agent,
        turn,
        commit,
    }
}

fn health(
    ctx: &Context,
    e: store::Error,
    agent: Option<String>,
) -> (ShouldRunReport, Option<Error>) {
    let decision = should_run::blocked_health(e.to_string(), ctx.now);
    (report(decision, None, agent, None, None), Some(e.into()))
}
