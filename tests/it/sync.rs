//! Across machines: a bare remote and several clones syncing loopx-state.

use std::path::Path;

use crate::env::TestEnv;

fn texts(env: &TestEnv, dir: &Path) -> Vec<String> {
    let json = env
        .loopx(dir, &["--json", "todo", "list", "--all"])
        .success()
        .json();
    let mut t: Vec<String> = json["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap().to_owned())
        .collect();
    t.sort();
    t
}

#[test]
fn fresh_clones_find_the_remote_state_and_never_make_a_second_root() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let b = &dirs[1];
    let status = env.loopx(b, &["--json", "status"]).success().json();
    assert_eq!(status["goal"]["objective"], "Ship the parser");
    let init = env
        .loopx(b, &["--json", "init", "--objective", "Ship the parser"])
        .success()
        .json();
    assert_eq!(init["action"], "adopted");
    assert_eq!(init["objective"], "Ship the parser");
    // Another objective is not silently dropped: init says so (exit 1).
    let d = env.clone_of(&remote, "d");
    let out = env
        .loopx(&d, &["--json", "init", "--goal-text", "Something else"])
        .failure(1)
        .json();
    assert_eq!(out["error"]["code"], "goal_exists");
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Ship the parser"),
        "{out}"
    );
    // A write on a fresh clone builds on the remote's root, too.
    let c = env.clone_of(&remote, "c");
    env.add_todo(&c, "from c");
    env.loopx(&c, &["sync"]).success();
    assert_eq!(
        env.git(&remote, &["rev-list", "--max-parents=0", "loopx-state"])
            .lines()
            .count(),
        1
    );
}

#[test]
fn offline_edits_converge_to_the_same_union_everywhere() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b", "c"]);
    for d in &dirs[1..] {
        env.loopx(d, &["sync"]).success();
    }
    // Each clone works offline on its own todos, with writebacks.
    for (i, d) in dirs.iter().enumerate() {
        for j in 0..3 {
            let t = env.add_todo(d, &format!("clone {i} todo {j}"));
            env.loopx(
                d,
                &[
                    "--agent",
                    &format!("agent-{i}"),
                    "writeback",
                    "--todo",
                    &t,
                    "--outcome",
                    "outcome_progress",
                    "--summary",
                    &format!("work {i}.{j}"),
                ],
            )
            .success();
        }
    }
    for d in &dirs {
        env.loopx(d, &["sync"]).success();
    }
    for d in &dirs {
        env.loopx(d, &["sync"]).success();
    }
    let expected: Vec<String> = {
        let mut v: Vec<String> = (0..3)
            .flat_map(|i| (0..3).map(move |j| format!("clone {i} todo {j}")))
            .collect();
        v.sort();
        v
    };
    let tip = env.git(&remote, &["rev-parse", "loopx-state"]);
    for d in &dirs {
        assert_eq!(texts(&env, d), expected);
        assert_eq!(
            env.git(d, &["rev-parse", "loopx-state"]),
            tip,
            "every clone ends at the remote's tip"
        );
        let runs = env
            .loopx(d, &["--json", "history", "--kind", "writeback"])
            .success()
            .json();
        assert_eq!(
            runs["runs"].as_array().unwrap().len(),
            9,
            "run records from all sides survive"
        );
        // The state cached for a merge commit (kept by the clone that made
        // it) is the state git holds.
        let cached = env.loopx(d, &["--json", "status"]).success().json();
        let _ = std::fs::remove_dir_all(d.join(".git/loopx/cache"));
        let cold = env.loopx(d, &["--json", "status"]).success().json();
        assert_eq!(cached, cold, "cached and cold reads agree after sync");
    }
    assert!(
        !env.git(&remote, &["rev-list", "--merges", "loopx-state"])
            .is_empty(),
        "divergent syncs made merge commits"
    );
    env.git(&remote, &["fsck", "--no-progress"]);
}

#[test]
fn the_same_field_on_two_clones_goes_to_the_higher_rev_and_the_loser_is_reported() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "shared");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    // b changes the priority twice (rev 3), a once (rev 2).
    env.loopx(a, &["todo", "update", &t, "--priority", "P0"])
        .success();
    env.loopx(b, &["todo", "update", &t, "--priority", "P3"])
        .success();
    env.loopx(b, &["todo", "update", &t, "--priority", "P4"])
        .success();
    env.loopx(b, &["sync"]).success();
    let merged = env.loopx(a, &["--json", "sync"]).success().json();
    assert_eq!(merged["action"], "merged");
    let conflict = merged["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "priority")
        .expect("priority conflict reported");
    assert_eq!(
        (
            conflict["kept"].as_str(),
            conflict["lost"].as_str(),
            conflict["rule"].as_str()
        ),
        (Some("P4"), Some("P0"), Some("rev"))
    );
    let message = env.git(a, &["log", "-1", "--format=%B", "loopx-state"]);
    assert!(
        message.contains("priority") && message.contains("\"P0\""),
        "the merge commit names the overwritten value:\n{message}"
    );
    env.loopx(b, &["sync"]).success();
    for d in [a, b] {
        let show = env
            .loopx(d, &["--json", "todo", "show", &t])
            .success()
            .json();
        assert_eq!(show["todo"]["priority"], "P4");
    }
}

#[test]
fn an_unknown_field_from_one_clone_survives_the_others_writes_and_merges() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "carries a future field");
    env.loopx(a, &["sync"]).success();
    // A newer git-loopx on a writes a field this version does not know.
    let path = env.state_path_of(a, &t);
    let content = env.state_file(a, &path);
    env.commit_state_file(a, &path, &format!("{content}\nzz_future:\n  owner: ada\n"));
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    // b rewrites the todo while a changes it too: both sides change, then merge.
    env.loopx(
        b,
        &[
            "--agent", "agent-b", "todo", "update", &t, "--note", "from b",
        ],
    )
    .success();
    env.loopx(a, &["todo", "update", &t, "--priority", "P1"])
        .success();
    env.loopx(b, &["sync"]).success();
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    for d in [a, b] {
        let file = env.state_file(d, &env.state_path_of(d, &t));
        assert!(file.contains("zz_future:\n  owner: ada"), "{file}");
        assert!(
            file.contains("from b") && file.contains("priority: P1"),
            "{file}"
        );
    }
}

#[test]
fn four_clones_claim_the_same_todo_with_sync_one_wins_each_round() {
    const CLONES: usize = 4;
    const ROUNDS: usize = 20;
    let env = TestEnv::new();
    let names: Vec<String> = (0..CLONES).map(|i| format!("c{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (remote, dirs) = env.shared_state(&refs);
    for round in 0..ROUNDS {
        let t = env.add_todo(&dirs[0], &format!("round {round}"));
        env.loopx(&dirs[0], &["sync"]).success();
        let results: Vec<(usize, crate::env::Run)> = std::thread::scope(|s| {
            let handles: Vec<_> = dirs
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let env = &env;
                    let t = &t;
                    s.spawn(move || {
                        (
                            i,
                            env.loopx(
                                d,
                                &[
                                    "--json",
                                    "--agent",
                                    &format!("agent-{i}"),
                                    "todo",
                                    "claim",
                                    t,
                                    "--sync",
                                ],
                            ),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<usize> = results
            .iter()
            .filter(|(_, r)| r.code == 0)
            .map(|(i, _)| *i)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one winner: {results:?}"
        );
        let winner = format!("agent-{}", winners[0]);
        for (i, r) in &results {
            if r.code != 0 {
                assert_eq!(r.code, 1, "round {round} clone {i}: {r:?}");
                let json = r.json();
                assert_eq!(
                    json["error"]["code"], "claim_conflict",
                    "round {round} clone {i}: {json}"
                );
                assert!(
                    json["error"]["message"].as_str().unwrap().contains(&winner),
                    "names the winner {winner}: {json}"
                );
            }
        }
        // The remote's lease on the todo names exactly that claim, and the
        // winner's next sync puts it on loopx-state.
        let lease = env.git(
            &remote,
            &[
                "log",
                "-1",
                "--format=%B",
                &format!("refs/loopx/leases/main/{t}"),
            ],
        );
        assert!(
            lease.contains(&format!("Loopx-Agent: {winner}")),
            "round {round}: {lease}"
        );
        env.loopx(&dirs[winners[0]], &["sync"]).success();
        let file = env.git(
            &remote,
            &[
                "show",
                &format!("loopx-state:{}", env.state_path_of(&remote, &t)),
            ],
        );
        assert!(
            file.contains(&format!("agent: {winner}")),
            "round {round}: {file}"
        );
    }
    env.git(&remote, &["fsck", "--no-progress"]);
}

/// A `git` on PATH that, on the first push, lets another clone push first:
/// the push we prepared must then be refused by its lease, not overwrite.
#[test]
fn a_racing_push_is_refused_by_the_pinned_lease_and_merged_by_the_next_sync() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    env.loopx(b, &["sync"]).success();
    env.add_todo(b, "b's racing change");
    env.add_todo(a, "a's change");
    let real_git = env.real_git();
    let bin = env.path("racebin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = env.path("raced");
    let script = format!(
        "#!/bin/sh\nif [ \"$3\" = push ] && [ ! -e '{m}' ]; then\n  touch '{m}'\n  '{g}' -C '{b}' push -q origin loopx-state:loopx-state || exit 99\nfi\nexec '{g}' \"$@\"\n",
        m = marker.display(),
        g = real_git,
        b = b.display()
    );
    env.write_script(&bin.join("git"), &script);
    let racer_tip = env.git(b, &["rev-parse", "loopx-state"]);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out: crate::env::Run = env
        .loopx_cmd(a)
        .env("PATH", path)
        .args(["--json", "sync"])
        .output()
        .unwrap()
        .into();
    let json = out.success().json();
    assert!(marker.exists(), "the racing push happened");
    // The advance was refused by the lease, not forced over the racer's,
    // and not tried again: a's state is on its own peer ref.
    assert_eq!(json["rounds"], 1, "{json}");
    let on_remote = env.git(&remote, &["rev-parse", "loopx-state"]);
    assert_eq!(on_remote, racer_tip, "the racer's push stands");
    let peer = json["peer"].as_str().unwrap();
    assert_eq!(env.git(&remote, &["rev-parse", peer]), env.tip(a));
    // The next sync merges the two.
    let json = env.loopx(a, &["--json", "sync"]).success().json();
    assert_eq!(json["action"], "merged", "{json}");
    let tip = env.git(&remote, &["rev-parse", "loopx-state"]);
    env.git(&remote, &["merge-base", "--is-ancestor", &racer_tip, &tip]);
    let mut all = texts(&env, a);
    all.retain(|t| t.contains("change"));
    assert_eq!(all, ["a's change", "b's racing change"]);
}

#[test]
fn sync_refuses_to_push_a_credential() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a"]);
    let before = env.git(&remote, &["rev-parse", "loopx-state"]);
    // Refused when written (see `leaks.rs`), so it arrives by hand.
    let id = env.add_todo(&dirs[0], "use key K for the bucket");
    let path = env.state_path_of(&dirs[0], &id);
    let yaml = env
        .state_file(&dirs[0], &path)
        .replace("key K ", "key AKIAIOSFODNN7EXAMPLE ");
    env.commit_state_file(&dirs[0], &path, &yaml);
    let json = env.loopx(&dirs[0], &["--json", "sync"]).failure(1).json();
    assert_eq!(json["error"]["code"], "leak_detected");
    assert!(
        !json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("AKIAIOSFODNN7EXAMPLE"),
        "the secret is not echoed"
    );
    assert_eq!(env.git(&remote, &["rev-parse", "loopx-state"]), before);
}

/// Issue 13.3: notes added to the same todo on two clones all survive the
/// merge (before, one side's list won whole and the other's were lost).
#[test]
fn notes_added_on_both_sides_are_all_kept_by_the_merge() {
    const EACH: usize = 12;
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "shared notes");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    for i in 0..EACH {
        for (d, who) in [(a, "a"), (b, "b")] {
            env.loopx(
                d,
                &[
                    "--agent",
                    &format!("agent-{who}"),
                    "todo",
                    "update",
                    &t,
                    "--note",
                    &format!("{who} note {i}"),
                ],
            )
            .success();
        }
    }
    env.loopx(a, &["sync"]).success();
    let merged = env.loopx(b, &["--json", "sync"]).success().json();
    assert_eq!(merged["action"], "merged");
    assert!(
        !merged["conflicts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["field"] == "notes"),
        "a union is not a conflict: {merged}"
    );
    env.loopx(a, &["sync"]).success();
    for d in [a, b] {
        let notes = note_texts(&env, d, &t);
        let notes: Vec<&str> = notes.iter().map(String::as_str).collect();
        assert_eq!(notes.len(), 2 * EACH, "{notes:?}");
        for i in 0..EACH {
            for who in ["a", "b"] {
                let want = format!("{who} note {i}");
                assert!(notes.contains(&want.as_str()), "{want} lost: {notes:?}");
            }
        }
    }
}

/// Issue 13.7: a remote loopx-state that shares no history with the local
/// one (another `init`, force-pushed) is refused, not merged silently.
#[test]
fn an_unrelated_remote_state_is_refused_unless_allowed() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    env.add_todo(a, "local work");
    let stranger = env.repo("stranger");
    env.loopx(&stranger, &["init", "--goal-text", "Someone else's goal"])
        .success();
    env.git(
        &stranger,
        &[
            "push",
            "-q",
            "--force",
            remote.to_str().unwrap(),
            "loopx-state:loopx-state",
        ],
    );
    let theirs = env.git(&remote, &["rev-parse", "loopx-state"]);
    let ours = env.git(a, &["rev-parse", "loopx-state"]);
    let json = env.loopx(a, &["--json", "sync"]).failure(1).json();
    assert_eq!(json["error"]["code"], "unrelated_histories", "{json}");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("origin")
            && message.contains(&theirs[..10])
            && message.contains(&ours[..10]),
        "names the remote and both tips: {json}"
    );
    assert!(
        json["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--allow-unrelated"),
        "{json}"
    );
    assert_eq!(env.git(&remote, &["rev-parse", "loopx-state"]), theirs);
    assert_eq!(env.git(a, &["rev-parse", "loopx-state"]), ours);
    // Asked for, the two states are merged (both parents kept).
    let merged = env
        .loopx(a, &["--json", "sync", "--allow-unrelated"])
        .success()
        .json();
    assert_eq!(merged["action"], "merged", "{merged}");
    let tip = env.git(&remote, &["rev-parse", "loopx-state"]);
    env.git(&remote, &["merge-base", "--is-ancestor", &theirs, &tip]);
    env.git(&remote, &["merge-base", "--is-ancestor", &ours, &tip]);
}

/// Issue 13.8: a remote that never answers. The `ext::` transport runs
/// `sleep` as the "server"; sync must stop it and say what happened.
#[test]
fn a_black_hole_remote_times_out_with_a_clear_error() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    env.git(a, &["config", "protocol.ext.allow", "always"]);
    env.git(a, &["remote", "add", "hole", "ext::sh -c sleep% 1000"]);
    let run = |args: &[&str]| -> crate::env::Run {
        let mut child = env
            .loopx_cmd(a)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A watchdog, not a timing assertion: without a limit sync would
        // wait for `sleep 1000`.
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(100) {
                let _ = child.kill();
                panic!("sync {args:?} never returned");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        child.wait_with_output().unwrap().into()
    };
    // The limit from git config.
    env.git(a, &["config", "loopx.syncTimeout", "2s"]);
    let json = run(&["--json", "sync", "--remote", "hole"])
        .failure(3)
        .json();
    assert_eq!(json["error"]["code"], "git_failed", "{json}");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("git fetch hole") && message.contains("2s"),
        "names the step, the remote and the limit: {json}"
    );
    let hint = json["error"]["hint"].as_str().unwrap();
    assert!(
        hint.contains("--timeout") && hint.contains("loopx.syncTimeout"),
        "says how to raise it: {json}"
    );
    // The flag wins over the config, and applies to claims too.
    let json = run(&["--json", "sync", "--remote", "hole", "--timeout", "1"])
        .failure(3)
        .json();
    assert!(
        json["error"]["message"].as_str().unwrap().contains("1s"),
        "{json}"
    );
    let t = env.add_todo(a, "claimed over a black hole");
    let json = run(&[
        "--json", "--agent", "x", "todo", "claim", &t, "--sync", "--remote", "hole",
    ])
    .failure(3)
    .json();
    assert_eq!(json["error"]["code"], "git_failed", "{json}");
    // A bad config value is named.
    env.git(a, &["config", "loopx.syncTimeout", "soon"]);
    let json = run(&["--json", "sync", "--remote", "hole"])
        .failure(2)
        .json();
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("loopx.syncTimeout"),
        "{json}"
    );
}

/// Issue 13.5: agents sharing one clone sync at the same time, each
/// between its own writes; every sync succeeds and the remote ends with
/// every write.
#[test]
fn concurrent_syncs_in_one_clone_all_succeed() {
    const AGENTS: usize = 8;
    const ROUNDS: usize = 6;
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..AGENTS)
            .map(|i| {
                let env = &env;
                s.spawn(move || {
                    let mut failed = Vec::new();
                    for round in 0..ROUNDS {
                        env.add_todo(a, &format!("round {round} agent {i}"));
                        let r = env.loopx(a, &["--json", "sync"]);
                        if r.code != 0 {
                            failed.push(format!("agent {i} round {round}: {}", r.stdout));
                        }
                    }
                    failed
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "failed syncs: {failures:#?}");
    env.loopx(a, &["sync"]).success();
    let clone = env.clone_of(&remote, "check");
    let all = texts(&env, &clone);
    for round in 0..ROUNDS {
        for i in 0..AGENTS {
            let want = format!("round {round} agent {i}");
            assert!(all.contains(&want), "{want} missing: {all:?}");
        }
    }
    env.git(&remote, &["fsck", "--no-progress"]);
}

/// Whether this host's records (`.git/loopx/records/`) ever held a grant of
/// `todo` to `agent` (keys are stored as they are).
fn grant_recorded(dir: &Path, agent: &str, todo: &str) -> bool {
    let key = format!("grant\0{agent}\0{todo}");
    let Ok(entries) = std::fs::read_dir(dir.join(".git/loopx/records")) else {
        return false;
    };
    entries.flatten().any(|e| {
        std::fs::read(e.path())
            .map(|bytes| bytes.windows(key.len()).any(|w| w == key.as_bytes()))
            .unwrap_or(false)
    })
}

/// A bare remote whose pre-receive hook refuses every push while `gate` exists.
fn refusing_hook(env: &TestEnv, remote: &Path) -> std::path::PathBuf {
    let gate = env.path("refuse-pushes");
    std::fs::write(&gate, "").unwrap();
    env.write_script(
        &remote.join("hooks/pre-receive"),
        &format!(
            "#!/bin/sh\nif [ -e '{}' ]; then echo 'refused by policy' >&2; exit 1; fi\nexit 0\n",
            gate.display()
        ),
    );
    gate
}

/// Issue 13.4: a claim the remote refused leaves no claim behind: not on
/// the local branch, not in this host's record, and a later sync publishes
/// none.
#[test]
fn a_claim_the_remote_refused_leaves_nothing_to_publish() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    let t = env.add_todo(a, "wanted");
    let u = env.add_todo(a, "also wanted");
    env.loopx(a, &["sync"]).success();
    let gate = refusing_hook(&env, &remote);
    let before = env.git(a, &["rev-parse", "loopx-state"]);
    let json = env
        .loopx(
            a,
            &["--json", "--agent", "x", "todo", "claim", &t, "--sync"],
        )
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "push_rejected", "{json}");
    // The remote's refusal is named, not retried into "kept moving".
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains("hook declined"), "{json}");
    let json = env
        .loopx(
            a,
            &[
                "--json", "--agent", "y", "todo", "next", "--claim", "--sync",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "push_rejected", "{json}");
    assert_eq!(
        env.git(a, &["rev-parse", "loopx-state"]),
        before,
        "the local branch did not move"
    );
    for id in [&t, &u] {
        let show = env
            .loopx(a, &["--json", "todo", "show", id])
            .success()
            .json();
        assert!(show["todo"]["claim"].is_null(), "{show}");
    }
    assert!(
        !grant_recorded(a, "x", &t),
        "no grant is recorded on this host"
    );
    // A write by the agent finds no lease.
    let json = env
        .loopx(a, &["--json", "--agent", "x", "todo", "release", &t])
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "not_claim_holder", "{json}");
    // The remote accepts pushes again: a plain sync publishes no claim.
    std::fs::remove_file(&gate).unwrap();
    env.add_todo(a, "later work");
    env.loopx(a, &["sync"]).success();
    for id in [&t, &u] {
        let file = env.git(
            &remote,
            &[
                "show",
                &format!("loopx-state:{}", env.state_path_of(&remote, id)),
            ],
        );
        assert!(!file.contains("claim:"), "{file}");
    }
    let log = env.git(&remote, &["log", "--format=%s", "loopx-state"]);
    assert!(
        !log.contains("claim"),
        "no claim commit was published:\n{log}"
    );
    // And a claim now goes through, on the remote and here.
    let json = env
        .loopx(
            a,
            &["--json", "--agent", "x", "todo", "claim", &t, "--sync"],
        )
        .success()
        .json();
    let commit = json["commit"].as_str().unwrap().to_owned();
    // Confirmed on the remote: the todo's lease ref names the holder.
    let lease = env.git(
        &remote,
        &[
            "log",
            "-1",
            "--format=%B",
            &format!("refs/loopx/leases/main/{t}"),
        ],
    );
    assert!(lease.contains("Loopx-Agent: x"), "{lease}");
    assert_eq!(env.git(a, &["rev-parse", "loopx-state"]), commit);
    let cached = env
        .loopx(a, &["--json", "todo", "show", &t])
        .success()
        .json();
    let _ = std::fs::remove_dir_all(a.join(".git/loopx/cache"));
    let cold = env
        .loopx(a, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(cached, cold, "the claim's cached state is the commit's");
    assert_eq!(cold["todo"]["claim"]["agent"], "x");
    assert!(grant_recorded(a, "x", &t), "a confirmed grant is recorded");
    // The holder can end it like any lease.
    env.loopx(a, &["--agent", "x", "todo", "release", &t])
        .success();
    env.git(a, &["fsck", "--no-progress"]);
}

/// Issue 13.4, the network-error variant: the push of the claim fails
/// outright (git exits without a status line). Nothing is left behind,
/// not even a kept pack.
#[test]
fn a_claim_whose_push_fails_leaves_nothing_behind() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    let t = env.add_todo(a, "wanted");
    env.loopx(a, &["sync"]).success();
    let real_git = env.real_git();
    let bin = env.path("failbin");
    std::fs::create_dir_all(&bin).unwrap();
    env.write_script(
        &bin.join("git"),
        &format!(
            "#!/bin/sh\nif [ \"$3\" = push ]; then echo 'fatal: the network went away' >&2; exit 128; fi\nexec '{}' \"$@\"\n",
            real_git.trim()
        ),
    );
    let before = env.git(a, &["rev-parse", "loopx-state"]);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out: crate::env::Run = env
        .loopx_cmd(a)
        .env("PATH", path)
        .args(["--json", "--agent", "x", "todo", "claim", &t, "--sync"])
        .output()
        .unwrap()
        .into();
    let json = out.failure(3).json();
    assert_eq!(json["error"]["code"], "git_failed", "{json}");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the network went away"),
        "{json}"
    );
    assert_eq!(env.git(a, &["rev-parse", "loopx-state"]), before);
    assert!(
        !grant_recorded(a, "x", &t),
        "no grant is recorded on this host"
    );
    let keeps: Vec<_> = std::fs::read_dir(a.join(".git/objects/pack"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".keep"))
        .collect();
    assert!(keeps.is_empty(), "no pack stays kept: {keeps:?}");
    env.loopx(a, &["sync"]).success();
    let file = env.git(
        &remote,
        &[
            "show",
            &format!("loopx-state:{}", env.state_path_of(&remote, &t)),
        ],
    );
    assert!(!file.contains("claim:"), "{file}");
}

/// git-loopx reads what git prints (`couldn't find remote ref` on a remote
/// with no state yet), so it runs git with the locale pinned. Here the
/// person's locale is German and git translates its messages: the first
/// sync to an empty remote, a fresh clone's sync and a claim through it
/// work as they do in English.
///
/// The git must translate: `LOOPX_TRANSLATED_GIT` names the directory of
/// one (git ≥ 2.41 built with gettext; `.ci/run` builds one), else the
/// `git` on `PATH` is used. Without a translating git the test is skipped,
/// unless `LOOPX_REQUIRE_TRANSLATED_GIT=1` (CI) makes that a failure.
#[test]
fn sync_works_when_git_speaks_another_language() {
    let env = TestEnv::new();
    let mut path = std::env::split_paths(&crate::env::path_with_loopx()).collect::<Vec<_>>();
    if let Some(dir) = std::env::var_os("LOOPX_TRANSLATED_GIT") {
        path.insert(0, dir.into());
    }
    let path = std::env::join_paths(path).unwrap();
    let german = |mut cmd: std::process::Command| {
        cmd.env("PATH", &path)
            .env_remove("LC_ALL")
            .env("LANG", "de_DE.UTF-8")
            .env("LANGUAGE", "de");
        cmd
    };
    let remote = env.bare("remote.git");
    // Does this git speak German here? (A missing ref, as sync meets it.)
    let mut probe = german(env.git_cmd(&remote));
    let probe = probe.args(["fetch", remote.to_str().unwrap(), "refs/heads/nope"]);
    let said = String::from_utf8_lossy(&probe.output().unwrap().stderr).into_owned();
    if said.contains("couldn't find remote ref") {
        crate::require::skip(
            "LOOPX_REQUIRE_TRANSLATED_GIT",
            &format!("no git that translates its messages (set LOOPX_TRANSLATED_GIT): {said}"),
        );
        return;
    }
    let loopx = |dir: &Path, args: &[&str]| -> crate::env::Run {
        let mut cmd = german(env.loopx_cmd(dir));
        cmd.args(args).output().unwrap().into()
    };
    let a = env.repo("a");
    env.git(&a, &["remote", "add", "origin", remote.to_str().unwrap()]);
    loopx(&a, &["init", "--goal-text", "Ship the parser"]).success();
    let id = env.add_todo(&a, "from a");
    // The remote has no loopx-state yet: git says so in German.
    loopx(&a, &["sync"]).success();
    let b = env.clone_of(&remote, "b");
    loopx(&b, &["sync"]).success();
    assert_eq!(texts(&env, &b), vec!["from a".to_owned()]);
    loopx(&b, &["--agent", "b1", "todo", "claim", &id, "--sync"]).success();
    loopx(&b, &["sync"]).success();
    loopx(&a, &["sync"]).success();
    let holder = env
        .loopx(&b, &["--json", "todo", "show", &id])
        .success()
        .json();
    assert_eq!(holder["todo"]["claim"]["agent"], "b1", "{holder}");
}

/// A remote is named, never given as a path, a URL or an option: `sync`
/// and `todo claim --sync` (the MCP `claim` tool's path too) refuse
/// anything `git remote` does not list, before git runs, and push nothing.
#[test]
fn only_a_configured_remote_by_name_is_synced_with() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    let other = env.bare("unrelated.git");
    let marker = env.path("pwned");
    let option = format!("--receive-pack=touch {}", marker.display());
    let todo = env.add_todo(a, "claimed elsewhere");
    for remote in [
        other.to_str().unwrap(),
        "file:///nowhere",
        option.as_str(),
        "-q",
    ] {
        let json = env
            .loopx(a, &["--json", "sync", "--remote", remote])
            .failure(2)
            .json();
        assert_eq!(json["error"]["code"], "invalid_input", "{remote}: {json}");
        let json = env
            .loopx(
                a,
                &[
                    "--json", "--agent", "x", "todo", "claim", &todo, "--sync", "--remote", remote,
                ],
            )
            .failure(2)
            .json();
        assert_eq!(json["error"]["code"], "invalid_input", "{remote}: {json}");
    }
    assert!(!marker.exists(), "no option reached git");
    assert_eq!(
        env.git(&other, &["for-each-ref", "--format=%(refname)"]),
        "",
        "nothing was pushed to a repository given by path"
    );
    env.loopx(a, &["sync", "--remote", "origin"]).success();
}

/// Three clones each fill one todo with notes (within what a todo keeps);
/// the merges' union would be larger than a reader accepts, so the oldest
/// notes move out of the todo's file into run records: every clone syncs
/// afterwards, and `todo show` and `review` still show every note.
#[test]
fn three_clones_full_of_notes_all_sync_and_keep_every_note() {
    const EACH: usize = 7;
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a", "b", "c"]);
    let t = env.add_todo(&dirs[0], "shared notes");
    for d in &dirs {
        env.loopx(d, &["sync"]).success();
    }
    let text = |who: &str, i: usize| format!("{who} note {i} {}", "x".repeat(16 * 1024 - 20));
    for (d, who) in dirs.iter().zip(["a", "b", "c"]) {
        for i in 0..EACH {
            env.loopx(d, &["todo", "update", &t, "--note", &text(who, i)])
                .success();
        }
    }
    for d in dirs.iter().chain(&dirs) {
        env.loopx(d, &["sync"]).success();
    }
    let tip = env.tip(&dirs[0]);
    for d in &dirs {
        assert_eq!(env.tip(d), tip, "the clones agree");
        let notes = note_texts(&env, d, &t);
        let notes: Vec<&str> = notes.iter().map(String::as_str).collect();
        assert_eq!(notes.len(), 3 * EACH, "every note, once");
        // The todo's file holds at most what a todo keeps; review shows
        // (as run records) the notes that moved out of it.
        let path = env
            .git(d, &["ls-tree", "-r", "--name-only", "loopx-state"])
            .lines()
            .find(|l| l.contains(&t))
            .unwrap()
            .to_owned();
        let file = env.state_file(d, &path);
        assert!(file.len() <= 120 * 1024, "{} bytes", file.len());
        let review = env.loopx(d, &["--json", "review"]).success().stdout;
        let mut moved = 0;
        for who in ["a", "b", "c"] {
            for i in 0..EACH {
                let want = text(who, i);
                assert!(notes.contains(&want.as_str()), "{who} note {i} lost");
                let head = format!("{who} note {i} ");
                if !file.contains(&head) {
                    moved += 1;
                    assert!(review.contains(&head), "review shows {head}");
                }
            }
        }
        assert!(moved >= EACH, "{moved} notes moved out of the todo's file");
    }
}

/// The texts of the notes `todo show` lists for `todo` in `dir`.
fn note_texts(env: &TestEnv, dir: &Path, todo: &str) -> Vec<String> {
    let show = env
        .loopx(dir, &["--json", "todo", "show", todo])
        .success()
        .json();
    show["todo"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["text"].as_str().unwrap().to_owned())
        .collect()
}

/// One sync merges at most 16 peer heads and says how many wait; the next
/// sync merges those.
#[test]
fn a_sync_merges_at_most_sixteen_peer_heads_and_says_so() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let todos: Vec<String> = (0..18)
        .map(|i| env.add_todo(a, &format!("work {i}")))
        .collect();
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    let base = env.tip(a);
    // Eighteen peers, each with one change on the same base.
    for (i, t) in todos.iter().enumerate() {
        env.loopx(
            a,
            &[
                "--agent",
                "x",
                "todo",
                "update",
                t,
                "--note",
                &format!("peer {i}"),
            ],
        )
        .success();
        env.git(
            a,
            &[
                "push",
                "-q",
                "origin",
                &format!("loopx-state:refs/loopx/peers/peer-{i:02}"),
            ],
        );
        env.git(a, &["update-ref", "refs/heads/loopx-state", &base]);
    }
    let first = env.loopx(b, &["--json", "sync"]).success().json();
    assert_eq!(first["action"], "merged", "{first}");
    assert_eq!(first["deferred_heads"], 2, "{first}");
    let second = env.loopx(b, &["--json", "sync"]).success().json();
    assert!(second.get("deferred_heads").is_none(), "{second}");
    for (i, t) in todos.iter().enumerate() {
        let show = env
            .loopx(b, &["--json", "todo", "show", t])
            .success()
            .json();
        let notes = show["todo"]["notes"].to_string();
        assert!(
            notes.contains(&format!("peer {i}")),
            "peer {i}'s note: {show}"
        );
    }
    drop(remote);
}

/// A peer's head whose line of commits reaches nothing this clone has read
/// within the ancestor walk (70 commits ahead) is read from the local
/// tip's state and the trees' difference: the same state a whole read
/// gives.
#[test]
fn a_head_far_ahead_of_anything_read_here_merges_to_the_same_state() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let t = env.add_todo(a, "one");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    // a: one change of its own, so the sync merges.
    env.add_todo(a, "a's own");
    for i in 0..70 {
        env.loopx(
            b,
            &[
                "--agent",
                "x",
                "todo",
                "update",
                &t,
                "--note",
                &format!("n{i}"),
            ],
        )
        .success();
    }
    env.loopx(b, &["sync"]).success();
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    let list = |dir: &Path| {
        env.loopx(dir, &["--json", "todo", "show", &t])
            .success()
            .json()["todo"]["notes"]
            .clone()
    };
    assert_eq!(list(a), list(b));
    assert_eq!(list(a).as_array().map(Vec::len), Some(70), "{}", list(a));
    assert_eq!(env.tip(a), env.tip(b));
    // A fresh clone reads the merged tip whole, and sees the same.
    let c = env.clone_of(&_remote, "c");
    env.loopx(&c, &["sync"]).success();
    assert_eq!(list(&c), list(a));
}

/// `loopx.maxRemoteOpsPerSecond`: the clone's processes, syncing at once,
/// start their fetches and pushes no more often than the pace, in turn.
#[test]
fn the_remote_operations_of_a_clone_keep_to_its_pace() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    env.git(a, &["config", "loopx.maxRemoteOpsPerSecond", "2"]);
    // A git that notes when each network step starts (microseconds).
    let bin = env.path("paced-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.path("starts.log");
    env.write_script(
        &bin.join("git"),
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do case $a in fetch|push|ls-remote) echo \"$(date +%s%6N) $a\" >> '{}'; break ;; esac; done\nexec '{}' \"$@\"\n",
            log.display(),
            env.real_git()
        ),
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        crate::env::path_with_loopx().to_string_lossy()
    );
    let children: Vec<_> = (0..3)
        .map(|i| {
            env.add_todo(a, &format!("paced {i}"));
            env.loopx_cmd(a)
                .env("PATH", &path)
                .arg("sync")
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let mut starts: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    starts.sort_unstable();
    assert!(starts.len() >= 4, "a fetch each and a push: {text}");
    // A lower bound only: a slow machine spreads them further, never closer.
    // 500 ms apart at 2 a second, less what starting a process may take.
    for pair in starts.windows(2) {
        assert!(pair[1] - pair[0] >= 350_000, "{text}");
    }
    env.git(a, &["config", "loopx.maxRemoteOpsPerSecond", "fast"]);
    let json = env.loopx(a, &["--json", "sync"]).failure(2).json();
    let message = json["error"]["message"].as_str().unwrap();
    assert!(message.contains("loopx.maxRemoteOpsPerSecond"), "{json}");
}

/// A loop of `todo next --claim --sync`, work and `todo done` publishes
/// each done on its lease ref with the next claim's push: a peer that has
/// not heard of the done (no sync in between) passes the todo over even
/// once its lease has expired, instead of taking it a second time.
#[test]
fn a_done_reaches_the_lease_ref_with_the_next_claim() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    env.add_todo(a, "first");
    env.add_todo(a, "second");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    let next = |dir: &std::path::Path, agent: &str, now: &str| {
        env.loopx_at(
            dir,
            now,
            &[
                "--json", "--agent", agent, "todo", "next", "--claim", "--sync",
            ],
        )
        .json()
    };
    let first = next(a, "x", "2026-12-02T10:00:00Z")["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx_at(
        a,
        "2026-12-02T10:05:00Z",
        &[
            "--agent",
            "x",
            "todo",
            "done",
            &first,
            "--evidence",
            "tests",
        ],
    )
    .success();
    let second = next(a, "x", "2026-12-02T10:06:00Z")["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second);
    let lease = env.git(
        &remote,
        &[
            "log",
            "-1",
            "--format=%B",
            &format!("refs/loopx/leases/main/{first}"),
        ],
    );
    assert!(lease.contains("Loopx-Ended"), "{lease}");
    // At 10:50 the first lease (45 minutes from 10:00) has expired, the
    // second has not; b never heard of the done.
    let json = next(b, "y", "2026-12-02T10:50:00Z");
    assert_eq!(json["error"]["code"], "nothing_ready", "{json}");
}
