//! `git loopx run`: the host loop as a command, driving a fake agent — an
//! `sh` script that reads the turn's prompt and runs the `git loopx`
//! commands it lists (claim, writeback, done, spend), placeholders filled.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::env::{Run, TestEnv};

/// The fake agent. It checks that the prompt on stdin is `$LOOPX_PROMPT`
/// and names `$LOOPX_TURN`, then runs the prompt's numbered commands in
/// order. `$FAKE_BEFORE` runs first (a hook for the tests).
pub(crate) const FAKE_AGENT: &str = r#"#!/bin/sh
set -eu
prompt=$(cat)
[ "$prompt" = "$(printf '%s' "$LOOPX_PROMPT")" ] || { echo "fake agent: stdin is not LOOPX_PROMPT" >&2; exit 9; }
printf '%s\n' "$prompt" | grep -q -e "--turn $LOOPX_TURN" || { echo "fake agent: prompt lacks turn $LOOPX_TURN" >&2; exit 8; }
eval "${FAKE_BEFORE:-:}"
printf '%s\n' "$prompt" \
  | sed -n 's/^[0-9][0-9]*\. [^`]*`\(git loopx [^`]*\)`.*/\1/p' \
  | sed -e 's/<what changed>/did the work/' -e 's/ --artifact <commit>//' \
        -e 's/<proof>/tests pass/' -e 's/ \[--next "<follow-up>" | --no-follow-up\]/ --no-follow-up/' > .git/fake-agent-commands
while IFS= read -r command; do
  echo "fake agent: $command" >&2
  eval "$command"
done < .git/fake-agent-commands
"#;

fn setup(env: &TestEnv, todos: usize) -> (PathBuf, PathBuf) {
    let repo = env.state_repo("r");
    for i in 1..=todos {
        env.add_todo(&repo, &format!("Task {i}"));
    }
    let agent = env.path("fake-agent");
    env.write_script(&agent, FAKE_AGENT);
    (repo, agent)
}

fn run_loop(env: &TestEnv, repo: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--agent", "agent-a", "run"];
    all.extend_from_slice(args);
    env.loopx(repo, &all)
}

fn turn_lines(stdout: &str) -> Vec<&str> {
    stdout.lines().filter(|l| l.starts_with("turn ")).collect()
}

fn done_count(env: &TestEnv, repo: &Path) -> u64 {
    env.loopx(repo, &["--json", "status"]).success().json()["counts"]["done"]
        .as_u64()
        .unwrap()
}

fn spent(env: &TestEnv, repo: &Path) -> u64 {
    env.loopx(repo, &["--json", "quota", "show"])
        .success()
        .json()["quota"]["spent_slots"]
        .as_u64()
        .unwrap_or_else(|| panic!("quota show has quota.spent_slots"))
}

/// Done when 6: `run --until-idle` completes a 3-todo goal, one line a turn.
#[test]
fn run_until_idle_completes_a_three_todo_goal() {
    let env = TestEnv::new();
    let (repo, agent) = setup(&env, 3);
    let out = run_loop(
        &env,
        &repo,
        &["--cmd", agent.to_str().unwrap(), "--until-idle"],
    )
    .success();
    let lines = turn_lines(&out.stdout);
    assert_eq!(lines.len(), 3, "one line per turn:\n{}", out.stdout);
    for line in &lines {
        assert!(line.contains("agent-a-run-"), "{line}");
        assert!(line.contains("normal_run"), "{line}");
        assert!(line.contains("agent: exit 0"), "{line}");
        assert!(line.contains("writeback: yes"), "{line}");
        assert!(line.ends_with("next: now"), "{line}");
    }
    let last = out.stdout.lines().last().unwrap();
    assert!(
        last.starts_with("stopped after 3 turn(s) run: terminal_no_followup"),
        "{}",
        out.stdout
    );
    assert_eq!(out.stdout.lines().count(), 4, "{}", out.stdout);
    assert_eq!(done_count(&env, &repo), 3);
    assert_eq!(spent(&env, &repo), 3, "each turn spent exactly once");
    let receipts = env
        .loopx(&repo, &["--json", "history", "--kind", "turn"])
        .success()
        .json();
    assert_eq!(
        receipts["runs"].as_array().map(Vec::len),
        Some(3),
        "a receipt per turn that ran, none for the last (skip) decision: {receipts}"
    );
    assert!(
        out.stderr
            .contains("fake agent: git loopx --agent agent-a quota spend --turn agent-a-run-"),
        "the agent's output goes to stderr:\n{}",
        out.stderr
    );
}

#[test]
fn run_json_is_one_object_with_every_turn() {
    let env = TestEnv::new();
    let (repo, agent) = setup(&env, 2);
    let out = run_loop(
        &env,
        &repo,
        &["--json", "--cmd", agent.to_str().unwrap(), "--until-idle"],
    )
    .success();
    let j = out.json();
    assert_eq!(j["ok"], true);
    assert_eq!(j["turns_run"], 2);
    assert_eq!(j["end"], "stopped");
    let turns = j["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "two runs and the last decision: {j}");
    assert_eq!(turns[0]["wrote_back"], true);
    assert_eq!(turns[0]["exit_code"], 0);
    assert_eq!(turns[2]["agent_ran"], false);
    let keys: Vec<&str> = turns.iter().map(|t| t["key"].as_str().unwrap()).collect();
    assert!(
        keys[0].ends_with("-1") && keys[1].ends_with("-2"),
        "{keys:?}"
    );
    assert_ne!(keys[0], keys[1]);
}

#[test]
fn run_stops_after_max_turns() {
    let env = TestEnv::new();
    let (repo, agent) = setup(&env, 3);
    let out = run_loop(
        &env,
        &repo,
        &[
            "--cmd",
            agent.to_str().unwrap(),
            "--max-turns",
            "2",
            "--until-idle",
        ],
    )
    .success();
    assert_eq!(turn_lines(&out.stdout).len(), 2, "{}", out.stdout);
    assert!(
        turn_lines(&out.stdout)[1].ends_with("next: end"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("stopped after 2 turn(s) run: --max-turns reached"),
        "{}",
        out.stdout
    );
    assert_eq!(done_count(&env, &repo), 2);
}

#[test]
fn a_failing_agent_is_reported_and_stops_the_loop() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, 1);
    let out = run_loop(
        &env,
        &repo,
        &[
            "--cmd",
            "echo broken >&2; exit 7",
            "--until-idle",
            "--max-failures",
            "2",
        ],
    )
    .failure(1);
    let lines = turn_lines(&out.stdout);
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    for line in &lines {
        assert!(line.contains("agent: exit 7"), "{line}");
        assert!(line.contains("writeback: NONE for this turn"), "{line}");
    }
    assert!(
        out.stderr.contains("agent_failed") || out.stderr.contains("failed 2 turn(s) in a row"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("broken"), "{}", out.stderr);

    let j = run_loop(
        &env,
        &repo,
        &[
            "--json",
            "--cmd",
            "exit 7",
            "--until-idle",
            "--max-failures",
            "1",
        ],
    )
    .failure(1)
    .json();
    assert_eq!(j["ok"], false);
    assert_eq!(j["error"]["code"], "agent_failed");
    assert_eq!(j["turns"][0]["exit_code"], 7);
}

#[test]
fn a_turn_without_a_writeback_is_reported() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, 1);
    let out = run_loop(
        &env,
        &repo,
        &["--cmd", "cat >/dev/null", "--max-turns", "1"],
    )
    .success();
    let lines = turn_lines(&out.stdout);
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert!(lines[0].contains("agent: exit 0"), "{}", lines[0]);
    assert!(
        lines[0].contains("writeback: NONE for this turn"),
        "{}",
        lines[0]
    );
}

#[test]
fn run_needs_an_agent_and_a_command() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, 1);
    let out = env.loopx(&repo, &["run", "--cmd", "true"]).failure(2);
    assert!(out.stderr.contains("needs an agent"), "{}", out.stderr);
    let tip = env.tip(&repo);
    env.loopx(&repo, &["--agent", "agent-a", "run", "--cmd", " "])
        .failure(2);
    env.loopx(
        &repo,
        &[
            "--agent",
            "agent-a",
            "run",
            "--cmd",
            "true",
            "--max-turns",
            "0",
        ],
    )
    .failure(2);
    assert_eq!(env.tip(&repo), tip, "a refused run writes nothing");
    let bare = env.repo("no-state");
    let out = run_loop(&env, &bare, &["--cmd", "touch ran"]).failure(3);
    assert!(out.stderr.contains("state_missing"), "{}", out.stderr);
    assert!(!bare.join("ran").exists());
}

#[test]
fn a_stopped_goal_ends_the_loop_without_running_the_agent() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, 1);
    env.loopx(&repo, &["goal", "stop"]).success();
    // Not --until-idle: a stopped goal ends the loop by itself.
    let out = run_loop(&env, &repo, &["--cmd", "touch ran"]).success();
    assert!(
        out.stdout
            .starts_with("stopped after 0 turn(s) run: quota_skip"),
        "{}",
        out.stdout
    );
    assert!(!repo.join("ran").exists(), "the agent ran");
}

/// Spawns `run`, returning the child and a reader of its stdout lines.
fn spawn_loop(
    env: &TestEnv,
    repo: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStdout>,
) {
    let mut cmd = env.loopx_cmd(repo);
    cmd.args(["--agent", "agent-a", "run"]).args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

fn signal(env: &TestEnv, signal: &str, pid: u32) {
    let status = env
        .command(Path::new("kill"), &env.path(""))
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Polls for `path` (the fake agent's "I am running" mark), at most a minute.
fn wait_for(path: &Path) {
    for _ in 0..1200 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} never appeared", path.display());
}

/// SIGTERM while the agent works: its turn finishes and is recorded whole,
/// no other turn starts, and the loop exits 130 with a last line.
#[test]
fn sigterm_during_a_turn_lets_it_finish_then_ends_the_loop() {
    let env = TestEnv::new();
    let (repo, agent) = setup(&env, 3);
    let started = env.path("started");
    let go = env.path("go");
    let before = format!(
        "touch '{}'; while [ ! -f '{}' ]; do sleep 0.05; done",
        started.display(),
        go.display()
    );
    let (mut child, stdout) = spawn_loop(
        &env,
        &repo,
        &["--cmd", agent.to_str().unwrap(), "--until-idle"],
        &[("FAKE_BEFORE", &before)],
    );
    wait_for(&started);
    signal(&env, "-TERM", child.id());
    std::fs::write(&go, "").unwrap();
    let lines: Vec<String> = stdout.lines().map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{lines:?}");
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("writeback: yes"), "{lines:?}");
    assert!(lines[0].ends_with("next: end"), "{lines:?}");
    assert_eq!(lines[1], "interrupted after 1 turn(s) run");

    // The interrupted turn is whole; no other turn began.
    assert_eq!(done_count(&env, &repo), 1);
    assert_eq!(spent(&env, &repo), 1);
    let turns = env
        .loopx(&repo, &["--json", "history", "--kind", "turn"])
        .success()
        .json();
    assert_eq!(turns["runs"].as_array().map(Vec::len), Some(1), "{turns}");
    let refs = repo.join(".git/refs/heads");
    assert!(!refs.join("loopx-state.lock").exists());
    env.fsck(&repo, &[]);
}

/// SIGINT while the loop waits for the next decision cuts the wait short.
#[test]
fn sigint_wakes_the_wait_between_turns() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, 1);
    env.loopx(&repo, &["gate", "add", "Ship it?"]).success();
    let tip = env.tip(&repo);
    let (mut child, mut stdout) = spawn_loop(&env, &repo, &["--cmd", "true"], &[]);
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("operator_gate_notify"), "{first}");
    assert!(first.contains("agent: not run"), "{first}");
    assert!(first.trim_end().ends_with("next: in 1800s"), "{first}");
    signal(&env, "-INT", child.id());
    let rest: Vec<String> = stdout.lines().map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert_eq!(rest, ["interrupted after 0 turn(s) run"]);
    assert_eq!(env.tip(&repo), tip, "a wait writes nothing");
}

/// Ctrl-C typed at a terminal (util-linux `script` gives the loop one)
/// while the agent works: the agent, in a process group of its own, gets it
/// from the loop, and `git loopx run` ends at once with 130 — also through
/// git's `git loopx` dispatcher, which passes the signal on and then dies
/// of it — and no error from git. (A dispatcher started with SIGINT
/// ignored, as a script's background job is, reaps git-loopx in its signal
/// handler and then fails its own wait: `error: waitpid for git-loopx
/// failed`, exit 128. That is git's, whatever git-loopx does; a shell at a
/// terminal starts its jobs with SIGINT at its default, as `env` does here.)
#[test]
fn ctrl_c_at_a_terminal_ends_the_agent_and_the_loop_with_130() {
    use std::io::Write as _;
    let env = TestEnv::new();
    let (repo, _) = setup(&env, 1);
    for (i, program) in ["git loopx", "git-loopx"].iter().enumerate() {
        let started = env.path(&format!("started-{i}"));
        let agent = format!("touch '{}'; sleep 60", started.display());
        let line = format!(
            "exec env --default-signal=INT {program} --agent agent-a run --cmd \"{agent}\""
        );
        let mut cmd = env.command(Path::new("script"), &repo);
        cmd.args(["-qec", &line, "/dev/null"])
            .env("TERM", "dumb")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return crate::require::skip(
                    "LOOPX_REQUIRE_SCRIPT",
                    "no `script` program (util-linux): Ctrl-C at a terminal not checked here",
                );
            }
            Err(e) => panic!("script: {e}"),
        };
        wait_for(&started);
        let begun = std::time::Instant::now();
        let mut tty = child.stdin.take().unwrap();
        tty.write_all(b"\x03").unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            begun.elapsed() < std::time::Duration::from_secs(30),
            "{program}: the agent was not interrupted: {text}"
        );
        assert_eq!(out.status.code(), Some(130), "{program}: {text}");
        assert!(
            text.contains("agent: killed by signal 2"),
            "{program}: {text}"
        );
        assert!(
            text.contains("interrupted after 1 turn(s) run"),
            "{program}: {text}"
        );
        assert!(
            !text.contains("error: ") && !text.contains("fatal: "),
            "{program}: an error from git: {text}"
        );
    }
}

/// Whether process `pid` is alive (a zombie is not), from /proc.
pub(crate) fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// An agent turn past --turn-timeout is stopped with every process it
/// started — one that ignores SIGTERM is killed after the grace period —
/// and counts as a failed turn.
#[test]
fn turn_timeout_stops_the_agent_and_its_whole_process_group() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, 1);
    let pids = env.path("pids");
    // The shell, a child in the background, and one that ignores SIGTERM.
    let agent = format!(
        "echo $$ >> '{0}'; sleep 30 & echo $! >> '{0}'; \
         (trap '' TERM; sleep 30) & echo $! >> '{0}'; wait",
        pids.display()
    );
    let begun = std::time::Instant::now();
    let out = run_loop(
        &env,
        &repo,
        &[
            "--cmd",
            &agent,
            "--turn-timeout",
            "1s",
            "--max-failures",
            "1",
        ],
    )
    .failure(1);
    assert!(
        begun.elapsed() < std::time::Duration::from_secs(20),
        "the turn was not stopped at its timeout: {:?}",
        begun.elapsed()
    );
    let lines = turn_lines(&out.stdout);
    assert_eq!(lines.len(), 1, "{}", out.stdout);
    assert!(
        lines[0].contains("agent: stopped at --turn-timeout  writeback: NONE for this turn"),
        "{}",
        lines[0]
    );
    assert!(out.stderr.contains("agent_failed"), "{}", out.stderr);
    let pids = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(pids.lines().count(), 3, "{pids}");
    for pid in pids.lines() {
        // SIGKILL is sent by the time `run` returns; a loaded machine may
        // take a moment to schedule the death (a watchdog, not a timing
        // assertion: left alone, these processes sleep for 30 s).
        let sent = std::time::Instant::now();
        while alive(pid) && sent.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!alive(pid), "process {pid} outlived its turn");
    }

    let j = run_loop(
        &env,
        &repo,
        &[
            "--json",
            "--cmd",
            "sleep 30",
            "--turn-timeout",
            "1",
            "--max-failures",
            "1",
        ],
    )
    .failure(1)
    .json();
    assert_eq!(j["turns"][0]["timed_out"], true, "{j}");
    assert_eq!(j["error"]["code"], "agent_failed", "{j}");
}

/// `agent`'s entry in `status --json`'s `agents`, at `now`.
pub fn health(env: &TestEnv, repo: &Path, now: &str, agent: &str) -> serde_json::Value {
    let status = env
        .loopx_at(repo, now, &["--json", "status"])
        .success()
        .json();
    let agents = status["agents"].as_array().expect("status has agents");
    let found = agents.iter().find(|a| a["id"] == agent);
    found
        .unwrap_or_else(|| panic!("no {agent} in {status}"))
        .clone()
}

/// Item 13: an agent whose `run` turns keep failing, or whose lease ran
/// out with no writeback, is not healthy in `status`, text and JSON, until
/// a turn works.
#[test]
fn failing_turns_and_expired_leases_show_in_status() {
    let env = TestEnv::new();
    let (repo, agent) = setup(&env, 2);
    let args = ["--cmd", "exit 7", "--until-idle", "--max-failures", "3"];
    run_loop(&env, &repo, &args).failure(1);
    let a = health(&env, &repo, crate::env::NOW, "agent-a");
    assert_eq!(a["consecutive_failures"], 3, "{a}");
    assert_eq!(a["healthy"], false, "{a}");
    assert_eq!(a["last_failure"]["exit_code"], 7, "{a}");
    assert_eq!(a["last_failure"]["wrote_back"], false, "{a}");

    // agent-b takes the other todo for 30m and writes nothing back.
    let todos = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    let other = todos["todos"][1]["id"].as_str().unwrap().to_owned();
    env.loopx(
        &repo,
        &[
            "--agent", "agent-b", "todo", "claim", &other, "--ttl", "30m",
        ],
    )
    .success();
    let later = "2026-12-02T11:00:00Z";
    let b = health(&env, &repo, later, "agent-b");
    assert_eq!(b["expired_leases"], serde_json::json!([other]), "{b}");
    assert_eq!(b["healthy"], false, "{b}");
    assert_eq!(
        health(&env, &repo, crate::env::NOW, "agent-b")["healthy"],
        true
    );
    let text = env.loopx_at(&repo, later, &["status"]).success().stdout;
    let failing = text.split("\nAgents failing:\n").nth(1).expect(&text);
    let mut lines = failing.lines();
    assert!(
        lines.next().unwrap().starts_with(
            "  agent-a: 3 `run` turn(s) failed in a row (the last: exit 7, no writeback, turn agent-a-run-"
        ),
        "{text}"
    );
    assert_eq!(
        lines.next().unwrap(),
        format!("  agent-b: lease expired with no writeback on {other}"),
        "{text}"
    );

    // A turn that works clears the failures.
    run_loop(
        &env,
        &repo,
        &["--cmd", agent.to_str().unwrap(), "--max-turns", "1"],
    )
    .success();
    let a = health(&env, &repo, crate::env::NOW, "agent-a");
    assert_eq!(a["consecutive_failures"], 0, "{a}");
    assert_eq!(a["healthy"], true, "{a}");
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(!text.contains("Agents failing"), "{text}");
}
