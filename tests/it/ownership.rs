//! git's ownership rule (issue 45, point 5; CVE-2022-24765): a repository
//! another user owns is refused by every command, as git refuses it, so
//! its `loopx.notify.command` never runs as you and `serve` never answers
//! its gates as you; `safe.directory` from your own config (global, or
//! `git -c`) lets it through, one in the repository's config does not;
//! `--all-repos` shows it refused in its place.
//!
//! The repository is handed to another uid with `chown`, which needs root:
//! elsewhere the tests skip (`LOOPX_REQUIRE_ROOT=1` makes that a failure).

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::env::{Run, TestEnv};
use crate::require;

/// The uid the repositories are given to; it need not exist.
const OTHER: &str = "12345";

/// A repository with state and an open gate whose notify command would
/// create `<name>.told`, given to [`OTHER`]; `None` (skipped) where it
/// cannot be.
fn foreign_repo(env: &TestEnv, name: &str) -> Option<PathBuf> {
    let repo = told_repo(env, name);
    let root = std::fs::metadata(env.root.path()).unwrap().uid() == 0;
    let chown = root
        && env
            .command(Path::new("chown"), env.root.path())
            .args(["-R", &format!("{OTHER}:{OTHER}")])
            .arg(&repo)
            .status()
            .is_ok_and(|s| s.success());
    if !chown {
        require::skip(
            "LOOPX_REQUIRE_ROOT",
            "handing a repository to another uid (chown) needs root",
        );
        return None;
    }
    Some(repo)
}

/// A repository with state and an open gate, whose notify command creates
/// `<name>.told` beside it.
fn told_repo(env: &TestEnv, name: &str) -> PathBuf {
    let repo = env.state_repo(name);
    env.loopx(&repo, &["gate", "add", "Publish under MIT?"])
        .success();
    let command = format!("touch {}", marker(env, name).display());
    env.git(&repo, &["config", "loopx.notify.command", &command]);
    repo
}

fn marker(env: &TestEnv, name: &str) -> PathBuf {
    env.path(&format!("{name}.told"))
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// `cmd` run to its end, or killed after 20 s (a `serve` that was not
/// refused would run on).
fn run_limited(mut cmd: std::process::Command) -> Run {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git-loopx runs");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

#[track_caller]
fn refused(run: Run, repo: &str) {
    let run = run.failure(3);
    let out = run.json();
    let error = &out["error"];
    assert_eq!(out["ok"], false, "{out}");
    assert_eq!(error["code"], "dubious_ownership", "{out}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(repo), "{message}");
    assert!(message.contains(&format!("uid {OTHER}")), "{message}");
    assert!(message.contains("the current user is uid 0"), "{message}");
    let hint = error["hint"].as_str().unwrap();
    assert!(
        hint.ends_with(&format!("git config --global --add safe.directory {repo}")),
        "{hint}"
    );
}

#[test]
fn every_command_refuses_another_users_repository_until_your_config_allows_it() {
    let env = TestEnv::new();
    let Some(repo) = foreign_repo(&env, "theirs") else {
        return;
    };
    let path = canonical(&repo);
    refused(env.loopx(&repo, &["--json", "status"]), &path);
    // From a subdirectory, and through -C.
    refused(
        env.loopx(&repo.join(".."), &["--json", "-C", "theirs", "status"]),
        &path,
    );
    let before = env.git(
        &repo,
        &["-c", "safe.directory=*", "rev-parse", "loopx-state"],
    );
    refused(
        env.loopx(&repo, &["--json", "todo", "add", "Mine now"]),
        &path,
    );
    refused(env.loopx(&repo, &["--json", "watch", "--once"]), &path);
    let mut watch = env.loopx_cmd(&repo);
    watch.args(["--json", "watch", "--interval", "1s"]);
    refused(run_limited(watch), &path);
    #[cfg(feature = "serve")]
    {
        let mut serve = env.loopx_cmd(&repo);
        serve.args(["--json", "serve", "--port", "0"]);
        refused(run_limited(serve), &path);
        // Started inside its git directory, the git directory is what is
        // named, as git names it.
        let mut serve = env.loopx_cmd(&repo.join(".git/objects"));
        serve.args(["--json", "serve", "--port", "0"]);
        refused(run_limited(serve), &format!("{path}/.git"));
    }
    assert!(
        !marker(&env, "theirs").exists(),
        "their notify command never ran"
    );
    let after = env.git(
        &repo,
        &["-c", "safe.directory=*", "rev-parse", "loopx-state"],
    );
    assert_eq!(before, after, "nothing was written");

    // `git -c safe.directory=…`, as git passes it on to git-loopx.
    let allowed = |cmd: &mut std::process::Command| {
        let run: Run = cmd.output().unwrap().into();
        run.success();
    };
    let safe = format!("safe.directory={path}");
    allowed(env.git_cmd(&repo).args(["-c", &safe, "loopx", "status"]));
    // …and then cleared by an empty value.
    let cleared: Run = env
        .git_cmd(&repo)
        .args(["-c", &safe, "-c", "safe.directory=", "loopx", "status"])
        .output()
        .unwrap()
        .into();
    cleared.failure(3);
    // Global config: the path, a directory above it, or `*`.
    let global = env.path("gitconfig");
    for value in [
        path.clone(),
        format!("{}/*", canonical(env.root.path())),
        "*".into(),
    ] {
        std::fs::write(&global, format!("[safe]\n\tdirectory = {value}\n")).unwrap();
        allowed(
            env.loopx_cmd(&repo)
                .env("GIT_CONFIG_GLOBAL", &global)
                .arg("status"),
        );
    }
    // The repository's own config does not count.
    let own = repo.join(".git/config");
    let mut text = std::fs::read_to_string(&own).unwrap();
    text.push_str("[safe]\n\tdirectory = *\n");
    text.push_str(&format!("\tdirectory = {path}\n"));
    std::fs::write(&own, text).unwrap();
    refused(env.loopx(&repo, &["--json", "status"]), &path);
    assert!(!marker(&env, "theirs").exists());
}

#[test]
fn all_repos_views_show_another_users_repository_refused_in_its_place() {
    let env = TestEnv::new();
    let mine = told_repo(&env, "mine");
    let Some(theirs) = foreign_repo(&env, "theirs") else {
        return;
    };
    let home = env.path("home");
    let out = env
        .loopx(&home, &["--json", "status", "--all-repos"])
        .success()
        .json();
    let by_path = |p: &Path| {
        let want = canonical(p);
        out["repos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == want.as_str())
            .unwrap_or_else(|| panic!("{want} is listed: {out}"))
            .clone()
    };
    assert_eq!(by_path(&mine)["condition"], "ok", "{out}");
    let refused = by_path(&theirs);
    assert_eq!(refused["condition"], "refused", "{refused}");
    assert_eq!(refused["error"]["code"], "dubious_ownership", "{refused}");
    let text = env
        .loopx(&home, &["status", "--all-repos"])
        .success()
        .stdout;
    assert!(
        text.contains(&format!(
            "git config --global --add safe.directory {}",
            canonical(&theirs)
        )),
        "{text}"
    );

    let watched = env
        .loopx(&home, &["--json", "watch", "--all-repos", "--once"])
        .success()
        .json();
    assert!(marker(&env, "mine").exists(), "mine was told: {watched}");
    assert!(
        !marker(&env, "theirs").exists(),
        "theirs never ran: {watched}"
    );
    let entry = watched["repos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["code"] == "dubious_ownership")
        .unwrap_or_else(|| panic!("theirs is refused: {watched}"))
        .clone();
    assert!(
        entry["repo"].as_str().unwrap().ends_with("/theirs"),
        "{entry}"
    );
}

#[cfg(feature = "serve")]
#[test]
fn serve_all_repos_never_runs_another_users_notify_command() {
    let env = TestEnv::new();
    let mine = told_repo(&env, "mine");
    let Some(theirs) = foreign_repo(&env, "theirs") else {
        return;
    };
    let serving = crate::serve::Serving::start(&env, &env.path("home"), &["--all-repos"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !marker(&env, "mine").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(marker(&env, "mine").exists(), "serve's watcher told mine");
    // The list's next repository is looked at right after.
    std::thread::sleep(Duration::from_secs(2));
    let (code, repos) = serving.get("/repos.json");
    assert_eq!(code, 200, "{repos}");
    let entry = repos["repos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == canonical(&theirs).as_str())
        .unwrap_or_else(|| panic!("theirs is listed: {repos}"))
        .clone();
    assert_eq!(entry["condition"], "refused", "{entry}");
    let _ = mine;
    drop(serving);
    assert!(!marker(&env, "theirs").exists(), "theirs never ran");
}
