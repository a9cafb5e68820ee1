//! `git` for `pr`: the code commits of a range with their `Loopx-Todo`
//! trailers, the repository's default branch, and the state commits that
//! touched given files (a todo's claim history).

use std::path::Path;

use super::run;

fn spawn_err(e: std::io::Error) -> String {
    format!("cannot run git: {e}")
}

/// A code commit of a range.
#[derive(Debug, Clone)]
pub struct RangeCommit {
    pub commit: String,
    /// Committer date, strict ISO 8601.
    pub time: String,
    pub subject: String,
    /// The values of its `key` trailers (none when it has none).
    pub values: Vec<String>,
}

/// The commits of `base..head` (`git log`, every commit reachable from
/// `head` and not from `base`, merges included), oldest first, with the
/// values of their `key` trailers.
pub fn range_commits(
    dir: &Path,
    base: &str,
    head: &str,
    key: &str,
) -> Result<Vec<RangeCommit>, String> {
    let format =
        format!("--format=%x1e%H%x1f%cI%x1f%s%x1f%(trailers:key={key},valueonly,separator=%x1f)");
    let range = format!("{base}..{head}");
    let out = run(
        dir,
        &["log", "--reverse", "--topo-order", &format, &range, "--"],
    )
    .map_err(spawn_err)?;
    if !out.success {
        return Err(format!("git log {range}: {}", out.stderr.trim()));
    }
    Ok(out
        .stdout
        .split('\u{1e}')
        .filter_map(|record| {
            let mut fields = record.trim_end_matches('\n').split('\u{1f}');
            let commit = fields.next()?.trim().to_owned();
            if commit.is_empty() {
                return None;
            }
            let time = fields.next()?.to_owned();
            let subject = fields.next()?.to_owned();
            let values = fields
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect();
            Some(RangeCommit {
                commit,
                time,
                subject,
                values,
            })
        })
        .collect())
}

/// The repository's default branch, as a revision: what `origin/HEAD`
/// points at when it is set, else `main`, else `master` (local branches
/// first, then `origin`'s). `None` when there is none of them.
pub fn default_branch(dir: &Path) -> Result<Option<String>, String> {
    let out = run(
        dir,
        &[
            "symbolic-ref",
            "--quiet",
            "--short",
            "refs/remotes/origin/HEAD",
        ],
    )
    .map_err(spawn_err)?;
    if out.success && !out.stdout.trim().is_empty() {
        return Ok(Some(out.stdout.trim().to_owned()));
    }
    for candidate in [
        "refs/heads/main",
        "refs/heads/master",
        "refs/remotes/origin/main",
        "refs/remotes/origin/master",
    ] {
        if super::resolve_commit(dir, candidate)?.is_some() {
            let short = candidate
                .strip_prefix("refs/heads/")
                .or_else(|| candidate.strip_prefix("refs/remotes/"))
                .unwrap_or(candidate);
            return Ok(Some(short.to_owned()));
        }
    }
    Ok(None)
}

/// A state commit that changed some of the files asked about.
#[derive(Debug, Clone)]
pub struct FileCommit {
    pub commit: String,
    /// Committer date, strict ISO 8601.
    pub time: String,
    pub subject: String,
    /// Its `Loopx-Op` trailer.
    pub op: Option<String>,
    /// Its `Loopx-Agent` trailer.
    pub agent: Option<String>,
    /// Which of the files asked about it changed.
    pub files: Vec<String>,
}

/// The commits reachable from `tip` that changed any of `paths` (git's
/// default history simplification: what the surviving history did), oldest
/// first.
pub fn file_commits(dir: &Path, tip: &str, paths: &[String]) -> Result<Vec<FileCommit>, String> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut args = vec![
        "log",
        "--reverse",
        "--name-only",
        "--format=%x1e%H%x1f%cI%x1f%(trailers:key=Loopx-Op,valueonly,separator=%x1f)%x1f%(trailers:key=Loopx-Agent,valueonly,separator=%x1f)%x1f%s",
        tip,
        "--",
    ];
    args.extend(paths.iter().map(String::as_str));
    let out = run(dir, &args).map_err(spawn_err)?;
    if !out.success {
        return Err(format!("git log {tip}: {}", out.stderr.trim()));
    }
    Ok(out
        .stdout
        .split('\u{1e}')
        .filter_map(|record| {
            // The format line, then a blank line, then the changed files.
            let (head, files) = record.split_once('\n').unwrap_or((record, ""));
            let mut fields = head.split('\u{1f}');
            let commit = fields.next()?.trim().to_owned();
            if commit.is_empty() {
                return None;
            }
            let time = fields.next()?.to_owned();
            let op = fields.next().map(str::trim).filter(|v| !v.is_empty());
            let agent = fields.next().map(str::trim).filter(|v| !v.is_empty());
            let subject = fields.collect::<Vec<_>>().join(" ");
            Some(FileCommit {
                commit,
                time,
                subject,
                op: op.map(str::to_owned),
                agent: agent.map(str::to_owned),
                files: files
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
            })
        })
        .collect())
}
