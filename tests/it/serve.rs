//! `git loopx serve`: the dashboard's routes over real HTTP, and its page in
//! a real headless Chromium (through ChromeDriver), against real
//! repositories.
//!
//! The browser tests skip with a printed reason when no Chromium or
//! ChromeDriver is installed, unless `LOOPX_REQUIRE_BROWSER=1` (`.ci/run`
//! installs them and sets it), so a skip can never pass for a run.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::env::TestEnv;
use crate::webdriver::Browser;

/// A running `git loopx serve`, stopped when dropped.
pub(crate) struct Serving {
    pub(crate) child: Child,
    /// `http://127.0.0.1:<port>`, without the key.
    pub(crate) url: String,
    /// The launch's key, when the page may answer (`?key=` in the printed
    /// address).
    pub(crate) key: Option<String>,
    stderr: Option<std::process::ChildStderr>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serving {
    pub(crate) fn start(env: &TestEnv, dir: &Path, args: &[&str]) -> Serving {
        let mut cmd = env.loopx_cmd(dir);
        cmd.args(["serve", "--port", "0"]).args(args);
        Serving::spawn(cmd)
    }

    /// `git loopx serve` with at most `files` open file descriptors
    /// (`ulimit -n`, set by a shell that then becomes the server).
    pub(crate) fn start_with_open_files(
        env: &TestEnv,
        dir: &Path,
        files: u32,
        args: &[&str],
    ) -> Serving {
        let mut cmd = env.command(Path::new("sh"), dir);
        cmd.args(["-c", r#"ulimit -n "$1" && shift && exec "$@""#, "sh"])
            .arg(files.to_string())
            .arg(crate::env::loopx_bin())
            .args(["serve", "--port", "0"])
            .args(args);
        Serving::spawn(cmd)
    }

    /// `git loopx serve` as `cmd` starts it (an environment of its own).
    pub(crate) fn spawn_cmd(cmd: Command) -> Serving {
        Serving::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> Serving {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("serve prints its address");
        let printed = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"));
        let (url, key) = match printed.split_once("/?key=") {
            Some((url, key)) => (url.to_owned(), Some(key.to_owned())),
            None => (printed.trim_end_matches('/').to_owned(), None),
        };
        let stderr = child.stderr.take();
        Serving {
            child,
            url,
            key,
            stderr,
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        request(&self.url, "GET", path)
    }
}

pub(crate) fn request(base: &str, method: &str, path: &str) -> (u16, Value) {
    let answer = ureq::request(method, &format!("{base}{path}"))
        .timeout(Duration::from_secs(60))
        .call();
    let (status, response) = match answer {
        Ok(r) => (r.status(), r),
        Err(ureq::Error::Status(code, r)) => (code, r),
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let body = response.into_string().expect("a body");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The status line of a request sent by hand, with `host` as its `Host`.
pub(crate) fn status_line_with_host(port: u16, host: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

/// A headless Chromium, or `None` with the reason printed (see the module).
pub(crate) fn browser() -> Option<Browser> {
    started(Browser::start(1400, 1800))
}

/// A headless Chromium as a phone's browser, `width` × `height` pixels, or
/// `None` as [`browser`].
pub(crate) fn phone(width: u32, height: u32) -> Option<Browser> {
    started(Browser::start_phone(width, height))
}

fn started(browser: Result<Browser, String>) -> Option<Browser> {
    match browser {
        Ok(b) => Some(b),
        Err(why) => {
            crate::require::skip(
                "LOOPX_REQUIRE_BROWSER",
                &format!("no browser to test the dashboard in: {why}"),
            );
            None
        }
    }
}

fn id_of(run: crate::env::Run, key: &str) -> String {
    run.success().json()[key]["id"].as_str().unwrap().to_owned()
}

/// What the fixture made, by name.
pub(crate) struct Fixture {
    pub(crate) dir: PathBuf,
    pub(crate) lexer: String,
    pub(crate) parser: String,
    pub(crate) docs: String,
    pub(crate) setup: String,
    pub(crate) gate: String,
}

/// Two goals, a gate holding a todo, two registered agents each holding a
/// claim, a finished todo, a turn receipt and writebacks across hours.
pub(crate) fn fixture(env: &TestEnv) -> Fixture {
    let dir = env.state_repo("repo");
    let at = |time: &str, args: &[&str]| env.loopx_at(&dir, &format!("2026-12-02T{time}Z"), args);
    at(
        "05:00:00",
        &["agent", "register", "agent-a", "--runtime", "claude-code"],
    )
    .success();
    at(
        "05:00:00",
        &["agent", "register", "agent-b", "--runtime", "codex"],
    )
    .success();
    at(
        "05:00:00",
        &[
            "goal",
            "add",
            "ops",
            "--objective",
            "Keep the nightly build green",
        ],
    )
    .success();
    let add = |text: &str| id_of(at("05:01:00", &["--json", "todo", "add", text]), "todo");
    let setup = add("Set up the crate");
    let lexer = add("Write the lexer");
    let parser = add("Write the parser");
    let docs = add("Document the grammar");
    let nightly = id_of(
        at(
            "05:02:00",
            &[
                "--json",
                "--goal",
                "ops",
                "todo",
                "add",
                "Watch the nightly build",
            ],
        ),
        "todo",
    );
    let gate = id_of(
        at(
            "05:03:00",
            &[
                "--json",
                "gate",
                "add",
                "Adopt the new grammar?",
                "--unblocks",
                &docs,
            ],
        ),
        "gate",
    );
    let a = ["--agent", "agent-a"];
    let b = ["--agent", "agent-b"];
    let with = |who: &[&str; 2], rest: &[&str]| -> Vec<String> {
        who.iter().chain(rest).map(|s| s.to_string()).collect()
    };
    let run = |time: &str, args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        at(time, &args).success();
    };
    at("05:00:00", &["goal", "set", "--allowed-slots", "8"]).success();
    at(
        "05:00:00",
        &["--goal", "ops", "goal", "set", "--allowed-slots", "1"],
    )
    .success();
    run("06:00:00", with(&b, &["todo", "claim", &setup]));
    run(
        "06:20:00",
        with(
            &b,
            &[
                "writeback",
                "--todo",
                &setup,
                "--outcome",
                "outcome_progress",
                "--summary",
                "Cargo.toml and CI",
            ],
        ),
    );
    run("06:21:00", with(&b, &["quota", "spend", "--slots", "2"]));
    run(
        "06:30:00",
        with(
            &b,
            &["todo", "done", &setup, "--evidence", "cargo test passes"],
        ),
    );
    run(
        "07:50:00",
        with(&a, &["--goal", "ops", "todo", "claim", &nightly]),
    );
    run(
        "08:00:00",
        with(
            &a,
            &[
                "--goal",
                "ops",
                "writeback",
                "--todo",
                &nightly,
                "--outcome",
                "outcome_progress",
                "--summary",
                "Nightly is green",
            ],
        ),
    );
    run("08:01:00", with(&a, &["--goal", "ops", "quota", "spend"]));
    run(
        "08:05:00",
        with(&a, &["--goal", "ops", "todo", "release", &nightly]),
    );
    run("09:39:00", with(&a, &["should-run", "--turn", "session-1"]));
    run("09:40:00", with(&a, &["todo", "claim", &lexer]));
    run(
        "09:45:00",
        with(
            &a,
            &[
                "writeback",
                "--todo",
                &lexer,
                "--outcome",
                "outcome_progress",
                "--summary",
                "Numbers and identifiers",
            ],
        ),
    );
    run("09:46:00", with(&a, &["quota", "spend"]));
    run("09:50:00", with(&b, &["todo", "claim", &parser]));
    run(
        "09:52:00",
        with(
            &b,
            &[
                "writeback",
                "--todo",
                &parser,
                "--outcome",
                "surface_only",
                "--summary",
                "Grammar sketch",
            ],
        ),
    );
    Fixture {
        dir,
        lexer,
        parser,
        docs,
        setup,
        gate,
    }
}

/// Evaluates `expr` in the page (a JavaScript expression).
pub(crate) fn eval(browser: &Browser, expr: &str) -> Value {
    browser
        .run(&format!("return ({expr});"), json!([]))
        .unwrap_or_else(|e| panic!("{expr}: {e:?}"))
}

pub(crate) fn text_of(browser: &Browser, selector: &str) -> String {
    let expr = format!(
        "(document.querySelector({sel}) || {{}}).textContent || ''",
        sel = serde_json::to_string(selector).unwrap()
    );
    eval(browser, &expr).as_str().unwrap_or_default().to_owned()
}

/// The commit on loopx-state whose message names `run` (`Loopx-Run`).
fn commit_of_run(env: &TestEnv, dir: &Path, run: &str) -> String {
    env.git(
        dir,
        &[
            "log",
            "--format=%H",
            &format!("--grep=Loopx-Run: {run}"),
            "loopx-state",
        ],
    )
}

#[test]
fn the_dashboard_shows_every_goal_and_follows_the_state_live_in_a_real_browser() {
    let Some(browser) = browser() else { return };
    let env = TestEnv::new();
    let f = fixture(&env);
    let serving = Serving::start(&env, &f.dir, &[]);
    browser.goto(&format!("{}/", serving.url));
    let tip = env.tip(&f.dir);
    let drawn = format!("document.body.dataset.drawn === {}", json!(tip));
    if browser.wait_for(&drawn, Duration::from_secs(10)).is_none() {
        panic!(
            "the page does not draw the state at the tip {tip}: {}",
            eval(
                &browser,
                "document.getElementById('live').textContent + ' / ' + document.body.dataset.drawn"
            )
        );
    }

    // Needs you: the gate, what it holds, the command that answers it.
    let needs = text_of(&browser, &format!("[data-test=needs] [data-id={}]", f.gate));
    assert!(needs.contains("Adopt the new grammar?"), "{needs}");
    assert!(
        needs.contains("Document the grammar"),
        "what it holds: {needs}"
    );
    assert!(
        needs.contains(&format!("git loopx gate resolve {} --approve", f.gate)),
        "{needs}"
    );

    // The board of each goal, every todo in the column status counts it in.
    let card = |goal: &str, bucket: &str, id: &str| {
        text_of(
            &browser,
            &format!("[data-goal={goal}] [data-bucket={bucket}] [data-id={id}]"),
        )
    };
    let lexer = card("main", "running", &f.lexer);
    assert!(
        lexer.contains("Write the lexer") && lexer.contains("agent-a"),
        "{lexer}"
    );
    // 25 minutes at the report's time, counting down in the page.
    assert!(
        lexer.contains("25m") || lexer.contains("24m"),
        "lease time left: {lexer}"
    );
    assert!(card("main", "running", &f.parser).contains("agent-b"));
    assert!(card("main", "held_by_gate", &f.docs).contains("Document the grammar"));
    assert!(card("main", "done", &f.setup).contains("cargo test passes"));
    assert!(card("main", "for_user", &f.gate).contains("Adopt the new grammar?"));
    let ops = text_of(&browser, "[data-goal=ops]");
    assert!(
        ops.contains("Keep the nightly build green") && ops.contains("Watch the nightly build")
    );

    // Agents: their claims, last turn, last writeback; none stale yet.
    let agent_a = text_of(&browser, "#agents tr[data-agent=agent-a]");
    assert!(
        agent_a.contains("claude-code") && agent_a.contains("Write the lexer"),
        "{agent_a}"
    );
    assert!(
        agent_a.contains("21m") && agent_a.contains("ago (main)"),
        "turn and writeback: {agent_a}"
    );
    let agent_b = text_of(&browser, "#agents tr[data-agent=agent-b]");
    assert!(
        agent_b.contains("Write the parser") && !agent_b.contains("stale"),
        "{agent_b}"
    );

    // The charts: writebacks per agent and hour, finished todos, one quota each goal.
    let bars = eval(&browser, "[...document.querySelectorAll('svg[data-test=activity] rect[data-agent]')].map(r => r.dataset.agent).sort().join(' ')");
    assert_eq!(
        bars, "agent-a agent-a agent-b agent-b",
        "one bar per agent and hour"
    );
    assert_eq!(
        eval(
            &browser,
            "document.querySelectorAll('svg[data-test=activity] circle').length"
        ),
        1
    );
    assert_eq!(
        eval(
            &browser,
            "document.querySelectorAll('svg[data-test=quota]').length"
        ),
        2
    );
    let quota = text_of(&browser, ".quota[data-goal=main]");
    assert!(
        quota.contains("3 of 8 slots") && quota.contains("5 slot(s) free"),
        "{quota}"
    );
    let quota = text_of(&browser, ".quota[data-goal=ops]");
    assert!(
        quota.contains("throttled") && quota.contains("(2026-12-03T08:01:00Z)"),
        "{quota}"
    );

    // Recent writebacks, newest first; a click shows the commit and its diff.
    let rows = eval(
        &browser,
        "[...document.querySelectorAll('#recent tr.wb')].map(r => r.textContent)",
    );
    let rows: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(
        rows[0].contains("Grammar sketch") && rows[3].contains("Cargo.toml and CI"),
        "{rows:?}"
    );
    assert!(rows[3].contains("evidence: cargo test passes"), "{rows:?}");
    let newest = eval(
        &browser,
        "document.querySelector('#recent tr.wb').dataset.run",
    );
    let commit = commit_of_run(&env, &f.dir, newest.as_str().unwrap());
    assert_eq!(commit.len(), 40);
    browser.click("#recent tr.wb");
    let (diff, _) = browser
        .wait_for(
            "(document.querySelector('[data-test=diff] pre.diff') || {}).textContent",
            Duration::from_secs(5),
        )
        .expect("the diff of the writeback's commit is shown");
    let shown = text_of(&browser, "[data-test=diff]");
    assert!(shown.contains(&commit), "commit id shown: {shown}");
    let cli = env.loopx(&f.dir, &["diff", &commit]).success().stdout;
    assert_eq!(
        diff.as_str().unwrap().trim(),
        cli.trim(),
        "the page shows `diff`'s text"
    );

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    browser
        .run("window.scrollTo(0, 0); return 1;", json!([]))
        .unwrap();
    browser.screenshot(&shot);
    if let Some(path) = std::env::var_os("LOOPX_SCREENSHOT") {
        std::fs::copy(&shot, path).expect("screenshot copied");
    }
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "a real screenshot"
    );

    // Live: a writeback and a gate's answer from the command line show up
    // with no reload (the page's own variable survives). The page polls
    // once a second; the waits end as soon as the page shows it, and are
    // long only so that a loaded machine does not fail them.
    browser
        .run("window.loopxMarker = 42; return 1;", json!([]))
        .unwrap();
    env.loopx(
        &f.dir,
        &[
            "--agent",
            "agent-a",
            "writeback",
            "--todo",
            &f.lexer,
            "--outcome",
            "outcome_progress",
            "--summary",
            "Strings and escapes",
        ],
    )
    .success();
    let (_, took) = browser
        .wait_for(
            "document.querySelector('#recent tr.wb').textContent.includes('Strings and escapes') && window.loopxMarker === 42",
            Duration::from_secs(20),
        )
        .expect("the new writeback is on the page within 20 s, without a reload");
    eprintln!("writeback shown after {took:?}");
    env.loopx(
        &f.dir,
        &[
            "gate",
            "resolve",
            &f.gate,
            "--approve",
            "--note",
            "go ahead",
        ],
    )
    .success();
    let gone = format!(
        "!document.querySelector('[data-test=needs] [data-id={gate}]') && !!document.querySelector('[data-goal=main] [data-bucket=ready] [data-id={docs}]') && window.loopxMarker === 42",
        gate = f.gate,
        docs = f.docs
    );
    let (_, took) = browser
        .wait_for(&gone, Duration::from_secs(20))
        .expect("the answered gate leaves `Needs you` and its todo is ready within 20 s");
    eprintln!("gate answer shown after {took:?}");
    assert_eq!(browser.alert_text(), None);
}

#[test]
fn hostile_state_text_renders_as_text_in_the_browser() {
    let Some(browser) = browser() else { return };
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let script = "<script>alert(1)</script>";
    let img = "<img src=x onerror=alert(1)>";
    let todo = env.add_todo(&dir, script);
    env.loopx(&dir, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    env.loopx(
        &dir,
        &[
            "--agent",
            "agent-a",
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            img,
        ],
    )
    .success();
    env.loopx(
        &dir,
        &[
            "gate",
            "add",
            "<b onmouseover=alert(2)>Ship?</b>",
            "--unblocks",
            &todo,
        ],
    )
    .success();
    let serving = Serving::start(&env, &dir, &[]);
    browser.goto(&format!("{}/", serving.url));
    let drawn = format!("document.body.dataset.drawn === {}", json!(env.tip(&dir)));
    browser
        .wait_for(&drawn, Duration::from_secs(10))
        .expect("the page draws");
    // A second poll has come and gone: anything that would run, has.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(browser.alert_text(), None, "no script of the state ran");
    let seen = eval(&browser, "document.querySelector('main').innerText");
    let seen = seen.as_str().unwrap();
    for text in [script, img, "<b onmouseover=alert(2)>Ship?</b>"] {
        assert!(seen.contains(text), "{text} is shown as text:\n{seen}");
    }
    assert_eq!(
        eval(&browser, "document.querySelectorAll('main img, main script, main b, main [onerror], main [onmouseover]').length"),
        0,
        "no element was made from state text"
    );
    assert_eq!(
        eval(&browser, "document.querySelectorAll('script').length"),
        1,
        "only the page's own script"
    );
}

/// An agent whose turns keep failing is flagged on the page, and its
/// failures are in `/dashboard.json`.
#[test]
fn a_failing_agent_is_flagged_on_the_dashboard() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    env.add_todo(&dir, "Task");
    let run = [
        "--agent",
        "agent-a",
        "run",
        "--cmd",
        "exit 7",
        "--until-idle",
    ];
    env.loopx(&dir, &run).failure(1);
    let serving = Serving::start(&env, &dir, &[]);
    let (code, report) = serving.get("/dashboard.json");
    assert_eq!(code, 200);
    let health = &report["goals"][0]["status"]["agents"][0];
    assert_eq!(health["consecutive_failures"], 3, "{health}");
    let Some(browser) = browser() else { return };
    browser.goto(&format!("{}/", serving.url));
    let drawn = format!("document.body.dataset.drawn === {}", json!(env.tip(&dir)));
    browser
        .wait_for(&drawn, Duration::from_secs(10))
        .expect("the page draws");
    let row = text_of(&browser, "#agents tr[data-agent=agent-a]");
    assert!(
        row.contains("failing · main: 3 failed turn(s) in a row"),
        "{row}"
    );
}

#[test]
fn other_paths_are_404_other_methods_405_and_nothing_is_written() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    env.add_todo(&dir, "Write the lexer");
    let refs = |env: &TestEnv| env.git(&dir, &["for-each-ref"]);
    let reflog = |env: &TestEnv| {
        env.git(
            &dir,
            &["reflog", "show", "--format=%H", "refs/heads/loopx-state"],
        )
    };
    let (before, log_before) = (refs(&env), reflog(&env));
    let serving = Serving::start(&env, &dir, &[]);
    for path in [
        "/nope",
        "/status",
        "/diff/HEAD.json",
        "/diff/loopx-state.json",
        "/../.git/config",
        "/healthz/x",
    ] {
        let (status, body) = serving.get(path);
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["ok"], false);
    }
    let tip = env.tip(&dir);
    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        for path in ["/", "/status.json", &format!("/diff/{tip}.json")] {
            let (status, _) = request(&serving.url, method, path);
            assert_eq!(status, 405, "{method} {path}");
        }
    }
    for path in [
        "/",
        "/status.json",
        "/dashboard.json",
        "/healthz",
        &format!("/diff/{tip}.json"),
    ] {
        assert_eq!(serving.get(path).0, 200, "{path}");
    }
    let (status, body) = serving.get("/diff/0000000000000000000000000000000000000000.json");
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_input"))
    );
    let (status, body) = serving.get("/status.json?goal=nope");
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_input")),
        "{body}"
    );
    assert_eq!(refs(&env), before, "serving wrote no ref");
    assert_eq!(reflog(&env), log_before);
}

#[test]
fn it_listens_on_loopback_only_and_refuses_other_host_names() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let serving = Serving::start(&env, &dir, &[]);
    assert!(
        serving.url.starts_with("http://127.0.0.1:"),
        "{}",
        serving.url
    );
    // What the kernel bound: 127.0.0.1 in /proc/net/tcp, listening (0A).
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let port = format!("{:04X}", serving.port());
    let local: Vec<&str> = table
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 3 && f[1].ends_with(&format!(":{port}")) && f[3] == "0A").then(|| f[1])
        })
        .collect();
    assert_eq!(local, [format!("0100007F:{port}")]);
    let port = serving.port();
    assert!(status_line_with_host(port, &format!("127.0.0.1:{port}")).contains(" 200 "));
    assert!(status_line_with_host(port, &format!("localhost:{port}")).contains(" 200 "));
    for foreign in [
        format!("evil.example:{port}"),
        "127.0.0.1.evil.example".to_owned(),
        format!("127.0.0.1:{}", port ^ 1),
    ] {
        let line = status_line_with_host(port, &foreign);
        assert!(line.contains(" 403 "), "{foreign}: {line}");
    }
    drop(serving);

    // Another address only when asked, and with a warning.
    let mut wide = Serving::start(&env, &dir, &["--bind", "0.0.0.0"]);
    let mut warning = String::new();
    BufReader::new(wide.stderr.take().unwrap())
        .read_line(&mut warning)
        .unwrap();
    assert!(
        warning.starts_with("warning: listening on 0.0.0.0, not loopback"),
        "{warning}"
    );
    assert!(status_line_with_host(wide.port(), "dashboard.example").contains(" 200 "));
    let bad = env.loopx(&dir, &["serve", "--bind", "localhost"]);
    assert_eq!(bad.code, 2, "an address, not a name: {}", bad.stderr);
}

#[test]
fn status_json_and_diff_json_are_the_cli_reports() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    env.loopx(
        &dir,
        &["goal", "add", "ops", "--objective", "Keep it green"],
    )
    .success();
    let todo = env.add_todo(&dir, "Write the lexer");
    env.loopx(&dir, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    let serving = Serving::start(&env, &dir, &[]);
    let (status, page) = serving.get("/status.json");
    assert_eq!(status, 200);
    assert_eq!(
        page,
        env.loopx(&dir, &["--json", "status"]).success().json()
    );
    let (_, ops) = serving.get("/status.json?goal=ops");
    assert_eq!(
        ops,
        env.loopx(&dir, &["--json", "--goal", "ops", "status"])
            .success()
            .json()
    );
    let tip = env.tip(&dir);
    let (_, mut diff) = serving.get(&format!("/diff/{}.json", &tip[..10]));
    let text = diff.as_object_mut().unwrap().remove("text").unwrap();
    assert_eq!(
        diff,
        env.loopx(&dir, &["--json", "diff", &tip]).success().json()
    );
    assert_eq!(
        text.as_str().unwrap().trim(),
        env.loopx(&dir, &["diff", &tip]).success().stdout.trim()
    );
}

#[test]
fn an_unchanged_state_answers_304_and_a_write_moves_the_etag() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let serving = Serving::start(&env, &dir, &[]);
    let get = |etag: Option<&str>| {
        let mut req = ureq::get(&format!("{}/dashboard.json", serving.url));
        if let Some(tag) = etag {
            req = req.set("If-None-Match", tag);
        }
        let r = req.call().expect("answers");
        (r.status(), r.header("ETag").map(str::to_owned))
    };
    let (status, etag) = get(None);
    assert_eq!(status, 200);
    let etag = etag.expect("an ETag");
    assert!(etag.contains(&env.tip(&dir)), "keyed on the tip: {etag}");
    assert_eq!(get(Some(&etag)).0, 304);
    env.add_todo(&dir, "Write the lexer");
    let (status, moved) = get(Some(&etag));
    assert_eq!(status, 200);
    assert_ne!(moved.unwrap(), etag);
}

/// `n` open todos committed in one `git fast-import` commit: 10,000
/// through the CLI would take minutes.
fn many_todos(env: &TestEnv, n: usize) -> PathBuf {
    let dir = env.state_repo("big");
    let now = loopx::model::Timestamp::parse(crate::env::NOW).unwrap();
    let stream = crate::state::stream("serve", n, 0, now);
    crate::state::import(&mut env.git_cmd(&dir), &stream);
    dir
}

#[test]
fn two_hundred_concurrent_status_requests_at_ten_thousand_todos_all_succeed() {
    let env = TestEnv::new();
    let dir = many_todos(&env, 10_000);
    let serving = Serving::start(&env, &dir, &[]);
    let barrier = std::sync::Barrier::new(200);
    let answers: Vec<(u16, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..200)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    serving.get("/status.json")
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (status, body) in &answers {
        assert_eq!(*status, 200, "{body}");
        assert_eq!(body["counts"]["ready"], 10_000);
    }
    assert!(
        answers.windows(2).all(|w| w[0].1 == w[1].1),
        "every answer is the same report"
    );
    let (status, board) = serving.get("/dashboard.json");
    assert_eq!(status, 200);
    let ready = &board["goals"][0]["board"][1];
    assert_eq!(
        (ready["bucket"].as_str(), ready["total"].as_u64()),
        (Some("ready"), Some(10_000))
    );
    assert_eq!(
        ready["cards"].as_array().unwrap().len(),
        100,
        "a column shows its first 100"
    );
}

#[test]
fn no_state_a_taken_port_and_bad_flags_are_refused_before_listening() {
    let env = TestEnv::new();
    let bare = env.repo("plain");
    let none = env
        .loopx(&bare, &["--json", "serve", "--port", "0"])
        .failure(3);
    assert_eq!(none.json()["error"]["code"], "state_missing");
    let dir = env.state_repo("repo");
    let serving = Serving::start(&env, &dir, &[]);
    let port = serving.port().to_string();
    let taken = env.loopx(&dir, &["serve", "--port", &port]).failure(2);
    assert!(
        taken
            .stderr
            .contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{}",
        taken.stderr
    );
    assert!(taken.stderr.contains("--port 0"), "{}", taken.stderr);
    for bad in [
        ["--stale-after", "soon"],
        ["--workers", "0"],
        ["--port", "70000"],
    ] {
        let run = env.loopx(&dir, &["serve", bad[0], bad[1]]).failure(2);
        assert!(run.stderr.contains(bad[0]), "{}", run.stderr);
    }
}

/// `serve --open` hands the browser opener a file only the person can
/// read, never the address: the address carries the launch's key, and
/// every user of the host reads every process's arguments (issue 45).
#[test]
fn open_puts_no_key_on_the_openers_command_line() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let bin = env.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let argv = env.path("opener-argv");
    for opener in ["xdg-open", "open"] {
        env.write_script(
            &bin.join(opener),
            &format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", argv.display()),
        );
    }
    let mut cmd = env.loopx_cmd(&repo);
    let path = format!(
        "{}:{}",
        bin.display(),
        crate::env::path_with_loopx().to_str().unwrap()
    );
    cmd.env("PATH", path)
        .args(["serve", "--port", "0", "--open"]);
    let serving = Serving::spawn_cmd(cmd);
    let key = serving
        .key
        .clone()
        .expect("a serve the person started answers");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !argv.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let args = std::fs::read_to_string(&argv).expect("the opener ran");
    assert!(
        !args.contains(&key),
        "the key is on the command line: {args}"
    );
    let page = PathBuf::from(args.trim());
    let mode = std::fs::metadata(&page).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", page.display());
    let dir_mode = std::fs::metadata(page.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o077, 0, "{}", page.display());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!("{}/?key={key}", serving.url)),
        "the page does not lead to the dashboard: {html}"
    );
}
