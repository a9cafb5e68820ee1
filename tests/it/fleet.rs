//! Issue 18: many clones on one remote through shared refs — a lease ref per
//! claimed todo, a peer ref per clone, `loopx-state` as the merge any peer
//! advances. Real processes race through a real bare remote.

use std::path::{Path, PathBuf};

use crate::env::{Run, TestEnv};

/// A `git` first on PATH that logs every push's porcelain answer to `log`
/// (one line per ref: flag, refspec, summary) and then answers as git did.
fn logging_git(env: &TestEnv, log: &Path) -> String {
    let real = env.real_git();
    let bin = env.path("logbin");
    std::fs::create_dir_all(&bin).unwrap();
    env.write_script(
        &bin.join("git"),
        &format!(
            "#!/bin/sh\nif [ \"$3\" = push ]; then\n  out=$('{g}' \"$@\"); code=$?\n  printf '%s\\n' \"$out\" | grep '\t' >> '{l}'\n  printf '%s\\n' \"$out\"\n  exit $code\nfi\nexec '{g}' \"$@\"\n",
            g = real,
            l = log.display()
        ),
    );
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap())
}

fn race(
    env: &TestEnv,
    dirs: &[PathBuf],
    path: &str,
    args: impl Fn(usize) -> Vec<String> + Sync,
) -> Vec<Run> {
    std::thread::scope(|s| {
        let handles: Vec<_> = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let args = args(i);
                s.spawn(move || -> Run {
                    env.loopx_cmd(d)
                        .env("PATH", path)
                        .args(&args)
                        .output()
                        .unwrap()
                        .into()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn clones(env: &TestEnv, n: usize) -> (PathBuf, Vec<PathBuf>) {
    let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    env.shared_state(&refs)
}

/// Claims on different todos never make each other retry: each claimer
/// pushes exactly once (its lease ref and its peer ref, atomically) and
/// no push is refused, however many race at once.
#[test]
fn claims_on_different_todos_never_make_each_other_retry() {
    const N: usize = 6;
    let env = TestEnv::new();
    let (remote, dirs) = clones(&env, N);
    let todos: Vec<String> = (0..N)
        .map(|i| env.add_todo(&dirs[0], &format!("work {i}")))
        .collect();
    env.loopx(&dirs[0], &["sync"]).success();
    for d in &dirs[1..] {
        env.loopx(d, &["sync"]).success();
    }
    let log = env.path("pushes.log");
    let path = logging_git(&env, &log);
    let results = race(&env, &dirs, &path, |i| {
        [
            "--json",
            "--agent",
            &format!("a{i}"),
            "todo",
            "claim",
            &todos[i],
            "--sync",
        ]
        .map(str::to_owned)
        .to_vec()
    });
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.code, 0, "claimer {i}: {r:?}");
    }
    let pushes = std::fs::read_to_string(&log).unwrap();
    let lease_pushes: Vec<&str> = pushes
        .lines()
        .filter(|l| l.contains("refs/loopx/leases/"))
        .collect();
    assert_eq!(lease_pushes.len(), N, "one lease push each:\n{pushes}");
    assert!(
        !pushes.lines().any(|l| l.starts_with('!')),
        "no push was refused:\n{pushes}"
    );
    let leases = env.git(
        &remote,
        &["for-each-ref", "--format=%(refname)", "refs/loopx/leases/"],
    );
    assert_eq!(leases.lines().count(), N, "{leases}");
    env.git(&remote, &["fsck", "--no-progress"]);
}

/// `todo next --claim --sync` on many clones at once: every claimer gets a
/// todo, no todo goes to two, and after two rounds of `sync` every clone and
/// the remote's loopx-state hold the same state.
#[test]
fn racing_next_claims_are_exactly_once_and_every_clone_converges() {
    const N: usize = 6;
    let env = TestEnv::new();
    let (remote, dirs) = clones(&env, N);
    for i in 0..N + 2 {
        env.add_todo(&dirs[0], &format!("work {i}"));
    }
    for d in &dirs {
        env.loopx(d, &["sync"]).success();
    }
    let path = std::env::var("PATH").unwrap();
    let results = race(&env, &dirs, &path, |i| {
        [
            "--json",
            "--agent",
            &format!("a{i}"),
            "todo",
            "next",
            "--claim",
            "--sync",
        ]
        .map(str::to_owned)
        .to_vec()
    });
    let mut taken: Vec<String> = results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            assert_eq!(r.code, 0, "claimer {i}: {r:?}");
            r.json()["todo"]["id"].as_str().unwrap().to_owned()
        })
        .collect();
    taken.sort();
    let before = taken.len();
    taken.dedup();
    assert_eq!(taken.len(), before, "no todo was granted twice: {taken:?}");
    for _ in 0..2 {
        for d in &dirs {
            env.loopx(d, &["sync"]).success();
        }
    }
    let tree = |dir: &Path| env.git(dir, &["rev-parse", "loopx-state^{tree}"]);
    let want = tree(&remote);
    for d in &dirs {
        assert_eq!(tree(d), want, "{} converged", d.display());
    }
    let status = env.loopx(&dirs[0], &["--json", "status"]).success().json();
    let running = status.to_string().matches("\"epoch\":1").count();
    assert!(running >= N, "every claim is in the merged state: {status}");
    env.git(&remote, &["fsck", "--no-progress"]);
}

/// A lease the remote holds but whose claim commit a peer has not seen (its
/// peer ref was lost) still holds the todo: the claimant's lease is laid
/// over the state, and another agent is refused with the holder named.
#[test]
fn a_lease_on_the_remote_holds_the_todo_before_the_state_shows_it() {
    let env = TestEnv::new();
    let (remote, dirs) = clones(&env, 2);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "wanted");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    env.loopx(a, &["--agent", "x", "todo", "claim", &t, "--sync"])
        .success();
    // Drop a's peer ref: only the lease says who holds the todo.
    let peers = env.git(
        &remote,
        &["for-each-ref", "--format=%(refname)", "refs/loopx/peers/"],
    );
    let tip_b = env.git(b, &["rev-parse", "loopx-state"]);
    for p in peers.lines() {
        env.git(&remote, &["update-ref", p, &tip_b]);
    }
    let json = env
        .loopx(
            b,
            &["--json", "--agent", "y", "todo", "claim", &t, "--sync"],
        )
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "claim_conflict", "{json}");
    assert!(
        json["error"]["message"].as_str().unwrap().contains('x'),
        "{json}"
    );
    let json = env
        .loopx(
            b,
            &[
                "--json", "--agent", "y", "todo", "next", "--claim", "--sync",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "nothing_ready", "{json}");
}

/// An expired lease is taken over through the lease ref with a higher
/// epoch; when the old holder syncs, the takeover wins the merge and the
/// old holder's next write is fenced.
#[test]
fn an_expired_lease_is_taken_over_and_the_old_holder_is_fenced() {
    let env = TestEnv::new();
    let (_remote, dirs) = clones(&env, 2);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "slow work");
    env.loopx(a, &["sync"]).success();
    env.loopx_at(
        a,
        "2026-01-01T10:00:00Z",
        &[
            "--agent", "x", "todo", "claim", &t, "--ttl", "10m", "--sync",
        ],
    )
    .success();
    let json = env
        .loopx_at(
            b,
            "2026-01-01T10:30:00Z",
            &["--json", "--agent", "y", "todo", "claim", &t, "--sync"],
        )
        .success()
        .json();
    assert_eq!(json["claim"]["epoch"], 2, "{json}");
    // x, which has not merged b's state, asks again: the lease ref refuses.
    let json = env
        .loopx_at(
            a,
            "2026-01-01T10:31:00Z",
            &["--json", "--agent", "x", "todo", "claim", &t, "--sync"],
        )
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "claim_conflict", "{json}");
    // x writes on what it still believes (a note), then both sync.
    env.loopx_at(
        a,
        "2026-01-01T10:31:00Z",
        &[
            "--agent",
            "x",
            "todo",
            "update",
            &t,
            "--note",
            "still on it",
        ],
    )
    .success();
    env.loopx_at(b, "2026-01-01T10:32:00Z", &["sync"]).success();
    env.loopx_at(a, "2026-01-01T10:32:00Z", &["sync"]).success();
    let show = env
        .loopx(a, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(show["todo"]["claim"]["agent"], "y", "{show}");
    assert_eq!(show["todo"]["claim"]["epoch"], 2, "{show}");
    let json = env
        .loopx_at(
            a,
            "2026-01-01T10:33:00Z",
            &[
                "--json",
                "--agent",
                "x",
                "todo",
                "done",
                &t,
                "--evidence",
                "did it",
            ],
        )
        .failure(1)
        .json();
    let code = json["error"]["code"].as_str().unwrap();
    assert!(
        code == "stale_epoch" || code == "not_claim_holder",
        "{json}"
    );
}

/// `git config loopx.shareRefs false`: sync and `--sync` claims go through
/// loopx-state alone, as before shared refs (a remote that refuses refs
/// outside refs/heads/).
#[test]
fn share_refs_off_syncs_through_the_branch_alone() {
    let env = TestEnv::new();
    let (remote, dirs) = clones(&env, 2);
    for d in &dirs {
        env.git(d, &["config", "loopx.shareRefs", "false"]);
    }
    let shared = |remote: &Path| {
        env.git(
            remote,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/loopx/",
            ],
        )
    };
    // (The set-up's first sync published the first clone's peer ref.)
    let before = shared(&remote);
    let t = env.add_todo(&dirs[0], "wanted");
    env.loopx(&dirs[0], &["sync"]).success();
    let json = env
        .loopx(
            &dirs[1],
            &["--json", "--agent", "y", "todo", "claim", &t, "--sync"],
        )
        .success()
        .json();
    assert_eq!(
        env.git(&remote, &["rev-parse", "loopx-state"]),
        json["commit"].as_str().unwrap()
    );
    assert_eq!(shared(&remote), before, "no shared ref moved");
}

/// A remote that refuses refs outside refs/heads/ gets a clear error that
/// names the way out.
#[test]
fn a_remote_refusing_shared_refs_names_the_setting() {
    let env = TestEnv::new();
    let (remote, dirs) = clones(&env, 2);
    env.write_script(
        &remote.join("hooks/pre-receive"),
        "#!/bin/sh\nwhile read old new ref; do case $ref in refs/loopx/*) echo 'custom refs are not allowed' >&2; exit 1;; esac; done\nexit 0\n",
    );
    env.add_todo(&dirs[1], "local change");
    let json = env.loopx(&dirs[1], &["--json", "sync"]).failure(1).json();
    assert_eq!(json["error"]["code"], "push_rejected", "{json}");
    assert!(
        json["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("loopx.shareRefs false"),
        "{json}"
    );
}

/// A sync publishes how a lease ended: once the holder's `todo done` (or
/// release) is synced, a peer that has not merged its state yet still sees
/// the todo done (or free) through the lease ref alone.
#[test]
fn a_synced_end_of_a_lease_is_seen_by_peers_before_they_merge() {
    let env = TestEnv::new();
    let (remote, dirs) = clones(&env, 2);
    let (a, b) = (&dirs[0], &dirs[1]);
    let done = env.add_todo(a, "finished here");
    let freed = env.add_todo(a, "given back");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    for t in [&done, &freed] {
        env.loopx(a, &["--agent", "x", "todo", "claim", t, "--sync"])
            .success();
    }
    env.loopx(
        a,
        &[
            "--agent",
            "x",
            "todo",
            "done",
            &done,
            "--evidence",
            "shipped",
        ],
    )
    .success();
    env.loopx(a, &["--agent", "x", "todo", "release", &freed])
        .success();
    env.loopx(a, &["sync"]).success();
    let lease = |t: &str| {
        env.git(
            &remote,
            &[
                "log",
                "-1",
                "--format=%B",
                &format!("refs/loopx/leases/main/{t}"),
            ],
        )
    };
    assert!(
        lease(&done).contains("Loopx-Lease: done"),
        "{}",
        lease(&done)
    );
    assert!(
        lease(&freed).contains("Loopx-Lease: released"),
        "{}",
        lease(&freed)
    );
    // b has not merged a's state: its branch still shows both todos open.
    let show = env
        .loopx(b, &["--json", "todo", "show", &done])
        .success()
        .json();
    assert_eq!(show["todo"]["status"], "open", "{show}");
    let json = env
        .loopx(
            b,
            &["--json", "--agent", "y", "todo", "claim", &done, "--sync"],
        )
        .failure(2)
        .json();
    assert!(
        json["error"]["message"].as_str().unwrap().contains("done"),
        "{json}"
    );
    let json = env
        .loopx(
            b,
            &[
                "--json", "--agent", "y", "todo", "next", "--claim", "--sync",
            ],
        )
        .success()
        .json();
    assert_eq!(json["todo"]["id"], freed.as_str(), "{json}");
    assert_eq!(
        json["claim"]["epoch"], 2,
        "a fresh epoch after the release: {json}"
    );
}

/// Many clones claim the very same todo at once, round after round, by id
/// and by `todo next` with one todo ready: each round exactly one claimer
/// holds it and every other is refused. All contend on one lease ref, so a
/// claim check that lets a lost lease through grants the todo twice in
/// every round, not now and then.
#[test]
fn racing_claims_of_one_todo_grant_it_exactly_once_every_round() {
    const N: usize = 5;
    const ROUNDS: usize = 3;
    let env = TestEnv::new();
    let (_remote, dirs) = clones(&env, N);
    let path = std::env::var("PATH").unwrap();
    for round in 0..ROUNDS {
        let id = env.add_todo(&dirs[0], &format!("only one {round}"));
        for d in &dirs {
            env.loopx(d, &["sync"]).success();
        }
        for next in [false, true] {
            let results = race(&env, &dirs, &path, |i| {
                let agent = format!("a{round}{i}{}", u8::from(next));
                let claim: &[&str] = if next {
                    &["next", "--claim", "--sync"]
                } else {
                    &["claim", &id, "--sync"]
                };
                let mut args = vec!["--json", "--agent", &agent, "todo"];
                args.extend(claim);
                args.into_iter().map(str::to_owned).collect()
            });
            let granted: Vec<usize> = (0..N).filter(|&i| results[i].code == 0).collect();
            assert_eq!(
                granted.len(),
                1,
                "round {round}, next {next}: granted to {granted:?}: {results:?}"
            );
            // Done, so the `todo next` race has just the next round's todo.
            let winner = granted[0];
            let agent = format!("a{round}{winner}{}", u8::from(next));
            if next {
                let held = results[winner].json()["todo"]["id"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                assert_eq!(held, id, "the one ready todo");
            } else {
                // The `todo next` race takes the same todo again: release it.
                env.loopx(&dirs[winner], &["--agent", &agent, "todo", "release", &id])
                    .success();
                for d in &dirs {
                    env.loopx(d, &["sync"]).success();
                }
                continue;
            }
            let done = ["--agent", &agent, "todo", "done", &id, "--evidence", "one"];
            env.loopx(&dirs[winner], &done).success();
            env.loopx(&dirs[winner], &["sync"]).success();
        }
    }
}
