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
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = doctor::doctor(ctx, args.fsck)?;
    let mut out = Output::new(&report, render::text::doctor(&report));
    if !report.healthy {
        out.failure = Some(Refusal::new(Code::StateInvalid, "doctor found problems").into());
    }
    Ok(out)
}
