//! Issue 16, point 2: a failing `validate` shows its cause (the output's
//! last lines, a timeout or a missing program in words, no raw log line),
//! and a `validate` that needs a shell is refused when it is added.

use std::path::Path;

use crate::env::{Run, TestEnv};

fn add(env: &TestEnv, repo: &Path, validate: &str) -> Run {
    env.loopx(
        repo,
        &["--json", "todo", "add", "check it", "--validate", validate],
    )
}

fn todo_id(run: &Run) -> String {
    run.json()["todo"]["id"].as_str().unwrap().to_owned()
}

/// An agent's `todo done`: a `validate` runs only for an agent.
fn done(env: &TestEnv, repo: &Path, id: &str, extra: &[&str]) -> Run {
    // An agent completes what it holds (a repeated claim keeps the lease).
    env.loopx(repo, &["--agent", "agent-a", "todo", "claim", id]);
    let mut args = vec![
        "--agent",
        "agent-a",
        "todo",
        "done",
        id,
        "--evidence",
        "checked",
    ];
    args.extend_from_slice(extra);
    env.loopx(repo, &args)
}

/// A repository whose `check.sh` prints `lines` numbered lines on stdout,
/// `boom` on stderr, and exits 1; and a todo validated by it.
fn failing_check(env: &TestEnv, lines: usize) -> (std::path::PathBuf, String) {
    let repo = env.state_repo("r");
    env.write_script(
        &repo.join("check.sh"),
        &format!(
            "#!/bin/sh\ni=1\nwhile [ $i -le {lines} ]; do echo \"line $i\"; i=$((i+1)); done\necho boom >&2\nexit 1\n"
        ),
    );
    let id = todo_id(&add(env, &repo, "./check.sh").success());
    (repo, id)
}

#[test]
fn failing_validate_shows_its_last_lines_in_json() {
    let env = TestEnv::new();
    let (repo, id) = failing_check(&env, 100);
    let out = done(&env, &repo, &id, &["--json"]).failure(1);
    let j = out.json();
    assert_eq!(j["ok"], false);
    assert_eq!(j["error"]["code"], "validation_failed");
    assert!(
        j["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`./check.sh` exited 1"),
        "{j}"
    );
    let v = &j["validation"];
    assert_eq!(v["command"], "./check.sh");
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["result"], "failed");
    let stdout = v["stdout"]["text"].as_str().unwrap();
    assert!(stdout.starts_with("line 61\n"), "{stdout}");
    assert!(stdout.ends_with("line 100\n"), "{stdout}");
    assert_eq!(v["stdout"]["lines_cut"], 60);
    assert_eq!(v["stderr"]["text"], "boom\n");
    assert_eq!(v["stderr"]["lines_cut"], 0);
    // The todo stays open, and the failure is recorded, small.
    let show = env
        .loopx(&repo, &["--json", "todo", "show", &id])
        .success()
        .json();
    assert_eq!(show["todo"]["status"], "open");
    let history = env
        .loopx(&repo, &["--json", "history", "--kind", "writeback"])
        .success()
        .json();
    let run = &history["runs"][0];
    assert_eq!(run["validation"]["exit_code"], 1);
    assert_eq!(
        run["summary"],
        "validation failed: `./check.sh` exited 1; last line: boom"
    );
}

#[test]
fn failing_validate_shows_its_last_lines_in_text() {
    let env = TestEnv::new();
    let (repo, id) = failing_check(&env, 100);
    let out = done(&env, &repo, &id, &[]).failure(1);
    assert!(
        out.stderr.contains("`./check.sh` exited 1"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout
            .contains("stdout (last 40 lines, 60 earlier lines cut):\n  line 61\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("  line 100\n"), "{}", out.stdout);
    assert!(!out.stdout.contains("line 60\n"), "{}", out.stdout);
    assert!(out.stdout.contains("stderr:\n  boom\n"), "{}", out.stdout);
}

#[test]
fn a_huge_output_is_cut_to_8_kib_and_the_state_keeps_a_short_line() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    // One line of 300 KiB: bounded by bytes, not lines.
    env.write_script(
        &repo.join("check.sh"),
        "#!/bin/sh\nhead -c 307200 /dev/zero | tr '\\0' x\necho\nhead -c 307200 /dev/zero | tr '\\0' y >&2\nexit 2\n",
    );
    let id = todo_id(&add(&env, &repo, "./check.sh").success());
    let j = done(&env, &repo, &id, &["--json"]).failure(1).json();
    let v = &j["validation"];
    let stdout = v["stdout"]["text"].as_str().unwrap();
    assert!(stdout.len() <= 8 * 1024, "{}", stdout.len());
    assert!(stdout.ends_with("xxx\n"));
    assert!(v["stdout"]["bytes_cut"].as_u64().unwrap() >= 300 * 1024 - 8 * 1024);
    let history = env
        .loopx(&repo, &["--json", "history", "--kind", "writeback"])
        .success()
        .json();
    let summary = history["runs"][0]["summary"].as_str().unwrap();
    assert!(summary.len() < 400, "{summary}");
    assert!(
        summary.starts_with("validation failed: `./check.sh` exited 2; last line: yyy"),
        "{summary}"
    );
}

#[test]
fn a_validate_timeout_says_timed_out_and_prints_no_progress_off_a_tty() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = todo_id(&add(&env, &repo, "sleep 30").success());
    let out = done(&env, &repo, &id, &["--validate-timeout", "2s"]).failure(1);
    assert!(
        out.stderr
            .contains("not completed: `sleep 30` timed out after 2s"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("124"), "{}", out.stderr);
    // stderr is a pipe here: the progress line is for a terminal only.
    assert!(!out.stderr.contains("running"), "{}", out.stderr);
    let j = done(&env, &repo, &id, &["--json", "--validate-timeout", "1s"])
        .failure(1)
        .json();
    assert_eq!(j["validation"]["result"], "timed_out");
    assert_eq!(j["validation"]["timeout_seconds"], 1);
}

#[test]
fn a_missing_validate_program_is_named_without_a_log_line() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = todo_id(&add(&env, &repo, "no-such-checker --all").success());
    let out = done(&env, &repo, &id, &[]).failure(1);
    assert!(
        out.stderr.contains("`no-such-checker` not found on PATH"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("WARN"), "{}", out.stderr);
    assert!(!out.stderr.contains("loopx::"), "{}", out.stderr);
    assert!(!out.stderr.contains("exited 127"), "{}", out.stderr);
    let j = done(&env, &repo, &id, &["--json"]).failure(1).json();
    assert_eq!(j["validation"]["result"], "not_found");
}

#[test]
fn a_validate_that_needs_a_shell_is_refused_when_added() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    for (validate, construct) in [
        ("cargo build && cargo test", "`&&`"),
        ("make || true", "`||`"),
        ("cargo test | tee log", "`|`"),
        ("true ; false", "`;`"),
        ("cargo test > out.txt", "`>`"),
        ("wc -l < file", "`<`"),
        ("echo $(date)", "`$`"),
        ("echo \"$HOME\"", "`$`"),
        ("echo `date`", "a backtick"),
        ("ls *.rs", "`*`"),
        ("RUST_LOG=debug cargo test", "`RUST_LOG=debug`"),
        ("cargo test &", "`&`"),
    ] {
        let out = add(&env, &repo, validate).failure(2);
        let j = out.json();
        assert_eq!(j["error"]["code"], "invalid_input", "{validate}: {j}");
        let message = j["error"]["message"].as_str().unwrap();
        assert!(message.contains(construct), "{validate}: {message}");
        assert!(
            j["error"]["hint"].as_str().unwrap().contains("sh -c '"),
            "{validate}: {j}"
        );
    }
    // Quoted, the same characters are plain arguments; an explicit shell is fine.
    for validate in [
        "sh -c 'cargo build && cargo test'",
        "grep -q 'a|b' README",
        "cargo test -- 'parser::*'",
        "test -f tokenizer.txt",
    ] {
        add(&env, &repo, validate).success();
    }
    let list = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(list["todos"].as_array().unwrap().len(), 4);
}
