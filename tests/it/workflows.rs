//! The example CI workflows (examples/ci/) run the commands this suite
//! runs: their steps that call `git loopx` are read from the files and run
//! against fixture repositories.
//!
//! How the workflow is run here, simply: the file is parsed as YAML, and
//! every step of every job whose `run:` mentions `git loopx` is run with
//! `sh -e` (GitHub runs `bash -e`; the scripts are POSIX sh) in a clone of
//! the fixture remote, detached at the pull request's head as
//! `actions/checkout` leaves it. A step's `env:` values that are `${{ … }}`
//! expressions are replaced by fixture values from [`expression`]; an
//! expression it does not know fails the test, and so does one inside a
//! script. The install step is not run: the binary under test is first on
//! PATH.

use std::path::Path;

use crate::env::TestEnv;

const STATE_PR: &str = include_str!("../../examples/ci/loopx-state-pr.yml");

/// The fixture value of a workflow expression for a pull request whose
/// head is `head`, into loopx-state.
fn state_pr_expression(expr: &str, head: &str) -> String {
    match expr {
        "github.event.pull_request.head.sha" => head.to_owned(),
        "github.event.pull_request.base.ref" => "loopx-state".to_owned(),
        other => panic!("the workflow uses `${{{{ {other} }}}}`: give it a fixture value here"),
    }
}

/// `workflow` compiles git-loopx once per pinned tag, not on every run: the
/// binary is cached under a key holding the tag, and the install step runs
/// only when the cache missed.
fn assert_installed_once(workflow: &str) {
    let doc: serde_json::Value = serde_norway::from_str(workflow).expect("the workflow is YAML");
    for job in doc["jobs"].as_object().expect("jobs").values() {
        let steps = job["steps"].as_array().expect("steps");
        let cache = steps
            .iter()
            .find(|s| {
                s["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("actions/cache@"))
            })
            .expect("a cache step");
        assert_eq!(cache["with"]["path"], "~/.cargo/bin/git-loopx");
        assert!(cache["with"]["key"]
            .as_str()
            .unwrap()
            .contains("env.LOOPX_TAG"));
        let install = steps
            .iter()
            .find(|s| {
                s["run"]
                    .as_str()
                    .is_some_and(|r| r.contains("cargo install"))
            })
            .expect("an install step");
        let id = cache["id"].as_str().expect("the cache step's id");
        assert_eq!(
            install["if"].as_str(),
            Some(format!("steps.{id}.outputs.cache-hit != 'true'").as_str())
        );
        assert!(install["run"]
            .as_str()
            .unwrap()
            .contains("--tag \"$LOOPX_TAG\""));
    }
}

/// The README's help section agrees with `install-man`: it must not say no
/// man page is installed.
#[test]
fn the_readme_points_git_loopx_help_at_install_man() {
    let readme = include_str!("../../README.md");
    let help = &readme[readme.find("### Help").expect("a Help section")..];
    let help = &help[..help[3..].find("\n#").map_or(help.len(), |i| i + 3)];
    assert!(!help.contains("no man page is installed"), "{help}");
    assert!(help.contains("git loopx install-man"), "{help}");
}

/// The steps of `workflow` that run `git loopx`: their env (unevaluated)
/// and script.
fn loopx_steps(workflow: &str) -> Vec<(Vec<(String, String)>, String)> {
    let doc: serde_json::Value = serde_norway::from_str(workflow).expect("the workflow is YAML");
    let mut out = Vec::new();
    for job in doc["jobs"].as_object().expect("jobs").values() {
        for step in job["steps"].as_array().expect("steps") {
            let Some(script) = step["run"].as_str() else {
                continue;
            };
            if !script.contains("git loopx") {
                continue;
            }
            assert!(
                !script.contains("${{"),
                "an expression inside a script: {script}"
            );
            let env = step["env"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| {
                            (
                                k.clone(),
                                v.as_str().expect("env values are text").to_owned(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push((env, script.to_owned()));
        }
    }
    out
}

/// Runs the `git loopx` steps of `workflow` in `ci` for a pull request
/// whose head is `head`, with `expression` giving each `${{ … }}` its
/// fixture value: the exit status of the first failing step (or 0), and
/// everything printed.
fn run_workflow(
    env: &TestEnv,
    ci: &Path,
    workflow: &str,
    head: &str,
    expression: &dyn Fn(&str) -> String,
) -> (i32, String) {
    env.git(ci, &["checkout", "-q", "--detach", head]);
    let mut printed = String::new();
    for (vars, script) in loopx_steps(workflow) {
        let file = env.path("step.sh");
        std::fs::write(&file, &script).unwrap();
        let mut cmd = env.command(Path::new("sh"), ci);
        cmd.arg("-e").arg(&file);
        for (key, value) in vars {
            let value = match value
                .trim()
                .strip_prefix("${{")
                .and_then(|v| v.strip_suffix("}}"))
            {
                Some(expr) => expression(expr.trim()),
                None => {
                    assert!(!value.contains("${{"), "{key}: {value}");
                    value
                }
            };
            cmd.env(key, value);
        }
        let out = cmd.output().expect("sh runs");
        printed += &String::from_utf8_lossy(&out.stdout);
        printed += &String::from_utf8_lossy(&out.stderr);
        let code = out.status.code().unwrap_or(-1);
        if code != 0 {
            return (code, printed);
        }
    }
    (0, printed)
}

#[test]
fn the_workflow_checks_every_commit_of_a_pull_request_into_loopx_state() {
    let steps = loopx_steps(STATE_PR);
    let script: String = steps.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(
        script.matches("git loopx doctor --rev").count(),
        2,
        "the head, and each commit of the range: {script}"
    );
    assert!(STATE_PR.contains("cargo install --locked --git"));
    assert_installed_once(STATE_PR);
    assert!(STATE_PR.contains("branches: [loopx-state]"));

    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    // The base: a gate waiting for the person.
    let gate = env
        .loopx(a, &["--json", "gate", "add", "Ship the parser?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx(a, &["sync"]).success();
    let push = |branch: &str| {
        env.git(
            a,
            &[
                "push",
                "-q",
                "origin",
                &format!("loopx-state:refs/heads/{branch}"),
            ],
        );
        env.tip(a)
    };
    // A good pull request: the person answers the gate and adds a todo.
    env.loopx(a, &["gate", "resolve", &gate, "--approve", "--note", "go"])
        .success();
    env.add_todo(a, "Announce the release");
    let good = push("pr-good");
    // A bad one on top: a hand edit whose gate unblocks a todo that is not there.
    let path = env.state_path_of(a, &gate);
    let text = env.state_file(a, &path) + "\nunblocks: todo_dead00beef00\n";
    env.commit_state_file(a, &path, &text);
    let bad = push("pr-bad");
    // A head that is fine, over a commit that is not: the range is checked too.
    let fixed = env
        .state_file(a, &path)
        .replace("\nunblocks: todo_dead00beef00", "")
        + "\n";
    env.commit_state_file(a, &path, &fixed);
    let fixed_head = push("pr-fixed");

    let ci = env.clone_of(&remote, "ci");
    let (code, printed) = run_workflow(&env, &ci, STATE_PR, &good, &|e| {
        state_pr_expression(e, &good)
    });
    assert_eq!(code, 0, "{printed}");
    assert_eq!(printed.matches("ok: state commit").count(), 2, "{printed}");

    let (code, printed) =
        run_workflow(&env, &ci, STATE_PR, &bad, &|e| state_pr_expression(e, &bad));
    assert_ne!(code, 0, "{printed}");
    assert!(printed.contains(&format!("{path}:")), "{printed}");
    assert!(
        printed.contains("unblocks: `todo_dead00beef00` names no todo"),
        "{printed}"
    );

    // Checking the head alone is not enough: a commit of the range fails.
    assert_eq!(
        env.loopx(&ci, &["doctor", "--rev", &fixed_head]).code,
        0,
        "the fixed head passes on its own"
    );
    let (code, printed) = run_workflow(&env, &ci, STATE_PR, &fixed_head, &|e| {
        state_pr_expression(e, &fixed_head)
    });
    assert_ne!(code, 0, "{printed}");
    assert!(
        printed.contains(&bad[..10]),
        "names the bad commit: {printed}"
    );
}

const PR_COMMENT: &str = include_str!("../../examples/ci/loopx-pr-comment.yml");

/// The comment workflow renders the pull request's agent work from what a
/// CI checkout has: the code commits, and loopx-state as a remote-tracking
/// ref.
#[test]
fn the_comment_workflow_renders_the_agent_work_behind_a_pull_request() {
    let steps = loopx_steps(PR_COMMENT);
    assert_eq!(steps.len(), 1, "one step renders the comment");
    assert!(steps[0]
        .1
        .contains("git loopx pr \"$BASE..$HEAD\" --markdown"));
    assert!(PR_COMMENT.contains("cargo install --locked --git"));
    assert_installed_once(PR_COMMENT);

    let env = TestEnv::new();
    let (repo, tokenizer, docs, _) = crate::pr::pull_request(&env);
    let remote = env.bare("remote.git");
    env.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    env.git(
        &repo,
        &["push", "-q", "origin", "main", "feature", "loopx-state"],
    );
    let base = env.git(&repo, &["rev-parse", "main"]);
    let head = env.git(&repo, &["rev-parse", "feature"]);
    let ci = env.clone_of(&remote, "ci");
    let expression = |e: &str| match e {
        "github.event.pull_request.base.sha" => base.clone(),
        "github.event.pull_request.head.sha" => head.clone(),
        other => panic!("the workflow uses `${{{{ {other} }}}}`: give it a fixture value here"),
    };
    let (code, printed) = run_workflow(&env, &ci, PR_COMMENT, &head, &expression);
    assert_eq!(code, 0, "{printed}");
    let comment = std::fs::read_to_string(ci.join("loopx-pr.md")).expect("the comment file");
    assert!(comment.starts_with("<!-- git-loopx pr -->\n"), "{comment}");
    assert!(
        comment.contains(&tokenizer) && comment.contains(&docs),
        "{comment}"
    );
    // What the workflow posts is what `git loopx pr --markdown` prints.
    let range = format!("{base}..{head}");
    let direct = env
        .loopx(&ci, &["pr", &range, "--markdown"])
        .success()
        .stdout;
    assert_eq!(comment, direct);
}
