//! Answering from the dashboard (issue 33): the person answers a gate from
//! the page in a real headless Chromium, and the state commit is the one
//! `git loopx gate resolve` makes; a request without the launch's key, from
//! another origin, or to a `serve` started inside an agent runtime is
//! refused and writes nothing.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::env::TestEnv;
use crate::serve::{browser, Serving};

/// A state repository with an open gate and a reminder: (repo, gate, reminder).
fn with_gate_and_reminder(env: &TestEnv, name: &str) -> (std::path::PathBuf, String, String) {
    let repo = env.state_repo(name);
    let gate = env
        .loopx(&repo, &["--json", "gate", "add", "Publish under MIT?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reminder = env
        .loopx(
            &repo,
            &[
                "--json",
                "todo",
                "add",
                "Renew the signing certificate",
                "--role",
                "user",
                "--class",
                "user_action",
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (repo, gate, reminder)
}

/// Refs and the state ref's reflog: what a refused answer must leave alone.
fn written(env: &TestEnv, repo: &Path) -> (String, String) {
    (
        env.git(repo, &["for-each-ref"]),
        env.git(repo, &["reflog", "show", "--format=%H %gs", "loopx-state"]),
    )
}

/// `POST path` with the given headers: (status, JSON body).
fn post(base: &str, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut request = ureq::post(&format!("{base}{path}")).timeout(Duration::from_secs(60));
    for (name, value) in headers {
        request = request.set(name, value);
    }
    let (status, response) = match request.call() {
        Ok(r) => (r.status(), r),
        Err(ureq::Error::Status(code, r)) => (code, r),
        Err(e) => panic!("POST {path}: {e}"),
    };
    let body = response.into_string().expect("a body");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// The state commit's tree, message and author of `repo`'s tip.
fn tip_commit(env: &TestEnv, repo: &Path) -> String {
    env.git(
        repo,
        &[
            "log",
            "-1",
            "--format=%T%n%an <%ae>%n%cn <%ce>%n%B",
            "loopx-state",
        ],
    )
}

#[test]
fn refused_answers_write_nothing() {
    let env = TestEnv::new();
    let (repo, gate, _) = with_gate_and_reminder(&env, "repo");
    let serving = Serving::start(&env, &repo, &[]);
    let key = serving.key.clone().expect("a person's serve prints a key");
    assert_eq!(key.len(), 32, "{key}");
    let own = serving.url.clone();
    let path = format!("/answer?id={gate}&action=approve");
    let before = written(&env, &repo);

    for (why, headers) in [
        ("no key", vec![("Origin", own.as_str())]),
        (
            "a wrong key",
            vec![("Origin", own.as_str()), ("X-Loopx-Key", "0123")],
        ),
        (
            "a foreign origin",
            vec![
                ("Origin", "http://evil.example"),
                ("X-Loopx-Key", key.as_str()),
            ],
        ),
        ("no origin", vec![("X-Loopx-Key", key.as_str())]),
        (
            "an origin on another port",
            vec![
                ("Origin", "http://127.0.0.1:1"),
                ("X-Loopx-Key", key.as_str()),
            ],
        ),
    ] {
        let (status, body) = post(&serving.url, &path, &headers);
        assert_eq!(status, 403, "{why}: {body}");
        assert_eq!(body["ok"], false, "{why}");
    }
    // Other POSTs, and a bad answer, write nothing either.
    let good = [("Origin", own.as_str()), ("X-Loopx-Key", key.as_str())];
    assert_eq!(post(&serving.url, "/status.json", &good).0, 405);
    let (status, body) = post(
        &serving.url,
        &format!("/answer?id={gate}&action=merge"),
        &good,
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        written(&env, &repo),
        before,
        "refused answers wrote nothing"
    );

    // A `serve` started inside an agent runtime only shows: no key, and an
    // answer is refused as the command line refuses one there.
    let mut inside = env.loopx_cmd(&repo);
    inside.env("CLAUDECODE", "1").args(["serve", "--port", "0"]);
    let agents = Serving::spawn_cmd(inside);
    assert_eq!(agents.key, None, "no key inside an agent runtime");
    let (_, board) = agents.get("/dashboard.json");
    assert_eq!(
        board["answering"]["enabled"], false,
        "{}",
        board["answering"]
    );
    let theirs = agents.url.clone();
    let (status, body) = post(
        &agents.url,
        &path,
        &[("Origin", theirs.as_str()), ("X-Loopx-Key", key.as_str())],
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "person_only", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Claude Code"),
        "{body}"
    );
    // And `--read-only`.
    let shown = Serving::start(&env, &repo, &["--read-only"]);
    assert_eq!(shown.key, None);
    assert_eq!(written(&env, &repo), before, "nothing was written");
}

#[test]
fn the_person_answers_a_gate_from_the_page_as_gate_resolve_would() {
    let env = TestEnv::new();
    let (repo, gate, reminder) = with_gate_and_reminder(&env, "repo");
    let work = env.add_todo(&repo, "Agent work");
    // The same state, answered from the command line, to compare with.
    let twin = env.path("twin");
    let copied = std::process::Command::new("cp")
        .args(["-a", repo.to_str().unwrap(), twin.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(copied.success());
    let serving = Serving::start(&env, &repo, &[]);
    let key = serving.key.clone().expect("a key");
    let (_, board) = serving.get("/dashboard.json");
    assert_eq!(
        board["answering"],
        json!({ "enabled": true, "person": "Test Committer <committer@example.com>" })
    );

    // The reminder, over HTTP as the page sends it.
    let own = serving.url.clone();
    let (status, body) = post(
        &serving.url,
        &format!("/answer?id={reminder}&action=done&note=renewed+until+2027"),
        &[("Origin", own.as_str()), ("X-Loopx-Key", key.as_str())],
    );
    assert_eq!(status, 200, "{body}");
    env.loopx(
        &twin,
        &[
            "todo",
            "done",
            &reminder,
            "--evidence",
            "renewed until 2027",
        ],
    )
    .success();
    assert_eq!(tip_commit(&env, &repo), tip_commit(&env, &twin));
    // The page does not mark an agent's todo done, nor resolve a todo as a gate.
    let (status, body) = post(
        &serving.url,
        &format!("/answer?id={work}&action=done&note=x"),
        &[("Origin", own.as_str()), ("X-Loopx-Key", key.as_str())],
    );
    assert_eq!(status, 400, "{body}");
    let (status, _) = post(
        &serving.url,
        &format!("/answer?id={work}&action=approve"),
        &[("Origin", own.as_str()), ("X-Loopx-Key", key.as_str())],
    );
    assert_eq!(status, 400);

    let Some(browser) = browser() else { return };
    browser.goto(&format!("{}/?key={key}", serving.url));
    let drawn = format!("document.body.dataset.drawn === {}", json!(env.tip(&repo)));
    browser
        .wait_for(&drawn, Duration::from_secs(20))
        .expect("the page draws");
    let item = format!("#needs .item[data-id={gate}]");
    browser
        .run(
            "const input = document.querySelector(arguments[0] + ' input.note');
             input.value = arguments[1]; input.dispatchEvent(new Event('input'));",
            json!([item, "MIT is fine: no patent clause needed"]),
        )
        .unwrap();
    browser.click(&format!("{item} button[data-action=approve]"));
    browser
        .wait_for(
            "document.body.dataset.answered === '1'",
            Duration::from_secs(20),
        )
        .expect("the answer comes back");
    let outcome = crate::serve::text_of(&browser, &format!("{item} [data-test=outcome]"));
    assert_eq!(outcome, "approve: done", "{outcome}");

    env.loopx(
        &twin,
        &[
            "gate",
            "resolve",
            &gate,
            "--approve",
            "--note",
            "MIT is fine: no patent clause needed",
        ],
    )
    .success();
    assert_eq!(
        tip_commit(&env, &repo),
        tip_commit(&env, &twin),
        "the page's commit is the command line's"
    );
    let answered = env.loopx(&repo, &["--json", "status"]).success().json()["answered"][0].clone();
    assert_eq!(
        answered["resolved_by"],
        "Test Committer <committer@example.com>"
    );
    // The page then shows nothing to answer.
    let gone = format!("!document.querySelector({})", json!(item));
    browser
        .wait_for(&gone, Duration::from_secs(20))
        .expect("the answered gate leaves the page");
}

/// Issue 45, point 4: the page's Done on an agent's reminder that carries a
/// check does not run the check as the person; the page shows the check,
/// as text, and says it is not run.
#[test]
fn done_from_the_page_does_not_run_the_check_an_agent_wrote() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let marker = env.path("marker");
    // Markup in the command is text on the page, never markup.
    let command = format!(
        "sh -c 'touch {} # <img src=x onerror=alert(1)>'",
        marker.display()
    );
    let reminder = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "todo",
                "add",
                "Rotate the deploy key",
                "--role",
                "user",
                "--class",
                "user_action",
                "--validate",
                &command,
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let serving = Serving::start(&env, &repo, &[]);
    let key = serving.key.clone().expect("a key");
    let (_, board) = serving.get("/dashboard.json");
    assert_eq!(
        board["needs_you"][0]["validate"],
        command.as_str(),
        "{board}"
    );

    if let Some(browser) = browser() {
        browser.goto(&format!("{}/?key={key}", serving.url));
        let drawn = format!("document.body.dataset.drawn === {}", json!(env.tip(&repo)));
        browser
            .wait_for(&drawn, Duration::from_secs(20))
            .expect("the page draws");
        let item = format!("#needs .item[data-id={reminder}]");
        let shown = crate::serve::text_of(&browser, &format!("{item} [data-test=validate]"));
        assert!(shown.contains(&command), "{shown}");
        assert!(shown.contains("it is not run for you"), "{shown}");
        let markup = crate::serve::eval(&browser, "document.querySelectorAll('#needs img').length");
        assert_eq!(markup, json!(0), "the command was drawn as markup");
    }

    let own = serving.url.clone();
    let (status, body) = post(
        &serving.url,
        &format!("/answer?id={reminder}&action=done&note=rotated"),
        &[("Origin", own.as_str()), ("X-Loopx-Key", key.as_str())],
    );
    assert_eq!(status, 200, "{body}");
    assert!(!marker.exists(), "the agent's check ran as the person");
    assert_eq!(body["todo"]["status"], "done", "{body}");
    assert!(body.get("validation").is_none(), "{body}");
    assert_eq!(
        body["validation_not_run"]["command"],
        command.as_str(),
        "{body}"
    );
    assert_eq!(
        body["validation_not_run"]["reason"],
        "completed by the person"
    );
}

/// Issue 46, item 12: a page opened with another launch's key says so and
/// shows no buttons; with this launch's key, a note as long as the box
/// takes, in a script of three bytes a character, reaches the gate whole.
#[test]
fn an_old_key_is_told_and_a_full_note_in_any_script_is_answered() {
    let env = TestEnv::new();
    let (repo, gate, _) = with_gate_and_reminder(&env, "repo");
    let serving = Serving::start(&env, &repo, &[]);
    let key = serving.key.clone().expect("a key");
    let Some(browser) = browser() else { return };
    let drawn = format!("document.body.dataset.drawn === {}", json!(env.tip(&repo)));
    let item = format!("#needs .item[data-id={gate}]");

    browser.goto(&format!("{}/?key={}", serving.url, "0".repeat(key.len())));
    browser
        .wait_for(&drawn, Duration::from_secs(20))
        .expect("the page draws");
    let stale = format!(
        "!!document.querySelector({})",
        json!(format!("{item} [data-test=stale-key]"))
    );
    browser
        .wait_for(&stale, Duration::from_secs(20))
        .expect("the page says its key is another launch's");
    let buttons = crate::serve::eval(
        &browser,
        &format!(
            "document.querySelectorAll({}).length",
            json!(format!("{item} button"))
        ),
    );
    assert_eq!(buttons, 0, "no button that would be refused");

    browser.goto(&format!("{}/?key={key}", serving.url));
    browser
        .wait_for(&drawn, Duration::from_secs(20))
        .expect("the page draws");
    let button = format!(
        "!!document.querySelector({})",
        json!(format!("{item} button[data-action=approve]"))
    );
    browser
        .wait_for(&button, Duration::from_secs(20))
        .expect("its buttons, once the key is taken");
    let note = "許可".repeat(1000);
    let max = crate::serve::eval(
        &browser,
        &format!(
            "document.querySelector({}).maxLength",
            json!(format!("{item} input.note"))
        ),
    );
    assert_eq!(max, 2000, "the box takes 2,000 characters");
    browser
        .run(
            "const input = document.querySelector(arguments[0] + ' input.note');
             input.value = arguments[1]; input.dispatchEvent(new Event('input'));",
            json!([item, note]),
        )
        .unwrap();
    browser.click(&format!("{item} button[data-action=approve]"));
    browser
        .wait_for(
            "document.body.dataset.answered === '1'",
            Duration::from_secs(20),
        )
        .expect("the answer comes back");
    let outcome = crate::serve::text_of(&browser, &format!("{item} [data-test=outcome]"));
    assert_eq!(outcome, "approve: done", "{outcome}");
    let shown = env
        .loopx(&repo, &["--json", "todo", "show", &gate])
        .success()
        .json();
    let notes = shown["todo"]["notes"].to_string();
    assert!(
        notes.contains(&note),
        "the whole note: {}",
        &notes[..200.min(notes.len())]
    );
}
