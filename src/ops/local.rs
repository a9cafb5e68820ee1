//! Host-local, disposable bookkeeping under `.git/loopx/` (never on the
//! branch): the epochs of the leases this host's agents were granted, so a
//! later write by the same agent is fenced without the agent passing `--epoch`.
//!
//! Grants are host records (`GixStore::host_record`): appended to one file,
//! so a claim creates no file. Earlier versions kept one file per grant
//! under `.git/loopx/leases/<agent>/<todo>`; those are still read, and
//! removed when the lease ends.

use std::path::PathBuf;

use crate::ops::Context;

fn key(agent: &str, todo: &str) -> String {
    format!("grant\0{agent}\0{todo}")
}

fn legacy_file(ctx: &Context, agent: &str, todo: &str) -> PathBuf {
    ctx.store.local_dir().join("leases").join(agent).join(todo)
}

/// The epoch `agent` was granted on `todo` from this host, if recorded.
pub fn granted_epoch(ctx: &Context, agent: &str, todo: &str) -> Option<u64> {
    let recorded = match ctx.store.host_record(&key(agent, todo)) {
        Some(bytes) => String::from_utf8(bytes).ok(),
        None => std::fs::read_to_string(legacy_file(ctx, agent, todo)).ok(),
    };
    recorded.and_then(|s| s.trim().parse().ok())
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
    let _ = std::fs::remove_file(legacy_file(ctx, agent, todo));
}

/// The epoch a write by `agent` on `todo` must match: `--epoch`, else the
/// host-local record.
pub fn expected_epoch(ctx: &Context, agent: &str, todo: &str, flag: Option<u64>) -> Option<u64> {
    flag.or_else(|| granted_epoch(ctx, agent, todo))
}
