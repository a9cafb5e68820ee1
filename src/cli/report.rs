//! `git loopx report`

use crate::cli::Output;
use crate::ops::report;
use crate::render;
use crate::session::Context;
use crate::Result;

/// What an unattended stretch did: per goal, what waits for you (with the
/// command that answers it), what comes next, the risks (failing agents,
/// expired leases, throttled windows, todos done with no proof), what was
/// delivered, failures, the quota spent against each window's allowance,
/// handoffs, and each agent's activity. Archived runs count.
///
/// --markdown is safe to post (the rules of `pr --markdown`: mentions,
/// references and markup in state text are made inert); --html is a page
/// of its own that reads on a phone (`serve`'s page links to /report.html).
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
    /// Show at most this many items in each list, then say how many more
    /// there are (0: every item).
    #[arg(long, default_value_t = 20, value_name = "N")]
    limit: usize,
}

pub fn run(ctx: &mut Context, args: &Args) -> Result<Output> {
    let r = report::report(ctx, &args.since)?;
    let text = match args.html {
        true => render::report::html(&r, args.limit, None),
        false => render::report::report(&r, args.markdown, args.limit),
    };
    Ok(Output::markdown(r, text, args.markdown))
}
