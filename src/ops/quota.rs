//! `quota spend | void | show`: one spend per accountable writeback or turn.

use serde::{Deserialize, Serialize};

use crate::model::quota::{self, Usage};
use crate::model::{ids, Code, GoalState, Refusal, Run, RunFacts, RunKind};
use crate::ops::non_empty;
use crate::session::{mutate_maybe, Context};
use crate::store::{Message, Oid};
use crate::Result;

#[derive(Debug, Serialize)]
pub struct SpendReport {
    pub spent: bool,
    pub replayed: bool,
    pub spend: Run,
    pub quota: Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// Resolves a run id or unique prefix.
fn resolve_run(gs: &crate::model::GoalState, query: &str) -> Result<String> {
    let hex = query.strip_prefix("run_").unwrap_or(query);
    if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(Refusal::invalid_input(format!(
            "`{query}` is not a run id or a prefix of one"
        ))
        .into());
    }
    Ok(ids::resolve_prefix("run", query, gs.runs.keys())?.to_owned())
}

/// `quota spend`, and the `spend` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SpendArgs {
    /// Charge this turn (the key given to `should-run --turn`).
    #[arg(long, value_name = "KEY", conflicts_with = "writeback")]
    pub turn: Option<String>,
    /// Charge this writeback: its run id or a unique prefix.
    #[arg(long, value_name = "RUN")]
    pub writeback: Option<String>,
    /// How many slots to charge.
    #[arg(long, default_value = "1")]
    pub slots: Option<u32>,
}

/// `quota spend [--turn K | --writeback RUN] [--slots N]`.
pub fn spend(ctx: &Context, args: &SpendArgs) -> Result<SpendReport> {
    let (writeback, slots) = (args.writeback.as_deref(), args.slots.unwrap_or(1));
    let agent = ctx.require_agent()?.to_owned();
    let turn = args
        .turn
        .as_deref()
        .map(|t| non_empty("--turn", t))
        .transpose()?;
    if slots == 0 {
        return Err(Refusal::invalid_input("--slots must be at least 1").into());
    }
    let nonce = ids::nonce();
    let done = mutate_maybe(ctx, |state, goal| {
        let gs = &state.goals[goal];
        let live_spends = quota::live_spends(gs);
        // The writeback this spend is for.
        let target: Run = match writeback {
            Some(q) => named_writeback(gs, q)?,
            None => match latest_writeback(ctx, gs, &live_spends, &agent, turn.as_deref())? {
                Charge::Writeback(run) => run,
                Charge::Spent(old) => return Ok(((old, true), None)),
            },
        };
        if let Some(todo) = target.todo.as_deref().and_then(|t| gs.todos.get(t)) {
            crate::model::gate::check_reserved(
                todo,
                Some(&agent),
                crate::model::gate::GateAction::Spend,
            )?;
        }
        if let Some(old) = live_spends
            .iter()
            .find(|r| r.writeback == Some(target.id.as_str()))
        {
            return Ok(((gs.runs[old.id].clone(), true), None));
        }
        if !target.outcome.is_some_and(|o| o.is_accountable()) {
            return Err(Refusal::new(
                Code::NothingToSpend,
                format!(
                    "{} is not accountable (only outcome_progress and primary_goal_outcome are)",
                    target.id
                ),
            )
            .into());
        }
        let usage = quota::usage_with(gs, ctx.now, slots);
        if slots > usage.allowed_slots {
            return Err(Refusal::invalid_input(format!(
                "--slots {slots} is more than the {} the goal allows",
                usage.allowed_slots
            ))
            .into());
        }
        if u64::from(usage.spent_slots) + u64::from(slots) > u64::from(usage.allowed_slots) {
            return Err(Refusal::new(
                Code::Throttled,
                format!(
                    "{} of {} slots spent in the last {}h; next slot at {}",
                    usage.spent_slots,
                    usage.allowed_slots,
                    usage.window_hours,
                    usage.next_eligible_at
                ),
            )
            .into());
        }
        let run_id = ids::derive_id(
            "run_",
            &[
                goal,
                "spend",
                &agent,
                &target.id,
                &ctx.now.to_string(),
                &nonce,
            ],
        );
        let mut run = Run::new(run_id.clone(), RunKind::Spend, goal, Some(&agent), ctx.now);
        run.slots = Some(slots);
        run.writeback = Some(target.id.clone());
        run.todo = target.todo.clone();
        run.turn = turn.clone().or(target.turn.clone());
        crate::ops::append_run(state, goal, &mut run);
        let message = Message::new(
            "quota spend",
            format!(
                "quota spend {run_id} for {} by {agent} ({slots} slot(s))",
                target.id
            ),
        )
        .trailer("Loopx-Run", run_id)
        .trailer("Loopx-Run", target.id.clone());
        Ok(((run, false), Some(message)))
    })?;
    let (spend, replayed) = done.value;
    let (_, state) = ctx.load()?;
    let usage = quota::usage(ctx.goal(&state)?, ctx.now);
    Ok(SpendReport {
        spent: !replayed,
        replayed,
        spend,
        quota: usage,
        commit: done.commit,
    })
}

/// What a spend charges: a writeback, or nothing new because this turn's
/// spend was already made (a replay hands that spend back).
enum Charge {
    Writeback(Run),
    Spent(Run),
}

/// The writeback `--writeback` names (an id or a unique prefix).
fn named_writeback(gs: &GoalState, q: &str) -> Result<Run> {
    let id = resolve_run(gs, q)?;
    let run = gs.runs[&id].clone();
    if run.kind != RunKind::Writeback {
        return Err(Refusal::invalid_input(format!(
            "{id} is a {} record, not a writeback",
            crate::ops::snake(&run.kind)
        ))
        .into());
    }
    Ok(run)
}

/// Without `--writeback`: the latest unspent accountable writeback of
/// `agent`, of the turn `turn` when given (or that turn's spend, when it
/// already has one).
fn latest_writeback(
    ctx: &Context,
    gs: &GoalState,
    live_spends: &[RunFacts<'_>],
    agent: &str,
    turn: Option<&str>,
) -> Result<Charge> {
    if let Some(t) = turn {
        if let Some(old) = live_spends
            .iter()
            .find(|r| r.turn == Some(t) && r.agent == Some(agent))
        {
            return Ok(Charge::Spent(gs.runs[old.id].clone()));
        }
        crate::session::local::check_turn_open(ctx, t)?;
    }
    let spent: Vec<&str> = live_spends.iter().filter_map(|r| r.writeback).collect();
    let mut candidates: Vec<RunFacts<'_>> = gs
        .runs
        .all_facts()
        .filter(|r| r.kind == RunKind::Writeback && r.agent == Some(agent))
        .filter(|r| r.outcome.is_some_and(|o| o.is_accountable()) && !spent.contains(&r.id))
        .collect();
    candidates.sort_by(|a, b| (a.at, a.id).cmp(&(b.at, b.id)));
    // A turn's spend charges that turn's writeback, never an
    // older one: charged now, the turn's own could never be.
    if let Some(t) = turn {
        if !candidates.iter().any(|r| r.turn == Some(t)) {
            return Err(Refusal::new(
                Code::NothingToSpend,
                format!("turn {t} of {agent} has no unspent accountable writeback"),
            )
            .with_hint(format!(
                "write back first (`git loopx writeback --turn {t} --outcome outcome_progress …`), then spend; quiet turns never spend"
            ))
            .into());
        }
        candidates.retain(|r| r.turn == Some(t));
    }
    match candidates.last() {
        Some(r) => Ok(Charge::Writeback(gs.runs[r.id].clone())),
        None => Err(Refusal::new(Code::NothingToSpend, format!("{agent} has no unspent accountable writeback"))
            .with_hint("record work with `git loopx writeback --outcome outcome_progress …` first; quiet turns never spend")
            .into()),
    }
}

#[derive(Debug, Serialize)]
pub struct VoidReport {
    pub void: Run,
    pub replayed: bool,
    pub quota: Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// `quota void RUN --note T`: the spend no longer counts.
pub fn void(ctx: &Context, query: &str, reason: &str) -> Result<VoidReport> {
    let reason = non_empty("--note", reason)?;
    let agent = ctx.agent().map(str::to_owned);
    let nonce = ids::nonce();
    let done = mutate_maybe(ctx, |state, goal| {
        let gs = &state.goals[goal];
        let id = resolve_run(gs, query)?;
        if gs.runs[&id].kind != RunKind::Spend {
            return Err(Refusal::invalid_input(format!("{id} is not a spend")).into());
        }
        if let Some(old) = gs
            .runs
            .values()
            .find(|r| r.kind == RunKind::Void && r.spend.as_deref() == Some(&id))
        {
            return Ok(((old.clone(), true), None));
        }
        let run_id = ids::derive_id("run_", &[goal, "void", &id, &ctx.now.to_string(), &nonce]);
        let mut run = Run::new(
            run_id.clone(),
            RunKind::Void,
            goal,
            agent.as_deref(),
            ctx.now,
        );
        run.spend = Some(id.clone());
        run.reason = Some(reason.clone());
        crate::ops::append_run(state, goal, &mut run);
        let message = Message::new(
            "quota void",
            format!("quota void {id}: {}", ids::headline(&reason, 60)),
        )
        .trailer("Loopx-Run", run_id);
        Ok(((run, false), Some(message)))
    })?;
    let (void, replayed) = done.value;
    let (_, state) = ctx.load()?;
    let usage = quota::usage(ctx.goal(&state)?, ctx.now);
    Ok(VoidReport {
        void,
        replayed,
        quota: usage,
        commit: done.commit,
    })
}

#[derive(Debug, Serialize)]
pub struct QuotaReport {
    pub quota: Usage,
    pub compute: f64,
    pub slot_minutes: u32,
    pub spends: Vec<Run>,
}

pub fn show(ctx: &Context) -> Result<QuotaReport> {
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    Ok(QuotaReport {
        quota: quota::usage(gs, ctx.now),
        compute: gs.goal.quota.compute,
        slot_minutes: gs.goal.quota.slot_minutes,
        spends: quota::counted_spends(gs, ctx.now)
            .into_iter()
            .map(|r| gs.runs[r.id].clone())
            .collect(),
    })
}
