//! `git loopx diff`

use crate::cli::Output;
use crate::ops::diff;
use crate::render;
use crate::session::Context;
use crate::Result;

/// What changed in the state between two state commits, as meaning, not
/// lines: one line per fact ("todo … claimed by agent-a (epoch 2)", "gate …
/// resolved: approve by …", "writeback … on …", "handoff …", "spend …").
///
/// With no argument, the last state commit against its first parent; a root
/// commit is compared with nothing. Every goal is shown, with the agents
/// and loopx.yaml, unless `--goal` (or LOOPX_GOAL) names one.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    args: diff::DiffArgs,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let args = &args.args;
    let r = diff::diff(ctx, args.range.as_deref(), args.patch)?;
    let text = if args.markdown {
        let mut whole = String::from("git loopx diff");
        if let Some(range) = &args.range {
            whole.push(' ');
            whole.push_str(range);
        }
        if args.patch {
            whole.push_str(" --patch");
        }
        whole.push_str(" --markdown");
        render::diff::markdown(&r, &whole)
    } else {
        render::diff::text(&r)
    };
    Ok(Output::markdown(r, text, args.markdown))
}
