//! `git loopx repos …`

use std::path::PathBuf;

use clap::Subcommand;

use crate::cli::{GlobalArgs, Output};
use crate::ops::repos;
use crate::Result;

/// Your list of repositories under git-loopx, which `status --all-repos`
/// and `serve --all-repos` read.
///
/// It is kept for you alone, outside every repository:
/// `$XDG_CONFIG_HOME/git-loopx/repos`, else `~/.config/git-loopx/repos`,
/// one path a line (a path with a newline or another control character,
/// trailing white space or bytes that are not UTF-8 cannot be listed).
/// `init`, `hooks install` and `import` add the repository they run in (set
/// LOOPX_NO_REPOS_LIST=1 to stop them).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: ReposCommand,
}

#[derive(Debug, Subcommand)]
enum ReposCommand {
    /// Add the repository containing PATH (default: the current directory).
    Add {
        /// A directory in the repository (any of its worktrees).
        path: Option<PathBuf>,
    },
    /// Remove PATH from the list (it need not exist any more).
    Remove {
        /// The path as listed, or a directory in the repository.
        path: PathBuf,
    },
    /// List the repositories, one path a line.
    List,
}

pub fn run(global: &GlobalArgs, args: &Args) -> Result<Output> {
    // `-C DIR` is where a relative PATH, and no PATH, start from.
    let here = || -> Result<PathBuf> {
        let cwd = std::env::current_dir().map_err(|e| {
            crate::Error::invalid_input(format!("cannot read the current directory: {e}"))
        })?;
        Ok(global.dir.as_ref().map_or(cwd.clone(), |d| cwd.join(d)))
    };
    match &args.command {
        ReposCommand::Add { path } => {
            let dir = match path {
                Some(p) => here()?.join(p),
                None => here()?,
            };
            let r = repos::add(&dir)?;
            let text = match r.changed {
                true => format!("added {}\n", r.path.display()),
                false => format!("{} is already listed\n", r.path.display()),
            };
            Ok(Output::new(r, text))
        }
        ReposCommand::Remove { path } => {
            let r = repos::remove(&here()?.join(path))?;
            let text = format!("removed {}\n", r.path.display());
            Ok(Output::new(r, text))
        }
        ReposCommand::List => {
            let file = repos::list_file()?;
            let list = repos::read()?;
            let mut text = String::new();
            for p in &list {
                let gone = if p.exists() { "" } else { "  (missing)" };
                text.push_str(&format!("{}{gone}\n", p.display()));
            }
            if list.is_empty() {
                text.push_str(&format!("no repositories listed in {}\n", file.display()));
            }
            let report = serde_json::json!({ "file": file, "repos": list });
            Ok(Output::new(report, text))
        }
    }
}
