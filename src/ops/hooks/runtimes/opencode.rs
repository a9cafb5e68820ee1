//! OpenCode: a plugin of ours, `.opencode/plugin/loopx.js`, and `git loopx`
//! allowed in the project's `opencode.json` (JSONC to OpenCode).
//!
//! The plugin (OpenCode's plugin API) gives the bash tool the agent's
//! identity (`shell.env`), hands the session its turn at the start, and,
//! when the agent's reply ends, asks `git loopx hook opencode stop` and
//! continues the session with the next turn's prompt while it says block.

use super::{owned, File, Site};
use crate::model::runtime::Runtime;
use crate::ops::hooks::json_edit::Edit;
use crate::ops::hooks::runtime_json::Syntax;
use crate::ops::hooks::Kind;

pub const PLUGIN: &str = include_str!("../../../../hooks/opencode/loopx.js");
pub const COMMAND: &str = include_str!("../../../../hooks/opencode/loopx.md");

pub fn files(site: &Site) -> Vec<File> {
    vec![
        File {
            path: site.root.join(".opencode/plugin/loopx.js"),
            kind: Kind::Owned {
                text: owned(PLUGIN, Runtime::OpenCode, site.baked),
            },
        },
        File {
            path: site.root.join(".opencode/command/loopx.md"),
            kind: Kind::Owned {
                text: owned(COMMAND, Runtime::OpenCode, site.baked),
            },
        },
        File {
            path: site.root.join("opencode.json"),
            kind: Kind::Json {
                syntax: Syntax::Jsonc,
                template: None,
                prefix: "git loopx hook opencode ",
                edits: vec![
                    Edit::set(&["permission", "bash", "git loopx *"], "allow"),
                    Edit::set(&["permission", "bash", "git loopx"], "allow"),
                ],
            },
        },
    ]
}
