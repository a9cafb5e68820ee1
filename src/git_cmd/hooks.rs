//! `git` for the git hooks and their installer: where hooks live, commit
//! message trailers (`git interpret-trailers`, so the format is git's own),
//! and the code commits that carry a trailer.

use std::path::{Path, PathBuf};

use super::run;

fn spawn_err(e: std::io::Error) -> String {
    format!("cannot run git: {e}")
}

/// The directory git runs hooks from for the repository at `dir`:
/// `core.hooksPath` (relative to the worktree's root, as git takes it), else
/// the common git directory's `hooks` (shared by linked worktrees).
pub fn hooks_dir(dir: &Path) -> Result<PathBuf, String> {
    git_path(dir, "hooks")
}

/// A git path of the worktree at `dir` (`MERGE_HEAD`, say).
pub fn git_path(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let out = run(dir, &["rev-parse", "--git-path", name]).map_err(spawn_err)?;
    if !out.success {
        return Err(format!(
            "git rev-parse --git-path {name}: {}",
            out.stderr.trim()
        ));
    }
    let path = PathBuf::from(out.stdout.trim_end_matches('\n'));
    Ok(if path.is_absolute() {
        path
    } else {
        dir.join(path)
    })
}

/// Whether a git config value means true (`true`, `yes`, `on`, `1`).
pub fn is_true(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "true" | "yes" | "on" | "1"
    )
}

/// The values of trailer `key` in the commit message file `file`, as git
/// reads trailers (`git interpret-trailers --parse`; keys compare without
/// case).
pub fn trailer_values(dir: &Path, file: &Path, key: &str) -> Result<Vec<String>, String> {
    let file = file
        .to_str()
        .ok_or("the message file's path is not UTF-8")?;
    let out = run(dir, &["interpret-trailers", "--parse", file]).map_err(spawn_err)?;
    if !out.success {
        return Err(format!(
            "git interpret-trailers --parse: {}",
            out.stderr.trim()
        ));
    }
    Ok(out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case(key))
        .map(|(_, v)| v.trim().to_owned())
        .collect())
}

/// Adds `key: value` to the trailers of the commit message file `file`, in
/// place, where git puts trailers (before the comment lines of the template).
pub fn add_trailer(dir: &Path, file: &Path, key: &str, value: &str) -> Result<(), String> {
    let file = file
        .to_str()
        .ok_or("the message file's path is not UTF-8")?;
    let trailer = format!("{key}: {value}");
    let out = run(
        dir,
        &[
            "interpret-trailers",
            "--in-place",
            "--if-exists",
            "addIfDifferent",
            "--trailer",
            &trailer,
            file,
        ],
    )
    .map_err(spawn_err)?;
    if !out.success {
        return Err(format!("git interpret-trailers: {}", out.stderr.trim()));
    }
    Ok(())
}

/// A code commit with a trailer.
#[derive(Debug)]
pub struct TrailerCommit {
    pub commit: String,
    /// The branches that contain it.
    pub found_on: Vec<String>,
    /// Committer date, strict ISO 8601.
    pub time: String,
    pub subject: String,
    /// Every value of the trailer in its message.
    pub values: Vec<String>,
}

/// The commits on the repository's local and remote-tracking branches
/// (`loopx-state` left out) whose message has a `key:` trailer, newest first.
pub fn commits_with_trailer(dir: &Path, key: &str) -> Result<Vec<TrailerCommit>, String> {
    let format =
        format!("--format=%H%x1f%cI%x1f%s%x1f%(trailers:key={key},valueonly,separator=%x1f)%x1e");
    let grep = format!("--grep=^{key}:");
    let out = run(
        dir,
        &[
            "log",
            "-i",
            &grep,
            "--exclude=loopx-state",
            "--branches",
            "--exclude=*/loopx-state",
            "--remotes",
            &format,
        ],
    )
    .map_err(spawn_err)?;
    if !out.success {
        // No branch at all (a repository with only loopx-state) is no commit.
        if out.stderr.contains("does not have any commits") {
            return Ok(Vec::new());
        }
        return Err(format!("git log: {}", out.stderr.trim()));
    }
    Ok(out
        .stdout
        .split('\u{1e}')
        .filter_map(|record| {
            let mut fields = record.trim_start_matches('\n').split('\u{1f}');
            let commit = fields.next()?.to_owned();
            if commit.is_empty() {
                return None;
            }
            let time = fields.next()?.to_owned();
            let subject = fields.next()?.to_owned();
            let values: Vec<String> = fields
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect();
            (!values.is_empty()).then_some(TrailerCommit {
                commit,
                found_on: Vec::new(),
                time,
                subject,
                values,
            })
        })
        .collect())
}

/// The local and remote-tracking branches (`loopx-state` left out) that
/// contain `commit`.
pub fn branches_containing(dir: &Path, commit: &str) -> Result<Vec<String>, String> {
    let contains = format!("--contains={commit}");
    let out = run(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname)",
            &contains,
            "refs/heads",
            "refs/remotes",
        ],
    )
    .map_err(spawn_err)?;
    if !out.success {
        return Err(format!("git for-each-ref: {}", out.stderr.trim()));
    }
    Ok(out
        .stdout
        .lines()
        .filter(|r| !r.ends_with("/loopx-state") && !r.ends_with("/HEAD"))
        .map(|r| {
            r.strip_prefix("refs/heads/")
                .or_else(|| r.strip_prefix("refs/remotes/"))
                .unwrap_or(r)
                .to_owned()
        })
        .collect())
}
