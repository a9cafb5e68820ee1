//! Gates are the person's (issue 14): every way an acting agent could answer,
//! change, hold or record work on a gate is refused with `gate_reserved`,
//! and a person's resolution records who made it.

use std::path::{Path, PathBuf};

use crate::env::{run_with_stdin, TestEnv};

/// A state repository with one open agent todo and one open global gate
/// (asked by agent a1): (repo, todo id, gate id).
fn with_gate(env: &TestEnv) -> (PathBuf, String, String) {
    let repo = env.state_repo("repo");
    let todo = env.add_todo(&repo, "Write the parser");
    let gate = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "gate",
                "add",
                "May we publish under MIT?",
            ],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (repo, todo, gate)
}

/// Runs git-loopx as agent a1 and checks it was refused with
/// `gate_reserved`, naming the gate and the agent, and wrote nothing.
#[track_caller]
fn refused(env: &TestEnv, repo: &Path, gate: &str, args: &[&str]) -> serde_json::Value {
    let before = env.tip(repo);
    let mut all = vec!["--json", "--agent", "a1"];
    all.extend_from_slice(args);
    let out = env.loopx(repo, &all).failure(1).json();
    assert_eq!(out["error"]["code"], "gate_reserved", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(gate), "{message}");
    assert!(message.contains("a1"), "{message}");
    // The hint sends the agent to the person, and names no way around.
    let hint = out["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("ask the person"), "{hint}");
    for around in ["without", "LOOPX_AGENT", "--agent", "loopx.agent"] {
        assert!(!hint.contains(around), "{hint}");
    }
    assert_eq!(
        env.tip(repo),
        before,
        "a refused write leaves the state alone"
    );
    out
}

fn gate_status(env: &TestEnv, repo: &Path, gate: &str) -> serde_json::Value {
    env.loopx(repo, &["--json", "todo", "show", gate])
        .success()
        .json()["todo"]
        .clone()
}

#[test]
fn an_agent_cannot_resolve_a_gate() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    refused(&env, &repo, &gate, &["gate", "resolve", &gate, "--approve"]);
    assert_eq!(gate_status(&env, &repo, &gate)["status"], "open");
}

#[test]
fn an_agent_named_by_environment_or_config_cannot_resolve_a_gate() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    let out = env
        .loopx_cmd(&repo)
        .env("LOOPX_AGENT", "a2")
        .args(["--json", "gate", "resolve", &gate, "--reject"])
        .output()
        .unwrap();
    let run = crate::env::Run::from(out).failure(1).json();
    assert_eq!(run["error"]["code"], "gate_reserved");
    assert!(run["error"]["message"].as_str().unwrap().contains("a2"));
    env.git(&repo, &["config", "loopx.agent", "a3"]);
    let run = env
        .loopx(&repo, &["--json", "gate", "resolve", &gate, "--cancel"])
        .failure(1)
        .json();
    assert_eq!(run["error"]["code"], "gate_reserved");
    assert!(run["error"]["message"].as_str().unwrap().contains("a3"));
    assert_eq!(gate_status(&env, &repo, &gate)["status"], "open");
}

#[test]
fn an_agent_cannot_defer_a_gate() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    let out = refused(
        &env,
        &repo,
        &gate,
        &["todo", "update", &gate, "--status", "deferred"],
    );
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("cannot defer"));
}

#[test]
fn an_agent_cannot_update_a_gate() {
    let env = TestEnv::new();
    let (repo, todo, gate) = with_gate(&env);
    let resume = format!("todo_done:{todo}");
    for args in [
        &["--status", "blocked"][..],
        &["--note", "I think yes"],
        &["--priority", "P4"],
        &["--text", "Never mind"],
        &["--resume-when", &resume],
    ] {
        let mut all = vec!["todo", "update", gate.as_str()];
        all.extend_from_slice(args);
        refused(&env, &repo, &gate, &all);
    }
    let g = gate_status(&env, &repo, &gate);
    assert_eq!(g["status"], "open");
    assert_eq!(g["priority"], "P1");
    assert!(g.get("notes").is_none(), "{g}");
}

#[test]
fn an_agent_cannot_claim_a_gate() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    refused(&env, &repo, &gate, &["todo", "claim", &gate]);
    assert!(gate_status(&env, &repo, &gate).get("claim").is_none());
}

#[test]
fn next_claim_never_picks_a_gate() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["gate", "add", "Ship it?"]).success();
    let out = env
        .loopx(
            &repo,
            &["--json", "--agent", "a1", "todo", "next", "--claim"],
        )
        .failure(1)
        .json();
    assert_eq!(out["error"]["code"], "nothing_ready", "{out}");
}

#[test]
fn an_agent_cannot_claim_a_gate_through_the_remote() {
    let env = TestEnv::new();
    let (_remote, clones) = env.shared_state(&["a"]);
    let repo = &clones[0];
    let gate = env
        .loopx(repo, &["--json", "gate", "add", "Ship it?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx(repo, &["sync"]).success();
    refused(&env, repo, &gate, &["todo", "claim", &gate, "--sync"]);
}

#[test]
fn an_agent_cannot_renew_release_or_hand_off_a_gate() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    refused(&env, &repo, &gate, &["todo", "renew", &gate]);
    refused(&env, &repo, &gate, &["todo", "release", &gate]);
    let out = refused(
        &env,
        &repo,
        &gate,
        &["todo", "handoff", &gate, "--to", "b1", "--note", "yours"],
    );
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("hand off"));
}

#[test]
fn an_agent_cannot_complete_a_gate() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    refused(
        &env,
        &repo,
        &gate,
        &["todo", "done", &gate, "--evidence", "approved it myself"],
    );
    // A person is told to resolve it instead, as before.
    let out = env
        .loopx(&repo, &["--json", "todo", "done", &gate, "--evidence", "x"])
        .failure(2)
        .json();
    assert_eq!(out["error"]["code"], "invalid_input");
}

#[test]
fn an_agent_cannot_write_back_on_a_gate() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    refused(
        &env,
        &repo,
        &gate,
        &[
            "writeback",
            "--todo",
            &gate,
            "--outcome",
            "outcome_progress",
            "--summary",
            "decided",
        ],
    );
}

#[test]
fn an_agent_cannot_spend_on_a_writeback_on_a_gate() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let todo = env.add_todo(&repo, "Write the parser");
    // Only a hand-made commit (or an older git-loopx) puts a writeback on a
    // gate: record one on the agent todo (before a1's gate holds its work),
    // then retarget it by hand.
    let run = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "writeback",
                "--todo",
                &todo,
                "--outcome",
                "outcome_progress",
                "--summary",
                "work",
            ],
        )
        .success()
        .json()["run"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let gate = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "gate",
                "add",
                "May we publish under MIT?",
            ],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = env.state_path_of(&repo, &run);
    let text = env.state_file(&repo, &path).replace(&todo, &gate);
    env.commit_state_file(&repo, &path, &format!("{text}\n"));
    refused(&env, &repo, &gate, &["quota", "spend", "--writeback", &run]);
    // Picked without --writeback, it is refused the same way.
    refused(&env, &repo, &gate, &["quota", "spend"]);
}

#[test]
fn a_persons_resolution_names_them_in_review_status_and_gate_list() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_gate(&env);
    env.git(&repo, &["config", "user.name", "Pat Person"]);
    env.git(&repo, &["config", "user.email", "pat@example.com"]);
    let resolved = env
        .loopx_cmd(&repo)
        .env_remove("GIT_COMMITTER_NAME")
        .env_remove("GIT_COMMITTER_EMAIL")
        .args(["--json", "gate", "resolve", &gate, "--approve"])
        .output()
        .unwrap();
    let resolved = crate::env::Run::from(resolved).success().json();
    let who = "Pat Person <pat@example.com>";
    assert_eq!(resolved["gate"]["resolved_by"], who);
    assert_eq!(resolved["gate"]["resolved_at"], crate::env::NOW);
    // The state file carries it, and so does the commit's committer.
    let file = env.state_file(&repo, &env.state_path_of(&repo, &gate));
    assert!(
        file.contains("resolved_by: Pat Person <pat@example.com>"),
        "{file}"
    );
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%cn <%ce>", "loopx-state"]),
        who
    );

    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(status["answered"][0]["id"], gate.as_str());
    assert_eq!(status["answered"][0]["resolved_by"], who);
    assert_eq!(status["answered"][0]["decision"], "approve");
    assert_eq!(status["answered"][0]["counts"], true);
    assert!(status["gates"].as_array().unwrap().is_empty());
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(text.contains("Answered gates:"), "{text}");
    assert!(
        text.contains(&format!("{gate}  approve by {who} at {}", crate::env::NOW)),
        "{text}"
    );

    let review = env.loopx(&repo, &["--json", "review"]).success().json();
    assert_eq!(review["answered"][0]["id"], gate.as_str());
    assert_eq!(review["answered"][0]["resolved_by"], who);
    let text = env.loopx(&repo, &["review"]).success().stdout;
    assert!(text.contains("Answered:"), "{text}");
    assert!(text.contains(&format!("approve by {who}")), "{text}");

    let list = env
        .loopx(&repo, &["gate", "list", "--all"])
        .success()
        .stdout;
    assert!(list.contains(&format!("(approve by {who}")), "{list}");
}

/// A person's ssh signing key in the test's HOME, set up as git's signing
/// key in `repo`; returns the public key file.
pub(crate) fn signing_key(env: &TestEnv, repo: &Path, name: &str) -> PathBuf {
    let key = env.path(&format!("home/{name}"));
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .expect("ssh-keygen runs: these tests need openssh-client (ssh-keygen) on the machine");
    assert!(made.status.success(), "{made:?}");
    let public = key.with_extension("pub");
    env.git(repo, &["config", "gpg.format", "ssh"]);
    env.git(
        repo,
        &["config", "user.signingkey", public.to_str().unwrap()],
    );
    public
}

/// A repository whose agent todo waits for a gate, with a gate signer.
fn with_policy(env: &TestEnv) -> (PathBuf, String, String) {
    let repo = env.state_repo("repo");
    let todo = env.add_todo(&repo, "Publish the crate");
    let gate = env
        .loopx(
            &repo,
            &["--json", "gate", "add", "Publish?", "--unblocks", &todo],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = signing_key(env, &repo, "person");
    env.loopx(&repo, &["gate", "signers", "add", key.to_str().unwrap()])
        .success();
    let tip = env.tip(&repo);
    assert_eq!(
        env.git(&repo, &["log", "-1", "--format=%G?", &tip]).len(),
        1,
        "the policy's commit carries a signature"
    );
    assert!(env
        .state_file(&repo, "loopx.yaml")
        .contains("gate_signers:"));
    (repo, todo, gate)
}

/// Resolves `gate` by hand, as an agent in a sandbox without the person's
/// key could: an unsigned commit that marks it approved.
pub(crate) fn hand_resolve(env: &TestEnv, repo: &Path, gate: &str) {
    let path = env.state_path_of(repo, gate);
    let text = env
        .state_file(repo, &path)
        .replace("status: open", "status: done")
        .replace("global: true", "global: true\ndecision: approve");
    env.commit_state_file(repo, &path, &format!("{text}\n"));
}

fn should_run(env: &TestEnv, repo: &Path) -> serde_json::Value {
    env.loopx(repo, &["--json", "--agent", "a1", "should-run"])
        .json()
}

#[test]
fn a_signed_resolution_counts() {
    let env = TestEnv::new();
    let (repo, todo, gate) = with_policy(&env);
    assert_eq!(should_run(&env, &repo)["should_run"], false);
    env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
        .success();
    let tip = env.tip(&repo);
    let signature = env.git(&repo, &["cat-file", "commit", &tip]);
    assert!(signature.contains("gpgsig"), "{signature}");
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert!(status["gates"].as_array().unwrap().is_empty(), "{status}");
    assert_eq!(status["answered"][0]["counts"], true);
    let run = should_run(&env, &repo);
    assert_eq!(run["should_run"], true, "{run}");
    assert_eq!(run["selected_todo"]["id"], todo.as_str(), "{run}");
}

#[test]
fn an_unsigned_resolution_does_not_count() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_policy(&env);
    hand_resolve(&env, &repo, &gate);
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(status["gates"][0]["id"], gate.as_str(), "{status}");
    assert_eq!(status["gates"][0]["resolution_not_signed"], true);
    assert_eq!(status["answered"][0]["counts"], false);
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(
        text.contains("an answer not made by you was ignored")
            && text.contains("(not signed by a gate signer)"),
        "{text}"
    );
    assert_eq!(
        status["ignored_answers"][0]["gate"],
        gate.as_str(),
        "{status}"
    );
    let run = should_run(&env, &repo);
    assert_eq!(run["should_run"], false, "{run}");
    // Nor in what the runtimes' hooks and the prompt decide.
    // Run as a runtime runs it: the runtime is governed from then on, and
    // the test goes on as the person.
    let stop = run_with_stdin(
        env.under_runtime_cmd(&repo)
            .args(["hook", "claude-code", "stop", "--agent", "a1"]),
        br#"{"session_id":"s1","hook_event_name":"Stop","stop_hook_active":false}"#,
    );
    assert_eq!(stop.code, 0);
    assert!(
        !stop.stdout.contains("\"decision\""),
        "the Stop hook blocked on an unsigned resolution: {}",
        stop.stdout
    );
    assert!(
        stop.stdout.contains(gate.as_str()),
        "the person is told the gate still waits: {}",
        stop.stdout
    );
    let prompt = env
        .loopx(&repo, &["--json", "--agent", "a1", "prompt"])
        .success()
        .json();
    assert!(prompt["todo"].is_null(), "{prompt}");
    let review = env.loopx(&repo, &["--json", "review"]).success().json();
    assert_eq!(review["decisions"][0]["id"], gate.as_str(), "{review}");
    // The person answers it again, signed; now it counts.
    env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
        .success();
    assert_eq!(should_run(&env, &repo)["should_run"], true);
}

#[test]
fn an_unsigned_policy_change_does_not_take_effect() {
    let env = TestEnv::new();
    let (repo, _, gate) = with_policy(&env);
    // Dropping gate_signers by hand, then resolving by hand.
    let meta = env.state_file(&repo, "loopx.yaml");
    let dropped: String = meta
        .lines()
        .filter(|l| !l.starts_with("gate_signers:") && !l.trim_start().starts_with("- "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!dropped.contains("ssh-ed25519"), "{dropped}");
    env.commit_state_file(&repo, "loopx.yaml", &dropped);
    hand_resolve(&env, &repo, &gate);
    assert_eq!(should_run(&env, &repo)["should_run"], false);
    let list = env
        .loopx(&repo, &["--json", "gate", "signers", "list"])
        .success()
        .json();
    assert_eq!(list["effective"].as_array().unwrap().len(), 1, "{list}");
    assert!(list["in_file"].as_array().unwrap().is_empty(), "{list}");
    // Replacing it with another key, unsigned, does not take effect either.
    let other = signing_key(&env, &repo, "intruder");
    let key = std::fs::read_to_string(&other).unwrap();
    env.commit_state_file(
        &repo,
        "loopx.yaml",
        &format!("{dropped}gate_signers:\n  - {}\n", key.trim()),
    );
    assert_eq!(should_run(&env, &repo)["should_run"], false);
    // And an agent cannot change the policy through the command.
    let refused = env
        .loopx(
            &repo,
            &[
                "--json", "--agent", "a1", "gate", "signers", "remove", "person",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(refused["error"]["code"], "person_only");
}

/// Who is the person is established positively: inside an agent runtime
/// (each runtime's own marker, or the one `hooks install` sets), a command
/// with no agent named is not the person. Gates, the person's overrides
/// and even ordinary writes are refused, and nothing is written; the same
/// commands from a plain shell succeed in the person's name.
#[test]
fn inside_an_agent_runtime_no_command_acts_as_the_person() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "parse headers");
    env.loopx(&repo, &["--agent", "a1", "todo", "claim", &todo])
        .success();
    let gate = env
        .loopx(&repo, &["--json", "gate", "add", "Ship it?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let inside = |marker: (&str, &str), args: &[&str]| {
        let before = env.tip(&repo);
        let mut cmd = env.loopx_cmd(&repo);
        cmd.env(marker.0, marker.1).arg("--json").args(args);
        let out: crate::env::Run = cmd.output().unwrap().into();
        let out = out.failure(1).json();
        assert_eq!(env.tip(&repo), before, "{args:?} wrote inside {marker:?}");
        let hint = out["error"]["hint"].as_str().unwrap_or_default().to_owned();
        for around in ["without", "unset", "LOOPX_RUNTIME", marker.0] {
            assert!(!hint.contains(around), "{args:?}: {hint}");
        }
        out["error"]["code"].as_str().unwrap().to_owned()
    };
    for marker in [
        ("CLAUDECODE", "1"),
        ("CODEX_THREAD_ID", "019a-thread"),
        ("OPENCODE", "1"),
        ("GEMINI_CLI", "1"),
        ("PI_CODING_AGENT", "true"),
        ("CURSOR_AGENT", "1"),
        ("LOOPX_RUNTIME", "claude-code"),
    ] {
        assert_eq!(
            inside(marker, &["gate", "resolve", &gate, "--approve"]),
            "gate_reserved"
        );
        assert_eq!(
            inside(marker, &["todo", "update", &gate, "--status", "deferred"]),
            "gate_reserved"
        );
        assert_eq!(
            inside(marker, &["todo", "release", &todo, "--force"]),
            "person_only"
        );
        assert_eq!(inside(marker, &["goal", "done"]), "person_only");
        assert_eq!(
            inside(marker, &["todo", "add", "in the person's name"]),
            "person_only"
        );
        // Redacting the gate's question is the person's too.
        assert_eq!(
            inside(marker, &["redact", "todo", &gate, "--text", "Ship it?"]),
            "person_only"
        );
    }
    // From a plain shell, the person answers the gate, in their name.
    let out = env
        .loopx(&repo, &["--json", "gate", "resolve", &gate, "--approve"])
        .success()
        .json();
    assert!(out.to_string().contains("Test Committer"), "{out}");
    env.loopx(&repo, &["todo", "release", &todo, "--force"])
        .success();
}

/// A goal may reserve its end and its pause for the person: then an agent
/// cannot end, stop or resume it, nor change the reservation, and its
/// `todo done --no-follow-up` on the last todo leaves the goal open.
#[test]
fn a_goal_can_reserve_done_and_stop_for_the_person() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "the last step");
    let agent = |args: &[&str]| {
        let mut all = vec!["--json", "--agent", "a1"];
        all.extend_from_slice(args);
        env.loopx(&repo, &all)
    };
    // Only the person sets the reservation.
    let out = agent(&["goal", "set", "--person-only", "done"])
        .failure(1)
        .json();
    assert_eq!(out["error"]["code"], "person_only");
    env.loopx(
        &repo,
        &[
            "goal",
            "set",
            "--person-only",
            "done",
            "--person-only",
            "stop",
        ],
    )
    .success();
    let bad = env
        .loopx(&repo, &["goal", "set", "--person-only", "merge"])
        .failure(2);
    assert!(
        bad.stderr.contains("not one of done, stop, none"),
        "{bad:?}"
    );
    for args in [
        &["goal", "done"][..],
        &["goal", "stop"],
        &["goal", "set", "--person-only", "none"],
    ] {
        let out = agent(args).failure(1).json();
        assert_eq!(out["error"]["code"], "person_only", "{args:?}: {out}");
        let hint = out["error"]["hint"].as_str().unwrap();
        assert!(hint.contains("ask the person"), "{hint}");
    }
    agent(&["todo", "claim", &todo]).success();
    agent(&["todo", "done", &todo, "--evidence", "ok", "--no-follow-up"]).success();
    let goal = env
        .loopx(&repo, &["--json", "goal", "show"])
        .success()
        .json();
    assert_eq!(goal["goal"]["status"], "active", "{goal}");
    // The person ends it.
    env.loopx(&repo, &["goal", "done", "--note", "shipped"])
        .success();
    let goal = env
        .loopx(&repo, &["--json", "goal", "show"])
        .success()
        .json();
    assert_eq!(goal["goal"]["status"], "done");
    assert_eq!(
        goal["goal"]["person_only"],
        serde_json::json!(["done", "stop"])
    );
}

/// `status --goal perf` prints answer commands that work as pasted (they
/// name `--goal perf`); `status --all` shows every goal, the default first;
/// a done goal says so plainly.
#[test]
fn status_of_another_goal_prints_commands_that_work_and_all_shows_every_goal() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(
        &repo,
        &["goal", "add", "perf", "--objective", "Make it fast"],
    )
    .success();
    env.loopx(&repo, &["--goal", "perf", "gate", "add", "Use SIMD?"])
        .success();
    for args in [["status", "--goal", "perf"], ["review", "--goal", "perf"]] {
        let out = env.loopx(&repo, &args).success().stdout;
        assert!(
            out.contains("git loopx --goal perf gate resolve"),
            "{args:?}: {out}"
        );
    }
    let out = env
        .loopx(&repo, &["status", "--goal", "perf"])
        .success()
        .stdout;
    let pasted = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("answer: git loopx "))
        .unwrap()
        .replace("--approve|--reject [--note …]", "--approve");
    let args: Vec<&str> = pasted.split_whitespace().collect();
    env.loopx(&repo, &args).success();

    let all = env
        .loopx(&repo, &["--json", "status", "--all"])
        .success()
        .json();
    let goals: Vec<&str> = all["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["goal"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(goals, ["main", "perf"], "{all}");
    assert_eq!(all["goals"][0]["goal"]["default"], true);
    assert_eq!(all["goals"][1]["answered"][0]["decision"], "approve");
    env.loopx(&repo, &["--goal", "perf", "goal", "done"])
        .success();
    let text = env.loopx(&repo, &["status", "--all"]).success().stdout;
    assert!(text.contains("perf  done,"), "{text}");
    let text = env
        .loopx(&repo, &["status", "--goal", "perf"])
        .success()
        .stdout;
    assert!(
        text.contains("(DONE)") && text.contains("This goal is done"),
        "{text}"
    );
}

/// A gate an agent asks without naming a scope stops only that agent, as in
/// LoopX 2.1.1: another agent goes on working; `--global` stops both.
#[test]
fn an_agents_own_gate_stops_only_that_agent() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    for agent in ["a1", "a2"] {
        env.loopx(&repo, &["agent", "register", agent]).success();
    }
    env.add_todo(&repo, "work");
    env.loopx(&repo, &["--agent", "a1", "gate", "add", "May I?"])
        .success();
    let decide = |agent: &str| {
        env.loopx(&repo, &["--json", "--agent", agent, "should-run"])
            .success()
            .json()
    };
    let a1 = decide("a1");
    assert_eq!(a1["should_run"], false, "{a1}");
    assert_eq!(a1["effective_action"], "operator_gate_notify", "{a1}");
    let a2 = decide("a2");
    assert_eq!(a2["should_run"], true, "{a2}");
    assert_eq!(a2["effective_action"], "normal_run", "{a2}");

    env.loopx(
        &repo,
        &["--agent", "a2", "gate", "add", "All stop?", "--global"],
    )
    .success();
    assert_eq!(decide("a2")["should_run"], false);
}
