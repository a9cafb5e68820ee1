//! Faults a host can leave behind: objects deleted under the state ref (a
//! `git gc --prune=now` beside a writer), ref locks of killed writers, their
//! temporary files, a repository that refuses writes, and syncing to disk.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::env::TestEnv;

fn add(env: &TestEnv, repo: &Path, text: &str) -> crate::env::Run {
    env.loopx_cmd(repo)
        .args(["--json", "todo", "add", text])
        .output()
        .unwrap()
        .into()
}

/// Deletes every loose object: the objects of the writes made since the
/// last repack, and the journal that would write them again (as for
/// writes older than it).
fn delete_loose_objects(repo: &Path) -> usize {
    std::fs::remove_dir_all(repo.join(".git/loopx/written")).unwrap();
    let mut n = 0;

    for dir in std::fs::read_dir(repo.join(".git/objects"))
        .unwrap()
        .flatten()
    {
        let name = dir.file_name().to_string_lossy().into_owned();
        if name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            n += std::fs::read_dir(dir.path()).unwrap().count();
            std::fs::remove_dir_all(dir.path()).unwrap();
        }
    }
    n
}

fn backdate(path: &Path, by: Duration) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - by)
        .unwrap();
}

fn checks<'a>(report: &'a serde_json::Value, name: &str) -> Vec<&'a serde_json::Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == name)
        .collect()
}

#[test]
fn missing_tip_objects_are_named_then_repaired_from_the_reflog() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    add(&env, &repo, "kept").success();
    let intact = env.tip(&repo);
    // Everything so far into a pack, so that only the next writes are loose.
    env.git(&repo, &["repack", "-a", "-d", "-q"]);
    add(&env, &repo, "lost one").success();
    add(&env, &repo, "lost two").success();
    let broken = env.tip(&repo);
    assert!(delete_loose_objects(&repo) >= 4);

    // A write names the ref, the commit and the missing object.
    let out = add(&env, &repo, "after").failure(3);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "state_invalid", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("refs/heads/loopx-state at {broken}"))
            && message.contains("commit")
            && message.contains("missing from the object store"),
        "{message}"
    );
    assert!(
        error["hint"].as_str().unwrap().contains("doctor --repair"),
        "{error}"
    );
    // So does a read that cannot use the parsed-state cache.
    std::fs::remove_dir_all(repo.join(".git/loopx/cache")).unwrap();
    let out = env.loopx(&repo, &["--json", "todo", "list"]).failure(3);
    assert!(
        out.stdout.contains("missing from the object store"),
        "{}",
        out.stdout
    );

    // doctor checks the objects, not the cache.
    let out = env.loopx(&repo, &["--json", "doctor"]).failure(3);
    let report = out.json();
    let objects = checks(&report, "objects");
    assert_eq!(objects[0]["level"], "error", "{report}");

    let out = env
        .loopx(&repo, &["--json", "doctor", "--repair"])
        .success();
    let report = out.json();
    assert_eq!(report["healthy"], true, "{report}");
    let lost: Vec<&str> = report["lost_writes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(lost.len(), 2, "{report}");
    assert!(lost[0].contains("lost one") && lost[1].contains("lost two"));
    let repaired = report["repaired"].to_string();
    assert!(repaired.contains(&broken[..10]), "{repaired}");

    // A new commit on top of the intact one, with its tree.
    let tip = env.tip(&repo);
    assert_eq!(env.git(&repo, &["rev-parse", "loopx-state^"]), intact);
    assert_eq!(
        env.git(&repo, &["rev-parse", "loopx-state^{tree}"]),
        env.git(&repo, &["rev-parse", &format!("{intact}^{{tree}}")])
    );
    assert!(env
        .git(&repo, &["log", "-1", "--format=%B", &tip])
        .contains(&broken));
    add(&env, &repo, "after").success();
    let list = env.loopx(&repo, &["todo", "list"]).success().stdout;
    assert!(list.contains("kept") && list.contains("after"), "{list}");
    assert!(!list.contains("lost one"), "{list}");
    // The reflog no longer names the lost commits: plain fsck is clean.
    env.fsck(&repo, &[]);
    env.loopx(&repo, &["doctor"]).success();
}

#[test]
fn stale_ref_locks_fail_doctor_and_repair_waits_for_no_writer() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let state_lock = repo.join(".git/refs/heads/loopx-state.lock");
    let remote_lock = repo.join(".git/refs/remotes/origin/loopx-state.lock");
    std::fs::create_dir_all(remote_lock.parent().unwrap()).unwrap();
    for lock in [&state_lock, &remote_lock] {
        std::fs::write(lock, "").unwrap();
        backdate(lock, Duration::from_secs(600));
    }
    let out = env.loopx(&repo, &["--json", "doctor"]).failure(3);
    let report = out.json();
    let locks = checks(&report, "lock");
    assert_eq!(locks.len(), 2, "{report}");
    for lock in locks {
        assert_eq!(lock["level"], "error", "{report}");
        assert!(
            lock["detail"].as_str().unwrap().contains("s old"),
            "{report}"
        );
    }

    // A live writer holds the writer lock: nothing is removed.
    let writer = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(repo.join(".git/loopx/writer.lock"))
        .unwrap();
    writer.lock().unwrap();
    let out = env
        .loopx(&repo, &["--json", "doctor", "--repair"])
        .failure(3);
    assert!(out.stdout.contains("writer.lock"), "{}", out.stdout);
    assert!(state_lock.exists() && remote_lock.exists());
    drop(writer);

    let out = env
        .loopx(&repo, &["--json", "doctor", "--repair"])
        .success();
    let repaired = out.json()["repaired"].to_string();
    assert!(
        repaired.contains("loopx-state.lock") && repaired.contains("600s old"),
        "{repaired}"
    );
    assert!(!state_lock.exists() && !remote_lock.exists());
    add(&env, &repo, "written").success();
}

#[test]
fn a_fresh_lock_is_a_warning_and_is_kept() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let lock = repo.join(".git/refs/heads/loopx-state.lock");
    std::fs::write(&lock, "").unwrap();
    let report = env.loopx(&repo, &["--json", "doctor", "--repair"]).json();
    assert_eq!(checks(&report, "lock")[0]["level"], "warn", "{report}");
    assert!(lock.exists());
}

#[test]
fn the_next_writer_removes_what_killed_writers_left() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let dead = 999_999_999;
    let old = [
        repo.join(format!(".git/loopx/tmp_loopx_{dead}_0")),
        repo.join(format!(".git/objects/pack/tmp_loopx_{dead}_1")),
        repo.join(format!(".git/loopx/cache/state-0-abc.bin.{dead}.tmp")),
    ];
    let young = repo.join(format!(".git/objects/pack/tmp_loopx_{dead}_2"));
    std::fs::create_dir_all(repo.join(".git/loopx/cache")).unwrap();
    for path in old.iter().chain([&young]) {
        std::fs::write(path, "half written").unwrap();
    }
    for path in &old {
        backdate(path, Duration::from_secs(120));
    }
    add(&env, &repo, "x").success();
    for path in &old {
        assert!(!path.exists(), "{} is left", path.display());
    }
    assert!(young.exists(), "a file younger than a minute stays");
}

#[test]
fn doctor_says_writes_will_fail_in_a_repository_refusing_files() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let heads = repo.join(".git/refs/heads");
    // Root ignores permission bits: an immutable directory refuses it too.
    let frozen = std::process::Command::new("chattr")
        .arg("+i")
        .arg(&heads)
        .status()
        .is_ok_and(|s| s.success());
    let mut unfreeze: Box<dyn FnMut()> = if frozen {
        let heads = heads.clone();
        Box::new(move || {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&heads)
                .status();
        })
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&heads, std::fs::Permissions::from_mode(0o555)).unwrap();
        if std::fs::write(heads.join("probe"), "").is_ok() {
            let _ = std::fs::remove_file(heads.join("probe"));
            std::fs::set_permissions(&heads, std::fs::Permissions::from_mode(0o755)).unwrap();
            crate::require::skip(
                "LOOPX_REQUIRE_IMMUTABLE_DIR",
                &format!(
                    "cannot make {} refuse writes here (root, and `chattr +i` failed)",
                    heads.display()
                ),
            );
            return;
        }
        let heads = heads.clone();
        Box::new(move || {
            std::fs::set_permissions(&heads, std::fs::Permissions::from_mode(0o755)).unwrap();
        })
    };
    let out = env.loopx(&repo, &["--json", "doctor"]);
    unfreeze();
    let report = out.json();
    let writable = checks(&report, "writable");
    assert_eq!(writable[0]["level"], "error", "{report}");
    let detail = writable[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("writes will fail") && detail.contains("refs/heads"),
        "{detail}"
    );
    assert_eq!(out.code, 3);
    env.loopx(&repo, &["doctor"]).success();
}

/// The files a write synced, from its `loopx::fsync` trace lines.
fn synced(env: &TestEnv, repo: &Path) -> Vec<String> {
    let run: crate::env::Run = env
        .loopx_cmd(repo)
        .env("LOOPX_LOG", "loopx::fsync=trace")
        .args(["todo", "add", "synced"])
        .output()
        .unwrap()
        .into();
    run.success()
        .stderr
        .lines()
        .filter_map(|l| l.split_once("sync ").map(|(_, p)| p.to_owned()))
        .collect()
}

#[test]
fn writes_are_synced_as_core_fsync_asks() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let has = |files: &[String], end: &str| files.iter().any(|f| f.ends_with(end));
    let objects = |files: &[String]| files.iter().filter(|f| f.contains("/objects/")).count();

    // Unset: what `git commit` syncs by default (git's default covers
    // packs, and a writeback writes loose objects and a ref): nothing.
    assert!(synced(&env, &repo).is_empty());
    env.git(&repo, &["config", "core.fsync", "pack-metadata"]);
    assert!(synced(&env, &repo).is_empty());

    env.git(&repo, &["config", "core.fsync", "reference"]);
    let files = synced(&env, &repo);
    assert!(has(&files, "logs/refs/heads/loopx-state"), "{files:?}");
    assert_eq!(objects(&files), 0, "{files:?}");

    env.git(&repo, &["config", "core.fsync", "none"]);
    assert!(synced(&env, &repo).is_empty());

    for method in ["fsync", "writeout-only", "batch"] {
        env.git(&repo, &["config", "core.fsync", "committed"]);
        env.git(&repo, &["config", "core.fsyncMethod", method]);
        let files = synced(&env, &repo);
        for end in ["logs/refs/heads/loopx-state", "refs/heads"] {
            assert!(has(&files, end), "{method}: no {end} in {files:?}");
        }
        assert!(
            files
                .iter()
                .any(|f| f.ends_with("refs/heads/loopx-state") && !f.contains("/logs/")),
            "{method}: the ref was not synced: {files:?}"
        );
        // A blob, the trees on its path, the commit, and their directories.
        assert!(
            objects(&files) >= 6,
            "{method}: objects not synced: {files:?}"
        );
        let first_ref = files.iter().position(|f| f.contains("refs/heads")).unwrap();
        let last_object = files.iter().rposition(|f| f.contains("/objects/")).unwrap();
        assert!(
            last_object < first_ref,
            "objects are synced before the ref: {files:?}"
        );
    }

    env.git(&repo, &["config", "--unset", "core.fsync"]);
    env.git(&repo, &["config", "core.fsyncObjectFiles", "true"]);
    let files = synced(&env, &repo);
    assert!(objects(&files) > 0, "{files:?}");
    env.fsck(&repo, &[]);
}

/// Writers racing git's own maintenance in a loop beside them — `git gc
/// --prune=now` (git documents it as unsafe beside writers), `git repack -a
/// -d` and `git maintenance run` — never lose a write they acknowledged:
/// after the race every todo a writer was told it added is in the tip's
/// state read from git, `git fsck` is clean, and no `.keep` file is left.
/// `LOOPX_PRUNE_ROUNDS` sets how many rounds (default 2).
#[test]
fn maintenance_beside_writers_never_loses_an_acknowledged_write() {
    let rounds: usize = std::env::var("LOOPX_PRUNE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    for round in 1..=rounds {
        let env = TestEnv::new();
        let repo = env.state_repo("r");
        let steps: [&[&str]; 3] = [
            &["gc", "--prune=now", "--quiet"],
            &["repack", "-a", "-d", "-q"],
            &["maintenance", "run", "--quiet"],
        ];
        let race = crate::unattended::Race::run(&env, &repo, round, &steps);
        race.check(&env, &repo);
        env.fsck(&repo, &["--full"]);
        let keeps: Vec<_> = std::fs::read_dir(repo.join(".git/objects/pack"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".keep"))
            .map(|e| e.file_name())
            .collect();
        assert!(
            keeps.is_empty(),
            "round {round}: .keep files left: {keeps:?}"
        );
    }
}

/// Issue 46, item 6: a tip whose objects are all there but whose file a
/// reader refuses (a hand edit with plumbing) is repaired on top of
/// itself: the refused edit stays in the first-parent history, the message
/// names the commit, the file and what was undone, and says nothing of
/// missing objects.
#[test]
fn a_hand_edited_bad_file_is_repaired_on_top_of_the_edit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = add(&env, &repo, "kept").success().json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let intact = env.tip(&repo);
    let path = env.state_path_of(&repo, &todo);
    let edit = env.commit_state_file(&repo, &path, "id: [unclosed\n");
    env.loopx(&repo, &["todo", "list"]).failure(3);

    let report = env
        .loopx(&repo, &["--json", "doctor", "--repair"])
        .success()
        .json();
    assert_eq!(report["healthy"], true, "{report}");
    let said = report.to_string();
    assert!(
        !said.contains("objects missing") && !said.contains("gc --prune"),
        "{said}"
    );
    assert!(
        report.get("lost_writes").is_none(),
        "nothing was lost: {report}"
    );
    // On top of the edit, with the intact tree.
    assert_eq!(env.git(&repo, &["rev-parse", "loopx-state^"]), edit);
    assert_eq!(
        env.git(&repo, &["rev-parse", "loopx-state^{tree}"]),
        env.git(&repo, &["rev-parse", &format!("{intact}^{{tree}}")])
    );
    let message = env.git(&repo, &["log", "-1", "--format=%B", "loopx-state"]);
    for wanted in [&edit[..], &path[..], "hand edit", &intact[..]] {
        assert!(message.contains(wanted), "{wanted} in {message}");
    }
    assert!(
        !message.contains("\n- \n") && !message.ends_with("- \n"),
        "{message}"
    );
    assert!(!message.contains("missing"), "{message}");
    let list = env.loopx(&repo, &["todo", "list"]).success().stdout;
    assert!(list.contains("kept"), "{list}");
    env.loopx(&repo, &["doctor"]).success();
}
