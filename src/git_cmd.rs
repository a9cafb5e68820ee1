//! The only place that runs the `git` program (transport, version, fsck).
//!
//! gix reads and writes the state branch; `git` is used where gix cannot serve
//! (push, fsck) or where the user's own git setup must be honoured.

pub mod history;

use std::path::Path;
use std::process::Command;

/// The oldest git whose `fetch --porcelain` we rely on for sync.
pub const MIN_VERSION: (u32, u32, u32) = (2, 41, 0);

/// Output of one git invocation.
#[derive(Debug)]
pub struct GitOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `git -C dir args…`.
pub fn run(dir: &Path, args: &[&str]) -> std::io::Result<GitOutput> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output()?;
    Ok(GitOutput {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The installed git's version, if git runs at all.
pub fn version() -> Option<(u32, u32, u32)> {
    let out = Command::new("git").arg("--version").output().ok()?;
    parse_version(&String::from_utf8_lossy(&out.stdout))
}

fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let rest = text.trim().strip_prefix("git version ")?;
    let mut parts = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|p| !p.is_empty());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    Some((major, minor, patch))
}

/// `git fsck --no-progress` of the repository at `dir`; `Err` carries its report.
pub fn fsck(dir: &Path) -> std::io::Result<Result<(), String>> {
    let out = run(dir, &["fsck", "--no-progress", "--no-dangling"])?;
    Ok(if out.success {
        Ok(())
    } else {
        Err(format!("{}{}", out.stdout, out.stderr).trim().to_owned())
    })
}

/// The repack that rolls up small packs: `git repack -d -l -q --geometric=2`.
/// A geometric repack rolls the small packs (one per writeback, see
/// `store::pack`) and any loose objects into one, merging only as much as
/// keeps pack sizes a doubling progression, so its cost follows what was
/// written since the last one, not the size of the repository; `-d` then
/// deletes what it rolled up. Nothing is pruned: unreachable objects stay
/// for the user's own `git gc` to judge.
const REPACK: [&str; 5] = ["repack", "-d", "-l", "-q", "--geometric=2"];

/// Starts the roll-up repack in the background and returns at once.
///
/// `lock` is an open file whose lock the caller holds: it becomes git's
/// standard input, so the lock lives exactly as long as the repack and the
/// next writer's `try_lock` tells whether one is still running. The repack
/// runs at a lower CPU priority (`nice -n 10` where `nice` exists), so the
/// agents' own writes come first; when writers outpace it, they run it
/// themselves ([`repack_now`]). Every failure is ignored: it is upkeep, and a
/// later write asks again.
pub fn repack_detached(dir: &Path, lock: std::fs::File) {
    let spawn = |program: &str, prefix: &[&str], lock: std::fs::File| {
        Command::new(program)
            .args(prefix)
            .arg("-C")
            .arg(dir)
            .args(REPACK)
            .stdin(lock)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
    };
    let started = match lock.try_clone() {
        Ok(second) => {
            spawn("nice", &["-n", "10", "git"], lock).or_else(|_| spawn("git", &[], second))
        }
        Err(_) => spawn("git", &[], lock),
    };
    match started {
        Ok(child) => reap_later(child),
        Err(e) => tracing::debug!("git repack did not start: {e}"),
    }
}

/// Runs the roll-up repack and waits for it (the caller holds the lock).
pub fn repack_now(dir: &Path) {
    match run(dir, &REPACK) {
        Ok(out) if !out.success => tracing::debug!("git repack failed: {}", out.stderr),
        Err(e) => tracing::debug!("git repack did not start: {e}"),
        Ok(_) => {}
    }
}

/// Keeps a started child to be reaped by a later call, so a long-lived
/// process does not collect zombies (a short-lived one just exits).
fn reap_later(child: std::process::Child) {
    static CHILDREN: std::sync::Mutex<Vec<std::process::Child>> = std::sync::Mutex::new(Vec::new());
    if let Ok(mut children) = CHILDREN.lock() {
        children.retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        children.push(child);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions() {
        assert_eq!(
            super::parse_version("git version 2.47.3\n"),
            Some((2, 47, 3))
        );
        assert_eq!(
            super::parse_version("git version 2.41.0.windows.1"),
            Some((2, 41, 0))
        );
        assert_eq!(super::parse_version("git version 2.45"), Some((2, 45, 0)));
        assert_eq!(super::parse_version("hg 6"), None);
    }
}

/// What `git push --porcelain` said about one ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushStatus {
    /// Updated (fast-forward, forced or new).
    Updated,
    /// The remote already had it.
    UpToDate,
    /// Refused: the lease did not hold, or the remote rejected it.
    Rejected(String),
}

/// What `git fetch --porcelain` did to one local ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchUpdate {
    pub flag: char,
    pub old: String,
    pub new: String,
    pub local_ref: String,
}

/// Runs git with `args` in `dir`, mapping a failure to start to an io error.
fn git(dir: &Path, args: &[&str]) -> std::io::Result<GitOutput> {
    run(dir, args)
}

/// Parses `git fetch --porcelain` lines: `<flag> <old> <new> <local-ref>`.
pub fn parse_fetch_porcelain(stdout: &str) -> Vec<FetchUpdate> {
    stdout
        .lines()
        .filter_map(|line| {
            let mut chars = line.chars();
            let flag = chars.next()?;
            let rest: Vec<&str> = line.get(2..)?.split(' ').collect();
            match rest.as_slice() {
                [old, new, local_ref] => Some(FetchUpdate {
                    flag,
                    old: (*old).to_owned(),
                    new: (*new).to_owned(),
                    local_ref: (*local_ref).to_owned(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// Parses `git push --porcelain`: `<flag>\t<src>:<dst>\t<summary>` for `dst`.
pub fn parse_push_porcelain(stdout: &str, dst: &str) -> Option<PushStatus> {
    stdout.lines().find_map(|line| {
        let mut fields = line.split('\t');
        let flag = fields.next()?;
        let refs = fields.next()?;
        let summary = fields.next().unwrap_or("").to_owned();
        if refs.split(':').nth(1) != Some(dst) {
            return None;
        }
        Some(match flag {
            " " | "+" | "*" => PushStatus::Updated,
            "=" => PushStatus::UpToDate,
            _ => PushStatus::Rejected(summary),
        })
    })
}

/// Fetches `refs/heads/<branch>` of `remote` into `refs/remotes/<remote>/<branch>`.
/// Returns `Ok(false)` when the remote does not have the branch.
pub fn fetch_branch(dir: &Path, remote: &str, branch: &str) -> Result<bool, String> {
    let refspec = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
    let out = git(
        dir,
        &[
            "fetch",
            "--porcelain",
            "--no-write-fetch-head",
            "--no-tags",
            remote,
            &refspec,
        ],
    )
    .map_err(|e| format!("could not run git fetch: {e}"))?;
    if out.success {
        return Ok(true);
    }
    // Tell "the remote has no such branch" from a real failure by asking it.
    let probe = git(
        dir,
        &[
            "ls-remote",
            "--exit-code",
            remote,
            &format!("refs/heads/{branch}"),
        ],
    )
    .map_err(|e| format!("could not run git ls-remote: {e}"))?;
    if !probe.success && probe.stdout.trim().is_empty() && probe.stderr.trim().is_empty() {
        return Ok(false);
    }
    Err(format!("git fetch {remote} failed: {}", out.stderr.trim()))
}

/// Pushes local `refs/heads/<branch>` to `remote` only if the remote still
/// points at `expected` (`None`: the remote must not have it yet).
pub fn push_with_lease(
    dir: &Path,
    remote: &str,
    branch: &str,
    expected: Option<&str>,
) -> Result<PushStatus, String> {
    let full = format!("refs/heads/{branch}");
    let lease = format!("--force-with-lease={full}:{}", expected.unwrap_or(""));
    let refspec = format!("{full}:{full}");
    let out = git(
        dir,
        &[
            "push",
            "--porcelain",
            "--no-verify",
            &lease,
            remote,
            &refspec,
        ],
    )
    .map_err(|e| format!("could not run git push: {e}"))?;
    match parse_push_porcelain(&out.stdout, &full) {
        Some(status) => Ok(status),
        None => Err(format!("git push {remote} failed: {}", out.stderr.trim())),
    }
}

/// `git merge-base a b`, if they share history.
pub fn merge_base(dir: &Path, a: &str, b: &str) -> Result<Option<String>, String> {
    let out = git(dir, &["merge-base", a, b])
        .map_err(|e| format!("could not run git merge-base: {e}"))?;
    if out.success {
        Ok(Some(out.stdout.trim().to_owned()))
    } else if out.stderr.trim().is_empty() {
        Ok(None)
    } else {
        Err(format!("git merge-base failed: {}", out.stderr.trim()))
    }
}

/// Whether `ancestor` is an ancestor of (or equal to) `descendant`.
pub fn is_ancestor(dir: &Path, ancestor: &str, descendant: &str) -> Result<bool, String> {
    let out = git(dir, &["merge-base", "--is-ancestor", ancestor, descendant])
        .map_err(|e| format!("could not run git merge-base: {e}"))?;
    Ok(out.success)
}

#[cfg(test)]
mod transport_tests {
    use super::*;

    #[test]
    fn porcelain_parsing() {
        let fetch = "* 0000000000000000000000000000000000000000 1111111111111111111111111111111111111111 refs/remotes/origin/loopx-state\n";
        let u = &parse_fetch_porcelain(fetch)[0];
        assert_eq!(
            (u.flag, u.local_ref.as_str()),
            ('*', "refs/remotes/origin/loopx-state")
        );
        let ok = "To /tmp/remote.git\n \trefs/heads/loopx-state:refs/heads/loopx-state\t1111111..2222222\nDone\n";
        assert_eq!(
            parse_push_porcelain(ok, "refs/heads/loopx-state"),
            Some(PushStatus::Updated)
        );
        let stale = "To /tmp/remote.git\n!\trefs/heads/loopx-state:refs/heads/loopx-state\t[rejected] (stale info)\nDone\n";
        assert_eq!(
            parse_push_porcelain(stale, "refs/heads/loopx-state"),
            Some(PushStatus::Rejected("[rejected] (stale info)".into()))
        );
        let same = "To r\n=\trefs/heads/loopx-state:refs/heads/loopx-state\t[up to date]\nDone\n";
        assert_eq!(
            parse_push_porcelain(same, "refs/heads/loopx-state"),
            Some(PushStatus::UpToDate)
        );
        assert_eq!(parse_push_porcelain(same, "refs/heads/other"), None);
    }
}
