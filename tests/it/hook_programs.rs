//! The runtime hook programs on their own: the loop guard, turn keys that
//! replay, and fail-open (exit 0, no block, the reason on stderr).

use std::path::Path;

use serde_json::json;

use crate::env::{run_with_stdin, Run, TestEnv};
use crate::runtimes::{install_hooks, Runtime, Session, StopAnswer};

/// Runs `git loopx <args>` in `dir` with `stdin`.
fn hook(env: &TestEnv, dir: &Path, args: &[&str], stdin: &str) -> Run {
    run_with_stdin(env.loopx_cmd(dir).args(args), stdin.as_bytes())
}

/// A stop that did not block: exit 0, nothing on stdout, `why` on stderr.
#[track_caller]
fn assert_open(run: &Run, why: &str) {
    assert_eq!(run.code, 0, "a hook exits 0\n{}", run.stderr);
    assert_eq!(run.stdout, "", "no answer on stdout");
    assert!(
        run.stderr.contains(why),
        "stderr says `{why}`: {}",
        run.stderr
    );
}

fn one_todo_repo(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.state_repo("r");
    env.loopx(&repo, &["goal", "set", "--allowed-slots", "20"])
        .success();
    env.add_todo(&repo, "never finished");
    env.git(&repo, &["config", "loopx.agent", "agent-a"]);
    install_hooks(env, &repo, Runtime::ClaudeCode);
    repo
}

/// Stops without working until the session ends; returns the prompts of
/// the blocks.
fn idle_until_released(session: &mut Session<'_>) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut active = false;
    while let StopAnswer::Block(prompt) = session.stop(active) {
        blocks.push(prompt);
        active = true;
        assert!(blocks.len() < 20, "never released");
    }
    blocks
}

fn turn_of(prompt: &str) -> &str {
    let first = prompt.lines().next().unwrap();
    first
        .strip_prefix("# git-loopx turn ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no turn in {first}"))
}

/// A writeback by agent-a under `turn`, with no todo.
fn write_back(env: &TestEnv, repo: &Path, turn: &str) {
    env.loopx(
        repo,
        &[
            "--agent",
            "agent-a",
            "writeback",
            "--turn",
            turn,
            "--outcome",
            "outcome_progress",
            "--summary",
            "work",
        ],
    )
    .success();
}

#[test]
fn loop_guard_releases_an_agent_that_never_writes_back() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);

    // Default: 3 blocks, all for the same turn, one receipt.
    let mut session = Session::new(&env, &repo, Runtime::ClaudeCode, "s1");
    assert!(session
        .start()
        .contains("# git-loopx turn s1-1 for agent-a"));
    let blocks = idle_until_released(&mut session);
    assert_eq!(blocks.len(), 3);
    assert!(
        blocks.iter().all(|p| turn_of(p) == "s1-1"),
        "a retry replays the turn"
    );
    let last = &session.stops.last().unwrap();
    assert_open(last, "3 block(s) in a row with no new writeback by agent-a");
    let runs = env.loopx(&repo, &["--json", "history"]).success().json();
    let receipts = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "turn")
        .count();
    assert_eq!(receipts, 1, "one receipt per turn key");

    // From git config (after a writeback: the guard let agent-a go, and
    // keeps letting it go until it writes back).
    let reset = |turn: &str| write_back(&env, &repo, turn);
    reset("reset-1");
    env.git(&repo, &["config", "loopx.hookMaxBlocks", "5"]);
    let mut session = Session::new(&env, &repo, Runtime::ClaudeCode, "s2");
    session.start();
    assert_eq!(idle_until_released(&mut session).len(), 5);
    assert_open(session.stops.last().unwrap(), "limit is 5");

    // From the flag, over the config; 0 never blocks.
    let input = json!({"session_id": "s3", "hook_event_name": "Stop"}).to_string();
    let stop = |n: &str| {
        hook(
            &env,
            &repo,
            &["hook", "claude-code", "stop", "--max-blocks", n],
            &input,
        )
    };
    reset("reset-2");
    assert!(stop("1").stdout.contains(r#""decision":"block""#));
    assert_open(&stop("1"), "limit is 1");
    let input4 = json!({"session_id": "s4", "hook_event_name": "Stop"}).to_string();
    let zero = hook(
        &env,
        &repo,
        &["hook", "claude-code", "stop", "--max-blocks", "0"],
        &input4,
    );
    assert_open(&zero, "limit is 0");

    // A bad config value is reported, and the default used.
    reset("reset-3");
    env.git(&repo, &["config", "loopx.hookMaxBlocks", "lots"]);
    let input5 = json!({"session_id": "s5"}).to_string();
    let run = hook(&env, &repo, &["hook", "claude-code", "stop"], &input5);
    assert!(run.stdout.contains("block"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("loopx.hookMaxBlocks=`lots` is not a number"),
        "{}",
        run.stderr
    );
}

/// A session the loop guard let go shows in `status` until the agent
/// writes back.
#[test]
fn guard_releases_show_in_status_until_the_agent_writes_back() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    let health = || crate::run::health(&env, &repo, crate::env::NOW, "agent-a");
    for (n, id) in ["s1", "s2"].into_iter().enumerate() {
        let mut session = Session::new(&env, &repo, Runtime::ClaudeCode, id);
        session.start();
        idle_until_released(&mut session);
        assert_eq!(health()["guard_releases"], n + 1);
    }
    assert_eq!(health()["healthy"], false);
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(
        text.contains("  agent-a: 2 session(s) let go by the loop guard without a writeback"),
        "{text}"
    );
    let next = env
        .loopx(&repo, &["--json", "todo", "next", "--claim"])
        .success()
        .json();
    let todo = next["todo"]["id"].as_str().unwrap();
    let summary = ["--outcome", "surface_only", "--summary", "looked"];
    env.loopx(
        &repo,
        &[&["writeback", "--todo", todo][..], &summary].concat(),
    )
    .success();
    assert_eq!(health()["guard_releases"], 0);
    assert_eq!(health()["healthy"], true);
}

#[test]
fn a_writeback_resets_the_loop_guard_and_moves_to_the_next_turn() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    env.git(&repo, &["config", "loopx.hookMaxBlocks", "2"]);
    let mut session = Session::new(&env, &repo, Runtime::ClaudeCode, "s");
    session.start();
    let todo = env
        .loopx(&repo, &["--json", "todo", "next", "--claim"])
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let StopAnswer::Block(first) = session.stop(false) else {
        panic!("no block")
    };
    assert_eq!(turn_of(&first), "s-1");
    assert!(matches!(session.stop(true), StopAnswer::Block(_)));
    // The agent records the turn (no progress, but a writeback).
    env.loopx(
        &repo,
        &[
            "writeback",
            "--todo",
            &todo,
            "--turn",
            "s-1",
            "--outcome",
            "surface_only",
            "--summary",
            "looked",
        ],
    )
    .success();
    let StopAnswer::Block(next) = session.stop(true) else {
        panic!(
            "a new writeback resets the guard: {:?}",
            session.stops.last()
        )
    };
    assert_eq!(turn_of(&next), "s-2", "the written-back turn is used up");
    assert!(matches!(session.stop(true), StopAnswer::Block(_)));
    assert_eq!(session.stop(true), StopAnswer::End);
    assert_open(session.stops.last().unwrap(), "2 block(s) in a row");
}

#[test]
fn stop_fails_open_on_corrupt_state() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    let commit = env.commit_state_file(&repo, "goals/main/goal.yaml", "objective: [unclosed\n");
    let mut session = Session::new(&env, &repo, Runtime::ClaudeCode, "s");
    assert_eq!(session.start(), "", "SessionStart adds nothing");
    assert_eq!(session.stop(false), StopAnswer::End);
    let run = &session.stops[0];
    assert_open(run, "not blocking");
    assert!(
        run.stderr.contains("goals/main/goal.yaml"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains(&commit[..10]), "{}", run.stderr);
    // Codex too.
    install_hooks(&env, &repo, Runtime::Codex);
    let mut codex = Session::new(&env, &repo, Runtime::Codex, "c");
    assert_eq!(codex.stop(false), StopAnswer::End);
    assert_open(&codex.stops[0], "goals/main/goal.yaml");
}

#[test]
fn stop_fails_open_when_it_cannot_decide() {
    let env = TestEnv::new();
    let outside = env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let input =
        |cwd: &Path| json!({"session_id": "s", "cwd": cwd, "hook_event_name": "Stop"}).to_string();
    for runtime in ["claude-code", "codex"] {
        for event in ["stop", "session-start"] {
            let args = ["--agent", "a", "hook", runtime, event];
            // Not a repository.
            let run = hook(&env, &outside, &args, &input(&outside));
            assert_open(&run, "not a git repository");
            // Bad stdin.
            let run = hook(&env, &outside, &args, "{\"session_id\": ");
            assert_open(&run, "not JSON");
        }
    }
    // A repository without state.
    let bare = env.repo("plain");
    assert_open(
        &hook(
            &env,
            &bare,
            &["--agent", "a", "hook", "claude-code", "stop"],
            &input(&bare),
        ),
        "no loopx state",
    );
    // No agent.
    let repo = env.state_repo("r");
    env.add_todo(&repo, "work");
    assert_open(
        &hook(&env, &repo, &["hook", "codex", "stop"], &input(&repo)),
        "needs an agent",
    );
    // The stdin `cwd` wins over the process's directory.
    let run = hook(
        &env,
        &outside,
        &["--agent", "a", "hook", "claude-code", "stop"],
        &input(&repo),
    );
    assert!(
        run.stdout.contains(r#""decision":"block""#),
        "{}",
        run.stderr
    );
    // A usage error is not exit 2 (Claude Code would read it as a block).
    let run = hook(
        &env,
        &repo,
        &["hook", "claude-code", "stop", "--bogus"],
        "{}",
    );
    assert_open(&run, "--bogus");
}

#[test]
fn codex_notify_records_turn_completions_and_ignores_the_rest() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let beat = repo.join(".git/loopx/hooks/heartbeats/codex/agent-a.json");
    let notify = |payload: &str| {
        env.loopx_cmd(&env.path("home"))
            .env("LOOPX_AGENT", "agent-a")
            .args(["hook", "codex", "notify", payload])
            .output()
            .map(Run::from)
            .unwrap()
    };
    let other = json!({"type": "approval-requested", "cwd": repo}).to_string();
    let run = notify(&other);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (0, "", "")
    );
    assert!(!beat.exists());
    assert_open(&notify("not json"), "not JSON");
    let done = json!({"type": "agent-turn-complete", "thread-id": "t", "turn-id": "9", "cwd": repo,
                      "input-messages": [], "last-assistant-message": null, "client": "codex-tui"});
    let run = notify(&done.to_string());
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{}", run.stderr);
    let recorded: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&beat).unwrap()).unwrap();
    assert_eq!(recorded["turn_id"], "9");
    assert_eq!(recorded["at"], env.now.as_str());
}

/// The loop guard counts per agent: a fresh `session_id` on every stop does
/// not start the count over, and a sibling session's writebacks are not
/// this session's progress.
#[test]
fn the_loop_guard_counts_per_agent_not_per_session() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    let stop = |session: &str| {
        let input = json!({"session_id": session, "hook_event_name": "Stop"}).to_string();
        hook(&env, &repo, &["hook", "claude-code", "stop"], &input)
    };
    for i in 1..=3 {
        let run = stop(&format!("fresh-{i}"));
        assert!(
            run.stdout.contains(r#""decision":"block""#),
            "stop {i}: {}",
            run.stderr
        );
    }
    assert_open(&stop("fresh-4"), "3 block(s) in a row");

    // Session a idles while a sibling session of the same agent writes back
    // (after a writeback of the agent's: until one, it stays let go).
    write_back(&env, &repo, "b-0");
    for i in 1..=3 {
        let run = stop("a");
        assert!(
            run.stdout.contains(r#""decision":"block""#),
            "stop {i}: {}",
            run.stderr
        );
        write_back(&env, &repo, &format!("b-{i}"));
    }
    assert_open(&stop("a"), "3 block(s) in a row");
}

/// Issue 47, item 8: once the guard let an agent go, it stays let go over
/// every later stop until it writes back: twenty stops, each with a fresh
/// session id, block three times in all (before, fifteen: each release
/// started the count over); an idle session whose sibling writes back
/// after each stop is blocked three times of ten (before, eight). A
/// writeback of the agent's own starts the count over.
#[test]
fn a_released_agent_stays_released_until_it_writes_back() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    let stop = |session: &str| {
        let input = json!({"session_id": session, "hook_event_name": "Stop"}).to_string();
        hook(&env, &repo, &["hook", "claude-code", "stop"], &input)
    };
    let blocked = |run: &Run| run.stdout.contains(r#""decision":"block""#);
    let fresh = (1..=20)
        .filter(|i| blocked(&stop(&format!("fresh-{i}"))))
        .count();
    assert_eq!(
        fresh, 3,
        "stops with a fresh session id each time that blocked"
    );

    let writeback = |turn: &str| write_back(&env, &repo, turn);
    // The agent's own writeback: three more blocks for it.
    writeback("fresh-1-1");
    let idle = (1..=10)
        .filter(|i| {
            let run = stop("idle");
            writeback(&format!("sibling-{i}"));
            blocked(&run)
        })
        .count();
    assert_eq!(
        idle, 3,
        "stops of an idle session that blocked while a sibling wrote back"
    );
}

/// A stop hook run with nothing on stdin, or for an event that is not a
/// stop, lets the session go: it never blocks on what it cannot read.
#[test]
fn stop_does_not_block_on_empty_stdin_or_an_unknown_event() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    let run = hook(&env, &repo, &["hook", "claude-code", "stop"], "");
    assert_open(&run, "no hook event on stdin");
    let input = json!({"session_id": "s", "hook_event_name": "PreToolUse"}).to_string();
    let run = hook(&env, &repo, &["hook", "claude-code", "stop"], &input);
    assert_open(&run, "`PreToolUse` is not a stop event");
    let input = json!({"session_id": "s", "hook_event_name": "Stop"}).to_string();
    let run = hook(&env, &repo, &["hook", "claude-code", "stop"], &input);
    assert!(
        run.stdout.contains(r#""decision":"block""#),
        "{}",
        run.stderr
    );
}

/// A session that ends at a person's gate says so to the person (Claude
/// Code's `systemMessage`): the question and the command that answers it.
#[test]
fn a_session_stopping_at_a_gate_tells_the_person_what_waits() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    let gate = env
        .loopx(&repo, &["--json", "gate", "add", "Ship on Friday?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let input = json!({"session_id": "s", "hook_event_name": "Stop"}).to_string();
    let run = hook(&env, &repo, &["hook", "claude-code", "stop"], &input);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let answer: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON on stdout");
    assert!(answer.get("decision").is_none(), "does not block: {answer}");
    let message = answer["systemMessage"].as_str().expect("a systemMessage");
    assert!(message.contains("Ship on Friday?"), "{message}");
    assert!(
        message.contains(&format!("git loopx gate resolve {gate}")),
        "{message}"
    );
}

/// Issue 47, item 11: Codex hands a Stop hook's reason to the model
/// XML-escaped (`&lt;commit&gt;`), so its prompts write each placeholder
/// `{commit}`; other runtimes keep `<commit>`.
#[test]
fn codex_prompts_use_placeholders_that_survive_xml_escaping() {
    let env = TestEnv::new();
    let repo = one_todo_repo(&env);
    let prompt = |runtime: &str| {
        env.loopx(&repo, &["--json", "prompt", "--runtime", runtime])
            .success()
            .json()["prompt"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let codex = prompt("codex");
    assert!(
        codex.contains("{commit}") && codex.contains("{proof}"),
        "{codex}"
    );
    for escaped in ["<commit>", "<proof>", "<what changed>", "<follow-up>"] {
        assert!(!codex.contains(escaped), "{escaped} in {codex}");
    }
    let claude = prompt("claude-code");
    assert!(claude.contains("<commit>"), "{claude}");
}
