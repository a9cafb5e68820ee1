//! The installer behind `hooks install|uninstall|status`: puts git-loopx's
//! integrations in place and takes them out again — the Claude Code and Codex hook entries
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
//!
//! It edits files in the user's worktree, home and git directory, and
//! nothing else: no session, no store, no state. What it needs of the
//! repository comes in a [`Repo`], which the use case (`ops::hooks`) fills
//! from its session.

mod codex_trust;
mod json_edit;
mod jsonc;
mod mcp_json;
mod owned;
mod record;
mod runtime_json;
mod runtimes;
mod shim;
mod status;
mod toml_conf;

pub use status::{governance_lost, status, Installed, StatusLine, StatusReport, Ungoverned};

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::runtime::Runtime;
use crate::model::Refusal;
use crate::Result;

use record::{digest, io_error, Record};

/// The shipped git hook templates (see `hooks/` in the source tree).
pub const PREPARE_COMMIT_MSG_TEMPLATE: &str = include_str!("../../hooks/git/prepare-commit-msg");
pub const PRE_PUSH_TEMPLATE: &str = include_str!("../../hooks/git/pre-push");

/// The repository the integrations go into, as the installer needs it.
#[derive(Clone, Debug)]
pub struct Repo<'a> {
    /// The worktree's root; `None` in a bare repository.
    pub workdir: Option<&'a Path>,
    /// The git common dir (shared by linked worktrees).
    pub common_dir: &'a Path,
    /// Where `git` runs for the repository (for the hooks directory it uses).
    pub repo_dir: &'a Path,
    /// git-loopx's host-local directory (`<common dir>/loopx`): the
    /// install records live under it.
    pub local_dir: PathBuf,
    /// git's identity here (`user.name`, `user.email`), for runtimes'
    /// shells.
    pub identity: Option<(String, String)>,
    /// `git config loopx.agent` names an agent.
    pub agent_configured: bool,
    /// `git config loopx.prePushSync`: the pre-push hook syncs.
    pub pre_push_sync: bool,
}

/// One integration `hooks` manages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Integration {
    /// An agent runtime's hooks, settings and commands
    /// ([`runtimes`] describes each).
    Runtime(Runtime),
    Git,
    /// `git loopx mcp` registered in Claude Code's `.mcp.json`.
    McpClaudeCode,
}

impl Integration {
    pub fn name(self) -> &'static str {
        match self {
            Integration::Runtime(r) => r.name(),
            Integration::Git => "git",
            Integration::McpClaudeCode => "mcp-claude-code",
        }
    }
}

impl Serialize for Integration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What `hooks install` bakes into a runtime's commands and shell, from the
/// command line (`--agent`, `--goal`): whom they act as, and on which goal.
#[derive(Clone, Copy, Debug, Default)]
pub struct Baked<'a> {
    pub agent: Option<&'a str>,
    pub goal: Option<&'a str>,
}

impl Baked<'_> {
    /// The global flags that say it: `--agent ID --goal ID`.
    pub fn args(&self) -> Vec<&str> {
        let given = [("--agent", self.agent), ("--goal", self.goal)];
        given
            .into_iter()
            .flat_map(|(flag, v)| v.map(|v| [flag, v]))
            .flatten()
            .collect()
    }

    /// The same, for a shell: `LOOPX_AGENT`, `LOOPX_GOAL`.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let given = [("LOOPX_AGENT", self.agent), ("LOOPX_GOAL", self.goal)];
        given
            .into_iter()
            .filter_map(|(k, v)| Some((k, v?.to_owned())))
            .collect()
    }
}

/// One file an integration lives in, and how we edit it.
struct Target {
    integration: Integration,
    path: PathBuf,
    kind: Kind,
}

pub enum Kind {
    /// A runtime's JSON configuration: the hook entries of `template`
    /// (commands starting with `prefix`), and other settings (`edits`), in
    /// the syntax the runtime reads there.
    Json {
        syntax: runtime_json::Syntax,
        template: Option<&'static str>,
        prefix: &'static str,
        edits: Vec<json_edit::Edit>,
    },
    /// Keys in a TOML configuration.
    Toml { edits: Vec<json_edit::Edit> },
    /// A file wholly ours: a plugin, an extension, a command.
    Owned { text: String },
    /// `KEY=value` lines in a dotenv file, between marker lines.
    EnvFile { lines: String },
    /// An MCP configuration with our server (`mcpServers.loopx`).
    McpJson,
    /// A git hook with our shell block.
    Shim {
        name: &'static str,
        template: &'static str,
    },
}

fn targets(repo: &Repo<'_>, which: &[Integration], baked: Baked) -> Result<Vec<Target>> {
    let mut out = Vec::new();
    for &integration in which {
        let root = |shown: &str| {
            repo.workdir.ok_or_else(|| {
                Refusal::invalid_input(format!("a bare repository has no worktree for {shown}"))
                    .with_hint("run it in a worktree of the repository, or use --git only")
            })
        };
        match integration {
            Integration::McpClaudeCode => out.push(Target {
                integration,
                path: root(".mcp.json")?.join(".mcp.json"),
                kind: Kind::McpJson,
            }),
            Integration::Runtime(runtime) => {
                let root = root(&format!("--{}", runtime.name()))?;
                let home = std::env::var_os("HOME").map(PathBuf::from);
                let site = runtimes::Site {
                    root,
                    common_dir: repo.common_dir,
                    baked,
                    home: home.as_deref(),
                    identity: repo.identity.clone(),
                };
                for file in runtimes::files(runtime, &site) {
                    out.push(Target {
                        integration,
                        path: file.path,
                        kind: file.kind,
                    });
                }
            }
            Integration::Git => {
                let dir = crate::git_cmd::hooks::hooks_dir(repo.repo_dir).map_err(|e| {
                    Refusal::new(crate::model::Code::GitFailed, format!("git: {e}"))
                })?;
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
/// files. `baked` goes into the runtimes' commands and shells (a Claude
/// Code or Codex configuration serves one agent), never into the git hooks
/// (see [`shim::block`]).
pub fn install(repo: &Repo<'_>, which: &[Integration], baked: Baked) -> Result<HooksReport> {
    for (what, id) in [("agent", baked.agent), ("goal", baked.goal)] {
        id.map(|id| crate::model::ids::check_name(what, id))
            .transpose()?;
    }
    let mut plans = Vec::new();
    for target in targets(repo, which, baked)? {
        let current = read(&target.path)?;
        let shown = target.path.display().to_string();
        let mut notes = Vec::new();
        let text = || {
            current
                .as_deref()
                .map(|b| utf8(&target.path, b))
                .transpose()
        };
        let relaid =
            "the file's own layout could not be kept exactly; uninstall puts it back byte for byte";
        let next = match &target.kind {
            Kind::Json {
                syntax,
                template,
                prefix,
                edits,
            } => {
                let mut now = text()?.map(str::to_owned);
                let mut changed = false;
                if let Some(note) = runtimes::install_note(&target.path) {
                    notes.push(note);
                }
                if let Some(template) = template {
                    let entries = runtime_json::template_entries(template, baked);
                    if let Some(done) =
                        runtime_json::install(&shown, *syntax, now.as_deref(), &entries, prefix)?
                    {
                        if done.reformatted {
                            notes.push(relaid.to_owned());
                        }
                        now = Some(done.text);
                        changed = true;
                    }
                }
                if let Some(done) = json_edit::install(&shown, *syntax, now.as_deref(), edits)? {
                    if done.reformatted && !changed {
                        notes.push(relaid.to_owned());
                    }
                    now = Some(done.text);
                    changed = true;
                }
                now.filter(|_| changed).map(String::into_bytes)
            }
            Kind::Toml { edits } => {
                toml_conf::install(&shown, text()?, edits)?.map(|d| d.text.into_bytes())
            }
            Kind::Owned { text: ours } => owned::install(&shown, text()?, ours)?,
            Kind::EnvFile { lines } => {
                // Gemini CLI loads the first env file it finds: ours now
                // comes before the project's own `.env`.
                let project_env = target
                    .path
                    .parent()
                    .and_then(Path::parent)
                    .map(|d| d.join(".env"));
                if project_env.as_deref().is_some_and(Path::exists) && current.is_none() {
                    notes.push("Gemini CLI loads only the first env file it finds: this one now hides the project's .env from Gemini CLI (copy what Gemini needs from it here)".to_owned());
                }
                if !lines.contains("GIT_AUTHOR_NAME=") {
                    notes.push("Gemini CLI hides git config from its shell, and no user.name and user.email are set: the agent's commits there fail \"Author identity unknown\" (set them, then install again)".to_owned());
                }
                owned::env_install(&shown, text()?, lines)?
            }
            Kind::McpJson => {
                let text = current
                    .as_deref()
                    .map(|b| utf8(&target.path, b))
                    .transpose()?;
                mcp_json::install(&shown, text, &mcp_json::entry(baked))?.map(|done| {
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
            write_installed(repo, &plan.target, plan.current.as_deref(), bytes)?;
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
    repo: &Repo<'_>,
    target: &Target,
    current: Option<&[u8]>,
    bytes: &[u8],
) -> Result<()> {
    let previous = record::load(repo, &target.path);
    let (record, original) = match (current, previous) {
        (Some(now), Some((mut record, original))) => {
            let untouched = record::holds_ours(&record, now);
            record.exact = record.exact && untouched;
            record.written = digest(bytes);
            record.written_value = record::value_digest(bytes);
            let original = if record.exact { original } else { None };
            (record, original)
        }
        (Some(now), None) => (
            Record {
                path: target.path.clone(),
                created: false,
                dirs: Vec::new(),
                written: digest(bytes),
                written_value: record::value_digest(bytes),
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
                written_value: record::value_digest(bytes),
                exact: true,
            },
            None,
        ),
    };
    if let Some(parent) = target.path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("create", parent, &e))?;
    }
    record::save(repo, &record, original.as_deref())?;
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
pub fn uninstall(repo: &Repo<'_>, which: &[Integration]) -> Result<HooksReport> {
    let mut plans = Vec::new();
    for target in targets(repo, which, Baked::default())? {
        let current = read(&target.path)?;
        let shown = target.path.display().to_string();
        let recorded = record::load(repo, &target.path);
        let mut notes = Vec::new();
        let next = match (&current, &recorded) {
            (None, _) => None,
            (Some(now), Some((record, original)))
                if record.exact
                    && record::holds_ours(record, now)
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
                ours_taken_out(&target, &shown, now, created)?
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
        let recorded = record::load(repo, path);
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
        record::forget(repo, path);
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

/// `now`, the bytes of `target`'s file, with our entries taken out: the
/// bytes to write, a delete when nothing else is left (a shim we `created`,
/// or one left with only its shebang), or `None` when it holds none of
/// ours.
fn ours_taken_out(target: &Target, shown: &str, now: &[u8], created: bool) -> Result<Option<Next>> {
    let removed = |r: Option<runtime_json::Removed>| match r {
        None => None,
        Some(runtime_json::Removed::Empty) => Some(Next::Delete),
        Some(runtime_json::Removed::Text(t)) => Some(Next::Write(t.into_bytes())),
    };
    Ok(match &target.kind {
        Kind::Json {
            syntax,
            prefix,
            edits,
            ..
        } => {
            let text = utf8(&target.path, now)?;
            let hooks = runtime_json::uninstall(shown, *syntax, text, prefix)?;
            let left = match &hooks {
                Some(runtime_json::Removed::Text(t)) => Some(t.as_str()),
                Some(runtime_json::Removed::Empty) => None,
                None => Some(text),
            };
            let settings = match left {
                Some(left) => json_edit::uninstall(shown, *syntax, left, edits)?,
                None => None,
            };
            removed(settings.or(hooks))
        }
        Kind::Toml { edits } => removed(toml_conf::uninstall(
            shown,
            utf8(&target.path, now)?,
            edits,
        )?),
        Kind::Owned { .. } => removed(owned::uninstall(utf8(&target.path, now)?)),
        Kind::EnvFile { .. } => removed(owned::env_uninstall(utf8(&target.path, now)?)),
        Kind::McpJson => match mcp_json::uninstall(shown, utf8(&target.path, now)?)? {
            None => None,
            Some(runtime_json::Removed::Empty) => Some(Next::Delete),
            Some(runtime_json::Removed::Text(t)) => Some(Next::Write(t.into_bytes())),
        },
        Kind::Shim { .. } => match shim::uninstall(shown, now)? {
            None => None,
            Some(left)
                if shim::is_empty_hook(&left) && (created || left == shim::SHEBANG.as_bytes()) =>
            {
                Some(Next::Delete)
            }
            Some(left) => Some(Next::Write(left)),
        },
    })
}
