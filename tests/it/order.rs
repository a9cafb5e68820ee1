//! Todos and run records keep the order they were added in (issue 16,
//! point 5): several adds in one second (the suite pins the clock) come back
//! from `todo list`, `status`, `todo next`, `review` and `history` in that
//! order, not in the order of their (hashed) ids.

use crate::env::TestEnv;

const TEXTS: [&str; 6] = ["first", "second", "third", "fourth", "fifth", "sixth"];

fn texts(list: &serde_json::Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn todos_added_in_one_second_keep_their_order_everywhere() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let ids: Vec<String> = TEXTS.iter().map(|t| env.add_todo(&repo, t)).collect();
    // The ids alone would not give this order (they are hashes).
    let mut sorted = ids.clone();
    sorted.sort();
    assert_ne!(sorted, ids, "pick texts whose ids are not already sorted");

    let list = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(texts(&list["todos"]), TEXTS, "{list}");
    let seqs: Vec<u64> = list["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6], "{list}");

    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(texts(&status["todos"]), TEXTS, "{status}");
    assert_eq!(texts(&status["next"]), &TEXTS[..5], "{status}");

    let text = env.loopx(&repo, &["todo", "list"]).success().stdout;
    let at: Vec<usize> = ids
        .iter()
        .map(|id| text.find(id.as_str()).unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");

    let next = env
        .loopx(&repo, &["--json", "--agent", "a1", "todo", "next"])
        .success()
        .json();
    assert_eq!(next["todo"]["text"], "first", "{next}");

    let review = env.loopx(&repo, &["review"]).success().stdout;
    let at: Vec<usize> = ids
        .iter()
        .map(|id| review.find(id.as_str()).unwrap_or(usize::MAX))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{review}");
}

#[test]
fn run_records_of_one_second_are_listed_newest_first() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "work");
    let summaries = ["one", "two", "three", "four", "five"];
    for s in summaries {
        env.loopx(
            &repo,
            &[
                "--agent",
                "a1",
                "writeback",
                "--todo",
                &todo,
                "--outcome",
                "outcome_progress",
                "--summary",
                s,
            ],
        )
        .success();
    }
    let history = env.loopx(&repo, &["--json", "history"]).success().json();
    let got: Vec<&str> = history["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].as_str().unwrap())
        .collect();
    assert_eq!(got, ["five", "four", "three", "two", "one"], "{history}");
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(status["recent_runs"][0]["summary"], "five", "{status}");
}

/// git-loopx's default priority is P2 where LoopX's is P1, on purpose
/// (docs/loopx-compat.md, "Default priority").
#[test]
fn a_todo_added_without_a_priority_is_p2() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let json = env
        .loopx(&repo, &["--json", "todo", "add", "no priority named"])
        .success()
        .json();
    assert_eq!(json["todo"]["priority"], "P2", "{json}");
}
