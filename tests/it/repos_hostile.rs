//! Issue 47, item 5: one bad repository in the person's list holds up none
//! of the others. A named pipe where git reads a file (`.git/HEAD`) is
//! refused at once, by name; one anywhere else that a read waits on (the
//! parsed-state cache) is given up on after the time limit; either is an
//! error row in its place. A path the list cannot hold as one line is
//! refused by `repos add`, and `repos remove` says why.
//!
//! Every command runs under a watchdog (60 s) that kills it and fails the
//! test: a bound for "does not hang", not a timing assertion.

use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::env::{Run, TestEnv};

/// A named pipe at `path`, in place of the file there.
pub fn fifo(path: &Path) {
    std::fs::remove_file(path).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `git loopx args` in `dir`, killed (and the test failed) if it has not
/// returned in 60 s.
pub fn bounded(env: &TestEnv, dir: &Path, args: &[&str]) -> Run {
    let mut child = env
        .loopx_cmd(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} never returned: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap().into()
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Three listed repositories, each with a notify command (so `watch`
/// reads its state): one with an open gate, one whose `.git/HEAD` is a
/// named pipe, one whose parsed-state cache snapshot is.
pub fn piped(env: &TestEnv) -> [PathBuf; 3] {
    let [gated, head, cache] = ["gated", "head", "cache"].map(|name| {
        let repo = env.state_repo(name);
        env.git(&repo, &["config", "loopx.notify.command", "cat >/dev/null"]);
        repo
    });
    env.loopx(&gated, &["gate", "add", "Publish under MIT?"])
        .success();
    env.loopx(&cache, &["status"]).success();
    let snapshot = std::fs::read_dir(cache.join(".git/loopx/cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("state-")
        })
        .expect("status left a snapshot of the state in the cache");
    let paths = [canonical(&gated), canonical(&head), canonical(&cache)];
    fifo(&head.join(".git/HEAD"));
    fifo(&snapshot);
    paths.map(PathBuf::from)
}

/// The row of `path` in `repos`.
#[track_caller]
fn row<'a>(repos: &'a Value, path: &Path, key: &str) -> &'a Value {
    let want = path.to_str().unwrap();
    repos
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[key] == want)
        .unwrap_or_else(|| panic!("{want} has a row: {repos}"))
}

#[test]
fn a_named_pipe_in_one_listed_repository_is_an_error_row_and_the_others_are_shown() {
    let env = TestEnv::new();
    let [gated, head, cache] = piped(&env);
    let home = env.path("home");

    let out = bounded(&env, &home, &["--json", "status", "--all-repos"])
        .success()
        .json();
    let repos = &out["repos"];
    assert_eq!(repos.as_array().unwrap().len(), 3, "{out}");
    let ok = row(repos, &gated, "path");
    assert_eq!(ok["condition"], "ok", "{ok}");
    assert_eq!(ok["goals"][0]["gates"][0]["question"], "Publish under MIT?");
    let refused = row(repos, &head, "path");
    assert_eq!(refused["condition"], "broken", "{refused}");
    assert_eq!(refused["error"]["code"], "git_failed", "{refused}");
    let said = refused["error"]["message"].as_str().unwrap();
    assert!(
        said.contains(".git/HEAD is a named pipe (FIFO), where git expects a file"),
        "{said}"
    );
    let hint = refused["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("git loopx repos remove"), "{hint}");
    let slow = row(repos, &cache, "path");
    assert_eq!(slow["condition"], "broken", "{slow}");
    let said = slow["error"]["message"].as_str().unwrap();
    assert!(said.contains("not read within 10 s"), "{said}");
    let kinds: Vec<&str> = out["needs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["gate", "broken", "broken"], "{out}");

    // `watch` looks at the good one and says why not at the others.
    let out = bounded(&env, &home, &["--json", "watch", "--all-repos", "--once"])
        .success()
        .json();
    let repos = &out["repos"];
    let look = &row(repos, &gated, "repo")["look"];
    assert_eq!(look["new"][0]["kind"], "gate_opened", "{out}");
    assert_eq!(look["delivered"].as_array().unwrap().len(), 1, "{out}");
    for bad in [&head, &cache] {
        assert_eq!(row(repos, bad, "repo")["code"], "git_failed", "{out}");
    }

    // A listed repository that cannot be opened is removed without opening
    // it; the list then reads at once.
    for bad in [&head, &cache] {
        bounded(&env, &home, &["repos", "remove", bad.to_str().unwrap()]).success();
    }
    let text = bounded(&env, &home, &["status", "--all-repos"])
        .success()
        .stdout;
    assert!(text.contains("Publish under MIT?"), "{text}");
}

/// A repository with one commit at `dir`, whatever its name.
fn repo_at(env: &TestEnv, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    env.git(dir, &["init", "-q", "-b", "main"]);
    env.git(dir, &["commit", "-q", "--allow-empty", "-m", "base"]);
}

#[test]
fn repos_add_refuses_a_path_the_list_cannot_hold_and_remove_says_why() {
    let env = TestEnv::new();
    let home = env.path("home");
    let list = env.path("home/.config/git-loopx/repos");
    let good = env.state_repo("good");
    let before = std::fs::read_to_string(&list).unwrap();
    assert_eq!(before, format!("{}\n", canonical(&good)));

    let not_utf8 = env.path(".").join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    let odd = [
        (env.path("two\nlines"), r#"two\nlines""#, "newline"),
        (env.path("tab\there"), r#"tab\there""#, "control character"),
        (env.path("space "), r#"space ""#, "white space"),
        (not_utf8, r#"caf\xE9""#, "not UTF-8"),
    ];
    for (dir, shown, why) in &odd {
        repo_at(&env, dir);
        let out = env
            .loopx(dir, &["--json", "repos", "add"])
            .failure(2)
            .json();
        assert_eq!(out["error"]["code"], "invalid_input", "{out}");
        let said = out["error"]["message"].as_str().unwrap();
        assert!(said.contains(shown), "{shown}: {said}");
        assert!(said.contains(why), "{why}: {said}");
        assert!(said.contains("cannot be in the list"), "{said}");
        // `init` there works, and leaves the list as it was.
        env.loopx(dir, &["init", "--goal-text", "Odd"]).success();
        assert_eq!(std::fs::read_to_string(&list).unwrap(), before);

        let removed = env
            .loopx_cmd(&home)
            .args(["--json", "repos", "remove"])
            .arg(dir)
            .output()
            .unwrap();
        let out = Run::from(removed).failure(2).json();
        let said = out["error"]["message"].as_str().unwrap();
        assert!(said.contains("cannot be in the list"), "{said}");
        assert!(said.contains(why), "{why}: {said}");
    }
    assert_eq!(std::fs::read_to_string(&list).unwrap(), before);
}
