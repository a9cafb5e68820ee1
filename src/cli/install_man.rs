//! `git loopx install-man`

use std::path::PathBuf;

use clap::CommandFactory as _;

use crate::cli::{Cli, Output};
use crate::ops::install_man::{self, Page};
use crate::render;
use crate::{Error, Result};

/// Install the manual pages, so that `git loopx --help` (which git turns
/// into `man git-loopx`) and `man git-loopx-todo` find them.
///
/// Writes git-loopx.1 and one page per command (git-loopx-todo.1,
/// git-loopx-todo-add.1, …), made from the same definitions as `--help`.
/// Run it again after an upgrade; a file there that git-loopx did not write
/// is not replaced (unless --force).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The directory to write the pages into [default: share/man/man1 beside
    /// the directory of this program, e.g. ~/.cargo/share/man/man1 after
    /// `cargo install`].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Replace files in DIR that git-loopx did not write.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: &Args) -> Result<Output> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => default_dir()?,
    };
    let manpath = std::env::var("MANPATH").ok();
    let path = std::env::var("PATH").ok();
    let report = install_man::install(
        &dir,
        &pages(),
        args.force,
        manpath.as_deref(),
        path.as_deref(),
    )?;
    let text = render::help::install_man(&report);
    Ok(Output::new(report, text))
}

/// `<bin>/../share/man/man1`, `<bin>` the directory of this program.
fn default_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::invalid_input(format!("cannot find this program's path: {e}")))?;
    let prefix = exe.parent().and_then(|bin| bin.parent()).ok_or_else(|| {
        Error::invalid_input(format!(
            "{} has no parent directory to put share/man in; pass --dir",
            exe.display()
        ))
    })?;
    Ok(prefix.join("share").join("man").join("man1"))
}

/// Every page: the main one, then each visible command's, depth first.
pub fn pages() -> Vec<Page> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    collect(&cmd, &mut pages);
    pages
}

fn collect(cmd: &clap::Command, pages: &mut Vec<Page>) {
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut roff)
        .expect("rendering into memory");
    let name = cmd.get_display_name().unwrap_or(cmd.get_name());
    pages.push(Page {
        name: format!("{name}.1"),
        roff,
    });
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        collect(sub, pages);
    }
}
