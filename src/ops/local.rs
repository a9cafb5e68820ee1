//! Host-local, disposable bookkeeping under `.git/loopx/` (never on the
//! branch): the epochs of the leases this host's agents were granted, so a
//! later write by the same agent is fenced without the agent passing `--epoch`.
//!
//! Grants are host records (`GixStore::host_record`): appended to one file,
//! so a claim creates no file.

use crate::ops::Context;

fn key(agent: &str, todo: &str) -> String {
    format!("grant\0{agent}\0{todo}")
}

/// The epoch `agent` was granted on `todo` from this host, if recorded.
pub fn granted_epoch(ctx: &Context, agent: &str, todo: &str) -> Option<u64> {
    let bytes = ctx.store.host_record(&key(agent, todo))?;
    String::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Records a granted lease. Losing the record only weakens fencing to the
/// holder check, so a failure to write it is not an error.
pub fn record_grant(ctx: &Context, agent: &str, todo: &str, epoch: u64) {
    ctx.store
        .set_host_record(&key(agent, todo), epoch.to_string().as_bytes());
}

/// Forgets a lease that ended (release, done, handoff).
pub fn forget_grant(ctx: &Context, agent: &str, todo: &str) {
    ctx.store.set_host_record(&key(agent, todo), b"");
}

/// The epoch a write by `agent` on `todo` must match: `--epoch`, else the
/// host-local record.
pub fn expected_epoch(ctx: &Context, agent: &str, todo: &str, flag: Option<u64>) -> Option<u64> {
    flag.or_else(|| granted_epoch(ctx, agent, todo))
}
