//! `git loopx pr`: the agent work behind a pull request's commits, and
//! Markdown that is safe to post (also `review --markdown`).

use std::path::Path;

use crate::env::{Redactor, TestEnv};

/// Commits a new file on the current branch with `trailer` as a
/// `Loopx-Todo:` trailer (as `git commit --trailer` writes it), returning
/// the commit id.
pub fn code_commit(
    env: &TestEnv,
    repo: &Path,
    file: &str,
    subject: &str,
    todo: Option<&str>,
) -> String {
    std::fs::write(repo.join(file), format!("{subject}\n")).unwrap();
    env.git(repo, &["add", file]);
    let trailer = todo.map(|t| format!("Loopx-Todo: {t}"));
    let mut args = vec!["commit", "-q", "-m", subject];
    if let Some(t) = &trailer {
        args.extend(["--trailer", t]);
    }
    env.git(repo, &args);
    env.git(repo, &["rev-parse", "HEAD"])
}

/// Ids, commit ids (full or abbreviated) out of the way of a snapshot.
fn redact(r: &mut Redactor, text: &str) -> String {
    let text = r.redact(text);
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let hex = (7..=12).contains(&word.len())
            && word
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            && word.bytes().any(|b| b.is_ascii_digit());
        out.push_str(if hex { "<short>" } else { word });
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn add_json(env: &TestEnv, repo: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.loopx(repo, &all).success().json()
}

/// A feature branch of four commits — two for the tokenizer (trailers), one
/// for the docs (trailer), one with no todo — and the state history behind
/// them: claims, writebacks naming commits, done evidence, a handoff, a gate
/// a person resolved, spends. Returns (repo, tokenizer todo, docs todo, the
/// commit without a todo).
pub fn pull_request(env: &TestEnv) -> (std::path::PathBuf, String, String, String) {
    let repo = env.state_repo("r");
    let a = ["--agent", "agent-a"];
    let b = ["--agent", "agent-b"];
    let tok = env.add_todo(&repo, "Write the tokenizer");
    let docs = env.add_todo(&repo, "Document the parser");
    let gate = add_json(
        env,
        &repo,
        &[
            "gate",
            "add",
            "May the docs quote the spec?",
            "--unblocks",
            &docs,
        ],
    )["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx(&repo, &[a[0], a[1], "todo", "claim", &tok])
        .success();
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    let c1 = code_commit(env, &repo, "lexer.rs", "Add the lexer", Some(&tok));
    let c2 = code_commit(env, &repo, "tokens.rs", "Add the token kinds", Some(&tok));
    env.loopx(
        &repo,
        &[
            a[0],
            a[1],
            "writeback",
            "--todo",
            &tok,
            "--outcome",
            "outcome_progress",
            "--summary",
            "Lexer and token kinds",
            "--validation",
            "cargo test lexer",
            "--exit-code",
            "0",
            "--artifact",
            &c1,
            "--artifact",
            &c2[..10],
        ],
    )
    .success();
    env.loopx(&repo, &[a[0], a[1], "quota", "spend"]).success();
    env.loopx(
        &repo,
        &[
            a[0],
            a[1],
            "todo",
            "done",
            &tok,
            "--evidence",
            "cargo test: 42 passed",
            "--no-follow-up",
        ],
    )
    .success();
    env.loopx(
        &repo,
        &[
            "gate",
            "resolve",
            &gate,
            "--approve",
            "--note",
            "yes, quote it",
        ],
    )
    .success();
    env.loopx(&repo, &[a[0], a[1], "todo", "claim", &docs])
        .success();
    let c3 = code_commit(env, &repo, "PARSER.md", "Document the parser", Some(&docs));
    env.loopx(
        &repo,
        &[
            a[0],
            a[1],
            "todo",
            "handoff",
            &docs,
            "--to",
            "agent-b",
            "--note",
            "examples left",
        ],
    )
    .success();
    let c4 = code_commit(env, &repo, "typo.txt", "Fix a typo", None);
    env.loopx(
        &repo,
        &[
            b[0],
            b[1],
            "writeback",
            "--todo",
            &docs,
            "--outcome",
            "outcome_progress",
            "--summary",
            "Examples written",
            "--artifact",
            &c3,
        ],
    )
    .success();
    env.loopx(&repo, &[b[0], b[1], "quota", "spend"]).success();
    (repo, tok, docs, c4)
}

/// Done when 2: both todos with their evidence, and the commit without one.
#[test]
fn pr_shows_the_todos_behind_a_branch_with_their_evidence() {
    let env = TestEnv::new();
    let (repo, tok, docs, orphan) = pull_request(&env);
    let r = add_json(&env, &repo, &["pr", "main..feature"]);
    assert_eq!(r["commits"].as_array().unwrap().len(), 4, "{r}");
    let todos = r["todos"].as_array().unwrap();
    assert_eq!(todos.len(), 2, "{r}");
    assert_eq!(todos[0]["todo"]["id"], tok.as_str());
    assert_eq!(todos[0]["commits"].as_array().unwrap().len(), 2);
    assert_eq!(todos[0]["todo"]["evidence"], "cargo test: 42 passed");
    assert_eq!(todos[0]["writebacks"][0]["validation"]["exit_code"], 0);
    assert_eq!(todos[0]["spent_slots"], 1);
    assert_eq!(todos[0]["claims"][0]["op"], "todo claim");
    assert_eq!(todos[0]["claims"][0]["agent"], "agent-a");
    assert_eq!(todos[1]["todo"]["id"], docs.as_str());
    assert_eq!(todos[1]["handoffs"][0]["to"], "agent-b");
    assert_eq!(todos[1]["handoffs"][0]["note"], "examples left");
    assert_eq!(todos[1]["gates"][0]["decision"], "approve");
    assert_eq!(
        todos[1]["gates"][0]["resolved_by"],
        "Test Committer <committer@example.com>"
    );
    let last = &r["commits"][3];
    assert_eq!(last["commit"], orphan.as_str());
    assert!(last["todos"].as_array().unwrap().is_empty(), "{r}");

    let text = env.loopx(&repo, &["pr", "main..feature"]).success().stdout;
    for expected in [
        "Write the tokenizer",
        "Document the parser",
        "Lexer and token kinds",
        "cargo test lexer → exit 0",
        "done evidence: cargo test: 42 passed",
        "agent-a → agent-b: examples left",
        "approve by Test Committer <committer@example.com>",
        "Commits without a todo",
        "Fix a typo",
    ] {
        assert!(text.contains(expected), "no `{expected}` in\n{text}");
    }

    let md = env
        .loopx(&repo, &["pr", "main..feature", "--markdown"])
        .success()
        .stdout;
    assert!(md.starts_with("<!-- git-loopx pr -->\n"), "{md}");
    // Deterministic: the same state prints the same comment.
    let again = env
        .loopx(&repo, &["pr", "main..feature", "--markdown"])
        .success()
        .stdout;
    assert_eq!(md, again);
    insta::assert_snapshot!("pr_markdown", redact(&mut Redactor::default(), &md));
}

/// The base defaults to the merge base of HEAD with the default branch:
/// `origin/HEAD`'s branch when set, else main.
#[test]
fn the_default_range_starts_at_the_merge_base_with_the_default_branch() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "Write the tokenizer");
    let base = env.git(&repo, &["rev-parse", "main"]);
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    code_commit(&env, &repo, "a.rs", "On the branch", Some(&todo));
    // main moves on: its new commit is not part of the pull request.
    env.git(&repo, &["checkout", "-q", "main"]);
    code_commit(&env, &repo, "b.rs", "On main", None);
    env.git(&repo, &["checkout", "-q", "feature"]);

    let r = add_json(&env, &repo, &["pr"]);
    assert_eq!(r["default_branch"], "main", "{r}");
    assert_eq!(r["base"]["commit"], base.as_str(), "{r}");
    assert_eq!(r["commits"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(r["todos"][0]["todo"]["id"], todo.as_str());
    let text = env.loopx(&repo, &["pr"]).success().stdout;
    assert!(
        text.contains("the merge base of HEAD with the default branch main"),
        "{text}"
    );

    // origin/HEAD, when set, names the default branch.
    env.git(&repo, &["update-ref", "refs/remotes/origin/trunk", &base]);
    env.git(
        &repo,
        &[
            "symbolic-ref",
            "refs/remotes/origin/HEAD",
            "refs/remotes/origin/trunk",
        ],
    );
    let r = add_json(&env, &repo, &["pr"]);
    assert_eq!(r["default_branch"], "origin/trunk", "{r}");
    assert_eq!(r["base"]["commit"], base.as_str(), "{r}");
}

#[test]
fn a_range_without_todo_commits_lists_every_commit_as_without_a_todo() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "Write the tokenizer");
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    code_commit(&env, &repo, "a.rs", "First", None);
    code_commit(&env, &repo, "b.rs", "Second", None);
    let r = add_json(&env, &repo, &["pr", "main..feature"]);
    assert!(r["todos"].as_array().unwrap().is_empty(), "{r}");
    assert_eq!(r["commits"].as_array().unwrap().len(), 2);
    let text = env.loopx(&repo, &["pr", "main.."]).success().stdout;
    assert!(
        text.contains("2 commit(s), 0 todo(s), 2 commit(s) without a todo"),
        "{text}"
    );
    let orphans = text.split("Commits without a todo").nth(1).unwrap();
    assert!(
        orphans.contains("First") && orphans.contains("Second"),
        "{text}"
    );
}

#[test]
fn a_revision_that_does_not_exist_is_a_usage_error() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    for range in ["main..no-such-branch", "no-such-base..HEAD"] {
        let run = env.loopx(&repo, &["--json", "pr", range]).failure(2);
        let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("is not a commit git knows"), "{message}");
        env.loopx(&repo, &["pr", range, "--markdown"]).failure(2);
    }
}

const HOSTILE: &str =
    "Fix it\n## Heading <script>alert(1)</script> [x](javascript:alert(1)) @someone";

/// Done when 3 (part one): agent-written text renders inert in every
/// Markdown output: `pr --markdown` and `review --markdown`.
#[test]
fn agent_text_renders_inert_in_pr_and_review_markdown() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, HOSTILE);
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    let commit = code_commit(
        &env,
        &repo,
        "a.rs",
        "Subject @someone <script>",
        Some(&todo),
    );
    env.loopx(
        &repo,
        &[
            "--agent",
            "agent-a",
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            HOSTILE,
            "--artifact",
            &commit,
        ],
    )
    .success();
    env.loopx(
        &repo,
        &[
            "--agent", "agent-a", "todo", "handoff", &todo, "--to", "agent-b", "--note", HOSTILE,
        ],
    )
    .success();
    let ours = [
        "## Agent work behind",
        "### Commits",
        "### `todo_",
        "## Review of goal",
        "### Decisions waiting",
        "### Delivered",
        "### Handoffs",
        "### Changed",
    ];
    for args in [
        &["pr", "main..feature", "--markdown"][..],
        &["review", "--markdown"][..],
    ] {
        let md = env.loopx(&repo, args).success().stdout;
        assert!(
            md.contains("Heading") && md.contains("someone"),
            "{args:?}:\n{md}"
        );
        for line in md.lines() {
            if line.trim_start().starts_with('#') {
                assert!(
                    ours.iter().any(|o| line.starts_with(o)),
                    "{args:?}: a heading we did not write: {line}"
                );
            }
        }
        // What is left once escaped characters are taken out.
        let bare = md.replace("\\<", "").replace("\\]", "").replace("\\@", "");
        assert!(!bare.contains("<script"), "{args:?}:\n{md}");
        assert!(!bare.contains("]("), "{args:?}:\n{md}");
        assert!(!md.contains("@someone"), "{args:?}:\n{md}");
        // The zero-width space that breaks the mention is printed as is.
        assert!(md.contains("@\u{200B}someone"), "{args:?}:\n{md}");
    }
    // Terminal text is not Markdown: it shows the text as written.
    let text = env.loopx(&repo, &["pr", "main..feature"]).success().stdout;
    assert!(text.contains("[x](javascript:alert(1)) @someone"), "{text}");
    // review shows the handoff with its note, in both forms.
    let text = env.loopx(&repo, &["review"]).success().stdout;
    let handoffs = text.split("Handoffs:").nth(1).expect("a Handoffs section");
    assert!(
        handoffs.contains("agent-a → agent-b") && handoffs.contains("@someone"),
        "{text}"
    );
    let md = env.loopx(&repo, &["review", "--markdown"]).success().stdout;
    let handoffs = md.split("### Handoffs").nth(1).expect("a Handoffs section");
    assert!(handoffs.contains("agent\\-a → agent\\-b"), "{md}");
}

/// Done when 3 (part two): 600 writebacks naming commits of the range stay
/// under GitHub's 65,536 characters, and the comment says what it left out.
#[test]
fn six_hundred_writebacks_fit_a_comment_with_the_truncation_line() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "A long-running todo");
    env.loopx(
        &repo,
        &["--agent", "agent-a", "todo", "claim", &todo, "--ttl", "24h"],
    )
    .success();
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    let commits: Vec<String> = (0..3)
        .map(|i| code_commit(&env, &repo, &format!("f{i}.rs"), &format!("Step {i}"), None))
        .collect();
    for i in 0..600 {
        let summary =
            format!("Writeback {i}: one more small step of the long-running todo, verified");
        env.loopx(
            &repo,
            &[
                "--agent",
                "agent-a",
                "writeback",
                "--todo",
                &todo,
                "--outcome",
                "outcome_progress",
                "--summary",
                &summary,
                "--artifact",
                &commits[i % 3],
            ],
        )
        .success();
    }
    let r = add_json(&env, &repo, &["pr", "main..feature"]);
    assert_eq!(r["todos"][0]["writebacks"].as_array().unwrap().len(), 600);
    let md = env
        .loopx(&repo, &["pr", "main..feature", "--markdown"])
        .success()
        .stdout;
    let chars = md.trim_end_matches('\n').chars().count();
    assert!(chars <= 65_536, "{chars} characters");
    assert!(md.starts_with("<!-- git-loopx pr -->\n"));
    let last = md.trim_end().lines().last().unwrap();
    let base = &r["base"]["commit"].as_str().unwrap()[..12];
    let head = &r["head"]["commit"].as_str().unwrap()[..12];
    assert!(last.contains("more line(s) left out"), "{last}");
    assert!(
        last.contains(&format!("`git loopx pr {base}..{head}`")),
        "{last}"
    );
    // The commits come before the writebacks, so they survive the cut.
    for c in &commits {
        assert!(md.contains(&c[..12]), "{c}");
    }
    // The text form is not cut.
    let text = env.loopx(&repo, &["pr", "main..feature"]).success().stdout;
    assert!(text.contains("Writeback 599:"));
}

/// One huge item (a 70,000-character `Loopx-Todo` trailer) is cut short; it
/// does not push every section after it out of the comment: each heading,
/// the todos' and "Commits without a todo", stays.
#[test]
fn one_huge_trailer_is_cut_and_every_section_stays() {
    let env = TestEnv::new();
    let (repo, tok, docs, orphan) = pull_request(&env);
    std::fs::write(repo.join("huge.rs"), "x\n").unwrap();
    env.git(&repo, &["add", "huge.rs"]);
    let huge = format!("Loopx-Todo: todo_{}", "ab".repeat(35_000));
    env.git(&repo, &["commit", "-q", "-m", "Huge trailer", "-m", &huge]);
    let md = env
        .loopx(&repo, &["pr", "main..feature", "--markdown"])
        .success()
        .stdout;
    let chars = md.trim_end_matches('\n').chars().count();
    assert!(chars <= 65_536, "{chars} characters");
    assert!(
        chars > 2_000,
        "only the huge line is cut: {chars} characters"
    );
    for heading in ["### Commits", "### Commits without a todo"] {
        assert!(
            md.lines().any(|l| l == heading),
            "no {heading:?} in\n{}",
            &md[..md.len().min(3000)]
        );
    }
    for todo in [&tok, &docs] {
        assert!(
            md.lines()
                .any(|l| l.starts_with("### ") && l.contains(todo.as_str())),
            "no section for {todo}"
        );
    }
    assert!(
        md.contains(&orphan[..12]),
        "the commit without a todo is listed"
    );
    assert!(
        md.contains("Lexer and token kinds"),
        "other items are whole"
    );
    let last = md.trim_end().lines().last().unwrap();
    assert!(last.contains("1 shortened"), "{last}");
}
