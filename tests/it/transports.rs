//! Sync and claims over real transports: a bare remote served over smart
//! HTTP (`git http-backend` behind lighttpd) and over ssh (a private
//! `sshd`), both on 127.0.0.1 through `examples/support/serve-remote.sh`.
//! Two clones race for one todo with `--sync`: exactly one gets it; the
//! winner's end is published, and past four lease-ref graces a sync
//! deletes the lease ref over the same transport.
//!
//! Needs lighttpd and sshd (`serve-remote.sh install`);
//! `LOOPX_REQUIRE_TRANSPORTS=1` makes their absence a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::env::TestEnv;
use crate::require;
use crate::served::{self, Served};

/// Past four graces of the test's clock (`env::NOW`, 10:00).
const MUCH_LATER: &str = "2026-12-02T10:45:00Z";

/// Serves `remote`, or `None` (the test is skipped) where lighttpd or
/// sshd is missing.
fn serve(env: &TestEnv, remote: &Path) -> Option<Served> {
    let path = std::env::var("PATH").unwrap_or_default() + ":/usr/sbin:/sbin";
    let missing: Vec<&str> = ["lighttpd", "sshd"]
        .into_iter()
        .filter(|p| {
            !Command::new("sh")
                .args(["-c", &format!("command -v {p}")])
                .env("PATH", &path)
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    if !missing.is_empty() {
        require::skip(
            "LOOPX_REQUIRE_TRANSPORTS",
            &format!(
                "{} not installed (`{} install`)",
                missing.join(" and "),
                served::script().display()
            ),
        );
        return None;
    }
    Some(Served::start(remote, &env.path("served"), 0))
}

fn lease_refs(env: &TestEnv, remote: &Path) -> usize {
    env.git(remote, &["for-each-ref", "refs/loopx/leases/"])
        .lines()
        .count()
}

/// Two clones reach `remote` at `url`; they race for one todo.
fn race_over(env: &TestEnv, remote: &Path, dirs: &[PathBuf], url: &str, ssh: Option<&str>) {
    for dir in dirs {
        env.git(dir, &["remote", "set-url", "origin", url]);
        if let Some(ssh) = ssh {
            env.git(dir, &["config", "core.sshCommand", ssh]);
        }
    }
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, &format!("over {url}"));
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    let racers: Vec<_> = [(a, "x"), (b, "y")]
        .into_iter()
        .map(|(dir, agent)| {
            env.loopx_cmd(dir)
                .args(["--json", "--agent", agent, "todo", "claim", &t, "--sync"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let runs: Vec<crate::env::Run> = racers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().into())
        .collect();
    let won: Vec<usize> = (0..2).filter(|&i| runs[i].code == 0).collect();
    assert_eq!(won.len(), 1, "exactly one claim wins: {:?}", runs);
    let (winner, agent) = if won[0] == 0 { (a, "x") } else { (b, "y") };
    env.loopx(
        winner,
        &["--agent", agent, "todo", "done", &t, "--evidence", "tests"],
    )
    .success();
    env.loopx(winner, &["sync"]).success();
    assert_eq!(lease_refs(env, remote), 1);
    let ended = env.git(
        remote,
        &[
            "log",
            "-1",
            "--format=%B",
            &format!("refs/loopx/leases/main/{t}"),
        ],
    );
    assert!(ended.contains("Loopx-Lease: done"), "{ended}");
    // Past four graces any peer deletes it, over this transport (one that
    // learned of the end a minute after it was published: issue 47, item 3).
    env.loopx_at(a, "2026-12-02T10:01:00Z", &["sync"]).success();
    let json = env
        .loopx_at(a, MUCH_LATER, &["--json", "sync"])
        .success()
        .json();
    assert_eq!(json["leases_deleted"], 1, "{json}");
    assert_eq!(lease_refs(env, remote), 0);
    env.loopx_at(b, MUCH_LATER, &["sync"]).success();
    assert_eq!(env.tip(a), env.tip(b), "both clones converge");
}

#[test]
fn claims_and_lease_deletion_over_smart_http_and_ssh() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let Some(served) = serve(&env, &remote) else {
        return;
    };
    race_over(&env, &remote, &dirs, &served.http, None);
    race_over(&env, &remote, &dirs, &served.ssh, Some(&served.ssh_command));
}
