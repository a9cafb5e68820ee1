//! Concurrency: real processes racing on the same branch.

use std::collections::BTreeSet;

use crate::env::{run_with_stdin, TestEnv};

/// The first-parent chain from `root` to the state's tip, checked to hold
/// exactly `writebacks` commits.
fn one_commit_per_writeback(
    env: &TestEnv,
    repo: &std::path::Path,
    root: &str,
    writebacks: usize,
) -> String {
    let range = format!("{root}..loopx-state");
    let chain = env.git(repo, &["rev-list", "--first-parent", &range]);
    assert_eq!(
        chain.lines().count(),
        writebacks,
        "exactly one commit per writeback"
    );
    chain
}

/// 8 processes × 50 writebacks: no lost update, a linear chain, fsck clean.
#[test]
fn eight_writers_fifty_writebacks_each() {
    eight_writers(true);
}

/// The same race with the host's turn-taking lock off: the compare-and-swap
/// alone must keep every write.
#[test]
fn eight_writers_fifty_writebacks_each_on_the_cas_alone() {
    eight_writers(false);
}

fn eight_writers(turn_lock: bool) {
    const WRITERS: usize = 8;
    const EACH: usize = 50;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let root = env.tip(&repo);

    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let env = &env;
            let repo = &repo;
            s.spawn(move || {
                for i in 0..EACH {
                    let agent = format!("agent-{w}");
                    let text = format!("writer {w} item {i}");
                    let mut cmd = env.loopx_cmd(repo);
                    if !turn_lock {
                        cmd.env("LOOPX_WRITER_LOCK", "0");
                    }
                    let out: crate::env::Run = cmd
                        .args(["--agent", &agent, "todo", "add", &text])
                        .output()
                        .unwrap()
                        .into();
                    out.success();
                }
            });
        }
    });

    let chain = one_commit_per_writeback(&env, &repo, &root, WRITERS * EACH);
    let all = env.git(&repo, &["rev-list", &format!("{root}..loopx-state")]);
    assert_eq!(all, chain, "the history is one linear first-parent chain");
    assert_eq!(env.git(&repo, &["rev-list", "--merges", "loopx-state"]), "");

    let json = env
        .loopx(&repo, &["todo", "list", "--json"])
        .success()
        .json();
    let texts: BTreeSet<String> = json["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["text"].as_str().unwrap().to_owned())
        .collect();
    let expected: BTreeSet<String> = (0..WRITERS)
        .flat_map(|w| (0..EACH).map(move |i| format!("writer {w} item {i}")))
        .collect();
    assert_eq!(texts, expected, "every change is in the final tree");
    let files = env.git(&repo, &["ls-tree", "-r", "--name-only", "loopx-state"]);
    assert_eq!(
        files.lines().filter(|l| l.contains("/todos/")).count(),
        WRITERS * EACH
    );
    env.fsck(&repo, &["--strict"]);
}

/// git and git-loopx take the same ref lock: `git update-ref` moving the
/// state ref to where it already is, in a loop, while 4 writers each make
/// 25 writebacks. Every writeback lands once, and git's moves either succeed
/// or lose the compare-and-swap, never read a torn ref. (That a held lock
/// keeps a writer out is pinned by `a_dead_writers_ref_lock_is_removed_by_the_next_writer_only`.)
#[test]
fn git_update_ref_and_writers_share_the_ref_lock() {
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let root = env.tip(&repo);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (git_moves, git_lock_failures) = std::thread::scope(|s| {
        let git = s.spawn(|| {
            let (mut moved, mut locked) = (0, 0);
            // Until the writers are done, and then until git has moved the
            // ref once (on a loaded machine every move during the writes
            // can lose the compare-and-swap).
            let mut after: Option<std::time::Instant> = None;
            loop {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    let since = *after.get_or_insert_with(std::time::Instant::now);
                    if moved > 0 || since.elapsed() > std::time::Duration::from_secs(10) {
                        break;
                    }
                }
                let tip = env.tip(&repo);
                let out = env
                    .git_cmd(&repo)
                    .args(["update-ref", "-m", "git touches", "refs/heads/loopx-state"])
                    .args([&tip, &tip])
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                if out.status.success() {
                    moved += 1;
                } else {
                    // Either side's lock, or a writer moved the ref between
                    // the read of the tip and the update: both are a CAS
                    // that lost, nothing else is.
                    assert!(
                        stderr.contains(".lock") || stderr.contains("but expected"),
                        "git update-ref failed otherwise: {stderr}"
                    );
                    locked += 1;
                }
            }
            (moved, locked)
        });
        std::thread::scope(|w| {
            for k in 0..WRITERS {
                let (env, repo) = (&env, &repo);
                w.spawn(move || {
                    for i in 0..EACH {
                        env.loopx(repo, &["todo", "add", &format!("writer {k} item {i}")])
                            .success();
                    }
                });
            }
        });
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        git.join().unwrap()
    });
    assert!(git_moves > 0, "git moved the ref at least once");
    one_commit_per_writeback(&env, &repo, &root, WRITERS * EACH);
    let todos = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(todos["todos"].as_array().unwrap().len(), WRITERS * EACH);
    assert!(!repo.join(".git/refs/heads/loopx-state.lock").exists());
    eprintln!("git moved the ref {git_moves} times, lost {git_lock_failures}");
    env.fsck(&repo, &["--strict"]);
}

/// 8 agents racing `todo next --claim` (then `done`) over 20 ready todos:
/// every todo is claimed exactly once; the rest get a clean `nothing_ready`.
#[test]
fn eight_agents_race_todo_next_claim() {
    const AGENTS: usize = 8;
    const TODOS: usize = 20;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    for i in 0..TODOS {
        env.loopx(&repo, &["todo", "add", &format!("task {i}")])
            .success();
    }
    let claims: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..AGENTS)
            .map(|a| {
                let env = &env;
                let repo = &repo;
                s.spawn(move || {
                    let agent = format!("agent-{a}");
                    let mut mine = Vec::new();
                    loop {
                        let out = env.loopx(
                            repo,
                            &["--json", "--agent", &agent, "todo", "next", "--claim"],
                        );
                        let json = out.json();
                        if out.code == 1 {
                            assert_eq!(json["error"]["code"], "nothing_ready", "{json}");
                            break;
                        }
                        assert_eq!(out.code, 0, "{json}");
                        assert_eq!(json["action"], "acquired", "{json}");
                        assert_eq!(json["claim"]["agent"], agent.as_str());
                        let id = json["todo"]["id"].as_str().unwrap().to_owned();
                        env.loopx(
                            repo,
                            &[
                                "--agent",
                                &agent,
                                "todo",
                                "done",
                                &id,
                                "--evidence",
                                "raced",
                            ],
                        )
                        .success();
                        mine.push(id);
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<&String> = claims.iter().flatten().collect();
    assert_eq!(
        all.len(),
        TODOS,
        "every todo claimed, none twice: {claims:?}"
    );
    all.sort();
    all.dedup();
    assert_eq!(
        all.len(),
        TODOS,
        "no todo was claimed by two agents: {claims:?}"
    );
    let json = env
        .loopx(&repo, &["todo", "list", "--all", "--json"])
        .success()
        .json();
    for todo in json["todos"].as_array().unwrap() {
        assert_eq!(todo["status"], "done");
        assert_eq!(todo["last_epoch"], 1, "claimed exactly once: {todo}");
    }
    env.fsck(&repo, &[]);
}

/// Writers racing `git repack -d`, `git prune-packed` and `git repack -a -d`
/// (what `git maintenance` and `git gc` run): prune-packed removes the
/// fan-out directories it empties, and objects move from loose files into
/// packs and from pack to pack under a reader's feet. A write must not fail
/// for it: every write lands, once, and the repository stays fsck clean.
#[test]
fn writers_race_repacking_and_nothing_is_lost() {
    const WRITERS: usize = 4;
    const EACH: usize = 40;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let root = env.tip(&repo);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let packer = s.spawn(|| {
            // git-loopx's own background repack may overlap these, and git
            // lets one of two overlapping repacks fail: count the rounds
            // that went through.
            let (mut rounds, mut clean) = (0, 0);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let mut ok = env.git_ok(&repo, &["repack", "-d", "-q"]);
                ok &= env.git_ok(&repo, &["prune-packed", "-q"]);
                if rounds % 3 == 2 {
                    // Consolidation deletes the packs it merged.
                    ok &= env.git_ok(&repo, &["repack", "-a", "-d", "-q"]);
                }
                rounds += 1;
                clean += usize::from(ok);
            }
            clean
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (env, repo) = (&env, &repo);
                s.spawn(move || {
                    (0..EACH)
                        .map(|i| {
                            let text = format!("writer {w} item {i}");
                            env.loopx(repo, &["--agent", "a", "todo", "add", &text])
                        })
                        .find(|run| run.code != 0)
                })
            })
            .collect();
        let failures: Vec<_> = writers
            .into_iter()
            .filter_map(|w| w.join().unwrap())
            .collect();
        // Stop the packer before asserting, so a failure cannot hang the test.
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(
            packer.join().unwrap() > 0,
            "the packer ran during the writes"
        );
        assert!(failures.is_empty(), "a write failed: {:?}", failures[0]);
    });
    let chain = env.git(
        &repo,
        &["rev-list", "--count", &format!("{root}..loopx-state")],
    );
    assert_eq!(chain, (WRITERS * EACH).to_string());
    env.fsck(&repo, &["--strict", "--no-dangling"]);
    let todos = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(todos["todos"].as_array().unwrap().len(), WRITERS * EACH);
}

/// Writebacks write loose objects, as `git commit` does, and start git's
/// own automatic maintenance when git would, by git's settings: with a low
/// `gc.auto` the loose objects are rolled up into a pack by `git
/// maintenance run --auto`, nothing is lost and fsck is clean; with
/// `maintenance.auto=false` no maintenance runs at all.
#[test]
fn writes_start_git_maintenance_by_gits_own_settings() {
    const WRITES: usize = 120;
    let env = TestEnv::new();
    let counts = |repo: &std::path::Path| -> (u64, u64) {
        let out = env.git(repo, &["count-objects", "-v"]);
        let field = |name: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        (field("count:"), field("packs:"))
    };
    let write = |repo: &std::path::Path, text: &str| {
        env.loopx(repo, &["--agent", "a", "todo", "add", text])
            .success();
    };

    let off = env.state_repo("off");
    env.git(&off, &["config", "gc.auto", "256"]);
    env.git(&off, &["config", "maintenance.auto", "false"]);
    for i in 0..WRITES {
        write(&off, &format!("item {i}"));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (loose, _) = counts(&off);
    assert!(
        loose as usize >= 4 * WRITES,
        "maintenance.auto=false: nothing rolled up ({loose} loose objects)"
    );

    let on = env.state_repo("on");
    env.git(&on, &["config", "gc.auto", "256"]);
    for i in 0..WRITES {
        write(&on, &format!("item {i}"));
    }
    // The maintenance runs in the background, and only a write starts it:
    // keep writing, as a live agent would, until the count settles.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut extra = 0;
    let (mut loose, mut packs) = counts(&on);
    while (loose > 256 || packs == 0) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        write(&on, &format!("extra {extra}"));
        extra += 1;
        (loose, packs) = counts(&on);
    }
    let git_dir = on.join(".git");
    assert!(
        loose <= 256 && packs >= 1,
        "git maintenance rolled up the loose objects ({loose} loose, {packs} packs, \
         {extra} more writes; gc.pid {}, gc.log: {:?})",
        git_dir.join("gc.pid").exists(),
        std::fs::read_to_string(git_dir.join("gc.log")).unwrap_or_default()
    );
    env.fsck(&on, &["--strict", "--no-dangling"]);
    let todos = env.loopx(&on, &["--json", "todo", "list"]).success().json();
    assert_eq!(todos["todos"].as_array().unwrap().len(), WRITES + extra);
}

/// A pack of a million objects or more gets a multi-pack-index from a
/// write's upkeep, by git (`git multi-pack-index write`, in the
/// background): gix checks a plain pack index whole each time a process
/// opens it, a multi-pack-index in constant time. `core.multiPackIndex=false`
/// keeps it from being written.
#[test]
fn a_big_pack_gets_a_multi_pack_index_from_the_writes_upkeep() {
    let env = TestEnv::new();
    let repo = env.state_repo("big");
    // 1.25 million small blobs in one pack: its index is over 32 MiB.
    let mut import = env.git_cmd(&repo);
    import.args(["fast-import", "--quiet"]);
    let mut stream = Vec::with_capacity(30 << 20);
    for i in 0..1_250_000u32 {
        let data = format!("{i}\n");
        stream.extend_from_slice(format!("blob\ndata {}\n{data}\n", data.len()).as_bytes());
    }
    run_with_stdin(&mut import, &stream).success();
    let midx = repo.join(".git/objects/pack/multi-pack-index");
    let write_until = |repo: &std::path::Path, want: bool, writes: usize| -> usize {
        for i in 0..writes {
            env.loopx(repo, &["--agent", "a", "todo", "add", &format!("item {i}")])
                .success();
            // The upkeep's git runs in the background: let it finish.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while repo
                .join(".git/objects/pack/multi-pack-index.lock")
                .exists()
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            if midx.exists() == want && want {
                return i + 1;
            }
        }
        writes
    };

    env.git(&repo, &["config", "core.multiPackIndex", "false"]);
    write_until(&repo, true, 24);
    assert!(!midx.exists(), "core.multiPackIndex=false: none written");

    env.git(&repo, &["config", "--unset", "core.multiPackIndex"]);
    let writes = write_until(&repo, true, 96);
    assert!(
        midx.exists(),
        "a multi-pack-index after {writes} writes (one in eight looks)"
    );
    env.git(&repo, &["multi-pack-index", "verify"]);
    // Read and written through it.
    env.loopx(&repo, &["--agent", "a", "todo", "add", "after"])
        .success();
    let todos = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(todos["todos"].as_array().unwrap().len(), 24 + writes + 1);
    env.loopx(&repo, &["doctor"]).success();
}

/// A long-lived process writing through the library while git repacks the
/// repository: gix's object store holds pack indices across writes, and
/// objects move from loose files into packs, and from pack to pack, under
/// it. No write may fail for it. (The writer is this test binary run again
/// as a child, so it gets the same hermetic environment as every command.)
#[test]
fn long_lived_writer_survives_repacking() {
    const WRITES: usize = 300;
    if let Some(dir) = std::env::var_os("LOOPX_IT_LONG_LIVED_WRITER") {
        return long_lived_writer(std::path::Path::new(&dir), WRITES);
    }
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let done = std::sync::atomic::AtomicBool::new(false);
    let (out, rounds) = std::thread::scope(|s| {
        let packer = s.spawn(|| {
            // As above: count the rounds no overlapping repack failed.
            let mut clean = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let mut ok = env.git_ok(&repo, &["repack", "-d", "-q"]);
                ok &= env.git_ok(&repo, &["prune-packed", "-q"]);
                ok &= env.git_ok(&repo, &["repack", "-a", "-d", "-q"]);
                clean += usize::from(ok);
            }
            clean
        });
        let out = env
            .command(&std::env::current_exe().unwrap(), &repo)
            .env("LOOPX_IT_LONG_LIVED_WRITER", &repo)
            .args(["--exact", "race::long_lived_writer_survives_repacking"])
            .args(["--nocapture", "--test-threads=1"])
            .output()
            .unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (out, packer.join().unwrap())
    });
    assert!(
        out.status.success(),
        "the writer failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(rounds > 0, "the packer ran during the writes");
    let todos = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(todos["todos"].as_array().unwrap().len(), WRITES);
    env.fsck(&repo, &["--strict", "--no-dangling"]);
}

fn long_lived_writer(dir: &std::path::Path, writes: usize) {
    use loopx::model::{ids, Priority, Role, State, Timestamp, Todo, TodoClass};
    let now = Timestamp::parse(crate::env::NOW).unwrap();
    let ctx = loopx::session::Context::open(dir, now, Some("a".into()), None).unwrap();
    for i in 0..writes {
        loopx::session::mutate(&ctx, |state: &mut State, goal: &str| {
            let id = ids::derive_id("todo_", &["long-lived", &i.to_string()]);
            let todo = Todo::new(
                id.clone(),
                goal,
                &format!("item {i}"),
                Role::Agent,
                TodoClass::AdvancementTask,
                Priority::P2,
                Some("a"),
                now,
            );
            state.goals.get_mut(goal).unwrap().todos.insert(id, todo);
            Ok((
                (),
                loopx::store::Message::new("todo add", format!("add {i}")),
            ))
        })
        .unwrap_or_else(|e| panic!("write {i} failed: {e}"));
    }
}
