//! `report --since` (issue 33): 200 writebacks across 3 goals, 20 of them
//! before the stretch, against figures worked out by hand from the
//! fixture; its Markdown keeps hostile state text inert (the cases of `pr
//! --markdown`).

use std::path::Path;

use serde_json::Value;

use crate::env::TestEnv;

const HOSTILE: &str =
    "Fix it\n## Heading <script>alert(1)</script> [x](javascript:alert(1)) @someone";

/// `HH:MM` of day `day` (December 2026) as the clock.
fn at(day: u32, minutes: u32) -> String {
    format!(
        "2026-12-{day:02}T{:02}:{:02}:00Z",
        minutes / 60,
        minutes % 60
    )
}

fn id(run: crate::env::Run, key: &str) -> String {
    run.success().json()[key]["id"].as_str().unwrap().to_owned()
}

/// The fixture: (repo, main's todo, docs' todo, ops' todo, docs' gate, ops' reminder).
fn stretch(env: &TestEnv) -> (std::path::PathBuf, [String; 5]) {
    let repo = env.repo("repo");
    let day1 = at(1, 0);
    // Each commit made at its command's time, as on a real clock (the test
    // environment pins git's commit dates otherwise): a duration's range is
    // found by the commits' times.
    let l = |now: &str, args: &[&str]| crate::week::at_time(env, &repo, now, args);
    l(&day1, &["init", "--goal-text", "Ship the parser"]).success();
    l(
        &day1,
        &["goal", "add", "docs", "--objective", "Write the docs"],
    )
    .success();
    l(&day1, &["goal", "add", "ops", "--objective", "Run it"]).success();
    let main_todo = id(l(&day1, &["--json", "todo", "add", HOSTILE]), "todo");
    let docs_todo = id(
        l(
            &day1,
            &["--json", "--goal", "docs", "todo", "add", "The guide"],
        ),
        "todo",
    );
    let ops_todo = id(
        l(
            &day1,
            &["--json", "--goal", "ops", "todo", "add", "Nightly"],
        ),
        "todo",
    );
    let claim = |goal: &str, agent: &str, todo: &str, now: &str| {
        l(
            now,
            &[
                "--goal", goal, "--agent", agent, "todo", "claim", todo, "--ttl", "24h",
            ],
        )
        .success();
    };
    let writeback = |goal: &str, agent: &str, todo: &str, now: &str, outcome: &str, n: u32| {
        let summary = format!("{goal} step {n}");
        l(
            now,
            &[
                "--goal",
                goal,
                "--agent",
                agent,
                "writeback",
                "--todo",
                todo,
                "--outcome",
                outcome,
                "--summary",
                &summary,
            ],
        )
        .success();
    };
    // Day 1, before the stretch: 20 writebacks on main.
    claim("main", "agent-a", &main_todo, &at(1, 60));
    for n in 0..20 {
        writeback(
            "main",
            "agent-a",
            &main_todo,
            &at(1, 120 + n),
            "outcome_progress",
            n,
        );
    }
    // Day 2, the stretch: main 100 (5 of them no progress), docs 50, ops 30.
    claim("main", "agent-a", &main_todo, &at(2, 30));
    for n in 0..100 {
        let outcome = if n % 20 == 7 {
            "outcome_gap"
        } else {
            "outcome_progress"
        };
        writeback("main", "agent-a", &main_todo, &at(2, 60 + n), outcome, n);
    }
    l(
        &at(2, 200),
        &[
            "--agent",
            "agent-a",
            "todo",
            "done",
            &main_todo,
            "--evidence",
            "cargo test: 412 passed",
        ],
    )
    .success();
    claim("docs", "agent-b", &docs_todo, &at(2, 300));
    for n in 0..50 {
        writeback(
            "docs",
            "agent-b",
            &docs_todo,
            &at(2, 301 + n),
            "outcome_progress",
            n,
        );
    }
    l(
        &at(2, 400),
        &[
            "--goal",
            "docs",
            "--agent",
            "agent-b",
            "todo",
            "done",
            &docs_todo,
            "--evidence",
            HOSTILE,
        ],
    )
    .success();
    let gate = id(
        l(
            &at(2, 401),
            &[
                "--json",
                "--goal",
                "docs",
                "gate",
                "add",
                "Publish the guide?",
            ],
        ),
        "gate",
    );
    claim("ops", "agent-c", &ops_todo, &at(2, 500));
    for n in 0..30 {
        writeback(
            "ops",
            "agent-c",
            &ops_todo,
            &at(2, 501 + n),
            "outcome_progress",
            n,
        );
    }
    l(
        &at(2, 540),
        &[
            "--goal", "ops", "--agent", "agent-c", "quota", "spend", "--slots", "2",
        ],
    )
    .success();
    let reminder = id(
        l(
            &at(2, 541),
            &[
                "--json",
                "--goal",
                "ops",
                "todo",
                "add",
                "Renew the certificate",
                "--role",
                "user",
                "--class",
                "user_action",
            ],
        ),
        "todo",
    );
    (repo, [main_todo, docs_todo, ops_todo, gate, reminder])
}

/// The part of `report` about goal `id`.
pub(crate) fn goal<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["goals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["review"]["goal"] == id)
        .unwrap_or_else(|| panic!("goal {id} in {report}"))
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_owned())
        .collect()
}

fn all_writebacks(env: &TestEnv, repo: &Path) -> usize {
    env.git(repo, &["log", "--format=%s", "loopx-state"])
        .lines()
        .filter(|l| l.starts_with("writeback "))
        .count()
}

#[test]
fn a_days_report_over_three_goals_is_what_the_fixture_says() {
    let env = TestEnv::new();
    let (repo, [main_todo, docs_todo, ops_todo, gate, reminder]) = stretch(&env);
    assert_eq!(all_writebacks(&env, &repo), 200, "the fixture");
    let now = at(3, 0);
    let r = env
        .loopx_at(&repo, &now, &["--json", "report", "--since", "24h"])
        .success()
        .json();
    assert_eq!(r["from_time"], "2026-12-02T00:00:00Z", "{}", r["from_time"]);
    let order: Vec<&str> = r["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["review"]["goal"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["main", "docs", "ops"], "the default goal first");

    // main: the 100 writebacks of day 2 (not day 1's 20), 5 without
    // progress, its todo done with its evidence.
    let main = goal(&r, "main");
    assert_eq!(main["review"]["delivered"].as_array().unwrap().len(), 100);
    assert_eq!(ids(&main["review"]["completed"]), vec![main_todo.clone()]);
    assert_eq!(
        main["review"]["completed"][0]["evidence"],
        "cargo test: 412 passed"
    );
    let failures = main["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 5);
    assert!(failures.iter().all(|f| f["outcome"] == "outcome_gap"));
    assert_eq!(main["agents"][0]["id"], "agent-a");
    assert_eq!(main["agents"][0]["writebacks"], 100);
    assert_eq!(main["agents"][0]["failures"], 5);
    assert_eq!(main["agents"][0]["last_writeback"], at(2, 159));
    assert_eq!(main["quota"]["spent"], 0);

    // docs: 50 writebacks, its todo done, the gate waiting.
    let docs = goal(&r, "docs");
    assert_eq!(docs["review"]["delivered"].as_array().unwrap().len(), 50);
    assert_eq!(ids(&docs["review"]["completed"]), [docs_todo]);
    assert_eq!(ids(&docs["review"]["decisions"]), vec![gate.clone()]);
    assert_eq!(docs["failures"], serde_json::json!([]));

    // ops: 30 writebacks, two slots spent of 1,440 a day, the reminder
    // waiting, nothing done.
    let ops = goal(&r, "ops");
    assert_eq!(ops["review"]["delivered"].as_array().unwrap().len(), 30);
    assert_eq!(ops["review"]["completed"], serde_json::json!([]));
    assert_eq!(ids(&ops["review"]["user_actions"]), [reminder]);
    assert_eq!(ops["quota"]["spent"], 2);
    assert_eq!(ops["quota"]["hours"], 24);
    assert_eq!(ops["quota"]["allowance"], 1440);
    assert_eq!(ops["agents"][0]["todos"], serde_json::json!([ops_todo]));

    // From a revision: since the commit that marked main's todo done, only
    // what came after it.
    let done_commit = env.git(
        &repo,
        &[
            "log",
            "--format=%H",
            "--all-match",
            "--grep=^Loopx-Op: todo done",
            &format!("--grep=^Loopx-Todo: {main_todo}"),
            "loopx-state",
        ],
    );
    assert_eq!(done_commit.lines().count(), 1, "{done_commit}");
    let from_rev = env
        .loopx_at(&repo, &now, &["--json", "report", "--since", &done_commit])
        .success()
        .json();
    let delivered = |g: &str| {
        goal(&from_rev, g)["review"]["delivered"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(
        (delivered("main"), delivered("docs"), delivered("ops")),
        (0, 50, 30),
        "after main's todo was done"
    );
    assert_eq!(
        goal(&from_rev, "main")["review"]["completed"],
        serde_json::json!([])
    );

    // The text names each goal, and the gate with the command that answers it.
    let text = env
        .loopx_at(&repo, &now, &["report", "--since", "24h"])
        .success()
        .stdout;
    assert!(text.contains("Goal docs: Write the docs"), "{text}");
    assert!(
        text.contains(&format!("git loopx --goal docs gate resolve {gate}")),
        "{text}"
    );
    assert!(
        text.contains("100 writeback(s), 1 todo(s) done, 5 failure(s)"),
        "{text}"
    );
}

#[test]
fn the_reports_markdown_keeps_hostile_text_inert() {
    let env = TestEnv::new();
    let (repo, _) = stretch(&env);
    let md = env
        .loopx_at(&repo, &at(3, 0), &["report", "--since", "2d", "--markdown"])
        .success()
        .stdout;
    assert!(md.contains("Heading") && md.contains("someone"), "{md}");
    for line in md.lines() {
        if line.trim_start().starts_with('#') {
            assert!(
                line.starts_with("## git loopx report")
                    || line.starts_with("## Goal ")
                    || line.starts_with("### "),
                "a heading we did not write: {line}"
            );
        }
    }
    let bare = md.replace("\\<", "").replace("\\]", "").replace("\\@", "");
    assert!(!bare.contains("<script"), "{md}");
    assert!(!bare.contains("]("), "{md}");
    assert!(!md.contains("@someone"), "{md}");
    assert!(md.contains("@\u{200B}someone"), "{md}");
    // The page form escapes it.
    let html = env
        .loopx_at(&repo, &at(3, 0), &["report", "--since", "2d", "--html"])
        .success()
        .stdout;
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
}

#[cfg(feature = "serve")]
#[test]
fn the_dashboard_links_the_report_as_a_page() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let todo = env.add_todo(&repo, HOSTILE);
    env.loopx(&repo, &["--agent", "a", "todo", "claim", &todo])
        .success();
    env.loopx(
        &repo,
        &[
            "--agent",
            "a",
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            HOSTILE,
        ],
    )
    .success();
    let serving = crate::serve::Serving::start(&env, &repo, &[]);
    let page = ureq::get(&format!("{}/", serving.url))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(
        page.contains("href=\"/report.html?since=24h\""),
        "the page links it"
    );
    let answer = ureq::get(&format!("{}/report.html?since=2d", serving.url))
        .call()
        .unwrap();
    assert_eq!(
        answer.header("Content-Type"),
        Some("text/html; charset=utf-8")
    );
    // No script, and only the page's own style, marked with a nonce of
    // this answer.
    let policy = answer.header("Content-Security-Policy").unwrap().to_owned();
    let nonce = policy
        .strip_prefix("default-src 'none'; style-src 'nonce-")
        .and_then(|rest| rest.strip_suffix("'; frame-ancestors 'none'"))
        .unwrap_or_else(|| panic!("{policy}"))
        .to_owned();
    assert!(nonce.len() >= 16, "{policy}");
    let html = answer.into_string().unwrap();
    assert_eq!(
        html.matches(&format!(" nonce=\"{nonce}\"")).count(),
        1,
        "{html}"
    );
    let cli = env
        .loopx(&repo, &["report", "--since", "2d", "--html"])
        .success()
        .stdout;
    assert_eq!(
        html.replace(&format!("<style nonce=\"{nonce}\">"), "<style>"),
        cli,
        "the page is the command's"
    );
    assert!(!html.contains("<script>alert"), "{html}");
}

/// "Done when" 3 of issue 46: the report's page in a phone's Chromium, 400
/// pixels wide, scrolls down only, with its style applied under the
/// server's policy.
#[cfg(feature = "serve")]
#[test]
fn the_reports_page_fits_a_phone_400_pixels_wide() {
    let Some(browser) = crate::serve::phone(400, 900) else {
        return;
    };
    let env = TestEnv::new();
    let (repo, _) = stretch(&env);
    // A word longer than the screen, from an agent.
    let long = "x".repeat(300);
    let todo = env.add_todo(&repo, &format!("A todo named {long}"));
    env.loopx_at(
        &repo,
        &at(2, 600),
        &["--agent", "agent-z", "todo", "claim", &todo],
    )
    .success();
    let mut cmd = env.loopx_cmd(&repo);
    cmd.env("LOOPX_NOW", at(3, 0))
        .args(["serve", "--port", "0"]);
    let serving = crate::serve::Serving::spawn_cmd(cmd);
    browser.goto(&format!("{}/report.html?since=2d", serving.url));
    let eval = |expr: &str| crate::serve::eval(&browser, expr);
    assert_eq!(
        eval("document.querySelector('meta[name=viewport]').content"),
        "width=device-width, initial-scale=1"
    );
    assert_eq!(
        eval("getComputedStyle(document.body).maxWidth"),
        "768px",
        "the page's style applies under the server's policy"
    );
    assert!(
        eval("document.querySelectorAll('h3').length").as_u64() >= Some(8),
        "the report's sections are headings"
    );
    let width = eval("[document.documentElement.scrollWidth, window.innerWidth]");
    let sticking_out = eval(
        "[...document.querySelectorAll('body *')]
           .filter(e => e.getBoundingClientRect().right > 420)
           .map(e => `${e.tagName.toLowerCase()} to ${Math.round(e.getBoundingClientRect().right)} px`)
           .slice(0, 10)",
    );
    let shot = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-400.png");
    browser.screenshot(&shot);
    let w = width.as_array().unwrap();
    assert!(
        w.iter().all(|v| v.as_f64().unwrap() <= 420.0),
        "[page width, viewport width] on a 400 px screen: {width}; wider: {sticking_out}"
    );
    assert_eq!(
        sticking_out,
        serde_json::json!([]),
        "nothing is wider than the screen"
    );
}

/// Issue 46, item 4: the report names what went wrong even when the agent
/// recovered since — failed `run` turns, a window spent to its allowance,
/// a lease that expired unused — the handoffs of the range, and what comes
/// next with the command for the person's part; each list stops at
/// `--limit` items and says how many more there are.
#[test]
fn the_report_names_what_went_wrong_and_what_comes_next() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let t0 = "2026-12-02T10:00:00Z";
    // Commits dated by the clock, so that `--since 1d` finds them.
    let l = |args: &[&str]| crate::week::at_time(&env, &repo, t0, args).success();
    for i in 1..=12 {
        l(&["todo", "add", &format!("Task {i}")]);
    }
    l(&["goal", "set", "--allowed-slots", "1"]);
    // Two failed turns, then one that works.
    crate::week::at_time(
        &env,
        &repo,
        t0,
        &[
            "--agent",
            "agent-a",
            "run",
            "--cmd",
            "exit 7",
            "--until-idle",
            "--max-failures",
            "2",
        ],
    )
    .failure(1);
    let agent = env.path("fake-agent");
    env.write_script(&agent, crate::run::FAKE_AGENT);
    crate::week::at_time(
        &env,
        &repo,
        t0,
        &[
            "--agent",
            "agent-a",
            "run",
            "--cmd",
            agent.to_str().unwrap(),
            "--max-turns",
            "1",
        ],
    )
    .success();
    let status = l(&["--json", "status"]).json();
    assert_eq!(
        status["agents"][0]["consecutive_failures"], 0,
        "it recovered"
    );
    // Its turn's spend used the window's one slot.
    // A lease that runs out, and a handoff.
    let next = l(&["--json", "todo", "list"]).json();
    let open: Vec<String> = next["todos"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "open")
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect();
    l(&[
        "--agent", "agent-b", "todo", "claim", &open[0], "--ttl", "5m",
    ]);
    l(&["--agent", "agent-c", "todo", "claim", &open[1]]);
    l(&[
        "--agent",
        "agent-c",
        "todo",
        "handoff",
        &open[1],
        "--to",
        "agent-d",
        "--note",
        "the parser is half done",
    ]);
    let last = open.last().unwrap();
    let gate = l(&["--json", "gate", "add", "Ship it?", "--unblocks", last]).json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let now = "2026-12-02T12:00:00Z";
    let r = env
        .loopx_at(&repo, now, &["--json", "report", "--since", "1d"])
        .success()
        .json();
    let g = &r["goals"][0];
    let turns = g["failed_turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert!(turns
        .iter()
        .all(|t| t["agent"] == "agent-a" && t["exit_code"] == 7));
    let kinds: Vec<&str> = g["risks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    for kind in ["failing_agent", "throttled", "expired_lease"] {
        assert!(kinds.contains(&kind), "{kind} in {}", g["risks"]);
    }
    let handoffs = g["review"]["handoffs"].as_array().unwrap();
    assert_eq!(handoffs.len(), 1, "{handoffs:?}");
    let first = &g["next_actions"][0];
    assert_eq!(first["by"], "you");
    assert_eq!(
        first["command"],
        format!("git loopx gate resolve {gate} --approve|--reject")
    );
    assert!(
        g["next_actions"].as_array().unwrap().len() >= 6,
        "the gate and the todos agents take next: {}",
        g["next_actions"]
    );

    let text = env
        .loopx_at(&repo, now, &["report", "--since", "1d", "--limit", "3"])
        .success()
        .stdout;
    for wanted in [
        "Next actions:",
        "Risks:",
        "agent-a failed 2 turn(s) in the range, and recovered",
        "the quota ran out in 1 window(s)",
        "lease on ",
        "Handoffs:",
        "the parser is half done",
        "and 3 more (git loopx report --since 1d --limit 0)",
    ] {
        assert!(text.contains(wanted), "{wanted:?} in {text}");
    }
    let all = env
        .loopx_at(&repo, now, &["report", "--since", "1d", "--limit", "0"])
        .success()
        .stdout;
    assert!(!all.contains(" more (git loopx report"), "{all}");
}

/// Issue 46, item 12: `--since 1w` and durations in parts are durations;
/// what is neither a duration nor a commit is refused saying both.
#[test]
fn a_range_is_a_duration_with_parts_or_a_revision() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    for since in ["1w", "1h30m", "1d12h"] {
        let r = env
            .loopx(&repo, &["--json", "report", "--since", since])
            .success()
            .json();
        assert!(r["from_time"].is_string(), "{since}: {r}");
    }
    let out = env.loopx(&repo, &["report", "--since", "1y"]).failure(2);
    assert!(
        out.stderr
            .contains("`1y` is neither a duration nor a commit git knows"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("1h30m"), "{}", out.stderr);
}
