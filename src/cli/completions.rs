//! `git loopx completions`

use clap::CommandFactory as _;

use crate::cli::{Cli, Output};
use crate::Result;

/// Print a shell completion script on stdout.
///
/// bash: `git loopx completions bash >
/// ~/.local/share/bash-completion/completions/git-loopx` (bash-completion
/// loads it for `git-loopx`, and git's own completion for `git loopx
/// <TAB>`), or `source` it from ~/.bashrc after git's completion.
///
/// zsh: `git loopx completions zsh > ~/.zfunc/_git-loopx`, with ~/.zfunc
/// on `fpath` before `compinit` (zsh's git completion uses it for `git
/// loopx`).
///
/// fish: `git loopx completions fish >
/// ~/.config/fish/completions/git-loopx.fish`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shell {
    /// bash (with git's bash completion for `git loopx`).
    Bash,
    /// zsh.
    Zsh,
    /// fish.
    Fish,
}

#[derive(serde::Serialize)]
struct Report {
    shell: Shell,
    script: String,
}

pub fn run(args: &Args) -> Result<Output> {
    let script = script(args.shell);
    let text = script.clone();
    Ok(Output::new(
        Report {
            shell: args.shell,
            script,
        },
        text,
    ))
}

/// The completion script for `shell`, for both `git-loopx` and `git loopx`.
pub fn script(shell: Shell) -> String {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    let (generator, bin_name) = match shell {
        // clap_complete's bash script names a subcommand's branch two
        // different ways when the program's name has a `-` (`_` for `-` in
        // one, `__subcmd__` in the other), so that no subcommand completes;
        // it is generated for `git__loopx` and registered for `git-loopx`.
        Shell::Bash => (clap_complete::Shell::Bash, BASH_NAME),
        Shell::Zsh => (clap_complete::Shell::Zsh, "git-loopx"),
        Shell::Fish => (clap_complete::Shell::Fish, "git-loopx"),
    };
    clap_complete::generate(generator, &mut cmd, bin_name, &mut out);
    let mut script = String::from_utf8(out).expect("clap_complete writes UTF-8");
    if let Shell::Bash = shell {
        script = script
            .lines()
            .map(|l| match l.trim_start().starts_with("complete -F ") {
                true => l.replace(&format!(" {BASH_NAME}"), " git-loopx"),
                false => l.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        script.push('\n');
        // The generated function, as `complete -F <it> … git-loopx` names it.
        let function = script
            .lines()
            .find_map(|l| l.trim().strip_prefix("complete -F "))
            .and_then(|rest| rest.split_whitespace().next())
            .expect("clap_complete's bash script registers a function")
            .to_owned();
        script.push_str(&GIT_BASH_BRIDGE.replace("GENERATED", &function));
    }
    script
}

/// The name bash's script is generated for (see [`script`]).
const BASH_NAME: &str = "git__loopx";

/// git's bash completion completes `git loopx …` by calling `_git_loopx`
/// (after trying to load this file as `git-loopx` from bash-completion's
/// directory), with the line in `words`/`cword` and the index of `loopx`
/// in `__git_cmd_idx`. This hands the words from `loopx` on to the
/// generated function as if `git-loopx …` had been typed.
const GIT_BASH_BRIDGE: &str = r#"
# `git loopx <TAB>` through git's own bash completion.
_git_loopx() {
    local idx=${__git_cmd_idx:-1}
    local COMP_WORDS=(git-loopx "${words[@]:idx+1}")
    local COMP_CWORD=$((cword - idx))
    local COMP_LINE="${COMP_WORDS[*]}"
    local COMP_POINT=${#COMP_LINE}
    GENERATED git-loopx "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
}
"#;
