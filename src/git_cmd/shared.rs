//! The transport of shared refs (see `ops::sync::shared`): one fetch of the
//! state branch, every peer's ref and every lease ref; pushes of several
//! refs at once, each with its own expectation; and the ancestry questions
//! a merge of many heads asks.

use std::path::Path;

use super::{network, parse_push_porcelain, run, PushStatus, TransportError};

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
pub fn fetch(dir: &Path, remote: &str) -> Result<bool, TransportError> {
    let tracking = tracking_prefix(remote);
    let state = format!("+refs/heads/loopx-state:refs/remotes/{remote}/loopx-state");
    let peers = format!("+{PEERS}*:{tracking}peers/*");
    let leases = format!("+{LEASES}*:{tracking}leases/*");
    let args = |with_state: bool| {
        let mut a = vec![
            "fetch",
            "--porcelain",
            "--no-write-fetch-head",
            "--no-tags",
            // A write starts git's own maintenance when git would (see
            // `GixStore::maintenance_due`); git's check after every fetch
            // would cost a `git maintenance` process per sync.
            "--no-auto-maintenance",
            "--prune",
            remote,
        ];
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
pub fn fetch_leases(dir: &Path, remote: &str, pattern: &str) -> Result<bool, TransportError> {
    let refspec = format!(
        "+{LEASES}{pattern}:{}leases/{pattern}",
        tracking_prefix(remote)
    );
    let out = network(
        dir,
        &[
            "fetch",
            "--porcelain",
            "--no-write-fetch-head",
            "--no-tags",
            "--no-auto-maintenance",
            remote,
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
    remote: &str,
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
    args.push(remote.into());
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

/// A ref under a prefix, with the trailers of the commit it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefTrailers {
    pub name: String,
    pub commit: String,
    /// The commit's committer time, in seconds since the epoch.
    pub time: i64,
    /// `(key, value)` in the order written.
    pub trailers: Vec<(String, String)>,
}

/// Every ref under `prefix` with its commit's trailers, in one `git
/// for-each-ref`.
pub fn refs_with_trailers(dir: &Path, prefix: &str) -> Result<Vec<RefTrailers>, String> {
    let out = run(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname)%09%(objectname)%09%(committerdate:unix)%0a%(trailers:only,unfold)%00",
            prefix,
        ],
    )
    .map_err(|e| format!("could not run git for-each-ref: {e}"))?;
    if !out.success {
        return Err(format!("git for-each-ref failed: {}", out.stderr.trim()));
    }
    Ok(parse_refs_with_trailers(&out.stdout))
}

fn parse_refs_with_trailers(text: &str) -> Vec<RefTrailers> {
    text.split('\0')
        .filter_map(|record| {
            let record = record.trim_start_matches('\n');
            let (head, body) = record.split_once('\n').unwrap_or((record, ""));
            let mut fields = head.split('\t');
            let (name, commit) = (fields.next()?, fields.next()?);
            let time = fields.next().and_then(|t| t.parse().ok()).unwrap_or(0);
            let trailers = body
                .lines()
                .filter_map(|l| l.split_once(": "))
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .collect();
            Some(RefTrailers {
                name: name.to_owned(),
                commit: commit.to_owned(),
                time,
                trailers,
            })
        })
        .collect()
}

/// Every ref under `prefix` and the object it points at.
pub fn refs_under(dir: &Path, prefix: &str) -> Result<Vec<(String, String)>, String> {
    let out = run(
        dir,
        &["for-each-ref", "--format=%(refname) %(objectname)", prefix],
    )
    .map_err(|e| format!("could not run git for-each-ref: {e}"))?;
    if !out.success {
        return Err(format!("git for-each-ref failed: {}", out.stderr.trim()));
    }
    Ok(out
        .stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, o)| (n.to_owned(), o.to_owned()))
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn refs_and_trailers_parse() {
        let text = "refs/loopx/remotes/o/leases/main/t1\taaaa\t1700000000\nLoopx-Agent: a\nLoopx-Epoch: 3\n\0\nrefs/loopx/remotes/o/leases/main/t2\tbbbb\t\n\n\0\n";
        let got = super::parse_refs_with_trailers(text);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, "refs/loopx/remotes/o/leases/main/t1");
        assert_eq!(got[0].commit, "aaaa");
        assert_eq!((got[0].time, got[1].time), (1_700_000_000, 0));
        assert_eq!(
            got[0].trailers,
            vec![
                ("Loopx-Agent".to_owned(), "a".to_owned()),
                ("Loopx-Epoch".to_owned(), "3".to_owned())
            ]
        );
        assert!(got[1].trailers.is_empty());
    }
}
