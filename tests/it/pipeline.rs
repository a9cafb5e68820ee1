//! One write pipeline: every way a write is published — a `--sync` claim on
//! the branch or through shared refs, a signed write, a sync merge, a
//! redaction, a repair — makes the checks of an ordinary write before
//! anything is committed: the files read back, and nothing adds a
//! credential. Each test breaks one path both ways and checks that no ref
//! moved, here or on the remote.

use std::path::{Path, PathBuf};

use crate::env::TestEnv;

/// An agent id the id rules accept and the credential scan does not: it
/// has the shape of a Slack bot token. A claim writes it into the todo
/// file, the commit message and the lease.
const TOKEN_AGENT: &str = "xoxb-123456789012-123456789012-abcdefghijklmnopqrstuvwx";

/// Every ref of `dir`, with its target (what "nothing written" compares).
/// The refs of `dir` a write could move: not the copies of a remote's refs,
/// which a claim's fetch refreshes.
fn refs(env: &TestEnv, dir: &Path) -> String {
    env.git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|l| !l.starts_with("refs/remotes/") && !l.starts_with("refs/loopx/remotes/"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Pads todo `id` by hand (an unknown field the tool must keep) to 30
/// bytes under the reader's 256 KiB limit, as a commit another tool made:
/// any write that adds to the todo then passes the limit.
fn pad(env: &TestEnv, repo: &Path, id: &str) {
    let path = env.state_path_of(repo, id);
    let todo = env.state_file(repo, &path);
    let padded = format!(
        "{todo}\npad: '{}'\n",
        "p".repeat(256 * 1024 - todo.len() - 9 - 30)
    );
    env.commit_state_file(repo, &path, &padded);
}

fn code(out: &crate::env::Run) -> String {
    let json = out.json();
    json["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A remote and one clone holding a todo, published; `shared` picks the
/// lease refs (the default) or the single branch (`loopx.shareRefs false`).
fn published_todo(env: &TestEnv, shared: bool) -> (PathBuf, PathBuf, String) {
    let (remote, dirs) = env.shared_state(&["a"]);
    let a = dirs[0].clone();
    if !shared {
        env.git(&a, &["config", "loopx.shareRefs", "false"]);
    }
    let id = env.add_todo(&a, "claim me");
    env.loopx(&a, &["sync"]).success();
    (remote, a, id)
}

fn claim_sync_checks_like_any_write(shared: bool) {
    let env = TestEnv::new();
    let (remote, a, id) = published_todo(&env, shared);
    let (here, there) = (refs(&env, &a), refs(&env, &remote));

    let out = env.loopx(
        &a,
        &[
            "--json",
            "--agent",
            TOKEN_AGENT,
            "todo",
            "claim",
            &id,
            "--sync",
        ],
    );
    assert_eq!(code(&out), "leak_detected", "{}", out.stdout);
    assert_eq!(refs(&env, &a), here, "nothing written here");
    assert_eq!(refs(&env, &remote), there, "nothing pushed");

    pad(&env, &a, &id);
    env.loopx(&a, &["sync"]).success();
    let (here, there) = (refs(&env, &a), refs(&env, &remote));
    let out = env.loopx(
        &a,
        &["--json", "--agent", "a1", "todo", "claim", &id, "--sync"],
    );
    assert_eq!(code(&out), "invalid_input", "{}", out.stdout);
    assert!(out.stdout.contains("more than"), "{}", out.stdout);
    assert_eq!(refs(&env, &a), here, "nothing written here");
    assert_eq!(refs(&env, &remote), there, "nothing pushed");
}

#[test]
fn a_sync_claim_on_the_branch_checks_like_any_write() {
    claim_sync_checks_like_any_write(false);
}

#[test]
fn a_sync_claim_through_shared_refs_checks_like_any_write() {
    claim_sync_checks_like_any_write(true);
}

/// `--allow-secret-pattern` lets a claim through, on either path, and the
/// claim's commit names the rule it passed.
#[test]
fn an_allowed_pattern_on_a_sync_claim_is_named_in_its_commit() {
    for shared in [false, true] {
        let env = TestEnv::new();
        let (_, a, id) = published_todo(&env, shared);
        let out = env
            .loopx(
                &a,
                &[
                    "--json",
                    "--allow-secret-pattern",
                    "slack_token",
                    "--agent",
                    TOKEN_AGENT,
                    "todo",
                    "claim",
                    &id,
                    "--sync",
                ],
            )
            .success();
        let log = env.git(&a, &["log", "--format=%B", "loopx-state"]);
        assert!(
            log.contains("Loopx-Allowed-Secret-Pattern: slack_token"),
            "shared refs {shared}: {}\n{log}",
            out.stdout
        );
    }
}

fn merge_checks_like_any_write(shared: bool) {
    let env = TestEnv::new();
    let (remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    if !shared {
        for dir in [a, b] {
            env.git(dir, &["config", "loopx.shareRefs", "false"]);
        }
    }
    let id = env.add_todo(a, "merged");
    env.loopx(a, &["sync"]).success();
    env.loopx(b, &["sync"]).success();
    // b publishes the padded todo; a has an edit of its own that the
    // merge would add to it, past the reader's limit.
    pad(&env, b, &id);
    env.loopx(b, &["sync"]).success();
    env.loopx(a, &["todo", "update", &id, "--text", &"x".repeat(2000)])
        .success();
    let (here, there) = (refs(&env, a), refs(&env, &remote));
    let out = env.loopx(a, &["--json", "sync"]);
    assert_eq!(code(&out), "invalid_input", "{}", out.stdout);
    assert!(out.stdout.contains("more than"), "{}", out.stdout);
    let now = refs(&env, a);
    let moved: Vec<&str> = now
        .lines()
        .filter(|l| !here.contains(l))
        .filter(|l| !l.starts_with("refs/remotes/") && !l.starts_with("refs/loopx/remotes/"))
        .collect();
    assert!(moved.is_empty(), "only tracking refs moved: {moved:?}");
    assert_eq!(refs(&env, &remote), there, "nothing pushed");
    env.loopx(a, &["doctor"]).success();
}

#[test]
fn a_sync_merge_on_the_branch_checks_like_any_write() {
    merge_checks_like_any_write(false);
}

#[test]
fn a_sync_merge_through_shared_refs_checks_like_any_write() {
    merge_checks_like_any_write(true);
}

/// A person's ssh signing key, set as git's signing key in `repo`, and
/// named a gate signer.
fn signing(env: &TestEnv, repo: &Path) {
    let public = crate::gates::signing_key(env, repo, "person");
    env.loopx(repo, &["gate", "signers", "add", public.to_str().unwrap()])
        .success();
}

#[test]
fn a_signed_write_checks_like_any_write() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "Publish the crate");
    let gate = env
        .loopx(
            &repo,
            &["--json", "gate", "add", "Publish?", "--unblocks", &todo],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    signing(&env, &repo);
    let before = refs(&env, &repo);
    let token = "xoxb-123456789012-123456789012-abcdefghijklmnopqrstuvwx";
    let out = env.loopx(
        &repo,
        &[
            "--json",
            "gate",
            "resolve",
            &gate,
            "--approve",
            "--note",
            token,
        ],
    );
    assert_eq!(code(&out), "leak_detected", "{}", out.stdout);
    assert_eq!(refs(&env, &repo), before, "nothing written");

    pad(&env, &repo, &gate);
    let before = refs(&env, &repo);
    let out = env.loopx(&repo, &["--json", "gate", "resolve", &gate, "--approve"]);
    assert_eq!(code(&out), "invalid_input", "{}", out.stdout);
    assert_eq!(refs(&env, &repo), before, "nothing written");
}

/// A redaction rewrites files; a rewritten file that a reader would refuse
/// is refused before any ref moves, as any write's would be.
#[test]
fn a_redaction_checks_like_any_write() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "plain");
    let before = refs(&env, &repo);
    // Removing this text takes a key out of every todo file.
    let out = env.loopx(
        &repo,
        &["--json", "redact", "all", "--text", "status: open"],
    );
    assert_eq!(code(&out), "invalid_input", "{}", out.stdout);
    assert_eq!(refs(&env, &repo), before, "nothing written");
    env.loopx(&repo, &["doctor"]).success();
}

/// A repair lists the writes it could not recover in its message, which is
/// checked like any write's: a credential a lost write let through (with
/// `--allow-secret-pattern`) is left out of it, and the repair goes on.
#[test]
fn a_repair_message_repeats_no_credential() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "kept");
    env.git(&repo, &["repack", "-a", "-d", "-q"]);
    let token = "xoxb-123456789012-123456789012-abcdefghijklmnopqrstuvwx";
    env.loopx(
        &repo,
        &[
            "--allow-secret-pattern",
            "slack_token",
            "todo",
            "add",
            token,
        ],
    )
    .success();
    let subject = env.git(&repo, &["log", "-1", "--format=%s", "loopx-state"]);
    assert!(
        subject.contains(token),
        "the lost write's subject: {subject}"
    );
    // The lost write's objects go, as a prune beside a writer would take
    // them, and so does the journal that would write them back (as for a
    // write older than it).
    std::fs::remove_dir_all(repo.join(".git/loopx/written")).unwrap();
    for dir in std::fs::read_dir(repo.join(".git/objects"))
        .unwrap()
        .flatten()
    {
        let name = dir.file_name().to_string_lossy().into_owned();
        if name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
            std::fs::remove_dir_all(dir.path()).unwrap();
        }
    }
    let out = env.loopx(&repo, &["--json", "doctor", "--repair"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let message = env.git(&repo, &["log", "-1", "--format=%B", "loopx-state"]);
    assert!(message.contains("Writes not recovered"), "{message}");
    assert!(!message.contains(token), "{message}");
    env.fsck(&repo, &[]);
}

/// A `--sync` claim is a write like any other after its checks too: on
/// either path its commit archives the runs past the horizon (issue 48:
/// the claim paths once skipped retention, and git's upkeep).
#[test]
fn a_sync_claim_archives_runs_past_the_horizon_on_either_path() {
    for shared in [false, true] {
        let mut env = TestEnv::new();
        let (_remote, a, id) = published_todo(&env, shared);
        env.now = "2026-12-03T10:00:00Z".to_owned();
        let args = [
            "--agent",
            "a1",
            "writeback",
            "--outcome",
            "outcome_progress",
        ];
        env.loopx(&a, &[&args[..], &["--summary", "old"]].concat())
            .success();
        env.loopx(&a, &["sync"]).success();
        // Two days on, the 3rd's run is past the 24 h horizon by more than
        // an eighth: the claim's own commit takes it out of the tree.
        env.now = "2026-12-05T10:00:00Z".to_owned();
        env.loopx(&a, &["--agent", "a1", "todo", "claim", &id, "--sync"])
            .success();
        let message = env.git(&a, &["log", "-1", "--format=%B", "loopx-state"]);
        assert!(
            message.contains("todo claim") && message.contains("Loopx-Archived: main through"),
            "shared refs {shared}: {message}"
        );
        let tree = env.git(&a, &["ls-tree", "-r", "--name-only", "loopx-state"]);
        assert!(!tree.contains("/runs/2026-12-03/"), "{tree}");
    }
}

/// `--sync` claims start git's own maintenance as any write does: with a
/// low `gc.auto`, the loose objects the claims write are rolled into a pack
/// while only claims write.
#[test]
fn sync_claims_start_gits_maintenance_on_either_path() {
    const TODOS: usize = 64;
    for shared in [false, true] {
        let env = TestEnv::new();
        let (_remote, a, _) = published_todo(&env, shared);
        env.git(&a, &["config", "maintenance.auto", "false"]);
        let ids: Vec<String> = (0..TODOS)
            .map(|i| env.add_todo(&a, &format!("item {i}")))
            .collect();
        env.loopx(&a, &["sync"]).success();
        env.git(&a, &["config", "gc.auto", "20"]);
        env.git(&a, &["config", "--unset", "maintenance.auto"]);
        plant_loose_in_17(&env, &a);
        let packs = || {
            let out = env.git(&a, &["count-objects", "-v"]);
            out.lines()
                .find_map(|l| l.strip_prefix("packs:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let packs_before = packs();
        let mut claims = 0;
        for id in &ids {
            env.loopx(&a, &["--agent", "a1", "todo", "claim", id, "--sync"])
                .success();
            claims += 1;
            // The maintenance runs in the background.
            let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
            while packs() == packs_before && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if packs() > packs_before {
                break;
            }
        }
        assert!(
            packs() > packs_before,
            "shared refs {shared}: no maintenance after {claims} claims"
        );
        env.fsck(&a, &["--strict"]);
    }
}

/// Git (and the upkeep, which judges as git does) counts loose objects by
/// `objects/17` alone: three unreachable blobs there make any repository
/// look due for maintenance, whatever ids its own objects drew.
fn plant_loose_in_17(env: &TestEnv, repo: &Path) {
    let mut planted = 0;
    for i in 0.. {
        let text = format!("seventeen {i}\n");
        let header = format!("blob {}\0", text.len());
        let id = sha1_smol::Sha1::from([header.as_bytes(), text.as_bytes()].concat())
            .digest()
            .to_string();
        if id.starts_with("17") {
            let file = env.path(&format!("blob-{i}"));
            std::fs::write(&file, &text).unwrap();
            let written = env.git(repo, &["hash-object", "-w", file.to_str().unwrap()]);
            assert_eq!(written.trim(), id);
            planted += 1;
            if planted == 3 {
                break;
            }
        }
    }
}

/// The store's commit entry points are called from one place, the
/// transaction's publishing ends (`src/store/publish.rs`); the compiler
/// keeps them inside `store` (`pub(in crate::store)`), and this test keeps
/// them inside that one file.
#[test]
fn the_store_commits_only_through_its_publishing_ends() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src];
    let mut calls = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let rel = path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap();
        let rel = rel.to_string_lossy().replace('\\', "/");
        if !rel.ends_with(".rs") || rel == "src/store/publish.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for entry in [".write_commit(", ".write_detached(", ".settle_detached("] {
                if line.contains(entry) {
                    calls.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        calls.is_empty(),
        "commits made outside store/publish.rs:\n{}",
        calls.join("\n")
    );
}

/// A sync that writes nothing starts no git maintenance, on either path:
/// its fetches pass `--no-auto-maintenance` (the branch's fetch once did
/// not, and started one per sync); maintenance is for writes to start.
#[test]
fn a_sync_that_writes_nothing_starts_no_maintenance() {
    for shared in [false, true] {
        let env = TestEnv::new();
        let (_remote, a, _) = published_todo(&env, shared);
        env.git(&a, &["config", "gc.auto", "20"]);
        plant_loose_in_17(&env, &a);
        let packs = || env.git(&a, &["count-objects", "-v"]);
        let before = packs();
        for _ in 0..3 {
            env.loopx(&a, &["sync"]).success();
        }
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert!(
            !a.join(".git/gc.pid").exists() && packs() == before,
            "shared refs {shared}: a sync started maintenance:\n{before}\n{}",
            packs()
        );
    }
}
