//! OpenCode: a plugin of ours, `.opencode/plugin/loopx.js`, and `git loopx`
//! allowed in the project's configuration, `opencode.jsonc` or
//! `opencode.json` (see [`config_file`]; both are JSONC to OpenCode).
//!
//! The plugin (OpenCode's plugin API) gives the bash tool the agent's
//! identity (`shell.env`), hands the session its turn at the start, and,
//! when the agent's reply ends, asks `git loopx hook opencode stop` and
//! continues the session with the next turn's prompt while it says block.

use std::path::{Path, PathBuf};

use super::{owned, File, Site};
use crate::install::json_edit::Edit;
use crate::install::runtime_json::Syntax;
use crate::install::Kind;
use crate::model::runtime::Runtime;

pub const PLUGIN: &str = include_str!("../../../hooks/opencode/loopx.js");
pub const COMMAND: &str = include_str!("../../../hooks/opencode/loopx.md");

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
            path: config_file(site.root),
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

/// The project's configuration file: `opencode.jsonc` when there is one
/// (the name OpenCode's docs give), else `opencode.json`.
///
/// OpenCode reads both when both are there, `opencode.jsonc` first and
/// `opencode.json` merged over it. With both, we edit `opencode.jsonc`
/// rather than refuse: OpenCode reads our rules from it as from the other,
/// and `hooks install` says that a `permission.bash` rule in
/// `opencode.json` wins over ours ([`install_note`]).
fn config_file(root: &Path) -> PathBuf {
    let jsonc = root.join("opencode.jsonc");
    if jsonc.exists() {
        jsonc
    } else {
        root.join("opencode.json")
    }
}

/// What `hooks install` says about `path` when it is `opencode.jsonc` and
/// an `opencode.json` is beside it.
pub fn install_note(path: &Path) -> Option<String> {
    let beside = path.with_file_name("opencode.json");
    (path.file_name()? == "opencode.jsonc" && beside.exists()).then(|| {
        "opencode.json is here too: OpenCode reads it after this file and merges it over it, \
         so a `permission.bash` rule there wins over the ones written here"
            .to_owned()
    })
}
