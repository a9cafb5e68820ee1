//! `hooks install|uninstall|status`: puts git-loopx's integrations in place
//! and takes them out again — the Claude Code and Codex hook entries
//! (`.claude/settings.json`, `.codex/hooks.json` in the worktree's root),
//! the MCP server's entry in Claude Code's `.mcp.json` there, and the git
//! hook shims (`prepare-commit-msg`, `pre-push` in the directory git
//! runs hooks from: `core.hooksPath`, else the common `hooks/`).
//!
//! Invariants: every file is planned before any is written, so a refusal
//! (a file that is not JSON, a hook for another interpreter) writes nothing;
//! installing twice writes nothing the second time; uninstalling restores
//! the user's bytes exactly while the file holds what we wrote (see
//! [`record`]), and otherwise takes out only our entries.

pub mod mcp_json;
pub mod record;
pub mod runtime_json;
pub mod shim;
mod status;

pub use status::{status, Installed, StatusLine, StatusReport};

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::Refusal;
use crate::ops::Context;
use crate::Result;

use record::{digest, io_error, Record};

/// The shipped templates (see `hooks/` in the source tree).
pub const CLAUDE_CODE_TEMPLATE: &str = include_str!("../../../hooks/claude-code/settings.json");
pub const CODEX_TEMPLATE: &str = include_str!("../../../hooks/codex/hooks.json");
pub const PREPARE_COMMIT_MSG_TEMPLATE: &str = include_str!("../../../hooks/git/prepare-commit-msg");
pub const PRE_PUSH_TEMPLATE: &str = include_str!("../../../hooks/git/pre-push");

/// One integration `hooks` manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Integration {
    ClaudeCode,
    Codex,
    Git,
    /// `git loopx mcp` registered in Claude Code's `.mcp.json`.
    McpClaudeCode,
}

impl Integration {
    pub fn name(self) -> &'static str {
        match self {
            Integration::ClaudeCode => "claude-code",
            Integration::Codex => "codex",
            Integration::Git => "git",
            Integration::McpClaudeCode => "mcp-claude-code",
        }
    }
}

/// One file an integration lives in, and how we edit it.
struct Target {
    integration: Integration,
    path: PathBuf,
    kind: Kind,
}

enum Kind {
    /// A runtime's JSON hook configuration.
    Json {
        template: &'static str,
        prefix: &'static str,
    },
    /// An MCP configuration with our server (`mcpServers.loopx`).
    McpJson,
    /// A git hook with our shell block.
    Shim {
        name: &'static str,
        template: &'static str,
    },
}

fn targets(ctx: &Context, which: &[Integration]) -> Result<Vec<Target>> {
    let mut out = Vec::new();
    for &integration in which {
        let root = |shown: &str| {
            ctx.store.workdir().ok_or_else(|| {
                Refusal::invalid_input(format!("a bare repository has no worktree for {shown}"))
                    .with_hint("run it in a worktree of the repository, or use --git only")
            })
        };
        let json = |dir: &str, file: &str, template, prefix| -> Result<Target> {
            Ok(Target {
                integration,
                path: root(&format!("{dir}/{file}"))?.join(dir).join(file),
                kind: Kind::Json { template, prefix },
            })
        };
        match integration {
            Integration::McpClaudeCode => out.push(Target {
                integration,
                path: root(".mcp.json")?.join(".mcp.json"),
                kind: Kind::McpJson,
            }),
            Integration::ClaudeCode => out.push(json(
                ".claude",
                "settings.json",
                CLAUDE_CODE_TEMPLATE,
                "git loopx hook claude-code ",
            )?),
            Integration::Codex => out.push(json(
                ".codex",
                "hooks.json",
                CODEX_TEMPLATE,
                "git loopx hook codex ",
            )?),
            Integration::Git => {
                let dir = crate::git_cmd::hooks::hooks_dir(ctx.repo_dir())
                    .map_err(crate::store::Error::Git)?;
                for (name, template) in [
                    ("prepare-commit-msg", PREPARE_COMMIT_MSG_TEMPLATE),
                    ("pre-push", PRE_PUSH_TEMPLATE),
                ] {
                    out.push(Target {
                        integration,
                        path: dir.join(name),
                        kind: Kind::Shim { name, template },
                    });
                }
            }
        }
    }
    Ok(out)
}

fn read(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, &e).into()),
    }
}

fn utf8<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|_| {
        Refusal::invalid_input(format!("{} is not UTF-8 text, so not JSON", path.display())).into()
    })
}

/// What happened to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Created,
    Updated,
    Unchanged,
    /// The user's original bytes were put back.
    Restored,
    /// Our entries were taken out of a file changed since we wrote it.
    Removed,
    /// The file was ours alone and is gone.
    Deleted,
    NotInstalled,
}

#[derive(Debug, Serialize)]
pub struct FileChange {
    pub integration: Integration,
    pub path: PathBuf,
    pub action: Action,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct HooksReport {
    pub files: Vec<FileChange>,
}

/// A planned write: the file's new bytes, or its removal.
struct Plan {
    target: Target,
    current: Option<Vec<u8>>,
    next: Option<Next>,
    notes: Vec<String>,
}

enum Next {
    Write(Vec<u8>),
    Delete,
}

/// `hooks install`: merges our entries into each selected integration's
/// files. `agent` is baked into the runtimes' commands (a Claude Code or
/// Codex configuration serves one agent), never into the git hooks (see
/// [`shim::block`]).
pub fn install(ctx: &Context, which: &[Integration], agent: Option<&str>) -> Result<HooksReport> {
    if let Some(agent) = agent {
        crate::model::ids::check_name("agent", agent)?;
    }
    let mut plans = Vec::new();
    for target in targets(ctx, which)? {
        let current = read(&target.path)?;
        let shown = target.path.display().to_string();
        let mut notes = Vec::new();
        let next = match &target.kind {
            Kind::Json { template, prefix } => {
                let text = current
                    .as_deref()
                    .map(|b| utf8(&target.path, b))
                    .transpose()?;
                let entries = runtime_json::template_entries(template, agent);
                runtime_json::install(&shown, text, &entries, prefix)?.map(|done| {
                    if done.reformatted {
                        notes.push("the file's own layout could not be kept exactly; uninstall puts it back byte for byte".to_owned());
                    }
                    done.text.into_bytes()
                })
            }
            Kind::McpJson => {
                let text = current
                    .as_deref()
                    .map(|b| utf8(&target.path, b))
                    .transpose()?;
                mcp_json::install(&shown, text, &mcp_json::entry(agent))?.map(|done| {
                    if done.reformatted {
                        notes.push("the file's own layout could not be kept exactly; uninstall puts it back byte for byte".to_owned());
                    }
                    done.text.into_bytes()
                })
            }
            Kind::Shim { template, .. } => {
                let block = shim::block(template);
                if is_unexecutable(&target.path) {
                    notes.push("the hook is not executable, so git does not run it (chmod +x to turn it on)".to_owned());
                }
                shim::install(&shown, current.as_deref(), &block)?
            }
        };
        plans.push(Plan {
            target,
            current,
            next: next.map(Next::Write),
            notes,
        });
    }
    let mut files = Vec::new();
    for plan in plans {
        let action = match (&plan.next, &plan.current) {
            (None, _) => Action::Unchanged,
            (Some(_), None) => Action::Created,
            (Some(_), Some(_)) => Action::Updated,
        };
        if let Some(Next::Write(bytes)) = &plan.next {
            write_installed(ctx, &plan.target, plan.current.as_deref(), bytes)?;
        }
        files.push(FileChange {
            integration: plan.target.integration,
            path: plan.target.path,
            action,
            notes: plan.notes,
        });
    }
    Ok(HooksReport { files })
}

fn is_unexecutable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 == 0)
}

/// Records what we are about to do (before doing it, so a crash between
/// the two loses nothing of the user's), then writes the file.
fn write_installed(
    ctx: &Context,
    target: &Target,
    current: Option<&[u8]>,
    bytes: &[u8],
) -> Result<()> {
    let previous = record::load(ctx, &target.path);
    let (record, original) = match (current, previous) {
        (Some(now), Some((mut record, original))) => {
            let untouched = digest(now) == record.written;
            record.exact = record.exact && untouched;
            record.written = digest(bytes);
            let original = if record.exact { original } else { None };
            (record, original)
        }
        (Some(now), None) => (
            Record {
                path: target.path.clone(),
                created: false,
                dirs: Vec::new(),
                written: digest(bytes),
                exact: true,
            },
            Some(now.to_vec()),
        ),
        (None, _) => (
            Record {
                path: target.path.clone(),
                created: true,
                dirs: missing_dirs(&target.path),
                written: digest(bytes),
                exact: true,
            },
            None,
        ),
    };
    if let Some(parent) = target.path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("create", parent, &e))?;
    }
    record::save(ctx, &record, original.as_deref())?;
    std::fs::write(&target.path, bytes).map_err(|e| io_error("write", &target.path, &e))?;
    if current.is_none() && matches!(target.kind, Kind::Shim { .. }) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&target.path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| io_error("make executable", &target.path, &e))?;
    }
    Ok(())
}

/// The directories above `path` that do not exist yet, innermost first.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_owned)
        .collect()
}

/// `hooks uninstall`: takes our entries out of each selected integration's
/// files; the user's bytes come back exactly while the file holds what we
/// wrote.
pub fn uninstall(ctx: &Context, which: &[Integration]) -> Result<HooksReport> {
    let mut plans = Vec::new();
    for target in targets(ctx, which)? {
        let current = read(&target.path)?;
        let shown = target.path.display().to_string();
        let recorded = record::load(ctx, &target.path);
        let mut notes = Vec::new();
        let next = match (&current, &recorded) {
            (None, _) => None,
            (Some(now), Some((record, original)))
                if record.exact
                    && digest(now) == record.written
                    && (record.created || original.is_some()) =>
            {
                match original {
                    Some(original) if !record.created => Some(Next::Write(original.clone())),
                    _ => Some(Next::Delete),
                }
            }
            (Some(now), _) => {
                if recorded.is_some() {
                    notes.push(
                        "changed since it was installed: only our entries were taken out"
                            .to_owned(),
                    );
                }
                let created = recorded.as_ref().is_some_and(|(r, _)| r.created);
                match &target.kind {
                    Kind::Json { prefix, .. } => {
                        match runtime_json::uninstall(&shown, utf8(&target.path, now)?, prefix)? {
                            None => None,
                            Some(runtime_json::Removed::Empty) => Some(Next::Delete),
                            Some(runtime_json::Removed::Text(t)) => {
                                Some(Next::Write(t.into_bytes()))
                            }
                        }
                    }
                    Kind::McpJson => match mcp_json::uninstall(&shown, utf8(&target.path, now)?)? {
                        None => None,
                        Some(runtime_json::Removed::Empty) => Some(Next::Delete),
                        Some(runtime_json::Removed::Text(t)) => Some(Next::Write(t.into_bytes())),
                    },
                    Kind::Shim { .. } => match shim::uninstall(&shown, now)? {
                        None => None,
                        Some(left)
                            if shim::is_empty_hook(&left)
                                && (created || left == shim::SHEBANG.as_bytes()) =>
                        {
                            Some(Next::Delete)
                        }
                        Some(left) => Some(Next::Write(left)),
                    },
                }
            }
        };
        plans.push(Plan {
            target,
            current,
            next,
            notes,
        });
    }
    let mut files = Vec::new();
    let mut made_dirs = Vec::new();
    for plan in plans {
        let path = &plan.target.path;
        let recorded = record::load(ctx, path);
        let exact = recorded.as_ref().is_some_and(|(r, _)| r.exact);
        let action = match &plan.next {
            None => Action::NotInstalled,
            Some(Next::Delete) => {
                std::fs::remove_file(path).map_err(|e| io_error("remove", path, &e))?;
                if let Some((record, _)) = &recorded {
                    made_dirs.extend(record.dirs.iter().cloned());
                }
                Action::Deleted
            }
            Some(Next::Write(bytes)) => {
                std::fs::write(path, bytes).map_err(|e| io_error("write", path, &e))?;
                if exact && plan.notes.is_empty() {
                    Action::Restored
                } else {
                    Action::Removed
                }
            }
        };
        record::forget(ctx, path);
        files.push(FileChange {
            integration: plan.target.integration,
            path: plan.target.path,
            action,
            notes: plan.notes,
        });
    }
    // The directories we made, deepest first, and only while empty:
    // anything else in one is the user's.
    made_dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    made_dirs.dedup();
    for dir in made_dirs {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(HooksReport { files })
}
