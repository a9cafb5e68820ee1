//! The transport of shared refs (see `replicate::shared`): one fetch of the
//! state branch, every peer's ref and every lease ref; pushes of several
//! refs at once, each with its own expectation; and the ancestry questions
//! a merge of many heads asks.

use std::path::Path;

use super::{network, parse_push_porcelain, PushStatus, Remote, TransportError};

/// Where the remote keeps each peer's published state: `refs/loopx/peers/<id>`.
pub const PEERS: &str = "refs/loopx/peers/";
/// Where the remote keeps one lease per claimed todo: `refs/loopx/leases/<goal>/<todo>`.
pub const LEASES: &str = "refs/loopx/leases/";

/// The local copy of the remote's `refs/loopx/…`: `refs/loopx/remotes/<remote>/…`.
pub fn tracking_prefix(remote: &str) -> String {
    format!("refs/loopx/remotes/{remote}/")
}

/// Fetches the remote's `loopx-state` (into `refs/remotes/<remote>/loopx-state`)
/// and its `refs/loopx/peers/*` and `refs/loopx/leases/*` (under
/// [`tracking_prefix`]) in one `git fetch`. Returns whether the remote has
/// a `loopx-state` branch.
///
/// The glob refspecs match nothing on a remote that has no shared refs yet;
/// only the exact one fails on a remote without the branch, so that case is
/// told apart by fetching again without it.
///
/// `tips` are the commits whose history git offers the remote as what this
/// clone has (`--negotiation-tip`): the state branch's, not the user's
/// branches, whose history has nothing in common with it. Without them git
/// walks every local ref's recent commits first (20 of the 57 ms of CPU a
/// fetch of sixteen peer heads cost on a 5,000-commit state branch).
pub fn fetch(dir: &Path, remote: &Remote, tips: &[&str]) -> Result<bool, TransportError> {
    let tracking = tracking_prefix(&remote.name);
    let state = format!("+refs/heads/loopx-state:refs/remotes/{remote}/loopx-state");
    let peers = format!("+{PEERS}*:{tracking}peers/*");
    let leases = format!("+{LEASES}*:{tracking}leases/*");
    let tips: Vec<String> = tips
        .iter()
        .map(|t| format!("--negotiation-tip={t}"))
        .collect();
    let args = |with_state: bool| {
        let mut a = vec![
            "fetch",
            "--porcelain",
            "--no-write-fetch-head",
            "--no-tags",
            // A write starts git's own maintenance when git would (see
            // `Repository::upkeep_due`); git's check after every fetch
            // would cost a `git maintenance` process per sync.
            "--no-auto-maintenance",
            "--prune",
        ];
        a.extend(tips.iter().map(String::as_str));
        a.push(&remote.name);
        if with_state {
            a.push(state.as_str());
        }
        a.push(peers.as_str());
        a.push(leases.as_str());
        a.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let all = args(true);
    let out = network(dir, &strs(&all), "fetch", remote)?;
    if out.success {
        return Ok(true);
    }
    if !out.stderr.contains("couldn't find remote ref") {
        return Err(TransportError::Failed(format!(
            "git fetch {remote} failed: {}",
            out.stderr.trim()
        )));
    }
    let rest = args(false);
    let out = network(dir, &strs(&rest), "fetch", remote)?;
    if out.success {
        Ok(false)
    } else {
        Err(TransportError::Failed(format!(
            "git fetch {remote} failed: {}",
            out.stderr.trim()
        )))
    }
}

/// Fetches only the remote's lease refs matching `pattern` (`<goal>/<todo>`
/// or `<goal>/*`) into [`tracking_prefix`]. Returns `false` when an exact
/// lease does not exist on the remote (nobody claimed that todo through it).
pub fn fetch_leases(dir: &Path, remote: &Remote, pattern: &str) -> Result<bool, TransportError> {
    let refspec = format!(
        "+{LEASES}{pattern}:{}leases/{pattern}",
        tracking_prefix(&remote.name)
    );
    let out = network(
        dir,
        &[
            "fetch",
            "--porcelain",
            "--no-write-fetch-head",
            "--no-tags",
            "--no-auto-maintenance",
            &remote.name,
            &refspec,
        ],
        "fetch",
        remote,
    )?;
    if out.success {
        Ok(true)
    } else if out.stderr.contains("couldn't find remote ref") {
        Ok(false)
    } else {
        Err(TransportError::Failed(format!(
            "git fetch {remote} failed: {}",
            out.stderr.trim()
        )))
    }
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// One ref a push updates.
#[derive(Debug, Clone)]
pub struct Update {
    /// The commit sent.
    pub src: String,
    /// The remote's ref.
    pub dst: String,
    /// `Some(expected)`: a compare-and-swap (`--force-with-lease`; the empty
    /// string: the ref must not exist yet). `None`: a fast-forward only.
    pub lease: Option<String>,
}

/// Pushes several refs in one `git push`; `atomic`: all land or none does.
/// Returns each ref's outcome, in the order given.
pub fn push(
    dir: &Path,
    remote: &Remote,
    updates: &[Update],
    atomic: bool,
) -> Result<Vec<PushStatus>, TransportError> {
    let mut args: Vec<String> = vec!["push".into(), "--porcelain".into(), "--no-verify".into()];
    if atomic {
        args.push("--atomic".into());
    }
    for u in updates {
        if let Some(expected) = &u.lease {
            args.push(format!("--force-with-lease={}:{expected}", u.dst));
        }
    }
    args.push(remote.name.clone());
    for u in updates {
        args.push(format!("{}:{}", u.src, u.dst));
    }
    let out = network(dir, &strs(&args), "push", remote)?;
    updates
        .iter()
        .map(|u| {
            parse_push_porcelain(&out.stdout, &u.dst).ok_or_else(|| {
                TransportError::Failed(format!("git push {remote} failed: {}", out.stderr.trim()))
            })
        })
        .collect()
}
