//! `git loopx import loopx` (the import is built with the `import-loopx`
//! feature)

use std::path::PathBuf;

#[cfg(feature = "import-loopx")]
use {
    crate::cli::Output,
    crate::ops::import,
    crate::render,
    crate::session::Context,
    crate::{Error, Result},
};

/// Bring state over from another tool, as one commit.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    from: From,
}

#[derive(Debug, clap::Subcommand)]
enum From {
    Loopx(LoopxArgs),
}

/// Import a LoopX 2.x state: goals, todos, gates, agents, live claims and
/// quota spends.
///
/// Reads PATH/.loopx/registry.json (the goals) and, under the runtime root,
/// the goals' SQLite authority stores (todos and task leases) and their quota
/// spend records. Everything is written as one commit; what has no
/// equivalent here is listed with its LoopX id. Importing again adds what
/// is new and updates the todos that changed in LoopX and not here (one
/// changed on both sides is kept and listed). LoopX's files are only read.
#[derive(Debug, clap::Args)]
struct LoopxArgs {
    /// The LoopX project directory, the one holding `.loopx/registry.json`
    /// (default: the current directory).
    #[arg(value_name = "PATH", default_value = ".")]
    path: PathBuf,
    /// LoopX's runtime root (default: $LOOPX_RUNTIME_ROOT, else ~/.loopx).
    #[arg(long, value_name = "DIR")]
    runtime_root: Option<PathBuf>,
    /// Import only this LoopX goal (repeatable; default: every goal).
    #[arg(long = "loopx-goal", value_name = "ID")]
    goals: Vec<String>,
    /// Show what would be imported; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Overwrite a goal that already exists here, and its imported todos,
    /// with the LoopX version (other todos of the goal are kept).
    #[arg(long)]
    replace: bool,
}

#[cfg(feature = "import-loopx")]
pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    let From::Loopx(args) = &args.from;
    let runtime_root = match &args.runtime_root {
        Some(dir) => dir.clone(),
        None => match std::env::var_os("LOOPX_RUNTIME_ROOT").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".loopx"))
                .ok_or_else(|| Error::invalid_input("HOME is not set: pass --runtime-root DIR"))?,
        },
    };
    let report = import::import(
        ctx,
        &import::ImportArgs {
            project: args.path.clone(),
            runtime_root,
            goals: args.goals.clone(),
            dry_run: args.dry_run,
            replace: args.replace,
        },
    )?;
    if !args.dry_run {
        crate::ops::repos::register(ctx);
    }
    let text = render::import::import(&report);
    Ok(Output::new(report, text))
}
