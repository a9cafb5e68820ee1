//! A lease ref lives as long as its lease: once the remote's `loopx-state`
//! records a lease's end, and the end has been published for the grace
//! (`loopx.leaseRefGrace`, 10 minutes by default), a sync deletes the ref on
//! the remote and in its clone, and the other clones drop their copies at
//! their next fetch. A clone whose state is older than the deletion cannot
//! take the finished todo again: a claim that would create a lease ref
//! decides on a fresh merge of the remote.

use std::path::Path;

use crate::env::TestEnv;

/// Within the grace of the test's clock (`env::NOW`, 10:00).
const SOON: &str = "2026-12-02T10:05:00Z";
/// Past the grace.
const LATER: &str = "2026-12-02T10:11:00Z";
const LATER_STILL: &str = "2026-12-02T10:12:00Z";

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
    let t = env.add_todo(a, "finish me");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    claim_and_finish(&env, a, "x", &t);
    let name = format!("refs/loopx/leases/main/{t}");
    assert_eq!(lease_refs(&env, &remote), vec![name.clone()]);
    let ended = env.git(&remote, &["log", "-1", "--format=%B", &name]);
    assert!(ended.contains("Loopx-Lease: done"), "{ended}");

    // Within the grace the ref stays.
    let json = env.loopx_at(b, SOON, &["--json", "sync"]).success().json();
    assert!(json.get("leases_deleted").is_none(), "{json}");
    assert_eq!(lease_refs(&env, &remote), vec![name.clone()]);
    assert_eq!(lease_refs(&env, b).len(), 1, "b has its copy");

    // Past it, the first sync to see it deletes it, there and here.
    let run = env.loopx_at(b, LATER, &["sync"]).success();
    assert!(
        run.stdout.contains("deleted 1 lease ref of ended leases"),
        "{}",
        run.stdout
    );
    assert!(lease_refs(&env, &remote).is_empty(), "gone on the remote");
    assert!(lease_refs(&env, b).is_empty(), "gone in b");
    // a's copy goes with its next fetch, which has nothing left to delete.
    assert_eq!(lease_refs(&env, a).len(), 1);
    let json = env.loopx_at(a, LATER, &["--json", "sync"]).success().json();
    assert!(json.get("leases_deleted").is_none(), "{json}");
    assert!(lease_refs(&env, a).is_empty(), "gone in a");

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
    env.loopx_at(b, LATER, &["sync"]).success();
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
    env.loopx_at(a, LATER, &["sync"]).success();
    assert!(lease_refs(&env, &remote).is_empty());

    // b never merged the claim or the release: it claims at the next epoch.
    let json = env
        .loopx_at(
            b,
            LATER,
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

    // Past the grace, b's doctor (which does not touch the network) tells.
    let json = env
        .loopx_at(b, LATER, &["--json", "doctor"])
        .success()
        .json();
    let text = json.to_string();
    assert!(text.contains("3 lease refs"), "{json}");
    assert!(text.contains("git loopx sync --prune-leases"), "{json}");
    // Within the grace it says nothing of them.
    let json = env
        .loopx_at(b, SOON, &["--json", "doctor"])
        .success()
        .json();
    assert!(!json.to_string().contains("lease refs"), "{json}");

    let json = env
        .loopx_at(b, LATER, &["--json", "sync", "--prune-leases"])
        .success()
        .json();
    assert_eq!(json["leases_deleted"], 3, "{json}");
    assert!(lease_refs(&env, &remote).is_empty());
    let json = env
        .loopx_at(b, LATER, &["--json", "doctor"])
        .success()
        .json();
    assert!(!json.to_string().contains("lease refs"), "{json}");
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
