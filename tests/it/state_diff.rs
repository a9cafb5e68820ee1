//! `git loopx diff`: what changed in the state, as facts, patches,
//! Markdown and JSON, over any revision git takes.

use std::path::Path;

use crate::env::{Redactor, TestEnv};

/// The state commits' short ids, the todo and run shards (from random ids), then
/// ids and full commit ids, made stable.
fn stable(r: &mut Redactor, text: &str, commits: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    for (commit, name) in commits {
        text = text.replace(commit, name).replace(&commit[..10], name);
    }
    // goals/main/todos/<xx>/… and goals/main/runs/<day>/<xx>/…: the shard
    // is the id's first two hex digits.
    for dir in ["/todos/", "/runs/2026-12-02/"] {
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find(dir) {
            let (head, tail) = rest.split_at(i + dir.len());
            out.push_str(head);
            if tail.len() > 3 && tail.as_bytes()[2] == b'/' {
                out.push_str("xx");
                rest = &tail[2..];
            } else {
                rest = tail;
            }
        }
        out.push_str(rest);
        text = out;
    }
    r.redact(&text)
}

/// The patch part of a text or Markdown output, one chunk per file, sorted
/// (file order follows paths, and a todo's path comes from its random id).
fn sorted_chunks(patches: &str, starts: &str) -> String {
    let mut chunks: Vec<String> = Vec::new();
    for line in patches.split_inclusive('\n') {
        if line.starts_with(starts) || chunks.is_empty() {
            chunks.push(String::new());
        }
        chunks.last_mut().unwrap().push_str(line);
    }
    let mut chunks: Vec<&str> = chunks.iter().map(|c| c.trim_end()).collect();
    chunks.sort();
    chunks.join("\n\n")
}

struct History {
    repo: std::path::PathBuf,
    a: String,
    b: String,
    ids: Vec<String>,
}

fn at(minute: u32) -> String {
    format!("2026-12-02T10:{minute:02}:00Z")
}

/// Two agents, three todos, then (A..B): a claim, a gate opened and
/// resolved by a person, two writebacks, a spend, a handoff, a priority
/// change and a completion.
fn history(env: &TestEnv) -> History {
    let repo = env.state_repo("r");
    let run = |minute: u32, agent: &str, args: &[&str]| {
        let mut all = vec!["--json", "--agent", agent];
        all.extend_from_slice(args);
        env.loopx_at(&repo, &at(minute), &all).success().json()
    };
    run(1, "agent-a", &["agent", "register", "agent-a"]);
    run(1, "agent-b", &["agent", "register", "agent-b"]);
    let todo = |minute, text: &str| {
        run(minute, "agent-a", &["todo", "add", text])["todo"]["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let t1 = todo(2, "Write the tokenizer");
    let t2 = todo(3, "Publish the crate");
    let t3 = todo(4, "Write the docs");
    let a = env.tip(&repo);

    run(10, "agent-a", &["todo", "claim", &t1]);
    let gate = run(
        11,
        "agent-a",
        &[
            "gate",
            "add",
            "Publish under the MIT license?",
            "--unblocks",
            &t2,
        ],
    )["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let w1 = run(
        12,
        "agent-a",
        &[
            "writeback",
            "--todo",
            &t1,
            "--outcome",
            "outcome_progress",
            "--summary",
            "tokenizer with tests",
            "--artifact",
            "HEAD",
        ],
    )["run"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let spend = run(13, "agent-a", &["quota", "spend"])["spend"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx_at(
        &repo,
        &at(14),
        &["gate", "resolve", &gate, "--approve", "--note", "yes, MIT"],
    )
    .success();
    run(15, "agent-b", &["todo", "claim", &t3]);
    run(
        16,
        "agent-b",
        &[
            "todo",
            "handoff",
            &t3,
            "--to",
            "agent-a",
            "--note",
            "needs the tokenizer author",
        ],
    );
    let w2 = run(
        17,
        "agent-a",
        &[
            "writeback",
            "--todo",
            &t1,
            "--outcome",
            "outcome_progress",
            "--summary",
            "parser hooked up",
            "--next-action",
            "wire the CLI",
        ],
    )["run"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    run(18, "agent-a", &["todo", "update", &t2, "--priority", "P1"]);
    run(
        19,
        "agent-a",
        &["todo", "done", &t3, "--evidence", "docs built"],
    );
    let b = env.tip(&repo);
    History {
        repo,
        a,
        b,
        ids: vec![t1, t2, t3, gate, w1, spend, w2],
    }
}

fn redactor(h: &History) -> Redactor {
    let mut r = Redactor::default();
    for id in &h.ids {
        r.redact(id);
    }
    r
}

#[test]
fn diff_tells_claims_gates_writebacks_handoffs_and_spends() {
    let env = TestEnv::new();
    let h = history(&env);
    let range = format!("{}..{}", h.a, h.b);
    let names = [(h.a.as_str(), "<A>"), (h.b.as_str(), "<B>")];
    let diff = |extra: &[&str]| {
        let mut args = vec!["diff", range.as_str()];
        args.extend_from_slice(extra);
        env.loopx(&h.repo, &args).success().stdout
    };

    let mut r = redactor(&h);
    insta::assert_snapshot!("diff_text", stable(&mut r, &diff(&[]), &names));

    let patch = diff(&["--patch"]);
    let (facts, files) = patch
        .split_once("\n--- ")
        .expect("patches follow the facts");
    let mut r = redactor(&h);
    let facts = stable(&mut r, facts, &names);
    let files = stable(&mut r, &format!("--- {files}"), &names);
    insta::assert_snapshot!(
        "diff_patch",
        format!("{facts}\n{}", sorted_chunks(&files, "--- "))
    );

    let mut r = redactor(&h);
    insta::assert_snapshot!(
        "diff_markdown",
        stable(&mut r, &diff(&["--markdown"]), &names)
    );

    let mut json = env
        .loopx(&h.repo, &["--json", "diff", &range])
        .success()
        .json();
    assert_eq!(json["from"], h.a.as_str());
    assert_eq!(json["to"], h.b.as_str());
    json["from"] = "<A>".into();
    json["to"] = "<B>".into();
    let mut r = redactor(&h);
    insta::assert_snapshot!("diff_json", r.json(&json));

    // --markdown --patch: each file in a fenced diff block.
    let md = diff(&["--markdown", "--patch"]);
    assert!(md.contains("#### YAML patches (8 files)"), "{md}");
    assert_eq!(md.matches("\n```diff\n--- ").count(), 8, "{md}");
    // --json --patch: the patches as text.
    let json = env
        .loopx(&h.repo, &["--json", "diff", &range, "--patch"])
        .success()
        .json();
    let patches = json["patches"].as_array().unwrap();
    assert_eq!(patches.len(), 8);
    assert!(patches
        .iter()
        .all(|p| p["patch"].as_str().unwrap().contains("\n+++ ")));
}

fn subject(env: &TestEnv, repo: &Path, rev: &str) -> String {
    env.git(repo, &["log", "-1", "--format=%s", rev])
}

#[test]
fn diff_takes_the_last_commit_any_revision_and_refuses_non_state_commits() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let t1 = env.add_todo(&repo, "first");
    let t2 = env.add_todo(&repo, "second");
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &t2])
        .success();

    // No argument: the last state commit against its first parent.
    let last = env.loopx(&repo, &["diff"]).success().stdout;
    assert!(
        last.contains(&format!("todo {t2} claimed by agent-a (epoch 1)")),
        "{last}"
    );
    assert!(last.contains(": 1 fact\n"), "{last}");
    assert!(!last.contains("added"), "{last}");
    assert!(subject(&env, &repo, "loopx-state").contains("claim"));

    // loopx-state~2 and a reflog entry: that commit against its parent.
    for rev in ["loopx-state~2", "loopx-state@{2}"] {
        let out = env.loopx(&repo, &["diff", rev]).success().stdout;
        assert!(out.contains(&format!("todo {t1} added")), "{rev}: {out}");
        assert!(!out.contains(&t2), "{rev}: {out}");
    }
    // A range over two commits, and `A..` up to the tip.
    let out = env
        .loopx(&repo, &["diff", "loopx-state~2.."])
        .success()
        .stdout;
    assert!(out.contains(&format!("todo {t2} added")), "{out}");
    assert!(out.contains("claimed by agent-a"), "{out}");
    assert!(!out.contains(&t1), "{out}");

    // The root commit: everything in it was added.
    let root = env.git(&repo, &["rev-list", "--max-parents=0", "loopx-state"]);
    let json = env
        .loopx(&repo, &["--json", "diff", &root])
        .success()
        .json();
    assert_eq!(json["from"], serde_json::Value::Null);
    assert!(json["facts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "goal_added" && f["objective"] == "Ship the parser"));

    // A code commit is refused as such; so is an unknown revision.
    let run = env.loopx(&repo, &["--json", "diff", "main"]).failure(2);
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("is not a state commit"), "{message}");
    let run = env.loopx(&repo, &["diff", "main..loopx-state"]).failure(2);
    assert!(
        run.stderr.contains("is not a state commit"),
        "{}",
        run.stderr
    );
    let run = env
        .loopx(&repo, &["--json", "diff", "no-such-rev"])
        .failure(2);
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("not a commit git knows"), "{message}");
    env.loopx(&repo, &["diff", "..loopx-state"]).failure(2);

    // Every goal and the agents by default; --goal keeps to one goal.
    env.loopx(
        &repo,
        &["--agent", "agent-b", "agent", "register", "agent-b"],
    )
    .success();
    let all = env.loopx(&repo, &["diff"]).success().stdout;
    assert!(all.contains("agent agent-b registered"), "{all}");
    let one = env
        .loopx(&repo, &["--goal", "main", "diff"])
        .success()
        .stdout;
    assert!(one.contains(", goal main: 0 facts"), "{one}");
    env.loopx(&repo, &["--goal", "nope", "diff"]).failure(2);
}

#[test]
fn diff_markdown_renders_agent_text_inert() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let hostile = "done\n## Heading\n<script>alert(1)</script> [x](javascript:alert(1)) @someone";
    let before = env.tip(&repo);
    let t = env.add_todo(&repo, hostile);
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &t])
        .success();
    env.loopx(
        &repo,
        &[
            "--agent",
            "agent-a",
            "writeback",
            "--todo",
            &t,
            "--outcome",
            "outcome_progress",
            "--summary",
            hostile,
        ],
    )
    .success();
    let md = env
        .loopx(&repo, &["diff", &format!("{before}.."), "--markdown"])
        .success()
        .stdout;
    assert_eq!(md.matches("alert").count(), 4, "both texts are there: {md}");
    for line in md.lines().skip(1) {
        assert!(!line.starts_with('#'), "a heading from state text: {line}");
    }
    // Every `<` and `[` is escaped: no tag, no link can form.
    let unescaped = |c: char| md.match_indices(c).any(|(i, _)| !md[..i].ends_with('\\'));
    assert!(!unescaped('<') && !unescaped('['), "{md}");
    assert!(md.contains(r"\<script\>"), "{md}");
    assert!(!md.contains("]("), "{md}");
    assert!(!md.contains("@someone"), "{md}");
    assert!(md.contains("@\u{200B}someone"), "{md}");

    // With --patch the YAML sits in a fenced block the text cannot close.
    let md = env
        .loopx(
            &repo,
            &["diff", &format!("{before}.."), "--markdown", "--patch"],
        )
        .success()
        .stdout;
    let mut fenced = false;
    for line in md.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            assert!(!line.contains(" <script"), "outside a fence: {line}");
            assert!(!line.contains("## Heading"), "outside a fence: {line}");
            assert!(!line.contains("@someone"), "outside a fence: {line}");
        }
    }
    assert!(!fenced, "every fence is closed");
}
