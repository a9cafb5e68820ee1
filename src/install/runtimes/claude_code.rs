//! Claude Code: hooks, permissions and a slash command in the project's
//! `.claude/`, the agent's identity in the personal `settings.local.json`.
//!
//! - `.claude/settings.json`: `SessionStart` and `Stop` hooks (Claude Code's
//!   hooks reference), and `permissions.allow` for `git loopx` and the
//!   `loopx` MCP server's tools, so a session does not stop to ask the
//!   person at every call (and `claude -p` does not deny them). Claude Code
//!   honours project permissions only once the person trusted the folder.
//! - `.claude/settings.local.json` (personal; Claude Code keeps it out of
//!   git): `env` with `LOOPX_AGENT` and `LOOPX_RUNTIME`, which Claude Code
//!   applies to its Bash tool, so every command the agent runs acts as it.
//! - `.claude/commands/loopx.md`: `/loopx <objective>` starts or continues
//!   a governed goal from inside a session.

use super::{identity_env, owned, File, Site};
use crate::install::json_edit::Edit;
use crate::install::runtime_json::Syntax;
use crate::install::Kind;
use crate::model::runtime::Runtime;

pub const TEMPLATE: &str = include_str!("../../../hooks/claude-code/settings.json");
pub const COMMAND: &str = include_str!("../../../hooks/claude-code/loopx.md");

/// What `permissions.allow` gets: every `git loopx` command, and the MCP
/// server's tools.
pub const ALLOW: [&str; 2] = ["Bash(git loopx:*)", "mcp__loopx"];

pub fn files(site: &Site) -> Vec<File> {
    let dir = site.root.join(".claude");
    let env = identity_env(Runtime::ClaudeCode, site.baked)
        .into_iter()
        .map(|(k, v)| Edit::set(&["env", k], v))
        .collect();
    vec![
        File {
            path: dir.join("settings.json"),
            kind: Kind::Json {
                syntax: Syntax::Json,
                template: Some(TEMPLATE),
                prefix: "git loopx hook claude-code ",
                edits: vec![Edit::union(&["permissions", "allow"], &ALLOW)],
            },
        },
        File {
            path: dir.join("settings.local.json"),
            kind: Kind::Json {
                syntax: Syntax::Json,
                template: None,
                prefix: "git loopx hook claude-code ",
                edits: env,
            },
        },
        File {
            path: dir.join("commands").join("loopx.md"),
            kind: Kind::Owned {
                text: owned(COMMAND, Runtime::ClaudeCode, site.baked),
            },
        },
    ]
}
