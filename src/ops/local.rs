//! Host-local, disposable bookkeeping under `.git/loopx/` (never on the
//! branch): the epochs of the leases this host's agents were granted, so a
//! later write by the same agent is fenced without the agent passing `--epoch`.

use std::path::PathBuf;

use crate::ops::Context;

fn lease_file(ctx: &Context, agent: &str, todo: &str) -> PathBuf {
    ctx.store.local_dir().join("leases").join(agent).join(todo)
}

/// The epoch `agent` was granted on `todo` from this host, if recorded.
pub fn granted_epoch(ctx: &Context, agent: &str, todo: &str) -> Option<u64> {
    std::fs::read_to_string(lease_file(ctx, agent, todo))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Records a granted lease. Failure to record only weakens fencing to the
/// holder check, so it is logged, not fatal.
pub fn record_grant(ctx: &Context, agent: &str, todo: &str, epoch: u64) {
    let path = lease_file(ctx, agent, todo);
    let result = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, format!("{epoch}\n")));
    if let Err(e) = result {
        tracing::warn!("could not record lease in {}: {e}", path.display());
    }
}

/// Forgets a lease that ended (release, done, handoff).
pub fn forget_grant(ctx: &Context, agent: &str, todo: &str) {
    let _ = std::fs::remove_file(lease_file(ctx, agent, todo));
}

/// The epoch a write by `agent` on `todo` must match: `--epoch`, else the
/// host-local record.
pub fn expected_epoch(ctx: &Context, agent: &str, todo: &str, flag: Option<u64>) -> Option<u64> {
    flag.or_else(|| granted_epoch(ctx, agent, todo))
}
