//! `git loopx run` against an agent that escapes its turn (issue 47, item
//! 12): a child started with `setsid` leaves the turn's process group, and
//! a terminal that hangs up sends SIGHUP to `run`, not to the agent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::{Run, TestEnv};
use crate::run::alive;

/// Processes a test started outside any group it controls, one pid a
/// line: killed when the test ends, whatever happened.
struct Strays(Vec<PathBuf>);

impl Drop for Strays {
    fn drop(&mut self) {
        for file in &self.0 {
            for pid in std::fs::read_to_string(file).unwrap_or_default().lines() {
                let _ = Command::new("kill")
                    .args(["-KILL", pid.trim()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

/// Polls for `path`, at most a minute.
fn wait_for(path: &Path) {
    let begun = Instant::now();
    while !path.exists() || std::fs::read_to_string(path).unwrap().trim().is_empty() {
        assert!(
            begun.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `child`, failing the test (the child killed first) after a
/// minute.
fn wait_bounded(child: &mut std::process::Child) -> std::process::ExitStatus {
    let begun = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if begun.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("git loopx run did not end within a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is gone within ten seconds (a watchdog, not a timing
/// assertion: left alone, the test's processes sleep for a minute).
fn ends(pid: &str) -> bool {
    let begun = Instant::now();
    while alive(pid) && begun.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

/// `run --cmd agent --turn-timeout 1s --max-failures 1`, failing the test
/// after a minute.
fn run_bounded(env: &TestEnv, repo: &Path, agent: &str) -> Run {
    let mut cmd = env.loopx_cmd(repo);
    cmd.args(["--agent", "agent-a", "run", "--cmd", agent])
        .args(["--turn-timeout", "1s", "--max-failures", "1"]);
    crate::notify_faults::bounded(cmd, Duration::from_secs(60))
}

fn history_summaries(env: &TestEnv, repo: &Path) -> Vec<String> {
    let j = env
        .loopx(repo, &["--json", "history", "--kind", "writeback"])
        .success()
        .json();
    j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The turn claims its todo, then starts a child in a session of its own
/// with `LOOPX_TURN` cleared (so nothing can find it by its environment)
/// and sleeps past --turn-timeout. Once `run` stopped the turn, the child
/// writes back naming the turn: refused, as is any write from a process
/// whose `LOOPX_TURN` names the stopped turn (before, both were taken,
/// with the turn's lease).
#[test]
fn a_process_that_escaped_a_stopped_turn_cannot_write_for_it() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "Task");
    let (escaped, go, rc, turn) = (
        env.path("escaped"),
        env.path("go"),
        env.path("rc"),
        env.path("turn"),
    );
    let _strays = Strays(vec![escaped.clone()]);
    let child = format!(
        "echo $$ > '{escaped}'; while [ ! -f '{go}' ]; do sleep 0.05; done; \
         git loopx --agent agent-a writeback --todo {todo} --turn \"$0\" \
           --outcome outcome_progress --summary late; echo $? > '{rc}'",
        escaped = escaped.display(),
        go = go.display(),
        rc = rc.display(),
    );
    let agent = format!(
        "git loopx --agent agent-a todo claim {todo} >&2; echo \"$LOOPX_TURN\" > '{turn}'; \
         env -u LOOPX_TURN setsid sh -c '{}' \"$LOOPX_TURN\" >/dev/null 2>&1 & sleep 60",
        child.replace('\'', "'\\''"),
        turn = turn.display(),
    );
    let out = run_bounded(&env, &repo, &agent).failure(1);
    assert!(
        out.stdout.contains("stopped at --turn-timeout"),
        "{}",
        out.stdout
    );
    wait_for(&escaped);
    std::fs::write(&go, "").unwrap();
    wait_for(&rc);
    let code = std::fs::read_to_string(&rc).unwrap();
    assert_ne!(
        code.trim(),
        "0",
        "the escaped child wrote back for the stopped turn"
    );
    assert!(
        !history_summaries(&env, &repo).contains(&"late".to_owned()),
        "a writeback of the stopped turn was recorded"
    );

    let key = std::fs::read_to_string(&turn).unwrap();
    let done = env
        .loopx_cmd(&repo)
        .env("LOOPX_TURN", key.trim())
        .args([
            "--agent",
            "agent-a",
            "todo",
            "done",
            &todo,
            "--evidence",
            "late",
            "--no-follow-up",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        !done.status.success(),
        "a write of the stopped turn was taken"
    );
    assert!(stderr.contains("is over"), "{stderr}");
}

/// A turn stopped at --turn-timeout takes with it the child it started in
/// a session of its own (`setsid`): on Linux, every process carrying the
/// turn's `LOOPX_TURN` is killed (before, it slept on).
#[test]
fn a_stopped_turns_escaped_child_is_stopped_with_it() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "Task");
    let escaped = env.path("escaped");
    let _strays = Strays(vec![escaped.clone()]);
    let agent = format!(
        "setsid sh -c 'echo $$ > \"{}\"; exec sleep 60' >/dev/null 2>&1 & sleep 60",
        escaped.display()
    );
    run_bounded(&env, &repo, &agent).failure(1);
    wait_for(&escaped);
    let pid = std::fs::read_to_string(&escaped).unwrap();
    assert!(
        ends(pid.trim()),
        "the escaped child {pid} outlived its turn"
    );
}

/// SIGHUP to `run` (its terminal hung up) while the agent works: the
/// agent's process group is stopped, and `run` ends as interrupted (130).
/// Before, `run` died of the signal and the agent, in a group of its own
/// that the terminal does not signal, ran on orphaned.
#[test]
fn sighup_of_run_stops_the_agent_before_it_ends() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "Task");
    let (pids, started) = (env.path("pids"), env.path("started"));
    let _strays = Strays(vec![pids.clone(), env.path("run")]);
    let agent = format!(
        "sleep 60 & echo $! >> '{pids}'; echo $$ >> '{pids}'; echo started > '{started}'; wait",
        pids = pids.display(),
        started = started.display()
    );
    let mut run = env
        .loopx_cmd(&repo)
        .args(["--agent", "agent-a", "run", "--cmd", &agent])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::fs::write(env.path("run"), run.id().to_string()).unwrap();
    wait_for(&started);
    let sent = Command::new("kill")
        .args(["-HUP", &run.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = wait_bounded(&mut run);
    std::fs::remove_file(env.path("run")).unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        assert!(ends(pid), "agent process {pid} outlived `run`");
    }
}
