//! Issue 47: a fleet that keeps writing while nobody watches. Faults an
//! unattended host meets — a writer killed inside its ref update, git's
//! maintenance (a bare `git prune` included) beside writers — must neither
//! stop later writes nor lose an acknowledged one.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::env::TestEnv;

fn add(env: &TestEnv, repo: &Path, text: &str) -> crate::env::Run {
    env.loopx_cmd(repo)
        .args(["--json", "todo", "add", text])
        .output()
        .unwrap()
        .into()
}

/// The texts of every todo in the tip's state, read afresh from git.
fn todo_texts(env: &TestEnv, repo: &Path) -> std::collections::BTreeSet<String> {
    std::fs::remove_dir_all(repo.join(".git/loopx/cache")).ok();
    let list = env
        .loopx(repo, &["--json", "todo", "list", "--all"])
        .success()
        .json();
    list["todos"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["text"].as_str().map(str::to_owned))
        .collect()
}

/// Item 1: once `git pack-refs` (or `git gc`) has packed the state ref, a
/// write moves it as `git update-ref` does — a loose ref under its own
/// lock — and never takes `packed-refs.lock`: a lock a killed process left
/// there stops no write.
#[test]
fn a_packed_state_ref_moves_without_packed_refs_lock() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.git(&repo, &["pack-refs", "--all"]);
    let loose = repo.join(".git/refs/heads/loopx-state");
    assert!(!loose.exists(), "pack-refs packed the state ref");
    let lock = repo.join(".git/packed-refs.lock");
    std::fs::write(&lock, "").unwrap();

    let started = Instant::now();
    let out = add(&env, &repo, "written beside a fresh packed-refs.lock");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    eprintln!("write took {:?}", started.elapsed());
    assert!(loose.exists(), "the ref is written loose, as git writes it");
    assert!(lock.exists(), "a fresh lock may be a live git's: kept");
    assert!(todo_texts(&env, &repo).contains("written beside a fresh packed-refs.lock"));
}

/// Item 1: a writer SIGKILLed inside its ref update (while a lock file of
/// its ref transaction exists) stops no later write: the next writer, which
/// holds the host's writer lock, finds the dead writer's lock once it is
/// older than any live one can be, removes it, says so, and writes; `git
/// gc` runs after it.
#[test]
fn a_writer_killed_inside_its_ref_update_stops_no_later_write() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.git(&repo, &["pack-refs", "--all"]);
    let locks = [
        repo.join(".git/packed-refs.lock"),
        repo.join(".git/refs/heads/loopx-state.lock"),
    ];
    let left = |locks: &[std::path::PathBuf]| locks.iter().any(|l| l.exists());
    let mut caught = None;
    for i in 0..400 {
        let mut child = env
            .loopx_cmd(&repo)
            .args(["todo", "add", &format!("killed {i}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Kill it the moment a lock of its ref update appears.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !left(&locks) && Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::hint::spin_loop();
        }
        let _ = child.kill();
        let _ = child.wait();
        if left(&locks) {
            caught = Some(i);
            break;
        }
    }
    let caught = caught.expect("no kill landed inside a ref update in 400 tries");
    let held: Vec<_> = locks.iter().filter(|l| l.exists()).collect();
    eprintln!("kill {caught} left {held:?}");

    let out = add(&env, &repo, "after the kill");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(todo_texts(&env, &repo).contains("after the kill"));
    let out = add(&env, &repo, "and the next");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(env.git_ok(&repo, &["gc", "--quiet"]), "git gc runs again");
    env.fsck(&repo, &[]);
}

/// Item 2: a bare `git prune --expire=now` (it takes no `gc.pid`) in a
/// loop beside writers, with `git pack-refs --all` and `git gc
/// --prune=now` between, loses no acknowledged write: no write fails, every
/// todo a writer was told it added is in the tip, and once the next writer
/// has written back what the prunes took from older commits (a reader of
/// the tip does not read them) `git fsck --full` is clean.
#[test]
fn a_bare_prune_beside_writers_loses_no_acknowledged_write() {
    let rounds: usize = std::env::var("LOOPX_PRUNE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    for round in 1..=rounds {
        let env = TestEnv::new();
        let repo = env.state_repo("r");
        let steps: [&[&str]; 8] = [
            &["prune", "--expire=now"],
            &["prune", "--expire=now"],
            &["prune", "--expire=now"],
            &["pack-refs", "--all"],
            &["prune", "--expire=now"],
            &["prune", "--expire=now"],
            &["prune", "--expire=now"],
            &["gc", "--prune=now", "--quiet"],
        ];
        let race = Race::run(&env, &repo, round, &steps);
        // The next writer writes back what the last prunes took from the
        // commits before the tip, which no reader of the tip reads.
        add(&env, &repo, "after the prunes").success();
        env.fsck(&repo, &["--full"]);
        race.check(&env, &repo);
        let report = env.loopx(&repo, &["--json", "doctor"]).json();
        assert_eq!(report["healthy"], true, "round {round}: {report}");
    }
}

/// Three writers adding todos for 6 s beside a loop of git `steps`, in
/// turn: what they were told was written, and what failed.
pub struct Race {
    round: usize,
    pub acked: Vec<String>,
    failed: Vec<String>,
}

impl Race {
    pub fn run(env: &TestEnv, repo: &Path, round: usize, steps: &[&[&str]]) -> Race {
        let acked = std::sync::Mutex::new(Vec::new());
        let failed = std::sync::Mutex::new(Vec::new());
        let stop = AtomicBool::new(false);
        let mut runs = 0;
        std::thread::scope(|s| {
            for w in 0..3 {
                let (stop, acked, failed) = (&stop, &acked, &failed);
                s.spawn(move || {
                    let mut i = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let text = format!("round {round} writer {w} write {i}");
                        let out = add(env, repo, &text);
                        if out.code == 0 {
                            acked.lock().unwrap().push(text);
                        } else {
                            failed
                                .lock()
                                .unwrap()
                                .push(format!("{text}: {}{}", out.stdout, out.stderr));
                        }
                        i += 1;
                    }
                });
            }
            let deadline = Instant::now() + Duration::from_secs(6);
            while Instant::now() < deadline {
                // A step may lose a race with another (a lock held): that
                // is git's to say, and the next one runs.
                env.git_ok(repo, steps[runs % steps.len()]);
                runs += 1;
            }
            stop.store(true, Ordering::Relaxed);
        });
        let race = Race {
            round,
            acked: acked.into_inner().unwrap(),
            failed: failed.into_inner().unwrap(),
        };
        eprintln!(
            "round {round}: {} writes acknowledged beside {runs} maintenance runs",
            race.acked.len()
        );
        race
    }

    /// No write failed, and every acknowledged one is in the tip's state
    /// read afresh from git.
    pub fn check(&self, env: &TestEnv, repo: &Path) {
        let round = self.round;
        assert!(
            self.failed.is_empty(),
            "round {round}: {} writes failed, such as {:#?}",
            self.failed.len(),
            &self.failed[..self.failed.len().min(3)]
        );
        assert!(self.acked.len() > 10, "round {round}: too few writes");
        let titles = todo_texts(env, repo);
        let lost: Vec<&String> = self.acked.iter().filter(|t| !titles.contains(*t)).collect();
        assert!(
            lost.is_empty(),
            "round {round}: {} of {} acknowledged writes are not in the tip, such as {:?}",
            lost.len(),
            self.acked.len(),
            &lost[..lost.len().min(5)]
        );
    }
}

/// Item 2: the objects of the writes since the last repack, deleted from
/// under the tip (as a bare prune that read the refs before the moves
/// does), are written again from the journal of recent writes by the next
/// command that misses one: it succeeds, every write is there, `git fsck
/// --full` is clean, and `doctor` finds nothing missing.
#[test]
fn objects_pruned_from_under_the_tip_are_written_again() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    add(&env, &repo, "packed").success();
    env.git(&repo, &["repack", "-a", "-d", "-q"]);
    add(&env, &repo, "loose one").success();
    add(&env, &repo, "loose two").success();
    let mut deleted = 0;
    for dir in std::fs::read_dir(repo.join(".git/objects"))
        .unwrap()
        .flatten()
    {
        let name = dir.file_name().to_string_lossy().into_owned();
        if name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            deleted += std::fs::read_dir(dir.path()).unwrap().count();
            std::fs::remove_dir_all(dir.path()).unwrap();
        }
    }
    assert!(deleted >= 4, "{deleted}");
    assert!(
        !env.git_ok(&repo, &["fsck", "--full"]),
        "the tip's objects are gone"
    );

    let out = add(&env, &repo, "after");
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let texts = todo_texts(&env, &repo);
    for text in ["packed", "loose one", "loose two", "after"] {
        assert!(texts.contains(text), "{text} is lost: {texts:?}");
    }
    env.fsck(&repo, &["--full"]);
    let report = env.loopx(&repo, &["--json", "doctor"]).success().json();
    assert_eq!(report["healthy"], true, "{report}");
}

/// Item 6: a blob at a todo's path that inflates to 512 MiB (about half a
/// megabyte in git) is refused by the size its object header gives, before
/// a byte of it is inflated: `status` and `doctor` run under a 400 MB
/// address-space limit, exit 3 and name the file, the commit and the size.
/// Before, they inflated it whole first (2.1 and 3.2 GB at 1 GiB).
#[test]
fn an_inflate_bomb_is_refused_by_its_size_before_it_is_inflated() {
    use std::io::Write as _;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "kept");
    let path = env.state_path_of(&repo, &todo);
    let mut hash = env
        .git_cmd(&repo)
        .args(["hash-object", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = hash.stdin.take().unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..512 {
            stdin.write_all(&zeros).unwrap();
        }
    }
    let out = hash.wait_with_output().unwrap();
    let blob = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let bomb = env.commit_state_entry(&repo, "100644", &path, &blob);
    std::fs::remove_dir_all(repo.join(".git/loopx/cache")).ok();

    for args in [&["--json", "status"][..], &["--json", "doctor"]] {
        let out = env
            .command(Path::new("sh"), &repo)
            .args(["-c", "ulimit -v 400000; exec \"$@\"", "sh"])
            .arg(crate::env::loopx_bin())
            .args(args)
            .env("LOOPX_NOW", "2026-12-02T10:00:00Z")
            .output()
            .unwrap();
        let run: crate::env::Run = out.into();
        assert_eq!(run.code, 3, "{args:?}: {}{}", run.stdout, run.stderr);
        let said = run.stdout.clone();
        assert!(
            said.contains(&path) && said.contains("536870912 bytes") && said.contains(&bomb[..10]),
            "{args:?}: {said}"
        );
    }
}

/// Item 7: one write at `LOOPX_NOW=9999-12-30` archived every run of the
/// goal's window (the quota then read no spends, and no archive could happen
/// again before 9999). `LOOPX_NOW` more than a day past this machine's
/// clock is refused (exit 2) before anything is written, unless
/// `LOOPX_ALLOW_FUTURE=1` asks for a simulation of days to come.
#[test]
fn a_write_dated_far_past_this_machines_clock_is_refused() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "work");
    env.loopx(
        &repo,
        &[
            "--agent",
            "a",
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            "one",
        ],
    )
    .success();
    let tip = env.tip(&repo);
    let far = [
        "--json",
        "--agent",
        "a",
        "writeback",
        "--todo",
        &todo,
        "--outcome",
        "outcome_progress",
        "--summary",
        "far",
    ];
    let run: crate::env::Run = env
        .loopx_cmd(&repo)
        .env("LOOPX_NOW", "9999-12-30T00:00:00Z")
        .env_remove("LOOPX_ALLOW_FUTURE")
        .args(far)
        .output()
        .unwrap()
        .into();
    let out = run.failure(2).json();
    let message = out["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("9999-12-30T00:00:00Z") && message.contains("this machine's clock"),
        "{message}"
    );
    assert_eq!(env.tip(&repo), tip, "nothing was written");
    let goal = env.state_file(&repo, "goals/main/goal.yaml");
    assert!(!goal.contains("archive"), "{goal}");

    // A simulation asks for it.
    let out = env
        .loopx_cmd(&repo)
        .env("LOOPX_NOW", "2030-01-01T00:00:00Z")
        .env("LOOPX_ALLOW_FUTURE", "1")
        .args(["--json", "status"])
        .output()
        .unwrap();
    crate::env::Run::from(out).success();
}
