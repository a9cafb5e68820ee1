//! One description per agent runtime: the files `hooks install --<runtime>`
//! writes, and how (merged JSON hooks and settings, TOML keys, a file of
//! ours), for the agent it installs for. A new runtime is one more file
//! here, its templates under `hooks/<runtime>/`, and its name in
//! [`Runtime`](crate::model::runtime::Runtime).
//!
//! Every description gives the agent's identity to the runtime's shell
//! (`LOOPX_AGENT`, with `LOOPX_RUNTIME` as the installed marker) where the
//! runtime has a way to, lets the `git loopx` commands run without asking
//! the person each time where it has permissions, and keeps git writes
//! working inside its sandbox.

mod claude_code;
pub(crate) mod codex;
mod cursor;
mod gemini;
mod opencode;
mod pi;

use std::path::{Path, PathBuf};

use super::{Baked, Kind};
use crate::model::runtime::{Runtime, INSTALLED_MARKER};

/// Where and for whom an installation is made.
pub struct Site<'a> {
    /// The worktree's root.
    pub root: &'a Path,
    /// The repository's common git directory (shared by linked worktrees).
    pub common_dir: &'a Path,
    /// The agent and goal the runtime's configuration serves.
    pub baked: Baked<'a>,
    /// The person's home directory, for a runtime that reads a setting only
    /// from there.
    pub home: Option<&'a Path>,
    /// The person's git identity from git config (`user.name`,
    /// `user.email`), for a runtime that hides git config from its shell.
    pub identity: Option<(String, String)>,
}

/// One file of a runtime's installation.
pub struct File {
    pub path: PathBuf,
    pub kind: Kind,
}

/// The files `hooks install --<runtime>` manages.
pub fn files(runtime: Runtime, site: &Site) -> Vec<File> {
    match runtime {
        Runtime::ClaudeCode => claude_code::files(site),
        Runtime::Codex => codex::files(site),
        Runtime::OpenCode => opencode::files(site),
        Runtime::Pi => pi::files(site),
        Runtime::Gemini => gemini::files(site),
        Runtime::Cursor => cursor::files(site),
        Runtime::Generic => Vec::new(),
    }
}

/// What `hooks install` says about the file at `path` beyond what it did:
/// another file beside it that its runtime reads too.
pub fn install_note(path: &Path) -> Option<String> {
    opencode::install_note(path)
}

/// Whether the runtime's shell gets the agent's identity from what is
/// installed (else only the prompt's `--agent` carries it).
pub fn shell_identity(runtime: Runtime) -> bool {
    !matches!(runtime, Runtime::Generic | Runtime::Cursor)
}

/// Whether the files installed for `runtime` (their texts) give its
/// shell an agent: `LOOPX_AGENT` set to a value (a plugin of ours names
/// none when it was installed without `--agent`).
pub fn names_agent(runtime: Runtime, texts: &[String]) -> bool {
    shell_identity(runtime)
        && texts.iter().any(|t| t.contains("LOOPX_AGENT"))
        && !texts.iter().any(|t| t.contains("const AGENT = \"\";"))
}

/// The command a runtime's hook runs: `git loopx hook <runtime> <event>`,
/// with `--agent ID` and `--goal ID` when given.
pub fn hook_command(runtime: Runtime, event: &str, baked: Baked) -> String {
    let command = format!("git loopx hook {} {event}", runtime.name());
    [command.as_str()]
        .into_iter()
        .chain(baked.args())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The environment a runtime's shell gets: the installed marker, and the
/// agent and goal when given.
pub fn identity_env(runtime: Runtime, baked: Baked) -> Vec<(&'static str, String)> {
    let mut env = vec![(INSTALLED_MARKER, runtime.name().to_owned())];
    env.extend(baked.env());
    env
}

/// A file wholly ours (a plugin, an extension, a command): the template
/// with `{{AGENT}}` and `{{GOAL}}` replaced by the agent and the goal (or
/// empty), `{{RUNTIME}}` by the runtime's name.
pub fn owned(template: &str, runtime: Runtime, baked: Baked) -> String {
    template
        .replace("{{AGENT}}", baked.agent.unwrap_or(""))
        .replace("{{GOAL}}", baked.goal.unwrap_or(""))
        .replace("{{RUNTIME}}", runtime.name())
}
