//! `git loopx sync`

use crate::cli::Output;
use crate::ops::{sync, Context};
use crate::Result;

/// Fetch the remote's loopx-state, merge it, and push with a pinned lease.
///
/// Uses the git program, so your ssh config and credential helpers apply.
/// Fields changed on both sides go to the higher rev and the overwritten
/// value is reported; a claim on the remote always beats a local one.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (default: git config loopx.remote, else origin).
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let r = sync::sync(ctx, args.remote.as_deref())?;
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
    Ok(Output::new(&r, text))
}
