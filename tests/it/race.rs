//! Concurrency: real processes racing on the same branch.

use std::collections::BTreeSet;

use crate::env::TestEnv;

/// 8 processes × 50 writebacks: no lost update, a linear chain, fsck clean.
#[test]
fn eight_writers_fifty_writebacks_each() {
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
                    env.loopx(repo, &["--agent", &agent, "todo", "add", &text])
                        .success();
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
