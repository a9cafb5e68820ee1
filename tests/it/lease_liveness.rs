//! Claims through shared refs end: a lease ref this clone cannot read is
//! an error after a bounded number of tries (bug C), and an agent that
//! claims its own todo again is told it holds it (bug D).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::env::{Run, TestEnv};

/// Runs `git loopx args` in `dir`, killing it (and failing the test) if it
/// has not returned in 60 s: a watchdog, not a timing assertion.
fn bounded(env: &TestEnv, dir: &Path, args: &[&str]) -> Run {
    let mut child = env
        .loopx_cmd(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} never returned: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap().into()
}

/// The remote's refs and their values, to show nothing moved.
fn remote_refs(env: &TestEnv, remote: &Path) -> String {
    env.git(
        remote,
        &["for-each-ref", "--format=%(objectname) %(refname)"],
    )
}

#[test]
fn a_lease_ref_holding_a_foreign_commit_is_a_bounded_clear_error() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    let t = env.add_todo(a, "leased by another tool");
    env.loopx(a, &["sync"]).success();
    // Another tool put an ordinary commit (no lease trailers) on the ref.
    let lease_ref = format!("refs/loopx/leases/main/{t}");
    let foreign = env.git(&remote, &["rev-parse", "refs/heads/main"]);
    env.git(&remote, &["update-ref", &lease_ref, foreign.trim()]);
    let before = remote_refs(&env, &remote);
    let json = bounded(
        &env,
        a,
        &["--json", "--agent", "x", "todo", "claim", &t, "--sync"],
    )
    .failure(3)
    .json();
    assert_eq!(json["error"]["code"], "state_invalid", "{json}");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains(&lease_ref), "names the ref: {json}");
    assert!(
        message.contains(&foreign.trim()[..12]),
        "names the commit: {json}"
    );
    let hint = json["error"]["hint"].as_str().unwrap();
    assert!(
        hint.contains(&format!(":{lease_ref}")),
        "says how to remove it: {json}"
    );
    assert_eq!(remote_refs(&env, &remote), before, "nothing pushed");
    let show = env
        .loopx(a, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert!(show["todo"]["claim"].is_null(), "not claimed here: {show}");
}

#[test]
fn a_lease_the_remote_hides_from_fetch_is_a_bounded_clear_error() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "leased where b cannot see");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    env.loopx(a, &["--agent", "x", "todo", "claim", &t, "--sync"])
        .success();
    // From now on the remote serves no lease to a fetch.
    env.git(
        &remote,
        &["config", "uploadpack.hideRefs", "refs/loopx/leases"],
    );
    let before = remote_refs(&env, &remote);
    let json = bounded(
        &env,
        b,
        &["--json", "--agent", "y", "todo", "claim", &t, "--sync"],
    )
    .failure(3)
    .json();
    assert_eq!(json["error"]["code"], "state_invalid", "{json}");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("refs/loopx/leases/main/{t}")),
        "names the ref: {json}"
    );
    assert_eq!(remote_refs(&env, &remote), before, "nothing pushed");
}

/// Bug D: the same agent claiming the same todo again, in the same second
/// and later, is told it holds it, with the same epoch.
#[test]
fn claiming_ones_own_todo_again_answers_held() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "claimed twice");
    let u = env.add_todo(a, "claimed by next, then by name");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    let now = "2026-12-05T10:00:00Z";
    let claim = |dir: &Path, todo: &str| {
        env.loopx_at(
            dir,
            now,
            &["--json", "--agent", "x", "todo", "claim", todo, "--sync"],
        )
        .success()
        .json()
    };
    let first = claim(b, &t);
    assert_eq!(first["action"], "acquired", "{first}");
    let again = claim(b, &t);
    assert_eq!(again["action"], "held", "{again}");
    assert_eq!(
        again["todo"]["claim"]["epoch"],
        first["todo"]["claim"]["epoch"]
    );
    // The same agent from another clone of the same remote, same second.
    let elsewhere = claim(a, &t);
    assert_eq!(elsewhere["action"], "held", "{elsewhere}");
    // Claimed without --sync, then confirmed with it, in the same second
    // (what failed with `git_failed` when the claim had nothing to write).
    let v = env.add_todo(b, "claimed here, then on the remote");
    env.loopx_at(b, now, &["--agent", "w", "todo", "claim", &v])
        .success();
    let confirmed = env
        .loopx_at(
            b,
            now,
            &["--json", "--agent", "w", "todo", "claim", &v, "--sync"],
        )
        .success()
        .json();
    assert_eq!(confirmed["action"], "held", "{confirmed}");
    let lease = env.git(
        &remote,
        &[
            "log",
            "-1",
            "--format=%B",
            &format!("refs/loopx/leases/main/{v}"),
        ],
    );
    assert!(
        lease.contains("Loopx-Agent: w"),
        "the lease is on the remote: {lease}"
    );
    // Claimed by `todo next` (another agent: x would be given its own
    // todo back), then by name, in the same second.
    let next = env
        .loopx_at(
            b,
            now,
            &[
                "--json", "--agent", "z", "todo", "next", "--claim", "--sync",
            ],
        )
        .success()
        .json();
    assert_eq!(next["todo"]["id"], u.as_str(), "{next}");
    let again = env
        .loopx_at(
            b,
            now,
            &["--json", "--agent", "z", "todo", "claim", &u, "--sync"],
        )
        .success()
        .json();
    assert_eq!(again["action"], "held", "{again}");
}
