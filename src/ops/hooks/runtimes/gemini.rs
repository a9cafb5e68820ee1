//! Gemini CLI: hooks in the project's `.gemini/settings.json` (Claude
//! Code's shape; `AfterAgent` plays `Stop`: a `deny` answer retries with
//! the reason as the next user turn), the agent's identity in
//! `.gemini/.env` (Gemini CLI loads it into its own environment, which its
//! shell tool inherits), the `/loopx` command, and a user-tier policy that
//! allows `git loopx` (`~/.gemini/policies/loopx.toml`: Gemini CLI reads no
//! workspace policies, and `tools.allowed` would deny every other shell
//! command). Gemini CLI reads project settings only in a trusted folder.
//!
//! Gemini CLI empties `core.hooksPath` for the commands its agent runs, so
//! git's hooks do not run there: the turn's prompt asks for the
//! `Loopx-Todo` trailer on the commit itself.

use super::{identity_env, owned, File, Site};
use crate::model::runtime::Runtime;
use crate::ops::hooks::Kind;

pub const TEMPLATE: &str = include_str!("../../../../hooks/gemini/settings.json");
pub const COMMAND: &str = include_str!("../../../../hooks/gemini/loopx.toml");
pub const POLICY: &str = include_str!("../../../../hooks/gemini/policy.toml");

pub fn files(site: &Site) -> Vec<File> {
    let dir = site.root.join(".gemini");
    let env: String = identity_env(Runtime::Gemini, site.baked)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    let mut files = vec![
        File {
            path: dir.join("settings.json"),
            kind: Kind::Json {
                template: Some(TEMPLATE),
                prefix: "git loopx hook gemini ",
                edits: Vec::new(),
            },
        },
        File {
            path: dir.join(".env"),
            kind: Kind::EnvFile { lines: env },
        },
        File {
            path: dir.join("commands").join("loopx.toml"),
            kind: Kind::Owned {
                text: owned(COMMAND, Runtime::Gemini, site.baked),
            },
        },
    ];
    if let Some(home) = site.home {
        files.push(File {
            path: home.join(".gemini/policies/loopx.toml"),
            kind: Kind::Owned {
                text: POLICY.to_owned(),
            },
        });
    }
    files
}
