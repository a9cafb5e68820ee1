//! `git loopx pr`

use crate::cli::Output;
use crate::ops::pr;
use crate::render;
use crate::session::Context;
use crate::Result;

/// The agent work behind a pull request: for the code commits of a range,
/// the todos they belong to (by `Loopx-Todo:` trailer, or by a writeback
/// naming the commit as an artifact), with their claims, writebacks,
/// validation, evidence, handoffs, gates and quota spent; commits that
/// belong to no todo are listed as such.
///
/// `--markdown` prints a comment to post on the pull request: it starts
/// with the line `<!-- git-loopx pr -->` (to find and update it), escapes
/// every piece of agent-written text, and is cut to 65,536 characters with
/// a last line saying what was left out.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pull request's commits: `BASE..HEAD` (any revisions git takes:
    /// `origin/main..HEAD`, commit ids). `BASE..` ends at HEAD; a single
    /// revision (or `..HEAD`) starts at its merge base with the default
    /// branch. Default: the merge base of HEAD with the default branch
    /// (what `origin/HEAD` points at, else `main`, else `master`) up to HEAD.
    #[arg(value_name = "BASE..HEAD")]
    range: Option<String>,
    /// Markdown, for a pull-request comment (stdout only).
    #[arg(long)]
    markdown: bool,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let r = pr::pr(ctx, args.range.as_deref())?;
    let text = render::pr::pr(&r, args.markdown);
    Ok(Output::markdown(r, text, args.markdown))
}
