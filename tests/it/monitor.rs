//! Monitors (issue 17 point 3): `todo add --class continuous_monitor
//! --every`, `todo poll`, and should-run selecting a monitor only when it
//! is due and not expired, with LOOPX_NOW moving the clock.

use std::path::Path;

use crate::env::TestEnv;

const T_5M: &str = "2026-12-02T10:05:00Z";
const T_15M: &str = "2026-12-02T10:15:00Z";
const T_20M: &str = "2026-12-02T10:20:00Z";
const T_34M: &str = "2026-12-02T10:34:59Z";
const T_35M: &str = "2026-12-02T10:35:00Z";

fn add_monitor(env: &TestEnv, repo: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--json",
        "todo",
        "add",
        "Watch CI on main",
        "--class",
        "continuous_monitor",
    ];
    args.extend_from_slice(extra);
    env.loopx(repo, &args).success().json()["todo"].clone()
}

fn should_run(env: &TestEnv, repo: &Path, now: &str) -> serde_json::Value {
    env.loopx_at(repo, now, &["--json", "--agent", "a1", "should-run"])
        .success()
        .json()
}

fn poll(env: &TestEnv, repo: &Path, now: &str, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json", "--agent", "a1", "todo", "poll"];
    all.extend_from_slice(args);
    env.loopx_at(repo, now, &all).success().json()
}

#[test]
fn a_monitor_runs_when_due_and_waits_quietly_after_a_poll() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let m = add_monitor(&env, &repo, &["--every", "15m"]);
    let id = m["id"].as_str().unwrap().to_owned();
    assert_eq!(m["monitor"]["cadence"], "15m");
    // As in LoopX, a new monitor is first due one cadence after it is added.
    assert_eq!(m["monitor"]["next_due_at"], T_15M);

    let d = should_run(&env, &repo, T_5M);
    assert_eq!(
        (&d["decision"], &d["state"], &d["effective_action"]),
        (
            &"skip".into(),
            &"monitor_quiet".into(),
            &"monitor_quiet_skip".into()
        ),
        "{d}"
    );
    assert_eq!(
        d["scheduler_hint"]["action"],
        "backoff_until_material_transition"
    );
    assert_eq!(d["scheduler_hint"]["cadence_class"], "monitor_wait");
    assert_eq!(d["scheduler_hint"]["wake_after_seconds"], 600);
    let reason = d["reason"].as_str().unwrap();
    assert!(reason.contains(&id) && reason.contains(T_15M), "{reason}");
    assert!(d["selected_todo"].is_null());

    // Due: it is selected.
    let d = should_run(&env, &repo, T_15M);
    assert_eq!(d["effective_action"], "normal_run", "{d}");
    assert_eq!(d["selected_todo"]["id"], id.as_str());

    // A quiet poll at 10:20: one commit, next due at 10:35.
    let tip = env.tip(&repo);
    let r = poll(&env, &repo, T_20M, &[&id, "--quiet", "--note", "all green"]);
    assert_eq!(
        env.git(
            &repo,
            &["rev-list", "--count", &format!("{tip}..loopx-state")]
        ),
        "1"
    );
    assert_eq!(r["poll"]["material"], false);
    assert_eq!(r["poll"]["agent"], "a1");
    assert_eq!(r["poll"]["note"], "all green");
    let mon = &r["todo"]["monitor"];
    assert_eq!(mon["next_due_at"], T_35M);
    assert_eq!(mon["last_checked_at"], T_20M);
    assert_eq!(mon["consecutive_no_change"], 1);
    let subject = env.git(&repo, &["log", "-1", "--format=%s", "loopx-state"]);
    assert_eq!(subject, format!("todo poll {id}: quiet, next due {T_35M}"));

    // Not due: the exact seconds until it is.
    let d = should_run(&env, &repo, T_34M);
    assert_eq!(d["effective_action"], "monitor_quiet_skip", "{d}");
    assert_eq!(d["scheduler_hint"]["wake_after_seconds"], 1);
    let d = should_run(&env, &repo, T_20M);
    assert_eq!(d["scheduler_hint"]["wake_after_seconds"], 900);
    // Due again.
    let d = should_run(&env, &repo, T_35M);
    assert_eq!(d["selected_todo"]["id"], id.as_str(), "{d}");

    // todo show and status say when it is due and how the last poll went.
    let show = env.loopx_at(&repo, T_20M, &["todo", "show", &id]).success();
    assert!(
        show.stdout.contains(&format!(
            "# monitor: every 15m, next due {T_35M}, last poll {T_20M} quiet by a1"
        )),
        "{}",
        show.stdout
    );
    let status = env.loopx_at(&repo, T_20M, &["status"]).success();
    assert!(
        status
            .stdout
            .contains(&format!("every 15m, next due {T_35M}")),
        "{}",
        status.stdout
    );
    let status = env
        .loopx_at(&repo, T_20M, &["--json", "status"])
        .success()
        .json();
    assert_eq!(status["monitors"][0]["id"], id.as_str(), "{status}");
    assert_eq!(status["monitors"][0]["next_due_at"], T_35M);
    assert_eq!(status["monitors"][0]["last_poll"]["at"], T_20M);
}

#[test]
fn an_expired_monitor_is_not_selected_again() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let m = add_monitor(&env, &repo, &["--every", "15m", "--until", "30m"]);
    let id = m["id"].as_str().unwrap().to_owned();
    assert_eq!(m["monitor"]["expires_at"], "2026-12-02T10:30:00Z");
    // An RFC 3339 time works too.
    let m2 = add_monitor(
        &env,
        &repo,
        &["--every", "1h", "--until", "2026-12-03T00:00:00+01:00"],
    );
    assert_eq!(m2["monitor"]["expires_at"], "2026-12-02T23:00:00Z");
    env.loopx(
        &repo,
        &[
            "todo",
            "update",
            m2["id"].as_str().unwrap(),
            "--status",
            "blocked",
        ],
    )
    .success();

    assert_eq!(
        should_run(&env, &repo, T_15M)["selected_todo"]["id"],
        id.as_str()
    );
    let d = should_run(&env, &repo, "2026-12-02T10:30:00Z");
    assert!(d["selected_todo"].is_null(), "{d}");
    assert_ne!(d["effective_action"], "monitor_quiet_skip", "{d}");
    let show = env
        .loopx_at(&repo, "2026-12-02T10:30:00Z", &["todo", "show", &id])
        .success();
    assert!(
        show.stdout
            .contains("expired at 2026-12-02T10:30:00Z (not selected again)"),
        "{}",
        show.stdout
    );
}

#[test]
fn a_material_poll_counts_and_can_queue_the_work_it_found() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let m = add_monitor(&env, &repo, &["--every", "1h", "--watch-only"]);
    assert_eq!(m["monitor"]["watch_only"], true);
    let id = m["id"].as_str().unwrap().to_owned();
    // Its turn's prompt says how to poll, and not to change code.
    let p = env
        .loopx_at(
            &repo,
            "2026-12-02T11:00:00Z",
            &["--json", "--agent", "a1", "prompt"],
        )
        .success()
        .json();
    let text = p["prompt"].as_str().unwrap();
    assert!(
        text.contains(&format!("git loopx --agent a1 todo poll {id} --quiet")),
        "{text}"
    );
    assert!(text.contains("do not change code"), "{text}");
    poll(&env, &repo, T_5M, &[&id]);
    let r = poll(
        &env,
        &repo,
        T_15M,
        &[
            &id,
            "--material",
            "--note",
            "CI red on main",
            "--next",
            "Fix the red CI build",
        ],
    );
    let mon = &r["todo"]["monitor"];
    assert_eq!(mon["material_change_generation"], 1);
    assert!(mon.get("consecutive_no_change").is_none(), "reset: {mon}");
    assert_eq!(mon["next_due_at"], "2026-12-02T11:15:00Z");
    let follow = r["follow_up"]["id"].as_str().unwrap().to_owned();
    assert_eq!(r["poll"]["follow_up"], follow.as_str());
    assert_eq!(r["follow_up"]["class"], "advancement_task");
    assert_eq!(r["follow_up"]["text"], "Fix the red CI build");
    // The work found is what the agent takes next.
    let d = should_run(&env, &repo, T_20M);
    assert_eq!(d["selected_todo"]["id"], follow.as_str(), "{d}");

    // Only the last 20 polls are kept.
    for i in 0..22 {
        let now = format!("2026-12-02T12:{i:02}:00Z");
        poll(&env, &repo, &now, &[&id]);
    }
    let t = env
        .loopx(&repo, &["--json", "todo", "show", &id])
        .success()
        .json();
    let polls = t["todo"]["monitor"]["polls"].as_array().unwrap();
    assert_eq!(polls.len(), 20);
    assert_eq!(polls[0]["at"], "2026-12-02T12:02:00Z");
    assert_eq!(t["todo"]["monitor"]["consecutive_no_change"], 22);
}

#[test]
fn bad_monitor_input_is_refused_naming_the_flag() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let tip = env.tip(&repo);
    let refused = |args: &[&str], needle: &str| {
        let mut all = vec!["--json", "todo", "add", "Watch it"];
        all.extend_from_slice(args);
        let out = env.loopx(&repo, &all).failure(2).json();
        assert_eq!(out["error"]["code"], "invalid_input", "{out}");
        let text = format!("{} {}", out["error"]["message"], out["error"]["hint"]);
        assert!(text.contains(needle), "{args:?}: {text}");
    };
    let mon = ["--class", "continuous_monitor"];
    refused(&mon, "--every");
    refused(&[&mon[..], &["--every", "30s"]].concat(), "--every");
    refused(&[&mon[..], &["--every", "soon"]].concat(), "--every");
    refused(&[&mon[..], &["--every", "0m"]].concat(), "--every");
    refused(&[&mon[..], &["--every", "400d"]].concat(), "--every");
    refused(
        &[&mon[..], &["--every", "1h", "--until", "later"]].concat(),
        "--until",
    );
    refused(
        &[
            &mon[..],
            &["--every", "1h", "--until", "2020-01-01T00:00:00Z"],
        ]
        .concat(),
        "--until",
    );
    refused(&["--every", "15m"], "--every");
    refused(&["--watch-only"], "--watch-only");
    assert_eq!(env.tip(&repo), tip, "nothing written");

    // Polling what is not a monitor.
    let task = env.add_todo(&repo, "Write the parser");
    let out = env
        .loopx(&repo, &["--json", "todo", "poll", &task])
        .failure(2)
        .json();
    assert_eq!(out["error"]["code"], "invalid_input");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("continuous_monitor"));
    // --next without --material is a usage error.
    let m = add_monitor(&env, &repo, &["--every", "15m"]);
    env.loopx(
        &repo,
        &["todo", "poll", m["id"].as_str().unwrap(), "--next", "x"],
    )
    .failure(2);
}

#[test]
fn a_claimed_monitor_is_polled_by_its_holder_only() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let m = add_monitor(&env, &repo, &["--every", "15m"]);
    let id = m["id"].as_str().unwrap().to_owned();
    env.loopx_at(&repo, T_15M, &["--agent", "a1", "todo", "claim", &id])
        .success();
    let out = env
        .loopx_at(
            &repo,
            T_20M,
            &["--json", "--agent", "a2", "todo", "poll", &id],
        )
        .failure(1)
        .json();
    assert_eq!(out["error"]["code"], "not_claim_holder", "{out}");
    // The holder polls; the claim is kept.
    let r = poll(&env, &repo, T_20M, &[&id]);
    assert_eq!(r["todo"]["claim"]["agent"], "a1");
}

/// Issue 46, item 12: a cadence in parts (`1h30m`) is a duration.
#[test]
fn a_cadence_may_be_given_in_parts() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let m = add_monitor(&env, &repo, &["--every", "1h30m"]);
    assert_eq!(m["monitor"]["cadence"], "1h30m");
    assert_eq!(m["monitor"]["next_due_at"], "2026-12-02T11:30:00Z");
}
