//! The real agent runtimes under git-loopx: each runtime's own CLI, as
//! installed from its package, run headless with the hooks, settings and
//! permissions `git loopx hooks install --<runtime> --agent A` writes,
//! against a scripted model on 127.0.0.1 (`tests/runtimes/model_server.py`,
//! which speaks the runtime's provider API and replays a fixed agent script).
//! The model is the only stand-in.
//!
//! The agent script of every turn: claim the turn's todo, commit a file,
//! write back, finish the todo, spend, and try to answer the person's gate.
//! The session must complete 3 todos (3 claims, writebacks and spends by
//! the agent, a `Loopx-Todo` trailer on each code commit), be refused the
//! gate, and stop at it.
//!
//! The CLIs come from `LOOPX_RUNTIMES_BIN` (`.ci/run` installs pinned
//! versions there). Without one the test says so and passes, unless
//! `LOOPX_REQUIRE_RUNTIMES=1` (set by `.ci/run`), where it fails
//! (`crate::require`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::env::{Run, TestEnv};

pub const AGENT: &str = "agent-a";

/// The runtime's CLI, or `None` (said on stderr) when it is not installed
/// and not required.
pub fn cli(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("LOOPX_RUNTIMES_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/runtimes/node_modules/.bin")
        });
    let path = dir.join(name);
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "{name} is not installed in {} (`.ci/run` installs the pinned runtimes there; \
         LOOPX_RUNTIMES_BIN names another directory)",
        dir.display()
    );
    crate::require::skip("LOOPX_REQUIRE_RUNTIMES", &why);
    None
}

/// A test environment outside the system's temporary directory: Codex's
/// sandbox lets every command write under /tmp, which would hide what it
/// keeps read-only.
pub fn env() -> TestEnv {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.starts_with(std::env::temp_dir()) {
        // A checkout under /tmp: keep the repositories out of it.
        Path::new("/var/tmp/git-loopx-tests").to_owned()
    } else {
        target.to_owned()
    };
    TestEnv::new_in(&base)
}

/// The scripted model server.
pub struct Model {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Model {
    pub fn start(env: &TestEnv, script: &Value) -> Model {
        Model::start_in(env, "model", script)
    }

    /// A model server keeping its files in `name` under the test's root.
    pub fn start_in(env: &TestEnv, name: &str, script: &Value) -> Model {
        let dir = env.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        let script_path = dir.join("script.json");
        std::fs::write(&script_path, script.to_string()).unwrap();
        let port_file = dir.join("port");
        let log = dir.join("log.jsonl");
        let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runtimes/model_server.py");
        let child = Command::new("python3")
            .arg(server)
            .arg("--script")
            .arg(&script_path)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .expect("python3 runs the model server");
        let start = Instant::now();
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break port;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the model server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        Model { child, port, log }
    }

    /// Every request the runtime made, and the answer, as logged.
    pub fn requests(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fixed agent script: each turn's steps, run with the runtime's shell
/// tool, the todo and turn key read from the turn's prompt. The commands
/// name no agent: the identity must come from what `hooks install` set.
pub fn script(gate: &str) -> Value {
    script_with(gate, "", true)
}

/// [`script`], with more arguments to the code commit (`--trailer …`), and
/// with or without a last try at the gate after shedding the identity the
/// install gave the shell (`LOOPX_AGENT= …`): where the runtime's own
/// permissions refuse that command line before it runs (Claude Code,
/// OpenCode, Gemini CLI), it is left out, since a refusal there ends the
/// headless run.
pub fn script_with(gate: &str, commit: &str, shed_identity: bool) -> Value {
    let mut steps = vec![
        "git loopx todo claim {3}".to_owned(),
        format!("touch {{3}}.txt && git add {{3}}.txt && git commit -q -m 'work on {{3}}'{commit}"),
        "git loopx writeback --todo {3} --turn {1} --outcome outcome_progress --summary 'made {3}.txt' --artifact HEAD".to_owned(),
        "git loopx todo done {3} --evidence '{3}.txt is committed' --no-follow-up".to_owned(),
        "git loopx quota spend --turn {1}".to_owned(),
        format!("git loopx gate resolve {gate} --approve --note 'looks fine to me'"),
    ];
    if shed_identity {
        // The runtime's own marker still tells the agent from the person.
        steps.push(format!(
            "LOOPX_AGENT= LOOPX_RUNTIME= git loopx gate resolve {gate} --approve"
        ));
    }
    steps.extend(scrubbed(gate));
    json!({
        "turns": [{
            "match": "# git-loopx turn (\\S+) for (\\S+).*?## This turn: (todo_[0-9a-f]{12})",
            "steps": steps,
            "final": "Turn {1} done: {3} is finished. The gate is the person's to answer."
        }],
        "default_final": "Nothing to do."
    })
}

/// The agent's tries at acting as the person with its environment scrubbed
/// (issue 45): nothing of the runtime's or the install's markers reaches
/// these commands, only their ancestors tell. Each runtime's test lets the
/// agent run `env` (the person's own rules otherwise allow only what the
/// turn needs), so the tries reach git-loopx.
pub fn scrubbed(gate: &str) -> Vec<String> {
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        crate::env::loopx_bin().parent().unwrap().display()
    );
    vec![
        format!("env -i PATH={path} git loopx gate resolve {gate} --approve"),
        format!(
            "env -u LOOPX_AGENT -u LOOPX_RUNTIME git -c loopx.agent= loopx gate resolve {gate} --approve"
        ),
        format!("env -i PATH={path} git loopx goal done"),
    ]
}

/// A goal of 3 agent todos, and a fourth held by a gate the person must
/// answer. Returns the todos and the gate.
pub fn goal(env: &TestEnv, repo: &Path) -> (Vec<String>, String) {
    env.loopx(repo, &["init", "--goal-text", "Ship the parser"])
        .success();
    env.loopx(repo, &["goal", "set", "--allowed-slots", "20"])
        .success();
    env.loopx(repo, &["agent", "register", AGENT]).success();
    // The person keeps the goal's end for themselves.
    env.loopx(repo, &["goal", "set", "--person-only", "done"])
        .success();
    let todos: Vec<String> = (1..=3)
        .map(|i| env.add_todo(repo, &format!("step {i}")))
        .collect();
    let held = env.add_todo(repo, "deploy to production");
    let gate = env
        .loopx(
            repo,
            &[
                "--json",
                "gate",
                "add",
                "Ship it to production?",
                "--unblocks",
                &held,
            ],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (todos, gate)
}

/// Installs the runtime's integration for [`AGENT`], and the git hooks.
pub fn install(env: &TestEnv, repo: &Path, runtime: &str) {
    env.loopx(
        repo,
        &[
            "hooks",
            "install",
            &format!("--{runtime}"),
            "--git",
            "--agent",
            AGENT,
        ],
    )
    .success();
}

/// The environment every runtime runs in: the test's hermetic one, and a
/// proxy that refuses everything, as a tripwire for outbound traffic.
pub fn command(env: &TestEnv, program: &Path, dir: &Path) -> Command {
    let mut cmd = env.command(program, dir);
    for (k, v) in [
        ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ("HTTP_PROXY", "http://127.0.0.1:9"),
        ("https_proxy", "http://127.0.0.1:9"),
        ("http_proxy", "http://127.0.0.1:9"),
        ("NO_PROXY", "127.0.0.1,localhost"),
        ("no_proxy", "127.0.0.1,localhost"),
    ] {
        cmd.env(k, v);
    }
    // Node finds its own way; the runtimes' launchers are scripts.
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs `cmd`, killing it after `limit`.
pub fn run(mut cmd: Command, limit: Duration) -> Run {
    use std::io::Read as _;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the runtime starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code().unwrap_or(-1);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the runtime did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                o.join().unwrap(),
                e.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Run {
        code,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

/// What every governed session must leave behind: 3 todos done, each
/// claimed, written back on and spent for by the agent; a trailer on each
/// code commit; the gate open, refused to the agent, listed under "Needs
/// you"; and the person's own answer accepted, in their name.
pub fn check_governed(
    env: &TestEnv,
    repo: &Path,
    code_branch: &str,
    todos: &[String],
    gate: &str,
    model: &Model,
) {
    let diag = || format!("model log:\n{}", model.requests());
    let list = env
        .loopx(repo, &["--json", "todo", "list"])
        .success()
        .json();
    for todo in list["todos"].as_array().unwrap() {
        let id = todo["id"].as_str().unwrap();
        if todos.iter().any(|t| t == id) {
            assert_eq!(todo["status"], "done", "{todo}\n{}", diag());
        }
        if id == gate {
            assert_eq!(todo["status"], "open", "the gate stays open: {todo}");
        }
    }
    let runs = env.loopx(repo, &["--json", "history"]).success().json();
    let runs = runs["runs"].as_array().unwrap();
    let by_agent = |kind: &str| {
        runs.iter()
            .filter(|r| r["kind"] == kind && r["agent"] == AGENT)
            .count()
    };
    assert_eq!(by_agent("writeback"), 3, "{runs:#?}\n{}", diag());
    assert_eq!(by_agent("spend"), 3, "{runs:#?}");
    // One spend per turn key, under the key its writeback used, and a
    // turn receipt for each.
    let keys = |kind: &str| {
        let mut k: Vec<&str> = runs
            .iter()
            .filter(|r| r["kind"] == kind && r["agent"] == AGENT)
            .filter_map(|r| r["turn"].as_str())
            .collect();
        k.sort_unstable();
        k
    };
    let spent = keys("spend");
    let mut unique = spent.clone();
    unique.dedup();
    assert_eq!(spent, unique, "a turn spent twice: {runs:#?}");
    assert_eq!(spent, keys("writeback"), "{runs:#?}");
    for key in &spent {
        assert!(keys("turn").contains(key), "no receipt for turn {key}");
    }
    // Each todo was claimed by the agent, in its own commit.
    let claims = env.git(
        repo,
        &["log", "--format=%s", "--grep=^todo claim", "loopx-state"],
    );
    for todo in todos {
        assert!(
            claims
                .lines()
                .any(|l| l.contains(todo) && l.contains(&format!("by {AGENT}"))),
            "no claim of {todo} by {AGENT}:\n{claims}"
        );
    }
    // Each code commit names its todo.
    for todo in todos {
        let body = env.git(
            repo,
            &[
                "log",
                "-1",
                "--format=%B",
                &format!("--grep=work on {todo}"),
                code_branch,
            ],
        );
        assert!(
            body.contains(&format!("Loopx-Todo: {todo}")),
            "commit for {todo} has no trailer:\n{body}"
        );
    }
    // Nothing was done in the person's name.
    let authors = env.git(
        repo,
        &[
            "log",
            "--format=%x01%s%x00%(trailers:key=Loopx-Agent,valueonly,separator=%x2C)",
            "loopx-state",
        ],
    );
    for entry in authors.split('\u{1}').filter(|e| !e.trim().is_empty()) {
        let (subject, agent) = entry.split_once('\0').unwrap_or((entry, ""));
        if subject.starts_with("todo done") || subject.starts_with("goal done") {
            assert_eq!(agent.trim(), AGENT, "{subject}");
        }
    }
    // The agent's try at the gate was refused, and the refusal names no
    // way around it.
    let log = model.requests();
    let at = log
        .find("only a person answers a gate")
        .unwrap_or_else(|| panic!("the gate refusal never reached the model:\n{log}"));
    let refusal = &log[at..(at + 600).min(log.len())];
    if log.contains("LOOPX_AGENT= LOOPX_RUNTIME= git loopx gate resolve") {
        // Without its identity the command was still not the person's.
        assert!(
            log.contains("a command inside"),
            "the identity-less try was not refused as inside a runtime:\n{log}"
        );
    }
    for around in ["without an agent", "LOOPX_AGENT", "no --agent", "unset"] {
        assert!(
            !refusal.contains(around),
            "the refusal teaches a way around: {refusal}"
        );
    }
    // Scrubbed of its environment, the agent was still not the person:
    // each try reached git-loopx and was refused, and the goal is open.
    for try_ in scrubbed(gate) {
        assert!(
            log.contains(&try_),
            "the agent never tried `{try_}`:\n{log}"
        );
    }
    assert!(
        !log.contains("resolved: approve"),
        "a scrubbed try answered the gate:\n{log}"
    );
    let goal = env
        .loopx(repo, &["--json", "goal", "show"])
        .success()
        .json();
    assert_ne!(goal["goal"]["status"], "done", "{goal}");
    // `status` lists the gate under "Needs you".
    let status = env.loopx(repo, &["status"]).success().stdout;
    let needs = status
        .split("Needs you")
        .nth(1)
        .unwrap_or_else(|| panic!("no Needs you section:\n{status}"));
    assert!(needs.contains("Ship it to production?"), "{status}");
    // The person, from a plain shell, answers it, in their own name.
    let answered = env
        .loopx(repo, &["--json", "gate", "resolve", gate, "--approve"])
        .success()
        .json();
    let by = answered.to_string();
    assert!(by.contains("Test Committer"), "{answered}");
}
