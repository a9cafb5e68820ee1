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
    let l = |now: &str, args: &[&str]| -> crate::env::Run {
        env.loopx_cmd(&repo)
            .env_remove("GIT_COMMITTER_DATE")
            .env_remove("GIT_AUTHOR_DATE")
            .env("LOOPX_NOW", now)
            .args(args)
            .output()
            .expect("git-loopx runs")
            .into()
    };
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

fn goal<'a>(report: &'a Value, id: &str) -> &'a Value {
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
    assert_eq!(
        answer.header("Content-Security-Policy"),
        Some("default-src 'none'; frame-ancestors 'none'")
    );
    let html = answer.into_string().unwrap();
    let cli = env
        .loopx(&repo, &["report", "--since", "2d", "--html"])
        .success()
        .stdout;
    assert_eq!(html, cli, "the page is the command's");
    assert!(!html.contains("<script>alert"), "{html}");
}
