//! `git loopx doctor`

use crate::cli::Output;
use crate::model::{Code, Refusal};
use crate::ops::{doctor, Context};
use crate::render;
use crate::Result;

/// Check the environment and the state, and say how to fix what is wrong.
///
/// Exits 3 when a check fails.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also run `git fsck` on the repository.
    #[arg(long)]
    fsck: bool,
    /// Repair what can be repaired safely, and say what was done: remove ref
    /// lock files left by killed writers (only when no git-loopx writer is
    /// running), and when the objects of loopx-state's tip are gone (a
    /// `git gc --prune=now` beside a writer), move the branch to a new commit
    /// restoring the newest intact state from its reflog, listing the writes
    /// that could not be recovered.
    #[arg(long)]
    repair: bool,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = doctor::doctor(ctx, args.fsck, args.repair)?;
    let mut out = Output::new(&report, render::text::doctor(&report));
    if !report.healthy {
        out.failure = Some(Refusal::new(Code::StateInvalid, "doctor found problems").into());
    }
    Ok(out)
}
