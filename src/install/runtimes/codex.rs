//! Codex: hooks in the project's `.codex/hooks.json`; the agent's identity
//! and a writable git directory in `.codex/config.toml`; a skill.
//!
//! - `.codex/hooks.json`: `SessionStart` and `Stop` (Claude Code's shape).
//! - `.codex/config.toml`: `shell_environment_policy.set` gives the exec
//!   tool `LOOPX_AGENT` and `LOOPX_RUNTIME`; Codex's default
//!   `workspace-write` sandbox keeps `.git` read-only, so
//!   `sandbox_workspace_write.writable_roots` gets the repository's common
//!   git directory — which also holds a linked worktree's own git
//!   directory, and lies outside that worktree. Codex reads the project's
//!   config, hooks and skills only once the person trusted the project.
//! - `.agents/skills/loopx/SKILL.md`: the `loopx` skill.
//!
//! In a linked worktree, Codex (0.171) runs the hooks only when the main
//! worktree's root has them too (and trust is keyed on that root): the
//! hooks file goes to both.

use super::{identity_env, owned, File, Site};
use crate::install::runtime_json::Syntax;
use crate::install::{json_edit::Edit, Kind};
use crate::model::runtime::Runtime;

pub const TEMPLATE: &str = include_str!("../../../hooks/codex/hooks.json");
pub const SKILL: &str = include_str!("../../../hooks/codex/SKILL.md");

pub fn files(site: &Site) -> Vec<File> {
    let dir = site.root.join(".codex");
    let mut edits: Vec<Edit> = identity_env(Runtime::Codex, site.baked)
        .into_iter()
        .map(|(k, v)| Edit::set(&["shell_environment_policy", "set", k], v))
        .collect();
    // The sandbox compares plain paths: no `..` (a linked worktree's
    // common directory is found as `<its git dir>/../..`).
    let common =
        std::fs::canonicalize(site.common_dir).unwrap_or_else(|_| site.common_dir.to_owned());
    // A linked worktree's own git directory (its index, HEAD) is kept
    // read-only too unless named.
    let mut roots = vec![common.display().to_string()];
    if let Some(own) = linked_git_dir(site.root) {
        roots.push(own.display().to_string());
    }
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    edits.push(Edit::union(
        &["sandbox_workspace_write", "writable_roots"],
        &roots,
    ));
    let hooks = |root: &std::path::Path| File {
        path: root.join(".codex/hooks.json"),
        kind: Kind::Json {
            syntax: Syntax::Json,
            template: Some(TEMPLATE),
            prefix: "git loopx hook codex ",
            edits: Vec::new(),
        },
    };
    let mut files = vec![hooks(site.root)];
    if let Some(main) = main_root(&common, site.root) {
        files.push(hooks(&main));
    }
    files.extend([
        File {
            path: dir.join("config.toml"),
            kind: Kind::Toml { edits },
        },
        File {
            path: site.root.join(".agents/skills/loopx/SKILL.md"),
            kind: Kind::Owned {
                text: owned(SKILL, Runtime::Codex, site.baked),
            },
        },
    ]);
    files
}

/// A linked worktree's own git directory: `gitdir:` in its `.git` file.
fn linked_git_dir(root: &std::path::Path) -> Option<std::path::PathBuf> {
    let text = std::fs::read_to_string(root.join(".git")).ok()?;
    let dir = text.strip_prefix("gitdir:")?.trim();
    let dir = root.join(dir);
    Some(std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// The main worktree's root, when `root` is a linked worktree's: the
/// directory holding the common git directory (`<main>/.git`).
fn main_root(common: &std::path::Path, root: &std::path::Path) -> Option<std::path::PathBuf> {
    let main = common
        .file_name()
        .is_some_and(|n| n == ".git")
        .then(|| common.parent())
        .flatten()?;
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
    (main != root).then(|| main.to_owned())
}
