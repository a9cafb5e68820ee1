//! `git loopx import loopx` (issue 17, point 7): a LoopX 2.1.1 state, made
//! by the real reference and trimmed (tests/fixtures/loopx-2.1.1), comes over
//! as one commit and decides the same; a second import writes nothing; bad
//! inputs are refused with nothing written. With the reference installed
//! (LOOPX_REF_BIN, LOOPX_REF_PATH), a fresh reference state is imported and
//! both tools' should-run decisions are compared; `.ci/run` installs it and
//! sets `LOOPX_REQUIRE_REFERENCE=1`, under which a missing one fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::env::TestEnv;

/// After the fixture was made: its claim (expires 00:41:44) is live and its
/// three spends are in the 24-hour window.
const FIXTURE_NOW: &str = "2026-12-04T00:00:00Z";
/// The fixture's claimed P0 todo, as LoopX names it.
const CLAIMED: &str = "todo_2b5276ae79fd0100b9ebd31c";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of the committed fixture: (project dir, runtime root).
fn fixture(env: &TestEnv) -> (PathBuf, PathBuf) {
    fixture_at(env, "loopx-fixture")
}

/// [`fixture`], copied to `name` under the test's directory.
fn fixture_at(env: &TestEnv, name: &str) -> (PathBuf, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/loopx-2.1.1");
    let dst = env.path(name);
    copy_dir(&src, &dst);
    (dst.join("proj"), dst.join("home/.loopx"))
}

fn import(
    env: &TestEnv,
    repo: &Path,
    now: &str,
    project: &Path,
    root: &Path,
    extra: &[&str],
) -> crate::env::Run {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    import_text(env, repo, now, project, root, &args)
}

/// `import loopx PROJECT --runtime-root ROOT` with `extra` (global flags
/// first), as text.
fn import_text(
    env: &TestEnv,
    repo: &Path,
    now: &str,
    project: &Path,
    root: &Path,
    extra: &[&str],
) -> crate::env::Run {
    let (global, rest): (Vec<&str>, Vec<&str>) = extra.iter().partition(|a| **a == "--json");
    let mut args = global;
    args.extend([
        "import",
        "loopx",
        project.to_str().unwrap(),
        "--runtime-root",
        root.to_str().unwrap(),
    ]);
    args.extend(rest);
    env.loopx_at(repo, now, &args)
}

fn state_commits(env: &TestEnv, repo: &Path) -> usize {
    env.git(repo, &["rev-list", "--count", "loopx-state"])
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn the_fixture_comes_over_in_one_commit_and_decides_as_loopx_did() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let (project, root) = fixture(&env);
    let report = import(&env, &repo, FIXTURE_NOW, &project, &root, &[])
        .success()
        .json();
    let imported = &report["imported"];
    assert_eq!(imported["goals"], 2, "{report}");
    assert_eq!(imported["todos"], 10, "{report}");
    assert_eq!(imported["gates"], 1, "{report}");
    assert_eq!(imported["claims"], 1, "{report}");
    assert_eq!(imported["spends"], 3, "{report}");
    assert_eq!(imported["agents"], 1, "{report}");
    assert_eq!(state_commits(&env, &repo), 1, "one commit, made like init");
    // What had no equivalent is named with its LoopX id.
    let skipped = report["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|s| s["field"] == "bound_agent" && s["kind"] == "todo"),
        "{report}"
    );

    let claimed = report["todo_ids"][CLAIMED].as_str().unwrap().to_owned();
    let todo = env
        .loopx_at(
            &repo,
            FIXTURE_NOW,
            &["--json", "--goal", "bench-goal", "todo", "show", &claimed],
        )
        .success()
        .json();
    let text = todo.to_string();
    assert!(text.contains("Port the fixture"), "{text}");
    assert!(
        text.contains(&format!("loopx:{CLAIMED}")),
        "origin kept: {text}"
    );
    assert!(
        text.contains("\"epoch\":1"),
        "the lease's epoch is kept: {text}"
    );

    // The reference decided: run, safe_bypass_user_gate_fallback, the claimed P0 todo.
    let decided = env
        .loopx_at(
            &repo,
            FIXTURE_NOW,
            &[
                "--json",
                "--agent",
                "bench-agent",
                "--goal",
                "bench-goal",
                "should-run",
            ],
        )
        .success()
        .json();
    assert_eq!(decided["should_run"], true, "{decided}");
    assert_eq!(decided["decision"], "run", "{decided}");
    assert_eq!(
        decided["effective_action"], "safe_bypass_user_gate_fallback",
        "{decided}"
    );
    assert_eq!(
        decided["selected_todo"]["id"],
        claimed.as_str(),
        "{decided}"
    );
    assert_eq!(decided["notify_user"], true, "{decided}");
    // The spends count against the quota at their own times.
    assert_eq!(decided["quota"]["spent_slots"], 3, "{decided}");

    // A second import finds everything there: no commit.
    let again = import(&env, &repo, FIXTURE_NOW, &project, &root, &[]).success();
    let json = again.json();
    assert_eq!(json["imported"]["todos"], 0, "{json}");
    assert_eq!(json["unchanged"]["todos"], 10, "{json}");
    assert!(json.get("commit").is_none(), "{json}");
    assert_eq!(state_commits(&env, &repo), 1);
    let text = import_text(&env, &repo, FIXTURE_NOW, &project, &root, &[])
        .success()
        .stdout;
    assert!(text.contains("Nothing to import"), "{text}");
}

#[test]
fn dry_run_writes_nothing_and_goal_filter_picks_one_goal() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let (project, root) = fixture(&env);
    let before = env.tip(&repo);
    // `init` listed the repository (`git loopx repos`); take it off the list
    // to see that an import, not a dry run, lists it again.
    let listed = || {
        env.loopx(&repo, &["--json", "repos", "list"])
            .success()
            .json()["repos"]
            .as_array()
            .unwrap()
            .len()
    };
    env.loopx(&repo, &["repos", "remove", "."]).success();
    assert_eq!(listed(), 0);
    let dry = import(&env, &repo, FIXTURE_NOW, &project, &root, &["--dry-run"])
        .success()
        .json();
    assert_eq!(dry["imported"]["todos"], 10, "{dry}");
    assert_eq!(env.tip(&repo), before, "--dry-run wrote nothing");
    assert_eq!(listed(), 0, "a dry run lists nothing");

    let one = import(
        &env,
        &repo,
        FIXTURE_NOW,
        &project,
        &root,
        &["--loopx-goal", "side-goal"],
    )
    .success()
    .json();
    assert_eq!(one["imported"]["goals"], 1, "{one}");
    assert_eq!(listed(), 1, "an import lists the repository");
    assert_eq!(one["imported"]["todos"], 3, "{one}");
    assert_eq!(one["imported"]["spends"], 0, "{one}");
    // The existing state keeps its default goal; the imported one is added.
    let side = env.state_file(&repo, "goals/side-goal/goal.yaml");
    assert!(side.contains("Side goal"), "{side}");
    let main = env.state_file(&repo, "goals/main/goal.yaml");
    assert!(main.contains("Ship the parser"), "{main}");
    assert!(env
        .state_file(&repo, "loopx.yaml")
        .contains("default_goal: main"));
}

#[test]
fn an_existing_goal_of_the_same_id_is_refused_unless_replace() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["goal", "add", "side-goal", "--objective", "Mine"])
        .success();
    let (project, root) = fixture(&env);
    let before = env.tip(&repo);
    let refused = import(&env, &repo, FIXTURE_NOW, &project, &root, &[])
        .failure(1)
        .json();
    assert_eq!(refused["error"]["code"], "goal_exists", "{refused}");
    assert!(refused.to_string().contains("side-goal"), "{refused}");
    assert_eq!(env.tip(&repo), before, "nothing written");

    let replaced = import(&env, &repo, FIXTURE_NOW, &project, &root, &["--replace"])
        .success()
        .json();
    assert_eq!(replaced["imported"]["goals"], 2, "{replaced}");
    let goal = env
        .loopx(&repo, &["--json", "--goal", "side-goal", "goal", "show"])
        .success()
        .stdout;
    assert!(goal.contains("Side goal"), "{goal}");
}

#[test]
fn a_path_without_loopx_state_is_refused_naming_it() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let empty = env.path("not-loopx");
    std::fs::create_dir_all(&empty).unwrap();
    let out = import(&env, &repo, FIXTURE_NOW, &empty, &empty, &[])
        .failure(3)
        .json();
    assert_eq!(out["error"]["code"], "state_missing", "{out}");
    assert!(out.to_string().contains("not-loopx"), "{out}");
    assert!(!env.git_ok(&repo, &["rev-parse", "--verify", "-q", "loopx-state"]));
}

#[test]
fn corrupt_json_is_refused_naming_file_and_field_with_nothing_written() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let (project, root) = fixture(&env);
    let registry = project.join(".loopx/registry.json");

    std::fs::write(&registry, "{\"goals\": [").unwrap();
    let out = import(&env, &repo, FIXTURE_NOW, &project, &root, &[])
        .failure(3)
        .json();
    assert_eq!(out["error"]["code"], "state_invalid", "{out}");
    assert!(out.to_string().contains("registry.json"), "{out}");

    std::fs::write(&registry, r#"{"goals": [{"id": 5}]}"#).unwrap();
    let out = import(&env, &repo, FIXTURE_NOW, &project, &root, &[])
        .failure(3)
        .json();
    let text = out.to_string();
    assert!(
        text.contains("registry.json") && text.contains("goals[0].id"),
        "{text}"
    );

    let spend = std::fs::read_dir(root.join("goals/bench-goal/runs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/loopx-2.1.1/proj"),
        &project,
    );
    std::fs::write(
        &spend,
        r#"{"classification": "quota_slot_spent", "generated_at": 7}"#,
    )
    .unwrap();
    let out = import(&env, &repo, FIXTURE_NOW, &project, &root, &[])
        .failure(3)
        .json();
    let text = out.to_string();
    let name = spend.file_name().unwrap().to_str().unwrap();
    assert!(
        text.contains(name) && text.contains("generated_at"),
        "{text}"
    );
    assert!(
        !env.git_ok(&repo, &["rev-parse", "--verify", "-q", "loopx-state"]),
        "nothing written"
    );
}

/// With the reference installed: build a state with it (2 goals, 10 todos,
/// a gate, a claim, 3 spends), keep its should-run decision, import, and
/// decide with git-loopx.
#[test]
fn a_state_made_by_the_reference_decides_the_same_after_import() {
    let (Some(bin), Some(path)) = (
        std::env::var_os("LOOPX_REF_BIN").filter(|v| !v.is_empty()),
        std::env::var_os("LOOPX_REF_PATH").filter(|v| !v.is_empty()),
    ) else {
        crate::require::skip(
            "LOOPX_REQUIRE_REFERENCE",
            "LOOPX_REF_BIN and LOOPX_REF_PATH are not set (scripts/install-reference.sh prints them)",
        );
        return;
    };
    let env = TestEnv::new();
    let dir = env.path("reference");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/reference-import-state.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .env("LOOPX_REF_BIN", bin)
        .env("LOOPX_REF_PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the reference state could not be built:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Value =
        serde_json::from_slice(&std::fs::read(dir.join("out/decision.json")).unwrap()).unwrap();
    // The reference ran on the real clock; so does git-loopx here.
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let repo = env.repo("r");
    let report = import(
        &env,
        &repo,
        &now,
        &dir.join("proj"),
        &dir.join("home/.loopx"),
        &[],
    )
    .success()
    .json();
    for (kind, n) in [
        ("goals", 2),
        ("todos", 10),
        ("gates", 1),
        ("claims", 1),
        ("spends", 3),
    ] {
        assert_eq!(report["imported"][kind], n, "{kind}: {report}");
    }
    let ours = env
        .loopx_at(
            &repo,
            &now,
            &[
                "--json",
                "--agent",
                "bench-agent",
                "--goal",
                "bench-goal",
                "should-run",
            ],
        )
        .success()
        .json();
    assert_eq!(
        ours["should_run"], theirs["should_run"],
        "ours {ours}\ntheirs {theirs}"
    );
    let their_todo = theirs["selected_todo"]["todo_id"].as_str().unwrap();
    assert_eq!(
        ours["selected_todo"]["id"], report["todo_ids"][their_todo],
        "the same todo, by mapped id\nours {ours}\ntheirs {theirs}"
    );
    // Where the names match: LoopX's decision or effective action is ours.
    let action = &ours["effective_action"];
    assert!(
        *action == theirs["decision"] || *action == theirs["effective_action"],
        "ours {action}, theirs {} / {}",
        theirs["decision"],
        theirs["effective_action"]
    );
    assert_eq!(ours["quota"]["spent_slots"], theirs["quota"]["spent_slots"]);
}

/// `import` as a child that must end on its own within `limit`: killed and
/// reported otherwise (a hang is the failure, not the test's).
fn import_bounded(env: &TestEnv, repo: &Path, project: &Path, root: &Path) -> crate::env::Run {
    use std::process::Stdio;
    let limit = std::time::Duration::from_secs(60);
    let mut child = env
        .loopx_cmd(repo)
        .env("LOOPX_NOW", FIXTURE_NOW)
        .args(["--json", "import", "loopx"])
        .arg(project)
        .arg("--runtime-root")
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("import did not end within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap().into()
}

/// Runs Python's sqlite3 on `db` with `sql`.
fn sqlite(db: &Path, sql: &str) {
    let status = Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
        ])
        .arg(db)
        .arg(sql)
        .status()
        .expect("python3 runs");
    assert!(status.success());
}

/// A hostile LoopX state ends the import in bounded time and memory, with
/// a refusal naming the file and nothing written: a FIFO in place of a
/// store or a JSON file, a `head` that is a never-ending recursive view, one
/// that builds a 900 MB value. Spends of 2^31 slots do not wrap the quota.
#[test]
fn hostile_loopx_state_fails_in_bounded_time_and_quota_sums_do_not_wrap() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let store = |root: &Path| {
        std::fs::read_dir(root.join("authority/sqlite-v0"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "sqlite"))
            .unwrap()
    };
    let mkfifo = |path: &Path| {
        std::fs::remove_file(path).unwrap();
        let status = Command::new("mkfifo").arg(path).status().unwrap();
        assert!(status.success());
    };
    let refused = |out: crate::env::Run, name: &str| {
        let json = out.failure(3).json();
        assert_eq!(json["error"]["code"], "state_invalid", "{json}");
        assert!(json.to_string().contains(name), "names {name}: {json}");
        assert!(
            !env.git_ok(&repo, &["rev-parse", "--verify", "-q", "loopx-state"]),
            "nothing written"
        );
    };

    let (project, root) = fixture_at(&env, "hostile-1");
    let db = store(&root);
    mkfifo(&db);
    let name = db.file_name().unwrap().to_str().unwrap().to_owned();
    refused(import_bounded(&env, &repo, &project, &root), &name);

    let (project, root) = fixture_at(&env, "hostile-2");
    mkfifo(&project.join(".loopx/registry.json"));
    refused(
        import_bounded(&env, &repo, &project, &root),
        "registry.json",
    );

    for view in [
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT group_concat(x) AS projection FROM c",
        "SELECT printf('%.*c', 900000000, 'x') AS projection",
    ] {
        let (project, root) = fixture_at(&env, &format!("hostile-3-{}", view.len()));
        let db = store(&root);
        sqlite(
            &db,
            &format!("DROP TABLE head; CREATE VIEW head AS {view};"),
        );
        let name = db.file_name().unwrap().to_str().unwrap().to_owned();
        refused(import_bounded(&env, &repo, &project, &root), &name);
    }

    let (project, root) = fixture_at(&env, "hostile-4");
    let runs = root.join("goals/bench-goal/runs");
    for entry in std::fs::read_dir(&runs).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"slots\": 1", "\"slots\": 2147483648")).unwrap();
    }
    let out = import_bounded(&env, &repo, &project, &root);
    if out.code == 0 {
        let status = env
            .loopx_at(
                &repo,
                FIXTURE_NOW,
                &["--json", "--goal", "bench-goal", "status"],
            )
            .success()
            .json();
        let quota = &status["quota"];
        assert!(
            quota["spent_slots"].as_u64() >= quota["allowed_slots"].as_u64(),
            "2^31-slot spends throttle the goal: {quota}"
        );
    } else {
        let json = out.failure(3).json();
        assert!(json.to_string().contains("slots"), "{json}");
    }
}

/// A second import without `--replace` takes what changed in LoopX since
/// the first for a todo nobody changed here, keeps (and says it kept) a
/// todo changed on both sides, and counts as unchanged only what is the
/// same: never a stale todo reported "unchanged".
#[test]
fn reimport_takes_loopx_changes_to_todos_untouched_here() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let (project, root) = fixture(&env);
    let side = &["--loopx-goal", "side-goal"];
    let first = import(&env, &repo, FIXTURE_NOW, &project, &root, side)
        .success()
        .json();
    let here = |loopx_id: &str| first["todo_ids"][loopx_id].as_str().unwrap().to_owned();
    let (two, one) = (
        here("todo_13a373d0a313c1ff185d13a5"),
        here("todo_fdf633a77c86ff7696e68fa9"),
    );
    let title = |id: &str| {
        env.loopx(&repo, &["--json", "todo", "show", id])
            .success()
            .json()["todo"]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // Changed here: a note on "Side task one".
    env.loopx(&repo, &["todo", "update", &one, "--note", "started here"])
        .success();
    // Changed in LoopX: both titles.
    let store = std::fs::read_dir(root.join("authority/sqlite-v0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "sqlite")
                && std::fs::read(p)
                    .unwrap()
                    .windows(9)
                    .any(|w| w == b"side-goal")
        })
        .unwrap();
    sqlite(
        &store,
        "UPDATE head SET projection = replace(replace(projection, 'Side task two', 'Side task 2'), 'Side task one', 'Side task 1');",
    );

    let again = import(&env, &repo, FIXTURE_NOW, &project, &root, side).success();
    let json = again.json();
    assert_eq!(json["imported"]["todos"], 1, "{json}");
    assert_eq!(json["kept"]["todos"], 1, "{json}");
    assert_eq!(json["unchanged"]["todos"], 1, "{json}");
    assert!(json.get("commit").is_some(), "{json}");
    assert!(
        title(&two).contains("Side task 2"),
        "untouched here: LoopX's"
    );
    assert!(title(&one).contains("Side task one"), "changed here: kept");

    // Said in text, with the way to take LoopX's; a third import finds
    // nothing new and still says what it keeps.
    let text = import_text(&env, &repo, FIXTURE_NOW, &project, &root, side)
        .success()
        .stdout;
    assert!(text.contains("Nothing new to import"), "{text}");
    assert!(text.contains("Changed here and in LoopX"), "{text}");
    assert!(text.contains("--replace"), "{text}");
}

/// Issue 47, item 7: a LoopX lease at epoch `u64::MAX` expiring in 9999 was
/// taken as a live claim: its todo fenced for good, and no later claim had
/// an epoch to take. A lease past the highest epoch, longer than a lease may
/// last, or taken after now is not brought over, and the report says so.
#[test]
fn an_implausible_lease_is_not_brought_over() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let (project, root) = fixture(&env);
    let store = std::fs::read_dir(root.join("authority/sqlite-v0"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let db = rusqlite::Connection::open(p).unwrap();
            let projection: String = db
                .query_row("SELECT projection FROM head", [], |r| r.get(0))
                .unwrap();
            projection.contains(CLAIMED)
        })
        .unwrap();
    let db = rusqlite::Connection::open(&store).unwrap();
    let projection: String = db
        .query_row("SELECT projection FROM head", [], |r| r.get(0))
        .unwrap();
    let mut projection: serde_json::Value = serde_json::from_str(&projection).unwrap();
    for lease in projection["leases"].as_array_mut().unwrap() {
        if lease["todo_id"] == CLAIMED && lease["status"] == "active" {
            lease["lease_epoch"] = u64::MAX.into();
            lease["acquired_at"] = "9999-12-29T00:00:00Z".into();
            lease["expires_at"] = "9999-12-30T00:00:00Z".into();
        }
    }
    db.execute(
        "UPDATE head SET projection = ?1",
        [serde_json::to_string(&projection).unwrap()],
    )
    .unwrap();
    drop(db);

    let report = import(&env, &repo, FIXTURE_NOW, &project, &root, &[])
        .success()
        .json();
    assert_eq!(report["imported"]["claims"], 0, "{report}");
    let said = report["skipped"].to_string();
    assert!(
        said.contains("18446744073709551615") && said.contains("not brought over"),
        "{said}"
    );
    let claimed = report["todo_ids"][CLAIMED].as_str().unwrap().to_owned();
    let claim = env
        .loopx_at(
            &repo,
            FIXTURE_NOW,
            &[
                "--json",
                "--goal",
                "bench-goal",
                "--agent",
                "bench-agent",
                "todo",
                "claim",
                &claimed,
            ],
        )
        .success()
        .json();
    let epoch = claim["claim"]["epoch"].as_u64().unwrap();
    assert!(epoch < 1 << 53, "{claim}");
}
