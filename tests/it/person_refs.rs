//! Refs the person owns (issue 45): `refs/loopx/reviewed` (`review --ack`),
//! loopx-state rewritten (`redact` beyond a flagged credential) or moved
//! back (`doctor --repair`), and `gate_signers` move only for the person.
//! One check of who writes (`Context::person_moves`) guards each: an agent
//! named any way, or any command inside an agent runtime, is refused with
//! `person_only`, nothing moves, and the attempt is recorded for the
//! person.

use std::path::Path;

use crate::env::TestEnv;

fn reviewed(env: &TestEnv, repo: &Path) -> Option<String> {
    env.git_ok(
        repo,
        &["rev-parse", "-q", "--verify", "refs/loopx/reviewed"],
    )
    .then(|| env.git(repo, &["rev-parse", "refs/loopx/reviewed"]))
}

/// `args` as an agent would run them: named, or inside a runtime (the
/// marker `hooks install` sets) with no name.
fn as_agents(env: &TestEnv, repo: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let mut named = vec!["--json", "--agent", "a1"];
    named.extend_from_slice(args);
    let mut plain = vec!["--json"];
    plain.extend_from_slice(args);
    let inside = env
        .loopx_cmd(repo)
        .env("LOOPX_RUNTIME", "claude-code")
        .args(&plain)
        .output()
        .unwrap();
    vec![
        env.loopx(repo, &named).json(),
        crate::env::Run::from(inside).json(),
    ]
}

fn refused_person_only(tries: &[serde_json::Value], what: &str) {
    for t in tries {
        assert_eq!(t["error"]["code"], "person_only", "{what}: {t}");
    }
}

#[test]
fn only_the_person_marks_the_state_reviewed() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.add_todo(&repo, "Write the parser");
    assert_eq!(reviewed(&env, &repo), None);
    let tries = as_agents(&env, &repo, &["review", "--ack"]);
    refused_person_only(&tries, "review --ack");
    assert_eq!(
        reviewed(&env, &repo),
        None,
        "an agent moved refs/loopx/reviewed"
    );
    // A review without --ack is anyone's to read.
    env.loopx(&repo, &["--agent", "a1", "review"]).success();
    env.loopx(&repo, &["review", "--ack"]).success();
    assert_eq!(reviewed(&env, &repo), Some(env.tip(&repo)));
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    let told = status["refused"].as_array().expect("refusals recorded");
    assert!(
        told.iter()
            .filter(|t| t["code"] == "person_only"
                && t["message"]
                    .as_str()
                    .unwrap()
                    .contains("refs/loopx/reviewed"))
            .count()
            >= 2,
        "{status}"
    );
}

#[test]
fn only_the_person_rewrites_history_beyond_a_credential() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let todo = env.add_todo(&repo, "Ask Sam about the launch plan");
    let before = env.tip(&repo);
    let tries = as_agents(&env, &repo, &["redact", "todo", &todo, "--text", "Sam"]);
    refused_person_only(&tries, "redact");
    assert_eq!(env.tip(&repo), before, "an agent rewrote the history");
    env.loopx(&repo, &["redact", "todo", &todo, "--text", "Sam"])
        .success();
    assert_ne!(env.tip(&repo), before);
}

/// Deletes every loose object (the writes since the last repack)
/// and the journal that would write them again (writes older than it).
fn delete_loose_objects(repo: &Path) {
    std::fs::remove_dir_all(repo.join(".git/loopx/written")).unwrap();
    for dir in std::fs::read_dir(repo.join(".git/objects"))
        .unwrap()
        .flatten()
    {
        let name = dir.file_name().to_string_lossy().into_owned();
        if name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            std::fs::remove_dir_all(dir.path()).unwrap();
        }
    }
}

#[test]
fn only_the_person_moves_the_state_back() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.add_todo(&repo, "kept");
    env.git(&repo, &["repack", "-a", "-d", "-q"]);
    env.add_todo(&repo, "lost");
    let broken = env.tip(&repo);
    delete_loose_objects(&repo);
    for t in as_agents(&env, &repo, &["doctor", "--repair"]) {
        let repaired = t["repaired"].to_string();
        assert!(
            repaired.contains("left loopx-state") && repaired.contains("person_only")
                || repaired.contains("only a person"),
            "{t}"
        );
    }
    assert_eq!(env.tip(&repo), broken, "an agent moved loopx-state back");
    let fixed = env
        .loopx(&repo, &["--json", "doctor", "--repair"])
        .success()
        .json();
    assert_eq!(fixed["healthy"], true, "{fixed}");
    assert_ne!(env.tip(&repo), broken);
}

/// Refusals recorded at once while the record is trimmed all survive: the
/// trim (read, cut, rename over) holds the record's lock.
#[test]
fn refusals_racing_a_trim_are_all_kept() {
    const RACERS: usize = 24;
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let record = repo.join(".git/loopx/refused.jsonl");
    let old = "{\"at\":\"2026-12-01T00:00:00Z\",\"code\":\"person_only\",\"by\":\"old\",\"message\":\"x\"}\n";
    // Large, so that each trim takes a while: every racer finds it too big.
    std::fs::write(&record, old.repeat(40_000_000 / old.len())).unwrap();
    let children: Vec<_> = (0..RACERS)
        .map(|i| {
            env.loopx_cmd(&repo)
                .args(["--agent", &format!("racer{i}"), "review", "--ack"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert_eq!(c.wait().unwrap().code(), Some(1));
    }
    let text = std::fs::read_to_string(&record).unwrap();
    for i in 0..RACERS {
        assert!(
            text.contains(&format!("\"by\":\"racer{i}\"")),
            "racer{i}'s refusal was lost"
        );
    }
    assert!(text.len() < 40_000_000, "the record was never trimmed");
}
