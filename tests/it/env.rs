//! A hermetic environment for running git and git-loopx: pinned HOME, no
//! global or system git config, fixed identities, dates, timezone and clock.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const NOW: &str = "2026-12-02T10:00:00Z";

pub struct TestEnv {
    pub root: tempfile::TempDir,
    pub now: String,
}

/// The result of one git-loopx run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON object ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    #[track_caller]
    pub fn success(self) -> Self {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    #[track_caller]
    pub fn failure(self, code: i32) -> Self {
        assert_eq!(
            self.code, code,
            "expected exit {code}\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(out: Output) -> Self {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// `PATH` with the directory of the binary under test ([`loopx_bin`])
/// first, so that `git loopx …` (as hooks and runners spell it) runs that
/// binary.
pub fn path_with_loopx() -> std::ffi::OsString {
    let bin = loopx_bin();
    let mut dirs = vec![bin.parent().expect("binary has a directory").to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).expect("PATH entries join")
}

/// The `git-loopx` binary under test: `LOOPX_TEST_BIN` names another build
/// to run instead (to show that a test fails on an older binary).
pub fn loopx_bin() -> PathBuf {
    std::env::var_os("LOOPX_TEST_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_git-loopx").into())
}

/// Runs `cmd` with `stdin` written to its standard input (a hook's JSON).
pub fn run_with_stdin(cmd: &mut Command, stdin: &[u8]) -> Run {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the program runs");
    let written = child.stdin.take().expect("stdin is piped").write_all(stdin);
    // A program may end without reading all of its input (a hook that
    // fails open does): that is its answer, not the test's failure.
    if let Err(e) = written {
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::BrokenPipe,
            "stdin is written: {e}"
        );
    }
    child.wait_with_output().expect("the program ends").into()
}

impl TestEnv {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(root.path().join("home")).unwrap();
        TestEnv {
            root,
            now: NOW.to_owned(),
        }
    }

    /// A test environment under `base` (not the system's temporary
    /// directory).
    pub fn new_in(base: &Path) -> Self {
        std::fs::create_dir_all(base).unwrap();
        let root = tempfile::tempdir_in(base).expect("tempdir");
        std::fs::create_dir(root.path().join("home")).unwrap();
        TestEnv {
            root,
            now: NOW.to_owned(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    fn hermetic(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", path_with_loopx())
            .env("HOME", self.path("home"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_AUTHOR_DATE", "2026-12-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            .env("GIT_COMMITTER_DATE", "2026-12-01T00:00:00Z")
            .env("TZ", "UTC")
            .env("LANG", "C")
            .env("LC_ALL", "C")
            // The tests' pinned dates may lie past this machine's clock.
            .env("LOOPX_ALLOW_FUTURE", "1");
        // `LOOPX_WRITER_LOCK=0 cargo test` runs the suite with writers
        // racing on the compare-and-swap alone.
        if let Some(value) = std::env::var_os("LOOPX_WRITER_LOCK") {
            cmd.env("LOOPX_WRITER_LOCK", value);
        }
    }

    /// Any program, run in `dir` with the same hermetic environment.
    pub fn command(&self, program: &Path, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        self.hermetic(&mut cmd);
        cmd.current_dir(dir).env("LOOPX_NOW", &self.now);
        cmd
    }

    /// A `git` command in `dir`, hermetic.
    pub fn git_cmd(&self, dir: &Path) -> Command {
        let mut cmd = Command::new("git");
        self.hermetic(&mut cmd);
        cmd.current_dir(dir);
        cmd
    }

    /// Runs git and returns its trimmed stdout, panicking on failure.
    #[track_caller]
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git_cmd(dir).args(args).output().expect("git runs");
        assert!(
            out.status.success(),
            "git {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_owned()
    }

    /// `git fsck` with `args`, once no background `git maintenance` (which
    /// a write may start) is running: a repack deleting the packs it rolled
    /// up under fsck's feet would fail it for nothing.
    pub fn fsck(&self, dir: &Path, args: &[&str]) {
        let common = self.git(dir, &["rev-parse", "--git-common-dir"]);
        let common = dir.join(common);
        let busy =
            || common.join("gc.pid").exists() || common.join("objects/maintenance.lock").exists();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while busy() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let mut all = vec!["fsck", "--no-progress"];
        all.extend_from_slice(args);
        self.git(dir, &all);
    }

    /// Runs git, and tells whether it succeeded (for a command that may
    /// lose a race, like two repacks of one repository).
    pub fn git_ok(&self, dir: &Path, args: &[&str]) -> bool {
        let out = self.git_cmd(dir).args(args).output().expect("git runs");
        out.status.success()
    }

    /// A `git-loopx` command ([`loopx_bin`]) in `dir`, hermetic, with
    /// `LOOPX_NOW` set.
    pub fn loopx_cmd(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(loopx_bin());
        self.hermetic(&mut cmd);
        cmd.current_dir(dir).env("LOOPX_NOW", &self.now);
        cmd
    }

    /// `git-loopx` started by a program that plays an agent runtime (util-
    /// linux's `setsid`, which waits for it): for `git loopx mcp`, which
    /// records the process that started it as governed (`ops::governed`).
    /// Started straight from the test binary, it would record the test
    /// itself, and every person's command the test runs next would be
    /// refused as the agent's.
    pub fn under_runtime_cmd(&self, dir: &Path) -> Command {
        let mut cmd = Command::new("setsid");
        self.hermetic(&mut cmd);
        cmd.args(["--fork", "--wait"])
            .arg(loopx_bin())
            .current_dir(dir)
            .env("LOOPX_NOW", &self.now);
        cmd
    }

    pub fn loopx(&self, dir: &Path, args: &[&str]) -> Run {
        self.loopx_cmd(dir)
            .args(args)
            .output()
            .expect("git-loopx runs")
            .into()
    }

    /// A new repository with one commit on `main`.
    pub fn repo(&self, name: &str) -> PathBuf {
        let dir = self.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.git(&dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("README"), "hello\n").unwrap();
        self.git(&dir, &["add", "README"]);
        self.git(&dir, &["commit", "-q", "-m", "base"]);
        dir
    }

    /// A repository with state initialised by `git loopx init`.
    pub fn state_repo(&self, name: &str) -> PathBuf {
        let dir = self.repo(name);
        self.loopx(&dir, &["init", "--goal-text", "Ship the parser"])
            .success();
        dir
    }

    /// Commits `content` at `path` on loopx-state by hand, with git plumbing
    /// (as a careless human or a hostile peer would), returning the commit.
    pub fn commit_state_file(&self, repo: &Path, path: &str, content: &str) -> String {
        let blob_file = self.path("hand.blob");
        std::fs::write(&blob_file, content).unwrap();
        let blob = self.git(repo, &["hash-object", "-w", blob_file.to_str().unwrap()]);
        self.commit_state_entry(repo, "100644", path, &blob)
    }

    /// Commits a tree entry of any `mode` (`120000` a symlink, `160000` a
    /// submodule) naming `object` at `path` on loopx-state, by hand.
    pub fn commit_state_entry(&self, repo: &Path, mode: &str, path: &str, object: &str) -> String {
        let index = self.path("hand.index");
        let _ = std::fs::remove_file(&index);
        let with_index = |args: &[&str]| {
            let out = self
                .git_cmd(repo)
                .env("GIT_INDEX_FILE", &index)
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        with_index(&["read-tree", "loopx-state"]);
        with_index(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("{mode},{object},{path}"),
        ]);
        let tree = with_index(&["write-tree"]);
        let commit = self.git(
            repo,
            &["commit-tree", &tree, "-p", "loopx-state", "-m", "hand edit"],
        );
        self.git(repo, &["update-ref", "refs/heads/loopx-state", &commit]);
        commit
    }

    /// `todo add TEXT` in `dir`, returning the new todo's id.
    #[track_caller]
    pub fn add_todo(&self, dir: &Path, text: &str) -> String {
        self.loopx(dir, &["--json", "todo", "add", text])
            .success()
            .json()["todo"]["id"]
            .as_str()
            .expect("todo add answers with todo.id")
            .to_owned()
    }

    /// Writes an executable script (a hook, a fake program).
    pub fn write_script(&self, path: &Path, body: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    pub fn tip(&self, repo: &Path) -> String {
        self.git(repo, &["rev-parse", "refs/heads/loopx-state"])
    }
}

/// Replaces random ids with stable names in order of first appearance
/// (`todo_1`, `run_1`, `<commit>`), so snapshots do not depend on nonces.
#[derive(Default)]
pub struct Redactor {
    seen: std::collections::HashMap<String, String>,
    counts: std::collections::HashMap<&'static str, usize>,
}

impl Redactor {
    pub fn redact(&mut self, text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        let is_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        let boundary = |j: usize| j >= bytes.len() || !bytes[j].is_ascii_alphanumeric();
        while i < bytes.len() {
            let start_ok = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
            let mut matched = None;
            if start_ok {
                for (prefix, kind) in [("todo_", "todo"), ("run_", "run")] {
                    let end = i + prefix.len() + 12;
                    if text[i..].starts_with(prefix)
                        && end <= bytes.len()
                        && bytes[i + prefix.len()..end].iter().all(|&b| is_hex(b))
                        && boundary(end)
                    {
                        matched = Some((end, kind));
                    }
                }
                if matched.is_none()
                    && i + 40 <= bytes.len()
                    && bytes[i..i + 40].iter().all(|&b| is_hex(b))
                    && boundary(i + 40)
                {
                    matched = Some((i + 40, "commit"));
                }
            }
            match matched {
                Some((end, "commit")) => {
                    out.push_str("<commit>");
                    i = end;
                }
                Some((end, kind)) => {
                    let id = &text[i..end];
                    let name = match self.seen.get(id) {
                        Some(n) => n.clone(),
                        None => {
                            let n = self.counts.entry(kind).or_default();
                            *n += 1;
                            let name = format!("{kind}_{n}");
                            self.seen.insert(id.to_owned(), name.clone());
                            name
                        }
                    };
                    out.push_str(&name);
                    i = end;
                }
                _ => {
                    let ch = text[i..].chars().next().unwrap();
                    out.push(ch);
                    i += ch.len_utf8();
                }
            }
        }
        out
    }

    /// Pretty JSON, redacted.
    pub fn json(&mut self, value: &serde_json::Value) -> String {
        self.redact(&serde_json::to_string_pretty(value).unwrap())
    }
}

impl TestEnv {
    /// Runs git-loopx with `LOOPX_NOW` set to `now`.
    pub fn loopx_at(&self, dir: &Path, now: &str, args: &[&str]) -> Run {
        self.loopx_cmd(dir)
            .env("LOOPX_NOW", now)
            .args(args)
            .output()
            .expect("git-loopx runs")
            .into()
    }

    /// The content of `path` at the tip of loopx-state.
    pub fn state_file(&self, repo: &Path, path: &str) -> String {
        self.git(repo, &["show", &format!("loopx-state:{path}")])
    }

    /// The path of the todo (or run) file with this id on the branch.
    pub fn state_path_of(&self, repo: &Path, id: &str) -> String {
        let files = self.git(repo, &["ls-tree", "-r", "--name-only", "loopx-state"]);
        files
            .lines()
            .find(|l| l.ends_with(&format!("/{id}.yaml")))
            .unwrap_or_else(|| panic!("no file for {id} in\n{files}"))
            .to_owned()
    }
}

impl TestEnv {
    /// The path of the `git` program on PATH, for wrappers that run it.
    pub fn real_git(&self) -> String {
        let out = std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout;
        String::from_utf8(out).unwrap().trim().to_owned()
    }

    /// A bare repository to serve as the shared remote.
    pub fn bare(&self, name: &str) -> PathBuf {
        let dir = self.path(name);
        std::fs::create_dir_all(&dir).unwrap();
        self.git(&dir, &["init", "-q", "--bare", "-b", "main"]);
        dir
    }

    /// A clone of `remote` named `name`.
    pub fn clone_of(&self, remote: &Path, name: &str) -> PathBuf {
        let dir = self.path(name);
        self.git(
            self.root.path(),
            &[
                "clone",
                "-q",
                remote.to_str().unwrap(),
                dir.to_str().unwrap(),
            ],
        );
        dir
    }

    /// A bare remote whose state was initialised and pushed from clone `a`,
    /// plus further clones that have fetched it.
    pub fn shared_state(&self, clones: &[&str]) -> (PathBuf, Vec<PathBuf>) {
        let remote = self.bare("remote.git");
        let first = self.repo(clones[0]);
        self.git(
            &first,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
        self.git(&first, &["push", "-q", "origin", "main"]);
        self.loopx(&first, &["init", "--goal-text", "Ship the parser"])
            .success();
        self.loopx(&first, &["sync"]).success();
        let mut dirs = vec![first];
        for name in &clones[1..] {
            dirs.push(self.clone_of(&remote, name));
        }
        (remote, dirs)
    }
}

/// `LOOPX_TEST_DOCTOR_REV=1 cargo test`: when each test's environment is
/// dropped, `doctor --rev` checks every state commit git-loopx made in each
/// of its repositories (commits carrying a `Loopx-Op` trailer whose
/// ancestors all do too: a hand-made commit, and what was built on it, may
/// be broken on purpose). Off by default; it costs one variable lookup.
impl Drop for TestEnv {
    fn drop(&mut self) {
        if std::env::var_os("LOOPX_TEST_DOCTOR_REV").is_none() || std::thread::panicking() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(self.root.path()) else {
            return;
        };
        for dir in entries.flatten().map(|e| e.path()) {
            if dir.join(".git").exists() {
                self.doctor_every_loopx_commit(&dir);
            }
        }
    }
}

impl TestEnv {
    fn doctor_every_loopx_commit(&self, repo: &Path) {
        let log = self
            .git_cmd(repo)
            .args([
                "log",
                "--topo-order",
                "--reverse",
                "--format=%H %P%x00%(trailers:key=Loopx-Op,valueonly,separator=%x2C)%x01",
                "refs/heads/loopx-state",
                "--",
            ])
            .output()
            .expect("git runs");
        if !log.status.success() {
            return; // no state branch
        }
        let mut tainted = std::collections::HashSet::new();
        for record in String::from_utf8_lossy(&log.stdout).split('\x01') {
            let Some((ids, op)) = record.trim_start().split_once('\0') else {
                continue;
            };
            let mut ids = ids.split_whitespace();
            let commit = ids.next().expect("a commit id").to_owned();
            if op.trim().is_empty() || ids.any(|p| tainted.contains(p)) {
                tainted.insert(commit);
                continue;
            }
            let run = self.loopx(repo, &["doctor", "--rev", &commit]);
            assert_eq!(
                run.code,
                0,
                "LOOPX_TEST_DOCTOR_REV: doctor --rev {commit} in {}:\n{}{}",
                repo.display(),
                run.stdout,
                run.stderr
            );
        }
    }
}

/// Runs `f` on a thread and gives its result, or `None` if it is not done
/// within `limit` (the thread is then left behind).
pub fn within<T: Send + 'static>(
    limit: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).ok()
}

impl TestEnv {
    /// Runs git-loopx with `args` and gives its result, or panics naming
    /// the command once it has run `limit` (it is killed): a hang
    /// detector for inputs whose cost once grew without bound.
    pub fn loopx_within(&self, dir: &Path, args: &[&str], limit: std::time::Duration) -> Run {
        let mut child = self
            .loopx_cmd(dir)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("git-loopx runs");
        let started = std::time::Instant::now();
        while child.try_wait().expect("waits").is_none() {
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("git-loopx {args:?} ran past {limit:?} and was killed");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        child.wait_with_output().expect("git-loopx output").into()
    }
}
