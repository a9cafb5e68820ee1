//! `git loopx sync`

use std::time::Duration;

use crate::cli::Output;
use crate::ops::sync;
use crate::session::Context;
use crate::Result;

/// Fetch the remote's loopx-state, merge it, and push with a pinned lease.
///
/// Uses the git program, so your ssh config and credential helpers apply.
/// Fields changed on both sides go to the higher rev and the overwritten
/// value is reported; notes are merged as a union; a claim on the remote
/// always beats a local one. Syncs in one clone take turns.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (default: git config loopx.remote, else origin).
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
    /// Merge the remote's loopx-state even if it shares no history with the
    /// local one (made by another `init`, or force-pushed); refused otherwise.
    #[arg(long)]
    pub allow_unrelated: bool,
    /// Stop a fetch or push that has not finished after this long, e.g. 30s,
    /// 10m; 0 waits forever (default: git config loopx.syncTimeout, else 2m).
    #[arg(long, value_name = "DURATION", value_parser = timeout_arg)]
    pub timeout: Option<Duration>,
    /// Delete every lease ref of an ended lease the remote can let go of
    /// now, however many (each sync deletes up to 256): for a remote where
    /// they piled up. A lease ref goes once its end has been published for
    /// git config loopx.leaseRefGrace (default 10m) and is on loopx-state.
    #[arg(long)]
    pub prune_leases: bool,
}

/// A `--timeout` value: a duration like 90s, 10m, or 0.
pub fn timeout_arg(text: &str) -> std::result::Result<Duration, String> {
    crate::model::parse_duration(text)
        .and_then(|s| u64::try_from(s).ok())
        .map(Duration::from_secs)
        .ok_or_else(|| format!("`{text}` is not a duration like 90s, 10m or 0"))
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let opts = sync::SyncOptions {
        remote: args.remote.clone(),
        allow_unrelated: args.allow_unrelated,
        timeout: args.timeout,
        prune_leases: args.prune_leases,
    };
    let r = sync::sync(ctx, &opts)?;
    let mut text = format!(
        "{}: {} with {} at {}\n",
        crate::ops::snake(&r.action),
        r.tip.short(),
        r.remote,
        r.remote_tip.short()
    );
    for c in &r.conflicts {
        text.push_str(&format!(
            "conflict {} {}: kept {} over {} ({})\n",
            c.entity, c.field, c.kept, c.lost, c.rule
        ));
    }
    for l in &r.lost_claims {
        text.push_str(&format!("your claim on {} lost to {}\n", l.todo, l.remote));
    }
    if r.deferred_heads > 0 {
        text.push_str(&format!(
            "{} more peer heads wait for the next sync (one sync merges at most {})\n",
            r.deferred_heads,
            sync::MAX_MERGED_HEADS
        ));
    }
    if r.leases_deleted > 0 {
        text.push_str(&format!(
            "deleted {} lease ref{} of ended leases\n",
            r.leases_deleted,
            if r.leases_deleted == 1 { "" } else { "s" }
        ));
    }
    Ok(Output::new(r, text))
}
