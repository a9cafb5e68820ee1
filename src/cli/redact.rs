//! `git loopx redact`

use crate::cli::Output;
use crate::ops::redact::{self, Scope, Secrets};
use crate::session::Context;
use crate::Result;

/// Remove a credential from the unpushed history of loopx-state.
///
/// Rewrites the commits not yet on any remote (not reachable from any
/// refs/remotes/*/loopx-state): the secret is replaced by `<redacted>` in
/// the files in scope and in every commit message, and loopx-state moves to
/// the rewritten commits (compare-and-swap: a write that lands meanwhile
/// makes this fail, and it can be run again). Prints each old -> new commit.
///
/// Refused when the secret is in history already pushed: that cannot be
/// taken back; rotate the credential instead.
///
/// Examples:
///   git loopx redact todo todo_3f2a9c1b7d4e --all-leaks
///   git loopx redact all --text 'the-leaked-password'
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct Args {
    /// Which files to rewrite: `todo` (one todo's), `run` (one run's), or
    /// `all` (every file the unpushed commits changed); commit messages are
    /// always rewritten.
    #[arg(value_parser = crate::ops::args::enum_arg::<Scope>)]
    scope: Scope,
    /// The todo or run id (a unique prefix is enough); not with `all`.
    #[arg(required_if_eq_any = [("scope", "todo"), ("scope", "run")])]
    id: Option<String>,
    /// The exact text to remove (repeatable).
    #[arg(
        long = "text",
        value_name = "SECRET",
        required_unless_present = "all_leaks",
        conflicts_with = "all_leaks"
    )]
    text: Vec<String>,
    /// Remove everything the credential scan finds in scope and in the
    /// unpushed commit messages.
    #[arg(long)]
    all_leaks: bool,
}

pub fn run(ctx: &Context, a: &Args) -> Result<Output> {
    if a.scope == Scope::All && a.id.is_some() {
        return Err(crate::Error::invalid_input("`redact all` takes no id"));
    }
    let what = if a.all_leaks {
        Secrets::AllLeaks
    } else {
        Secrets::Text(a.text.clone())
    };
    let r = redact::redact(ctx, a.scope, a.id.as_deref(), &what)?;
    let mut text = if r.rewritten.is_empty() {
        "nothing to rewrite: the secret is not in the unpushed history in scope\n".to_owned()
    } else {
        format!(
            "redacted {} secret(s): rewrote {} commit(s), {} file(s), {} message(s); loopx-state {} -> {}\n",
            r.secrets,
            r.rewritten.len(),
            r.files.len(),
            r.messages,
            r.tip_before.short(),
            r.tip.short()
        )
    };
    for w in &r.rewritten {
        text.push_str(&format!("  {} -> {}\n", w.old.short(), w.new.short()));
    }
    for f in &r.files {
        text.push_str(&format!("  file {f}\n"));
    }
    Ok(Output::new(r, text))
}
