//! Notifications under faults (issue 47, item 4): a watcher killed in the
//! middle of a look, a notify command that leaves processes behind, a
//! burst of events, and a record of what was sent that cannot be read.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::env::{Run, TestEnv};

/// The processes a test's notify commands wrote to a file, one pid a
/// line: killed when the test ends, whatever happened.
struct Strays(PathBuf);

impl Drop for Strays {
    fn drop(&mut self) {
        for pid in std::fs::read_to_string(&self.0).unwrap_or_default().lines() {
            let _ = Command::new("kill")
                .args(["-KILL", pid.trim()])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Runs `cmd` to its end, or fails the test once `limit` has passed (the
/// process killed and reaped first).
pub(crate) fn bounded(mut cmd: Command, limit: Duration) -> Run {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git-loopx runs");
    // Read on threads: the test must not block on a pipe either.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let begun = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if begun.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("git-loopx did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

fn watch_once(env: &TestEnv, repo: &Path) -> Run {
    let mut cmd = env.loopx_cmd(repo);
    cmd.args(["watch", "--once"]);
    bounded(cmd, Duration::from_secs(60))
}

/// The events the notify command was given, in order.
fn sent(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn gates(env: &TestEnv, repo: &Path, n: usize) {
    for i in 1..=n {
        env.loopx(repo, &["gate", "add", &format!("Question {i}?")])
            .success();
    }
}

fn set_command(env: &TestEnv, repo: &Path, command: &str) {
    env.git(repo, &["config", "loopx.notify.command", command]);
}

/// Polls for `path`, at most a minute.
fn wait_for(path: &Path) {
    let begun = Instant::now();
    while !path.exists() {
        assert!(
            begun.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A watcher SIGKILLed while it delivers the third of five events: the
/// next look sends the third again (it was in flight) and the two after
/// it, never the two that were delivered (the record is written after each
/// event, not once at the end of the look).
#[test]
fn a_watcher_killed_mid_look_sends_again_only_the_event_in_flight() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    gates(&env, &repo, 5);
    let (log, mark, pids) = (env.path("log"), env.path("mark"), env.path("pids"));
    let _strays = Strays(pids.clone());
    set_command(
        &env,
        &repo,
        &format!(
            "cat >> '{log}'; if [ $(wc -l < '{log}') -eq 3 ] && [ ! -f '{mark}' ]; then \
             echo $$ >> '{pids}'; touch '{mark}'; exec sleep 60; fi",
            log = log.display(),
            mark = mark.display(),
            pids = pids.display()
        ),
    );
    let mut watcher = env
        .loopx_cmd(&repo)
        .args(["watch", "--once"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&mark);
    watcher.kill().unwrap();
    watcher.wait().unwrap();
    drop(Strays(pids.clone()));

    watch_once(&env, &repo).success();
    let ids: Vec<String> = sent(&log)
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5, "every gate is told: {ids:?}");
    assert_eq!(
        ids.len(),
        6,
        "only the event in flight is sent twice: {ids:?}"
    );
    assert_eq!(ids[2], ids[3], "the one sent twice was in flight: {ids:?}");
}

/// A notify command that leaves a process in the background holding its
/// standard error (`sleep 100 &`), and one that leaves its session
/// (`setsid`): the look ends with the command, not with what it left
/// (before, it waited on the pipe for 100 s an event), and what the
/// command left in its process group is stopped.
#[test]
fn a_notify_command_that_leaves_processes_behind_does_not_hold_up_the_look() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    gates(&env, &repo, 2);
    let (log, pids, daemons) = (env.path("log"), env.path("pids"), env.path("daemons"));
    let _strays = Strays(pids.clone());
    let _daemons = Strays(daemons.clone());
    set_command(
        &env,
        &repo,
        &format!(
            "cat >> '{log}'; sleep 100 & echo $! >> '{pids}'; \
             setsid sh -c 'echo $$ >> \"{daemons}\"; exec sleep 100' & \
             while [ $(wc -l < '{daemons}' 2>/dev/null || echo 0) -lt $(wc -l < '{log}') ]; do sleep 0.05; done",
            log = log.display(),
            pids = pids.display(),
            daemons = daemons.display()
        ),
    );
    let begun = Instant::now();
    let mut cmd = env.loopx_cmd(&repo);
    cmd.args(["watch", "--once"]);
    bounded(cmd, Duration::from_secs(25)).success();
    assert!(begun.elapsed() < Duration::from_secs(25));
    assert_eq!(sent(&log).len(), 2);
    for pid in std::fs::read_to_string(&pids).unwrap().lines() {
        let stopped = Instant::now();
        while crate::run::alive(pid) && stopped.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !crate::run::alive(pid),
            "process {pid}, left in the command's group, outlived it"
        );
    }
}

/// 25 events due at once: ten are told one by one, the other 15 in one
/// notification naming them; the next look sends nothing again.
#[test]
fn a_burst_of_events_is_told_ten_one_by_one_and_the_rest_in_one() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    gates(&env, &repo, 25);
    let log = env.path("log");
    set_command(&env, &repo, &format!("cat >> '{}'", log.display()));
    watch_once(&env, &repo).success();
    let events = sent(&log);
    assert_eq!(events.len(), 11, "{events:#?}");
    assert!(events[..10].iter().all(|e| e["kind"] == "gate_opened"));
    let more = &events[10];
    assert_eq!(more["kind"], "more_events", "{more}");
    assert_eq!(more["keys"].as_array().map(Vec::len), Some(15), "{more}");
    assert!(
        more["text"]
            .as_str()
            .unwrap()
            .starts_with("15 more event(s) (15 gate_opened)"),
        "{more}"
    );
    watch_once(&env, &repo).success();
    assert_eq!(sent(&log).len(), 11, "nothing is sent twice");
}

/// A record of what was sent cut short: `doctor` says so, and the next
/// look sends one `record_damaged` notification instead of every event
/// again; events after it are told as before.
#[test]
fn a_damaged_record_is_told_once_and_does_not_send_everything_again() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    gates(&env, &repo, 3);
    let log = env.path("log");
    set_command(&env, &repo, &format!("cat >> '{}'", log.display()));
    watch_once(&env, &repo).success();
    assert_eq!(sent(&log).len(), 3);

    let record = repo.join(".git/loopx/notify.json");
    let bytes = std::fs::read(&record).unwrap();
    std::fs::write(&record, &bytes[..bytes.len() / 2]).unwrap();
    let notify_check = |env: &TestEnv| {
        let doctor = env.loopx(&repo, &["--json", "doctor"]).json();
        doctor["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "notify")
            .cloned()
            .unwrap_or_else(|| panic!("doctor has no notify check: {doctor}"))
    };
    let check = notify_check(&env);
    assert_eq!(check["level"], "warn", "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("cannot be read"),
        "{check}"
    );

    let look = watch_once(&env, &repo).success();
    assert!(look.stdout.contains("warning: "), "{}", look.stdout);
    let events = sent(&log);
    assert_eq!(events.len(), 4, "{events:#?}");
    assert_eq!(events[3]["kind"], "record_damaged", "{}", events[3]);
    let check = notify_check(&env);
    assert!(
        check["detail"].as_str().unwrap().contains("set aside"),
        "{check}"
    );

    watch_once(&env, &repo).success();
    assert_eq!(sent(&log).len(), 4, "nothing is sent again");
    gates(&env, &repo, 1);
    watch_once(&env, &repo).success();
    let events = sent(&log);
    assert_eq!(events.len(), 5);
    assert_eq!(events[4]["kind"], "gate_opened");
}
