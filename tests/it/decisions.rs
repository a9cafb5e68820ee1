//! Per-turn decisions, scenario by scenario (issue 17): each scenario is
//! built with the real binary, and should-run's answer is checked field by
//! field. Each row matches LoopX 2.1.1's answer or is listed, with the
//! reason it differs, in docs/loopx-compat.md ("Per-turn decisions").
//! `scripts/compare-reference.sh` runs the same scenarios on the reference.

use std::path::Path;

use serde_json::Value;

use crate::env::TestEnv;

const T0: &str = "2026-12-02T10:00:00Z";
const T_5M: &str = "2026-12-02T10:05:00Z";
const T_15M: &str = "2026-12-02T10:15:00Z";

/// What a scenario must answer.
struct Expected {
    decision: &'static str,
    state: &'static str,
    effective_action: &'static str,
    /// The label of the todo that must be selected (none: no selected todo).
    selected: Option<&'static str>,
    hint: &'static str,
    notify_user: bool,
}

/// A scenario's repository: its todos by label, and the agent to ask as.
struct Built {
    todos: Vec<(&'static str, String)>,
    agent: &'static str,
    now: &'static str,
}

fn loopx(env: &TestEnv, repo: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.loopx(repo, &all).success().json()
}

fn add(env: &TestEnv, repo: &Path, text: &str, extra: &[&str]) -> String {
    let mut args = vec!["todo", "add", text];
    args.extend_from_slice(extra);
    loopx(env, repo, &args)["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn gate(env: &TestEnv, repo: &Path, extra: &[&str]) -> String {
    let mut args = vec!["gate", "add", "Ship to production?"];
    args.extend_from_slice(extra);
    loopx(env, repo, &args)["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn register(env: &TestEnv, repo: &Path, agents: &[&str]) {
    for a in agents {
        loopx(env, repo, &["agent", "register", a]);
    }
}

fn built(todos: Vec<(&'static str, String)>, agent: &'static str) -> Built {
    Built {
        todos,
        agent,
        now: T0,
    }
}

fn should_run(env: &TestEnv, repo: &Path, agent: &str, now: &str) -> Value {
    env.loopx_at(repo, now, &["--json", "--agent", agent, "should-run"])
        .success()
        .json()
}

type Build = fn(&TestEnv, &Path) -> Built;

#[test]
fn the_eight_scenarios_decide_as_documented() {
    let exp = |decision, state, effective_action, selected, hint, notify_user| Expected {
        decision,
        state,
        effective_action,
        selected,
        hint,
        notify_user,
    };
    let gate_skip = || {
        exp(
            "skip",
            "operator_gate",
            "operator_gate_notify",
            None,
            "backoff_waiting_for_user",
            true,
        )
    };
    let cases: Vec<(&str, Build, Expected)> = vec![
        (
            "a. a global gate and an independent todo: all work stops",
            |env, repo| {
                let x = add(env, repo, "independent work", &[]);
                gate(env, repo, &["--global"]);
                built(vec![("x", x)], "a1")
            },
            // LoopX also names the todo it would run while it skips
            // (docs/loopx-compat.md, scenario a): a selected todo here
            // always means "work on this now".
            gate_skip(),
        ),
        (
            "b. a gate with no scope is global",
            |env, repo| {
                let x = add(env, repo, "independent work", &[]);
                gate(env, repo, &[]);
                built(vec![("x", x)], "a1")
            },
            gate_skip(),
        ),
        (
            "c. a gate for agent a1: a1 waits, whatever else is open",
            |env, repo| {
                register(env, repo, &["a1", "a2"]);
                let x = add(env, repo, "other work", &[]);
                gate(env, repo, &["--blocks-agent", "a1"]);
                built(vec![("x", x)], "a1")
            },
            gate_skip(),
        ),
        (
            "c. a gate for agent a1: a2 goes on",
            |env, repo| {
                register(env, repo, &["a1", "a2"]);
                let x = add(env, repo, "other work", &[]);
                gate(env, repo, &["--blocks-agent", "a1"]);
                built(vec![("x", x)], "a2")
            },
            exp("run", "eligible", "normal_run", Some("x"), "run_now", false),
        ),
        (
            "c/U. a gate for one todo: other work goes on, the user is told",
            |env, repo| {
                let held = add(env, repo, "held work", &["--priority", "P0"]);
                let free = add(env, repo, "free work", &["--priority", "P3"]);
                gate(env, repo, &["--unblocks", &held]);
                built(vec![("held", held), ("free", free)], "a1")
            },
            exp(
                "run",
                "eligible",
                "safe_bypass_user_gate_fallback",
                Some("free"),
                "run_now",
                true,
            ),
        ),
        (
            "d. a new goal with no todo: a planning turn",
            |_, _| built(vec![], "a1"),
            exp("run", "plan", "plan_required", None, "run_now", false),
        ),
        (
            "e. a deferred successor after its predecessor is done",
            |env, repo| {
                let a = add(env, repo, "first step", &[]);
                let b = add(
                    env,
                    repo,
                    "second step",
                    &["--resume-when", &format!("todo_done:{a}")],
                );
                loopx(env, repo, &["todo", "update", &b, "--status", "deferred"]);
                loopx(env, repo, &["--agent", "a1", "todo", "claim", &a]);
                loopx(
                    env,
                    repo,
                    &["--agent", "a1", "todo", "done", &a, "--evidence", "tests"],
                );
                built(vec![("a", a), ("b", b)], "a1")
            },
            exp(
                "run",
                "eligible",
                "successor_replan_required",
                Some("b"),
                "run_now",
                false,
            ),
        ),
        (
            "f. only blocked todos: a replan turn",
            |env, repo| {
                let x = add(env, repo, "stuck work", &[]);
                loopx(env, repo, &["todo", "update", &x, "--status", "blocked"]);
                built(vec![("x", x)], "a1")
            },
            exp("run", "replan", "replan_required", None, "run_now", false),
        ),
        (
            "f. only blocked todos, replanning turned off: wait",
            |env, repo| {
                let x = add(env, repo, "stuck work", &[]);
                loopx(env, repo, &["todo", "update", &x, "--status", "blocked"]);
                loopx(
                    env,
                    repo,
                    &["goal", "set", "--replan-when-blocked", "false"],
                );
                built(vec![("x", x)], "a1")
            },
            exp(
                "skip",
                "waiting",
                "blocked_wait",
                None,
                "backoff_until_state_change",
                false,
            ),
        ),
        (
            "g. a monitor not due",
            |env, repo| {
                let m = add(
                    env,
                    repo,
                    "watch CI",
                    &["--class", "continuous_monitor", "--every", "15m"],
                );
                Built {
                    now: T_5M,
                    ..built(vec![("m", m)], "a1")
                }
            },
            exp(
                "skip",
                "monitor_quiet",
                "monitor_quiet_skip",
                None,
                "backoff_until_material_transition",
                false,
            ),
        ),
        (
            "g. the same monitor, due",
            |env, repo| {
                let m = add(
                    env,
                    repo,
                    "watch CI",
                    &["--class", "continuous_monitor", "--every", "15m"],
                );
                Built {
                    now: T_15M,
                    ..built(vec![("m", m)], "a1")
                }
            },
            exp("run", "eligible", "normal_run", Some("m"), "run_now", false),
        ),
        (
            "h. a user_action reminder: work goes on, the user is told",
            |env, repo| {
                let x = add(env, repo, "agent work", &[]);
                add(
                    env,
                    repo,
                    "renew the certificate",
                    &["--role", "user", "--class", "user_action"],
                );
                built(vec![("x", x)], "a1")
            },
            exp("run", "eligible", "normal_run", Some("x"), "run_now", true),
        ),
    ];
    let env = TestEnv::new();
    for (i, (name, build, want)) in cases.into_iter().enumerate() {
        let repo = env.state_repo(&format!("scenario-{i}"));
        let b = build(&env, &repo);
        let d = should_run(&env, &repo, b.agent, b.now);
        let selected = d["selected_todo"]["id"].as_str().map(|id| {
            b.todos
                .iter()
                .find(|(_, t)| t == id)
                .map_or("<another todo>", |(label, _)| *label)
        });
        assert_eq!(
            (
                d["decision"].as_str().unwrap(),
                d["state"].as_str().unwrap(),
                d["effective_action"].as_str().unwrap(),
                selected,
                d["scheduler_hint"]["action"].as_str().unwrap(),
                d["notify_user"].as_bool().unwrap(),
            ),
            (
                want.decision,
                want.state,
                want.effective_action,
                want.selected,
                want.hint,
                want.notify_user,
            ),
            "{name}: {d:#}"
        );
        assert_eq!(d["should_run"], want.decision == "run", "{name}");
    }
}

#[test]
fn a_successor_is_opened_by_its_claim() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let a = add(&env, &repo, "first step", &[]);
    let b = add(
        &env,
        &repo,
        "second step",
        &["--resume-when", &format!("todo_done:{a}")],
    );
    loopx(&env, &repo, &["todo", "update", &b, "--status", "deferred"]);
    // While its predecessor is open, the successor waits and cannot be taken.
    let r = env
        .loopx(&repo, &["--json", "--agent", "a1", "todo", "claim", &b])
        .failure(2);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("deferred"));
    loopx(&env, &repo, &["--agent", "a1", "todo", "claim", &a]);
    loopx(
        &env,
        &repo,
        &["--agent", "a1", "todo", "done", &a, "--evidence", "tests"],
    );
    let r = loopx(&env, &repo, &["--agent", "a1", "todo", "next", "--claim"]);
    assert_eq!(r["todo"]["id"], b.as_str());
    assert_eq!(r["todo"]["status"], "open");
    assert_eq!(r["claim"]["agent"], "a1");
}

#[test]
fn a_goal_ends_only_by_an_explicit_recorded_decision() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let x = env.add_todo(&repo, "the only work");
    loopx(&env, &repo, &["--agent", "a1", "todo", "claim", &x]);
    loopx(
        &env,
        &repo,
        &[
            "--agent",
            "a1",
            "todo",
            "done",
            &x,
            "--evidence",
            "tests pass",
        ],
    );
    // All done, nothing recorded: plan again, and tell the user.
    let d = should_run(&env, &repo, "a1", T0);
    assert_eq!(
        (&d["effective_action"], &d["notify_user"]),
        (&"plan_required".into(), &true.into()),
        "{d}"
    );

    // `goal done` by a person: the end, with who and why.
    let tip = env.tip(&repo);
    let g = loopx(&env, &repo, &["goal", "done", "--note", "parser shipped"]);
    assert_eq!(g["goal"]["status"], "done");
    assert_eq!(g["goal"]["done_note"], "parser shipped");
    assert!(g["goal"]["done_by"].as_str().unwrap().contains('@'), "{g}");
    assert_eq!(
        env.git(
            &repo,
            &["rev-list", "--count", &format!("{tip}..loopx-state")]
        ),
        "1"
    );
    let d = should_run(&env, &repo, "a1", T0);
    assert_eq!(
        (
            &d["decision"],
            &d["state"],
            &d["effective_action"],
            &d["scheduler_hint"]["action"]
        ),
        (
            &"skip".into(),
            &"terminal_no_followup".into(),
            &"terminal_no_followup".into(),
            &"stop_until_explicit_resume".into()
        ),
        "{d}"
    );
    assert!(d["reason"].as_str().unwrap().contains("parser shipped"));
    // Marking it twice is refused; resume reopens it and forgets the marker.
    env.loopx(&repo, &["--json", "goal", "done"]).failure(2);
    let g = loopx(&env, &repo, &["goal", "resume"]);
    assert_eq!(g["goal"]["status"], "active");
    assert!(g["goal"]["done_by"].is_null());
    assert_eq!(
        should_run(&env, &repo, "a1", T0)["effective_action"],
        "plan_required"
    );

    // `todo done --no-follow-up` on the last open todo ends the goal in the
    // same commit; on a todo with others still open it does not.
    let y = env.add_todo(&repo, "last work");
    let z = env.add_todo(&repo, "more work");
    loopx(&env, &repo, &["--agent", "a1", "todo", "claim", &y]);
    let r = loopx(
        &env,
        &repo,
        &[
            "--agent",
            "a1",
            "todo",
            "done",
            &y,
            "--evidence",
            "done",
            "--no-follow-up",
        ],
    );
    assert!(r.get("goal_done").is_none(), "{r}");
    loopx(&env, &repo, &["--agent", "a1", "todo", "claim", &z]);
    let tip = env.tip(&repo);
    let r = loopx(
        &env,
        &repo,
        &[
            "--agent",
            "a1",
            "todo",
            "done",
            &z,
            "--evidence",
            "all shipped",
            "--no-follow-up",
        ],
    );
    assert_eq!(r["goal_done"], true, "{r}");
    assert_eq!(
        env.git(
            &repo,
            &["rev-list", "--count", &format!("{tip}..loopx-state")]
        ),
        "1"
    );
    let g = loopx(&env, &repo, &["goal", "show"]);
    assert_eq!(g["goal"]["done_by"], "a1");
    assert!(g["goal"]["done_note"]
        .as_str()
        .unwrap()
        .contains("all shipped"));
    assert_eq!(
        should_run(&env, &repo, "a1", T0)["state"],
        "terminal_no_followup"
    );
}

#[test]
fn a_planning_turn_writes_back_on_the_goal_and_is_not_repeated_when_it_plans_nothing() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let turn = |key: &str| {
        env.loopx(
            &repo,
            &["--json", "--agent", "a1", "should-run", "--turn", key],
        )
        .success()
        .json()
    };
    let d = turn("t1");
    assert_eq!(d["effective_action"], "plan_required");
    // The prompt asks for todos or the goal's end, and a goal-level writeback.
    let p = env
        .loopx(&repo, &["--agent", "a1", "prompt", "--turn", "t1"])
        .success()
        .stdout;
    assert!(p.contains("git loopx --agent a1 todo add"), "{p}");
    assert!(p.contains("git loopx --agent a1 goal done"), "{p}");
    assert!(
        p.contains("git loopx --agent a1 writeback --turn t1"),
        "{p}"
    );
    // The agent plans nothing and says so.
    let w = loopx(
        &env,
        &repo,
        &[
            "--agent",
            "a1",
            "writeback",
            "--turn",
            "t1",
            "--outcome",
            "surface_only",
            "--summary",
            "nothing to plan",
        ],
    );
    assert!(w["run"]["todo"].is_null(), "{w}");
    // Not asked again: the goal waits for a person, who is told.
    let d = turn("t2");
    assert_eq!(
        (&d["decision"], &d["effective_action"], &d["notify_user"]),
        (&"skip".into(), &"blocked_wait".into(), &true.into()),
        "{d}"
    );
    // A person adds work: the next turn runs on it.
    let x = env.add_todo(&repo, "new work");
    let d = turn("t3");
    assert_eq!(d["selected_todo"]["id"], x.as_str(), "{d}");
    // A goal-level writeback holds no claim: --epoch without --todo is refused.
    env.loopx(
        &repo,
        &[
            "--json",
            "--agent",
            "a1",
            "writeback",
            "--outcome",
            "surface_only",
            "--summary",
            "s",
            "--epoch",
            "1",
        ],
    )
    .failure(2);
}

#[test]
fn a_replan_turn_lists_the_blocked_todos() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let x = env.add_todo(&repo, "stuck work");
    loopx(
        &env,
        &repo,
        &[
            "todo",
            "update",
            &x,
            "--status",
            "blocked",
            "--note",
            "the API key expired",
        ],
    );
    let p = env
        .loopx(&repo, &["--agent", "a1", "prompt", "--turn", "t1"])
        .success()
        .stdout;
    assert!(p.contains("replan"), "{p}");
    assert!(p.contains(&x) && p.contains("the API key expired"), "{p}");
    assert!(p.contains("--status open"), "{p}");
}
