//! `git loopx check`

use std::path::PathBuf;

use crate::cli::Output;
use crate::ops::check;
use crate::render;
use crate::session::Context;
use crate::Result;

/// Scan the state, and any files named, for credentials.
///
/// Applies the rules every write and `sync` apply (tokens of GitHub,
/// GitLab, Slack, OpenAI, Anthropic, Google, Stripe, npm, Hugging Face;
/// AWS keys; private key blocks; JWTs; bearer tokens; passwords in URLs;
/// `password=…` style assignments; also split over lines or base64-encoded)
/// to every file of the tree at the tip of loopx-state, and to every path
/// named. Prints one line per hit, `file:line: rule: excerpt`, the secret
/// itself masked.
///
/// Exits 0 when nothing is found, 1 (`leak_detected`) when something is,
/// after printing the report. `--allow-secret-pattern RULE` lets a rule's
/// hits pass (they are listed as allowed).
///
/// Examples:
///   git loopx check
///   git loopx check --path docs --path notes.md
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Also scan this file, or every file under this directory (`.git` is
    /// skipped, links are not followed, binary files and files over 16 MiB
    /// are skipped and counted). Repeatable. Without a state in this
    /// repository, only these paths are scanned.
    #[arg(long = "path", value_name = "P")]
    paths: Vec<PathBuf>,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let report = check::check(ctx, &args.paths)?;
    let failure = check::failure(&report);
    let text = render::check::check(&report);
    let mut out = Output::new(report, text);
    out.failure = failure;
    Ok(out)
}
