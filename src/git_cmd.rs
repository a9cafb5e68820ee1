//! The only place that runs the `git` program (transport, version, fsck).
//!
//! gix reads and writes the state branch; `git` is used where gix cannot serve
//! (push, fsck) or where the user's own git setup must be honoured.

pub mod history;
pub mod hooks;
pub mod range;
pub mod shared;
pub mod signing;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The oldest git whose `fetch --porcelain` we rely on for sync.
pub const MIN_VERSION: (u32, u32, u32) = (2, 41, 0);

/// Output of one git invocation.
#[derive(Debug)]
pub struct GitOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// The one way git-loopx starts git: `git -C <dir>` with the locale pinned
/// (`LC_ALL=C`, `LANGUAGE` removed), as jj starts its git subprocesses.
/// The code reads what git prints (`couldn't find remote ref`, `does not
/// have any commits`, porcelain output), so git must print it the same way
/// in every language; nothing else of the environment changes.
pub fn git(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir);
    pin_locale(&mut cmd);
    cmd
}

fn pin_locale(cmd: &mut Command) {
    cmd.env("LC_ALL", "C").env_remove("LANGUAGE");
}

/// Runs `git -C dir args…`.
pub fn run(dir: &Path, args: &[&str]) -> std::io::Result<GitOutput> {
    let out = git(dir).args(args).output()?;
    Ok(GitOutput {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The installed git's version, if git runs at all.
pub fn version() -> Option<(u32, u32, u32)> {
    let mut cmd = Command::new("git");
    pin_locale(&mut cmd);
    let out = cmd.arg("--version").output().ok()?;
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

/// Whether every object reachable from `commit` (its history, trees and
/// blobs) is in the repository: `git rev-list --objects --missing=print`.
/// `Err` names the missing objects (at most five) or carries git's error.
pub fn objects_complete(dir: &Path, commit: &str) -> std::io::Result<Result<(), String>> {
    let out = run(dir, &["rev-list", "--objects", "--missing=print", commit])?;
    let missing: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix('?'))
        .collect();
    Ok(if !out.success {
        Err(out.stderr.trim().to_owned())
    } else if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(5).copied().collect();
        Err(format!(
            "{} object(s) reachable from {commit} are missing: {}",
            missing.len(),
            shown.join(", ")
        ))
    } else {
        Ok(())
    })
}

/// Drops the entries of `reference`'s reflog that name commits whose
/// objects are gone (`git reflog expire --stale-fix`), keeping every other
/// entry however old; `Err` carries git's error.
pub fn drop_broken_reflog_entries(
    dir: &Path,
    reference: &str,
) -> std::io::Result<Result<(), String>> {
    let out = run(
        dir,
        &[
            "reflog",
            "expire",
            "--stale-fix",
            "--expire=never",
            "--expire-unreachable=never",
            reference,
        ],
    )?;
    Ok(if out.success {
        Ok(())
    } else {
        Err(out.stderr.trim().to_owned())
    })
}

/// Starts `git maintenance run --auto --detach --quiet` and returns at
/// once: git decides for itself what is due, by its own settings, and runs
/// it in the background. Failures are ignored: it is upkeep, and a later
/// write asks again.
pub fn maintenance_detached(dir: &Path) {
    background(
        dir,
        &["maintenance", "run", "--auto", "--detach", "--quiet"],
    );
}

/// Starts `git multi-pack-index write` and returns at once (see
/// `store::Due::multi_pack_index`); git takes its own lock.
pub fn multi_pack_index_detached(dir: &Path) {
    background(dir, &["multi-pack-index", "write", "--no-progress"]);
}

fn background(dir: &Path, args: &[&str]) {
    let started = git(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        Ok(child) => reap_later(child),
        Err(e) => tracing::debug!("git {} did not start: {e}", args[0]),
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
    /// Updated (fast-forward, forced, new or deleted).
    Updated,
    /// The remote already had it.
    UpToDate,
    /// Refused: the lease did not hold, or the remote rejected it.
    Rejected(String),
}

/// The default limit on one network step of `sync` (a fetch, a probe, a push).
pub const DEFAULT_NETWORK_TIMEOUT: Duration = Duration::from_secs(120);

/// One remote as git's network steps reach it: its name, the limit on
/// each step, and the pace this clone's processes share. The sync's
/// preparation (`replicate::prepare`) makes it from `--timeout`,
/// `loopx.syncTimeout` and `loopx.maxRemoteOpsPerSecond` for the command
/// at hand, and every step is given it: nothing of it outlives that
/// command, in a long-lived `mcp`, `serve` or `run` process either.
#[derive(Clone, Debug, PartialEq)]
pub struct Remote {
    /// The remote's name in this repository's config.
    pub name: String,
    /// How long each network step may run before git is killed; `None`:
    /// no limit.
    pub timeout: Option<Duration>,
    /// The steps a second every process of this clone shares; `None`: no
    /// limit.
    pub pace: Option<Pace>,
}

/// A pace of network steps: a host-local file holding the time the next
/// step may start, and the steps a second (`loopx.maxRemoteOpsPerSecond`).
#[derive(Clone, Debug, PartialEq)]
pub struct Pace {
    pub file: std::path::PathBuf,
    pub per_second: f64,
}

impl Remote {
    /// `name` with the default limit ([`DEFAULT_NETWORK_TIMEOUT`]) and no pace.
    pub fn named(name: impl Into<String>) -> Self {
        Remote {
            name: name.into(),
            timeout: Some(DEFAULT_NETWORK_TIMEOUT),
            pace: None,
        }
    }
}

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// Waits for this step's turn under `pace`: each step takes the next
/// free start time, one interval after the last one taken, under an OS
/// lock on the file, so the clone's processes start their steps in the
/// order they asked, none more often than the pace. Best effort: a file
/// that cannot be used means no wait.
fn wait_for_pace(pace: Option<&Pace>) {
    use std::io::{Read, Seek, Write};
    let Some(Pace {
        file: path,
        per_second,
    }) = pace.filter(|p| p.per_second > 0.0)
    else {
        return;
    };
    let interval = Duration::from_secs_f64(1.0 / per_second);
    let wait = (|| -> std::io::Result<Duration> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)?;
        file.lock()?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let next = Duration::from_micros(text.trim().parse().unwrap_or(0));
        let start = next.max(now);
        let taken = start + interval;
        file.rewind()?;
        file.set_len(0)?;
        file.write_all(taken.as_micros().to_string().as_bytes())?;
        Ok(start - now)
    })()
    .unwrap_or_default();
    if !wait.is_zero() {
        tracing::debug!("waiting {wait:?} for this clone's pace of remote operations");
        std::thread::sleep(wait);
    }
}

/// Why a fetch or push did not give an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// git failed, or could not be run: its message.
    Failed(String),
    /// git ran out of time and was killed, with every process it started.
    TimedOut {
        /// `fetch`, `ls-remote` or `push`.
        step: &'static str,
        remote: String,
        after: Duration,
    },
}

impl From<String> for TransportError {
    fn from(message: String) -> Self {
        TransportError::Failed(message)
    }
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::Failed(message) => f.write_str(message),
            TransportError::TimedOut {
                step,
                remote,
                after,
            } => write!(
                f,
                "git {step} {remote} gave no answer within {}s and was stopped",
                after.as_secs_f64()
            ),
        }
    }
}

/// Runs one network step of git with `remote`'s limit, at its pace.
///
/// Where standard input is not a terminal (agents, scripts) git runs in a
/// process group of its own, so a timeout kills everything it started — the
/// ssh it runs, or an `ext::` transport's command — and no pipe is left
/// held open. At a terminal git stays in the foreground group so that it can
/// still ask for a password; a timeout then kills git itself.
fn network(
    dir: &Path,
    args: &[&str],
    step: &'static str,
    remote: &Remote,
) -> Result<GitOutput, TransportError> {
    use std::io::{IsTerminal, Read};
    use std::os::unix::process::CommandExt;
    wait_for_pace(remote.pace.as_ref());
    let Some(limit) = remote.timeout else {
        return run(dir, args)
            .map_err(|e| TransportError::Failed(format!("could not run git {step}: {e}")));
    };
    let own_group = !std::io::stdin().is_terminal();
    let mut cmd = git(dir);
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if own_group {
        cmd.stdin(std::process::Stdio::null()).process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| TransportError::Failed(format!("could not run git {step}: {e}")))?;
    // Read both pipes on threads, so a chatty git never blocks on a full pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    for (which, pipe) in [
        (
            0,
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            1,
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            let _ = tx.send((which, bytes));
        });
    }
    drop(tx);
    let status = wait_limited(&mut child, limit, own_group, &mut |_| {})
        .map_err(|e| TransportError::Failed(format!("waiting for git {step}: {e}")))?;
    let Some(status) = status else {
        return Err(TransportError::TimedOut {
            step,
            remote: remote.name.clone(),
            after: limit,
        });
    };
    // A process git left behind may still hold a pipe: do not wait for it long.
    let mut out = [Vec::new(), Vec::new()];
    let drain_until = Instant::now() + Duration::from_secs(2);
    for _ in 0..2 {
        let left = drain_until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((which, bytes)) => out[which] = bytes,
            Err(_) => break,
        }
    }
    let [stdout, stderr] = out;
    Ok(GitOutput {
        success: status.success(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// How long a child stopped for its time limit has between SIGTERM and
/// SIGKILL, to end cleanly.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Waits for `child` up to `limit`, polling from 1 ms up to 20 ms (most
/// steps end within tens of milliseconds, and a fixed 20 ms wait would add
/// ~10 ms to each) and calling `tick` with the time it has run. When the
/// time is up it stops the child — with the process group it leads, when
/// `own_group`: SIGTERM, then SIGKILL for whatever is left after
/// [`STOP_GRACE`] — reaps it, and returns `None`. The one timeout-and-kill
/// loop: git's network steps, validation commands and `run`'s agent turns
/// use it.
pub fn wait_limited(
    child: &mut std::process::Child,
    limit: Duration,
    own_group: bool,
    tick: &mut dyn FnMut(Duration),
) -> std::io::Result<Option<std::process::ExitStatus>> {
    use rustix::process::{kill_process, kill_process_group, test_kill_process_group, Signal};
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    let mut stopping: Option<Instant> = None;
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child has a pid");
    let send = |signal| match own_group {
        true => kill_process_group(pid, signal),
        false => kill_process(pid, signal),
    };
    loop {
        match (child.try_wait()?, stopping) {
            (Some(status), None) => return Ok(Some(status)),
            (None, None) if start.elapsed() >= limit => {
                let _ = send(Signal::TERM);
                stopping = Some(Instant::now());
            }
            // Stopped: done once the child and its group are gone.
            (Some(_), Some(_)) if !own_group || test_kill_process_group(pid).is_err() => {
                return Ok(None)
            }
            (_, Some(at)) if at.elapsed() >= STOP_GRACE => {
                let _ = send(Signal::KILL);
                child.wait()?;
                return Ok(None);
            }
            _ if stopping.is_none() => tick(start.elapsed()),
            _ => {}
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Stops what is left of the process group `leader` led, once the leader
/// itself was reaped: SIGTERM, then SIGKILL for whatever is left after
/// [`STOP_GRACE`]. Nothing when the group is gone already.
pub fn stop_group(leader: u32) {
    use rustix::process::{kill_process_group, test_kill_process_group, Signal};
    let Some(group) = i32::try_from(leader)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    if kill_process_group(group, Signal::TERM).is_err() {
        return;
    }
    let sent = Instant::now();
    while test_kill_process_group(group).is_ok() {
        if sent.elapsed() >= STOP_GRACE {
            let _ = kill_process_group(group, Signal::KILL);
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
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
            " " | "+" | "*" | "-" => PushStatus::Updated,
            "=" => PushStatus::UpToDate,
            _ => PushStatus::Rejected(summary),
        })
    })
}

/// Fetches `refs/heads/<branch>` of `remote` into `refs/remotes/<remote>/<branch>`.
/// Returns `Ok(false)` when the remote does not have the branch.
pub fn fetch_branch(dir: &Path, remote: &Remote, branch: &str) -> Result<bool, TransportError> {
    let refspec = format!("+refs/heads/{branch}:refs/remotes/{remote}/{branch}");
    let out = network(
        dir,
        &[
            "fetch",
            "--porcelain",
            "--no-write-fetch-head",
            "--no-tags",
            // A write starts git's maintenance when git would; one per
            // fetch would cost a `git maintenance` process per sync.
            "--no-auto-maintenance",
            &remote.name,
            &refspec,
        ],
        "fetch",
        remote,
    )?;
    if out.success {
        return Ok(true);
    }
    // Tell "the remote has no such branch" from a real failure by asking it.
    let probe = network(
        dir,
        &[
            "ls-remote",
            "--exit-code",
            &remote.name,
            &format!("refs/heads/{branch}"),
        ],
        "ls-remote",
        remote,
    )?;
    if !probe.success && probe.stdout.trim().is_empty() && probe.stderr.trim().is_empty() {
        return Ok(false);
    }
    Err(TransportError::Failed(format!(
        "git fetch {remote} failed: {}",
        out.stderr.trim()
    )))
}

/// Pushes the commit `src` to `refs/heads/<branch>` of `remote` only if the
/// remote still points at `expected` (`None`: the remote must not have it
/// yet). Pushing the commit by id, not the local branch, sends exactly what
/// the caller checked, and lets a claim be pushed before the local branch
/// moves (see `ops::lease::claim_synced`).
pub fn push_with_lease(
    dir: &Path,
    remote: &Remote,
    src: &str,
    branch: &str,
    expected: Option<&str>,
) -> Result<PushStatus, TransportError> {
    let full = format!("refs/heads/{branch}");
    let lease = format!("--force-with-lease={full}:{}", expected.unwrap_or(""));
    let refspec = format!("{src}:{full}");
    let out = network(
        dir,
        &[
            "push",
            "--porcelain",
            "--no-verify",
            &lease,
            &remote.name,
            &refspec,
        ],
        "push",
        remote,
    )?;
    match parse_push_porcelain(&out.stdout, &full) {
        Some(status) => Ok(status),
        None => Err(TransportError::Failed(format!(
            "git push {remote} failed: {}",
            out.stderr.trim()
        ))),
    }
}

/// `git merge-base a b`, if they share history.
pub fn merge_base(dir: &Path, a: &str, b: &str) -> Result<Option<String>, String> {
    merge_base_of(dir, a, &[b])
}

/// The best common ancestor of `one` and a merge of all of `others` (`git
/// merge-base one others…`), if they share history: for the code
/// branches `pr` compares, and for the state's ancestry questions whose
/// walk in process (`gix_store::ancestry`) would go too deep.
pub fn merge_base_of(dir: &Path, one: &str, others: &[&str]) -> Result<Option<String>, String> {
    let mut args = vec!["merge-base", one];
    args.extend_from_slice(others);
    let out = run(dir, &args).map_err(|e| format!("could not run git merge-base: {e}"))?;
    if out.success {
        Ok(out.stdout.split_whitespace().next().map(str::to_owned))
    } else if out.stderr.trim().is_empty() {
        Ok(None)
    } else {
        Err(format!("git merge-base failed: {}", out.stderr.trim()))
    }
}

/// Whether `ancestor` is `descendant` or reachable from it.
pub fn is_ancestor(dir: &Path, ancestor: &str, descendant: &str) -> Result<bool, String> {
    if ancestor == descendant {
        return Ok(true);
    }
    let out = run(dir, &["merge-base", "--is-ancestor", ancestor, descendant])
        .map_err(|e| format!("could not run git merge-base: {e}"))?;
    if out.success {
        Ok(true)
    } else if out.stderr.trim().is_empty() {
        Ok(false)
    } else {
        Err(format!(
            "git merge-base --is-ancestor failed: {}",
            out.stderr.trim()
        ))
    }
}

/// Of `commits`, those no other one of them reaches (`git merge-base
/// --independent`), each once, in their first order.
pub fn independent(dir: &Path, commits: &[&str]) -> Result<Vec<String>, String> {
    let mut unique: Vec<&str> = Vec::new();
    for c in commits {
        if !unique.contains(c) {
            unique.push(c);
        }
    }
    if unique.len() < 2 {
        return Ok(unique.into_iter().map(str::to_owned).collect());
    }
    let mut args = vec!["merge-base", "--independent"];
    args.extend_from_slice(&unique);
    let out = run(dir, &args).map_err(|e| format!("could not run git merge-base: {e}"))?;
    if !out.success {
        return Err(format!("git merge-base failed: {}", out.stderr.trim()));
    }
    let tops: Vec<&str> = out.stdout.split_whitespace().collect();
    Ok(unique
        .into_iter()
        .filter(|c| tops.contains(c))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod transport_tests {
    use super::*;

    #[test]
    fn porcelain_parsing() {
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

/// The commit `rev` names, as git reads revisions (`loopx-state~3`,
/// `loopx-state@{1}`, `origin/loopx-state`, a short id), or `None` when git
/// knows no such commit.
pub fn resolve_commit(dir: &Path, rev: &str) -> Result<Option<String>, String> {
    let spec = format!("{rev}^{{commit}}");
    let out = run(
        dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    )
    .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.success {
        return Ok(None);
    }
    Ok(Some(out.stdout.trim().to_owned()))
}
