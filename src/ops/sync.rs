//! `sync [--remote R] [--allow-unrelated] [--timeout D] [--prune-leases]`:
//! the command around the replication protocol (`replicate`): it prepares
//! the remote (name, network limit, pace), takes this clone's turn, and
//! runs a sync — again while `--prune-leases` finds a full batch of lease
//! refs to delete.

use std::time::Duration;

pub use crate::replicate::shared::MAX_MERGED_HEADS;
use crate::replicate::{self, SyncReport};
use crate::session::Context;
use crate::Result;

/// How a sync runs.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// `--remote`; `None`: `loopx.remote`, else `origin`.
    pub remote: Option<String>,
    /// `--allow-unrelated`: merge a remote state that shares no history with
    /// the local one (refused otherwise).
    pub allow_unrelated: bool,
    /// `--timeout`: the limit on each network step; `None`: git config
    /// `loopx.syncTimeout`, else [`crate::git_cmd::DEFAULT_NETWORK_TIMEOUT`]. Zero
    /// turns the limit off.
    pub timeout: Option<Duration>,
    /// `--prune-leases`: sync again while a sync deletes as many lease refs
    /// as one may.
    pub prune_leases: bool,
}

impl SyncOptions {
    pub fn remote(remote: Option<&str>) -> Self {
        SyncOptions {
            remote: remote.map(str::to_owned),
            ..SyncOptions::default()
        }
    }
}

/// `sync [--remote R] [--allow-unrelated] [--timeout D]`.
pub fn sync(ctx: &Context, opts: &SyncOptions) -> Result<SyncReport> {
    let remote = replicate::prepare(ctx, opts.remote.as_deref(), opts.timeout)?;
    let _turn = replicate::sync_turn(ctx);
    let mut report = replicate::sync_with(ctx, &remote, opts.allow_unrelated, opts.prune_leases)?;
    let mut last = report.leases_deleted;
    while opts.prune_leases && last >= replicate::shared::MAX_LEASE_DELETIONS {
        let mut more = replicate::sync_with(ctx, &remote, opts.allow_unrelated, true)?;
        last = more.leases_deleted;
        more.leases_deleted += report.leases_deleted;
        more.rounds += report.rounds;
        report.conflicts.append(&mut more.conflicts);
        report.lost_claims.append(&mut more.lost_claims);
        more.conflicts = report.conflicts;
        more.lost_claims = report.lost_claims;
        report = more;
    }
    Ok(report)
}
