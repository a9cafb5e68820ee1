//! `git loopx doctor`

use crate::cli::Output;
use crate::model::{Code, Refusal};
use crate::ops::{check_state, doctor};
use crate::render;
use crate::session::Context;
use crate::Result;

/// Check the environment and the state, and say how to fix what is wrong.
///
/// With `--rev <commit>`, check one state commit instead: every file and
/// every cross-reference, each problem with its file, line and field.
///
/// Exits 3 when a check fails (`--rev`: when the commit has an error;
/// warnings are shown and do not fail).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also run `git fsck` on the repository.
    #[arg(long, conflicts_with = "rev")]
    fsck: bool,
    /// Repair what can be repaired safely, and say what was done: remove ref
    /// lock files left by killed writers (only when no git-loopx writer is
    /// running), and when the objects of loopx-state's tip are gone (a
    /// `git gc --prune=now` beside a writer), move the branch to a new commit
    /// restoring the newest intact state from its reflog, listing the writes
    /// that could not be recovered.
    #[arg(long, conflicts_with = "rev")]
    repair: bool,
    /// Check this state commit (any revision git takes: loopx-state~2, a
    /// pull request's head, origin/loopx-state, a commit id) and report
    /// every problem: files that do not parse, files in the wrong place,
    /// duplicate ids, references to todos or runs that do not exist,
    /// impossible claims, gates whose status and decision disagree. It need
    /// not be on loopx-state, and nothing is written.
    #[arg(long, value_name = "COMMIT")]
    rev: Option<String>,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    if let Some(rev) = &args.rev {
        let report = check_state::check_rev(ctx, rev)?;
        let failure = (!report.valid).then(|| {
            Refusal::new(
                Code::StateInvalid,
                format!(
                    "state commit {} has {} error(s)",
                    report.commit.short(),
                    report.errors
                ),
            )
            .into()
        });
        let text = render::text::state_check(&report);
        let mut out = Output::new(report, text);
        out.failure = failure;
        return Ok(out);
    }
    let report = doctor::doctor(ctx, args.fsck, args.repair)?;
    let failure =
        (!report.healthy).then(|| Refusal::new(Code::StateInvalid, "doctor found problems").into());
    let text = render::text::doctor(&report);
    let mut out = Output::new(report, text);
    out.failure = failure;
    Ok(out)
}
