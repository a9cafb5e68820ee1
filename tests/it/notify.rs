//! Telling the person (issue 33): a gate opened, an agent failing its
//! turns and a throttled goal each reach the notify command and a webhook
//! (a real HTTP receiver on 127.0.0.1, posted to by curl) exactly once,
//! across restarts of the watcher; a receiver that is down gets its events
//! once it is back, and `doctor` shows what waits meanwhile.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::env::TestEnv;

/// An HTTP receiver on 127.0.0.1:`port`, keeping each request's body.
struct Receiver {
    bodies: Arc<Mutex<Vec<Value>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Receiver {
    fn start(port: u16) -> Receiver {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port is free again");
        listener.set_nonblocking(true).unwrap();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (kept, stopped) = (bodies.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap();
                        }
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                kept.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                let mut stream = reader.into_inner();
                stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .unwrap();
            }
        });
        Receiver {
            bodies,
            stop,
            thread: Some(thread),
        }
    }

    fn kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self
            .bodies
            .lock()
            .unwrap()
            .iter()
            .map(|b| b["kind"].as_str().unwrap_or_default().to_owned())
            .collect();
        kinds.sort();
        kinds
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

/// The events the notify command was given, one JSON object a line.
fn commanded(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut kinds: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    kinds.sort();
    kinds
}

#[test]
fn each_event_reaches_the_command_and_the_webhook_once_across_restarts_and_an_outage() {
    let mut env = TestEnv::new();
    let repo = env.state_repo("repo");
    // An agent failing its turns (three in a row), on a todo of its own.
    env.add_todo(&repo, "Task");
    env.loopx(
        &repo,
        &[
            "--agent",
            "agent-a",
            "run",
            "--cmd",
            "exit 7",
            "--until-idle",
        ],
    )
    .failure(1);
    // A throttled goal: one slot, spent.
    env.loopx(&repo, &["goal", "set", "--allowed-slots", "1"])
        .success();
    let todo = env.add_todo(&repo, "Nightly build");
    let as_b = |args: &[&str]| {
        let mut all = vec!["--agent", "agent-b"];
        all.extend_from_slice(args);
        env.loopx(&repo, &all).success();
    };
    as_b(&["todo", "claim", &todo]);
    as_b(&[
        "writeback",
        "--todo",
        &todo,
        "--outcome",
        "outcome_progress",
        "--summary",
        "green",
    ]);
    as_b(&["quota", "spend"]);
    // A gate (opened last: it holds the agents' writes above).
    env.loopx(&repo, &["gate", "add", "Publish under MIT?"])
        .success();

    let log = env.path("events.jsonl");
    let command = format!("cat >> '{}' && echo >> '{}'", log.display(), log.display());
    env.git(&repo, &["config", "loopx.notify.command", &command]);
    // The receiver is down: its port is free, nothing listens.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/hook");
    env.git(&repo, &["config", "loopx.notify.webhook", &url]);
    let want = ["agent_failing", "gate_opened", "quota_throttled"].map(String::from);

    let first = env
        .loopx(&repo, &["--json", "watch", "--once"])
        .success()
        .json();
    assert_eq!(commanded(&log), want, "{first}");
    assert_eq!(first["failed"].as_array().unwrap().len(), 3, "{first}");
    assert_eq!(first["pending"], 3, "{first}");
    let doctor = env.loopx(&repo, &["doctor"]).stdout;
    assert!(
        doctor.contains("3 notification(s) not delivered yet"),
        "{doctor}"
    );

    // A restart before the retry is due sends nothing, to anyone.
    let again = env
        .loopx(&repo, &["--json", "watch", "--once"])
        .success()
        .json();
    assert_eq!(again["delivered"], serde_json::json!([]), "{again}");
    assert_eq!(commanded(&log), want, "the command got each once");

    // The receiver comes back; the retry is due a minute later.
    let receiver = Receiver::start(port);
    env.now = "2026-12-02T10:01:00Z".into();
    let later = env
        .loopx(&repo, &["--json", "watch", "--once"])
        .success()
        .json();
    assert_eq!(later["pending"], 0, "{later}");
    assert_eq!(
        receiver.kinds(),
        want,
        "the webhook got each once it was back"
    );
    let gate = receiver
        .bodies
        .lock()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == "gate_opened")
        .cloned()
        .unwrap();
    assert_eq!(gate["text"], "Publish under MIT?");
    assert_eq!(gate["goal"], "main");

    // And never again, whatever restarts.
    for _ in 0..2 {
        env.loopx(&repo, &["watch", "--once"]).success();
    }
    assert_eq!(receiver.kinds(), want);
    assert_eq!(commanded(&log), want);
    let doctor = env.loopx(&repo, &["doctor"]).stdout;
    assert!(!doctor.contains("not delivered"), "{doctor}");

    // A new gate is a new event, told once.
    env.loopx(&repo, &["gate", "add", "Tag the release?"])
        .success();
    env.loopx(&repo, &["watch", "--once"]).success();
    env.loopx(&repo, &["watch", "--once"]).success();
    assert_eq!(receiver.bodies.lock().unwrap().len(), 4);
    assert_eq!(commanded(&log).len(), 4);

    // Slack's incoming-webhook form: one `text`.
    env.git(&repo, &["config", "loopx.notify.webhookFormat", "slack"]);
    env.loopx(&repo, &["gate", "add", "Ship it?"]).success();
    env.loopx(&repo, &["watch", "--once"]).success();
    let last = receiver.bodies.lock().unwrap().last().cloned().unwrap();
    let text = last["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("git loopx: a gate waits for you in ") && text.ends_with(": Ship it?"),
        "{last}"
    );
    assert_eq!(last.as_object().unwrap().len(), 1, "{last}");

    // Agent text is escaped as Slack asks (`&`, `<`, `>`): no channel
    // ping, no hidden link (issue 46, item 10).
    env.loopx(
        &repo,
        &["gate", "add", "Ping <!channel> & see <http://x|the docs>?"],
    )
    .success();
    env.loopx(&repo, &["watch", "--once"]).success();
    let last = receiver.bodies.lock().unwrap().last().cloned().unwrap();
    let text = last["text"].as_str().unwrap_or_default();
    assert!(
        text.ends_with(": Ping &lt;!channel&gt; &amp; see &lt;http://x|the docs&gt;?"),
        "{last}"
    );
}

/// The notify command's input is one JSON line: a sink that appends it
/// to a file keeps one event a line (issue 46, item 11).
#[test]
fn the_notify_command_gets_one_json_line_an_event() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["gate", "add", "Publish?"]).success();
    env.loopx(&repo, &["gate", "add", "Tag?"]).success();
    let log = env.path("events.jsonl");
    env.git(
        &repo,
        &[
            "config",
            "loopx.notify.command",
            &format!("cat >> '{}'", log.display()),
        ],
    );
    env.loopx(&repo, &["watch", "--once"]).success();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.ends_with('\n'), "{text:?}");
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events.len(), 2, "{text}");
}

/// Issue 46, item 11: where there is no `notify-send` but macOS's
/// `osascript` (here a stand-in that records its arguments: this machine
/// has no macOS), the desktop notification goes through it, the event's
/// text an argument of the script, never its source.
#[test]
fn a_desktop_without_notify_send_is_told_through_osascript() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["gate", "add", "Publish \" & do shell script \"x"])
        .success();
    env.git(&repo, &["config", "loopx.notify.desktop", "true"]);
    let bin = env.path("mac-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let args = env.path("osascript-args");
    env.write_script(
        &bin.join("osascript"),
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '{}'\n",
            args.display()
        ),
    );
    // git, sh and the rest from the system; no notify-send anywhere on it.
    let system: Vec<std::path::PathBuf> = ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(std::path::PathBuf::from)
        .filter(|d| !d.join("notify-send").exists())
        .collect();
    let path = std::env::join_paths(std::iter::once(bin.clone()).chain(system)).unwrap();
    let out = env
        .loopx_cmd(&repo)
        .env("PATH", path)
        .args(["watch", "--once"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = std::fs::read_to_string(&args).unwrap();
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines[..6],
        [
            "-e",
            "on run argv",
            "-e",
            "display notification (item 1 of argv) with title \"git loopx\"",
            "-e",
            "end run"
        ],
        "{said}"
    );
    assert_eq!(lines[6], "--");
    assert!(lines[7].contains("Publish \" & do shell script"), "{said}");
}

/// Issue 46, item 5: a repository whose state broke is told once through
/// its own sinks (by `watch --all-repos` as by `watch`), naming the commit
/// and what to run; what was told before is not told again once it is
/// mended.
#[test]
fn a_repository_whose_state_broke_is_told_once_and_its_events_are_kept() {
    let env = TestEnv::new();
    let repo = env.state_repo("one");
    env.loopx(&repo, &["gate", "add", "Ship it?"]).success();
    let log = env.path("one.jsonl");
    env.git(
        &repo,
        &[
            "config",
            "loopx.notify.command",
            &format!("cat >> '{}'", log.display()),
        ],
    );
    let home = env.path("home");
    env.loopx(&home, &["watch", "--all-repos", "--once"])
        .success();
    assert_eq!(commanded(&log), ["gate_opened"]);
    let good = env.tip(&repo);
    let bad = env.commit_state_file(&repo, "loopx.yaml", "format: [unclosed\n");
    let out = env
        .loopx(&home, &["watch", "--all-repos", "--once"])
        .success();
    assert!(
        out.stdout.contains("the state cannot be read in"),
        "{}",
        out.stdout
    );
    env.loopx(&home, &["watch", "--all-repos", "--once"])
        .success();
    assert_eq!(
        commanded(&log),
        ["gate_opened", "state_broken"],
        "told once"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let broken: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["kind"] == "state_broken")
        .unwrap();
    assert_eq!(broken["id"], bad[..10], "{broken}");
    assert!(
        broken["text"]
            .as_str()
            .unwrap()
            .contains("git loopx doctor"),
        "{broken}"
    );
    // Mended: the gate, told before, is not told again.
    env.git(&repo, &["update-ref", "refs/heads/loopx-state", &good]);
    env.loopx(&home, &["watch", "--all-repos", "--once"])
        .success();
    assert_eq!(commanded(&log), ["gate_opened", "state_broken"]);
}

/// `watch --all-repos` looks at every repository in the person's list, each
/// by its own git config, from anywhere; one that is gone is said so.
#[test]
fn watch_all_repos_tells_each_repositorys_events_by_its_own_config() {
    let env = TestEnv::new();
    let mut logs = Vec::new();
    for name in ["one", "two"] {
        let repo = env.state_repo(name);
        env.loopx(&repo, &["gate", "add", &format!("Ship {name}?")])
            .success();
        let log = env.path(&format!("{name}.jsonl"));
        let command = format!("cat >> '{}' && echo >> '{}'", log.display(), log.display());
        env.git(&repo, &["config", "loopx.notify.command", &command]);
        logs.push(log);
    }
    let gone = env.state_repo("gone");
    std::fs::remove_dir_all(&gone).unwrap();
    let home = env.path("home");
    let out = env
        .loopx(&home, &["watch", "--all-repos", "--once"])
        .success();
    assert!(out.stdout.contains("gone"), "{}", out.stdout);
    env.loopx(&home, &["watch", "--all-repos", "--once"])
        .success();
    for log in &logs {
        assert_eq!(commanded(log), ["gate_opened"], "{}", log.display());
    }
}

/// `serve` tells the person too, while it runs: it looks at once when it
/// starts, then every 30 s.
#[cfg(feature = "serve")]
#[test]
fn serve_tells_the_person_while_it_runs() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["gate", "add", "Publish under MIT?"])
        .success();
    let log = env.path("events.jsonl");
    let command = format!("cat >> '{}' && echo >> '{}'", log.display(), log.display());
    env.git(&repo, &["config", "loopx.notify.command", &command]);
    let _serving = crate::serve::Serving::start(&env, &repo, &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while commanded(&log).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(commanded(&log), ["gate_opened"]);
    // The record is shared with `watch`: it has nothing left to send.
    let look = env
        .loopx(&repo, &["--json", "watch", "--once"])
        .success()
        .json();
    assert_eq!(look["new"], serde_json::json!([]), "{look}");
    assert_eq!(commanded(&log), ["gate_opened"]);
}

/// Issue 45: what guards the person is told too — an attempt on their
/// authority refused on this host, an answer to a gate that does not count
/// under gate_signers, and a runtime whose hook files no longer govern it.
#[test]
fn watch_tells_refused_attempts_ignored_answers_and_governance_lost() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let gate = env
        .loopx(&repo, &["--json", "gate", "add", "Publish under MIT?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    crate::signed_answers::ssh_key(&env, "id_ed25519", "");
    env.loopx(&repo, &["gate", "signers", "setup", "--allow-unprotected"])
        .success();
    env.loopx(
        &repo,
        &["--agent", "a1", "gate", "resolve", &gate, "--approve"],
    )
    .failure(1);
    crate::gates::hand_resolve(&env, &repo, &gate);
    env.loopx(
        &repo,
        &["hooks", "install", "--claude-code", "--agent", "a1"],
    )
    .success();
    std::fs::write(repo.join(".claude/settings.json"), "{}\n").unwrap();

    let log = env.path("events.jsonl");
    let command = format!("cat >> '{}' && echo >> '{}'", log.display(), log.display());
    env.git(&repo, &["config", "loopx.notify.command", &command]);
    env.loopx(&repo, &["watch", "--once"]).success();
    let kinds = commanded(&log);
    for kind in [
        "answer_ignored",
        "gate_opened",
        "governance_lost",
        "refused",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "no {kind} event: {kinds:?}"
        );
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("an answer not made by you was ignored"),
        "{text}"
    );
    // Told once: the next look sends nothing new.
    env.loopx(&repo, &["watch", "--once"]).success();
    assert_eq!(commanded(&log), kinds);
}

/// Issue 46, item 9: the shipped systemd user unit, with its specifiers
/// expanded as systemd documents them (`%f`: `/` and the unescaped
/// instance; `%I`: the unescaped instance; `%h`: the home directory; the
/// instance name made by `systemd-escape --path`, as the unit's comment
/// says), run with only the environment a user unit gets — systemd's PATH
/// for user units unless the unit sets one — and `git-loopx` where `cargo
/// install` puts it. It must watch the repository, not fail.
#[test]
fn the_shipped_systemd_unit_runs_watch_in_the_repository() {
    let env = TestEnv::new();
    let repo = env.state_repo("project");
    let unit = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/systemd/git-loopx-watch.service"),
    )
    .unwrap();
    let escape = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("systemd-escape")
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).unwrap().trim().to_owned())
    };
    let Some(instance) = escape(&["--path", repo.to_str().unwrap()]) else {
        crate::require::skip(
            "LOOPX_REQUIRE_SYSTEMD",
            "no systemd-escape to name the unit's instance",
        );
        return;
    };
    let unescaped = escape(&["--unescape", &instance]).unwrap();
    let home = env.path("home");
    let bin = home.join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(crate::env::loopx_bin(), bin.join("git-loopx")).unwrap();
    let expand = |s: &str| {
        s.replace("%f", &format!("/{unescaped}"))
            .replace("%I", &unescaped)
            .replace("%h", home.to_str().unwrap())
    };
    let value = |key: &str| -> Vec<String> {
        unit.lines()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(expand)
            .collect()
    };
    let exec = value("ExecStart");
    assert_eq!(exec.len(), 1, "{unit}");
    // systemd's PATH for a user unit's processes, unless the unit sets one.
    let mut path = "/usr/local/bin:/usr/bin:/bin".to_owned();
    for e in value("Environment") {
        if let Some(p) = e.trim_matches('"').strip_prefix("PATH=") {
            path = p.to_owned();
        }
    }
    // Once, rather than every 30 s: the same command, made to end.
    let words: Vec<&str> = exec[0].split_whitespace().chain(["--once"]).collect();
    let out = std::process::Command::new(words[0])
        .args(&words[1..])
        .env_clear()
        .env("PATH", &path)
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LOOPX_NOW", "2026-12-02T10:00:00Z")
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{exec:?}: {e}"));
    assert!(
        out.status.success(),
        "{exec:?} with PATH={path}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
