//! `git loopx review`

use crate::cli::Output;
use crate::ops::review;
use crate::render;
use crate::session::Context;
use crate::Result;

/// The owner's packet: decisions waiting, what was delivered with its
/// evidence, and what changed since the last review.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Review from this state commit or ref (default: refs/loopx/reviewed).
    #[arg(long, value_name = "REV")]
    since: Option<String>,
    /// Mark everything up to now as reviewed (moves refs/loopx/reviewed).
    #[arg(long)]
    ack: bool,
    /// Markdown, for a pull-request comment.
    #[arg(long)]
    markdown: bool,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let r = review::review(ctx, args.since.as_deref(), args.ack)?;
    let text = render::review::review(&r, args.markdown);
    Ok(Output::markdown(r, text, args.markdown))
}
