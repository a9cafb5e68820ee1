//! The runtime hook programs (`git loopx hook claude-code|codex …`): what a
//! Claude Code or Codex session asks at its start, at each stop, and (Codex)
//! when a turn completes.
//!
//! - `Stop` decides with [`should_run::decide`] on one load of the state, in
//!   the same transaction that records the turn receipt (as `should-run
//!   --turn K` does), and answers with the next turn's prompt (rendered
//!   only then) while the decision is `run`. A loop guard lets the session
//!   stop after `max_blocks` blocks in a row with no new writeback by the
//!   agent.
//! - `SessionStart` gives the status and this turn's prompt.
//! - Codex `notify` records a host-local heartbeat.
//!
//! Turn keys are `<session>-<n>`: the session id made safe, and a counter
//! kept per session in a host record (`.git/loopx/records/`, see
//! [`session`]). The counter moves on only once the agent wrote back under
//! the current key, so a retried hook call, or a turn that did nothing,
//! gets the same key again and `quota spend --turn` stays one per turn.
//!
//! Nothing here prints, and every error is returned: the CLI turns it into
//! "not blocking" (fail open).

mod input;
pub mod session;

pub use input::{HookInput, NotifyInput};

use serde::Serialize;

use crate::model::ids::nonce;
use crate::model::should_run::{self, Decision};
use crate::model::{GoalState, RunKind};
use crate::ops::prompt::{self, PromptReport, Runtime};
use crate::ops::should_run::{find_receipt, new_receipt, TurnReceipt};
use crate::ops::status::{self, StatusReport};
use crate::session::{mutate_maybe, Context};
use crate::store::Oid;
use crate::Result;

use session::{AgentGuard, Session};

/// Blocks in a row, with no new writeback by the agent, before the Stop
/// hook lets the session end anyway.
pub const DEFAULT_MAX_BLOCKS: u32 = 3;

/// The git config key that sets the loop guard's limit.
pub const MAX_BLOCKS_CONFIG: &str = "loopx.hookMaxBlocks";

/// What the Stop hook decided.
#[derive(Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum StopOutcome {
    /// Keep the session working: `prompt` is the next turn's task.
    Block {
        prompt: String,
        receipt: TurnReceipt,
    },
    /// `should-run` says this agent should not run now.
    Skip {
        effective_action: &'static str,
        reason: String,
        /// The gates waiting for the person (said to them as the session ends).
        waiting: Vec<crate::model::gate::GateView>,
    },
    /// The loop guard: `blocks` blocks in a row without a new writeback.
    Guard { blocks: u32 },
}

#[derive(Debug, Serialize)]
pub struct StopReport {
    pub runtime: Runtime,
    pub agent: String,
    pub session: String,
    /// The turn key the next turn uses (also when not blocking).
    pub turn: String,
    #[serde(flatten)]
    pub outcome: StopOutcome,
    /// Blocks in a row without a new writeback, this one included.
    pub blocks: u32,
    pub max_blocks: u32,
    /// Configuration problems worked around (a bad `loopx.hookMaxBlocks`).
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

#[derive(Debug, Serialize)]
pub struct StartReport {
    pub runtime: Runtime,
    pub agent: String,
    pub session: String,
    pub turn: String,
    /// The turn receipt, when the turn runs.
    pub receipt: Option<TurnReceipt>,
    pub prompt: PromptReport,
    pub status: StatusReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

#[derive(Debug, Serialize)]
pub struct HeartbeatReport {
    pub runtime: Runtime,
    pub agent: String,
    pub recorded: session::Heartbeat,
}

/// The loop guard's limit: `--max-blocks`, else `loopx.hookMaxBlocks`, else
/// [`DEFAULT_MAX_BLOCKS`]; a config value that is not a number is reported
/// and the default used.
pub fn max_blocks(ctx: &Context, flag: Option<u32>, warnings: &mut Vec<String>) -> u32 {
    if let Some(n) = flag {
        return n;
    }
    match ctx.store.config_string(MAX_BLOCKS_CONFIG) {
        None => DEFAULT_MAX_BLOCKS,
        Some(text) => text.trim().parse().unwrap_or_else(|_| {
            warnings.push(format!(
                "{MAX_BLOCKS_CONFIG}=`{text}` is not a number; using {DEFAULT_MAX_BLOCKS}"
            ));
            DEFAULT_MAX_BLOCKS
        }),
    }
}

/// Where this session stands in `gs`: the turn number to use now (the
/// first at or after the recorded one that `agent` has not written back
/// under), how many writebacks `agent` has made, and how many of them were
/// made under this session's turn keys.
fn progress(gs: &GoalState, agent: &str, session: &str, recorded: &Session) -> (u32, u64, u64) {
    let prefix = format!("{session}-");
    let mut writebacks = 0u64;
    let mut used: Vec<u32> = Vec::new();
    for run in gs.runs.all_facts() {
        if run.kind != RunKind::Writeback || run.agent != Some(agent) {
            continue;
        }
        writebacks += 1;
        if let Some(n) = run
            .turn
            .and_then(|t| t.strip_prefix(&prefix))
            .and_then(|n| n.parse().ok())
        {
            used.push(n);
        }
    }
    let own = used.len() as u64;
    let mut turn = recorded.turn.max(1);
    while used.contains(&turn) {
        turn += 1;
    }
    (turn, writebacks, own)
}

/// One decision of a hook, made inside the transaction.
struct Step {
    turn: u32,
    /// The agent's writebacks, and this session's.
    writebacks: u64,
    own: u64,
    /// Blocks in a row: this session's, with no writeback under its turn
    /// keys; the agent's, over all its sessions, with no writeback at all.
    blocks: u32,
    agent_blocks: u32,
    decision: Decision,
    prompt: Option<PromptReport>,
    receipt: Option<TurnReceipt>,
}

/// Which hook a step answers.
#[derive(Clone, Copy)]
enum Hook {
    /// `Stop`: the turn runs while the loop guard allows `max_blocks`
    /// blocks in a row; the prompt is shown only to block.
    Stop { max_blocks: u32 },
    /// `SessionStart`: the turn runs when `should-run` says so, and the
    /// prompt is shown whatever the decision.
    Start,
}

/// Decides on the state, and records the turn receipt when the turn runs
/// (for `Stop`, when the loop guard lets it): one load of the state (the
/// transaction's), and the prompt rendered once, where the hook shows it.
fn step(
    ctx: &Context,
    runtime: Runtime,
    agent: &str,
    session: &str,
    recorded: &Session,
    guard: &AgentGuard,
    hook: Hook,
) -> Result<(Step, Option<Oid>)> {
    let nonce = nonce();
    let done = mutate_maybe(ctx, |state, goal| {
        // Gates whose resolution does not count under `gate_signers` are
        // open for the decision (as for `should-run`), judged at the commit
        // the decision is made on.
        let unsigned = match ctx.deciding_on() {
            Some(base) => crate::ops::signers::unsigned_resolutions_of(ctx, &base, state, goal)?,
            None => Default::default(),
        };
        let reopened;
        let view: &crate::model::State = if unsigned.is_empty() {
            state
        } else {
            let mut v = state.clone();
            crate::ops::signers::reopen(&mut v, goal, &unsigned);
            reopened = v;
            &reopened
        };
        let gs = &view.goals[goal];
        let (turn, writebacks, own) = progress(gs, agent, session, recorded);
        // A sibling session's writeback is not this session's progress, and
        // a fresh session id starts no streak over: the agent's own count
        // goes on across its sessions.
        let blocks = if own == recorded.writebacks {
            recorded.blocks
        } else {
            0
        };
        let agent_blocks = if writebacks == guard.writebacks {
            guard.blocks
        } else {
            0
        };
        let key = session::turn_key(session, turn);
        let decision = should_run::decide(view, gs, Some(agent), &[], ctx.now);
        let (runs, shown) = match hook {
            Hook::Stop { max_blocks } => {
                let runs = decision.should_run && blocks.max(agent_blocks) < max_blocks;
                (runs, runs)
            }
            Hook::Start => (decision.should_run, true),
        };
        let prompt = shown.then(|| {
            prompt::report(
                gs,
                &view.meta.default_goal,
                Some(agent),
                (runtime, prompt::Surface::Cli),
                decision.clone(),
                key.clone(),
                ctx.now,
            )
        });
        let mut step = Step {
            turn,
            writebacks,
            own,
            blocks,
            agent_blocks,
            decision,
            prompt,
            receipt: None,
        };
        if !runs {
            return Ok((step, None));
        }
        if let Some(old) = find_receipt(gs, agent, &key) {
            step.receipt = Some(TurnReceipt {
                key,
                run: old.id,
                replayed: true,
            });
            return Ok((step, None));
        }
        let (run, message) = new_receipt(state, goal, agent, &key, &step.decision, ctx.now, &nonce);
        step.receipt = Some(TurnReceipt {
            key,
            run: run.id,
            replayed: false,
        });
        Ok((step, Some(message)))
    })?;
    Ok((done.value, done.commit))
}

/// The Stop hook: block with the next turn's prompt while `should-run`
/// says run and the loop guard allows it.
pub fn stop(
    ctx: &Context,
    runtime: Runtime,
    input: &HookInput,
    max_blocks_flag: Option<u32>,
) -> Result<StopReport> {
    let agent = ctx.require_agent()?.to_owned();
    let mut warnings = Vec::new();
    let max_blocks = max_blocks(ctx, max_blocks_flag, &mut warnings);
    let session = session::session_name(input.session_id.as_deref());
    let recorded = Session::load(ctx, runtime, &session);
    let guard = AgentGuard::load(ctx, runtime, &agent);
    let (step, commit) = step(
        ctx,
        runtime,
        &agent,
        &session,
        &recorded,
        &guard,
        Hook::Stop { max_blocks },
    )?;
    let turn = session::turn_key(&session, step.turn);
    // Blocks in a row as reported, and as kept for the next stop. A session
    // the guard let go stays let go, and so does every session of its agent,
    // until a writeback (the session's own, the agent's) starts the count
    // over: a fresh session id, or a sibling's work, buys no new blocks.
    let streak = step.blocks.max(step.agent_blocks);
    let waiting = step.decision.gates.clone();
    let (outcome, blocks, kept, agent_kept) =
        match (step.decision.should_run, step.prompt, step.receipt) {
            (true, Some(prompt), Some(receipt)) => (
                StopOutcome::Block {
                    prompt: prompt.prompt,
                    receipt,
                },
                streak + 1,
                step.blocks + 1,
                step.agent_blocks + 1,
            ),
            (true, _, _) => (
                StopOutcome::Guard { blocks: streak },
                streak,
                step.blocks,
                step.agent_blocks,
            ),
            (false, _, _) => (
                StopOutcome::Skip {
                    effective_action: step.decision.effective_action,
                    reason: step.decision.reason.clone(),
                    waiting,
                },
                streak,
                0,
                0,
            ),
        };
    Session {
        turn: step.turn,
        blocks: kept,
        writebacks: step.own,
    }
    .save(ctx, runtime, &session)?;
    let released = match step.writebacks == guard.writebacks {
        true => guard.released,
        false => 0,
    };
    AgentGuard {
        blocks: agent_kept,
        writebacks: step.writebacks,
        released: released + u32::from(matches!(outcome, StopOutcome::Guard { .. })),
    }
    .save(ctx, runtime, &agent)?;
    Ok(StopReport {
        runtime,
        agent,
        session,
        turn,
        outcome,
        blocks,
        max_blocks,
        warnings,
        commit,
    })
}

/// The SessionStart hook: the status and this turn's prompt; the turn's
/// receipt is recorded when it runs. The loop guard starts over.
pub fn session_start(ctx: &Context, runtime: Runtime, input: &HookInput) -> Result<StartReport> {
    let agent = ctx.require_agent()?.to_owned();
    let session = session::session_name(input.session_id.as_deref());
    let recorded = Session::load(ctx, runtime, &session);
    let guard = AgentGuard::load(ctx, runtime, &agent);
    let (step, commit) = step(
        ctx,
        runtime,
        &agent,
        &session,
        &recorded,
        &guard,
        Hook::Start,
    )?;
    Session {
        turn: step.turn,
        blocks: 0,
        writebacks: step.own,
    }
    .save(ctx, runtime, &session)?;
    let status = status::status(ctx)?;
    Ok(StartReport {
        runtime,
        agent,
        turn: session::turn_key(&session, step.turn),
        session,
        receipt: step.receipt,
        prompt: step.prompt.expect("a step always renders its prompt"),
        status,
        commit,
    })
}

/// Codex `notify`: records when `agent`'s last turn completed, host-locally.
pub fn heartbeat(ctx: &Context, runtime: Runtime, input: &NotifyInput) -> Result<HeartbeatReport> {
    let agent = ctx.require_agent()?.to_owned();
    let recorded = session::Heartbeat {
        at: ctx.now,
        thread_id: input.thread_id.clone(),
        turn_id: input.turn_id.clone(),
        cwd: input.cwd.clone(),
    };
    recorded.save(ctx, runtime, &agent)?;
    Ok(HeartbeatReport {
        runtime,
        agent,
        recorded,
    })
}
