//! The turn protocol end to end: should-run → claim → writeback → spend,
//! quota throttling, turn receipts, review, and the prompt/status snapshots.

use crate::env::{Redactor, TestEnv};

const T0: &str = "2026-12-02T10:00:00Z";

#[test]
fn two_agents_run_full_turns_until_throttled() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["goal", "set", "--allowed-slots", "2"])
        .success();
    for agent in ["agent-a", "agent-b"] {
        env.loopx(&repo, &["agent", "register", agent]).success();
    }
    for text in ["tokenizer", "parser", "docs"] {
        env.loopx(&repo, &["todo", "add", text]).success();
    }
    let run = |agent: &str, now: &str, args: &[&str]| {
        let mut all = vec!["--json", "--agent", agent];
        all.extend_from_slice(args);
        env.loopx_at(&repo, now, &all)
    };

    // should-run without --turn is read-only.
    let tip = env.tip(&repo);
    let d = run("agent-a", T0, &["should-run"]).success().json();
    assert_eq!(
        (d["decision"].as_str(), d["effective_action"].as_str()),
        (Some("run"), Some("normal_run"))
    );
    assert_eq!(
        env.tip(&repo),
        tip,
        "should-run without --turn made a commit"
    );
    for key in [
        "decision",
        "should_run",
        "state",
        "effective_action",
        "reason",
        "selected_todo",
        "gates",
        "quota",
        "scheduler_hint",
        "notify_user",
    ] {
        assert!(d.get(key).is_some(), "should-run lacks {key}: {d}");
    }

    // Agents registered but none named: the automation must say who it is.
    let d = env.loopx(&repo, &["--json", "should-run"]).success().json();
    assert_eq!(d["effective_action"], "automation_prompt_upgrade_required");
    assert_eq!(d["should_run"], false);

    let mut spent_at = Vec::new();
    for (agent, now, turn) in [
        ("agent-a", T0, "a-1"),
        ("agent-b", "2026-12-02T11:00:00Z", "b-1"),
    ] {
        // 1. should-run with a turn key records one receipt; the same key replays it.
        let d = run(agent, now, &["should-run", "--turn", turn])
            .success()
            .json();
        assert_eq!(d["should_run"], true, "{d}");
        assert_eq!(d["turn"]["replayed"], false);
        let tip = env.tip(&repo);
        let again = run(agent, now, &["should-run", "--turn", turn])
            .success()
            .json();
        assert_eq!(again["turn"]["replayed"], true);
        assert_eq!(again["selected_todo"], d["selected_todo"]);
        assert_eq!(env.tip(&repo), tip, "a replayed turn writes nothing");
        let todo = d["selected_todo"]["id"].as_str().unwrap().to_owned();
        assert_eq!(d["selected_todo"]["claim_required"], true);

        // A spend without a writeback is refused.
        let refused = run(agent, now, &["quota", "spend", "--turn", turn])
            .failure(1)
            .json();
        assert_eq!(refused["error"]["code"], "nothing_to_spend");

        // 2. claim, 3. write back, 4. spend once.
        run(agent, now, &["todo", "claim", &todo]).success();
        let wb = run(
            agent,
            now,
            &[
                "writeback",
                "--todo",
                &todo,
                "--turn",
                turn,
                "--outcome",
                "outcome_progress",
                "--summary",
                "progress",
            ],
        )
        .success()
        .json();
        let wb_id = wb["run"]["id"].as_str().unwrap().to_owned();
        let spend = run(agent, now, &["quota", "spend", "--turn", turn])
            .success()
            .json();
        assert_eq!(
            (spend["spent"].as_bool(), spend["replayed"].as_bool()),
            (Some(true), Some(false))
        );
        assert_eq!(spend["spend"]["writeback"], wb_id.as_str());
        let tip = env.tip(&repo);
        let replay = run(agent, now, &["quota", "spend", "--writeback", &wb_id])
            .success()
            .json();
        assert_eq!(
            (replay["spent"].as_bool(), replay["replayed"].as_bool()),
            (Some(false), Some(true))
        );
        assert_eq!(
            replay["quota"]["spent_slots"],
            spend["quota"]["spent_slots"]
        );
        assert_eq!(env.tip(&repo), tip, "a replayed spend writes nothing");
        spent_at.push(now);
    }

    // Two slots of two are spent: throttled until the first spend leaves the 24h window.
    let later = "2026-12-02T12:00:00Z";
    let d = run("agent-a", later, &["should-run"]).success().json();
    assert_eq!(
        (d["state"].as_str(), d["effective_action"].as_str()),
        (Some("throttled"), Some("throttled_skip"))
    );
    assert_eq!(d["quota"]["spent_slots"], 2);
    assert_eq!(d["quota"]["next_eligible_at"], "2026-12-03T10:00:00Z");
    assert_eq!(d["scheduler_hint"]["wake_after_seconds"], 22 * 3600);
    // A further accountable writeback cannot be spent while throttled.
    let todo = run("agent-a", later, &["todo", "next", "--claim"])
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    run(
        "agent-a",
        later,
        &[
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "primary_goal_outcome",
            "--summary",
            "more",
        ],
    )
    .success();
    let refused = run("agent-a", later, &["quota", "spend"]).failure(1).json();
    assert_eq!(refused["error"]["code"], "throttled");
    // Voiding a spend frees its slot.
    let spends = run("agent-a", later, &["quota", "show"]).success().json();
    let first = spends["spends"][0]["id"].as_str().unwrap().to_owned();
    run(
        "agent-a",
        later,
        &["quota", "void", &first, "--note", "duplicate turn"],
    )
    .success();
    let d = run("agent-a", later, &["should-run"]).success().json();
    assert_eq!(d["state"], "eligible", "{d}");
    run("agent-a", later, &["quota", "spend"]).success();
    // At the moment the oldest spend leaves the window, the turn may run again.
    let d = run("agent-a", "2026-12-03T11:00:00Z", &["should-run"])
        .success()
        .json();
    assert_eq!(d["quota"]["spent_slots"], 1, "{d}");
    let _ = spent_at;
}

#[test]
fn should_run_on_corrupt_state_is_blocked_health_exit_3() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.commit_state_file(&repo, "goals/main/goal.yaml", "id: [\n");
    let out = env
        .loopx(&repo, &["--json", "--agent", "a", "should-run"])
        .failure(3)
        .json();
    assert_eq!(out["ok"], false);
    assert_eq!(out["state"], "blocked_health");
    assert_eq!(out["should_run"], false);
    assert_eq!(out["error"]["code"], "state_invalid");
}

#[test]
fn review_ack_then_one_writeback_shows_exactly_it() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env
        .loopx(&repo, &["--json", "todo", "add", "x"])
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let first = env.loopx(&repo, &["--json", "review"]).success().json();
    assert!(first["commits"].as_u64().unwrap() >= 2, "{first}");
    env.loopx(&repo, &["review", "--ack"]).success();
    assert_eq!(
        env.git(&repo, &["rev-parse", "refs/loopx/reviewed"]),
        env.tip(&repo)
    );
    let empty = env.loopx(&repo, &["--json", "review"]).success().json();
    assert_eq!(empty["commits"], 0);
    assert_eq!(empty["delivered"].as_array().unwrap().len(), 0);
    assert_eq!(empty["changes"].as_array().unwrap().len(), 0);
    assert!(env
        .loopx(&repo, &["review"])
        .success()
        .stdout
        .contains("Nothing new since the last review."));

    let wb = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a",
                "writeback",
                "--todo",
                &todo,
                "--outcome",
                "outcome_progress",
                "--summary",
                "did x",
            ],
        )
        .success()
        .json();
    let after = env.loopx(&repo, &["--json", "review"]).success().json();
    assert_eq!(after["commits"], 1);
    let delivered = after["delivered"].as_array().unwrap();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0]["id"], wb["run"]["id"]);
    assert_eq!(after["changes"].as_array().unwrap().len(), 0, "{after}");
    let md = env.loopx(&repo, &["review", "--markdown"]).success().stdout;
    assert!(md.starts_with("## Review of goal `main`"), "{md}");
    assert!(md.contains("did x"));
}

#[test]
fn prompt_and_status_read_well() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let mut r = Redactor::default();
    env.loopx(
        &repo,
        &[
            "goal",
            "set",
            "--next-action",
            "finish the tokenizer",
            "--guard",
            "no new dependencies",
            "--write-scope",
            "src/**",
        ],
    )
    .success();
    let t1 = env
        .loopx(
            &repo,
            &[
                "--json",
                "todo",
                "add",
                "Write the tokenizer",
                "--priority",
                "P1",
                "--validate",
                "cargo test -q",
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let t2 = env
        .loopx(&repo, &["--json", "todo", "add", "Publish the crate"])
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let g = env
        .loopx(
            &repo,
            &[
                "--json",
                "gate",
                "add",
                "Publish under MIT?",
                "--unblocks",
                &t2,
            ],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let u = env
        .loopx(
            &repo,
            &[
                "--json",
                "todo",
                "add",
                "Rotate the CI token",
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
    for id in [&t1, &t2, &g, &u] {
        r.redact(id);
    }
    env.loopx(
        &repo,
        &["--agent", "agent-a", "todo", "claim", &t1, "--ttl", "30m"],
    )
    .success();
    env.loopx(
        &repo,
        &[
            "--agent",
            "agent-a",
            "writeback",
            "--todo",
            &t1,
            "--outcome",
            "outcome_progress",
            "--summary",
            "lexer and tests",
        ],
    )
    .success();

    let claude = env
        .loopx(
            &repo,
            &[
                "--agent",
                "agent-a",
                "prompt",
                "--runtime",
                "claude-code",
                "--turn",
                "t-1",
            ],
        )
        .success()
        .stdout;
    insta::assert_snapshot!("prompt_claude_code_holder", r.redact(&claude));
    let generic = env
        .loopx(&repo, &["--agent", "agent-b", "prompt", "--turn", "t-2"])
        .success()
        .stdout;
    insta::assert_snapshot!("prompt_generic_waiting", r.redact(&generic));
    let status = env
        .loopx_at(&repo, "2026-12-02T10:10:00Z", &["status"])
        .success()
        .stdout;
    insta::assert_snapshot!("status_text", r.redact(&status));
    let json = env
        .loopx(
            &repo,
            &[
                "--agent",
                "agent-a",
                "--json",
                "prompt",
                "--runtime",
                "codex",
            ],
        )
        .success()
        .json();
    assert_eq!(json["runtime"], "codex");
    assert_eq!(json["todo"]["id"], t1.as_str());
}

/// `quota spend --turn K` before K's writeback is refused and writes
/// nothing: it used to charge an older unspent writeback, after which K's
/// own could never be charged.
#[test]
fn a_turns_spend_waits_for_that_turns_writeback() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "tokenizer");
    let run = |args: &[&str]| {
        let mut all = vec!["--json", "--agent", "agent-a"];
        all.extend_from_slice(args);
        env.loopx_at(&repo, T0, &all)
    };
    run(&["todo", "claim", &todo]).success();
    let writeback = |turn: &str| {
        run(&[
            "writeback",
            "--todo",
            &todo,
            "--turn",
            turn,
            "--outcome",
            "outcome_progress",
            "--summary",
            turn,
        ])
        .success()
        .json()["run"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let first = writeback("t-1");
    let tip = env.tip(&repo);
    let refused = run(&["quota", "spend", "--turn", "t-2"]).failure(1).json();
    assert_eq!(refused["error"]["code"], "nothing_to_spend", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("t-2"),
        "{refused}"
    );
    assert_eq!(env.tip(&repo), tip, "a refused spend writes nothing");
    let second = writeback("t-2");
    let spend = run(&["quota", "spend", "--turn", "t-2"]).success().json();
    assert_eq!(spend["spend"]["writeback"], second.as_str(), "{spend}");
    let spend = run(&["quota", "spend", "--turn", "t-1"]).success().json();
    assert_eq!(spend["spend"]["writeback"], first.as_str(), "{spend}");
}
