//! The person's list of repositories (issue 33): `init`, `hooks install`
//! and `import` add to it, `repos add|remove|list` edit it, and `status
//! --all-repos` reads every listed repository on its own, a missing or
//! broken one reported in its place.

use std::path::{Path, PathBuf};

use crate::env::TestEnv;

fn listed(env: &TestEnv) -> Vec<String> {
    let here = env.path("home");
    let out = env
        .loopx(&here, &["--json", "repos", "list"])
        .success()
        .json();
    out["repos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_owned())
        .collect()
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn init_and_hooks_install_list_the_repository_once_for_all_its_worktrees() {
    let env = TestEnv::new();
    let list = env.path("home/.config/git-loopx/repos");
    assert_eq!(listed(&env), Vec::<String>::new());
    let a = env.state_repo("a");
    assert_eq!(listed(&env), vec![canonical(&a)]);
    assert!(list.is_file(), "the list is in the user's config directory");

    // A linked worktree is the same repository: no second entry.
    let wt = env.path("a-wt");
    env.git(&a, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    env.loopx(&wt, &["hooks", "install"]).success();
    let added = env.loopx(&wt, &["--json", "repos", "add"]).success().json();
    assert_eq!(added["changed"], false, "{added}");
    assert_eq!(listed(&env), vec![canonical(&a)]);

    // `hooks install` in a repository not yet listed adds it.
    let b = env.repo("b");
    env.loopx(&b, &["hooks", "install"]).success();
    assert_eq!(listed(&env), vec![canonical(&a), canonical(&b)]);
    // `-C DIR` is where `repos` starts, as for every command.
    let c = env.repo("c");
    let home = env.path("home");
    env.loopx(&home, &["-C", c.to_str().unwrap(), "repos", "add"])
        .success();
    assert_eq!(
        listed(&env),
        vec![canonical(&a), canonical(&b), canonical(&c)]
    );
    env.loopx(&home, &["-C", "..", "repos", "remove", "c"])
        .success();
    assert_eq!(listed(&env), vec![canonical(&a), canonical(&b)]);

    // Removing by a path that is gone; removing what is not listed is refused.
    std::fs::remove_dir_all(&b).unwrap();
    let text = env.loopx(&home, &["repos", "list"]).success().stdout;
    assert!(text.contains("(missing)"), "{text}");
    env.loopx(&home, &["repos", "remove", b.to_str().unwrap()])
        .success();
    assert_eq!(listed(&env), vec![canonical(&a)]);
    let refused = env
        .loopx(&home, &["--json", "repos", "remove", b.to_str().unwrap()])
        .failure(2)
        .json();
    assert_eq!(refused["error"]["code"], "invalid_input", "{refused}");

    // Nothing about the list is written inside a repository.
    let inside = env.git(&a, &["status", "--porcelain", "--ignored"]);
    assert_eq!(inside, "", "the work tree is untouched");
}

#[test]
fn repos_added_at_once_by_racing_processes_are_all_kept() {
    let env = TestEnv::new();
    let dirs: Vec<PathBuf> = (0..8).map(|i| env.repo(&format!("r{i}"))).collect();
    let children: Vec<_> = dirs
        .iter()
        .map(|d| {
            env.loopx_cmd(d)
                .args(["repos", "add"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let mut got = listed(&env);
    got.sort();
    let mut want: Vec<String> = dirs.iter().map(|d| canonical(d)).collect();
    want.sort();
    assert_eq!(got, want, "every racing add is kept");
    assert!(
        !env.path("home/.config/git-loopx/repos.lock").exists(),
        "no lock is left behind"
    );
}

/// Three real repositories: one with an open gate, one whose goal is
/// throttled, one whose state ref is corrupt; a fourth listed and gone.
pub fn three_repos(env: &TestEnv) -> [PathBuf; 4] {
    let gated = env.state_repo("gated");
    env.loopx(&gated, &["gate", "add", "Publish under MIT?"])
        .success();

    let throttled = env.state_repo("throttled");
    env.loopx(&throttled, &["goal", "set", "--allowed-slots", "1"])
        .success();
    let todo = env.add_todo(&throttled, "Nightly build");
    let as_a = |args: &[&str]| {
        let mut all = vec!["--agent", "a1"];
        all.extend_from_slice(args);
        env.loopx(&throttled, &all).success();
    };
    as_a(&["todo", "claim", &todo]);
    as_a(&[
        "writeback",
        "--todo",
        &todo,
        "--outcome",
        "outcome_progress",
        "--summary",
        "green",
    ]);
    as_a(&["quota", "spend"]);

    let corrupt = env.state_repo("corrupt");
    let tip = env.tip(&corrupt);
    let tree = env.git(&corrupt, &["rev-parse", &format!("{tip}^{{tree}}")]);
    // The state ref names a tree, not a commit (git itself refuses to
    // write that, so it is written by hand).
    env.git(&corrupt, &["pack-refs", "--all"]);
    std::fs::write(
        corrupt.join(".git/refs/heads/loopx-state"),
        format!("{tree}\n"),
    )
    .unwrap();

    let gone = env.state_repo("gone");
    std::fs::remove_dir_all(&gone).unwrap();
    [gated, throttled, corrupt, gone]
}

#[test]
fn status_all_repos_puts_the_gate_first_and_flags_the_broken_one_in_place() {
    let env = TestEnv::new();
    let [gated, throttled, corrupt, gone] = three_repos(&env);
    let home = env.path("home");
    let before: Vec<String> = [&gated, &throttled, &corrupt]
        .iter()
        .map(|r| env.git(r, &["for-each-ref"]))
        .collect();

    let out = env
        .loopx(&home, &["--json", "status", "--all-repos"])
        .success()
        .json();
    let repos = out["repos"].as_array().unwrap();
    let by_path = |p: &PathBuf| {
        let want = canonical(p);
        repos
            .iter()
            .find(|r| r["path"] == want.as_str())
            .unwrap_or_else(|| panic!("{want} is listed: {out}"))
    };
    assert_eq!(repos.len(), 4, "{out}");
    assert_eq!(repos[0]["path"], canonical(&gated), "the gate's first");
    assert_eq!(by_path(&gated)["condition"], "ok");
    assert_eq!(
        by_path(&gated)["goals"][0]["gates"][0]["question"],
        "Publish under MIT?"
    );
    assert_eq!(by_path(&throttled)["condition"], "ok");
    assert_eq!(
        by_path(&throttled)["goals"][0]["quota"]["spent_slots"],
        1,
        "{out}"
    );
    let broken = by_path(&corrupt);
    assert_eq!(broken["condition"], "broken", "{broken}");
    assert!(broken["error"]["code"].is_string(), "{broken}");
    let missing = repos
        .iter()
        .find(|r| r["condition"] == "missing")
        .expect("the gone repository is listed as missing");
    assert!(
        missing["path"].as_str().unwrap().ends_with("/gone"),
        "{missing}"
    );
    let _ = gone;

    let needs: Vec<(&str, &str)> = out["needs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["kind"].as_str().unwrap(), n["repo"].as_str().unwrap()))
        .collect();
    assert_eq!(
        needs,
        vec![
            ("gate", canonical(&gated).as_str()),
            ("broken", canonical(&corrupt).as_str()),
            ("throttled", canonical(&throttled).as_str()),
        ],
        "{out}"
    );

    // The text names each, and the command that answers the gate.
    let text = env
        .loopx(&home, &["status", "--all-repos"])
        .success()
        .stdout;
    assert!(text.starts_with("3 thing(s) need you:\n  gate"), "{text}");
    assert!(
        text.contains(&format!("git -C {} loopx", canonical(&gated))),
        "{text}"
    );
    assert!(text.contains("missing"), "{text}");

    // Reading wrote nothing.
    let after: Vec<String> = [&gated, &throttled, &corrupt]
        .iter()
        .map(|r| env.git(r, &["for-each-ref"]))
        .collect();
    assert_eq!(before, after);
}

#[test]
fn status_all_repos_with_nothing_listed_says_how_to_add_one() {
    let env = TestEnv::new();
    let home = env.path("home");
    let text = env
        .loopx(&home, &["status", "--all-repos"])
        .success()
        .stdout;
    assert!(text.contains("git loopx repos add"), "{text}");
    // An unreadable list is an error naming the file, not an empty view.
    let list = env.path("home/.config/git-loopx/repos");
    std::fs::create_dir_all(list.parent().unwrap()).unwrap();
    std::fs::write(&list, b"\xff\xfe\n").unwrap();
    let err = env
        .loopx(&home, &["--json", "status", "--all-repos"])
        .failure(2)
        .json();
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("git-loopx/repos"),
        "{err}"
    );
}

/// Agents' health on `status` (and so on `status --all-repos`, the
/// dashboard and the MCP status resource, which carry its report): each
/// agent's last turn and last writeback beside its failures.
#[test]
fn status_shows_each_agents_last_turn_and_last_writeback() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let todo = env.add_todo(&repo, "Task");
    env.loopx_at(
        &repo,
        "2026-12-02T09:00:00Z",
        &["--agent", "a1", "should-run", "--turn", "t-1"],
    )
    .success();
    env.loopx_at(
        &repo,
        "2026-12-02T09:01:00Z",
        &["--agent", "a1", "todo", "claim", &todo],
    )
    .success();
    env.loopx_at(
        &repo,
        "2026-12-02T09:05:00Z",
        &[
            "--agent",
            "a1",
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            "half",
        ],
    )
    .success();
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    let a1 = &status["agents"][0];
    assert_eq!(a1["id"], "a1");
    assert_eq!(a1["last_turn"], "2026-12-02T09:00:00Z", "{a1}");
    assert_eq!(a1["last_writeback"], "2026-12-02T09:05:00Z", "{a1}");
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(
        text.contains("a1: last turn 2026-12-02T09:00:00Z, last writeback 2026-12-02T09:05:00Z"),
        "{text}"
    );
    let home = env.path("home");
    let all = env
        .loopx(&home, &["--json", "status", "--all-repos"])
        .success()
        .json();
    assert_eq!(
        all["repos"][0]["goals"][0]["agents"][0]["last_turn"],
        "2026-12-02T09:00:00Z"
    );
}

/// Issue 46, item 12: the README's tour (`examples/quickstart.sh`) runs in
/// a scratch repository it deletes, and leaves nothing in the person's
/// list of repositories.
#[test]
fn the_quickstart_tour_leaves_the_persons_list_as_it_was() {
    let env = TestEnv::new();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart.sh");
    let out = env
        .command(std::path::Path::new("bash"), &env.path("."))
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = env.path("home/.config/git-loopx/repos");
    let listed = std::fs::read_to_string(&list).unwrap_or_default();
    assert_eq!(
        listed.trim(),
        "",
        "the tour's scratch repository was listed"
    );
}
