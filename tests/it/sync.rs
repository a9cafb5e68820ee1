//! Across machines: a bare remote and several clones syncing loopx-state.

use std::path::Path;

use crate::env::TestEnv;

fn add(env: &TestEnv, dir: &Path, text: &str) -> String {
    env.loopx(dir, &["--json", "todo", "add", text])
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

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
        .loopx(b, &["--json", "init", "--goal-text", "Something else"])
        .success()
        .json();
    assert_eq!(init["action"], "adopted");
    assert_eq!(init["objective"], "Ship the parser");
    // A write on a fresh clone builds on the remote's root, too.
    let c = env.clone_of(&remote, "c");
    add(&env, &c, "from c");
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
            let t = add(&env, d, &format!("clone {i} todo {j}"));
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
    let t = add(&env, a, "shared");
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
    let t = add(&env, a, "carries a future field");
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
        let t = add(&env, &dirs[0], &format!("round {round}"));
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
        // The remote holds exactly that claim.
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
fn a_racing_push_is_refused_by_the_pinned_lease_and_merged_next_round() {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    env.loopx(b, &["sync"]).success();
    add(&env, b, "b's racing change");
    add(&env, a, "a's change");
    let real_git = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = env.path("racebin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = env.path("raced");
    let script = format!(
        "#!/bin/sh\nif [ \"$3\" = push ] && [ ! -e '{m}' ]; then\n  touch '{m}'\n  '{g}' -C '{b}' push -q origin loopx-state:loopx-state || exit 99\nfi\nexec '{g}' \"$@\"\n",
        m = marker.display(),
        g = real_git.trim(),
        b = b.display()
    );
    let wrapper = bin.join("git");
    std::fs::write(&wrapper, script).unwrap();
    std::process::Command::new("chmod")
        .args(["+x", wrapper.to_str().unwrap()])
        .status()
        .unwrap();
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
    assert!(
        json["rounds"].as_u64().unwrap() >= 2,
        "the first push was refused and retried: {json}"
    );
    assert_eq!(json["action"], "merged");
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
    let id = add(&env, &dirs[0], "use key K for the bucket");
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
