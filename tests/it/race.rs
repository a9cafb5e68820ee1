//! Concurrency: real processes racing on the same branch.

use std::collections::BTreeSet;

use crate::env::TestEnv;

/// 8 processes × 50 writebacks: no lost update, a linear chain, fsck clean.
#[test]
fn eight_writers_fifty_writebacks_each() {
    eight_writers(true);
}

/// The same race with the host's turn-taking lock off: the compare-and-swap
/// alone must keep every write.
#[test]
fn eight_writers_fifty_writebacks_each_on_the_cas_alone() {
    eight_writers(false);
}

fn eight_writers(turn_lock: bool) {
    const WRITERS: usize = 8;
    const EACH: usize = 50;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let root = env.tip(&repo);

    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let env = &env;
            let repo = &repo;
            s.spawn(move || {
                for i in 0..EACH {
                    let agent = format!("agent-{w}");
                    let text = format!("writer {w} item {i}");
                    let mut cmd = env.loopx_cmd(repo);
                    if !turn_lock {
                        cmd.env("LOOPX_WRITER_LOCK", "0");
                    }
                    let out: crate::env::Run = cmd
                        .args(["--agent", &agent, "todo", "add", &text])
                        .output()
                        .unwrap()
                        .into();
                    out.success();
                }
            });
        }
    });

    let chain = env.git(
        &repo,
        &[
            "rev-list",
            "--first-parent",
            &format!("{root}..loopx-state"),
        ],
    );
    assert_eq!(
        chain.lines().count(),
        WRITERS * EACH,
        "exactly one commit per writeback"
    );
    let all = env.git(&repo, &["rev-list", &format!("{root}..loopx-state")]);
    assert_eq!(all, chain, "the history is one linear first-parent chain");
    assert_eq!(env.git(&repo, &["rev-list", "--merges", "loopx-state"]), "");

    let json = env
        .loopx(&repo, &["todo", "list", "--json"])
        .success()
        .json();
    let texts: BTreeSet<String> = json["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap().to_owned())
        .collect();
    let expected: BTreeSet<String> = (0..WRITERS)
        .flat_map(|w| (0..EACH).map(move |i| format!("writer {w} item {i}")))
        .collect();
    assert_eq!(texts, expected, "every change is in the final tree");
    let files = env.git(&repo, &["ls-tree", "-r", "--name-only", "loopx-state"]);
    assert_eq!(
        files.lines().filter(|l| l.contains("/todos/")).count(),
        WRITERS * EACH
    );
    env.git(&repo, &["fsck", "--no-progress", "--strict"]);
}

/// 8 agents racing `todo next --claim` (then `done`) over 20 ready todos:
/// every todo is claimed exactly once; the rest get a clean `nothing_ready`.
#[test]
fn eight_agents_race_todo_next_claim() {
    const AGENTS: usize = 8;
    const TODOS: usize = 20;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    for i in 0..TODOS {
        env.loopx(&repo, &["todo", "add", &format!("task {i}")])
            .success();
    }
    let claims: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..AGENTS)
            .map(|a| {
                let env = &env;
                let repo = &repo;
                s.spawn(move || {
                    let agent = format!("agent-{a}");
                    let mut mine = Vec::new();
                    loop {
                        let out = env.loopx(
                            repo,
                            &["--json", "--agent", &agent, "todo", "next", "--claim"],
                        );
                        let json = out.json();
                        if out.code == 1 {
                            assert_eq!(json["error"]["code"], "nothing_ready", "{json}");
                            break;
                        }
                        assert_eq!(out.code, 0, "{json}");
                        assert_eq!(json["action"], "acquired", "{json}");
                        assert_eq!(json["claim"]["agent"], agent.as_str());
                        let id = json["todo"]["id"].as_str().unwrap().to_owned();
                        env.loopx(
                            repo,
                            &[
                                "--agent",
                                &agent,
                                "todo",
                                "done",
                                &id,
                                "--evidence",
                                "raced",
                            ],
                        )
                        .success();
                        mine.push(id);
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<&String> = claims.iter().flatten().collect();
    assert_eq!(
        all.len(),
        TODOS,
        "every todo claimed, none twice: {claims:?}"
    );
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        TODOS,
        "no todo was claimed by two agents: {claims:?}"
    );
    let json = env
        .loopx(&repo, &["todo", "list", "--all", "--json"])
        .success()
        .json();
    for todo in json["todos"].as_array().unwrap() {
        assert_eq!(todo["status"], "done");
        assert_eq!(todo["last_epoch"], 1, "claimed exactly once: {todo}");
    }
    env.git(&repo, &["fsck", "--no-progress"]);
}
