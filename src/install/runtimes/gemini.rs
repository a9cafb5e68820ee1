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
//! `Loopx-Todo` trailer on the commit itself. It also hides the person's
//! git config from them (`GIT_CONFIG_GLOBAL=/dev/null`), so the agent's
//! commits would fail "Author identity unknown" and state commits be
//! signed `git-loopx`: the `.env` carries the person's identity as
//! `GIT_AUTHOR_*` and `GIT_COMMITTER_*`, which git reads before config.

use super::{identity_env, owned, File, Site};
use crate::install::runtime_json::Syntax;
use crate::install::Kind;
use crate::model::runtime::Runtime;

pub const TEMPLATE: &str = include_str!("../../../hooks/gemini/settings.json");
pub const COMMAND: &str = include_str!("../../../hooks/gemini/loopx.toml");
pub const POLICY: &str = include_str!("../../../hooks/gemini/policy.toml");

pub fn files(site: &Site) -> Vec<File> {
    let dir = site.root.join(".gemini");
    let mut env: String = identity_env(Runtime::Gemini, site.baked)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    if let Some((name, email)) = &site.identity {
        for (key, value) in [
            ("GIT_AUTHOR_NAME", name),
            ("GIT_AUTHOR_EMAIL", email),
            ("GIT_COMMITTER_NAME", name),
            ("GIT_COMMITTER_EMAIL", email),
        ] {
            env.push_str(&format!("{key}={}\n", dotenv_value(value)));
        }
    }
    let mut files = vec![
        File {
            path: dir.join("settings.json"),
            kind: Kind::Json {
                syntax: Syntax::Jsonc,
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

/// A dotenv value: as it is when it is plain, else double-quoted with `\`
/// and `"` escaped (a name has spaces).
fn dotenv_value(value: &str) -> String {
    let plain = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "@._-+".contains(c));
    if plain {
        return value.to_owned();
    }
    let escaped: String = value
        .chars()
        .filter(|c| !c.is_control())
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}
