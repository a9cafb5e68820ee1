//! Host-local, disposable bookkeeping under `.git/loopx/` (never on the
//! branch): the epochs of the leases this host's agents were granted, so a
//! later write by the same agent is fenced without the agent passing `--epoch`;
//! and the `run` turns that were stopped, whose writes are refused from then
//! on (the turn's processes, escaped ones included, are on this host).
//!
//! Grants are host records (`HostRecords::get`): appended to one file,
//! so a claim creates no file.

use crate::model::{Code, Refusal};
use crate::session::Context;
use crate::Result;

fn key(agent: &str, todo: &str) -> String {
    format!("grant\0{agent}\0{todo}")
}

/// The epoch `agent` was granted on `todo` from this host, if recorded.
pub fn granted_epoch(ctx: &Context, agent: &str, todo: &str) -> Option<u64> {
    let bytes = ctx.store.records().get(&key(agent, todo))?;
    String::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Records a granted lease. Losing the record only weakens fencing to the
/// holder check, so a failure to write it is not an error.
pub fn record_grant(ctx: &Context, agent: &str, todo: &str, epoch: u64) {
    ctx.store
        .records()
        .set(&key(agent, todo), epoch.to_string().as_bytes());
}

/// Forgets a lease that ended (release, done, handoff).
pub fn forget_grant(ctx: &Context, agent: &str, todo: &str) {
    ctx.store.records().set(&key(agent, todo), b"");
}

/// The epoch a write by `agent` on `todo` must match: `--epoch`, else the
/// host-local record.
pub fn expected_epoch(ctx: &Context, agent: &str, todo: &str, flag: Option<u64>) -> Option<u64> {
    flag.or_else(|| granted_epoch(ctx, agent, todo))
}

fn turn_key(turn: &str) -> String {
    format!("turn-ended\0{turn}")
}

/// Records that `git loopx run` stopped turn `turn`, and why: from now on
/// a write naming it (`--turn`, or `LOOPX_TURN` in the writer's
/// environment) is refused ([`check_turn_open`]).
pub fn end_turn(ctx: &Context, turn: &str, why: &str) {
    ctx.store.records().set(&turn_key(turn), why.as_bytes());
}

/// Refuses a write for turn `turn` once `run` stopped it: a process the
/// turn left behind (one that left its process group, say) must not write
/// back with the turn's claim after the turn was over.
pub fn check_turn_open(ctx: &Context, turn: &str) -> Result<()> {
    let Some(why) = ctx.store.records().get(&turn_key(turn)) else {
        return Ok(());
    };
    Err(Refusal::new(
        Code::StaleEpoch,
        format!(
            "turn {turn} is over: {}; what it writes now is refused",
            String::from_utf8_lossy(&why)
        ),
    )
    .with_hint(
        "a process of a stopped turn writes nothing; `git loopx should-run` decides the next turn",
    )
    .into())
}

/// [`check_turn_open`] for the turn named by `LOOPX_TURN` in this
/// process's environment, as `run` gives it to the agent and everything
/// the agent starts inherits.
pub fn check_own_turn_open(ctx: &Context) -> Result<()> {
    match std::env::var("LOOPX_TURN") {
        Ok(turn) if !turn.trim().is_empty() => check_turn_open(ctx, turn.trim()),
        _ => Ok(()),
    }
}
