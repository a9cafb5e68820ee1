//! The person's list of repositories under git-loopx (`repos`), and
//! `status --all-repos` over it.
//!
//! The list is per user and lives outside every repository: one absolute
//! path a line in `$XDG_CONFIG_HOME/git-loopx/repos` (else
//! `~/.config/git-loopx/repos`). `init`, `hooks install` and `import` add
//! the repository they ran in; `repos add|remove` edit it. A path names the
//! repository, not a worktree: the main worktree's top level, or the git
//! directory of a bare repository, so every linked worktree of one
//! repository is one entry. A path the list cannot hold as it is written
//! — one that is not UTF-8, has a control character (a newline would make
//! it two lines), or ends in white space (the reader trims it) — is
//! refused by `repos add` (and so by `init`'s registration), and `repos
//! remove` says the same of it.
//!
//! Each listed repository is read on its own and within a time limit
//! ([`read_listed`]): one that is missing, broken, refused or does not
//! answer is reported in its place and holds up none of the others.

mod bounded;

pub use bounded::read_listed;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::{Code, Refusal, Timestamp};
use crate::ops::status::{status_all, StatusReport};
use crate::session::Context;
use crate::store::GixStore;
use crate::{Error, Result};

/// The list's file: `$XDG_CONFIG_HOME/git-loopx/repos`, else
/// `$HOME/.config/git-loopx/repos`.
pub fn list_file() -> Result<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => match std::env::var_os("HOME").map(PathBuf::from) {
            Some(home) if home.is_absolute() => home.join(".config"),
            _ => {
                return Err(Refusal::invalid_input(
                    "no config directory for the list of repositories: neither XDG_CONFIG_HOME nor HOME is an absolute path",
                )
                .into())
            }
        },
    };
    Ok(base.join("git-loopx").join("repos"))
}

/// The listed repositories, in the order they were added. A missing file
/// is an empty list.
pub fn read() -> Result<Vec<PathBuf>> {
    read_from(&list_file()?)
}

fn read_from(file: &Path) -> Result<Vec<PathBuf>> {
    let text = match std::fs::read(file) {
        Ok(bytes) => String::from_utf8(bytes)
            .map_err(|_| Error::invalid_input(format!("{}: not UTF-8 text", file.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(Error::invalid_input(format!(
                "cannot read {}: {e}",
                file.display()
            )))
        }
    };
    let mut repos: Vec<PathBuf> = Vec::new();
    for line in text.lines().map(str::trim_end) {
        let path = PathBuf::from(line);
        if line.is_empty() || line.starts_with('#') || repos.contains(&path) {
            continue;
        }
        repos.push(path);
    }
    Ok(repos)
}

/// The path that names the repository containing `dir`: its main
/// worktree's top level, or (bare) its git directory; canonical.
pub fn repository_path(dir: &Path) -> Result<PathBuf> {
    let store = GixStore::discover(dir)?;
    // From a linked worktree the common directory is reached through `..`.
    let common =
        std::fs::canonicalize(store.common_dir()).unwrap_or_else(|_| store.common_dir().to_owned());
    Ok(match common.file_name() {
        Some(name) if name == ".git" => common.parent().unwrap_or(&common).to_owned(),
        _ => common,
    })
}

#[derive(Debug, Serialize)]
pub struct Edited {
    pub path: PathBuf,
    /// Whether the list changed (false: it was already there, or not there).
    pub changed: bool,
    pub file: PathBuf,
}

/// Why the list cannot hold `path` as one line that reads back as it, if
/// it cannot.
fn unlistable(path: &Path) -> Option<&'static str> {
    let Some(text) = path.to_str() else {
        return Some("it is not UTF-8");
    };
    if text.contains('\n') {
        Some("it has a newline, and the list holds one path a line")
    } else if text.chars().any(char::is_control) {
        Some("it has a control character")
    } else if text.ends_with(char::is_whitespace) {
        Some("it ends in white space, which the list's reader trims")
    } else {
        None
    }
}

fn refuse_unlistable(path: &Path, file: &Path, why: &str, hint: &str) -> Error {
    Refusal::invalid_input(format!(
        "{path:?} cannot be in the list of repositories ({}): {why}",
        file.display()
    ))
    .with_hint(hint)
    .into()
}

/// Adds the repository containing `dir`; a path the list cannot hold (see
/// the module) is refused.
pub fn add(dir: &Path) -> Result<Edited> {
    let path = repository_path(dir)?;
    let file = list_file()?;
    if let Some(why) = unlistable(&path) {
        let hint = "rename the repository's directory (or a parent of it) and add it again";
        return Err(refuse_unlistable(&path, &file, why, hint));
    }
    let changed = update(&file, |repos| {
        let new = !repos.contains(&path);
        if new {
            repos.push(path.clone());
        }
        new
    })?;
    Ok(Edited {
        path,
        changed,
        file,
    })
}

/// Removes `path` from the list: as written there, or (only when it is not)
/// as the repository it names when it still exists, so a listed repository
/// that cannot be opened is removed without opening it. A path the list
/// cannot hold is never in it, and is refused as `add` refuses it.
pub fn remove(path: &Path) -> Result<Edited> {
    let file = list_file()?;
    let mut named = vec![path.to_owned()];
    if let Ok(abs) = std::path::absolute(path) {
        named.push(abs);
    }
    let mut gone = None;
    let mut take = |named: &[PathBuf]| {
        update(&file, |repos| {
            let at = repos.iter().position(|r| named.contains(r));
            gone = at.map(|i| repos.remove(i));
            gone.is_some()
        })
    };
    if !take(&named)? {
        if let Ok(repo) = repository_path(path) {
            take(&[repo])?;
        }
    }
    match gone {
        Some(path) => Ok(Edited {
            path,
            changed: true,
            file,
        }),
        None => match unlistable(path) {
            Some(why) => {
                let hint = "an older git-loopx wrote such a path as it was, on several lines if it had newlines: edit the file by hand";
                Err(refuse_unlistable(path, &file, why, hint))
            }
            None => Err(Refusal::invalid_input(format!(
                "{} is not in the list of repositories ({})",
                path.display(),
                file.display()
            ))
            .with_hint("`git loopx repos list` shows what is listed")
            .into()),
        },
    }
}

/// Adds the repository of `ctx` to the list, for `init`, `hooks install`
/// and `import`. The list is a convenience: a failure to write it is a
/// warning, never the command's failure.
pub fn register(ctx: &Context) {
    if std::env::var_os("LOOPX_NO_REPOS_LIST").is_some_and(|v| !v.is_empty()) {
        return;
    }
    if let Err(e) = add(ctx.repo_dir()) {
        tracing::warn!("the repository was not added to the list of repositories: {e}");
    }
}

/// How long an edit waits for another one's lock before it gives up.
const LOCK_WAIT_MS: u64 = 5_000;

/// Reads the list, lets `edit` change it, and writes it back when `edit`
/// says it changed: under `<file>.lock` (created exclusively, as git's own
/// lock files are), written to a temporary file and renamed over.
fn update(file: &Path, edit: impl FnOnce(&mut Vec<PathBuf>) -> bool) -> Result<bool> {
    let dir = file.parent().expect("the list's file is in a directory");
    let io = |what: &str, e: std::io::Error| {
        Error::invalid_input(format!("cannot {what} {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| io("create", e))?;
    let lock = file.with_extension("lock");
    let started = std::time::Instant::now();
    let mut held = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(f) => break f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if started.elapsed().as_millis() as u64 > LOCK_WAIT_MS {
                    return Err(Refusal::new(
                        Code::StateLocked,
                        format!("{} is held by another edit", lock.display()),
                    )
                    .with_hint("if no git loopx is running, remove the lock file")
                    .into());
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(io("write in", e)),
        }
    };
    // Until it is renamed over the list, the lock is ours to remove; after,
    // the name may be another edit's lock.
    let result = (|| {
        let mut repos = read_from(file)?;
        if !edit(&mut repos) {
            return Ok(false);
        }
        let mut text = String::new();
        for r in &repos {
            text.push_str(&r.to_string_lossy());
            text.push('\n');
        }
        held.write_all(text.as_bytes())
            .and_then(|()| held.sync_all())
            .map_err(|e| io("write in", e))?;
        std::fs::rename(&lock, file).map_err(|e| io("write in", e))?;
        Ok(true)
    })();
    if !matches!(result, Ok(true)) {
        let _ = std::fs::remove_file(&lock);
    }
    result
}

/// A listed repository's status, or why it has none.
#[derive(Debug, Serialize)]
pub struct RepoStatus {
    pub path: PathBuf,
    /// `ok`, `missing` (the path is gone), `not_initialized` (no
    /// `loopx-state`), `refused` (another user's repository, refused as
    /// git refuses it: see `gix_store::owner`) or `broken` (its state
    /// cannot be read).
    pub condition: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RepoError>,
    /// Its goals, the default first (`status --all`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goals: Vec<StatusReport>,
}

#[derive(Debug, Serialize)]
pub struct RepoError {
    pub code: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// One thing that waits for the person, in one repository.
#[derive(Debug, Serialize)]
pub struct Need {
    pub repo: PathBuf,
    /// `gate`, `user_action`, `broken`, `refused`, `agent_failing` or
    /// `throttled`:
    /// the order they are listed in.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// The gate, todo or agent it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub text: String,
}

const KINDS: [&str; 6] = [
    "gate",
    "user_action",
    "broken",
    "refused",
    "agent_failing",
    "throttled",
];

/// `status --all-repos`.
#[derive(Debug, Serialize)]
pub struct ReposReport {
    pub now: Timestamp,
    pub file: PathBuf,
    /// What waits for the person across every repository, gates first.
    pub needs: Vec<Need>,
    /// Every listed repository: those with needs first (by their first
    /// need), then by path.
    pub repos: Vec<RepoStatus>,
}

/// Each listed repository's status, read on its own: one that is missing
/// or broken is reported in its place and hides nothing else.
pub fn status_all_repos(now: Timestamp) -> Result<ReposReport> {
    let file = list_file()?;
    let mut repos: Vec<RepoStatus> = read_from(&file)?
        .into_iter()
        .map(|path| repo_status(path, now))
        .collect();
    let mut needs: Vec<Need> = repos.iter().flat_map(needs_of).collect();
    let rank = |kind: &str| KINDS.iter().position(|k| *k == kind).unwrap_or(KINDS.len());
    needs.sort_by(|a, b| (rank(a.kind), &a.repo).cmp(&(rank(b.kind), &b.repo)));
    let first = |path: &Path| {
        needs
            .iter()
            .position(|n| n.repo == path)
            .unwrap_or(usize::MAX)
    };
    repos.sort_by(|a, b| (first(&a.path), &a.path).cmp(&(first(&b.path), &b.path)));
    Ok(ReposReport {
        now,
        file,
        needs,
        repos,
    })
}

fn repo_status(path: PathBuf, now: Timestamp) -> RepoStatus {
    if !path.exists() {
        return RepoStatus {
            path,
            condition: "missing",
            error: None,
            goals: Vec::new(),
        };
    }
    let read = read_listed(&path, move |path| {
        Context::open(path, now, None, None).and_then(|ctx| status_all(&ctx))
    });
    match read {
        Ok(all) => RepoStatus {
            path,
            condition: "ok",
            error: None,
            goals: all.goals,
        },
        Err(e) => RepoStatus {
            path,
            condition: match e.code() {
                Code::StateMissing => "not_initialized",
                Code::DubiousOwnership => "refused",
                _ => "broken",
            },
            error: Some(RepoError {
                code: e.code().as_str(),
                message: e.to_string(),
                hint: e.hint(),
            }),
            goals: Vec::new(),
        },
    }
}

fn needs_of(repo: &RepoStatus) -> Vec<Need> {
    let need = |kind, goal: Option<&str>, id: Option<&str>, text: String| Need {
        repo: repo.path.clone(),
        kind,
        goal: goal.map(str::to_owned),
        id: id.map(str::to_owned),
        text,
    };
    let mut out = Vec::new();
    if let kind @ ("broken" | "refused") = repo.condition {
        let message = repo.error.as_ref().map_or("", |e| e.message.as_str());
        out.push(need(kind, None, None, message.to_owned()));
    }
    for g in &repo.goals {
        let goal = Some(g.goal.id.as_str());
        for gate in &g.gates {
            out.push(need("gate", goal, Some(&gate.id), gate.question.clone()));
        }
        for t in &g.user_actions {
            out.push(need("user_action", goal, Some(&t.id), t.text.clone()));
        }
        for a in g.agents.iter().filter(|a| !a.healthy) {
            let text = format!(
                "{} failed turn(s) in a row, {} loop-guard release(s), {} lease(s) expired unused",
                a.consecutive_failures,
                a.guard_releases,
                a.expired_leases.len()
            );
            out.push(need("agent_failing", goal, Some(&a.id), text));
        }
        if g.quota.throttled() && g.goal.status == crate::model::GoalStatus::Active {
            let text = format!(
                "quota spent: {} of {} slots in {} h, next at {}",
                g.quota.spent_slots,
                g.quota.allowed_slots,
                g.quota.window_hours,
                g.quota.next_eligible_at
            );
            out.push(need("throttled", goal, None, text));
        }
    }
    out
}
