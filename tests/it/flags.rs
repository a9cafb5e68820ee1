//! Issue 16.7: one flag name per concept (LoopX's own spelling kept,
//! hidden), human text from `goal`, `init` that never drops an objective
//! silently, and a "no state" error that points at an unfetched remote.

use crate::env::TestEnv;

#[test]
fn init_with_another_objective_is_refused_unless_forced() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let tip = env.tip(&repo);

    // The same objective: nothing to do, exit 0, no commit.
    let same = env
        .loopx(&repo, &["--json", "init", "--objective", "Ship the parser"])
        .success()
        .json();
    assert_eq!(same["action"], "existing");
    assert_eq!(env.tip(&repo), tip);

    // Another one: said so, exit 1, nothing written.
    let out = env
        .loopx(&repo, &["init", "--objective", "Ship the lexer"])
        .failure(1);
    assert!(out.stderr.contains("goal_exists"), "{}", out.stderr);
    assert!(out.stderr.contains("Ship the parser"), "{}", out.stderr);
    assert!(out.stderr.contains("--force"), "{}", out.stderr);
    let json = env
        .loopx(&repo, &["--json", "init", "--goal-text", "Ship the lexer"])
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "goal_exists");
    assert_eq!(env.tip(&repo), tip);

    // A goal id the state does not have: init does not add goals.
    let json = env
        .loopx(
            &repo,
            &["--json", "init", "--objective", "x", "--goal-id", "other"],
        )
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "goal_exists");
    assert!(
        json["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("goal add other"),
        "{json}"
    );

    // --force replaces it, in one commit; then the new one is idempotent.
    let forced = env
        .loopx(
            &repo,
            &["--json", "init", "--objective", "Ship the lexer", "--force"],
        )
        .success()
        .json();
    assert_eq!(forced["action"], "updated");
    assert_eq!(forced["objective"], "Ship the lexer");
    assert_ne!(env.tip(&repo), tip);
    let show = env
        .loopx(&repo, &["--json", "goal", "show"])
        .success()
        .json();
    assert_eq!(show["goal"]["objective"], "Ship the lexer");
    let tip = env.tip(&repo);
    env.loopx(&repo, &["init", "--objective", "Ship the lexer"])
        .success();
    assert_eq!(env.tip(&repo), tip);
    // Without --objective, init on existing state still just says so.
    env.loopx(&repo, &["init"]).success();
}

#[test]
fn goal_commands_print_text_and_yaml_only_on_request() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");

    let out = env.loopx(&repo, &["goal", "stop"]).success();
    assert!(
        out.stdout.starts_with("stopped goal main"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("created_at:"), "{}", out.stdout);
    let out = env.loopx(&repo, &["goal", "resume"]).success();
    assert!(
        out.stdout.starts_with("resumed goal main"),
        "{}",
        out.stdout
    );

    let out = env
        .loopx(
            &repo,
            &["goal", "add", "docs", "--objective", "Write the docs"],
        )
        .success();
    assert!(out.stdout.starts_with("added goal docs"), "{}", out.stdout);
    assert!(out.stdout.contains("Write the docs"), "{}", out.stdout);
    assert!(!out.stdout.contains("created_at:"), "{}", out.stdout);

    let out = env.loopx(&repo, &["goal", "show"]).success();
    assert!(
        out.stdout
            .starts_with("goal main (default): Ship the parser"),
        "{}",
        out.stdout
    );
    // YAML on request: the goal file as stored.
    for args in [["goal", "show", "--yaml"], ["goal", "--yaml", "show"]] {
        let out = env.loopx(&repo, &args).success();
        assert!(
            out.stdout.contains("objective: Ship the parser"),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("created_at:"), "{}", out.stdout);
    }
    let out = env.loopx(&repo, &["goal", "stop", "--yaml"]).success();
    assert!(out.stdout.contains("status: stopped"), "{}", out.stdout);
    // JSON as always: one object.
    let json = env
        .loopx(&repo, &["--json", "goal", "resume"])
        .success()
        .json();
    assert_eq!(json["goal"]["status"], "active");
}

/// One name per flag. The only other spelling accepted is LoopX 2.1.1's
/// `--goal-text` on `init` (its `start-goal` and `bootstrap-command-pack`
/// take it), hidden from help; names from before the first release are
/// usage errors.
#[test]
fn each_flag_has_one_name_and_loopxs_goal_text_is_kept() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let json = env
        .loopx(
            &repo,
            &[
                "--json",
                "todo",
                "add",
                "train",
                "--requires-capability",
                "gpu",
            ],
        )
        .success()
        .json();
    assert_eq!(json["todo"]["requires_capabilities"][0], "gpu");
    for args in [
        &["todo", "add", "train", "--requires-cap", "gpu"][..],
        &["quota", "void", "run_0", "--reason", "twice"],
        &["goal", "set", "--goal-text", "Run it"],
        &["goal", "add", "ops", "--goal-text", "Run it"],
    ] {
        let out = env.loopx(&repo, args).failure(2);
        assert!(
            out.stderr.contains("unexpected argument"),
            "{args:?}: {}",
            out.stderr
        );
    }
    let same = env
        .loopx(&repo, &["--json", "init", "--goal-text", "Ship the parser"])
        .success()
        .json();
    assert_eq!(same["action"], "existing");
    let help = env.loopx(&repo, &["init", "--help"]).success();
    assert!(!help.stdout.contains("--goal-text"), "{}", help.stdout);
}

#[test]
fn no_state_on_a_clone_points_at_the_remote_not_at_init() {
    let env = TestEnv::new();
    let remote = env.bare("remote.git");
    // Cloned before the remote had any state: no origin/loopx-state.
    let clone = env.clone_of(&remote, "clone");
    let first = env.repo("first");
    env.loopx(&first, &["init", "--objective", "Ship the parser"])
        .success();
    env.git(
        &first,
        &["push", "-q", remote.to_str().unwrap(), "loopx-state"],
    );

    let out = env.loopx(&clone, &["status"]).failure(3);
    assert!(out.stderr.contains("state_missing"), "{}", out.stderr);
    assert!(out.stderr.contains("git loopx sync"), "{}", out.stderr);
    assert!(out.stderr.contains("git fetch origin"), "{}", out.stderr);
    let json = env
        .loopx(&clone, &["--json", "todo", "list"])
        .failure(3)
        .json();
    assert_eq!(json["error"]["code"], "state_missing");
    let hint = json["error"]["hint"].as_str().unwrap();
    assert!(hint.starts_with("if `origin` has loopx-state"), "{hint}");

    let doctor = env.loopx(&clone, &["doctor"]);
    assert!(doctor.stdout.contains("git loopx sync"), "{doctor:?}");

    // Following the hint works.
    env.loopx(&clone, &["sync"]).success();
    env.loopx(&clone, &["status"]).success();

    // Without a remote, init is the answer.
    let alone = env.repo("alone");
    let out = env.loopx(&alone, &["status"]).failure(3);
    assert!(
        out.stderr.contains("git loopx init --objective"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("git loopx sync"), "{}", out.stderr);
}
