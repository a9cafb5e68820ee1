//! A lease ref lives as long as its lease: once the remote's `loopx-state`
//! records a lease's end, and the end has been published for the grace
//! (`loopx.leaseRefGrace`, 10 minutes by default), the sync of the peer a
//! hash of peer and todo picks deletes the ref on the remote and in its
//! clone (any peer does after four graces), and the other clones drop
//! their copies at their next fetch. A clone whose state is older than the deletion cannot
//! take the finished todo again: a claim that would create a lease ref
//! decides on a fresh merge of the remote.

use std::path::Path;

use crate::env::TestEnv;

/// Within the grace of the test's clock (`env::NOW`, 10:00).
const SOON: &str = "2026-12-02T10:05:00Z";
/// Past the grace, even for a clone that learned of the end at `SOON`
/// (the grace counts from then for it: issue 47, item 3).
const LATER: &str = "2026-12-02T10:16:00Z";
/// Past four graces: any peer deletes.
const MUCH_LATER: &str = "2026-12-02T10:41:00Z";
const LATER_STILL: &str = "2026-12-02T10:42:00Z";

/// Which of two peers deletes `todo`'s lease ref (as the sync picks it:
/// the higher rendezvous score).
fn deleter<'a>(peers: [&'a str; 2], todo: &str) -> &'a str {
    let score = |peer: &str| loopx::model::lease::rendezvous(peer, todo);
    if score(peers[0]) >= score(peers[1]) {
        peers[0]
    } else {
        peers[1]
    }
}

/// The lease refs under `refs/loopx/` of a repository: the remote's own, or
/// a clone's copies of them.
fn lease_refs(env: &TestEnv, repo: &Path) -> Vec<String> {
    env.git(
        repo,
        &["for-each-ref", "--format=%(refname)", "refs/loopx/"],
    )
    .lines()
    .filter(|r| r.contains("/leases/"))
    .map(str::to_owned)
    .collect()
}

/// `agent` claims `t` through the remote, finishes it and syncs: the sync
/// publishes the lease's end on its ref and the done on `loopx-state`.
fn claim_and_finish(env: &TestEnv, dir: &Path, agent: &str, t: &str) {
    env.loopx(dir, &["--agent", agent, "todo", "claim", t, "--sync"])
        .success();
    env.loopx(
        dir,
        &["--agent", agent, "todo", "done", t, "--evidence", "tests"],
    )
    .success();
    env.loopx(dir, &["sync"]).success();
}

#[test]
fn an_ended_lease_ref_is_deleted_after_the_grace_everywhere() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    // a published under the id it made itself; b's is set.
    let peers = env.git(
        &remote,
        &[
            "for-each-ref",
            "--format=%(refname:lstrip=3)",
            "refs/loopx/peers/",
        ],
    );
    let pa = peers.trim().to_owned();
    env.git(b, &["config", "loopx.peer", "peer-b"]);
    let t = env.add_todo(a, "finish me");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    claim_and_finish(&env, a, "x", &t);
    // The peer that deletes the ref, and the other.
    let (owner, other) = if deleter([&pa, "peer-b"], &t) == pa {
        (a, b)
    } else {
        (b, a)
    };
    let name = format!("refs/loopx/leases/main/{t}");
    assert_eq!(lease_refs(&env, &remote), vec![name.clone()]);
    let ended = env.git(&remote, &["log", "-1", "--format=%B", &name]);
    assert!(ended.contains("Loopx-Lease: done"), "{ended}");

    // Within the grace the ref stays.
    for dir in [other, owner] {
        let json = env
            .loopx_at(dir, SOON, &["--json", "sync"])
            .success()
            .json();
        assert!(json.get("leases_deleted").is_none(), "{json}");
    }
    assert_eq!(lease_refs(&env, &remote), vec![name.clone()]);
    assert_eq!(lease_refs(&env, b).len(), 1, "b has its copy");

    // Past it, the other peer leaves it to its deleter...
    let json = env
        .loopx_at(other, LATER, &["--json", "sync"])
        .success()
        .json();
    assert!(json.get("leases_deleted").is_none(), "{json}");
    assert_eq!(lease_refs(&env, &remote), vec![name.clone()]);
    // ...which deletes it, there and in its clone.
    let run = env.loopx_at(owner, LATER, &["sync"]).success();
    assert!(
        run.stdout.contains("deleted 1 lease ref of ended leases"),
        "{}",
        run.stdout
    );
    assert!(lease_refs(&env, &remote).is_empty(), "gone on the remote");
    assert!(lease_refs(&env, owner).is_empty(), "gone in its deleter");
    // The other's copy goes with its next fetch, with nothing to delete.
    assert_eq!(lease_refs(&env, other).len(), 1);
    let json = env
        .loopx_at(other, LATER, &["--json", "sync"])
        .success()
        .json();
    assert!(json.get("leases_deleted").is_none(), "{json}");
    assert!(lease_refs(&env, other).is_empty(), "gone in the other");

    // The todo stays done for everyone.
    let run = env.loopx_at(b, LATER, &["--agent", "y", "todo", "claim", &t, "--sync"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(lease_refs(&env, &remote).is_empty(), "{}", run.stdout);
    env.fsck(&remote, &[]);
}

/// The promise deletion rests on: a clone that last synced before the todo
/// was even claimed, and never heard of its lease, cannot take it again
/// once the ref is gone.
#[test]
fn a_stale_clone_cannot_take_a_finished_todo_whose_lease_ref_is_gone() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b", "c"]);
    let (a, b, c) = (&dirs[0], &dirs[1], &dirs[2]);
    let t = env.add_todo(a, "finish me once");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    env.loopx(c, &["sync"]).success();
    claim_and_finish(&env, a, "x", &t);
    // b learns of the end five minutes on, and deletes its ref a grace
    // after that (by its own clock: issue 47, item 3).
    env.loopx_at(b, SOON, &["sync"]).success();
    env.loopx_at(b, "2026-12-02T10:16:00Z", &["sync", "--prune-leases"])
        .success();
    assert!(lease_refs(&env, &remote).is_empty());

    // c's own state still says the todo is ready, and c knows no lease.
    let show = env
        .loopx(c, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(show["todo"]["status"], "open", "{show}");
    let run = env.loopx_at(
        c,
        LATER_STILL,
        &["--json", "--agent", "z", "todo", "claim", &t, "--sync"],
    );
    assert_ne!(run.code, 0, "a finished todo was claimed: {}", run.stdout);
    assert!(lease_refs(&env, &remote).is_empty(), "no lease ref made");
    let show = env
        .loopx(c, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(show["todo"]["status"], "done", "c merged the done: {show}");

    // `todo next --claim --sync` finds nothing either.
    let run = env.loopx_at(
        c,
        LATER_STILL,
        &[
            "--json", "--agent", "z", "todo", "next", "--claim", "--sync",
        ],
    );
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(lease_refs(&env, &remote).is_empty());
}

#[test]
fn a_released_lease_ref_goes_and_the_todo_can_be_claimed_again() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "let go of me");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    env.loopx(a, &["--agent", "x", "todo", "claim", &t, "--sync"])
        .success();
    env.loopx(a, &["--agent", "x", "todo", "release", &t])
        .success();
    env.loopx(a, &["sync"]).success();
    let name = format!("refs/loopx/leases/main/{t}");
    let ended = env.git(&remote, &["log", "-1", "--format=%B", &name]);
    assert!(ended.contains("Loopx-Lease: released"), "{ended}");
    env.loopx_at(a, MUCH_LATER, &["sync"]).success();
    assert!(lease_refs(&env, &remote).is_empty());

    // b never merged the claim or the release: it claims at the next epoch.
    let json = env
        .loopx_at(
            b,
            LATER_STILL,
            &["--json", "--agent", "y", "todo", "claim", &t, "--sync"],
        )
        .success()
        .json();
    assert_eq!(json["claim"]["epoch"], 2, "{json}");
    assert_eq!(lease_refs(&env, &remote), vec![name.clone()]);
    let held = env.git(&remote, &["log", "-1", "--format=%B", &name]);
    assert!(held.contains("Loopx-Agent: y"), "{held}");
}

#[test]
fn lease_refs_that_piled_up_are_pruned_in_one_command_and_doctor_tells_of_them() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let todos: Vec<String> = (0..3)
        .map(|i| env.add_todo(a, &format!("todo {i}")))
        .collect();
    env.loopx(a, &["sync"]).success();
    for t in &todos {
        claim_and_finish(&env, a, "x", t);
    }
    env.loopx(b, &["sync"]).success();
    assert_eq!(lease_refs(&env, &remote).len(), 3);

    // Past four graces (their deleter should have been by), b's doctor
    // tells; it does not touch the network.
    let doctor = |at: &str| {
        env.loopx_at(b, at, &["--json", "doctor"])
            .success()
            .json()
            .to_string()
    };
    let text = doctor(MUCH_LATER);
    assert!(text.contains("3 lease refs"), "{text}");
    assert!(text.contains("git loopx sync --prune-leases"), "{text}");
    // Before that it says nothing of them.
    let text = doctor(LATER);
    assert!(!text.contains("lease refs"), "{text}");

    // Past one grace, the one-off prune deletes them all, whichever peer
    // deletes each.
    let json = env
        .loopx_at(b, LATER, &["--json", "sync", "--prune-leases"])
        .success()
        .json();
    assert_eq!(json["leases_deleted"], 3, "{json}");
    assert!(lease_refs(&env, &remote).is_empty());
    let text = doctor(MUCH_LATER);
    assert!(!text.contains("lease refs"), "{text}");
}

#[test]
fn a_bad_grace_is_refused_by_name() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    env.git(a, &["config", "loopx.leaseRefGrace", "2s"]);
    let json = env.loopx(a, &["--json", "sync"]).failure(2).json();
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains("loopx.leaseRefGrace"), "{json}");
    assert!(message.contains("`2s`"), "{json}");
}

/// Issue 47, item 3 (a): a clone whose clock runs ten minutes ahead runs
/// `sync --prune-leases` just after a todo was finished. It has just learned
/// of the end, so the grace counts from then by its own clock, not from the
/// publisher's stamp: the ref stays, and a clone that synced a minute
/// before the claim cannot take the finished todo again at its epoch.
#[test]
fn a_clock_ahead_deletes_no_ref_a_stale_clone_could_still_claim() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b", "c"]);
    let (a, b, c) = (&dirs[0], &dirs[1], &dirs[2]);
    let t = env.add_todo(a, "finish me once");
    for dir in [a, b, c] {
        env.loopx(dir, &["sync"]).success();
    }
    claim_and_finish(&env, a, "x", &t);
    let name = format!("refs/loopx/leases/main/{t}");
    assert_eq!(lease_refs(&env, &remote), vec![name.clone()]);

    let ahead = "2026-12-02T10:11:00Z";
    env.loopx_at(c, ahead, &["sync", "--prune-leases"])
        .success();
    assert_eq!(
        lease_refs(&env, &remote),
        vec![name.clone()],
        "a clock ahead deleted the ref of an end it had just learned of"
    );

    // b synced at 10:00, before the claim: fresh enough to claim without a
    // fetch, and its state says the todo is open.
    let run = env.loopx_at(
        b,
        "2026-12-02T10:01:00Z",
        &["--json", "--agent", "y", "todo", "claim", &t, "--sync"],
    );
    assert_ne!(
        run.code, 0,
        "a finished todo was granted again: {}",
        run.stdout
    );
    let lease = env.git(&remote, &["log", "-1", "--format=%B", &name]);
    assert!(
        lease.contains("Loopx-Agent: x") && lease.contains("Loopx-Lease: done"),
        "{lease}"
    );

    // From c's first sight of the end, a grace later by c's clock, it goes.
    env.loopx_at(c, "2026-12-02T10:22:00Z", &["sync", "--prune-leases"])
        .success();
    assert!(lease_refs(&env, &remote).is_empty());
}

/// Issue 47, item 3 (b): with the grace at its 8 s minimum, a claim's push
/// held back 12 s by the remote's `pre-receive` hook lands after the todo
/// was claimed, finished and its lease ref deleted by another clone. Landed
/// past half the grace after its fetch, the claim is not trusted: its ref
/// is withdrawn and the claim decided again on a new fetch, which finds the
/// todo done. No epoch is granted twice.
#[test]
fn a_claim_push_that_lands_past_half_the_grace_is_withdrawn() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    for dir in [a, b] {
        env.git(dir, &["config", "loopx.leaseRefGrace", "8s"]);
    }
    let t = env.add_todo(a, "finish me once");
    for dir in [a, b] {
        env.loopx(dir, &["sync"]).success();
    }
    let held = env.path("held");
    let hook = remote.join("hooks/pre-receive");
    env.write_script(
        &hook,
        &format!(
            r#"#!/bin/sh
# Holds back a push that creates a lease ref for the agent `slow`.
while read old new ref; do
  case "$ref" in refs/loopx/leases/*) ;; *) continue ;; esac
  [ "$old" = 0000000000000000000000000000000000000000 ] || continue
  if git log -1 --format=%B "$new" | grep -q '^Loopx-Agent: slow$'; then
    touch '{held}'
    sleep 12
  fi
done
exit 0
"#,
            held = held.display()
        ),
    );
    let slow = env
        .loopx_cmd(b)
        .args(["--json", "--agent", "slow", "todo", "claim", &t, "--sync"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !held.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(held.exists(), "the slow claim never reached the hook");

    // While it is held: claimed, finished, published, and past the grace
    // deleted.
    claim_and_finish(&env, a, "x", &t);
    env.loopx_at(a, "2026-12-02T10:00:30Z", &["sync", "--prune-leases"])
        .success();
    let name = format!("refs/loopx/leases/main/{t}");
    assert!(
        lease_refs(&env, &remote).is_empty(),
        "the finished lease's ref was not deleted before the slow push landed"
    );

    let out = slow.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_ne!(
        out.status.code(),
        Some(0),
        "the finished todo was granted again at a used epoch: {stdout}"
    );
    assert!(
        env.git(&remote, &["for-each-ref", &name]).trim().is_empty(),
        "the late lease ref stays on the remote"
    );
    let show = env
        .loopx(b, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(show["todo"]["status"], "done", "{show}");
}
