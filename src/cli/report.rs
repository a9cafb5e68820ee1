//! `git loopx report`

use crate::cli::Output;
use crate::ops::{report, Context};
use crate::render;
use crate::Result;

/// What an unattended stretch did: per goal, what was delivered (todos done
/// with evidence, writebacks), what waits for you, the quota spent against
/// the allowance, failures, and each agent's activity.
///
/// --markdown is safe to post (the rules of `pr --markdown`: mentions,
/// references and markup in state text are made inert); --html is the text
/// in a page of its own (`serve`'s page links to /report.html).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where the stretch starts: a duration back from now (24h, 4d) or a
    /// revision of the state branch.
    #[arg(long, default_value = "24h", value_name = "DURATION|REV")]
    since: String,
    /// Markdown, to post where people read.
    #[arg(long, conflicts_with = "html")]
    markdown: bool,
    /// A self-contained HTML page.
    #[arg(long)]
    html: bool,
}

pub fn run(ctx: &mut Context, args: &Args) -> Result<Output> {
    let r = report::report(ctx, &args.since)?;
    let text = match args.html {
        true => render::report::html(&r),
        false => render::report::report(&r, args.markdown),
    };
    Ok(Output::markdown(&r, text, args.markdown))
}
